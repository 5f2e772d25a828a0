"""Sinusoidal positional encoding for PyTorch: a tensor factory and an ``nn.Module``.

Importing this module imports ``torch``. The values come from
:func:`posenc.positional_encoding` (angles in float64, cast once), so they equal the
NumPy version.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import check_base, check_fits, check_int, check_width
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
        See :func:`posenc.positional_encoding` for the formula.

    Raises:
        TypeError: wrong argument types, or ``dtype`` is not a floating-point torch dtype.
        ValueError: negative ``seq_len``/``offset``, ``d_model < 1``, bad ``base``.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    table = _numpy_positional_encoding(seq_len, d_model, base=base, offset=offset)
    return torch.from_numpy(table).to(device=device, dtype=dtype)


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal positional encoding to a batch of embeddings (batch first).

    The table of ``max_len`` positions is computed once, in float64 and cast to
    float32, and kept as a non-persistent buffer: it moves with ``.to(device)`` but is
    not written to ``state_dict`` (it is fully determined by ``d_model``, ``max_len``
    and ``base``, so checkpoints stay small and load into modules of any ``max_len``).

    Args:
        d_model: width of the embeddings, an ``int >= 1``.
        max_len: number of positions in the table, an ``int >= 0``.
        base: the constant of the formula (10000 in the paper), a finite ``float > 0``.
        dropout: probability of the dropout applied to the sum, in ``[0, 1]``
            (the paper uses 0.1); active only in training mode.

    Shapes:
        ``forward(x, offset=0)``: ``x`` of shape ``(..., seq_len, d_model)``, any number
        of leading (batch) dimensions, floating-point dtype. The result has the shape
        and dtype of ``x``: ``dropout(x + PE[offset : offset + seq_len])``.

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
        self.register_buffer(
            "pe", positional_encoding(self.max_len, self.d_model, base=self.base), persistent=False
        )

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
            ValueError: ``x`` has fewer than 2 dimensions, its last dimension is not
                ``d_model``, or ``offset + seq_len > max_len``.
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
        seq_len = x.shape[-2]
        check_width(self.d_model, x.shape[-1])
        check_fits(offset, seq_len, self.max_len)
        pe = self.pe[offset : offset + seq_len].to(dtype=x.dtype)
        return self.dropout(x + pe)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base}"
