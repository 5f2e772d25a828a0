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
        _check_batch("x", x, "d_model")
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


# --- After sinusoids: learned absolute positions, rotary embeddings (RoPE), ALiBi biases -------
# The formulas live in posenc.relative (NumPy, float64); the classes below apply them to tensors.

from .relative import alibi_bias as _numpy_alibi_bias  # noqa: E402
from .relative import check_head_dim, check_layout, rope_cos_sin  # noqa: E402


def _check_sequence(name: str, x, width_name: str, width: int) -> None:
    """Check that ``x`` is a floating-point tensor of shape ``(..., seq_len, width)``.

    Raises:
        TypeError: ``x`` is not a tensor, or not of a floating-point dtype.
        ValueError: ``x`` has fewer than 2 dimensions or its last dimension is not ``width``.
    """
    _check_batch(name, x, width_name)
    if x.shape[-1] != width:
        raise ValueError(
            f"{name}'s last dimension is {x.shape[-1]} but {width_name}={width}; they must be equal"
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

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Return ``dropout(x + E[offset : offset + seq_len])``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, d_model)`` (batch first), on
                the device of the module's parameters.
            offset: position of ``x``'s first row, an ``int >= 0``.

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, or ``offset`` is not an int.
            ValueError: ``x`` has fewer than 2 dimensions, its last dimension is not
                ``d_model``, ``offset`` is negative, or ``offset + seq_len > max_len``.
        """
        _check_sequence("x", x, "d_model", self.d_model)
        offset = check_int("offset", offset)
        end = offset + x.shape[-2]
        if end > self.max_len:
            raise ValueError(
                f"positions {offset} to {end - 1} (offset={offset}, seq_len={x.shape[-2]}) run "
                f"past max_len={self.max_len}: a learned positional embedding has rows for "
                f"positions 0 to {self.max_len - 1} only"
            )
        positions = torch.arange(offset, end, device=self.embedding.weight.device)
        return self.dropout(x + self.embedding(positions).to(x.dtype))

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (RoPE) of queries and keys, as :func:`posenc.rope` does in NumPy.

    Call it on the queries and keys of one attention layer, after their projections and
    before the scores: ``q, k = rotary(q, k)``, then ``scores = q @ k.transpose(-2, -1)``.
    The score of query position ``m`` with key position ``n`` then depends on ``m - n``
    only. Pair ``i`` of the vector at position ``pos`` is rotated by ``pos * base **
    (-2i / head_dim)``; ``layout`` says which coordinates form pair ``i``: ``(2i, 2i + 1)``
    for ``"interleaved"`` (RoFormer, GPT-J) or ``(i, i + head_dim / 2)`` for ``"half"``
    (GPT-NeoX, Llama in Hugging Face ``transformers``). Weights trained with one layout
    give other scores with the other.

    The module has no parameters and nothing in ``state_dict``. Tables of cosines and
    sines are computed in float64, rounded once to the working dtype (float64 for float64
    inputs, float32 otherwise: float16 and bfloat16 inputs are rotated in float32 and
    the result rounded to their dtype) on the input's device, cached, and grown (to at
    least twice their length) when a longer input or a larger offset needs it.

    Args:
        head_dim: width of each head's query and key vectors, an even ``int >= 2``.
        base: the constant of the frequencies (10000 in RoFormer), a finite ``float > 1``.
        layout: ``"interleaved"`` (default) or ``"half"``.

    Shapes:
        ``forward(q, k, offset=0)``: ``q`` of shape ``(..., q_len, head_dim)`` and ``k`` of
        shape ``(..., k_len, head_dim)``, e.g. ``(batch, heads, seq_len, head_dim)``,
        floating-point. Both are rotated for positions ``offset, offset + 1, ...`` along
        their second-to-last axis; returns ``(rotated_q, rotated_k)`` with the shapes,
        dtypes and devices of ``q`` and ``k``. With a KV cache, rotate each new key once,
        when it is computed, with ``offset`` = the number of tokens already cached (see
        :meth:`rotate`).

    Compilation: ``torch.compile`` and ``torch.export`` work (the tests check both); the
    tables become constants of the exported graph.

    Raises:
        TypeError, ValueError: bad constructor arguments (see :func:`posenc.rope`) or a bad
            input to :meth:`rotate` / :meth:`forward`.

    Source: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
    Embedding", sections 3.2 and 3.4.2; the half layout from Black et al. 2022 (GPT-NeoX).
    """

    def __init__(self, head_dim: int, *, base: float = 10000.0, layout: str = "interleaved") -> None:
        super().__init__()
        self.head_dim = check_head_dim("head_dim", head_dim)
        self.base = check_base(base)
        self.layout = check_layout(layout)
        self.max_len = 0
        self._tables: dict[tuple[torch.dtype, torch.device], tuple[torch.Tensor, torch.Tensor]] = {}

    def cos_sin(self, end: int, dtype: torch.dtype, device: torch.device):
        """The cached cosines and sines of the rotation angles, for positions 0 to ``max_len - 1``.

        Args:
            end: number of positions needed, an ``int >= 0``; the tables grow (to at least
                twice their length) when ``end > max_len``.
            dtype: the floating-point ``torch.dtype`` of the tables.
            device: the ``torch.device`` of the tables.

        Returns:
            ``(cos, sin)``: two tensors of shape ``(max_len, head_dim // 2)``; row ``pos``,
            column ``i`` holds the cosine (sine) of ``pos * base ** (-2i / head_dim)``,
            computed in float64 by :func:`posenc.relative.rope_cos_sin` and rounded once.
        """
        if end > self.max_len:
            self.max_len = max(end, 2 * self.max_len)
            self._tables.clear()
        key = (dtype, device)
        if key not in self._tables:
            cos, sin = rope_cos_sin(self.max_len, self.head_dim, base=self.base)
            self._tables[key] = (torch.from_numpy(cos).to(device=device, dtype=dtype),
                                 torch.from_numpy(sin).to(device=device, dtype=dtype))
        return self._tables[key]

    def rotate(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Rotate one tensor of queries or keys for positions ``offset, offset + 1, ...``.

        Args:
            x: floating-point tensor of shape ``(..., seq_len, head_dim)``.
            offset: position of ``x``'s first row, an ``int >= 0``.

        Returns:
            Tensor of the same shape, dtype and device as ``x``.

        Raises:
            TypeError: ``x`` is not a floating-point tensor, or ``offset`` is not an int.
            ValueError: ``x`` has fewer than 2 dimensions, its last dimension is not
                ``head_dim``, or ``offset`` is negative.
        """
        _check_sequence("x", x, "head_dim", self.head_dim)
        offset = check_int("offset", offset)
        end = offset + x.shape[-2]
        work_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        cos, sin = self.cos_sin(end, work_dtype, x.device)
        cos, sin = cos[offset:end], sin[offset:end]
        work = x.to(work_dtype)
        if self.layout == "interleaved":
            first, second = work[..., 0::2], work[..., 1::2]
            out = torch.stack((first * cos - second * sin, first * sin + second * cos), dim=-1)
            out = out.flatten(-2)
        else:
            first, second = work.chunk(2, dim=-1)
            out = torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)
        return out.to(x.dtype)

    def forward(self, q: torch.Tensor, k: torch.Tensor, offset: int = 0):
        """Return ``(rotate(q, offset), rotate(k, offset))``; see the class docstring.

        Raises:
            TypeError, ValueError: as :meth:`rotate`, naming ``q`` or ``k``.
        """
        _check_sequence("q", q, "head_dim", self.head_dim)
        _check_sequence("k", k, "head_dim", self.head_dim)
        return self.rotate(q, offset), self.rotate(k, offset)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}, layout={self.layout!r}"


def alibi_bias(
    seq_len: int, n_heads: int, *, dtype: torch.dtype = torch.float32, device=None
) -> torch.Tensor:
    """ALiBi's attention bias as a tensor, ready to add to the scores or pass as a float mask.

    ``torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)`` with ``q``
    of shape ``(batch, n_heads, seq_len, head_dim)`` adds it to every batch. For a causal
    model, also mask the keys after each query (``bias.masked_fill(future, -inf)`` with
    ``future = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)``).

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
        TypeError: wrong argument types, or ``dtype`` is not a floating-point torch dtype.
        ValueError: ``seq_len < 0`` or ``n_heads < 1``.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long", ICLR, section 3.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    table = _numpy_alibi_bias(seq_len, n_heads)
    if dtype.itemsize < 4:  # through float32 PyTorch could round twice
        table = float32_round_to_odd(table)
    return torch.from_numpy(table).to(device=device, dtype=dtype)
