"""A test bed for shipping PyTorch models: one attention layer with every module, and a measure.

The appendices on shipping (``book/deeper_shipping.ipynb``: ``torch.export``,
``torch.jit.trace``, ``torch.compile``; ``book/deeper_shipping_onnx.ipynb``: ONNX and
onnxruntime) take the same small model down each path and compare what the shipped copy
computes with the eager model:

- :class:`TinyAttention`: one attention layer that adds sinusoids
  (:class:`posenc.pytorch.PositionalEncoding`), rotates queries and keys
  (:class:`posenc.pytorch.RotaryEmbedding`) and biases the scores
  (:class:`posenc.pytorch.ALiBi`), so that one graph holds the operations of all three;
- :func:`example_inputs`: seeded inputs, one per sequence length;
- :func:`largest_difference`: the largest absolute difference between a shipped model and
  the eager one over several inputs.

Importing this module imports PyTorch; ``import posenc`` does not import it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch
from torch import nn

from ._validate import check_int, keyword_max_len
from .pytorch import ALiBi, PositionalEncoding, RotaryEmbedding


class TinyAttention(nn.Module):
    """One attention layer with every position module of :mod:`posenc.pytorch`.

    ``forward`` adds the sinusoidal encoding to ``x``, projects it to queries, keys and
    values, rotates queries and keys (RoPE, Su et al. 2021), adds ALiBi's bias (Press et al.
    2022) to the scaled dot products and returns the attention-weighted values, heads
    concatenated. Using the three together is not a sensible design: it is a compact test
    bed, whose graph holds the operations of all three modules. The weights are PyTorch's
    default initialisation of ``nn.Linear``.

    Args:
        d_model: width of the input and output, an ``int >= 1`` divisible by ``n_heads``,
            with ``d_model / n_heads`` even (RoPE rotates pairs of columns). Default 16.
        n_heads: number of attention heads, an ``int >= 1``. Default 2.
        max_len: keyword only (``TinyAttention(d_model, n_heads, max_len=...)``), rows of
            each module's table, an ``int >= 0``; longer inputs work too (the modules compute
            their rows). Default 64.
        seed: keyword only; an ``int``: the weights drawn from ``torch.manual_seed(seed)``
            (the same seed, the same weights; PyTorch's global generator is left as it was),
            or ``None`` (default): drawn from the global generator.

    Shapes:
        input ``(batch, seq_len, d_model)``, a floating-point tensor; output the same shape
        and dtype.

    Raises:
        TypeError: an argument is not an integer, or ``max_len`` is passed by position (the
            message says what to write).
        ValueError: an argument is out of range, ``d_model`` is not divisible by
            ``n_heads``, or the head width is odd.
    """

    @keyword_max_len
    def __init__(self, d_model: int = 16, n_heads: int = 2, *, max_len: int = 64,
                 seed: int | None = None) -> None:
        super().__init__()
        d_model = check_int("d_model", d_model, minimum=1)
        self.n_heads = check_int("n_heads", n_heads, minimum=1)
        if d_model % self.n_heads or (d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model must be n_heads times an even head width, got d_model={d_model} and "
                f"n_heads={self.n_heads}")
        if seed is not None:
            seed = check_int("seed", seed)
        self.head_dim = d_model // self.n_heads
        self.pos = PositionalEncoding(d_model, max_len=max_len)
        self.rotary = RotaryEmbedding(self.head_dim, max_len=max_len)
        self.alibi = ALiBi(self.n_heads, max_len=max_len)
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Attend over ``x`` of shape ``(batch, seq_len, d_model)``; see the class docstring.

        Raises:
            TypeError, ValueError: from :class:`posenc.pytorch.PositionalEncoding` for an
                ``x`` that is not a floating-point tensor of width ``d_model``.
        """
        x = self.pos(x)
        batch, seq_len, d_model = x.shape
        qkv = self.qkv(x).view(batch, seq_len, 3, self.n_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, n_heads, seq_len, head_dim)
        q, k = self.rotary(q, k)
        scores = self.alibi(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim))
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, seq_len, d_model)


def example_inputs(lengths, d_model: int = 16, batch: int = 2) -> dict[int, torch.Tensor]:
    """Seeded float32 inputs of :class:`TinyAttention`, one per sequence length.

    Args:
        lengths: the sequence lengths, ints ``>= 0``.
        d_model: width of each input, an ``int >= 1``. Default 16.
        batch: batch size, an ``int >= 1``. Default 2.

    Returns:
        ``{seq_len: x}`` with ``x`` of shape ``(batch, seq_len, d_model)`` drawn from a
        standard normal distribution with a generator seeded by ``seq_len`` (the same input
        for a length every time, and the global generator untouched).

    Raises:
        TypeError, ValueError: an argument is not an integer in range.
    """
    d_model, batch = check_int("d_model", d_model, minimum=1), check_int("batch", batch, minimum=1)
    lengths = [check_int("seq_len", n) for n in lengths]
    return {n: torch.randn(batch, n, d_model, generator=torch.Generator().manual_seed(n))
            for n in lengths}


def largest_difference(run: Callable, model: nn.Module, inputs: Mapping | list) -> float:
    """Largest ``|run(x) - model(x)|`` over the inputs, with gradients off.

    Args:
        run: the shipped model, called with one tensor ``x``; it may return a tensor, a NumPy
            array or anything ``torch.as_tensor`` takes (onnxruntime returns arrays).
        model: the eager model, a ``torch.nn.Module`` (or any callable of a tensor).
        inputs: the tensors ``x`` to try, a list or the values of a mapping (e.g. by length).

    Returns:
        A Python ``float``, ``0.0`` when every output is equal (NaN if an output is).

    Raises:
        ValueError: no inputs, or an output of ``run`` has another shape than ``model``'s.
    """
    xs = list(inputs.values() if isinstance(inputs, Mapping) else inputs)
    if not xs:
        raise ValueError("inputs must hold at least one tensor, got none")
    differences = []
    with torch.no_grad():
        for x in xs:
            got, expected = torch.as_tensor(run(x)), model(x)
            if got.shape != expected.shape:
                raise ValueError(
                    f"the shipped model returned shape {tuple(got.shape)} for an input of shape "
                    f"{tuple(x.shape)}, the eager model {tuple(expected.shape)}")
            gap = (got.to(expected.dtype) - expected).abs()
            differences.append(gap.max().item() if gap.numel() else 0.0)
    return math.nan if any(math.isnan(d) for d in differences) else max(differences)
