"""The sinusoidal positional encoding in NumPy: a naive loop version and a vectorized one.

Formula (Vaswani et al. 2017, "Attention Is All You Need", section 3.5), for a
position ``pos`` and a pair index ``i`` with ``0 <= 2i < d_model``::

    PE[pos, 2i]     = sin(pos / base ** (2i / d_model))
    PE[pos, 2i + 1] = cos(pos / base ** (2i / d_model))

with ``base = 10000`` in the paper. Column ``j`` belongs to pair ``i = j // 2``; even
columns hold sines and odd columns cosines (the interleaved layout of the paper). For an
odd ``d_model`` the last column is a sine whose cosine partner does not exist.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import (
    MAX_POSITION,
    check_base,
    check_float_dtype,
    check_int,
    check_size,
    check_window,
)


def angular_frequencies(d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """Angular frequency of every column of the encoding, in radians per position.

    Args:
        d_model: width of the encoding, an ``int >= 1``.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``
            (so every frequency is finite, between ``1 / base`` and 1).

    Returns:
        ``numpy.ndarray`` of shape ``(d_model,)``, dtype ``float64``: entry ``j`` is
        ``base ** (-2 * (j // 2) / d_model)``. Columns ``2i`` and ``2i + 1`` share a
        frequency. The wavelength of column ``j``, in positions, is ``2 * pi`` divided
        by this value; it grows geometrically from ``2 * pi`` towards ``2 * pi * base``.

    Raises:
        TypeError: ``d_model`` is not an integer or ``base`` is not a real number.
        ValueError: ``d_model < 1`` or too large to allocate, or ``base`` is not finite
            and > 1.

    Source: Vaswani et al. 2017, section 3.5.
    """
    d_model = check_int("d_model", d_model, minimum=1)
    check_size("d_model", 1, d_model)
    base = check_base(base)
    pair_index = np.arange(d_model) // 2
    return np.power(base, -2.0 * pair_index / d_model)


#: Rows per block in :func:`positional_encoding` (the fine table has this many rows).
BLOCK_ROWS = 64


def positional_encoding(
    seq_len: int,
    d_model: int,
    *,
    base: float = 10000.0,
    offset: int = 0,
    dtype=np.float64,
) -> np.ndarray:
    """Sinusoidal positional encoding matrix, vectorized with NumPy.

    Args:
        seq_len: number of positions (rows), an ``int >= 0``.
        d_model: width of the encoding (columns), an ``int >= 1``; odd widths are allowed.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        offset: position of the first row, an ``int >= 0``: row ``r`` encodes position
            ``offset + r``. Useful when decoding one token at a time. ``offset + seq_len``
            must not exceed ``2**53``: past it float64 cannot hold every position.
        dtype: a NumPy floating-point dtype for the result. Angles are always computed
            in ``float64`` and every value is rounded to ``dtype`` once, at the end.

    Returns:
        ``numpy.ndarray`` of shape ``(seq_len, d_model)`` and the requested dtype, with
        ``PE[r, j] = sin((offset + r) * w_j)`` for even ``j`` and ``cos((offset + r) * w_j)``
        for odd ``j``, where ``w_j = base ** (-2 * (j // 2) / d_model)``. Every value
        lies in ``[-1, 1]``. ``seq_len == 0`` gives an empty ``(0, d_model)`` array.

    Accuracy, as a function of the position ``pos``: each angle ``pos * w`` is a float64
    product, off by up to a relative ``2**-53``, and the frequency ``w`` is rounded
    likewise, so an angle (and the value computed from it) can be off by about
    ``pos * 2**-53`` to ``pos * 2**-52``: about 1e-13 at position 10**3, 1e-10 at 10**6,
    1e-7 at 10**9, and of order 1 at 2**52, where the high-frequency columns no longer
    carry the position. A float32 result adds its own rounding (up to 3e-8), which
    dominates up to positions of about 10**8.

    Raises:
        TypeError: an integer argument is not an integer, ``base`` is not a real
            number, or ``dtype`` is not a floating-point dtype.
        ValueError: ``seq_len`` or ``offset`` is negative, ``offset + seq_len > 2**53``,
            ``d_model < 1``, the table is too large to allocate, or ``base`` is not
            finite and > 1.

    Method: the rows are filled in blocks of ``BLOCK_ROWS`` positions. Inside a block
    starting at position ``p``, every position is ``p + r`` with ``0 <= r < BLOCK_ROWS``,
    and the angle-addition identities ``sin(a + b) = sin a cos b + cos a sin b`` and
    ``cos(a + b) = cos a cos b - sin a sin b`` give the whole block from ``sin``/``cos``
    of ``p * w`` (one row) and of ``r * w`` (a small table computed once). That replaces
    one ``sin`` or ``cos`` per entry by two multiplications and an addition: several
    times faster than calling ``np.sin``/``np.cos`` on the full angle matrix for tables of
    thousands of rows (``python -m posenc.bench`` measures it); no faster for 64 rows or
    fewer, where the small table is as large as the result.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    seq_len = check_int("seq_len", seq_len)
    offset = check_int("offset", offset)
    check_window(offset, seq_len)
    dtype = check_float_dtype(dtype)
    d_model = check_int("d_model", d_model, minimum=1)
    check_size("d_model", 1, d_model)
    check_size("seq_len", seq_len, d_model)
    frequencies = angular_frequencies(d_model, base=base)[0::2]  # one per (sin, cos) pair
    n_cos = d_model // 2  # an odd width has one sine more than cosines
    fine = np.arange(min(BLOCK_ROWS, seq_len))[:, np.newaxis] * frequencies  # r * w
    sin_fine, cos_fine = np.sin(fine), np.cos(fine)
    pe = np.empty((seq_len, d_model), dtype=dtype)
    for start in range(0, seq_len, BLOCK_ROWS):
        rows = min(BLOCK_ROWS, seq_len - start)
        coarse = (offset + start) * frequencies  # p * w, the block's first position
        sin_p, cos_p = np.sin(coarse), np.cos(coarse)
        sines = sin_p * cos_fine[:rows] + cos_p * sin_fine[:rows]
        cosines = (cos_p[:n_cos] * cos_fine[:rows, :n_cos]
                   - sin_p[:n_cos] * sin_fine[:rows, :n_cos])
        # Rounding can push a sum a hair past 1 in magnitude; the formula's values cannot.
        pe[start : start + rows, 0::2] = np.clip(sines, -1.0, 1.0, out=sines)
        pe[start : start + rows, 1::2] = np.clip(cosines, -1.0, 1.0, out=cosines)
    return pe


def positional_encoding_loop(
    seq_len: int, d_model: int, *, base: float = 10000.0
) -> np.ndarray:
    """Sinusoidal positional encoding computed one entry at a time with plain Python loops.

    The teaching version: it follows the formula literally and is slow (one Python-level
    step per entry). It returns the same values as :func:`positional_encoding`.

    Args:
        seq_len: number of positions (rows), an ``int >= 0``.
        d_model: width of the encoding (columns), an ``int >= 1``; odd widths are allowed.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.

    Returns:
        ``numpy.ndarray`` of shape ``(seq_len, d_model)``, dtype ``float64``.

    Raises:
        TypeError: ``seq_len`` or ``d_model`` is not an integer, or ``base`` is not a
            real number.
        ValueError: ``seq_len < 0``, ``d_model < 1``, the table is too large to allocate,
            or ``base`` is not finite and > 1.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    seq_len = check_int("seq_len", seq_len)
    d_model = check_int("d_model", d_model, minimum=1)
    check_size("d_model", 1, d_model)
    check_size("seq_len", seq_len, d_model)
    base = check_base(base)
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for j in range(d_model):
            i = j // 2  # columns 2i and 2i + 1 share one frequency
            angle = pos / base ** (2 * i / d_model)
            if j % 2 == 0:
                pe[pos, j] = math.sin(angle)
            else:
                pe[pos, j] = math.cos(angle)
    return pe


def shift_matrix(k: int, d_model: int, *, base: float = 10000.0) -> np.ndarray:
    """The linear map that moves every encoding vector ``k`` positions along.

    For every position ``pos`` (with ``pos + k >= 0``)::

        positional_encoding(...)[pos + k] == shift_matrix(k, d_model) @ positional_encoding(...)[pos]

    up to rounding. The matrix is block diagonal: for pair ``i`` with angular frequency
    ``w_i`` its 2 x 2 block is the rotation ``[[cos(k w_i), sin(k w_i)], [-sin(k w_i),
    cos(k w_i)]]`` acting on ``(sin, cos)``, from the angle-addition identities. It does
    not depend on ``pos``: this is the property Vaswani et al. (2017, section 3.5) give
    for choosing sinusoids ("PE_{pos+k} can be represented as a linear function of PE_pos").

    Args:
        k: the shift in positions, an ``int`` with ``|k| <= 2**53`` (negative shifts move
            backwards).
        d_model: width of the encoding, an even ``int >= 2``.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.

    Returns:
        ``numpy.ndarray`` of shape ``(d_model, d_model)``, dtype ``float64``, orthogonal.
        Its rotation angles ``k * w_i`` are off by about ``|k| * 2**-52`` radians, as the
        angles of :func:`positional_encoding` are at position ``|k|``.

    Raises:
        TypeError: ``k`` or ``d_model`` is not an integer, or ``base`` is not a real number.
        ValueError: ``|k| > 2**53`` (float64 cannot hold every such shift), ``d_model``
            is not even and >= 2 (with an odd width the last column is a sine with no
            cosine partner, and no fixed linear map gives ``sin((pos + k) w)`` from the
            other columns for every ``pos``), the matrix is too large to allocate, or
            ``base`` is not finite and > 1.

    Source: Vaswani et al. 2017, section 3.5; the construction follows from
    ``sin(a + b) = sin a cos b + cos a sin b`` and ``cos(a + b) = cos a cos b - sin a sin b``.
    """
    k = check_int("k", k, minimum=None)
    if abs(k) > MAX_POSITION:
        raise ValueError(
            f"k must satisfy |k| <= 2**53 = {MAX_POSITION} (float64 holds every shift up "
            f"to it exactly), got k={k}"
        )
    d_model = check_int("d_model", d_model, minimum=1)
    if d_model % 2:
        raise ValueError(
            f"shift_matrix needs an even d_model (pairs of sine and cosine), got {d_model}"
        )
    check_size("d_model", d_model, d_model)
    angles = k * angular_frequencies(d_model, base=base)[0::2]
    cos, sin = np.cos(angles), np.sin(angles)
    matrix = np.zeros((d_model, d_model))
    matrix[0::2, 0::2] = np.diag(cos)
    matrix[0::2, 1::2] = np.diag(sin)
    matrix[1::2, 0::2] = np.diag(-sin)
    matrix[1::2, 1::2] = np.diag(cos)
    return matrix


def encoding_at(positions: np.ndarray, d_model: int, base: float) -> np.ndarray:
    """The encoding of arbitrary integer positions, one row per entry, in float64.

    For the framework layers' rows past their cached table (and explicit positions):
    ``PE[pos, j]`` straight from the formula, one ``sin`` or ``cos`` per entry, with the
    accuracy stated in :func:`positional_encoding`.

    Args:
        positions: integer ``numpy.ndarray`` of any shape, entries in ``[0, 2**53]``
            (already checked by the caller).
        d_model: width of the encoding, an ``int >= 1``.
        base: the constant of the formula, a finite ``float > 1``.

    Returns:
        ``numpy.ndarray`` of shape ``positions.shape + (d_model,)``, dtype ``float64``.
    """
    return sines_and_cosines_at(positions, angular_frequencies(d_model, base=base))


def sines_and_cosines_at(positions: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """``sin(pos * w_j)`` in the even columns ``j``, ``cos(pos * w_j)`` in the odd ones, in float64.

    :func:`encoding_at` with any angular frequencies ``w`` (e.g. the scaled ones of
    :func:`posenc.rope_frequencies`, each repeated for the two columns of its pair).

    Args:
        positions: integer ``numpy.ndarray`` of any shape, entries in ``[0, 2**53]``.
        frequencies: float64 ``numpy.ndarray`` of shape ``(width,)``, radians per position.

    Returns:
        ``numpy.ndarray`` of shape ``positions.shape + (width,)``, dtype ``float64``.
    """
    angles = positions.astype(np.float64)[..., np.newaxis] * frequencies
    values = np.empty_like(angles)
    values[..., 0::2] = np.sin(angles[..., 0::2])
    values[..., 1::2] = np.cos(angles[..., 1::2])
    return values


def float32_round_to_odd(values: np.ndarray) -> np.ndarray:
    """Round float64 values to float32 "to odd", ready for a second rounding to a narrower type.

    Converting float64 to float16 or bfloat16 through float32 rounds twice and can land
    one step away from the nearest value. Rounding to odd (truncate towards zero, then
    set the last bit when the result is inexact) keeps the information the second
    rounding needs, so ``float32_round_to_odd(x)`` followed by an ordinary round-to-nearest
    conversion to any type with at most 22 significand bits (float16: 11, bfloat16: 8)
    gives the float nearest to ``x``. (Boldo and Melquiond, "Emulation of FMA and
    correctly rounded sums: proved algorithms using rounding to odd", IEEE Transactions
    on Computers 57(4), 2008.)

    Args:
        values: ``numpy.ndarray`` of dtype ``float64``, any shape.

    Returns:
        ``numpy.ndarray`` of dtype ``float32`` and the same shape.
    """
    nearest = values.astype(np.float32)
    away = np.abs(nearest.astype(np.float64)) > np.abs(values)  # rounded away from zero
    truncated = np.where(away, np.nextafter(nearest, np.float32(0)), nearest)
    inexact = truncated.astype(np.float64) != values
    bits = truncated.view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32)
