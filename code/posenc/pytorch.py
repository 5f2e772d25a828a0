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
        base: the constant of the frequencies (10000 in RoFormer), a finite ``float > 0``.
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
