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

Multimodal models that also number frames (Qwen2-VL's M-RoPE, :mod:`posenc.mrope`) share out the
pairs of one 1-D RoPE among time, rows and columns instead of giving each axis half of the vector.

Importing this module imports NumPy only.
"""

from __future__ import annotations

import numpy as np

from ._validate import check_int
from .encoding import positional_encoding
from .relative import rope_cos_sin, rotate_pairs


def _check_choice(name: str, value, choices: tuple) -> str:
    if not isinstance(value, str) or value not in choices:
        raise (TypeError if not isinstance(value, str) else ValueError)(
            f"{name} must be one of {', '.join(map(repr, choices))}, got "
            f"{type(value).__name__} {value!r}")
    return value


def _check_multiple(name: str, value, multiple: int) -> int:
    value = check_int(name, value, minimum=multiple)
    if value % multiple:
        raise ValueError(f"{name} must be a multiple of {multiple}, got {value}")
    return value


#: The orders :func:`positional_encoding_2d` writes its table in.
LAYOUTS_2D = ("grid", "mae")

#: Which coordinate :func:`rope_2d` gives the first half of each vector.
FIRST_HALVES = ("rows", "columns")


def positional_encoding_2d(height: int, width: int, d_model: int, *,
                           base: float = 10000.0, layout: str = "grid") -> np.ndarray:
    """The 2-D sinusoidal encoding of a ``height x width`` grid: row and column, half each.

    Entry ``[r, c]`` is the vector of the patch in row ``r`` and column ``c``: its first
    ``d_model // 2`` coordinates are the 1-D encoding (:func:`posenc.positional_encoding`, of
    width ``d_model // 2``) of the row ``r``, its last ``d_model // 2`` that of the column
    ``c``. Two patches in the same row share the first half, two in the same column the second.

    ``layout="mae"`` gives the same numbers in the order of MAE's code
    (``facebookresearch/mae``, ``util/pos_embed.py``, ``get_2d_sincos_pos_embed``), ready to
    load into a model trained with it: the grid flattened row by row into ``(height * width,
    d_model)`` (row ``r * width + c`` is the patch in row ``r``, column ``c``), the column's
    half first, and each half in the concatenated layout (the sines of its ``d_model // 4``
    frequencies, then their cosines); MAE's CLS token row (zeros) is not included.
    (:func:`posenc.reference.mae_2d_encoding` re-creates MAE's code independently.)

    Args:
        height: number of rows of the grid, an ``int >= 0``.
        width: number of columns, an ``int >= 0``.
        d_model: width of every vector, an even ``int >= 2`` (a multiple of 4 for
            ``layout="mae"``).
        base: the constant of the formula (10000), a finite ``float > 1``.
        layout: keyword only, ``"grid"`` (default) or ``"mae"`` (see above).

    Returns:
        ``numpy.ndarray`` of dtype ``float64``, every value in ``[-1, 1]``, of shape
        ``(height, width, d_model)`` (``"grid"``) or ``(height * width, d_model)``
        (``"mae"``).

    Raises:
        TypeError: an integer argument is not an integer, or ``base`` is not a real number.
        ValueError: ``height`` or ``width`` is negative, ``d_model`` is odd or < 2 (not a
            multiple of 4 for ``"mae"``), ``layout`` is unknown, or ``base`` is not finite
            and > 1.

    Source: He et al. 2022, "Masked Autoencoders Are Scalable Vision Learners", CVPR, and its
    code (``util/pos_embed.py``); the 1-D encoding of Vaswani et al. 2017, section 3.5.
    """
    height = check_int("height", height)
    width = check_int("width", width)
    layout = _check_choice("layout", layout, LAYOUTS_2D)
    d_model = _check_multiple("d_model", d_model, 4 if layout == "mae" else 2)
    half = d_model // 2
    rows = positional_encoding(height, half, base=base)    # (height, half)
    columns = positional_encoding(width, half, base=base)  # (width, half)
    out = np.empty((height, width, d_model))
    out[..., :half] = rows[:, np.newaxis, :]
    out[..., half:] = columns[np.newaxis, :, :]
    if layout == "mae":
        blocks = np.concatenate([np.arange(0, half, 2), np.arange(1, half, 2)])  # sines, cosines
        out = np.concatenate([out[..., half:][..., blocks], out[..., :half][..., blocks]], axis=-1)
        return out.reshape(height * width, d_model)
    return out


def rope_2d(x, *, base: float = 10000.0, first: str = "rows") -> np.ndarray:
    """Axial 2-D RoPE: one half of each vector turns with its row, the other with its column.

    For ``x`` of shape ``(..., height, width, head_dim)`` (a query or a key per patch of a
    grid), the vector of the patch in row ``r`` and column ``c`` has the pairs of its first
    ``head_dim // 2`` coordinates rotated as :func:`posenc.rope` rotates position ``r`` (for a
    width of ``head_dim // 2``), and those of its last ``head_dim // 2`` coordinates as it
    rotates position ``c``; pairs are interleaved, ``(2i, 2i + 1)`` in each half. The dot
    product of a rotated query at ``(r1, c1)`` with a rotated key at ``(r2, c2)`` then depends on
    the positions only through the offsets ``r2 - r1`` and ``c2 - c1``.

    Which half turns with which coordinate is a convention that trained weights fix: RoPE-ViT's
    released code (Heo et al. 2024, ``naver-ai/rope-vit``, ``compute_axial_cis``) turns the
    first half with the column (its ``t_x = t % end_x``) and the second with the row, with
    interleaved pairs and ``theta = 100`` by default: ``rope_2d(x, base=100.0,
    first="columns")`` gives its rotation. The default, ``first="rows"``, is the order of
    :func:`positional_encoding_2d`. The two orders give other scores for the same weights.
    Pairs are interleaved, ``(2i, 2i + 1)``, as in RoFormer's paper and RoPE-ViT; Hugging
    Face ``transformers``' 1-D RoPE pairs ``i`` with ``i + head_dim / 2`` instead ("half").

    Args:
        x: floating-point array of shape ``(..., height, width, head_dim)``, ``head_dim`` a
            multiple of 4 (two halves of pairs); array-likes are converted first.
        base: the constant of the frequencies, a finite ``float > 1`` (10000 in RoFormer,
            100 in RoPE-ViT's axial code).
        first: keyword only, ``"rows"`` (default) or ``"columns"``: the coordinate the first
            half of each vector turns with.

    Returns:
        ``numpy.ndarray`` of the same shape and dtype as ``x`` (a new array): angles and the
        rotation in float64, rounded once to the dtype of ``x``.

    Raises:
        TypeError: ``x`` is not of a floating-point dtype, or ``base`` is not a real number.
        ValueError: ``x`` has fewer than 3 dimensions, its last dimension is not a multiple of
            4, ``first`` is unknown, or ``base`` is not finite and > 1.

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
    first = _check_choice("first", first, FIRST_HALVES)
    half = head_dim // 2
    cos_rows, sin_rows = rope_cos_sin(height, half, base=base)        # (height, half // 2)
    cos_columns, sin_columns = rope_cos_sin(width, half, base=base)   # (width, half // 2)
    row_half, column_half = ((slice(None, half), slice(half, None)) if first == "rows"
                             else (slice(half, None), slice(None, half)))
    out = np.empty_like(x)
    out[..., row_half] = rotate_pairs(x[..., row_half], cos_rows[:, np.newaxis],
                                      sin_rows[:, np.newaxis], "interleaved")
    out[..., column_half] = rotate_pairs(x[..., column_half], cos_columns[np.newaxis],
                                         sin_columns[np.newaxis], "interleaved")
    return out
