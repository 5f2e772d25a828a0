"""Positional encodings for PyTorch: sinusoids, learned positions, RoPE and ALiBi.

Importing this package imports ``torch``. Every value comes from the NumPy formulas of
:mod:`posenc.encoding` and :mod:`posenc.relative` (float64 on the host, rounded once to the
tensor's dtype), so it equals the NumPy version. One module per scheme:

- :mod:`posenc.pytorch.sinusoidal`: :func:`positional_encoding` (a tensor) and
  :class:`PositionalEncoding` (an ``nn.Module`` adding it), Vaswani et al. 2017.
- :mod:`posenc.pytorch.learned`: :class:`LearnedPositionalEmbedding`, a trained table
  (GPT, BERT).
- :mod:`posenc.pytorch.rotary`: :class:`RotaryEmbedding`, rotary embeddings of queries and
  keys (RoFormer), and :data:`AXES`, the axis orders it reads.
- :mod:`posenc.pytorch.hf`: :class:`HFRotaryEmbedding`, a drop-in replacement for a Hugging
  Face ``transformers`` model's rotary embedding, built from its config, and
  :func:`replace_rotary`, which finds every rotary module of a model and replaces it (with
  the M-RoPE module below where the model's config has an ``mrope_section``).
- :mod:`posenc.pytorch.mrope`: :class:`HFMultimodalRotaryEmbedding`, the same for the M-RoPE
  of Qwen2-VL, Qwen2.5-VL and Qwen3-VL's text models (``rotary_emb`` of their
  ``language_model``).
- :mod:`posenc.pytorch.alibi`: :class:`ALiBi` (a module) and :func:`alibi_bias` (a tensor),
  the linear attention biases of Press et al. 2022.
- :mod:`posenc.pytorch._tables`: the machinery the modules share (cached tables per dtype
  and device, rows past them computed inside graphs; :data:`CACHE_SIZE`).

Every module takes ``max_len`` by keyword (``PositionalEncoding(d_model, max_len=...)``,
``LearnedPositionalEmbedding(d_model, max_len=...)``); a positional one is a ``TypeError``
that gives the call to write. The names below are the public API; import them from
``posenc.pytorch``.
"""

from ._tables import CACHE_SIZE
from .alibi import ALiBi, alibi_bias
from .hf import HFRotaryEmbedding, replace_rotary
from .learned import LearnedPositionalEmbedding
from .mrope import HFMultimodalRotaryEmbedding
from .rotary import AXES, RotaryEmbedding
from .sinusoidal import LOADED_TABLE_TOLERANCE, PositionalEncoding, positional_encoding

__all__ = [
    "ALiBi",
    "AXES",
    "CACHE_SIZE",
    "HFMultimodalRotaryEmbedding",
    "HFRotaryEmbedding",
    "LOADED_TABLE_TOLERANCE",
    "LearnedPositionalEmbedding",
    "PositionalEncoding",
    "RotaryEmbedding",
    "alibi_bias",
    "positional_encoding",
    "replace_rotary",
]
