"""ALiBi for PyTorch: linear biases of the attention scores, as a module and as a tensor.

The slopes and the bias live in :mod:`posenc.relative` (NumPy, float64); the module and the
function apply them to tensors.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validate import check_int, check_real, keyword_max_len
from ..relative import alibi_bias as _numpy_alibi_bias
from ..relative import alibi_slopes as _numpy_alibi_slopes
from ._tables import _check_dtype, _concrete, _from_float64, _host, _PositionTables, _static_shape


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
        max_len: keyword only (``ALiBi(n_heads, max_len=...)``), the longest sequence
            prepared up front, an ``int >= 0`` (default 5000); it grows in eager calls;
            inside ``torch.compile``, ``torch.export``, ``torch.jit.trace`` and the ONNX
            exporters the bias at longer distances is computed in the graph (``-slope *
            distance`` in float32, within two units in the last place).
        max_bias: keyword only, the exponent of the slopes, a finite real number ``> 0``
            (default 8.0, the paper's): the slopes are
            ``posenc.alibi_slopes(n_heads, max_bias=max_bias)`` (keras-hub's
            ``alibi_bias_max``).

    Shapes:
        ``forward(scores)``: ``scores`` of shape ``(..., n_heads, q_len, k_len)``,
        floating-point; returns ``scores + bias`` with the same shape, dtype and device.
        :meth:`bias` returns the bias alone, ``(n_heads, q_len, k_len)``, e.g. for the
        ``attn_mask`` of ``torch.nn.functional.scaled_dot_product_attention``.

    Shipping paths (each checked by the project's tests on a fresh module, float32, CPU):
    ``torch.compile(fullgraph=True, dynamic=True)`` with the default inductor back end (no
    graph break), ``torch.export.export`` (strict and non-strict) with dynamic ``q_len`` and
    ``k_len``, ``torch.onnx.export`` with the dynamo and the legacy exporters, run by
    onnxruntime within 1e-5 of eager, and ``torch.jit.trace``; any length in each.

    Raises:
        TypeError, ValueError: bad constructor arguments (a positional ``max_len`` is a
            ``TypeError`` saying what to write) or a bad input to :meth:`forward`.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long", ICLR, section 3; slopes
    from :func:`posenc.alibi_slopes`.
    """

    @keyword_max_len
    def __init__(self, n_heads: int, *, max_len: int = 5000, max_bias: float = 8.0) -> None:
        self.n_heads = check_int("n_heads", n_heads, minimum=1)
        self.max_bias = check_real("max_bias", max_bias, above=0.0)
        super().__init__(self.n_heads, max_len, 10000.0)  # base unused: no sinusoids
        self._slopes = _numpy_alibi_slopes(self.n_heads, max_bias=self.max_bias)
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

    @_host  # host (NumPy) work: never traced
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
        return f"n_heads={self.n_heads}, max_len={self.max_len}, max_bias={self.max_bias!r}"


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
            f"runs; use the module posenc.pytorch.ALiBi(n_heads, max_len=...) in forward")
    _check_dtype(dtype)
    return _from_float64(_numpy_alibi_bias(seq_len, n_heads), dtype, device)
