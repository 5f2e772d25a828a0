"""Reference forms: correct versions the book compares with, which the package does not ship.

Both forms below compute the encoding correctly; each is the usual way to write it, kept so that
a chapter, the benchmark or a test can set the package's own choice beside it:

- :func:`textbook_encoding`: the textbook vectorized NumPy form, one ``sin`` or ``cos`` per
  entry of a full float64 angle matrix. The package ships :func:`posenc.positional_encoding`,
  which returns the same values (within a few float64 roundings) faster for long tables, with
  the angle-addition identities, and checks its arguments. :mod:`posenc.bench` times one
  against the other.
- :func:`mae_2d_encoding`: the 2-D sine-cosine encoding in the order of MAE's code (He et al.
  2022), against which :func:`posenc.positional_encoding_2d` (the same numbers in another order)
  is tested.
- :class:`BufferedPositionalEncoding`: the exact float32 table in a non-persistent buffer of an
  ``nn.Module``, the usual PyTorch design. The package ships
  :class:`posenc.pytorch.PositionalEncoding`, which keeps a cache per dtype and device
  instead, so that ``.half()`` cannot round the table for good and a float64 input gets
  float64 values (``book/deeper_frameworks.ipynb`` shows the difference).

The naive or wrong versions (the loops, tables and modules of popular sources, with their
flaws) are in :mod:`posenc.foils`; the book says which is which.

Importing this module imports NumPy only. :class:`BufferedPositionalEncoding` is created on
first access of the attribute (a module-level ``__getattr__``, PEP 562), so
``from posenc.reference import BufferedPositionalEncoding`` imports PyTorch at that moment.
"""

from __future__ import annotations

import functools

import numpy as np

from .encoding import angular_frequencies

__all__ = ["textbook_encoding", "mae_2d_encoding", "BufferedPositionalEncoding"]


def mae_2d_encoding(height: int, width: int, embed_dim: int, *, base: float = 10000.0) -> np.ndarray:
    """The 2-D sine-cosine encoding in the order of MAE's code (``util/pos_embed.py``).

    The grid is flattened row by row: row ``r * width + c`` is the patch in row ``r`` and column
    ``c``. Its first ``embed_dim // 2`` values encode the column ``c`` and the last ones the row
    ``r`` (MAE's code builds its grid with ``meshgrid(w, h)``, so its first half, named after
    ``h``, holds the column), each half in the concatenated layout: the sines of its
    ``embed_dim // 4`` frequencies ``base ** (-2i / (embed_dim // 2))``, then their cosines.
    Correct; the package ships :func:`posenc.positional_encoding_2d`, the same numbers as a
    ``(height, width, embed_dim)`` grid with the row first and interleaved pairs.

    Args:
        height, width: the grid's rows and columns, ``int >= 0``.
        embed_dim: a multiple of 4.
        base: the constant of the frequencies (10000 in MAE).

    Returns:
        ``numpy.ndarray`` of shape ``(height * width, embed_dim)``, dtype ``float64``.

    Raises:
        ValueError: ``embed_dim`` is not a positive multiple of 4.

    Source: He et al. 2022, "Masked Autoencoders Are Scalable Vision Learners", and its code.
    """
    if embed_dim < 4 or embed_dim % 4:
        raise ValueError(f"embed_dim must be a positive multiple of 4, got {embed_dim}")
    half = embed_dim // 2
    omega = angular_frequencies(half, base=base)[0::2]          # one per pair of a half

    def sines_then_cosines(coordinate):
        angles = coordinate[:, np.newaxis] * omega
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)

    rows, columns = np.meshgrid(np.arange(height, dtype=np.float64),
                                np.arange(width, dtype=np.float64), indexing="ij")
    return np.concatenate([sines_then_cosines(columns.ravel()), sines_then_cosines(rows.ravel())],
                          axis=1)


def textbook_encoding(seq_len: int, d_model: int, *, base: float = 10000.0, offset: int = 0,
                      dtype=np.float64) -> np.ndarray:
    """The textbook vectorized form: every angle at once, then one ``sin``/``cos`` per entry.

    A ``(seq_len, 1)`` column of positions times a ``(1, n_pairs)`` row of angular
    frequencies gives the ``(seq_len, n_pairs)`` angle matrix (broadcasting); ``np.sin``
    of it fills the even columns and ``np.cos`` of its first ``d_model // 2`` columns the
    odd ones. This is the form that tutorials teach (e.g. the NumPy functions of
    GeeksforGeeks 2025 and ApX Machine Learning 2025, written per column or per pair) and
    the one derived step by step in the chapter "Vectorized NumPy".

    Correct: the values are within a few float64 rounding steps of
    :func:`posenc.positional_encoding`, odd widths included, and the angles are float64
    whatever ``dtype``. What is different: it is slower for long tables, because it evaluates
    one ``sin`` or ``cos`` per entry and keeps the whole float64 angle matrix in memory, where
    :func:`posenc.positional_encoding` uses the angle-addition identities. It has no
    argument checks. :mod:`posenc.bench` times it as the baseline.

    Args:
        seq_len: number of positions (rows), an ``int >= 0``.
        d_model: width (columns), an ``int >= 1``.
        base: the constant of the formula (10000 in the paper), a ``float > 0``.
        offset: position of the first row, an ``int >= 0``.
        dtype: a NumPy floating-point dtype for the result.

    Returns:
        ``numpy.ndarray`` ``(seq_len, d_model)`` in ``dtype`` (computed in float64,
        rounded once at the end).

    Raises:
        Nothing of its own: bad arguments fail inside NumPy with its messages.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    positions = np.arange(offset, offset + seq_len, dtype=np.float64)[:, np.newaxis]
    omega = angular_frequencies(d_model, base=base)[0::2][np.newaxis, :]
    angles = positions * omega  # (seq_len, n_pairs)
    table = np.empty((seq_len, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return table.astype(dtype, copy=False)


@functools.cache
def _buffered_class() -> type:
    """Create :class:`BufferedPositionalEncoding` (imports PyTorch), once: on first access."""
    from torch import nn

    from .pytorch import positional_encoding as exact_table

    class BufferedPositionalEncoding(nn.Module):
        """Our exact float32 table kept as a non-persistent buffer: the usual design, correct.

        Not from one source: it changes one thing only with respect to
        :class:`posenc.pytorch.PositionalEncoding`, where the table lives. The table is
        :func:`posenc.pytorch.positional_encoding` ``(max_len, d_model)`` in float32,
        registered with ``register_buffer("pe", ..., persistent=False)`` as the snippet and
        the PyTorch tutorial do (they keep theirs persistent); ``forward(x, offset=0)`` adds
        ``pe[offset : offset + seq_len]`` converted to ``x``'s dtype.

        What is different: the buffer follows the module, so ``.to(device)`` moves it, but
        ``.half()`` rounds it to float16 for good (``.float()`` does not bring the digits
        back), and every input gets the buffer's precision (a float64 input gets float32
        values). No checks, no dropout, no growth.

        Args: ``d_model`` (``int >= 1``), ``max_len`` (keyword only, ``int >= 0``).
        Shapes: ``forward(x, offset=0)``: ``x`` ``(..., seq_len, d_model)``; same shape out.
        Source: Vaswani et al. 2017, section 3.5 (the encoding).
        """

        def __init__(self, d_model, *, max_len):
            super().__init__()
            self.register_buffer("pe", exact_table(max_len, d_model), persistent=False)

        def forward(self, x, offset=0):
            return x + self.pe[offset : offset + x.shape[-2]].to(x.dtype)

    return BufferedPositionalEncoding


def __getattr__(name: str):
    if name == "BufferedPositionalEncoding":
        return _buffered_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "BufferedPositionalEncoding"])
