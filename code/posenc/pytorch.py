"""Sinusoidal positional encoding for PyTorch: a tensor factory and an ``nn.Module``.

Importing this module imports ``torch``. The values come from
:func:`posenc.positional_encoding` (angles in float64, cast once), so they equal the
NumPy version.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import check_base, check_int, check_width
from .encoding import float32_round_to_odd
from .encoding import positional_encoding as _numpy_positional_encoding


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
        base: the constant of the formula (10000 in the paper), a finite ``float > 0``.
        offset: position of the first row, an ``int >= 0``.
        dtype: a floating-point ``torch.dtype`` for the result (default ``torch.float32``).
        device: where to put the result (``None``: the CPU).

    Returns:
        Tensor of shape ``(seq_len, d_model)``; row ``r`` encodes position ``offset + r``.
        See :func:`posenc.positional_encoding` for the formula. Every entry is the value
        of ``dtype`` nearest to the float64 result (float16 and bfloat16 included).

    Raises:
        TypeError: wrong argument types, or ``dtype`` is not a floating-point torch dtype.
        ValueError: negative ``seq_len``/``offset``, ``d_model < 1``, bad ``base``.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    table = _numpy_positional_encoding(seq_len, d_model, base=base, offset=offset)
    if dtype.itemsize < 4:  # PyTorch would go through float32 and could round twice
        table = float32_round_to_odd(table)
    return torch.from_numpy(table).to(device=device, dtype=dtype)


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal positional encoding to a batch of embeddings (batch first).

    The table of positions is computed in float64 and rounded once to the dtype of the
    input, on the input's device, the first time that dtype/device pair is seen; it is
    then cached, so later calls only slice and add. Any input dtype keeps its full
    precision (a float64 input gets a float64 table), whatever ``module.to(dtype)`` was
    called before, and the module works on any device without ``.to(device)``.

    The table is not a parameter nor a buffer, so it never enters ``state_dict``: it is
    fully determined by ``d_model`` and ``base``. (A registered buffer would follow
    ``module.half()`` and keep only float16 precision ever after.) An input longer than
    ``max_len``, or an ``offset`` that runs past it, grows the table (to at least twice
    its length) instead of failing, as fairseq's sinusoidal embedding does.

    Args:
        d_model: width of the embeddings, an ``int >= 1``.
        max_len: number of positions computed up front, an ``int >= 0``; it grows when
            needed (read ``module.max_len`` for the current length).
        base: the constant of the formula (10000 in the paper), a finite ``float > 0``.
        dropout: probability of the dropout applied to the sum, in ``[0, 1]``
            (the paper uses 0.1); active only in training mode.

    Shapes:
        ``forward(x, offset=0)``: ``x`` of shape ``(..., seq_len, d_model)``, any number
        of leading (batch) dimensions, floating-point dtype. The result has the shape,
        dtype and device of ``x``: ``dropout(x + PE[offset : offset + seq_len])``.

    Compilation: ``torch.compile`` and ``torch.export`` work (the cached table becomes a
    constant of the graph). ``torch.jit.script`` does not: the cache is a Python dict
    filled by NumPy code, which TorchScript cannot type; TorchScript is deprecated in
    favour of ``torch.compile`` and ``torch.export``.

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
        self.base = check_base(base)
        self.dropout = nn.Dropout(dropout)
        self._tables: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
        self.table()  # the common case, float32 on the CPU, ready before any tracing

    def table(self, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
        """The cached ``(max_len, d_model)`` table in ``dtype`` on ``device``.

        Args:
            dtype: a floating-point ``torch.dtype``.
            device: a ``torch.device`` or its name (``None``: the CPU).

        Returns:
            Tensor of shape ``(max_len, d_model)``; computed on the first request for
            this dtype and device, then returned from the cache.

        Raises:
            TypeError: ``dtype`` is not a floating-point torch dtype.
        """
        key = (dtype, torch.device(device if device is not None else "cpu"))
        table = self._tables.get(key)
        if table is None:
            table = positional_encoding(self.max_len, self.d_model, base=self.base,
                                        dtype=dtype, device=key[1])
            self._tables[key] = table
        return table

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Return ``dropout(x + PE[offset : offset + seq_len])``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, d_model)`` (batch first).
            offset: position of ``x``'s first row, an ``int >= 0`` (e.g. the number of
                tokens already decoded when feeding one token at a time).

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, or ``offset`` is not an int.
            ValueError: ``x`` has fewer than 2 dimensions, or its last dimension is not
                ``d_model``.
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
        offset = check_int("offset", offset)
        check_width(self.d_model, x.shape[-1])
        end = offset + x.shape[-2]
        if end > self.max_len:
            self.max_len = max(end, 2 * self.max_len)
            self._tables.clear()
        out = x + self.table(x.dtype, x.device)[offset:end]
        if self.training and self.dropout.p > 0:
            out = self.dropout(out)
        return out

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base}"
