"""Train short, test long: a passkey task for a tiny causal RoPE model and the scaling rules.

The appendix "Train short, test long" (``book/deeper_long_context_training.ipynb``) trains the
tiny decoder of :mod:`posenc.experiment` (``causal=True``, RoPE) on sequences of ``L`` tokens,
tests it on ``4 L``, and gives it each long-context rule of :func:`posenc.rope_frequencies`
with a short fine-tuning at ``4 L``. Importing this module imports PyTorch; ``import posenc``
does not import it.

The task, :func:`passkey_batch`: random tokens, one :data:`MARKER` at a random position, and
the token right after it is the *passkey*; every later position must output the passkey.
Finding the marker's neighbour needs the fine, local positions (the fast RoPE pairs); carrying
the passkey to a query far away needs a score that stays high at any distance, so the model
must cope with the angles of the slow pairs at distances it never saw.

- :func:`build` builds the seeded model; :func:`train_passkey` trains it; :func:`evaluate`
  returns, for every target of fresh test sequences, whether it was right, its distance to
  the passkey, the marker's depth and the loss; :func:`accuracy_by_distance` sums that up by
  bucket of distance.
- :func:`rules` gives the scaling dictionaries of the rules for a training length and factor.

Everything is seeded and runs on one CPU thread (see :mod:`posenc.experiment`): other CPU
kernels may still round differently, so claims about the trained models are checked with
margins.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._validate import check_base, check_int
from .experiment import N_SYMBOLS, TinyTransformer, _check_model, _fit, _one_thread, build_model

#: The token that marks the passkey (the last symbol; the other tokens are drawn below it).
MARKER = N_SYMBOLS - 1
#: Chance accuracy: the passkey is one of ``MARKER`` tokens.
CHANCE = 1 / MARKER
#: The model of the appendix: a causal decoder of 2 layers, 2 heads of width 16.
MODEL = {"d_model": 32, "n_heads": 2, "n_layers": 2, "causal": True}


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


def train_passkey(model: TinyTransformer, *, steps: int, seq_len: int, seed: int,
                  lr: float = 3e-3, batch_size: int = 32) -> list[float]:
    """Train ``model`` on the passkey task with Adam, the cross-entropy at every target.

    Args:
        model: a :class:`posenc.experiment.TinyTransformer` (from :func:`build`), trained in
            place and left in evaluation mode.
        steps: number of steps, an ``int >= 1``; seq_len: tokens per sequence, ``>= 3``;
        seed: seed of the batches, an ``int >= 0``; lr: Adam's learning rate, ``> 0``;
        batch_size: sequences per step, ``>= 1``.

    Returns:
        The loss of every step (mean cross-entropy in nats), a list of ``steps`` floats.

    Raises:
        TypeError, ValueError: a bad model or argument.
    """
    model = _check_model(model)
    steps = check_int("steps", steps, minimum=1)
    seed = check_int("seed", seed)

    def loss_on_a_batch(generator):
        tokens, targets, has_target, _, _ = passkey_batch(batch_size, seq_len, generator=generator)
        return F.cross_entropy(model(tokens)[has_target], targets[has_target])

    return _fit(model, steps, lr, seed, loss_on_a_batch)


def evaluate(model: TinyTransformer, seq_len: int, *, n_sequences: int = 256,
             seed: int = 12345) -> dict:
    """Test ``model`` on ``n_sequences`` fresh passkey sequences of ``seq_len`` tokens.

    Returns:
        A dict of 1-D tensors, one entry per target: ``"correct"`` (bool), ``"distance"``
        (int64, positions from the passkey to the query), ``"position"`` (int64, the query's
        position), ``"depth"`` (float64, the marker's position over ``seq_len``), ``"loss"``
        (float64, the cross-entropy in nats).

    Raises:
        TypeError, ValueError: a bad model or argument (as :func:`passkey_batch`).
    """
    model = _check_model(model)
    tokens, targets, has_target, distance, marker = passkey_batch(
        n_sequences, seq_len, generator=torch.Generator().manual_seed(check_int("seed", seed)))
    model.eval()
    with torch.no_grad(), _one_thread():
        logits = model(tokens)[has_target]
    positions = torch.arange(seq_len).expand(n_sequences, seq_len)
    depth = (marker.double() / seq_len)[:, None].expand(n_sequences, seq_len)
    return {"correct": logits.argmax(dim=-1) == targets[has_target],
            "distance": distance[has_target], "position": positions[has_target],
            "depth": depth[has_target],
            "loss": F.cross_entropy(logits, targets[has_target], reduction="none").double()}


def accuracy_by_distance(result: dict, edges) -> list[float]:
    """Accuracy of :func:`evaluate`'s ``result`` in the buckets ``edges[j] <= distance <
    edges[j + 1]``, a list of ``len(edges) - 1`` floats (``nan`` for an empty bucket)."""
    out = []
    for low, high in zip(edges[:-1], edges[1:]):
        inside = (result["distance"] >= low) & (result["distance"] < high)
        out.append(result["correct"][inside].double().mean().item() if inside.any()
                   else float("nan"))
    return out
