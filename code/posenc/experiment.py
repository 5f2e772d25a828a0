"""Does position matter? A tiny Transformer to train on the CPU with each encoding.

The chapter "Does position matter? Train and see" (``book/training.ipynb``) trains the same
small model with five ways of giving it positions, on two synthetic tasks, and measures how
well each learns and how far past the training length each carries over. Importing this
module imports PyTorch; ``import posenc`` does not import it.

- :data:`ENCODINGS`: ``"none"`` (no positional information), ``"learned"``
  (:class:`posenc.pytorch.LearnedPositionalEmbedding`), ``"sinusoidal"``
  (:class:`posenc.pytorch.PositionalEncoding`), ``"rope"``
  (:class:`posenc.pytorch.RotaryEmbedding`), ``"alibi"`` (:func:`posenc.pytorch.alibi_bias`).
- :data:`TASKS`: ``"shift"``, order-sensitive: at each position output the token ``SHIFT_K``
  positions back (a blank class where there is none); ``"count"``, a control where order does
  not matter: at each position output how often its token occurs in the sequence.
- :func:`make_batch` draws seeded batches of a task (:func:`n_classes` classes); :func:`build_model` builds a seeded
  :class:`TinyTransformer`; :func:`train` trains it; :func:`evaluate` measures its accuracy
  at a given length (:func:`accuracy_by_position`, position by position);
  :func:`attention_maps` returns its attention weights for plotting;
  :func:`attention_parameters` returns the weights that make its attention scores, as NumPy
  arrays (``book/attention.ipynb`` reads a trained model with them).
- ``causal``: :func:`build_model` builds an encoder (every position attends to every position)
  or, with ``causal=True``, a decoder-style stack with a causal mask (position ``p`` attends to
  positions ``0 .. p`` only), in which a model without positions (NoPE) is no longer
  permutation equivariant and ALiBi's distance penalty looks one way only.

Everything is seeded: the same arguments give the same model, batches and losses, and
:func:`train` and :func:`evaluate` run on one CPU thread so the number of cores does not
change the arithmetic (``torch.use_deterministic_algorithms(True)`` also guards against
nondeterministic kernels). Different CPU kernels (e.g. with ``ATEN_CPU_CAPABILITY=default``)
may still round differently, so claims about trained models should be checked with margins,
not exact numbers.
"""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import check_base, check_int, keyword_max_len
from .pytorch import LearnedPositionalEmbedding, PositionalEncoding, RotaryEmbedding, alibi_bias

#: The positional encodings :func:`build_model` can wire in, by name.
ENCODINGS = ("none", "learned", "sinusoidal", "rope", "alibi")
#: The tasks :func:`make_batch` can draw, by name.
TASKS = ("shift", "count")
#: Number of distinct input tokens (token ids ``0`` to ``N_SYMBOLS - 1``).
N_SYMBOLS = 64
#: How many positions back the ``"shift"`` task looks: position ``pos`` must output the token at
#: ``pos - SHIFT_K``. In the course's notation (``k = n - m`` from a query at ``m`` to a key at
#: ``n``) the target is at the shift ``k = -SHIFT_K = -2``.
SHIFT_K = 2
#: Largest number of times a token occurs in a ``"count"`` sequence.
MAX_COUNT = 3


def _check_choice(name: str, value, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}"
        )
    return value


def n_classes(task: str) -> int:
    """Number of output classes of ``task``.

    Args:
        task: ``"shift"`` or ``"count"``.

    Returns:
        ``N_SYMBOLS + 1`` for ``"shift"`` (a token, or the blank class ``N_SYMBOLS`` for the
        first ``SHIFT_K`` positions, which have no token ``SHIFT_K`` back); ``MAX_COUNT`` for
        ``"count"`` (class ``c - 1`` means "occurs ``c`` times").

    Raises:
        ValueError: ``task`` is not one of :data:`TASKS`.
    """
    task = _check_choice("task", task, TASKS)
    return N_SYMBOLS + 1 if task == "shift" else MAX_COUNT


def make_batch(
    task: str, batch_size: int, seq_len: int, *, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw a batch of input sequences and their targets for ``task``.

    ``"shift"``: every token uniform over ``0 .. N_SYMBOLS - 1``; the target at position
    ``pos`` is the token at ``pos - SHIFT_K``, or the blank class ``N_SYMBOLS`` for
    ``pos < SHIFT_K``. Only the order of the tokens tells the answer.

    ``"count"``: each sequence is made of distinct tokens repeated 1 to ``MAX_COUNT`` times
    (each count equally likely, the last group cut to fit), in a random order; the target at
    each position is the number of occurrences of its token minus one. Shuffling a sequence
    shuffles its targets the same way: order does not matter. Counts keep the same range at
    every length, so only the length changes between a short and a long test.

    Args:
        task: ``"shift"`` or ``"count"``.
        batch_size: number of sequences, an ``int >= 1``.
        seq_len: tokens per sequence, an ``int >= 1`` (at most ``N_SYMBOLS`` for ``"count"``,
            so that every group gets its own token).
        generator: a seeded ``torch.Generator``; the batch depends on nothing else.

    Returns:
        ``(tokens, targets)``: two ``torch.int64`` tensors of shape ``(batch_size, seq_len)``.

    Raises:
        TypeError: ``batch_size`` or ``seq_len`` is not an int, or ``generator`` is not a
            ``torch.Generator``.
        ValueError: unknown ``task``, ``batch_size`` or ``seq_len`` < 1, or ``seq_len >
            N_SYMBOLS`` for ``"count"``.
    """
    task = _check_choice("task", task, TASKS)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seq_len = check_int("seq_len", seq_len, minimum=1)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if task == "shift":
        tokens = torch.randint(N_SYMBOLS, (batch_size, seq_len), generator=generator)
        targets = torch.full_like(tokens, N_SYMBOLS)
        if seq_len > SHIFT_K:
            targets[:, SHIFT_K:] = tokens[:, :-SHIFT_K]
        return tokens, targets
    if seq_len > N_SYMBOLS:
        raise ValueError(
            f"seq_len must be <= N_SYMBOLS={N_SYMBOLS} for the 'count' task (every group of "
            f"repeated tokens needs its own token), got {seq_len}"
        )
    # Group g covers positions [ends[g - 1], ends[g]); group g gets the g-th token of a random
    # permutation of the symbols, then the positions are shuffled.
    sizes = torch.randint(1, MAX_COUNT + 1, (batch_size, seq_len), generator=generator)
    ends = sizes.cumsum(dim=1)
    group = torch.searchsorted(ends, torch.arange(seq_len).repeat(batch_size, 1), right=True)
    symbols = torch.rand(batch_size, N_SYMBOLS, generator=generator).argsort(dim=1)
    order = torch.rand(batch_size, seq_len, generator=generator).argsort(dim=1)
    tokens = symbols.gather(1, group).gather(1, order)
    targets = (tokens[:, :, None] == tokens[:, None, :]).sum(dim=-1) - 1
    return tokens, targets


class _Block(nn.Module):
    """One pre-norm encoder layer: multi-head self-attention, then a two-layer MLP."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x, rotary, bias, mask=None):
        batch, seq_len, d_model = x.shape
        head_dim = d_model // self.n_heads
        q, keys, v = (self.qkv(self.norm1(x)).view(batch, seq_len, 3, self.n_heads, head_dim)
                      .permute(2, 0, 3, 1, 4))   # each (batch, n_heads, seq_len, head_dim)
        if rotary is not None:
            q, keys = rotary(q, keys)
        scores = q @ keys.transpose(-2, -1) / math.sqrt(head_dim)
        if bias is not None:
            scores = scores + bias
        if mask is not None:                                 # causal: later keys get -inf
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-1)                     # (batch, n_heads, seq_len, seq_len)
        mixed = (weights @ v).transpose(1, 2).reshape(batch, seq_len, d_model)
        x = x + self.out(mixed)
        return x + self.mlp(self.norm2(x)), weights


class TinyTransformer(nn.Module):
    """A small Transformer that labels every token: an encoder, or with a causal mask a decoder.

    Token embedding, then the positional scheme ``encoding``, ``n_layers`` pre-norm layers of
    multi-head self-attention and MLP, a final layer norm and a linear classifier applied at
    every position. Where each scheme acts:

    - ``"none"``: nowhere. The model is then permutation equivariant: permuting the input
      tokens permutes the outputs the same way.
    - ``"learned"``: a trained table of ``max_len`` rows added to the token embeddings; an
      input longer than ``max_len`` is a ``ValueError``. Its rows start at N(0, 1/2), root
      mean square 1/sqrt(2) like the sinusoidal table; rows never reached in training keep
      these random values. (The token embeddings start at N(0, 1), root mean square 1: the
      size that standard deviation d_model**-0.5 times sqrt(d_model) gives.)
    - ``"sinusoidal"``: the encoding of Vaswani et al. 2017 added to the token embeddings
      (any length; the table grows).
    - ``"rope"``: queries and keys of every layer rotated (Su et al. 2021); scores depend on
      the distance between positions only. ``rope_scaling`` stretches its frequencies for
      longer sequences (:func:`posenc.rope_frequencies`).
    - ``"alibi"``: ``-slope[h] * |i - j|`` added to the scores of head ``h`` in every layer
      (Press et al. 2022). In an encoder this bias is symmetric: it gives the distance
      between two tokens but not which one comes first.

    With ``causal=True`` every layer masks the scores of later keys (``-inf`` before the
    softmax, Vaswani et al. 2017, section 3.2.3): the output at position ``p`` depends on the
    tokens ``0 .. p`` only, whatever the encoding. Then ``"none"`` is no longer permutation
    equivariant (position ``p`` sees ``p + 1`` tokens; Kazemnejad et al. 2023) and ``"alibi"``
    penalises the distance to earlier tokens only, as in the decoders it was proposed for.

    Build it with :func:`build_model`, which seeds the initial weights; the arguments, their
    defaults and the errors they raise are those of :func:`build_model` without ``seed``. All
    but ``encoding`` and ``task`` are keyword only: a third positional argument is a
    ``TypeError`` whose message gives the keyword call (reading the value as ``max_len``).
    Attributes: ``encoding``, ``task``, ``d_model``, ``n_heads``, ``n_layers``, ``max_len``,
    ``base``, ``causal``, ``rotary`` (the :class:`posenc.pytorch.RotaryEmbedding` of
    ``"rope"``, else ``None``).

    Shapes:
        ``forward(tokens)``: ``tokens`` of shape ``(batch, seq_len)``, an integer dtype,
        values in ``0 .. N_SYMBOLS - 1``. Returns logits of shape ``(batch, seq_len,
        n_classes(task))``, float32; with ``return_attention=True`` also a list with one
        tensor of attention weights per layer, each ``(batch, n_heads, seq_len, seq_len)``
        (row: query position, column: key position; each row sums to 1).

    Source: the encoder of Vaswani et al. 2017, "Attention Is All You Need", section 3, with
    the layer normalisation moved to the input of each sub-layer as in GPT-2 (Radford et al.
    2019, section 2.3); the schemes' sources are given above.
    """

    @keyword_max_len
    def __init__(self, encoding: str, task: str, *, d_model: int = 32, n_heads: int = 4,
                 n_layers: int = 1, max_len: int = 64, base: float = 10000.0,
                 causal: bool = False, rope_scaling: dict | None = None) -> None:
        super().__init__()
        if not isinstance(causal, bool):
            raise TypeError(f"causal must be True or False, got {type(causal).__name__} {causal!r}")
        encoding = _check_choice("encoding", encoding, ENCODINGS)
        task = _check_choice("task", task, TASKS)
        d_model = check_int("d_model", d_model, minimum=1)
        n_heads = check_int("n_heads", n_heads, minimum=1)
        n_layers = check_int("n_layers", n_layers, minimum=1)
        max_len = check_int("max_len", max_len, minimum=1)
        base = check_base(base)
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        if encoding == "rope" and (d_model // n_heads) % 2:
            raise ValueError(f"'rope' rotates pairs of coordinates: the head width "
                             f"d_model // n_heads = {d_model // n_heads} must be even")
        if rope_scaling is not None and encoding != "rope":
            raise ValueError(f"rope_scaling scales the frequencies of RoPE: it needs "
                             f"encoding='rope', got encoding={encoding!r}")
        self.encoding, self.task = encoding, task
        self.d_model, self.n_heads, self.n_layers = d_model, n_heads, n_layers
        self.max_len, self.base, self.causal = max_len, base, causal
        self.embed = nn.Embedding(N_SYMBOLS, d_model)
        self.position = None
        if encoding == "learned":
            self.position = LearnedPositionalEmbedding(d_model, max_len=max_len)
            # At the sinusoidal table's scale (root mean square 1/sqrt(2)), not GPT's 0.02, so
            # that the two added encodings start equally large next to the token embeddings.
            nn.init.normal_(self.position.embedding.weight, mean=0.0, std=2 ** -0.5)
        elif encoding == "sinusoidal":
            self.position = PositionalEncoding(d_model, max_len=max_len, base=base)
        self.rotary = (RotaryEmbedding(d_model // n_heads, base=base, scaling=rope_scaling)
                       if encoding == "rope" else None)
        self.layers = nn.ModuleList(_Block(d_model, n_heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes(task))

    def forward(self, tokens: torch.Tensor, *, return_attention: bool = False):
        """Logits for every position (and, if asked, the attention weights of every layer).

        Args:
            tokens: integer tensor of shape ``(batch, seq_len)``, values in
                ``0 .. N_SYMBOLS - 1``, ``seq_len >= 1``.
            return_attention: also return the attention weights.

        Returns:
            ``logits`` of shape ``(batch, seq_len, n_classes(task))``, or ``(logits,
            weights)`` where ``weights`` is a list of ``n_layers`` tensors of shape
            ``(batch, n_heads, seq_len, seq_len)``.

        Raises:
            TypeError: ``tokens`` is not an integer tensor.
            ValueError: ``tokens`` is not 2-dimensional, is empty, holds a value outside
                ``0 .. N_SYMBOLS - 1``, or (``"learned"``) is longer than ``max_len``.
        """
        if (not isinstance(tokens, torch.Tensor) or tokens.is_floating_point()
                or tokens.is_complex() or tokens.dtype == torch.bool):
            raise TypeError(
                "tokens must be an integer torch.Tensor of shape (batch, seq_len), got "
                + (f"a tensor of dtype {tokens.dtype}" if isinstance(tokens, torch.Tensor)
                   else type(tokens).__name__)
            )
        if tokens.dim() != 2 or tokens.numel() == 0:
            raise ValueError(f"tokens must have shape (batch, seq_len), both >= 1, got shape "
                             f"{tuple(tokens.shape)}")
        if tokens.min() < 0 or tokens.max() >= N_SYMBOLS:
            raise ValueError(f"tokens must be in 0 .. {N_SYMBOLS - 1}, got values from "
                             f"{int(tokens.min())} to {int(tokens.max())}")
        seq_len = tokens.shape[1]
        x = self.embed(tokens)                               # (batch, seq_len, d_model)
        if self.position is not None:
            x = self.position(x)
        bias = alibi_bias(seq_len, self.n_heads) if self.encoding == "alibi" else None
        mask = None
        if self.causal:                                      # (seq_len, seq_len): key <= query
            mask = torch.ones(seq_len, seq_len, dtype=torch.bool, device=tokens.device).tril()
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, self.rotary, bias, mask)
            all_weights.append(weights)
        logits = self.head(self.norm(x))
        return (logits, all_weights) if return_attention else logits

    def extra_repr(self) -> str:
        return (f"encoding={self.encoding!r}, task={self.task!r}, max_len={self.max_len}, "
                f"base={self.base}" + (", causal=True" if self.causal else ""))


def build_model(
    encoding: str,
    task: str,
    *,
    d_model: int = 32,
    n_heads: int = 4,
    n_layers: int = 1,
    max_len: int = 64,
    base: float = 10000.0,
    causal: bool = False,
    rope_scaling: dict | None = None,
    seed: int = 0,
) -> TinyTransformer:
    """Build a freshly initialised :class:`TinyTransformer` for ``task`` with ``encoding``.

    The initial weights depend only on the arguments: they are drawn after
    ``torch.manual_seed(seed)`` inside ``torch.random.fork_rng``, so the caller's random
    state is left as it was.

    Args:
        encoding: one of :data:`ENCODINGS`: ``"none"``, ``"learned"``, ``"sinusoidal"``,
            ``"rope"``, ``"alibi"``.
        task: one of :data:`TASKS` (sets the number of output classes).
        d_model: width of the embeddings, an ``int >= 1`` divisible by ``n_heads`` (and
            even per head for ``"rope"``).
        n_heads: number of attention heads, an ``int >= 1``.
        n_layers: number of encoder layers, an ``int >= 1``.
        max_len: rows of the ``"learned"`` table (longest input it accepts) and initial
            length of the ``"sinusoidal"`` table, an ``int >= 1``.
        base: the constant of the frequencies for ``"sinusoidal"`` and ``"rope"`` (10000 in
            both papers), a finite ``float > 1``; ignored by the other encodings.
        causal: ``True`` for a causal mask in every layer (position ``p`` attends to positions
            ``0 .. p`` only), ``False`` (the default) for an encoder.
        rope_scaling: ``None`` (default) or, with ``"rope"`` only, a dict of
            :func:`posenc.rope_frequencies` passed to the model's
            :class:`posenc.pytorch.RotaryEmbedding` as ``scaling`` (a longer context: position
            interpolation, dynamic NTK, YaRN, Llama 3). It has no weights: a model trained
            without it takes it by ``load_state_dict`` into a model built with it.
        seed: seed of the initial weights, an ``int >= 0``.

    Returns:
        A :class:`TinyTransformer` in training mode, float32, on the CPU.

    Raises:
        TypeError: an integer argument is not an int, ``base`` is not a real number,
            ``causal`` is not a bool, or ``rope_scaling`` is not a dict.
        ValueError: unknown ``encoding`` or ``task``; a size < 1; ``d_model`` not divisible
            by ``n_heads``; an odd head width with ``"rope"``; a bad ``base``; a
            ``rope_scaling`` with another encoding than ``"rope"`` or not valid (see
            :func:`posenc.rope_frequencies`).
    """
    seed = check_int("seed", seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyTransformer(encoding, task, d_model=d_model, n_heads=n_heads,
                               n_layers=n_layers, max_len=max_len, base=base, causal=causal,
                               rope_scaling=rope_scaling)


@contextlib.contextmanager
def _one_thread():
    """Run the block with one intra-op thread (restored after): faster for a model this small,
    and the arithmetic does not depend on the machine's number of cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _check_model(model) -> TinyTransformer:
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer (see build_model), got "
                        f"{type(model).__name__}")
    return model


def train(
    model: TinyTransformer,
    *,
    steps: int = 300,
    batch_size: int = 32,
    seq_len: int = 16,
    lr: float = 1e-2,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` on its task with Adam and the cross-entropy at every position.

    Each step draws a fresh batch of ``batch_size`` sequences of ``seq_len`` tokens from
    :func:`make_batch` with a generator seeded by ``seed``. Training runs on one CPU thread
    (``torch.set_num_threads(1)``, restored afterwards): for a model this small it is the
    fastest setting, and the result does not depend on the number of cores.

    Args:
        model: a :class:`TinyTransformer` from :func:`build_model`; trained in place.
        steps: number of optimisation steps, an ``int >= 1``.
        batch_size: sequences per step, an ``int >= 1``.
        seq_len: the training length, an ``int >= 1``.
        lr: learning rate of Adam (Kingma and Ba 2015), a finite ``float > 0``.
        seed: seed of the training batches, an ``int >= 0``.

    Returns:
        The training loss (mean cross-entropy, in nats) of every step, a list of ``steps``
        floats. The model is left in evaluation mode.

    Raises:
        TypeError: ``model`` is not a :class:`TinyTransformer`, or a bad argument type.
        ValueError: a size < 1, a bad ``lr``, ``seq_len`` too long for the task or, for
            ``"learned"``, longer than ``max_len``.
    """
    model = _check_model(model)
    steps = check_int("steps", steps, minimum=1)
    seed = check_int("seed", seed)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (0 < lr < math.inf):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    def loss_on_a_batch(generator):
        tokens, targets = make_batch(model.task, batch_size, seq_len, generator=generator)
        return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())

    return _fit(model, steps, lr, seed, loss_on_a_batch)


def _fit(model: TinyTransformer, steps: int, lr: float, seed: int, loss_on_a_batch) -> list[float]:
    """Adam on one CPU thread for ``steps`` steps of ``loss_on_a_batch(generator)``, each on a
    fresh batch drawn with a generator seeded by ``seed``; the losses, the model left in
    evaluation mode. The training loop of :func:`train` and :func:`posenc.long_context.train_passkey`."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    with _one_thread():
        for _ in range(steps):
            loss = loss_on_a_batch(generator)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    return losses


def accuracy_by_position(model: TinyTransformer, seq_len: int, *, n_sequences: int = 256,
                         seed: int = 12345) -> torch.Tensor:
    """Accuracy of ``model`` at every position of fresh sequences of ``seq_len`` tokens.

    Args:
        model: a :class:`TinyTransformer`.
        seq_len: the test length, an ``int >= 1`` (any length: the test measures what the
            model does past its training length).
        n_sequences: number of test sequences, an ``int >= 1``.
        seed: seed of the test sequences, an ``int >= 0`` (keep it different from the
            training seed).

    Returns:
        A float64 tensor of shape ``(seq_len,)``: entry ``pos`` is the fraction of the
        ``n_sequences`` sequences whose most likely class at position ``pos`` is the target.

    Raises:
        TypeError: ``model`` is not a :class:`TinyTransformer`, or a bad argument type.
        ValueError: a size < 1, ``seq_len`` too long for the task or, for ``"learned"``,
            longer than ``max_len``.
    """
    model = _check_model(model)
    seed = check_int("seed", seed)
    tokens, targets = make_batch(model.task, n_sequences, seq_len,
                                 generator=torch.Generator().manual_seed(seed))
    model.eval()
    with torch.no_grad(), _one_thread():
        predicted = model(tokens).argmax(dim=-1)
    return (predicted == targets).double().mean(dim=0)


def evaluate(model: TinyTransformer, seq_len: int, *, n_sequences: int = 256,
             seed: int = 12345) -> float:
    """Accuracy of ``model`` on fresh sequences of ``seq_len`` tokens of its task.

    Args and errors as :func:`accuracy_by_position`.

    Returns:
        The fraction of all ``n_sequences * seq_len`` positions whose most likely class is
        the target, a ``float`` in ``[0, 1]`` (the mean of :func:`accuracy_by_position`).
    """
    return accuracy_by_position(model, seq_len, n_sequences=n_sequences, seed=seed).mean().item()


def attention_maps(model: TinyTransformer, tokens: torch.Tensor) -> list[torch.Tensor]:
    """The attention weights of every layer of ``model`` for ``tokens``, for plotting.

    Args:
        model: a :class:`TinyTransformer`.
        tokens: integer tensor of shape ``(batch, seq_len)``, values in ``0 .. N_SYMBOLS - 1``.

    Returns:
        A list of ``n_layers`` float32 tensors of shape ``(batch, n_heads, seq_len,
        seq_len)``: entry ``[b, h, i, j]`` is how much query position ``i`` attends to key
        position ``j`` in head ``h``; every row sums to 1.

    Raises:
        TypeError, ValueError: as :meth:`TinyTransformer.forward`.
    """
    model = _check_model(model)
    model.eval()
    with torch.no_grad():
        return model(tokens, return_attention=True)[1]


def attention_parameters(model: TinyTransformer, layer: int = 0) -> dict:
    """The weights that make the attention scores of one layer of ``model``, as NumPy arrays.

    For reading a trained model with NumPy (``posenc.attention``): in layer ``layer`` the
    scores of head ``h`` are ``q . k / sqrt(d_head)`` with ``q = LN(x) @ w_query[h] +
    b_query[h]`` and ``k = LN(x) @ w_key[h] + b_key[h]``, where ``x`` is the layer's input (for
    layer 0, the token embedding plus, for ``"learned"`` and ``"sinusoidal"``, the position
    vector) and ``LN`` the layer norm with ``norm_weight``, ``norm_bias`` and ``norm_eps``.
    ``"rope"`` rotates ``q`` and ``k`` before the product and ``"alibi"`` adds its bias to
    the scores, and a model built with ``causal=True`` masks later keys (see
    :class:`TinyTransformer`).

    Args:
        model: a :class:`TinyTransformer`.
        layer: index of the layer, an ``int`` from 0 to ``model.n_layers - 1``.

    Returns:
        A dict of float64 ``numpy.ndarray`` copies (changing them leaves the model as it is),
        with ``d_head = d_model // n_heads``:

        - ``"embedding"``: the token embeddings, ``(N_SYMBOLS, d_model)``;
        - ``"norm_weight"``, ``"norm_bias"``: the layer norm before attention, ``(d_model,)``
          each; ``"norm_eps"``: its ``eps``, a ``float``;
        - ``"w_query"``, ``"w_key"``, ``"w_value"``: ``(n_heads, d_model, d_head)``, head
          ``h``'s projection, applied as ``row @ w[h]``;
        - ``"b_query"``, ``"b_key"``, ``"b_value"``: ``(n_heads, d_head)``.

    Raises:
        TypeError: ``model`` is not a :class:`TinyTransformer`, or ``layer`` is not an int.
        ValueError: ``layer`` is not the index of a layer of ``model``.
    """
    model = _check_model(model)
    layer = check_int("layer", layer)
    if layer >= model.n_layers:
        raise ValueError(f"layer must be from 0 to {model.n_layers - 1} (the model has "
                         f"{model.n_layers} layer(s)), got {layer}")
    block = model.layers[layer]

    def numpy(tensor):
        return tensor.detach().cpu().double().numpy().copy()

    d_model, n_heads = model.d_model, model.n_heads
    d_head = d_model // n_heads
    # qkv's weight has shape (3 * d_model, d_model): rows [0, d_model) make the queries, then
    # the keys, then the values; within each, rows [h * d_head, (h + 1) * d_head) are head h.
    weight = numpy(block.qkv.weight).reshape(3, n_heads, d_head, d_model).transpose(0, 1, 3, 2)
    bias = numpy(block.qkv.bias).reshape(3, n_heads, d_head)
    return {
        "embedding": numpy(model.embed.weight),
        "norm_weight": numpy(block.norm1.weight),
        "norm_bias": numpy(block.norm1.bias),
        "norm_eps": float(block.norm1.eps),
        "w_query": weight[0], "w_key": weight[1], "w_value": weight[2],
        "b_query": bias[0], "b_key": bias[1], "b_value": bias[2],
    }
