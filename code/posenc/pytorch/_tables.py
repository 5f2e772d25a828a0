"""The machinery shared by the PyTorch modules: argument checks and cached position tables.

:class:`_PositionTables` keeps, per (dtype, device), a table with one row per position and
computes the rows past it, eagerly on the host or inside a graph; the sinusoidal encoding
(:mod:`posenc.pytorch.sinusoidal`), the rotary embedding (:mod:`posenc.pytorch.rotary`) and
ALiBi (:mod:`posenc.pytorch.alibi`) are its subclasses. The helpers check tensors and offsets
for every module of :mod:`posenc.pytorch`. Private: the public names are in
:mod:`posenc.pytorch`.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections import OrderedDict

import numpy as np
import torch
from torch import nn

from .._digits import compose, digit_count, digit_steps, digit_table
from .._validate import check_base, check_int, check_position_range, check_window
from ..encoding import angular_frequencies, float32_round_to_odd, sines_and_cosines_at


def _check_dtype(dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def _host(fn):
    """Decorate host (NumPy) work: ``fn`` runs as ordinary Python, never traced by
    ``torch.compile`` or ``torch.export``. It is ``torch.compiler.disable(fn)``, applied when a
    trace reaches ``fn``: the decorator itself imports Dynamo, about a second of CPU on import
    of this package that eager use never needs."""
    @functools.wraps(fn)
    def host(*args, **kwargs):
        if torch.compiler.is_compiling():
            return torch.compiler.disable(fn)(*args, **kwargs)
        return fn(*args, **kwargs)
    return host


@_host
def _from_float64(values: np.ndarray, dtype: torch.dtype, device) -> torch.Tensor:
    """Float64 values as a tensor of ``dtype`` on ``device``, each the nearest value of ``dtype``."""
    if dtype.itemsize < 4:  # PyTorch would go through float32 and could round twice
        values = float32_round_to_odd(values)
    return torch.from_numpy(values).to(device=device, dtype=dtype)



#: How many (dtype, device) tables a module keeps: the most recently used ones.
CACHE_SIZE = 3


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


def _check_x_and_ids(x, position_ids, shapes: str) -> None:
    """The arguments of a ``transformers``-style rotary ``forward(x, position_ids)``
    (:class:`~posenc.pytorch.HFRotaryEmbedding`, :class:`~posenc.pytorch.HFMultimodalRotaryEmbedding`):
    ``x`` a floating-point tensor (only its dtype and device are read), ``position_ids`` an
    integer tensor; ``shapes`` names the shapes the caller takes, for the message."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point torch.Tensor (its dtype and device are "
                        f"read), got {type(x).__name__}"
                        + (f" of dtype {x.dtype}" if isinstance(x, torch.Tensor) else ""))
    if (not isinstance(position_ids, torch.Tensor) or position_ids.dtype == torch.bool
            or position_ids.is_floating_point() or position_ids.is_complex()):
        raise TypeError(f"position_ids must be an integer torch.Tensor{shapes}, got "
                        + (f"a tensor of dtype {position_ids.dtype}"
                           if isinstance(position_ids, torch.Tensor)
                           else type(position_ids).__name__))


def _half_layout(sin: torch.Tensor, cos: torch.Tensor, factor: float, dtype: torch.dtype):
    """``(cos, sin)`` as ``transformers``' rotary modules return them: each pair's value twice,
    ``torch.cat((angles, angles), -1)`` (the half layout), times the attention factor (YaRN's),
    in ``dtype``."""
    cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    if factor != 1.0:
        cos, sin = cos * factor, sin * factor
    return cos.to(dtype), sin.to(dtype)


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
    faster compilation). Marked now if Dynamo is loaded; else a trace marks it when it reads
    it (:func:`_traced`), so that eager use never imports Dynamo."""
    if "torch._dynamo" in sys.modules:
        torch._dynamo.mark_static(tensor)
    return tensor


def _traced(tensor: torch.Tensor) -> torch.Tensor:
    """A cached table as ``forward`` reads it: inside a Dynamo trace, marked static there
    (``mark_static`` in a graph makes the sizes static), for a table cached before Dynamo
    was loaded."""
    if torch.compiler.is_dynamo_compiling():
        torch._dynamo.mark_static(tensor)
    return tensor



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



class _PositionTables(nn.Module):
    """Tables with one row per position (``max_len`` rows, ``width`` columns), cached per
    (dtype, device): the machinery shared by :class:`posenc.pytorch.PositionalEncoding`,
    :class:`posenc.pytorch.RotaryEmbedding` and :class:`posenc.pytorch.ALiBi`.

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
        # The tables graphs read, per (dtype, device): fixed when first prepared, so that an
        # eager call that grows ``_tables`` (and ``max_len``) does not invalidate the guards
        # of graphs compiled before it (each would recompile, up to torch's limit of 8).
        self._graph_tables: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}

    def _column_frequencies(self) -> np.ndarray:
        """The float64 angular frequency of every column, shape ``(width,)``: here those of
        the sinusoidal encoding (the two columns of a pair share theirs)."""
        return angular_frequencies(self._width, base=self.base)

    def _values_at(self, positions: np.ndarray) -> np.ndarray:
        """Float64 rows for integer positions: shape ``positions.shape + (width,)``."""
        return sines_and_cosines_at(positions, self._column_frequencies())

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
        return _traced(table)

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
        if isinstance(constants, tuple):
            return tuple(_traced(tensor) for tensor in constants)
        return _traced(constants)

    @_host
    def _compute_far_constants(self, dtype: torch.dtype, device: torch.device) -> tuple:
        frequencies = self._column_frequencies()[0::2]
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

    def _graph_table(self, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """The table graphs of ``dtype`` on ``device`` read: the first one prepared (or, if
        none was, the current one), kept when eager calls grow the table later."""
        key = (dtype, device)
        table = self._graph_tables.get(key)
        if table is None:
            table = self._graph_tables[key] = self.table(dtype, device)
        return _traced(table)

    def _prepare(self, dtype: torch.dtype, device: torch.device) -> None:
        """Compute the tables a graph of ``dtype`` on ``device`` will use, before tracing."""
        self._graph_table(dtype, device)
        self._far_constants(dtype, device)

    def _prepared_dtypes(self, dtype: torch.dtype) -> tuple:
        """The table dtypes prepared for graphs when the module is moved to ``dtype``: here
        that of ``dtype`` only."""
        return (self._table_dtype(dtype),)

    def _apply(self, fn, recurse=True):
        """``.to()``, ``.cuda()``, ``.half()``, ...: prepare the tables they target."""
        result = super()._apply(fn, recurse)
        # What the call does to a float32 CPU tensor says which dtype and device it targets.
        probe = fn(torch.zeros((), dtype=torch.float32))
        if isinstance(probe, torch.Tensor) and probe.is_floating_point():
            # the target's dtype last: the most recently used table of the cache
            keys = [(dtype, probe.device) for dtype in self._prepared_dtypes(probe.dtype)][::-1]
            tables = {key: self._tables.get(key) for key in keys}
            tables = {key: self._compute(self.max_len, *key) if table is None else table
                      for key, table in tables.items()}
            self._tables.clear()
            self._far_tables.clear()
            self._graph_tables.clear()
            for key in keys:
                self._keep(key, tables[key])
                self._prepare(*key)
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
        """Rows for integer positions inside a graph: the graph table's row below its length,
        the row computed in the graph from there on; shape ``positions.shape + (width,)``.
        The graph table (:meth:`_graph_table`) does not follow eager growth, so neither does
        a compiled graph's guard."""
        far = self._far_rows(positions, dtype, device)
        table = self._graph_table(dtype, device)
        rows = _concrete(table.shape[0])  # a constant: torch.jit.trace gives a 0-d tensor
        if rows == 0:
            return far
        inside = table[positions.clamp(0, rows - 1)]
        return torch.where((positions < rows)[..., None], inside, far)

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

