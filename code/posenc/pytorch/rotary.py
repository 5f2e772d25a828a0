"""Rotary position embedding (RoPE) for PyTorch: queries and keys rotated by their positions.

The formula lives in :mod:`posenc.relative` (NumPy, float64); the module applies it to tensors.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true

from .._validate import (check_head_dim, check_int, check_position_range, check_window,
                         keyword_max_len)
from ..relative import check_layout
from ..rope_scaling import check_scaling, rope_frequencies
from ._tables import (_check_positions, _check_sequence, _check_tensor_offset, _host,
                      _PositionTables, _static, _static_shape, _traced, _tracing)


#: Axis orders of :class:`RotaryEmbedding`'s queries and keys.
AXES = ("bhsd", "bshd")


class RotaryEmbedding(_PositionTables):
    """Rotary position embedding (RoPE) of queries and keys, as :func:`posenc.rope` does in NumPy.

    Call it on the queries and keys of one attention layer, after their projections and
    before the scores: ``q, k = rotary(q, k)``, then ``scores = q @ k.transpose(-2, -1)``.
    The score of query position ``m`` with key position ``n`` then depends on ``m - n``
    only. Pair ``i`` of the vector at position ``pos`` is rotated by ``pos * base **
    (-2i / head_dim)``; ``layout`` says which coordinates form pair ``i``: ``(2i, 2i + 1)``
    for ``"interleaved"`` (RoFormer's paper, GPT-J; the default) or ``(i, i + head_dim / 2)``
    for ``"half"`` (GPT-NeoX, every RoPE model of Hugging Face ``transformers``: Llama,
    Qwen2, Mistral...). Weights trained with one layout give other scores with the other,
    without any error: a ``transformers`` model needs ``layout="half"``.

    Hugging Face models: ``d = posenc.rope_config(model.config)`` reads a model's RoPE
    settings as ``transformers`` does; ``RotaryEmbedding(d["head_dim"], base=d["base"],
    scaling=d["scaling"], layout="half")`` then rotates as the model does. To swap the
    rotation into the model itself, without rewriting its attention, use
    :func:`posenc.pytorch.replace_rotary` (``replace_rotary(model)``), which puts a
    :class:`posenc.pytorch.HFRotaryEmbedding`, built on this module, wherever the model's
    family keeps its rotary.

    The module has no parameters and nothing in ``state_dict``. Its table holds, for
    positions 0 to ``max_len - 1``, the sine (even columns) and cosine (odd columns) of
    every angle: the sinusoidal encoding of width ``head_dim`` (with a fixed ``scaling``: of
    the scaled angles), computed in float64 with the same angles as :func:`posenc.rope` and
    rounded once to the working dtype (float64
    for float64 inputs, float32 otherwise: float16 and bfloat16 inputs are rotated in
    float32 and the result rounded to their dtype), on the input's device, cached per
    (dtype, device) like :class:`posenc.pytorch.PositionalEncoding`'s, with the same growth
    in eager calls and the same rows computed past it inside compiled, exported and traced
    graphs. In eager calls the rotations use each angle's float32 (or float64) cosine and
    sine, computed from the float64 angle ``pos * w_i``, whose own rounding is up to ``pos *
    2**-53``: measured against the exact angles of the same float64 frequencies (Llama 3.1's
    head, 64 positions below each ``pos``), float32 cosines and sines are within one float32
    rounding (``2**-25``, 3.0e-8) up to ``pos = 2**26``, within ``2**-24`` (6e-8) up to
    ``2**29``, then off by about ``pos * 2**-54`` (1.2e-7 at ``2**31``, 6.1e-5 at ``2**40``,
    0.49 at ``2**53``, tested); float64 ones are off by that same ``pos * 2**-54`` (positions
    are accepted up to ``2**53``, where float64 still holds every integer). Rows computed in
    a graph are within ``2**-20 + pos * 2**-52`` of the eager ones.

    Args:
        head_dim: width of each head's query and key vectors, an even ``int >= 2``.
        max_len: keyword only (``RotaryEmbedding(head_dim, max_len=...)``), the number of
            positions computed up front, an ``int >= 0`` (default 5000); it grows when
            needed in eager calls; inside ``torch.compile``, ``torch.export``,
            ``torch.jit.trace`` and the ONNX exporters rows past it are computed in the graph.
        base: the constant of the frequencies (10000 in RoFormer), a finite ``float > 1``.
        layout: ``"interleaved"`` (default) or ``"half"``: which coordinates form a pair.
        axes: keyword only, the order of the axes of ``q`` and ``k``: ``"bhsd"`` (default,
            ``(batch, heads, seq_len, head_dim)``, the sequence on axis -2; also any
            ``(..., seq_len, head_dim)``) or ``"bshd"`` (``(batch, seq_len, heads,
            head_dim)``, the sequence on axis -3).
        scaling: keyword only, ``None`` (default) or a dict of
            :func:`posenc.rope_frequencies`, e.g. ``{"rope_type": "llama3", "factor": 8.0,
            "original_max_position_embeddings": 8192, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0}`` (see "Scaling" below).

    Axes of the popular implementations (a tensor of the other order runs without error
    whenever its sizes allow, rotating heads as if they were positions: pick ``axes`` to
    match): Hugging Face ``transformers`` (Llama's ``apply_rotary_pos_emb``, after the
    heads are moved before the sequence) and PyTorch's
    ``scaled_dot_product_attention``: ``"bhsd"``; keras-hub's ``RotaryEmbedding``
    (``sequence_axis=1``, ``feature_axis=-1`` by default, applied to ``(batch, seq_len,
    heads, head_dim)``), torchtune's ``RotaryPositionalEmbeddings`` (``[b, s, n_h, h_d]``),
    lucidrains' ``rotary-embedding-torch`` with ``seq_before_head_dim=True`` and Meta's
    Llama reference (``xq`` of shape ``(bsz, seqlen, n_local_heads, head_dim)``):
    ``"bshd"``; lucidrains' default (``seq_before_head_dim=False``): ``"bhsd"``. What the
    shapes allow is checked: ``positions`` must fit the axis read as the sequence.

    Shapes:
        ``forward(q, k, offset=0, *, positions=None)``: ``q`` of shape ``(..., q_len,
        head_dim)`` and ``k`` of shape ``(..., k_len, head_dim)``, e.g. ``(batch, heads,
        seq_len, head_dim)`` (``axes="bhsd"``), or ``(batch, seq_len, heads, head_dim)``
        (``axes="bshd"``), floating-point. Both are rotated for positions ``offset,
        offset + 1, ...`` along their sequence axis, or for ``positions``; returns
        ``(rotated_q, rotated_k)`` with the shapes, dtypes and devices of ``q`` and ``k``.
        With a KV cache, rotate each new key once, when it is computed, with ``offset`` =
        the number of tokens already cached (see :meth:`rotate`).

    Shipping paths (each checked by the project's tests on a fresh module, float32, CPU):
    ``torch.compile(fullgraph=True, dynamic=True)`` with the default inductor back end (no
    graph break), ``torch.export.export`` (strict and non-strict) with a dynamic ``seq_len``,
    ``torch.onnx.export`` with the dynamo and the legacy exporters, run by onnxruntime within
    1e-5 of eager, and ``torch.jit.trace``. The legacy exporter passes every argument of
    ``forward``: ``offset`` becomes an input of the ONNX graph (feed 0). Any length, offset or
    positions work in those graphs: rows of the table of ``max_len`` rows are looked up, rows
    past it are computed in the graph within ``2**-20 + pos * 2**-52`` of eager (see
    :mod:`posenc._digits`).

    Scaling (``scaling=``, a model run past the length it was trained on): the frequencies of
    :func:`posenc.rope_frequencies` with the same dict (Hugging Face ``transformers``'
    ``rope_parameters`` without ``rope_theta``) replace ``base ** (-2i / head_dim)``, and the
    rotated vectors are multiplied by its attention factor (YaRN's; 1 otherwise), as
    ``transformers`` multiplies its ``cos`` and ``sin``: with ``layout="half"``, ``rotate``
    equals ``transformers``' rotary embedding (e.g. ``LlamaRotaryEmbedding`` with that
    ``rope_parameters``) followed by ``apply_rotary_pos_emb``, within float32 rounding
    (tested). Read a model's config with :func:`posenc.rope_config` rather than passing its
    rope section as it is (``"dynamic"``'s length, for one, is outside it). ``"linear"``,
    ``"yarn"`` and ``"llama3"`` have fixed frequencies: the table, its exactness and every
    shipping path above are as without scaling. ``"dynamic"`` (dynamic NTK) has frequencies
    that depend on the sequence length ``n``, taken in each call as the largest position
    rotated plus one (``offset + seq_len``, or ``positions.max() + 1`` over the whole batch),
    as ``transformers`` computes it from ``position_ids``; the rows are then computed in every
    call, in float64 from the position and the frequencies (eagerly and in graphs alike: no
    table, ``max_len`` unused), and rounded once to the working dtype; the module keeps no
    state between calls, where ``transformers``' module keeps the frequencies of the longest
    sequence it has seen until a sequence shorter than ``original_max_position_embeddings``
    resets them. With a KV cache, keys rotated in earlier calls keep the frequencies of their
    call. The float64 rows need a device with float64 (not Apple's MPS).

    Raises:
        TypeError, ValueError: bad constructor arguments (see :func:`posenc.rope` and
            :func:`posenc.rope_frequencies`; a positional ``max_len`` is a ``TypeError``
            saying what to write) or a bad input to :meth:`rotate` / :meth:`forward`.

    Source: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
    Embedding", sections 3.2 and 3.4.2; the half layout from Black et al. 2022 (GPT-NeoX);
    the scalings: see :func:`posenc.rope_frequencies`.
    """

    @keyword_max_len
    def __init__(self, head_dim: int, *, max_len: int = 5000, base: float = 10000.0,
                 layout: str = "interleaved", axes: str = "bhsd", scaling: dict | None = None
                 ) -> None:
        head_dim = check_head_dim("head_dim", head_dim)
        super().__init__(head_dim, max_len, base)
        self.head_dim = head_dim
        self.layout = check_layout(layout)
        if not isinstance(axes, str) or axes not in AXES:
            raise (TypeError if not isinstance(axes, str) else ValueError)(
                f"axes must be 'bhsd' (batch, heads, seq_len, head_dim) or 'bshd' (batch, "
                f"seq_len, heads, head_dim), got {type(axes).__name__} {axes!r}")
        self.axes = axes
        #: The validated scaling dict (defaults filled in), or None.
        self.scaling = check_scaling(scaling)
        self._dynamic = self.scaling is not None and self.scaling["rope_type"] == "dynamic"
        # "dynamic": the frequencies up to its original length (unscaled); scaled per call.
        self._frequencies, self.attention_factor = rope_frequencies(
            head_dim, base=self.base, scaling=self.scaling,
            seq_len=0 if self._dynamic else None)
        self._dynamic_constants: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}
        for dtype in (torch.float64, torch.float32):  # ready before any tracing
            self._prepare(dtype, torch.device("cpu"))

    def _column_frequencies(self) -> np.ndarray:
        return np.repeat(self._frequencies, 2)  # both columns of a pair

    def _table_dtype(self, dtype: torch.dtype) -> torch.dtype:
        return torch.float64 if dtype == torch.float64 else torch.float32

    def _prepared_dtypes(self, dtype: torch.dtype) -> tuple:
        # Both working dtypes, the target's first: a graph of float32 inputs compiles after
        # .double() (and one of float64 inputs on a module built in float32) without host work.
        first = self._table_dtype(dtype)
        return (first, torch.float32 if first == torch.float64 else torch.float64)

    def _far_constants(self, dtype: torch.dtype, device: torch.device):
        # Prepared, like the far rows' constants, before tracing and on .to(device).
        if self._dynamic:
            self._dynamic_constants_on(device)
        return super()._far_constants(dtype, device)

    @_host  # host (NumPy) work: never traced
    def _compute_dynamic_constants(self, device: torch.device) -> tuple:
        exponents = np.arange(self.head_dim // 2, dtype=np.float64) * 2.0
        exponents /= max(self.head_dim - 2, 1)  # head_dim 2: one pair, exponent 0
        return tuple(_static(torch.from_numpy(values).to(device))
                     for values in (self._frequencies, exponents))

    def _dynamic_constants_on(self, device: torch.device) -> tuple:
        """``(frequencies, exponents)`` of every pair, float64, on ``device``, cached."""
        constants = self._dynamic_constants.get(device)
        if constants is None:
            constants = self._dynamic_constants[device] = self._compute_dynamic_constants(device)
        return tuple(_traced(tensor) for tensor in constants)

    def _dynamic_rows(self, positions: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Rows of dynamic NTK for int64 ``positions`` (any shape), computed in float64:
        ``base`` grows to ``base * s ** (d / (d - 2))`` with ``s = max(1, f * n / L - (f -
        1))``, so the frequency of pair ``i`` is ``w_i * s ** (-2i / (d - 2))``."""
        frequencies, exponents = self._dynamic_constants_on(positions.device)
        factor = self.scaling["factor"]
        original = self.scaling["original_max_position_embeddings"]
        longest = torch.cat((positions.reshape(-1), positions.new_zeros(1))).max() + 1
        stretch = (factor * longest.to(torch.float64) / original - (factor - 1.0)).clamp(min=1.0)
        angles = positions.to(torch.float64)[..., None] * (frequencies * stretch ** -exponents)
        return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2).to(dtype)

    def _dynamic_positions(self, x: torch.Tensor, offset, positions) -> torch.Tensor:
        """The int64 positions of ``x``'s rows for the dynamic rows (checked as in
        :meth:`_rows` and :meth:`_rows_at`)."""
        if positions is not None:
            positions = positions.to(x.device)
            if not _tracing() and positions.numel() and positions.device.type != "meta":
                check_position_range(int(positions.min()), int(positions.max()))
            return positions
        seq_len = x.shape[-2]
        if isinstance(offset, torch.Tensor):
            offset = _check_tensor_offset(offset)
            if not _tracing() and offset.device.type != "meta":
                check_int("offset", int(offset))
                check_window(int(offset), int(seq_len))
            return offset.to(x.device) + torch.arange(seq_len, device=x.device)
        if not _tracing():
            offset = check_int("offset", offset)
            check_window(offset, seq_len)
        return offset + torch.arange(seq_len, device=x.device)

    def rotate(self, x: torch.Tensor, offset=0, *, positions: torch.Tensor | None = None
               ) -> torch.Tensor:
        """Rotate one tensor of queries or keys for positions ``offset, offset + 1, ...``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, head_dim)`` (``axes="bhsd"``,
                e.g. ``(batch, heads, seq_len, head_dim)``) or ``(..., seq_len, heads,
                head_dim)`` (``axes="bshd"``).
            offset: position of ``x``'s first row, an ``int >= 0`` or a scalar integer
                tensor, with ``offset + seq_len <= 2**53``.
            positions: keyword only, instead of ``offset``: an integer tensor, the position
                of every row, each in ``[0, 2**53)`` (left-padded batches, a cache's position
                ids), with the contract of :meth:`PositionalEncoding.forward`. For a 4-D
                ``x``, a 2-D tensor is ``(batch, seq_len)``, one row per sequence used for
                every head, as Hugging Face's ``position_ids``; otherwise its shape is
                ``(..., seq_len)``, broadcastable to ``(..., heads, seq_len)``.

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, ``offset`` is not an integer
                (or integer tensor), or ``positions`` is not an integer tensor.
            ValueError: ``x`` has fewer than 2 dimensions, its last dimension is not
                ``head_dim``, ``offset`` is negative or not a scalar, the positions are
                negative or reach past ``2**53``, ``positions`` has the wrong shape, both
                ``offset`` and ``positions`` are given, or ``axes="bshd"`` and ``x`` has fewer
                than 3 dimensions. The message of a wrong ``positions`` shape names the axis
                read as the sequence.
        """
        _check_sequence("x", x, "head_dim", self.head_dim)
        x = self._sequence_second_last(x)
        return self._sequence_back(self._turn(x, self._angles(x, offset, positions)))

    def _sequence_second_last(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` with the sequence on axis -2: ``(..., seq_len, head_dim)``."""
        if self.axes == "bhsd":
            return x
        if x.dim() < 3:
            raise ValueError(
                f"with axes='bshd', x must have shape (..., seq_len, heads, head_dim), got "
                f"shape {_static_shape(x)}")
        return x.transpose(-2, -3)

    def _sequence_back(self, x: torch.Tensor) -> torch.Tensor:
        """Undo :meth:`_sequence_second_last`."""
        return x if self.axes == "bhsd" else x.transpose(-2, -3)

    def _angles(self, x: torch.Tensor, offset, positions) -> torch.Tensor:
        """The rows for ``x`` of shape ``(..., seq_len, head_dim)``: sines in the even
        columns, cosines in the odd ones, in the dtype :meth:`_turn` computes in."""
        work_dtype = self._table_dtype(x.dtype)
        if positions is None:
            if self._dynamic:
                return self._dynamic_rows(self._dynamic_positions(x, offset, None), work_dtype)
            return self._rows(offset, x.shape[-2], work_dtype, x.device)
        if isinstance(offset, torch.Tensor) or not (isinstance(offset, int) and offset == 0):
            raise ValueError("pass either offset or positions, not both")
        if isinstance(positions, torch.Tensor) and positions.dim() == 2 and x.dim() == 4:
            positions = positions[:, None, :]  # Hugging Face: (batch, seq_len), every head
        try:
            positions = _check_positions(positions, _static_shape(x)[:-1])
        except ValueError as error:
            raise ValueError(
                f"{error}; this module reads the sequence from axis "
                f"{-2 if self.axes == 'bhsd' else -3} of x (axes={self.axes!r}), and "
                f"2-D positions of a 4-D x as (batch, seq_len)") from None
        if self._dynamic:
            return self._dynamic_rows(self._dynamic_positions(x, 0, positions), work_dtype)
        return self._rows_at(positions, work_dtype, x.device)

    def _turn(self, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` of shape ``(..., seq_len, head_dim)`` by the angles of ``rows``."""
        work_dtype = self._table_dtype(x.dtype)
        sin, cos = rows[..., 0::2], rows[..., 1::2]
        work = x.to(work_dtype)
        if self.layout == "interleaved":
            first, second = work[..., 0::2], work[..., 1::2]
            out = torch.stack((first * cos - second * sin, first * sin + second * cos), dim=-1)
            out = out.flatten(-2)
        else:
            first, second = work.chunk(2, dim=-1)
            out = torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)
        if self.attention_factor != 1.0:
            out = out * self.attention_factor
        return out.to(x.dtype)

    def forward(self, q: torch.Tensor, k: torch.Tensor, offset=0,
                positions: torch.Tensor | None = None):
        """Return ``(rotate(q, offset), rotate(k, offset))`` (or with ``positions=``, which
        must then fit both); see the class docstring. When ``q`` and ``k`` have one shape,
        dtype and device (in a ``torch.compile`` or ``torch.export`` graph: the same symbolic
        lengths), the rows of sines and cosines are computed once for both, which halves
        their part of the graph.

        Raises:
            TypeError, ValueError: as :meth:`rotate`, naming ``q`` or ``k``.
        """
        _check_sequence("q", q, "head_dim", self.head_dim)
        _check_sequence("k", k, "head_dim", self.head_dim)
        # q and k of one shape (in a Dynamo graph: provably, whatever the lengths) share one
        # set of rows; torch.jit.trace would bake the comparison into its graph, so not there.
        if torch.jit.is_tracing() or not (
                q.dtype == k.dtype and q.device == k.device and q.dim() == k.dim()
                and all(statically_known_true(a == b) for a, b in zip(q.shape, k.shape))):
            return (self.rotate(q, offset, positions=positions),
                    self.rotate(k, offset, positions=positions))
        q, k = self._sequence_second_last(q), self._sequence_second_last(k)
        rows = self._angles(q, offset, positions)
        return self._sequence_back(self._turn(q, rows)), self._sequence_back(self._turn(k, rows))

    def extra_repr(self) -> str:
        return (f"head_dim={self.head_dim}, base={self.base}, layout={self.layout!r}"
                + ("" if self.axes == "bhsd" else f", axes={self.axes!r}")
                + ("" if self.scaling is None else f", scaling={self.scaling!r}"))

