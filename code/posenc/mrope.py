"""M-RoPE: the multimodal rotary embedding of Qwen2-VL, Qwen2.5-VL and Qwen3-VL.

A text token has one position; an image patch has a row and a column, and a video patch also a
time. M-RoPE (Wang et al. 2024, "Qwen2-VL", section 2.1) gives every token three position ids,
``(t, h, w)`` (temporal, height, width), and splits the ``head_dim / 2`` rotary pairs of a query
or key into three sections of sizes ``mrope_section = [n_t, n_h, n_w]``: pair ``i`` turns by
``p_a * w_i`` where ``a`` is the axis its section follows and ``w_i`` is the ordinary 1-D
frequency of pair ``i`` (:func:`posenc.rope_frequencies`). Two layouts of the sections:

- ``interleaved=False`` (Qwen2-VL, Qwen2.5-VL): consecutive blocks, the ``n_t`` fastest pairs
  for time, the next ``n_h`` for the row, the ``n_w`` slowest for the column.
- ``interleaved=True`` (Qwen3-VL, "interleaved MRoPE", Bai et al. 2025): the axes take turns,
  pair ``i`` follows the row when ``i % 3 == 1`` and ``i < 3 n_h``, the column when
  ``i % 3 == 2`` and ``i < 3 n_w``, time otherwise, so that every axis has fast and slow pairs.

A text token gets the same number on all three axes, and M-RoPE is then the 1-D RoPE of
:func:`posenc.rope`. Axial 2-D RoPE (:func:`posenc.rope_2d`) is the same idea for rows and
columns with halves of the vector instead of sections of the pairs, each half with its own
full range of frequencies.

- :func:`mrope_pair_axes`: which axis (0 time, 1 height, 2 width) every pair follows.
- :func:`mrope_angles`: the angle of every pair for position ids of shape ``(3, ...)``.
- :func:`mrope_cos_sin`: the cosines and sines in the form of ``transformers``' rotary
  embedding of these models (the ``(cos, sin)`` its attention layers take).
- :func:`mrope`: a query or key rotated by M-RoPE.

This module imports NumPy only.
"""

from __future__ import annotations

import numpy as np

from ._validate import MAX_POSITION, check_int
from .relative import check_layout, rotate_pairs
from .rope_scaling import rope_frequencies

#: The three axes of M-RoPE's position ids, in their order (axis 0, 1, 2).
MROPE_AXES = ("temporal", "height", "width")


def check_mrope_section(mrope_section, *, interleaved: bool = False) -> tuple[int, int, int]:
    """Return ``mrope_section`` as a tuple of three ``int >= 0`` with a positive sum.

    Raises:
        TypeError: ``mrope_section`` is not a list or tuple of integers, or ``interleaved`` is
            not a bool.
        ValueError: it does not have three entries, an entry is negative, the sum is 0, or
            (``interleaved=True``) the row's or column's pairs do not fit: ``3 n_h - 2`` and
            ``3 n_w - 1`` must be below ``n_t + n_h + n_w`` (the interleaved rule would
            otherwise give an axis fewer pairs than its section says).
    """
    if not isinstance(interleaved, (bool, np.bool_)):
        raise TypeError(f"interleaved must be a bool, got {type(interleaved).__name__} "
                        f"{interleaved!r}")
    if not isinstance(mrope_section, (list, tuple)):
        raise TypeError(f"mrope_section must be a list of three integers [temporal, height, "
                        f"width] (pairs per axis), got {type(mrope_section).__name__} "
                        f"{mrope_section!r}")
    if len(mrope_section) != 3:
        raise ValueError(f"mrope_section must have three entries [temporal, height, width], "
                         f"got {len(mrope_section)}: {list(mrope_section)!r}")
    section = tuple(check_int(f"mrope_section[{axis}]", value)
                    for axis, value in enumerate(mrope_section))
    pairs = sum(section)
    if pairs == 0:
        raise ValueError(f"mrope_section must have a positive sum (the number of rotary "
                         f"pairs), got {list(section)!r}")
    if interleaved and (3 * section[1] - 2 >= pairs or 3 * section[2] - 1 >= pairs):
        raise ValueError(f"interleaved mrope_section {list(section)!r}: the height's pairs "
                         f"(1, 4, ..., {3 * section[1] - 2}) and the width's (2, 5, ..., "
                         f"{3 * section[2] - 1}) must be below the {pairs} pairs")
    return section


def mrope_pair_axes(mrope_section, *, interleaved: bool = False) -> np.ndarray:
    """The axis every rotary pair follows: 0 (temporal), 1 (height) or 2 (width).

    Args:
        mrope_section: ``[n_t, n_h, n_w]``, a list or tuple of three ``int >= 0`` (pairs per
            axis; ``transformers``' ``rope_parameters["mrope_section"]``); their sum is the
            number of pairs, ``head_dim / 2``.
        interleaved: keyword only, ``False`` for consecutive sections (Qwen2-VL,
            Qwen2.5-VL), ``True`` for Qwen3-VL's interleaving (see the module docstring).

    Returns:
        ``numpy.ndarray`` of dtype ``int64`` and shape ``(n_t + n_h + n_w,)``: entry ``i`` is the
        axis of pair ``i`` (an index into :data:`MROPE_AXES`); each axis ``a`` appears
        ``mrope_section[a]`` times.

    Raises:
        TypeError, ValueError: see :func:`check_mrope_section`.

    Source: Wang et al. 2024, "Qwen2-VL", section 2.1 (consecutive sections); Bai et al.
    2025, "Qwen3-VL Technical Report" (interleaving); the rules as ``transformers`` 5.24
    applies them (``Qwen2VLRotaryEmbedding`` and ``Qwen3VLTextRotaryEmbedding``,
    ``recomposition_frequencies``).
    """
    section = check_mrope_section(mrope_section, interleaved=interleaved)
    if not interleaved:
        return np.repeat(np.arange(3, dtype=np.int64), section)
    pair = np.arange(sum(section))
    axes = np.zeros(pair.shape, dtype=np.int64)
    axes[(pair % 3 == 1) & (pair < 3 * section[1])] = 1
    axes[(pair % 3 == 2) & (pair < 3 * section[2])] = 2
    return axes


def _check_position_ids(position_ids) -> np.ndarray:
    """``position_ids`` as an int64 array of shape ``(3, ...)`` with every ``|id| < 2**53``."""
    ids = np.asarray(position_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"position_ids must be an array of integers of shape (3, batch, "
                        f"seq_len), got dtype {ids.dtype}")
    if ids.ndim < 1 or ids.shape[0] != 3:
        raise ValueError(f"position_ids must have shape (3, ...), e.g. (3, batch, seq_len): "
                         f"the temporal, height and width ids; got shape {ids.shape}")
    if ids.size and max(abs(int(ids.min())), abs(int(ids.max()))) >= MAX_POSITION:
        raise ValueError(f"position ids must be within (-2**53, 2**53) (float64 holds them "
                         f"exactly), got a range of [{int(ids.min())}, {int(ids.max())}]")
    return ids.astype(np.int64)


def _angles(position_ids, mrope_section, base, scaling, interleaved):
    """The float64 angles ``position_ids.shape[1:] + (n_pairs,)`` and the attention factor."""
    section = check_mrope_section(mrope_section, interleaved=interleaved)
    axes = mrope_pair_axes(section, interleaved=interleaved)
    ids = _check_position_ids(position_ids)
    longest = max(int(ids.max()) + 1, 0) if ids.size else 0  # "dynamic": transformers' max + 1
    frequencies, attention_factor = rope_frequencies(
        2 * sum(section), base=base, scaling=scaling, seq_len=longest if scaling else None)
    chosen = np.moveaxis(ids[axes], 0, -1)  # (..., n_pairs): the id each pair follows
    return chosen.astype(np.float64) * frequencies, attention_factor


def mrope_angles(position_ids, mrope_section, *, base: float = 10000.0,
                 scaling: dict | None = None, interleaved: bool = False) -> np.ndarray:
    """The M-RoPE angle of every pair for position ids ``(temporal, height, width)``.

    Pair ``i`` of the token with ids ``(t, h, w)`` turns by ``p_a * w_i`` radians, ``a`` its
    axis (:func:`mrope_pair_axes`), ``p_a`` the token's id on that axis and ``w_i`` the
    frequency of pair ``i`` for ``head_dim = 2 * sum(mrope_section)``
    (:func:`posenc.rope_frequencies`, scaled if ``scaling`` is given). For a text token
    (``t = h = w = pos``) the angles are those of 1-D RoPE at ``pos``.

    Args:
        position_ids: integer array of shape ``(3, ...)``, e.g. ``(3, batch, seq_len)`` as
            ``transformers``' ``get_rope_index`` returns: the temporal, height and width id of
            every token (array-likes are converted). Entries within ``(-2**53, 2**53)``
            (negative ids are allowed: ``transformers`` gives them to left padding).
        mrope_section: ``[n_t, n_h, n_w]``, see :func:`mrope_pair_axes`.
        base: keyword only, the constant of the frequencies (``rope_theta``: 1000000 in
            Qwen2-VL and Qwen2.5-VL, 5000000 in Qwen3-VL), a finite ``float > 1``.
        scaling: keyword only, ``None`` or a scaling dict of :func:`posenc.rope_frequencies`
            (for ``"dynamic"``, the sequence length is the largest id plus one, as
            ``transformers`` takes ``position_ids.max() + 1``).
        interleaved: keyword only, ``False`` (Qwen2-VL, Qwen2.5-VL) or ``True`` (Qwen3-VL).

    Returns:
        ``numpy.ndarray`` of dtype ``float64`` and shape ``position_ids.shape[1:] +
        (n_pairs,)`` with ``n_pairs = sum(mrope_section)``: angles in radians (without the
        attention factor of YaRN, which :func:`mrope_cos_sin` applies).

    Raises:
        TypeError: ``position_ids`` is not of an integer dtype, or a bad ``mrope_section``,
            ``base``, ``scaling`` or ``interleaved`` (see :func:`check_mrope_section` and
            :func:`posenc.rope_frequencies`).
        ValueError: ``position_ids`` does not have 3 rows on its first axis, an id is out of
            range, or a bad ``mrope_section``, ``base`` or ``scaling``.

    Source: Wang et al. 2024, "Qwen2-VL: Enhancing Vision-Language Model's Perception of the
    World at Any Resolution", section 2.1 (M-RoPE); Bai et al. 2025, "Qwen3-VL Technical
    Report" (interleaved MRoPE); Su et al. 2021, RoFormer (the frequencies).
    """
    return _angles(position_ids, mrope_section, base, scaling, interleaved)[0]


def mrope_cos_sin(position_ids, mrope_section, *, base: float = 10000.0,
                  scaling: dict | None = None, interleaved: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """M-RoPE's cosines and sines as ``transformers``' rotary embedding of Qwen2-VL returns them.

    The cosine and sine of every angle of :func:`mrope_angles`, each written twice
    (``[angles, angles]`` along the last axis, the "half" layout: coordinate ``j`` pairs with
    ``j + head_dim / 2``) and multiplied by the attention factor of ``scaling`` (YaRN's; 1
    otherwise): the ``(cos, sin)`` that ``Qwen2VLRotaryEmbedding``,
    ``Qwen2_5_VLRotaryEmbedding`` and ``Qwen3VLTextRotaryEmbedding`` (``transformers`` 5.24)
    compute in float32 and the attention layers' ``apply_rotary_pos_emb`` take.

    Args:
        position_ids, mrope_section, base, scaling, interleaved: as :func:`mrope_angles`.

    Returns:
        ``(cos, sin)``: two ``numpy.ndarray`` of dtype ``float64`` and shape
        ``position_ids.shape[1:] + (head_dim,)``, ``head_dim = 2 * sum(mrope_section)``,
        e.g. ``(batch, seq_len, head_dim)``.

    Raises:
        TypeError, ValueError: as :func:`mrope_angles`.

    Source: see :func:`mrope_angles`; the layout: ``transformers.models.qwen2_vl.
    modeling_qwen2_vl`` (5.24).
    """
    angles, attention_factor = _angles(position_ids, mrope_section, base, scaling, interleaved)
    cos, sin = np.cos(angles), np.sin(angles)
    if attention_factor != 1.0:
        cos, sin = attention_factor * cos, attention_factor * sin
    return np.concatenate([cos, cos], axis=-1), np.concatenate([sin, sin], axis=-1)


def mrope(x, position_ids, mrope_section, *, base: float = 10000.0,
          scaling: dict | None = None, interleaved: bool = False,
          layout: str = "half") -> np.ndarray:
    """Rotate queries or keys by M-RoPE: pair ``i`` by the angle of :func:`mrope_angles`.

    The score of a rotated query with ids ``(t1, h1, w1)`` and a rotated key with ids
    ``(t2, h2, w2)`` depends on the positions only through the offsets ``t2 - t1``,
    ``h2 - h1`` and ``w2 - w1``, as a score of :func:`posenc.rope_2d` depends on the row and
    column offsets.

    Args:
        x: floating-point array of shape ``(..., head_dim)`` with ``head_dim = 2 *
            sum(mrope_section)``, whose leading axes broadcast with ``position_ids.shape[1:]``
            (e.g. ``x`` of shape ``(batch, seq_len, head_dim)`` for ids ``(3, batch,
            seq_len)``; for ``(batch, heads, seq_len, head_dim)`` pass
            ``position_ids[:, :, None, :]``).
        position_ids, mrope_section, base, scaling, interleaved: as :func:`mrope_angles`.
        layout: keyword only, ``"half"`` (default: ``transformers``' pairs ``(j, j +
            head_dim / 2)``, as the Qwen-VL models) or ``"interleaved"`` (pairs ``(2j, 2j +
            1)``, RoFormer's paper).

    Returns:
        ``numpy.ndarray`` of the broadcast shape and of ``x``'s dtype: computed in float64,
        rounded once; multiplied by YaRN's attention factor when ``scaling`` has one.

    Raises:
        TypeError: ``x`` is not of a floating-point dtype, or as :func:`mrope_angles`.
        ValueError: ``x``'s last dimension is not ``2 * sum(mrope_section)``, its shape does
            not broadcast with the ids, an unknown ``layout``, or as :func:`mrope_angles`.

    Source: see :func:`mrope_angles`; the rotation of a pair: Su et al. 2021, RoFormer,
    section 3.4.2.
    """
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(f"x must be an array of a floating-point dtype, got dtype {x.dtype}")
    layout = check_layout(layout)
    section = check_mrope_section(mrope_section, interleaved=interleaved)
    if x.ndim < 1 or x.shape[-1] != 2 * sum(section):
        raise ValueError(f"x's last dimension must be 2 * sum(mrope_section) = "
                         f"{2 * sum(section)} (two coordinates per pair), got shape {x.shape}")
    cos, sin = mrope_cos_sin(position_ids, section, base=base, scaling=scaling,
                             interleaved=interleaved)
    pairs = sum(section)
    try:
        shape = np.broadcast_shapes(x.shape[:-1], cos.shape[:-1])
    except ValueError:
        raise ValueError(f"x of shape {x.shape} does not broadcast with position ids of shape "
                         f"{(3, *cos.shape[:-1])} (x's leading axes against the ids' "
                         f"axes after the first)") from None
    x = np.broadcast_to(x, shape + (2 * pairs,))
    return rotate_pairs(x, cos[..., :pairs], sin[..., :pairs], layout)
