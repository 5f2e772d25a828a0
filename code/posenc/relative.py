"""Relative-position schemes in NumPy: rotary embeddings (RoPE) and linear biases (ALiBi).

Both act inside attention instead of being added to the token embeddings:

- :func:`rope` rotates every pair of coordinates of a query or key vector by an angle
  proportional to its position (Su et al. 2021, "RoFormer: Enhanced Transformer with
  Rotary Position Embedding", section 3). Its rotation for position ``pos``, ``R_pos``, is
  ``posenc.shift_matrix(-pos, d)``: the same 2 x 2 blocks as the shift matrix ``M_pos`` of
  the sinusoidal encoding, turning the other way (``R_pos = M_{-pos} = M_pos^T``). Rotations
  compose by adding angles, so the dot product of a query rotated for position ``m`` with a
  key rotated for position ``n`` depends on ``n - m`` only.
- :func:`alibi_slopes` and :func:`alibi_bias` give the fixed per-head penalty
  ``-slope * |i - j|`` that ALiBi adds to the attention scores (Press, Smith and Lewis
  2022, "Train Short, Test Long: Attention with Linear Biases Enables Input Length
  Extrapolation", ICLR, section 3).

This module imports NumPy only.
"""

from __future__ import annotations

import numpy as np

from ._validate import check_base, check_head_dim, check_int, check_real, check_window
from .encoding import angular_frequencies
from .rope_scaling import rope_frequencies

#: The two ways of pairing the ``d`` coordinates of a vector for :func:`rope`.
LAYOUTS = ("interleaved", "half")


def check_layout(layout) -> str:
    """Return ``layout`` after checking it is one of :data:`LAYOUTS`.

    Raises:
        TypeError: ``layout`` is not a string.
        ValueError: ``layout`` is a string other than ``"interleaved"`` or ``"half"``.
    """
    if not isinstance(layout, str):
        raise TypeError(
            f"layout must be the string 'interleaved' or 'half', got {type(layout).__name__} "
            f"{layout!r}"
        )
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be 'interleaved' or 'half', got {layout!r}")
    return layout


def rope_cos_sin(
    seq_len: int, head_dim: int, *, base: float = 10000.0, offset: int = 0,
    scaling: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine and sine of every RoPE angle, one row per position and one column per pair.

    The angle of pair ``i`` at row ``r`` is ``(offset + r) * base ** (-2i / head_dim)``:
    the position times the angular frequency of pair ``i`` in the sinusoidal encoding
    (:func:`posenc.angular_frequencies`). :func:`rope` and ``posenc.pytorch.RotaryEmbedding``
    both rotate with these tables. With ``scaling``, the frequencies are those of
    :func:`posenc.rope_frequencies` (for ``"dynamic"``, at the sequence length ``offset +
    seq_len``) and both tables are multiplied by its attention factor, as Hugging Face
    ``transformers`` multiplies its ``cos`` and ``sin``.

    Args:
        seq_len: number of positions (rows), an ``int >= 0``.
        head_dim: width of the vectors to rotate, an even ``int >= 2``.
        base: the constant of the formula (10000 in RoFormer), a finite ``float > 1``.
        offset: position of the first row, an ``int >= 0``.
        scaling: ``None`` or a dict of :func:`posenc.rope_frequencies`.

    Returns:
        ``(cos, sin)``: two ``numpy.ndarray`` of shape ``(seq_len, head_dim // 2)``, dtype
        ``float64`` (angles in radians, computed in float64).

    Raises:
        TypeError: an integer argument is not an integer, ``base`` is not a real number, or
            ``scaling`` is not valid (see :func:`posenc.rope_frequencies`).
        ValueError: ``seq_len`` or ``offset`` is negative, ``offset + seq_len > 2**53``
            (past it float64 no longer holds every position), ``head_dim`` is odd or < 2,
            ``base`` is not finite and > 1, or ``scaling`` is not valid.

    Source: Su et al. 2021, RoFormer, section 3.2 (``theta_i = 10000^(-2(i-1)/d)`` for
    ``i = 1 .. d/2``: the pairs are counted from 1 there, from 0 here).
    """
    seq_len = check_int("seq_len", seq_len)
    head_dim = check_head_dim("head_dim", head_dim)
    offset = check_int("offset", offset)
    check_window(offset, seq_len)
    if scaling is None:
        omega, attention_factor = angular_frequencies(head_dim, base=base)[0::2], 1.0  # per pair
    else:
        omega, attention_factor = rope_frequencies(head_dim, base=base, scaling=scaling,
                                                   seq_len=offset + seq_len)
    angles = (offset + np.arange(seq_len, dtype=np.float64))[:, np.newaxis] * omega
    if attention_factor == 1.0:
        return np.cos(angles), np.sin(angles)
    return attention_factor * np.cos(angles), attention_factor * np.sin(angles)


def rope(x, *, base: float = 10000.0, offset: int = 0, layout: str = "interleaved",
         scaling: dict | None = None) -> np.ndarray:
    """Rotary position embedding (RoPE): rotate each pair of coordinates by its position's angle.

    Row ``r`` of ``x`` (the vector at position ``pos = offset + r``) has its pair ``i``
    rotated by the angle ``pos * w_i`` with ``w_i = base ** (-2i / d)``::

        (a, b)  ->  (a cos(pos w_i) - b sin(pos w_i),  a sin(pos w_i) + b cos(pos w_i))

    Which coordinates form pair ``i`` depends on ``layout``:

    - ``"interleaved"``: ``(x[..., 2i], x[..., 2i + 1])``, as written in RoFormer
      (Su et al. 2021, section 3.4.2) and as in the interleaved layout of the sinusoidal
      encoding.
    - ``"half"``: ``(x[..., i], x[..., i + d // 2])``, the convention of GPT-NeoX and of
      Hugging Face ``transformers`` (its ``rotate_half`` function).

    The two layouts give the same attention scores up to one fixed permutation of the
    ``d`` coordinates, but they are not interchangeable for trained weights.

    With ``scaling`` (a model stretched past its trained length), ``w_i`` are the scaled
    frequencies of :func:`posenc.rope_frequencies` and the result is multiplied by its
    attention factor (YaRN's; 1 otherwise), as Hugging Face ``transformers`` does; for
    ``"dynamic"``, the sequence length is ``offset + seq_len``.

    As a matrix acting on column vectors, the rotation of position ``pos`` is
    ``R_pos = posenc.shift_matrix(-pos, d)`` (interleaved layout); on a row vector ``x``,
    ``rope`` computes ``x @ R_pos.T``. Applied to queries and keys, the dot product
    ``rope(q)[m] @ rope(u)[n]`` is ``q[m] @ R_(n - m) @ u[n]``: it depends on the positions
    only through ``n - m`` (rotations compose by adding angles).

    Args:
        x: floating-point array of shape ``(..., seq_len, d)``: any number of leading
            (batch, head) dimensions, positions along the second-to-last axis, an even
            width ``d >= 2`` along the last. Any NumPy floating dtype (float16, float32,
            float64, longdouble); array-likes such as lists are converted first.
        base: the constant of the frequencies (10000 in RoFormer), a finite ``float > 1``.
        offset: position of the first row, an ``int >= 0`` (e.g. the number of tokens
            already in a KV cache).
        layout: ``"interleaved"`` (default) or ``"half"``, see above.
        scaling: ``None`` (default) or a dict of :func:`posenc.rope_frequencies` (Hugging
            Face's ``rope_parameters`` without ``rope_theta``), e.g. ``{"rope_type": "yarn",
            "factor": 4.0, "original_max_position_embeddings": 4096}``.

    Returns:
        ``numpy.ndarray`` of the same shape and dtype as ``x`` (a new array). Angles are
        computed in float64 and the rotation in float64 (or in the wider dtype of ``x``),
        then rounded once to the dtype of ``x``. In float64, every entry is within
        ``1e-12 + 1e-15 * pos`` of the exact rotation for entries of ``x`` of order 1
        (a float64 angle ``pos * w`` is off by up to about ``2e-16 * pos`` radians).

    Raises:
        TypeError: ``x`` is not of a floating-point dtype (integers, booleans, complex
            numbers), ``offset`` is not an integer, ``base`` is not a real number, or
            ``layout`` is not a string.
        ValueError: ``x`` has fewer than 2 dimensions, its last dimension is odd or 0,
            ``offset`` is negative, ``base`` is not finite and > 1, ``layout`` is
            neither ``"interleaved"`` nor ``"half"``, or ``scaling`` is not valid (the
            errors of :func:`posenc.rope_frequencies`, ``TypeError`` included).

    Source: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
    Embedding", sections 3.2 and 3.4.2; the half-split pairing from Black et al. 2022,
    "GPT-NeoX-20B: An Open-Source Autoregressive Language Model"; the scalings: see
    :func:`posenc.rope_frequencies`.
    """
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(
            f"x must be an array of a floating-point dtype (float16, float32, float64), "
            f"got dtype {x.dtype}"
        )
    if x.ndim < 2:
        raise ValueError(
            f"x must have shape (..., seq_len, d) with at least 2 dimensions, got shape {x.shape}"
        )
    layout = check_layout(layout)
    seq_len, d = x.shape[-2:]
    if d < 2 or d % 2:
        raise ValueError(
            f"x's last dimension must be even and >= 2 (RoPE rotates pairs of coordinates), "
            f"got {d}"
        )
    cos, sin = rope_cos_sin(seq_len, d, base=base, offset=offset, scaling=scaling)
    return rotate_pairs(x, cos, sin, layout)


def rotate_pairs(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str) -> np.ndarray:
    """Turn every pair of ``x``'s last axis by the angle whose cosine and sine are given.

    The arithmetic of :func:`rope`, shared with :func:`posenc.two_d.rope_2d`: ``x`` a
    floating-point array of shape ``(..., d)`` with ``d`` even, ``cos`` and ``sin`` arrays of
    angles that broadcast against ``(..., d // 2)``, ``layout`` ``"interleaved"`` or ``"half"``
    (see :func:`rope`). Computed in float64 (or the wider dtype of ``x``) and rounded once to
    the dtype of ``x``; returns a new array of ``x``'s shape and dtype.
    """
    d = x.shape[-1]
    work = x.astype(np.result_type(x.dtype, np.float64))
    if layout == "interleaved":
        first, second = work[..., 0::2], work[..., 1::2]
    else:
        first, second = work[..., : d // 2], work[..., d // 2 :]
    rotated_first = first * cos - second * sin
    rotated_second = first * sin + second * cos
    out = np.empty_like(x)
    if layout == "interleaved":
        out[..., 0::2], out[..., 1::2] = rotated_first, rotated_second
    else:
        out[..., : d // 2], out[..., d // 2 :] = rotated_first, rotated_second
    return out


def alibi_slopes(n_heads: int, *, max_bias: float = 8.0) -> np.ndarray:
    """The fixed slope of every attention head in ALiBi (Press et al. 2022).

    With ``B = max_bias`` (8 in the paper): for a number of heads ``n`` that is a power of
    two, the slopes are the geometric sequence ``2 ** (-B h / n)`` for ``h = 1, ..., n``
    (for 8 heads and ``B = 8``: 1/2, 1/4, ..., 1/256). For any other ``n``, with ``p`` the
    largest power of two below ``n``, the first ``p`` slopes are those of ``p`` heads and
    the remaining ``n - p`` are ``2 ** (-B (h - 1/2) / p)`` for ``h = 1, ..., n - p``:
    geometric means of consecutive slopes of ``p`` heads (every other slope of ``2p``
    heads).

    Where the sources agree and differ:

    - The paper fixes ``B = 8``: it gives the slopes of 8 heads, interpolates them by
      geometric means to get those of 16, and says that for ``n`` heads the slopes are the
      geometric sequence that starts at ``2 ** (-8 / n)`` with that value as its ratio. Its
      models all have a power of two of heads; read literally for another count (12 heads:
      ``2 ** (-8 h / 12)``) that sentence gives other slopes than the rule above.
    - The authors' code (repository ``ofirpress/attention_with_linear_biases``, function
      ``get_slopes`` in ``fairseq/models/transformer.py``) also fixes 8 (as ``log2(8) = 3``)
      and fills other counts with the interpolation above; its comment says the paper only
      trained powers of two. With the default ``B = 8`` this function gives its slopes.
    - keras-hub's ``AlibiBias`` (0.32.0) is the authors' code with 8 replaced by its argument
      ``alibi_bias_max`` (default 8): this function with ``max_bias=alibi_bias_max`` gives
      its slopes for every count (tested against a vendored copy). Its docstring describes
      the slopes as the paper's geometric sequence ``2 ** (-alibi_bias_max h / n)``, which
      holds for powers of two only; its code interpolates, as here, for other counts.

    Args:
        n_heads: number of attention heads, an ``int >= 1``.
        max_bias: keyword only, the exponent ``B`` above, a finite real number ``> 0``
            (default 8.0, the paper's). Dimensionless (a power of two): the flattest head's
            slope is ``2 ** -max_bias`` and every slope lies in ``[2 ** -max_bias, 1)``
            (before rounding to float64); a larger ``max_bias`` spreads the slopes over
            more powers of two.

    Returns:
        ``numpy.ndarray`` of shape ``(n_heads,)``, dtype ``float64``: slope of head ``h``
        (0-based) at index ``h``, in units of score per position of distance, computed
        in float64 (a slope below ``2 ** -1074``, for ``max_bias > 1074``, is 0).

    Raises:
        TypeError: ``n_heads`` is not an integer, or ``max_bias`` is not a real number.
        ValueError: ``n_heads < 1``, or ``max_bias`` is not finite and ``> 0``.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long", ICLR, section 3;
    ``max_bias`` as keras-hub's ``alibi_bias_max``.
    """
    n_heads = check_int("n_heads", n_heads, minimum=1)
    max_bias = check_real("max_bias", max_bias, above=0.0)
    power = 1 << (n_heads.bit_length() - 1)  # largest power of two <= n_heads
    h = np.arange(1, power + 1, dtype=np.float64)
    slopes = np.exp2(-max_bias * h / power)
    midpoints = np.exp2(-max_bias * (h[: n_heads - power] - 0.5) / power)
    return np.concatenate([slopes, midpoints])


def alibi_bias(seq_len: int, n_heads: int) -> np.ndarray:
    """ALiBi's additive attention bias: ``-slope[h] * |i - j|`` for query ``i``, key ``j``.

    Added to the attention scores ``q_i . k_j / sqrt(d)`` before the softmax, it lowers
    the score of distant keys linearly with distance, with a steeper penalty in the
    heads with larger slopes. A causal (decoder) model also masks ``j > i``; on the
    entries it keeps, ``|i - j| = i - j`` is the paper's ``-m * (i - j)``.

    Args:
        seq_len: number of positions, an ``int >= 0``.
        n_heads: number of attention heads, an ``int >= 1``.

    Returns:
        ``numpy.ndarray`` of shape ``(n_heads, seq_len, seq_len)``, dtype ``float64``:
        entry ``[h, i, j]`` is ``-alibi_slopes(n_heads)[h] * abs(i - j)``; zero on the
        diagonal, symmetric in ``i`` and ``j``, never positive.

    Raises:
        TypeError: ``seq_len`` or ``n_heads`` is not an integer.
        ValueError: ``seq_len < 0``, ``seq_len > 2**53`` or ``n_heads < 1``.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long", ICLR, section 3
    (figure 3).
    """
    seq_len = check_int("seq_len", seq_len)
    check_window(0, seq_len)
    slopes = alibi_slopes(n_heads)
    positions = np.arange(seq_len)
    minus_distance = -np.abs(positions[:, np.newaxis] - positions)  # integers: no -0.0
    return slopes[:, np.newaxis, np.newaxis] * minus_distance
