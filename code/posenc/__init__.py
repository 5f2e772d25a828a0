"""posenc: the sinusoidal positional encoding of Transformers (Vaswani et al. 2017, section 3.5).

The package behind the course "Positional Encoding, from Sines to Layers".

- :func:`positional_encoding`: the vectorized NumPy matrix ``(seq_len, d_model)``.
- :func:`positional_encoding_loop`: the same values from plain Python loops.
- :func:`angular_frequencies`: the frequency of every column.
- :func:`shift_matrix`: the linear map taking PE(pos) to PE(pos + k).
- :func:`rope`: rotary position embedding (Su et al. 2021) of queries or keys.
- :func:`rope_frequencies`: RoPE's frequencies, stretched for longer contexts (linear,
  dynamic NTK, YaRN, Llama 3) as Hugging Face ``transformers`` does (``posenc.rope_scaling``).
- :func:`rope_config`: a ``transformers`` model's config (``PretrainedConfig`` or
  ``config.json``) read into the arguments of :func:`rope_frequencies` (``posenc.hf_config``;
  a dict through ``transformers``' own config class when it is installed, imported then).
- :func:`alibi_slopes`, :func:`alibi_bias`: the attention biases of ALiBi (Press et al. 2022).
- :func:`positional_encoding_2d`, :func:`rope_2d`: positions on a 2-D grid of image patches
  (``posenc.two_d``: MAE's 2-D sine-cosine encoding, also in MAE's own order with
  ``layout="mae"``; axial 2-D RoPE, in RoPE-ViT's half order with ``first="columns"``).
- :func:`mrope`, :func:`mrope_angles`, :func:`mrope_cos_sin`, :func:`mrope_pair_axes`: M-RoPE,
  the temporal, height and width sections of the rotary pairs of Qwen2-VL, Qwen2.5-VL and
  (interleaved) Qwen3-VL (``posenc.mrope``).
- ``posenc.attention``: softmax, causal mask, scaled dot-product attention and the four
  terms of a score with added positions (NumPy).
- ``posenc.reference``: correct forms the book compares the package's own choices with (the
  textbook vectorized encoding, MAE's 2-D table as MAE's code writes it, the buffered PyTorch
  module).
- ``posenc.foils``: naive or wrong versions of popular sources the course compares with.
- ``posenc.pytorch``: ``torch.nn.Module`` versions (sinusoidal, learned, RoPE, ALiBi),
  ``HFRotaryEmbedding``, a drop-in rotary embedding for ``transformers`` models, and
  ``replace_rotary``, which swaps it into a model (imports PyTorch).
- ``posenc.tensorflow``: Keras 3 layers (sinusoidal, RoPE, ALiBi) for any Keras backend
  (imports Keras; TensorFlow only when it is the backend).
- ``posenc.plot``: the course's figures (imports matplotlib).
- ``posenc.experiment``: a tiny Transformer trained with each encoding (imports PyTorch).
- ``posenc.shipping``: the test bed of the shipping appendices (imports PyTorch).

Importing ``posenc`` itself imports NumPy only.
"""

from .encoding import (
    angular_frequencies,
    positional_encoding,
    positional_encoding_loop,
    shift_matrix,
)
from .relative import alibi_bias, alibi_slopes, rope
from .rope_scaling import rope_config, rope_frequencies
from .two_d import positional_encoding_2d, rope_2d
from .mrope import mrope, mrope_angles, mrope_cos_sin, mrope_pair_axes

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "angular_frequencies",
    "mrope",
    "mrope_angles",
    "mrope_cos_sin",
    "mrope_pair_axes",
    "positional_encoding",
    "positional_encoding_2d",
    "positional_encoding_loop",
    "rope",
    "rope_2d",
    "rope_config",
    "rope_frequencies",
    "shift_matrix",
]
from ._version import __version__  # noqa: E402  (the one place the version is written)
