"""Sinusoidal positional encoding for PyTorch: a tensor factory and an ``nn.Module``.

Importing this module imports ``torch``. The values come from
:func:`posenc.positional_encoding` (angles in float64, cast once), so they equal the
NumPy version.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch
from torch import nn

from ._validate import MAX_POSITION, check_base, check_dropout, check_int, check_window, check_width
from .encoding import encoding_at, float32_round_to_odd
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


def _check_positions(positions, batch_shape) -> torch.Tensor:
    """Check explicit positions against the input's leading shape ``(..., seq_len)``."""
    if (not isinstance(positions, torch.Tensor) or positions.dtype == torch.bool
            or positions.is_floating_point() or positions.is_complex()):
        raise TypeError(
            "positions must be an integer torch.Tensor of shape (..., seq_len), got "
            + (f"a tensor of dtype {positions.dtype}" if isinstance(positions, torch.Tensor)
               else type(positions).__name__)
        )
    shape = tuple(positions.shape)
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


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal positional encoding to a batch of embeddings (batch first).

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
    - Growth (below) changes the module's state inside ``forward``.

    Longer inputs: a window ``offset .. offset + seq_len - 1`` that runs past ``max_len``
    grows the table (to at least twice its length), as fairseq's sinusoidal embedding
    does, if the window starts inside the table or fits in twice its length. A window
    further away (say ``offset=2**40`` while decoding) is computed on its own, leaving the
    table as it is. State changes only once the new table exists: a call that fails
    (e.g. MemoryError) leaves the module as it was. Positions go up to ``2**53``; for the
    accuracy as a function of position see :func:`posenc.positional_encoding`.

    Args:
        d_model: width of the embeddings, an ``int >= 1``.
        max_len: number of positions computed up front, an ``int >= 0`` (at most
            ``2**53``); it grows when needed (read ``module.max_len`` for the current length).
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        dropout: probability of the dropout applied to the sum, a real number in
            ``[0, 1]`` (the paper uses 0.1); active only in training mode.

    Shapes:
        ``forward(x, offset=0, *, positions=None)``: ``x`` of shape
        ``(..., seq_len, d_model)``, any number of leading (batch) dimensions,
        floating-point dtype. The result has the shape, dtype and device of ``x``:
        ``dropout(x + PE[offset : offset + seq_len])``, or ``dropout(x + PE[positions])``.

    Compilation: ``torch.compile`` and ``torch.export`` work (the cached table becomes a
    constant of the graph). Inside ``torch.compile`` a tensor ``offset`` or
    ``positions`` is looked up in the existing table without any check (a value check
    would need the data on the host): keep them below ``max_len``. ``torch.jit.script``
    does not work: the cache is a Python dict filled by NumPy code, which TorchScript
    cannot type; TorchScript is deprecated in favour of ``torch.compile`` and ``torch.export``.

    Raises:
        TypeError, ValueError: bad constructor arguments (see :func:`positional_encoding`)
            or a bad input to ``forward`` (see :meth:`forward`).

    Source: Vaswani et al. 2017, section 3.5 (encoding, and dropout on the sum in 5.4).
    """

    def __init__(
        self, d_model: int, max_len: int = 5000, *, base: float = 10000.0, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.d_model = check_int("d_model", d_model, minimum=1)
        self.max_len = check_int("max_len", max_len)
        check_window(0, self.max_len)
        self.base = check_base(base)
        self.dropout = nn.Dropout(check_dropout(dropout))
        self._tables: OrderedDict[tuple[torch.dtype, torch.device], torch.Tensor] = OrderedDict()
        self.table()  # the common case, float32 on the CPU, ready before any tracing

    def _compute(self, length: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return positional_encoding(length, self.d_model, base=self.base, dtype=dtype, device=device)

    def _keep(self, key, table: torch.Tensor) -> None:
        self._tables[key] = table
        while len(self._tables) > CACHE_SIZE:
            self._tables.popitem(last=False)  # the least recently used

    def table(self, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        """The cached ``(max_len, d_model)`` table in ``dtype`` on ``device``.

        Args:
            dtype: a floating-point ``torch.dtype``.
            device: a ``torch.device`` or its name (``None``: the CPU).

        Returns:
            Tensor of shape ``(max_len, d_model)``; computed on the first request for
            this dtype and device (on the host, then copied), then returned from the cache.

        Raises:
            TypeError: ``dtype`` is not a floating-point torch dtype.
        """
        key = (_check_dtype(dtype), torch.device(device if device is not None else "cpu"))
        table = self._tables.get(key)
        if table is None:
            table = self._compute(self.max_len, *key)
            self._keep(key, table)
        elif not torch.compiler.is_compiling():
            self._tables.move_to_end(key)
        return table

    def _apply(self, fn, recurse=True):
        """``.to()``, ``.cuda()``, ``.half()``, ...: prepare the table they target."""
        result = super()._apply(fn, recurse)
        # What the call does to a float32 CPU tensor says which dtype and device it targets.
        probe = fn(torch.zeros((), dtype=torch.float32))
        if isinstance(probe, torch.Tensor) and probe.is_floating_point():
            key = (probe.dtype, probe.device)
            table = self._tables.get(key)
            if table is None:
                table = self._compute(self.max_len, *key)
            self._tables.clear()
            self._tables[key] = table
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
        self._tables[(dtype, device)] = table
        return True

    def _rows(self, offset, seq_len: int, dtype, device) -> torch.Tensor:
        """Rows for positions ``offset .. offset + seq_len - 1``, shape ``(seq_len, d_model)``."""
        if isinstance(offset, torch.Tensor):
            offset = _check_tensor_offset(offset)
            if torch.compiler.is_compiling() or offset.device.type == "meta":  # no host sync
                positions = offset.to(device) + torch.arange(seq_len, device=device)
                return self.table(dtype, device)[positions]
            offset = int(offset)  # eager: same path, same values as a Python int
        offset = check_int("offset", offset)
        check_window(offset, seq_len)
        end = offset + seq_len
        if not self._ensure(offset, end, dtype, device):
            return _from_float64(encoding_at(np.arange(offset, end), self.d_model, self.base),
                                 dtype, device)
        return self.table(dtype, device)[offset:end]

    def _rows_at(self, positions: torch.Tensor, dtype, device) -> torch.Tensor:
        """Rows for explicit positions, shape ``positions.shape + (d_model,)``."""
        positions = positions.to(device)
        if (positions.numel() and not torch.compiler.is_compiling()
                and positions.device.type != "meta"):
            low, high = int(positions.min()), int(positions.max())
            if low < 0:
                raise ValueError(f"positions must be >= 0, got a minimum of {low}")
            if high >= MAX_POSITION:
                raise ValueError(
                    f"positions must be < 2**53 = {MAX_POSITION} (float64 holds every "
                    f"position below it exactly), got a maximum of {high}"
                )
            if not self._ensure(low, high + 1, dtype, device):
                values = encoding_at(positions.cpu().numpy(), self.d_model, self.base)
                return _from_float64(values, dtype, device)
        return self.table(dtype, device)[positions]

    def forward(self, x: torch.Tensor, offset=0, *, positions: torch.Tensor | None = None
                ) -> torch.Tensor:
        """Return ``dropout(x + PE[offset : offset + seq_len])`` or ``dropout(x + PE[positions])``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, d_model)`` (batch first).
            offset: position of ``x``'s first row (e.g. the number of tokens already
                decoded when feeding one token at a time): an ``int >= 0`` or a scalar
                integer tensor (same results; a tensor avoids recompiling per value under
                ``torch.compile``), with ``offset + seq_len <= 2**53``.
            positions: keyword only, instead of ``offset``: an integer tensor of shape
                ``(..., seq_len)`` broadcastable to ``x.shape[:-1]``, the position of
                every token, each in ``[0, 2**53)``. For left-padded batches (count
                positions from each sequence's first real token) and packed sequences
                (restart at 0 for each sequence), as Hugging Face's ``position_ids``.

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, ``offset`` is not an integer
                (or integer tensor), or ``positions`` is not an integer tensor.
            ValueError: ``x`` has fewer than 2 dimensions, its last dimension is not
                ``d_model``, ``offset`` is negative or not a scalar, the positions
                reach past ``2**53`` or are negative, ``positions`` has the wrong shape,
                or both ``offset`` and ``positions`` are given.
        """
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(
                "x must be a floating-point torch.Tensor of shape (..., seq_len, d_model), "
                f"got {type(x).__name__}"
                + (f" of dtype {x.dtype}" if isinstance(x, torch.Tensor) else "")
            )
        if x.dim() < 2:
            raise ValueError(
                f"x must have shape (..., seq_len, d_model) with at least 2 dimensions, "
                f"got shape {tuple(x.shape)}"
            )
        check_width(self.d_model, x.shape[-1])
        if positions is None:
            pe = self._rows(offset, x.shape[-2], x.dtype, x.device)
        elif isinstance(offset, torch.Tensor) or not (isinstance(offset, int) and offset == 0):
            raise ValueError("pass either offset or positions, not both")
        else:
            pe = self._rows_at(_check_positions(positions, tuple(x.shape[:-1])), x.dtype, x.device)
        out = x + pe
        if self.training and self.dropout.p > 0:
            out = self.dropout(out)
        return out

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base}"
