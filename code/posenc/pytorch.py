"""Sinusoidal positional encoding for PyTorch: a tensor factory and an ``nn.Module``.

Importing this module imports ``torch``. The values come from
:func:`posenc.positional_encoding` (angles in float64, cast once), so they equal the
NumPy version.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import torch
from torch import nn
from torch.fx.experimental.symbolic_shapes import statically_known_true

from ._validate import (
    check_base, check_dropout, check_int, check_position_range, check_width, check_window,
)
from ._digits import compose, digit_count, digit_steps, digit_table
from .encoding import angular_frequencies, encoding_at, float32_round_to_odd
from .encoding import positional_encoding as _numpy_positional_encoding


def _check_dtype(dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


@torch.compiler.disable  # host (NumPy) work: never traced, run as ordinary Python
def _from_float64(values: np.ndarray, dtype: torch.dtype, device) -> torch.Tensor:
    """Float64 values as a tensor of ``dtype`` on ``device``, each the nearest value of ``dtype``."""
    if dtype.itemsize < 4:  # PyTorch would go through float32 and could round twice
        values = float32_round_to_odd(values)
    return torch.from_numpy(values).to(device=device, dtype=dtype)


def positional_encoding(
    seq_len: int,
    d_model: int,
    *,
    base: float = 10000.0,
    offset: int = 0,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> torch.Tensor:
    """Sinusoidal positional encoding as a ``torch.Tensor``.

    Args:
        seq_len: number of positions (rows), an ``int >= 0``.
        d_model: width of the encoding, an ``int >= 1``.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        offset: position of the first row, an ``int >= 0`` with ``offset + seq_len <= 2**53``.
        dtype: a floating-point ``torch.dtype`` for the result (default ``torch.float32``).
        device: where to put the result (``None``: the CPU).

    Returns:
        Tensor of shape ``(seq_len, d_model)``; row ``r`` encodes position ``offset + r``.
        See :func:`posenc.positional_encoding` for the formula and the accuracy as a
        function of position. Every entry is the value of ``dtype`` nearest to the
        float64 result (float16 and bfloat16 included).

    Raises:
        TypeError: wrong argument types, or ``dtype`` is not a floating-point torch dtype.
        ValueError: negative ``seq_len``/``offset``, ``offset + seq_len > 2**53``,
            ``d_model < 1`` or too large, bad ``base``.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    dtype = _check_dtype(dtype)
    table = _numpy_positional_encoding(seq_len, d_model, base=base, offset=offset)
    return _from_float64(table, dtype, device)


#: How many (dtype, device) tables a module keeps: the most recently used ones.
CACHE_SIZE = 3

#: Tolerance, per position ``pos``, of a checkpoint's ``pe`` table: ``(pos + 1) * 2**-21``.
#: Tables of the PyTorch tutorial and of the common snippet compute their angles in
#: float32 (a few roundings of relative size ``2**-24`` each, on angles up to ``pos``
#: radians); measured, they differ from the float64 encoding by at most about
#: ``1.3 * 2**-24 * (pos + 1)`` for widths 6 to 512, so this bound leaves a margin of 6.
LOADED_TABLE_TOLERANCE = 2.0**-21


def _tracing() -> bool:
    """True while ``torch.compile``, ``torch.export`` or ``torch.jit.trace`` (also the
    legacy ONNX exporter, which traces with it) records ``forward`` as a graph."""
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def _concrete(size):
    """A size as a number for checks: ``torch.jit.trace`` records sizes as 0-d tensors."""
    if isinstance(size, torch.Tensor):
        with warnings.catch_warnings():  # the value is only checked, not baked into the graph
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            return int(size)
    return size


def _static_shape(x: torch.Tensor) -> tuple:
    return tuple(_concrete(n) for n in x.shape)


def _check_positions(positions, batch_shape) -> torch.Tensor:
    """Check explicit positions against the input's leading shape ``(..., seq_len)``."""
    if (not isinstance(positions, torch.Tensor) or positions.dtype == torch.bool
            or positions.is_floating_point() or positions.is_complex()):
        raise TypeError(
            "positions must be an integer torch.Tensor of shape (..., seq_len), got "
            + (f"a tensor of dtype {positions.dtype}" if isinstance(positions, torch.Tensor)
               else type(positions).__name__)
        )
    shape = _static_shape(positions)
    try:
        fits = positions.dim() >= 1 and torch.broadcast_shapes(shape, batch_shape) == batch_shape
    except RuntimeError:
        fits = False
    if not fits or shape[-1] != batch_shape[-1]:
        raise ValueError(
            f"positions must have shape (..., seq_len) with seq_len={batch_shape[-1]}, "
            f"broadcastable to the input's {batch_shape}, got shape {shape}"
        )
    return positions.long()


def _check_tensor_offset(offset: torch.Tensor) -> torch.Tensor:
    if offset.dtype == torch.bool or offset.is_floating_point() or offset.is_complex():
        raise TypeError(f"offset must be an integer or an integer tensor, got a tensor of dtype {offset.dtype}")
    if offset.dim() != 0:
        raise ValueError(f"offset must be a scalar (0-dimensional) tensor, got shape {tuple(offset.shape)}")
    return offset


def _check_batch(name: str, x, width_name: str) -> None:
    """Check that ``x`` is a floating-point tensor of shape ``(..., seq_len, width_name)``.

    Raises:
        TypeError: ``x`` is not a tensor, or not of a floating-point dtype.
        ValueError: ``x`` has fewer than 2 dimensions.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point torch.Tensor of shape (..., seq_len, {width_name}), "
            f"got {type(x).__name__}"
            + (f" of dtype {x.dtype}" if isinstance(x, torch.Tensor) else "")
        )
    if x.dim() < 2:
        raise ValueError(
            f"{name} must have shape (..., seq_len, {width_name}) with at least 2 dimensions, "
            f"got shape {tuple(x.shape)}"
        )


def _static(tensor: torch.Tensor) -> torch.Tensor:
    """Mark a cached table static for ``torch.compile(dynamic=True)``: its shape never
    follows the input's, so Dynamo need not trace it with symbolic sizes (fewer guards,
    faster compilation)."""
    torch._dynamo.mark_static(tensor)
    return tensor


class _PositionTables(nn.Module):
    """Tables with one row per position (``max_len`` rows, ``width`` columns), cached per
    (dtype, device): the machinery shared by :class:`PositionalEncoding`,
    :class:`RotaryEmbedding` and :class:`ALiBi`.

    Row ``pos`` is ``_values_at(pos)``, computed in float64 on the host (NumPy) and rounded
    once to the table's dtype. Eager calls grow the tables (to at least twice their length)
    or compute far rows on their own; inside ``torch.compile``, ``torch.export`` and
    ``torch.jit.trace`` nothing grows and nothing is computed on the host: rows inside the
    table are a gather of it, rows past it are computed in the graph (:meth:`_far_rows`,
    see :mod:`posenc._digits`), so a graph takes any length.
    """

    def __init__(self, width: int, max_len: int, base: float) -> None:
        super().__init__()
        self._width = width
        self.max_len = check_int("max_len", max_len)
        check_window(0, self.max_len)
        self.base = check_base(base)
        self._tables: OrderedDict[tuple[torch.dtype, torch.device], torch.Tensor] = OrderedDict()
        self._far_tables: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}

    def _values_at(self, positions: np.ndarray) -> np.ndarray:
        """Float64 rows for integer positions: shape ``positions.shape + (width,)``."""
        return encoding_at(positions, self._width, self.base)

    def _compute(self, length: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return _from_float64(self._values_at(np.arange(length)), dtype, device)

    def _table_dtype(self, dtype: torch.dtype) -> torch.dtype:
        """The dtype of the table used for an input of ``dtype``."""
        return dtype

    def _keep(self, key, table: torch.Tensor) -> None:
        self._tables[key] = _static(table)
        while len(self._tables) > CACHE_SIZE:
            self._tables.popitem(last=False)  # the least recently used

    def table(self, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        """The cached ``(max_len, width)`` table in ``dtype`` on ``device``.

        Args:
            dtype: a floating-point ``torch.dtype``.
            device: a ``torch.device`` or its name (``None``: the CPU).

        Returns:
            Tensor of shape ``(max_len, width)``; computed on the first request for
            this dtype and device (on the host, then copied), then returned from the cache.

        Raises:
            TypeError: ``dtype`` is not a floating-point torch dtype.
        """
        key = (_check_dtype(dtype), torch.device(device if device is not None else "cpu"))
        table = self._tables.get(key)
        if table is None:
            table = self._compute(self.max_len, *key)
            self._keep(key, table)
        elif not _tracing():
            self._tables.move_to_end(key)
        return table

    def _far_dtype(self, dtype: torch.dtype) -> torch.dtype:
        """Rows past the table are computed in float64 for float64, else in float32."""
        return torch.float64 if dtype == torch.float64 else torch.float32

    def _far_constants(self, dtype: torch.dtype, device: torch.device):
        """The constants of :meth:`_far_rows`, cached per (dtype, device): here the digit
        table (:func:`posenc._digits.digit_table`) of the angular frequencies and the
        int64 steps (:func:`posenc._digits.digit_steps`) that index it."""
        key = (self._far_dtype(dtype), device)
        constants = self._far_tables.get(key)
        if constants is None:
            constants = self._compute_far_constants(*key)
            for tensor in constants if isinstance(constants, tuple) else (constants,):
                _static(tensor)
            self._far_tables[key] = constants
        return constants

    @torch.compiler.disable  # host (NumPy) work: never traced
    def _compute_far_constants(self, dtype: torch.dtype, device: torch.device) -> tuple:
        frequencies = angular_frequencies(self._width, base=self.base)[0::2]
        n_digits = digit_count(64)
        table = torch.from_numpy(digit_table(frequencies, n_digits)).to(device=device, dtype=dtype)
        steps = (torch.from_numpy(step).to(device) for step in digit_steps(n_digits, np.int64))
        return (table, *steps)

    def _far_rows(self, positions: torch.Tensor, dtype, device) -> torch.Tensor:
        """Rows for int64 positions computed in the graph, shape ``positions.shape + (width,)``:
        sines in the even columns, cosines in the odd ones, in ``dtype``."""
        table, *steps = self._far_constants(dtype, device)
        sin, cos = compose(positions, table, digit_count(64), steps,
                           lambda table, index: table[index])
        rows = torch.stack((sin, cos), dim=-1).flatten(-2)[..., : self._width]
        return rows.to(dtype)

    def _prepare(self, dtype: torch.dtype, device: torch.device) -> None:
        """Compute the tables a graph of ``dtype`` on ``device`` will use, before tracing."""
        self.table(dtype, device)
        self._far_constants(dtype, device)

    def _apply(self, fn, recurse=True):
        """``.to()``, ``.cuda()``, ``.half()``, ...: prepare the table they target."""
        result = super()._apply(fn, recurse)
        # What the call does to a float32 CPU tensor says which dtype and device it targets.
        probe = fn(torch.zeros((), dtype=torch.float32))
        if isinstance(probe, torch.Tensor) and probe.is_floating_point():
            key = (self._table_dtype(probe.dtype), probe.device)
            table = self._tables.get(key)
            if table is None:
                table = self._compute(self.max_len, *key)
            self._tables.clear()
            self._keep(key, table)
            self._far_tables.clear()
            self._far_constants(*key)
        return result

    def _ensure(self, start: int, end: int, dtype, device) -> bool:
        """Make the table cover positions ``start .. end - 1`` if that is reasonable.

        Returns False (and changes nothing) when the window is far past the table and
        should be computed on its own.
        """
        if end <= self.max_len:
            return True
        if start > self.max_len and end > 2 * self.max_len:
            return False
        length = max(end, 2 * self.max_len)
        table = self._compute(length, dtype, device)  # may fail: nothing changed yet
        self.max_len = length
        self._tables.clear()
        self._keep((dtype, device), table)
        return True

    def _lookup(self, positions: torch.Tensor, dtype, device) -> torch.Tensor:
        """Rows for integer positions inside a graph: the table's row below ``max_len``,
        the row computed in the graph from there on; shape ``positions.shape + (width,)``."""
        far = self._far_rows(positions, dtype, device)
        if self.max_len == 0:
            return far
        inside = self.table(dtype, device)[positions.clamp(0, self.max_len - 1)]
        return torch.where((positions < self.max_len)[..., None], inside, far)

    def _rows(self, offset, seq_len, dtype, device) -> torch.Tensor:
        """Rows for positions ``offset .. offset + seq_len - 1``, shape ``(seq_len, width)``."""
        if isinstance(offset, torch.Tensor):
            offset = _check_tensor_offset(offset)
            if _tracing() or offset.device.type == "meta":  # no host sync
                return self._lookup(offset.to(device) + torch.arange(seq_len, device=device),
                                    dtype, device)
            offset = int(offset)  # eager: same path, same values as a Python int
        if _tracing():  # any length: looked up or computed in the graph
            return self._lookup(offset + torch.arange(seq_len, device=device), dtype, device)
        offset = check_int("offset", offset)
        check_window(offset, seq_len)
        end = offset + seq_len
        if not self._ensure(offset, end, dtype, device):
            return _from_float64(self._values_at(np.arange(offset, end)), dtype, device)
        return self.table(dtype, device)[offset:end]

    def _rows_at(self, positions: torch.Tensor, dtype, device) -> torch.Tensor:
        """Rows for explicit positions, shape ``positions.shape + (width,)``.

        Eager: positions inside the table, or all within twice its length, are a gather
        (the table grown if need be); otherwise every row is computed on the host for
        its position, so far positions (say 0 and ``2**40`` together) cost memory for the
        rows asked for only.
        """
        positions = positions.to(device)
        if _tracing() or positions.device.type == "meta":
            return self._lookup(positions, dtype, device)
        if positions.numel():
            low, high = int(positions.min()), int(positions.max())
            check_position_range(low, high)
            if high >= 2 * self.max_len and high >= self.max_len + positions.numel():
                return _from_float64(self._values_at(positions.cpu().numpy()), dtype, device)
            self._ensure(0, high + 1, dtype, device)
        return self.table(dtype, device)[positions]


class PositionalEncoding(_PositionTables):
    """Adds the sinusoidal positional encoding to a batch of embeddings.

    The encoding has amplitude 1: every entry is a sine or a cosine, in ``[-1, 1]``, and
    every row has norm ``sqrt(d_model / 2)`` (for an even ``d_model``). Token embeddings initialised small (PyTorch's
    ``nn.Embedding`` draws N(0, 1), but many models use N(0, 0.02) or Xavier, entries of order
    ``1 / sqrt(d_model)``) must be multiplied by ``sqrt(d_model)`` before the sum, as the
    paper does (section 3.4), or the encoding swamps them: see the course's chapter on
    embeddings (``book/embeddings.ipynb``).

    The table of ``max_len`` positions is computed in float64 and rounded once to the
    dtype of the input, on the input's device; it is then cached per (dtype, device), so
    later calls only slice (or gather) and add. Any input dtype keeps its full precision
    (a float64 input gets a float64 table), and the module works on any device.

    Cache versus registered buffer, a trade-off: the tables are neither parameters nor
    buffers, so they never enter ``state_dict`` (they are fully determined by
    ``d_model`` and ``base``; checkpoints stay small and load across ``max_len``), and no
    ``module.half()`` can round them for good, as it would a buffer. The price:

    - ``module.to(device_or_dtype)`` (also ``.cuda()``, ``.half()``, ``.float()``, ...)
      does not move a buffer but prepares the table for the float dtype and device the
      call targets (computed on the host, then copied), and drops the other tables, so
      the next ``forward`` on that device and dtype does no host work. An input of
      another dtype or device still costs one host computation and copy in ``forward``.
    - At most ``CACHE_SIZE`` (3) tables are kept, the most recently used ones.
    - Growth (below) changes the module's state inside an eager ``forward``.

    Longer inputs, in eager mode: a window ``offset .. offset + seq_len - 1`` that runs past
    ``max_len`` grows the table (to at least twice its length), as fairseq's sinusoidal
    embedding does, if the window starts inside the table or fits in twice its length. A
    window further away (say ``offset=2**40`` while decoding) is computed on its own,
    leaving the table as it is. Explicit ``positions`` grow the table when their largest
    fits in twice its length or adds no more rows than positions were given; otherwise
    each row is computed for its position (0 and ``2**40`` together cost two rows, not a
    table of ``2**40``). State changes only once the new table exists: a call that
    fails (e.g. MemoryError) leaves the module as it was. Positions go up to ``2**53``; for
    the accuracy as a function of position see :func:`posenc.positional_encoding`.

    Checkpoints of the usual modules: a ``state_dict`` holding a ``pe`` table, as written by
    the ``PositionalEncoding`` of PyTorch's tutorial (``(max_len, 1, d_model)``) or of the
    common snippet (``(1, max_len, d_model)``), loads with ``strict=True``: the table is
    checked against this module's encoding (same ``d_model`` and ``base``) within
    ``(pos + 1) * 2**-21`` at position ``pos`` (their angles are float32), then dropped.
    A table of another shape or with other values makes ``load_state_dict`` raise a
    ``RuntimeError`` that names the key, the shapes or the largest difference.

    Args:
        d_model: width of the embeddings, an ``int >= 1``.
        max_len: number of positions computed up front, an ``int >= 0`` (at most
            ``2**53``); it grows when needed in eager calls (read ``module.max_len`` for
            the current length). Inside ``torch.compile``, ``torch.export``,
            ``torch.jit.trace`` and the ONNX exporters rows past it are computed in the
            graph (see "Shipping paths").
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        dropout: probability of the dropout applied to the sum, a real number in
            ``[0, 1]`` (the paper uses 0.1); active only in training mode.
        batch_first: ``True`` (default): ``x`` is ``(..., seq_len, d_model)``, e.g.
            ``(batch, seq_len, d_model)``. ``False``: ``x`` is ``(seq_len, batch,
            d_model)``, the default layout of ``torch.nn.Transformer`` and its layers and of
            PyTorch's tutorial; exactly 3 dimensions.

    Which layout an input has cannot be read from its shape: a ``(seq_len, batch,
    d_model)`` tensor given to a ``batch_first=True`` module (or the reverse) runs without
    error and adds the encoding of the batch index to every token. Only what a shape does
    tell is checked: ``batch_first=False`` refuses inputs that are not 3-D (a 2-D input
    has no batch axis).

    Shapes:
        ``forward(x, offset=0, *, positions=None)``: with ``batch_first=True``, ``x`` of
        shape ``(..., seq_len, d_model)``, any number of leading (batch) dimensions;
        with ``batch_first=False``, ``(seq_len, batch, d_model)``; floating-point dtype.
        The result has the shape, dtype and device of ``x``:
        ``dropout(x + PE[offset : offset + seq_len])`` (each position along the sequence
        axis), or ``dropout(x + PE[positions])``.

    Shipping paths (each checked by ``tests/test_export.py`` on a fresh module, float32,
    CPU): ``torch.compile(fullgraph=True, dynamic=True)`` with the default inductor back
    end (no graph break), ``torch.export.export`` (strict and non-strict) with a dynamic
    ``seq_len`` (``torch.export.Dim("seq_len")``), ``torch.onnx.export`` with the dynamo
    exporter and with the legacy (TorchScript) exporter, both run by onnxruntime within
    1e-5 of eager (the legacy exporter passes every argument of ``forward``, so ``offset``
    becomes an input of its graph: feed 0), and ``torch.jit.trace``, whose graph keeps
    ``seq_len`` dynamic. In those graphs the table is a constant of ``max_len`` rows,
    looked up for positions below ``max_len``; any other position (a longer input, a
    tensor ``offset`` or ``positions``) is computed in the graph from a small constant
    table of base-256 digits (:mod:`posenc._digits`), within ``2**-20 + pos * 2**-52`` of
    the eager row in float32, with no host work and no value check.
    ``torch.jit.script`` does not work: the cache is a Python dict filled by NumPy code,
    which TorchScript cannot type (TorchScript is deprecated).

    Raises:
        TypeError, ValueError: bad constructor arguments (see :func:`positional_encoding`)
            or a bad input to ``forward`` (see :meth:`forward`).

    Source: Vaswani et al. 2017, section 3.5 (encoding, and dropout on the sum in 5.4).
    """

    def __init__(
        self,
        d_model: int,
        max_len: int = 5000,
        *,
        base: float = 10000.0,
        dropout: float = 0.0,
        batch_first: bool = True,
    ) -> None:
        d_model = check_int("d_model", d_model, minimum=1)
        super().__init__(d_model, max_len, base)
        self.d_model = d_model
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first must be True or False, got {type(batch_first).__name__} "
                            f"{batch_first!r}")
        self.batch_first = batch_first
        self.dropout = nn.Dropout(check_dropout(dropout))
        self._prepare(torch.float32, torch.device("cpu"))  # ready before any tracing

    def _compute(self, length: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return positional_encoding(length, self.d_model, base=self.base, dtype=dtype, device=device)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Accept (check, then drop) the ``pe`` table of the tutorial's and the snippet's modules."""
        key = prefix + "pe"
        if key in state_dict:
            problem = self._loaded_table_problem(state_dict.pop(key))
            if problem:
                error_msgs.append(f"{key}: {problem}")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def _loaded_table_problem(self, value) -> str | None:
        """Why a checkpoint's ``pe`` table is not this module's encoding (None if it is)."""
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            return (f"expected a floating-point tensor (a sinusoidal table), got "
                    f"{type(value).__name__}"
                    + (f" of dtype {value.dtype}" if isinstance(value, torch.Tensor) else ""))
        shape, d = tuple(value.shape), self.d_model
        if not (len(shape) == 2 and shape[1] == d or len(shape) == 3 and shape[2] == d
                and 1 in shape[:2]):
            return (f"shape {shape} is not a table of width d_model={d}: expected "
                    f"(max_len, 1, {d}) (PyTorch's tutorial), (1, max_len, {d}) (the common "
                    f"snippet) or (max_len, {d})")
        if value.device.type == "meta":
            return None  # no values to check
        rows = value.detach().reshape(-1, d).to(device="cpu", dtype=torch.float64).numpy()
        expected = _numpy_positional_encoding(rows.shape[0], d, base=self.base)
        excess = np.abs(rows - expected) - LOADED_TABLE_TOLERANCE * (np.arange(rows.shape[0]) + 1.0)[:, None]
        if np.any(~(excess <= 0)):  # NaN counts as a difference
            pos, col = np.unravel_index(np.nanargmax(np.where(np.isnan(excess), np.inf, excess)),
                                        excess.shape)
            got, want = float(rows[pos, col]), float(expected[pos, col])
            return (f"values are not the sinusoidal encoding of this module (d_model={d}, "
                    f"base={self.base}): the largest difference, {abs(got - want):.3g} at "
                    f"position {pos}, column {col} (checkpoint {got!r}, encoding {want!r}), "
                    f"exceeds the tolerance (pos + 1) * 2**-21 of float32 angles; a learned "
                    f"table or another base cannot be replaced by this module")
        return None

    def forward(self, x: torch.Tensor, offset=0, positions: torch.Tensor | None = None
                ) -> torch.Tensor:
        """Return ``dropout(x + PE[offset : offset + seq_len])`` or ``dropout(x + PE[positions])``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, d_model)`` (``batch_first=True``)
                or ``(seq_len, batch, d_model)`` (``batch_first=False``).
            offset: position of ``x``'s first token (e.g. the number of tokens already
                decoded when feeding one token at a time): an ``int >= 0`` or a scalar
                integer tensor (same results; a tensor avoids recompiling per value under
                ``torch.compile``), with ``offset + seq_len <= 2**53``.
            positions: instead of ``offset`` (pass it by keyword): an integer tensor, the
                position of every token, each in ``[0, 2**53)``: of shape ``(..., seq_len)``
                broadcastable to ``x.shape[:-1]`` (``batch_first=True``), or ``(seq_len,)``
                or ``(seq_len, batch)`` (``batch_first=False``). For left-padded batches
                (count positions from each sequence's first real token) and packed
                sequences (restart at 0 for each sequence), as Hugging Face's ``position_ids``.

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, ``offset`` is not an integer
                (or integer tensor), or ``positions`` is not an integer tensor.
            ValueError: ``x`` has fewer than 2 dimensions (not exactly 3 with
                ``batch_first=False``), its last dimension is not ``d_model``, ``offset``
                is negative or not a scalar, the positions reach past ``2**53`` or are
                negative, ``positions`` has the wrong shape, or both ``offset`` and
                ``positions`` are given.
        """
        if self.batch_first:
            return self._add(x, offset, positions)
        if isinstance(x, torch.Tensor) and x.dim() != 3:
            raise ValueError(
                f"with batch_first=False, x must have shape (seq_len, batch, d_model), got shape "
                f"{tuple(x.shape)}" + (": a 2-D input has no batch axis; for (seq_len, d_model) "
                                       "use batch_first=True" if x.dim() == 2 else ""))
        if isinstance(positions, torch.Tensor) and positions.dim() == 2:
            positions = positions.transpose(0, 1)  # (seq_len, batch) -> (batch, seq_len)
        return self._add(x.transpose(0, 1) if isinstance(x, torch.Tensor) else x, offset,
                         positions).transpose(0, 1)

    def _add(self, x, offset, positions) -> torch.Tensor:
        """``forward`` for a batch-first ``x`` of shape ``(..., seq_len, d_model)``."""
        _check_batch("x", x, "d_model")
        check_width(self.d_model, _concrete(x.shape[-1]))
        if positions is None:
            pe = self._rows(offset, x.shape[-2], x.dtype, x.device)
        elif isinstance(offset, torch.Tensor) or not (isinstance(offset, int) and offset == 0):
            raise ValueError("pass either offset or positions, not both")
        else:
            pe = self._rows_at(_check_positions(positions, _static_shape(x)[:-1]), x.dtype, x.device)
        out = x + pe
        if self.training and self.dropout.p > 0:
            out = self.dropout(out)
        return out

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, max_len={self.max_len}, base={self.base}"
                + ("" if self.batch_first else ", batch_first=False"))


# --- After sinusoids: learned absolute positions, rotary embeddings (RoPE), ALiBi biases -------
# The formulas live in posenc.relative (NumPy, float64); the classes below apply them to tensors.

from .relative import alibi_bias as _numpy_alibi_bias  # noqa: E402
from .relative import alibi_slopes as _numpy_alibi_slopes  # noqa: E402
from .relative import check_head_dim, check_layout  # noqa: E402


def _check_sequence(name: str, x, width_name: str, width: int) -> None:
    """Check that ``x`` is a floating-point tensor of shape ``(..., seq_len, width)``.

    Raises:
        TypeError: ``x`` is not a tensor, or not of a floating-point dtype.
        ValueError: ``x`` has fewer than 2 dimensions or its last dimension is not ``width``.
    """
    _check_batch(name, x, width_name)
    last = _concrete(x.shape[-1])
    if last != width:
        raise ValueError(
            f"{name}'s last dimension is {last} but {width_name}={width}; they must be equal"
        )


class LearnedPositionalEmbedding(nn.Module):
    """Adds a learned vector per position to a batch of embeddings (batch first), as BERT and GPT-2 do.

    Position ``pos`` owns row ``pos`` of an ``nn.Embedding(max_len, d_model)`` table, trained
    with the rest of the model. The table has no row past ``max_len - 1``: unlike the
    sinusoidal :class:`PositionalEncoding`, it cannot grow, and positions it never saw in
    training keep their initial random values, so a longer input is an error.

    Args:
        max_len: number of positions the table holds, an ``int >= 1``.
        d_model: width of the embeddings, an ``int >= 1``.
        dropout: probability of the dropout applied to the sum, in ``[0, 1]``; active only
            in training mode.

    Initialisation: normal with mean 0 and standard deviation 0.02, the N(0, 0.02) of
    Radford et al. 2018 (also ``initializer_range=0.02`` in the configurations of BERT
    and GPT-2).

    Shapes:
        ``forward(x, offset=0)``: ``x`` of shape ``(..., seq_len, d_model)``, any number of
        leading (batch) dimensions, floating-point dtype. The result has the shape, dtype and
        device of ``x``: ``dropout(x + E[offset : offset + seq_len])``, the same contract as
        :class:`PositionalEncoding`. The table ``E`` (``module.embedding.weight``) is a
        parameter in ``state_dict``; it is converted to the dtype of ``x`` before the sum.

    Shipping paths (each checked by ``tests/test_export.py`` on a fresh module, float32,
    CPU): ``torch.compile(fullgraph=True, dynamic=True)`` with the default inductor back
    end (no graph break), ``torch.export.export`` (strict and non-strict) with a dynamic
    ``seq_len``, ``torch.onnx.export`` with the dynamo and the legacy exporters (the legacy
    one makes ``offset`` a graph input), run by onnxruntime within 1e-5 of eager, and
    ``torch.jit.trace``. A learned table has no row past ``max_len - 1`` in any graph:
    with a traced length the graph checks ``offset + seq_len <= max_len`` when it runs.

    Raises:
        TypeError, ValueError: bad constructor arguments (``ValueError`` from ``nn.Dropout``
            for a probability outside ``[0, 1]``), or a bad input to :meth:`forward`.

    Source: Radford et al. 2018, "Improving Language Understanding by Generative
    Pre-Training" (GPT), section 4.1 (learned position embeddings instead of sinusoids);
    Devlin et al. 2019 (BERT), figure 2 (position embeddings summed with the token ones).
    """

    def __init__(self, max_len: int, d_model: int, *, dropout: float = 0.0) -> None:
        super().__init__()
        self.max_len = check_int("max_len", max_len, minimum=1)
        self.d_model = check_int("d_model", d_model, minimum=1)
        self.embedding = nn.Embedding(self.max_len, self.d_model)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=0.02)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, offset=0) -> torch.Tensor:
        """Return ``dropout(x + E[offset : offset + seq_len])``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, d_model)`` (batch first), on
                the device of the module's parameters.
            offset: position of ``x``'s first row, an ``int >= 0`` or a scalar integer
                tensor (inside a compiled, exported or traced graph a tensor offset is used
                without a value check: keep ``offset + seq_len <= max_len``).

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, or ``offset`` is not an integer
                (or integer tensor).
            ValueError: ``x`` has fewer than 2 dimensions, its last dimension is not
                ``d_model``, ``offset`` is negative or not a scalar, or
                ``offset + seq_len > max_len``.
        """
        _check_sequence("x", x, "d_model", self.d_model)
        device = self.embedding.weight.device
        seq_len = x.shape[-2]
        if isinstance(offset, torch.Tensor):
            offset = _check_tensor_offset(offset)
            if _tracing() or offset.device.type == "meta":  # no host sync: gather
                positions = offset.to(device) + torch.arange(seq_len, device=device)
                return self.dropout(x + self.embedding(positions).to(x.dtype))
            offset = int(offset)
        if torch.compiler.is_compiling():  # torch.compile, torch.export: a symbolic check
            end = offset + seq_len
            if torch.compiler.is_exporting():  # strict export takes no message (torch 2.13)
                torch._check(end <= self.max_len)
            else:  # fullgraph needs a message built from constants only
                message = (f"offset + seq_len runs past max_len={self.max_len}: a learned "
                           f"positional embedding has rows for positions 0 to "
                           f"{self.max_len - 1} only")
                torch._check(end <= self.max_len, lambda: message)
        else:
            offset = check_int("offset", offset)
            end = offset + _concrete(seq_len)
            if end > self.max_len:
                raise ValueError(
                    f"positions {offset} to {end - 1} (offset={offset}, seq_len={end - offset}) "
                    f"run past max_len={self.max_len}: a learned positional embedding has "
                    f"rows for positions 0 to {self.max_len - 1} only")
        positions = offset + torch.arange(seq_len, device=device)
        return self.dropout(x + self.embedding(positions).to(x.dtype))

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"


#: Axis orders of :class:`RotaryEmbedding`'s queries and keys.
AXES = ("bhsd", "bshd")


class RotaryEmbedding(_PositionTables):
    """Rotary position embedding (RoPE) of queries and keys, as :func:`posenc.rope` does in NumPy.

    Call it on the queries and keys of one attention layer, after their projections and
    before the scores: ``q, k = rotary(q, k)``, then ``scores = q @ k.transpose(-2, -1)``.
    The score of query position ``m`` with key position ``n`` then depends on ``m - n``
    only. Pair ``i`` of the vector at position ``pos`` is rotated by ``pos * base **
    (-2i / head_dim)``; ``layout`` says which coordinates form pair ``i``: ``(2i, 2i + 1)``
    for ``"interleaved"`` (RoFormer, GPT-J) or ``(i, i + head_dim / 2)`` for ``"half"``
    (GPT-NeoX, Llama in Hugging Face ``transformers``). Weights trained with one layout
    give other scores with the other.

    The module has no parameters and nothing in ``state_dict``. Its table holds, for
    positions 0 to ``max_len - 1``, the sine (even columns) and cosine (odd columns) of
    every angle: the sinusoidal encoding of width ``head_dim``, computed in float64 with
    the same angles as :func:`posenc.rope` and rounded once to the working dtype (float64
    for float64 inputs, float32 otherwise: float16 and bfloat16 inputs are rotated in
    float32 and the result rounded to their dtype), on the input's device, cached per
    (dtype, device) like :class:`PositionalEncoding`'s, with the same growth in eager calls
    and the same rows computed past it inside compiled, exported and traced graphs. In eager
    calls the rotations use each angle's float32 (or float64) cosine and sine, exact to that
    dtype at any position up to ``2**53``; rows computed in a graph are within
    ``2**-20 + pos * 2**-52`` of them.

    Args:
        head_dim: width of each head's query and key vectors, an even ``int >= 2``.
        max_len: number of positions computed up front, an ``int >= 0`` (default 5000);
            it grows when needed in eager calls; inside ``torch.compile``,
            ``torch.export``, ``torch.jit.trace`` and the ONNX exporters rows past it are
            computed in the graph.
        base: the constant of the frequencies (10000 in RoFormer), a finite ``float > 1``.
        layout: ``"interleaved"`` (default) or ``"half"``: which coordinates form a pair.
        axes: keyword only, the order of the axes of ``q`` and ``k``: ``"bhsd"`` (default,
            ``(batch, heads, seq_len, head_dim)``, the sequence on axis -2; also any
            ``(..., seq_len, head_dim)``) or ``"bshd"`` (``(batch, seq_len, heads,
            head_dim)``, the sequence on axis -3).

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

    Shipping paths (each checked by ``tests/test_export.py`` on a fresh module, float32,
    CPU): ``torch.compile(fullgraph=True, dynamic=True)`` with the default inductor back
    end (no graph break), ``torch.export.export`` (strict and non-strict) with a dynamic
    ``seq_len``, ``torch.onnx.export`` with the dynamo and the legacy exporters, run by
    onnxruntime within 1e-5 of eager, and ``torch.jit.trace``. The legacy exporter passes
    every argument of ``forward``: ``offset`` becomes an input of the ONNX graph (feed 0).
    Any length, offset or positions work in those graphs: rows of the table of
    ``max_len`` rows are looked up, rows past it are computed in the graph within
    ``2**-20 + pos * 2**-52`` of eager (see :mod:`posenc._digits`).

    Raises:
        TypeError, ValueError: bad constructor arguments (see :func:`posenc.rope`) or a bad
            input to :meth:`rotate` / :meth:`forward`.

    Source: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
    Embedding", sections 3.2 and 3.4.2; the half layout from Black et al. 2022 (GPT-NeoX).
    """

    def __init__(self, head_dim: int, max_len: int = 5000, *, base: float = 10000.0,
                 layout: str = "interleaved", axes: str = "bhsd") -> None:
        head_dim = check_head_dim("head_dim", head_dim)
        super().__init__(head_dim, max_len, base)
        self.head_dim = head_dim
        self.layout = check_layout(layout)
        if not isinstance(axes, str) or axes not in AXES:
            raise (TypeError if not isinstance(axes, str) else ValueError)(
                f"axes must be 'bhsd' (batch, heads, seq_len, head_dim) or 'bshd' (batch, "
                f"seq_len, heads, head_dim), got {type(axes).__name__} {axes!r}")
        self.axes = axes
        self._prepare(torch.float32, torch.device("cpu"))  # ready before any tracing

    def _table_dtype(self, dtype: torch.dtype) -> torch.dtype:
        return torch.float64 if dtype == torch.float64 else torch.float32

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
                + ("" if self.axes == "bhsd" else f", axes={self.axes!r}"))


class ALiBi(_PositionTables):
    """ALiBi's attention bias as a module: adds ``-slope[h] * |i - j|`` to attention scores.

    A traceable replacement for :func:`alibi_bias` inside a model's ``forward``. The module
    keeps, per (dtype, device), a table of the bias at every distance ``0 .. max_len - 1``
    for every head (``-slope[h] * distance``, computed in float64 and rounded once, so each
    entry is the value of the dtype nearest to :func:`posenc.alibi_bias`); the bias of a
    sequence is a gather of that table by the distance matrix, a tensor computation that
    follows a dynamic sequence length. Nothing enters ``state_dict``.

    Queries and keys: with ``q_len`` queries and ``k_len`` keys (``q_len <= k_len`` with a
    KV cache), query ``i`` is at position ``k_len - q_len + i`` and key ``j`` at position
    ``j``: the queries are the last ``q_len`` positions. For ``q_len == k_len`` the bias is
    that of :func:`posenc.alibi_bias`. A causal model also masks the keys after each query.

    Args:
        n_heads: number of attention heads, an ``int >= 1``.
        max_len: longest sequence prepared up front, an ``int >= 0`` (default 5000); it
            grows in eager calls; inside ``torch.compile``, ``torch.export``,
            ``torch.jit.trace`` and the ONNX exporters the bias at longer distances is
            computed in the graph (``-slope * distance`` in float32, within two units in
            the last place).

    Shapes:
        ``forward(scores)``: ``scores`` of shape ``(..., n_heads, q_len, k_len)``,
        floating-point; returns ``scores + bias`` with the same shape, dtype and device.
        :meth:`bias` returns the bias alone, ``(n_heads, q_len, k_len)``, e.g. for the
        ``attn_mask`` of ``torch.nn.functional.scaled_dot_product_attention``.

    Shipping paths (each checked by ``tests/test_export.py`` on a fresh module, float32,
    CPU): ``torch.compile(fullgraph=True, dynamic=True)`` with the default inductor back
    end (no graph break), ``torch.export.export`` (strict and non-strict) with dynamic
    ``q_len`` and ``k_len``, ``torch.onnx.export`` with the dynamo and the legacy
    exporters, run by onnxruntime within 1e-5 of eager, and ``torch.jit.trace``; any
    length in each.

    Raises:
        TypeError, ValueError: bad constructor arguments or a bad input to :meth:`forward`.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long", ICLR, section 3; slopes
    from :func:`posenc.alibi_slopes`.
    """

    def __init__(self, n_heads: int, max_len: int = 5000) -> None:
        self.n_heads = check_int("n_heads", n_heads, minimum=1)
        super().__init__(self.n_heads, max_len, 10000.0)  # base unused: no sinusoids
        self._slopes = _numpy_alibi_slopes(self.n_heads)
        self._prepare(torch.float32, torch.device("cpu"))  # ready before any tracing

    def _values_at(self, distances: np.ndarray) -> np.ndarray:
        return 0.0 - distances.astype(np.float64)[..., np.newaxis] * self._slopes  # no -0.0

    def bias(self, q_len, k_len=None, *, dtype: torch.dtype = torch.float32, device=None
             ) -> torch.Tensor:
        """The bias for ``q_len`` queries and ``k_len`` keys (default ``k_len = q_len``).

        Args:
            q_len, k_len: numbers of queries and keys, ``int >= 0`` (or a traced size).
            dtype: a floating-point ``torch.dtype`` (default ``torch.float32``).
            device: where to put the result (``None``: the CPU).

        Returns:
            Tensor of shape ``(n_heads, q_len, k_len)``: entry ``[h, i, j]`` is
            ``-slope[h] * |k_len - q_len + i - j|``, the value of ``dtype`` nearest to the
            float64 one.

        Raises:
            TypeError: ``dtype`` is not a floating-point torch dtype, or a length is not
                an integer.
            ValueError: a length is negative.
        """
        dtype = _check_dtype(dtype)
        device = torch.device(device if device is not None else "cpu")
        k_len = q_len if k_len is None else k_len
        for name, n in (("q_len", q_len), ("k_len", k_len)):
            if not isinstance(n, (torch.SymInt, torch.Tensor)):
                check_int(name, n)
        query_positions = (k_len - q_len) + torch.arange(q_len, device=device)
        distances = (query_positions[:, None] - torch.arange(k_len, device=device)).abs()
        return self._rows_at(distances, dtype, device).permute(2, 0, 1)

    @torch.compiler.disable  # host (NumPy) work: never traced
    def _compute_far_constants(self, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return torch.from_numpy(self._slopes).to(device=device, dtype=dtype)

    def _far_rows(self, distances: torch.Tensor, dtype, device) -> torch.Tensor:
        """``-slope[h] * distance`` computed in the graph (float32 or float64): within two
        units in the last place of the float64 value for distances below ``2**24``."""
        slopes = self._far_constants(dtype, device)
        work = distances.to(slopes.dtype)[..., None]
        return (0.0 - work * slopes).to(dtype)

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        """Return ``scores + bias(q_len, k_len)``; see the class docstring.

        Args:
            scores: floating-point tensor of shape ``(..., n_heads, q_len, k_len)``.

        Returns:
            Tensor of the same shape, dtype and device.

        Raises:
            TypeError: ``scores`` is not a floating-point tensor.
            ValueError: ``scores`` has fewer than 3 dimensions or its third-to-last is not
                ``n_heads``.
        """
        if not isinstance(scores, torch.Tensor) or not scores.is_floating_point():
            raise TypeError(
                "scores must be a floating-point torch.Tensor of shape (..., n_heads, q_len, "
                f"k_len), got {type(scores).__name__}"
                + (f" of dtype {scores.dtype}" if isinstance(scores, torch.Tensor) else ""))
        if scores.dim() < 3 or _concrete(scores.shape[-3]) != self.n_heads:
            raise ValueError(
                f"scores must have shape (..., n_heads, q_len, k_len) with n_heads="
                f"{self.n_heads}, got shape {_static_shape(scores)}")
        return scores + self.bias(scores.shape[-2], scores.shape[-1], dtype=scores.dtype,
                                  device=scores.device)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, max_len={self.max_len}"


def alibi_bias(
    seq_len: int, n_heads: int, *, dtype: torch.dtype = torch.float32, device=None
) -> torch.Tensor:
    """ALiBi's attention bias as a tensor, ready to add to the scores or pass as a float mask.

    ``torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)`` with ``q``
    of shape ``(batch, n_heads, seq_len, head_dim)`` adds it to every batch. For a causal
    model, also mask the keys after each query (``bias.masked_fill(future, -inf)`` with
    ``future = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)``).

    This function computes on the host with NumPy, for eager code. In a ``forward`` that is
    exported (``torch.export``, the dynamo ONNX exporter) with a dynamic length it cannot
    follow the length and refuses the traced size with a ``TypeError`` (tested with
    ``torch.export``); use the module :class:`ALiBi` in ``forward``.

    Args:
        seq_len: number of positions, an ``int >= 0``.
        n_heads: number of attention heads, an ``int >= 1``.
        dtype: a floating-point ``torch.dtype`` for the result (default ``torch.float32``).
        device: where to put the result (``None``: the CPU).

    Returns:
        Tensor of shape ``(n_heads, seq_len, seq_len)``: entry ``[h, i, j]`` is
        ``-slope[h] * |i - j|`` (see :func:`posenc.alibi_bias` and
        :func:`posenc.alibi_slopes`), each the value of ``dtype`` nearest to the float64 one.

    Raises:
        TypeError: wrong argument types (a traced length included), or ``dtype`` is not a
            floating-point torch dtype.
        ValueError: ``seq_len < 0`` or ``n_heads < 1``.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long", ICLR, section 3.
    """
    if isinstance(seq_len, (torch.SymInt, torch.Tensor)):
        raise TypeError(
            f"seq_len is a traced size ({type(seq_len).__name__}): alibi_bias computes on the "
            f"host with NumPy and cannot follow a length that is only known when the graph "
            f"runs; use the module posenc.pytorch.ALiBi(n_heads, max_len) in forward")
    _check_dtype(dtype)
    return _from_float64(_numpy_alibi_bias(seq_len, n_heads), dtype, device)
