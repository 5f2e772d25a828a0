"""The sinusoidal positional encoding for PyTorch: a tensor factory and an ``nn.Module``.

The values come from :func:`posenc.positional_encoding` (angles in float64, cast once), so
they equal the NumPy version.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._validate import check_dropout, check_int, check_width, keyword_max_len
from ..encoding import positional_encoding as _numpy_positional_encoding
from ._tables import (
    _check_batch, _check_dtype, _check_positions, _concrete, _from_float64, _PositionTables,
    _static_shape,
)


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



#: Tolerance, per position ``pos``, of a checkpoint's ``pe`` table: ``(pos + 1) * 2**-21``.
#: Tables of the PyTorch tutorial and of the common snippet compute their angles in
#: float32 (a few roundings of relative size ``2**-24`` each, on angles up to ``pos``
#: radians); measured, they differ from the float64 encoding by at most about
#: ``1.3 * 2**-24 * (pos + 1)`` for widths 6 to 512, so this bound leaves a margin of 6.
LOADED_TABLE_TOLERANCE = 2.0**-21


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
        max_len: keyword only (``PositionalEncoding(d_model, max_len=...)``), the number of
            positions computed up front, an ``int >= 0`` (default 5000, at most
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

    Shipping paths (each checked by the project's tests on a fresh module, float32,
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
        TypeError, ValueError: bad constructor arguments (see :func:`positional_encoding`;
            a positional ``max_len`` is a ``TypeError`` saying what to write) or a bad input
            to ``forward`` (see :meth:`forward`).

    Source: Vaswani et al. 2017, section 3.5 (encoding, and dropout on the sum in 5.4).
    """

    @keyword_max_len
    def __init__(
        self,
        d_model: int,
        *,
        max_len: int = 5000,
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

