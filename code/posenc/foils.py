"""Foils: naive or wrong versions of the encoding, kept for comparison only.

The course compares its implementations with what popular sources do. Each foil below
re-creates, in our own code, the behaviour of one source (the arithmetic, the shapes and
the flaws), so that a chapter or a test can show the difference side by side. Nothing here
is used by the real implementations (:mod:`posenc.encoding`, :mod:`posenc.pytorch`,
:mod:`posenc.tensorflow`), and nothing here should be pasted into a model: each docstring
says what is wrong or different. The correct forms the book also compares with (the textbook
vectorized encoding, the buffered PyTorch module) are in :mod:`posenc.reference`.

Importing this module imports NumPy only. The framework foils import their framework
when first used: the functions import it inside their body, and the PyTorch classes
(:class:`SnippetPositionalEncoding`, :class:`SeqFirstPositionalEncoding`,
:class:`PlainAttributePositionalEncoding`) are created on first access of the attribute (a
module-level ``__getattr__``, PEP 562), so ``from posenc.foils import
SnippetPositionalEncoding`` imports PyTorch at that moment.

Foils and what they imitate:

- :func:`pair_loop_encoding`: the loop over pairs of Machine Learning Mastery
  (Saeed 2023): leaves the last column at zero for an odd ``d_model``.
- :func:`float32_div_term_parts`, :func:`float32_div_term_encoding`,
  :func:`float32_div_term_encoding_torch`: the ``div_term`` arithmetic of the common
  PyTorch snippet, with angles in float32.
- :class:`SnippetPositionalEncoding`: the common PyTorch snippet's module.
- :class:`SeqFirstPositionalEncoding`: the module of the official PyTorch
  ``nn.Transformer`` tutorial, sequence first.
- :class:`PlainAttributePositionalEncoding`: the table as a plain attribute, which
  ``.to()`` ignores.
- :func:`add_table_without_batch_axis`: a sequence-first addition that forgot the
  table's batch axis.
- :func:`gfg_like_table`: the NumPy/TensorFlow function of GeeksforGeeks.
- :func:`tutorial_like_table`: the table of the TensorFlow Transformer tutorial
  (concatenated layout).
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = [
    "add_table_without_batch_axis",
    "float32_div_term_encoding",
    "float32_div_term_encoding_torch",
    "float32_div_term_parts",
    "gfg_like_table",
    "pair_loop_encoding",
    "tutorial_like_table",
    "PlainAttributePositionalEncoding",
    "SeqFirstPositionalEncoding",
    "SnippetPositionalEncoding",
]

_TORCH_CLASSES = (
    "PlainAttributePositionalEncoding",
    "SeqFirstPositionalEncoding",
    "SnippetPositionalEncoding",
)


# --- NumPy foils -------------------------------------------------------------------------


def pair_loop_encoding(seq_len: int, d_model: int, *, base: float = 10000.0,
                       round_up: bool = False) -> np.ndarray:
    """A loop over pairs that writes columns ``2i`` and ``2i + 1`` with no guard. Flawed.

    Imitates the loop of Machine Learning Mastery, "A Gentle Introduction to Positional
    Encoding in Transformer Models, Part 1" (Saeed 2023): the inner loop runs over
    ``range(int(d_model / 2))`` pairs and writes a sine and a cosine per step, into a
    table that starts as zeros.

    What is wrong: for an odd ``d_model``, ``int(d_model / 2)`` rounds down, the last
    column (a sine) is never written and stays 0. With ``round_up=True`` (the obvious
    repair, ``math.ceil``) the last pair writes its cosine one column past the end and
    NumPy raises ``IndexError``. For an even ``d_model`` the values are right.

    Args:
        seq_len: number of positions, an ``int >= 0``.
        d_model: width, an ``int >= 1``.
        base: the constant of the formula, a ``float > 0``.
        round_up: use ``ceil(d_model / 2)`` pairs instead of ``int(d_model / 2)``.

    Returns:
        ``numpy.ndarray`` ``(seq_len, d_model)``, float64.

    Raises:
        IndexError: ``round_up=True`` with an odd ``d_model`` (the flaw). No argument
            checks: bad arguments fail inside NumPy or Python with their own messages.
    """
    n_pairs = math.ceil(d_model / 2) if round_up else int(d_model / 2)
    out = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(n_pairs):
            omega = 1.0 / base ** (2 * i / d_model)
            out[pos, 2 * i] = math.sin(pos * omega)
            out[pos, 2 * i + 1] = math.cos(pos * omega)  # IndexError if 2i + 1 == d_model
    return out


def float32_div_term_parts(seq_len: int, d_model: int, *, offset: int = 0,
                           base: float = 10000.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The intermediate float32 arrays of the common PyTorch snippet, computed with NumPy.

    Imitates the arithmetic of the snippet ``PositionalEncoding`` module (the "common PyTorch
    snippet" of the course): positions as float32, exponents ``2i * (-ln(base) / d_model)``
    in float32 for ``2i = 0, 2, 4, ...``, ``div_term = exp(exponent)`` and the angles
    ``position * div_term``, all rounded to float32. ``exp`` is evaluated in float64 and
    rounded once to float32, the best a float32 library can do, so that the result does
    not depend on the CPU (PyTorch's own float32 ``exp`` may differ in the last bit).

    Args:
        seq_len: number of positions, an ``int >= 0``.
        d_model: width, an ``int >= 1``.
        offset: the first position, an ``int >= 0``.
        base: the constant of the formula, a ``float > 0``.

    Returns:
        ``(exponent, div_term, angles)``, float32 arrays of shapes ``(n_pairs,)``,
        ``(n_pairs,)`` and ``(seq_len, n_pairs)``, with ``n_pairs = ceil(d_model / 2)``.
    """
    position = np.arange(offset, offset + seq_len, dtype=np.float32)[:, np.newaxis]
    scale = np.float32(-math.log(base) / d_model)
    exponent = np.arange(0, d_model, 2).astype(np.float32) * scale
    div_term = np.exp(exponent.astype(np.float64)).astype(np.float32)
    return exponent, div_term, position * div_term


def float32_div_term_encoding(seq_len: int, d_model: int, *, offset: int = 0,
                              base: float = 10000.0) -> np.ndarray:
    """The common PyTorch snippet's table, with its float32 angles, computed with NumPy.

    Angles from :func:`float32_div_term_parts`; their sines and cosines are evaluated in
    float64 and rounded once to float32 (again the best float32 can do).

    What is wrong:

    - the angles are float32: an angle near ``10**5`` is stored with an error up to
      ``2**-8`` rad, and ``div_term``'s own rounding is multiplied by the position, so the
      table's error grows in proportion to the position (about ``1e-2`` near position
      ``10**5``, ``1e-1`` near ``10**6``, against ``3e-8`` for a float64 computation
      rounded once);
    - for an odd ``d_model`` the ``ceil(d_model / 2)`` cosines do not fit into the
      ``floor(d_model / 2)`` odd columns: NumPy raises ``ValueError``.

    Args:
        seq_len, d_model, offset, base: as for :func:`float32_div_term_parts`.

    Returns:
        ``numpy.ndarray`` ``(seq_len, d_model)``, float32.

    Raises:
        ValueError: ``d_model`` is odd (the flaw).
    """
    angles = float32_div_term_parts(seq_len, d_model, offset=offset, base=base)[2].astype(np.float64)
    table = np.zeros((seq_len, d_model), dtype=np.float32)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)  # ValueError for an odd d_model
    return table


def add_table_without_batch_axis(x, table):
    """Add a ``(max_len, d_model)`` table to a sequence-first ``x`` by slicing rows. Wrong.

    Meant for ``x`` of shape ``(seq_len, batch, d_model)``, but the slice
    ``table[:seq_len]`` has no size-1 batch axis, so broadcasting aligns it with
    ``(batch, d_model)``: it fails when ``seq_len != batch`` and, when
    ``seq_len == batch``, silently adds ``PE[b]`` to sample ``b`` at every time step. Works
    with NumPy arrays and PyTorch tensors alike. A made-up bug, not from a source.

    Args:
        x: array or tensor of shape ``(seq_len, batch, d_model)``.
        table: array or tensor of shape ``(max_len, d_model)``, ``max_len >= seq_len``.

    Returns:
        ``x + table[:seq_len]``, broadcast as described above.

    Raises:
        ValueError (NumPy) or RuntimeError (PyTorch): ``seq_len != batch`` and neither is 1.
    """
    return x + table[: x.shape[0]]


# --- TensorFlow foils ---------------------------------------------------------------------


def gfg_like_table(position: int, d_model: int):
    """The table of the GeeksforGeeks function, as a TensorFlow tensor with a batch axis.

    Imitates ``positional_encoding(position, d_model)`` of GeeksforGeeks, "Positional
    Encoding in Transformers" (2025): one angle per column ``j``,
    ``pos / 10000 ** (2 * (j // 2) / float32(d_model))``, sine on the even columns and
    cosine on the odd ones (both slices of the same array, so odd widths work), a leading
    batch axis, and a cast to ``tf.float32``. Imports TensorFlow.

    What is different: the shape is ``(1, position, d_model)``, not
    ``(position, d_model)``; the output is always float32. Despite the float32 divisor the
    angles are float64 (NumPy promotes an int64 array divided by a float32 scalar), so
    the values equal ours rounded to float32.

    Args:
        position: number of positions, an ``int >= 0``.
        d_model: width, an ``int >= 1`` (odd widths work).

    Returns:
        ``tf.Tensor`` ``(1, position, d_model)``, float32.
    """
    import tensorflow as tf

    # Our own code for the article's behaviour (one angle per column, exponent 2 * (j // 2)
    # over a float32 d_model, promoted to float64), not a copy of its lines.
    exponent = (np.arange(d_model) // 2 * 2) / np.float32(d_model)
    angles = np.arange(position).reshape(-1, 1) / 10000.0**exponent
    table = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
    return tf.cast(table[np.newaxis], tf.float32)


def tutorial_like_table(length: int, depth: int):
    """The table of the TensorFlow Transformer tutorial: all sines, then all cosines.

    Imitates the ``positional_encoding(length, depth)`` function of the TensorFlow tutorial
    "Neural machine translation with a Transformer and Keras" (2024): it halves the width,
    uses the rates ``1 / 10000 ** (i / (depth / 2))`` for ``i = 0 .. depth/2 - 1`` (the
    paper's angular frequencies, since ``i / (depth / 2) = 2i / depth``), and concatenates
    the sines and the cosines along the last axis. Imports TensorFlow.

    What is different: the concatenated layout ``[sin | cos]`` instead of the paper's
    interleaved pairs (same numbers, columns permuted); for an odd ``depth`` the table
    has ``depth + 1`` columns (``np.arange(depth / 2)`` has ``ceil(depth / 2)`` entries).

    Args:
        length: number of positions, an ``int >= 0``.
        depth: width ``d_model``, an ``int >= 1``.

    Returns:
        ``tf.Tensor`` ``(length, 2 * ceil(depth / 2))``, float32.
    """
    import tensorflow as tf

    half = depth / 2
    rates = 1.0 / np.power(10000.0, np.arange(half) / half)
    angles = np.arange(length)[:, np.newaxis] * rates[np.newaxis, :]
    return tf.cast(np.concatenate([np.sin(angles), np.cos(angles)], axis=-1), tf.float32)


# --- PyTorch foils --------------------------------------------------------------------------


def float32_div_term_encoding_torch(seq_len: int, d_model: int, *, offset: int = 0,
                                    base: float = 10000.0):
    """The common PyTorch snippet's table, computed with PyTorch's own float32 operations.

    The same arithmetic as :func:`float32_div_term_encoding` (float32 positions,
    ``div_term = exp(2i * (-ln(base) / d_model))``, float32 angles), but every operation,
    ``exp``, ``sin`` and ``cos`` included, is PyTorch's float32 one, as in the snippet; the
    last bits can therefore differ from the NumPy foil. Imports PyTorch.

    What is wrong: float32 angles (error growing with the position) and, for an odd
    ``d_model``, a ``RuntimeError`` when the cosines are assigned.

    Args:
        seq_len, d_model, offset, base: as for :func:`float32_div_term_parts`.

    Returns:
        ``torch.Tensor`` ``(seq_len, d_model)``, float32.

    Raises:
        RuntimeError: ``d_model`` is odd (the flaw).
    """
    import torch

    position = torch.arange(offset, offset + seq_len, dtype=torch.float32)[:, None]
    scale = -math.log(base) / d_model
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * scale)
    angles = position * div_term
    table = torch.zeros(seq_len, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)  # RuntimeError for an odd d_model
    return table


@functools.cache
def _torch_classes() -> dict:
    """Create the PyTorch foil classes (imports PyTorch); called once, on first access."""
    from torch import nn

    from .pytorch import positional_encoding as exact_table

    class SnippetPositionalEncoding(nn.Module):
        """The common PyTorch snippet's module, re-created for comparison. Flawed.

        Imitates the ``PositionalEncoding(d_model, max_len=5000)`` module of the common
        PyTorch snippet: a ``(1, max_len, d_model)`` table from
        :func:`float32_div_term_encoding_torch`, registered as a *persistent* buffer
        named ``pe``, and ``forward(x)`` returning ``x + pe[:, :seq_len]`` for a
        batch-first ``x`` of shape ``(batch, seq_len, d_model)``.

        What is wrong or different: float32 angles (error about ``4e-4`` at 5000
        positions); ``RuntimeError`` for an odd ``d_model``; the table enters
        ``state_dict`` (10.24 MB at ``max_len=5000``, ``d_model=512``), so checkpoints
        depend on ``max_len``; no dropout, no ``offset`` (every single-token step gets
        ``PE[0]``); inputs longer than ``max_len`` fail; the float32 table promotes a
        float16 input to a float32 output; no argument checks.

        Args: ``d_model`` (``int``, even), ``max_len`` (``int``, default 5000).
        Shapes: ``forward(x)``: ``x`` ``(batch, seq_len, d_model)`` with
        ``seq_len <= max_len``; the result has the same shape.
        """

        def __init__(self, d_model, max_len=5000):
            super().__init__()
            self.register_buffer("pe", float32_div_term_encoding_torch(max_len, d_model)[None])

        def forward(self, x):
            return x + self.pe[:, : x.shape[1]]

    class SeqFirstPositionalEncoding(nn.Module):
        """The sequence-first module of the official PyTorch tutorial, re-created. Layout trap.

        Imitates the ``PositionalEncoding`` of the PyTorch tutorial "Language modeling with
        nn.Transformer and torchtext" (2023), with its argument order
        ``(d_model, dropout=0.1, max_len=5000)``: a ``(max_len, 1, d_model)`` table with
        float32 angles as a persistent buffer ``pe``, and ``forward(x)`` returning
        ``dropout(x + pe[:seq_len])`` for ``x`` of shape ``(seq_len, batch, d_model)``, the
        default layout of PyTorch's Transformer layers (``batch_first=False``).

        What is wrong or different: correct for sequence-first input, but given a
        batch-first ``(batch, seq_len, d_model)`` tensor it runs without error and adds
        ``PE[b]`` to every position of sample ``b`` (the size-1 axis broadcasts over the
        positions). Also float32 angles, no ``offset``, a fixed ``max_len``, ``RuntimeError``
        for an odd ``d_model``.

        Args: ``d_model`` (``int``, even), ``dropout`` (``float`` in ``[0, 1]``, default 0.1),
        ``max_len`` (``int``, default 5000).
        Shapes: ``forward(x)``: ``x`` ``(seq_len, batch, d_model)``; same shape out.
        """

        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super().__init__()
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("pe", float32_div_term_encoding_torch(max_len, d_model)[:, None])

        def forward(self, x):
            return self.dropout(x + self.pe[: x.shape[0]])

    class PlainAttributePositionalEncoding(nn.Module):
        """The exact float32 table as a plain tensor attribute. Wrong.

        What is wrong: ``nn.Module`` does not know about a plain attribute, so ``.to()``,
        ``.half()`` and ``.cuda()`` leave it as it is (on a GPU the first ``forward``
        would fail with a device mismatch) and ``state_dict`` ignores it.
        ``forward(x)`` adds ``pe[:seq_len]``.

        Args: ``d_model`` (``int >= 1``), ``max_len`` (``int >= 0``).
        Shapes: ``forward(x)``: ``x`` ``(..., seq_len, d_model)``; same shape out.
        """

        def __init__(self, d_model, max_len):
            super().__init__()
            self.pe = exact_table(max_len, d_model)

        def forward(self, x):
            return x + self.pe[: x.shape[-2]]

    classes = [SnippetPositionalEncoding, SeqFirstPositionalEncoding,
               PlainAttributePositionalEncoding]
    return {cls.__name__: cls for cls in classes}


def __getattr__(name: str):
    if name in _TORCH_CLASSES:
        return _torch_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_TORCH_CLASSES))
