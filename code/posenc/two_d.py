"""Positions on a 2-D grid (the patches of an image): the 2-D sinusoidal encoding and 2-D RoPE.

A Vision Transformer cuts an image into a ``height x width`` grid of patches; each patch has a
row and a column. The two functions below give those two coordinates to a model the way the
1-D encodings give one: half of the coordinates of each vector carry the row, the other half
the column.

- :func:`positional_encoding_2d`: the 2-D sine-cosine encoding of MAE (He et al. 2022) and of
  the ViT variants that followed, added to the patch embeddings.
- :func:`rope_2d`: axial 2-D RoPE (Heo et al. 2024, "Rotary Position Embedding for Vision
  Transformer"), which rotates queries and keys so that a score depends only on the row and
  column offsets between two patches.

Importing this module imports NumPy only.
"""

from __future__ import annotations

import numpy as np

from ._validate import check_int
from .encoding import positional_encoding
from .relative import rope_cos_sin, rotate_pairs


def _check_multiple(name: str, value, multiple: int) -> int:
    value = check_int(name, value, minimum=multiple)
    if value % multiple:
        raise ValueError(f"{name} must be a multiple of {multiple}, got {value}")
    return value


def positional_encoding_2d(height: int, width: int, d_model: int, *,
                           base: float = 10000.0) -> np.ndarray:
    """The 2-D sinusoidal encoding of a ``height x width`` grid: row and column, half each.

    Entry ``[r, c]`` is the vector of the patch in row ``r`` and column ``c``: its first
    ``d_model // 2`` coordinates are the 1-D encoding (:func:`posenc.positional_encoding`, of
    width ``d_model // 2``) of the row ``r``, its last ``d_model // 2`` that of the column
    ``c``. Two patches in the same row share the first half, two in the same column the second.

    Other orders of the same numbers: MAE (``facebookresearch/mae``, ``util/pos_embed.py``)
    puts the column's half first, writes each half in the concatenated layout (all sines,
    then all cosines) and flattens the grid row by row into ``(height * width, d_model)``;
    :func:`posenc.reference.mae_2d_encoding` re-creates it, and ``tests/test_two_d.py`` checks
    that this table, so reordered, equals it.

    Args:
        height: number of rows of the grid, an ``int >= 0``.
        width: number of columns, an ``int >= 0``.
        d_model: width of every vector, an even ``int >= 2``.
        base: the constant of the formula (10000), a finite ``float > 1``.

    Returns:
        ``numpy.ndarray`` of shape ``(height, width, d_model)``, dtype ``float64``, every
        value in ``[-1, 1]``.

    Raises:
        TypeError: an integer argument is not an integer, or ``base`` is not a real number.
        ValueError: ``height`` or ``width`` is negative, ``d_model`` is odd or < 2, or
            ``base`` is not finite and > 1.

    Source: He et al. 2022, "Masked Autoencoders Are Scalable Vision Learners", CVPR, and its
    code (``util/pos_embed.py``); the 1-D encoding of Vaswani et al. 2017, section 3.5.
    """
    height = check_int("height", height)
    width = check_int("width", width)
    d_model = _check_multiple("d_model", d_model, 2)
    half = d_model // 2
    rows = positional_encoding(height, half, base=base)    # (height, half)
    columns = positional_encoding(width, half, base=base)  # (width, half)
    out = np.empty((height, width, d_model))
    out[..., :half] = rows[:, np.newaxis, :]
    out[..., half:] = columns[np.newaxis, :, :]
    return out


def rope_2d(x, *, base: float = 10000.0) -> np.ndarray:
    """Axial 2-D RoPE: the first half of each vector turns with its row, the second with its column.

    For ``x`` of shape ``(..., height, width, head_dim)`` (a query or a key per patch of a
    grid), the vector of the patch in row ``r`` and column ``c`` has the pairs of its first
    ``head_dim // 2`` coordinates rotated as :func:`posenc.rope` rotates position ``r`` (for a
    width of ``head_dim // 2``), and those of its last ``head_dim // 2`` coordinates as it
    rotates position ``c``; pairs are interleaved, ``(2i, 2i + 1)`` in each half. The dot
    product of a rotated query at ``(r1, c1)`` with a rotated key at ``(r2, c2)`` then depends on
    the positions only through the offsets ``r2 - r1`` and ``c2 - c1``.

    Args:
        x: floating-point array of shape ``(..., height, width, head_dim)``, ``head_dim`` a
            multiple of 4 (two halves of pairs); array-likes are converted first.
        base: the constant of the frequencies, a finite ``float > 1``.

    Returns:
        ``numpy.ndarray`` of the same shape and dtype as ``x`` (a new array): angles and the
        rotation in float64, rounded once to the dtype of ``x``.

    Raises:
        TypeError: ``x`` is not of a floating-point dtype, or ``base`` is not a real number.
        ValueError: ``x`` has fewer than 3 dimensions, its last dimension is not a multiple of
            4, or ``base`` is not finite and > 1.

    Source: Heo, Park, Han and Yun 2024, "Rotary Position Embedding for Vision Transformer",
    ECCV (RoPE-Axial); Su et al. 2021, RoFormer, section 3.4.2, for the rotation of a pair.
    """
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(f"x must be an array of a floating-point dtype (float16, float32, float64), "
                        f"got dtype {x.dtype}")
    if x.ndim < 3:
        raise ValueError(f"x must have shape (..., height, width, head_dim) with at least 3 "
                         f"dimensions, got shape {x.shape}")
    height, width, head_dim = x.shape[-3:]
    if head_dim < 4 or head_dim % 4:
        raise ValueError(f"x's last dimension must be a multiple of 4 (a half of pairs for the row, "
                         f"a half for the column), got {head_dim}")
    half = head_dim // 2
    cos_rows, sin_rows = rope_cos_sin(height, half, base=base)        # (height, half // 2)
    cos_columns, sin_columns = rope_cos_sin(width, half, base=base)   # (width, half // 2)
    out = np.empty_like(x)
    out[..., :half] = rotate_pairs(x[..., :half], cos_rows[:, np.newaxis], sin_rows[:, np.newaxis],
                                   "interleaved")
    out[..., half:] = rotate_pairs(x[..., half:], cos_columns[np.newaxis], sin_columns[np.newaxis],
                                   "interleaved")
    return out
