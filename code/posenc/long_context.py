"""Train short, test long: a passkey task for causal RoPE models, the scaling rules, perplexity.

The appendix "Train short, test long" (``book/deeper_long_context_training.ipynb``) trains the
tiny decoder of :mod:`posenc.experiment` (``causal=True``, RoPE) on sequences of ``L`` tokens,
tests it on ``4 L``, and gives it each long-context rule of :func:`posenc.rope_frequencies`
with a short fine-tuning at ``4 L``. Importing this module imports PyTorch; ``import posenc``
does not import it; nothing here imports ``transformers``.

The helpers that run a model (:func:`train_passkey`, :func:`evaluate`,
:func:`perplexity_by_position`) take a *causal language model*, one of:

- a :class:`posenc.experiment.TinyTransformer` built with ``causal=True`` (as :func:`build`
  does), called as ``model(tokens)``, which returns the logits;
- a ``transformers`` model that generates from a decoder alone (``model.can_generate()`` is
  true and ``model.config.is_encoder_decoder`` is false: ``LlamaForCausalLM``,
  ``Qwen2ForCausalLM``, ...), called as ``model(input_ids=tokens, use_cache=False)``, whose
  output's ``.logits`` are the logits. Its ``config.vocab_size`` must be at least
  :data:`N_SYMBOLS` (64): the task's tokens are the ids ``0 .. 63``.

Anything else (an encoder, a model without a causal mask, a bare ``nn.Module``, ...) is a
``TypeError`` that names its type. :data:`LLAMA` gives settings that train a ``transformers``
Llama of the appendix's scale on the task (``tests/test_long_context.py`` trains one).

The task, :func:`passkey_batch`: random tokens, one :data:`MARKER` at a random position, and
the token right after it is the *passkey*; every later position must output the passkey.
Finding the marker's neighbour needs the fine, local positions (the fast RoPE pairs); carrying
the passkey to a query far away needs a score that stays high at any distance, so the model
must cope with the angles of the slow pairs at distances it never saw.

- :func:`build` builds the seeded model; :func:`train_passkey` trains it; :func:`evaluate`
  returns, for every target of fresh test sequences, whether it was right, its distance to
  the passkey, the marker's depth and the loss; :func:`accuracy_by_distance` sums that up by
  bucket of distance.
- :func:`perplexity_by_position` gives ``e`` to the mean loss by bucket of positions, of the
  next token (long documents) or of the passkey; :func:`accuracy_by_depth` sums
  :func:`evaluate`'s result up by the marker's depth.
- :func:`rules` gives the scaling dictionaries of the rules for a training length and factor.

Everything is seeded and runs on one CPU thread (see :mod:`posenc.experiment`): other CPU
kernels may still round differently, so claims about the trained models are checked with
margins.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._validate import check_base, check_int
from .experiment import N_SYMBOLS, TinyTransformer, _fit, _one_thread, build_model

#: The token that marks the passkey (the last symbol; the other tokens are drawn below it).
MARKER = N_SYMBOLS - 1
#: Chance accuracy: the passkey is one of ``MARKER`` tokens.
CHANCE = 1 / MARKER
#: The model of the appendix: a causal decoder of 2 layers, 2 heads of width 16.
MODEL = {"d_model": 32, "n_heads": 2, "n_layers": 2, "causal": True}
#: Settings that train a ``transformers`` ``LlamaForCausalLM`` of the appendix's scale (2
#: layers, 2 heads, RoPE base 100, the task's 64 tokens) on the passkey task at ``L = 32``:
#: ``"config"`` holds the ``LlamaConfig`` arguments, ``"steps"``, ``"lr"`` and ``"batch_size"``
#: those of :func:`train_passkey` (the tiny model's settings, width 32, learning rate 3e-3 and 500
#: steps, are not for it). ``tests/test_long_context.py`` trains one (seed 0) with these to
#: above 95% at ``L``, and fine-tunes it with YaRN and as the unscaled control at ``4 L``.
LLAMA = {"config": {"vocab_size": N_SYMBOLS, "hidden_size": 64, "intermediate_size": 256,
                    "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
                    "max_position_embeddings": 32,
                    "rope_parameters": {"rope_type": "default", "rope_theta": 100.0}},
         "steps": 800, "lr": 1e-3, "batch_size": 32}


def check_causal_lm(model):
    """Return ``model`` if it is a causal language model these helpers can run (see the module's
    docstring), else raise.

    Raises:
        TypeError: ``model`` is neither a :class:`~posenc.experiment.TinyTransformer` with
            ``causal=True`` nor a ``transformers`` decoder-only model that generates; the message
            names its type.
        ValueError: a ``transformers`` model whose ``config.vocab_size`` is below
            :data:`N_SYMBOLS`, or with parameters on another device than the CPU (the helpers
            run on one CPU thread).
    """
    if isinstance(model, TinyTransformer):
        if not model.causal:
            raise TypeError("model must be a causal language model: this TinyTransformer has no "
                            "causal mask (build it with causal=True, as build() does)")
        return model
    config = getattr(model, "config", None)
    can_generate = getattr(model, "can_generate", None)
    if (isinstance(model, torch.nn.Module) and config is not None and callable(can_generate)
            and can_generate() and not getattr(config, "is_encoder_decoder", False)):
        vocab_size = getattr(config, "vocab_size", None)
        if not isinstance(vocab_size, int) or vocab_size < N_SYMBOLS:
            raise ValueError(f"model.config.vocab_size must be an int >= {N_SYMBOLS} (the task's "
                             f"tokens are the ids 0 .. {N_SYMBOLS - 1}), got {vocab_size!r}")
        elsewhere = {str(p.device) for p in model.parameters() if p.device.type != "cpu"}
        if elsewhere:
            raise ValueError(f"these helpers run the model on the CPU, but its parameters are on "
                             f"{sorted(elsewhere)}: move it with model.to('cpu')")
        return model
    raise TypeError(
        "model must be a causal language model: a posenc.experiment.TinyTransformer with "
        "causal=True (see build) or a transformers decoder-only model that generates (e.g. "
        f"LlamaForCausalLM), got {type(model).__module__}.{type(model).__qualname__}")


def _logits(model, tokens: torch.Tensor) -> torch.Tensor:
    """The logits of a model that :func:`check_causal_lm` accepted, ``(batch, seq_len, classes)``."""
    if isinstance(model, TinyTransformer):
        return model(tokens)
    logits = getattr(model(input_ids=tokens, use_cache=False), "logits", None)
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[:2] != tokens.shape:
        raise TypeError(f"{type(model).__name__}(input_ids=...) must return an output whose "
                        f".logits has shape (batch, seq_len, vocab_size), got {logits!r:.80}")
    return logits


def passkey_batch(batch_size: int, seq_len: int, *, generator: torch.Generator):
    """Draw a batch of passkey sequences.

    Every token is uniform over ``0 .. MARKER - 1`` except one :data:`MARKER` at a uniform
    position ``p`` in ``0 .. seq_len - 3``; the passkey is the token at ``p + 1``. The target
    of every position ``t > p + 1`` is the passkey; positions up to ``p + 1`` have no target.

    Args:
        batch_size: number of sequences, an ``int >= 1``.
        seq_len: tokens per sequence, an ``int >= 3``.
        generator: a seeded ``torch.Generator``; the batch depends on nothing else.

    Returns:
        ``(tokens, targets, has_target, distance, marker)``: ``tokens`` and ``targets``
        ``torch.int64`` of shape ``(batch_size, seq_len)`` (targets repeat the passkey on every
        position), ``has_target`` bool of that shape, ``distance`` int64 of that shape
        (``t - (p + 1)``, the offset from the passkey to the query, in positions), and
        ``marker`` int64 of shape ``(batch_size,)`` (``p``).

    Raises:
        TypeError: ``batch_size`` or ``seq_len`` is not an int, or ``generator`` is not a
            ``torch.Generator``.
        ValueError: ``batch_size < 1`` or ``seq_len < 3``.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seq_len = check_int("seq_len", seq_len, minimum=3)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    tokens = torch.randint(MARKER, (batch_size, seq_len), generator=generator)
    marker = torch.randint(seq_len - 2, (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    tokens[rows, marker] = MARKER
    targets = tokens[rows, marker + 1][:, None].expand(batch_size, seq_len).clone()
    distance = torch.arange(seq_len)[None, :] - (marker[:, None] + 1)
    return tokens, targets, distance > 0, distance, marker


def rules(train_len: int, factor: float) -> dict:
    """The rules of the appendix, by name, as ``scaling`` dicts of :func:`posenc.rope_frequencies`.

    Args:
        train_len: the length the model was trained on (``original_max_position_embeddings``),
            an ``int >= 1``.
        factor: how many times longer the target length is, a number ``>= 1``.

    Returns:
        ``{"no scaling": None, "interpolation": {...}, "dynamic NTK": {...}, "YaRN": {...},
        "Llama 3": {...}}`` (Llama 3 with ``low_freq_factor`` 1 and ``high_freq_factor`` 4, as
        Llama 3.1).
    """
    train_len = check_int("train_len", train_len, minimum=1)
    common = {"factor": float(factor), "original_max_position_embeddings": train_len}
    return {
        "no scaling": None,
        "interpolation": {"rope_type": "linear", "factor": float(factor)},
        "dynamic NTK": {"rope_type": "dynamic", **common},
        "YaRN": {"rope_type": "yarn", **common},
        "Llama 3": {"rope_type": "llama3", **common, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
    }


def build(*, seed: int = 0, base: float = 100.0, scaling: dict | None = None) -> TinyTransformer:
    """The appendix's model (:data:`MODEL`, RoPE of ``base``, ``scaling``), seeded by ``seed``.

    A model trained without ``scaling`` takes a rule by ``load_state_dict`` into a model built
    with it (the rotary embedding has no weights). Errors: those of
    :func:`posenc.experiment.build_model`.
    """
    return build_model("rope", "shift", base=check_base(base), rope_scaling=scaling, seed=seed,
                       **MODEL)


def train_passkey(model, *, steps: int, seq_len: int, seed: int,
                  lr: float = 3e-3, batch_size: int = 32) -> list[float]:
    """Train ``model`` on the passkey task with Adam, the cross-entropy at every target.

    The defaults are those of the appendix's tiny model; a ``transformers`` Llama of the same
    scale needs :data:`LLAMA`'s settings.

    Args:
        model: a causal language model (see :func:`check_causal_lm`): a
            :class:`posenc.experiment.TinyTransformer` from :func:`build`, or a ``transformers``
            causal LM such as ``LlamaForCausalLM``; trained in place on one CPU thread, left in
            evaluation mode.
        steps: number of steps, an ``int >= 1``; seq_len: tokens per sequence, ``>= 3``;
        seed: seed of the batches, an ``int >= 0``; lr: Adam's learning rate, ``> 0``;
        batch_size: sequences per step, ``>= 1``.

    Returns:
        The loss of every step (mean cross-entropy in nats), a list of ``steps`` floats.

    Raises:
        TypeError, ValueError: a bad model (as :func:`check_causal_lm`) or argument.
    """
    model = check_causal_lm(model)
    steps = check_int("steps", steps, minimum=1)
    seed = check_int("seed", seed)

    def loss_on_a_batch(generator):
        tokens, targets, has_target, _, _ = passkey_batch(batch_size, seq_len, generator=generator)
        return F.cross_entropy(_logits(model, tokens)[has_target], targets[has_target])

    return _fit(model, steps, lr, seed, loss_on_a_batch)


def evaluate(model, seq_len: int, *, n_sequences: int = 256, seed: int = 12345) -> dict:
    """Test ``model`` on ``n_sequences`` fresh passkey sequences of ``seq_len`` tokens.

    ``model`` is a causal language model (see :func:`check_causal_lm`): a
    :class:`posenc.experiment.TinyTransformer` from :func:`build` or a ``transformers`` causal
    LM. The prediction at a target is the largest of the model's logits (over all its classes).

    Returns:
        A dict of 1-D tensors, one entry per target: ``"correct"`` (bool), ``"distance"``
        (int64, positions from the passkey to the query), ``"position"`` (int64, the query's
        position), ``"depth"`` (float64, the marker's position over ``seq_len``), ``"loss"``
        (float64, the cross-entropy in nats).

    Raises:
        TypeError, ValueError: a bad model (as :func:`check_causal_lm`) or argument (as
            :func:`passkey_batch`).
    """
    model = check_causal_lm(model)
    tokens, targets, has_target, distance, marker = passkey_batch(
        n_sequences, seq_len, generator=torch.Generator().manual_seed(check_int("seed", seed)))
    model.eval()
    with torch.no_grad(), _one_thread():
        logits = _logits(model, tokens)[has_target]
    positions = torch.arange(seq_len).expand(n_sequences, seq_len)
    depth = (marker.double() / seq_len)[:, None].expand(n_sequences, seq_len)
    return {"correct": logits.argmax(dim=-1) == targets[has_target],
            "distance": distance[has_target], "position": positions[has_target],
            "depth": depth[has_target],
            "loss": F.cross_entropy(logits, targets[has_target], reduction="none").double()}


def _bucket_means(values: torch.Tensor, keys: torch.Tensor, edges) -> list[float]:
    """The mean of ``values`` where ``edges[j] <= keys < edges[j + 1]``, for each ``j``
    (``nan`` for an empty bucket)."""
    out = []
    for low, high in zip(edges[:-1], edges[1:]):
        inside = (keys >= low) & (keys < high)
        out.append(values[inside].double().mean().item() if inside.any() else float("nan"))
    return out


def accuracy_by_distance(result: dict, edges) -> list[float]:
    """Accuracy of :func:`evaluate`'s ``result`` in the buckets ``edges[j] <= distance <
    edges[j + 1]``, a list of ``len(edges) - 1`` floats (``nan`` for an empty bucket)."""
    return _bucket_means(result["correct"], result["distance"], edges)


def accuracy_by_depth(result: dict, edges) -> list[float]:
    """Accuracy of :func:`evaluate`'s ``result`` in the buckets ``edges[j] <= depth <
    edges[j + 1]`` of the marker's depth (its position over ``seq_len``, from 0 to 1), a list of
    ``len(edges) - 1`` floats (``nan`` for an empty bucket)."""
    return _bucket_means(result["correct"], result["depth"], edges)


def perplexity_by_position(model, tokens: torch.Tensor, edges, *, targets=None,
                           has_target=None) -> list[float]:
    """Perplexity of ``model`` on ``tokens`` by bucket of positions: ``exp`` of the mean
    cross-entropy (in nats) of the predictions made at the positions ``edges[j] <= pos <
    edges[j + 1]``.

    Without ``targets``, the language-modelling loss: the prediction at ``pos`` is scored on the
    next token, ``tokens[:, pos + 1]``, for ``pos`` from 0 to ``seq_len - 2`` (a long document's
    perplexity by position, the loss ``transformers`` computes with ``labels=tokens``). With
    ``targets``, the prediction at ``pos`` is scored on ``targets[:, pos]`` where ``has_target``
    is true: pass :func:`passkey_batch`'s ``targets`` and ``has_target`` for the passkey task
    (there, 1 is a sure answer and ``MARKER``, 63, a uniform guess among the passkeys).

    Args:
        model: a causal language model (see :func:`check_causal_lm`), run in evaluation mode on
            one CPU thread without gradients.
        tokens: an integer tensor of shape ``(batch, seq_len)``, ids the model takes.
        edges: increasing positions (ints), at least two.
        targets: ``None`` or an integer tensor of the shape of ``tokens``.
        has_target: ``None`` (every position) or a bool tensor of the shape of ``tokens``;
            only with ``targets``.

    Returns:
        A list of ``len(edges) - 1`` floats (``nan`` for a bucket with no prediction).

    Raises:
        TypeError: a bad model (as :func:`check_causal_lm`), ``tokens`` or ``targets`` not an
            integer tensor, ``has_target`` not a bool tensor.
        ValueError: a shape that differs or is not 2-D, ``edges`` not increasing or shorter
            than two, ``has_target`` without ``targets``.
    """
    model = check_causal_lm(model)
    _check_ids("tokens", tokens)
    edges = [check_int("each of edges", edge) for edge in edges]
    if len(edges) < 2 or any(a >= b for a, b in zip(edges[:-1], edges[1:])):
        raise ValueError(f"edges must be at least two increasing positions, got {edges}")
    if targets is None:
        if has_target is not None:
            raise ValueError("has_target needs targets (without them every next token counts)")
        targets = torch.cat([tokens[:, 1:], tokens[:, :1]], dim=1)     # last column: no target
        has_target = torch.ones_like(tokens, dtype=torch.bool)
        has_target[:, -1] = False
    else:
        _check_ids("targets", targets, like=tokens)
        if has_target is None:
            has_target = torch.ones_like(tokens, dtype=torch.bool)
        elif not isinstance(has_target, torch.Tensor) or has_target.dtype != torch.bool:
            raise TypeError(f"has_target must be a bool tensor, got {has_target!r:.60}")
        elif has_target.shape != tokens.shape:
            raise ValueError(f"has_target must have the shape of tokens, {tuple(tokens.shape)}, "
                             f"got {tuple(has_target.shape)}")
    model.eval()
    with torch.no_grad(), _one_thread():
        logits = _logits(model, tokens)[has_target]
    loss = F.cross_entropy(logits.double(), targets[has_target], reduction="none")
    positions = torch.arange(tokens.shape[1]).expand(tokens.shape)[has_target]
    return torch.tensor(_bucket_means(loss, positions, edges), dtype=torch.float64).exp().tolist()


def _check_ids(name: str, ids, like=None) -> None:
    if (not isinstance(ids, torch.Tensor) or ids.is_floating_point() or ids.is_complex()
            or ids.dtype == torch.bool):
        raise TypeError(f"{name} must be an integer torch.Tensor, got "
                        + (f"dtype {ids.dtype}" if isinstance(ids, torch.Tensor)
                           else type(ids).__name__))
    if ids.dim() != 2 or (like is not None and ids.shape != like.shape):
        raise ValueError(f"{name} must have shape (batch, seq_len)"
                         + ("" if like is None else f" {tuple(like.shape)}, that of tokens")
                         + f", got {tuple(ids.shape)}")
