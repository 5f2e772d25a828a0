"""Positional encodings for Keras 3 on every backend: sinusoids, RoPE and ALiBi as layers.

Written with ``keras.ops`` only, so every layer runs under each backend of Keras 3
(TensorFlow, PyTorch, JAX: whichever ``KERAS_BACKEND`` chose before ``keras`` was first
imported). The package keeps its historical name: it imports TensorFlow only when
TensorFlow is the backend (Keras itself imports it then). Importing it sets
``TF_CPP_MIN_LOG_LEVEL=2`` (unless already set) before ``keras`` is imported, so
TensorFlow's C++ start-up messages, if TensorFlow is loaded at all, do not clutter
notebooks. One module per scheme:

- :mod:`posenc.tensorflow.sinusoidal`: :func:`positional_encoding` (a tensor) and
  :class:`PositionalEncoding` (a layer adding it), Vaswani et al. 2017.
- :mod:`posenc.tensorflow.rotary`: :class:`RotaryEmbedding`, rotary embeddings (RoFormer)
  with the long-context scalings of :func:`posenc.rope_frequencies`, called like
  keras-hub's ``RotaryEmbedding``.
- :mod:`posenc.tensorflow.alibi`: :class:`ALiBi`, the linear attention biases of Press et
  al. 2022, called like keras-hub's ``AlibiBias``.
- :mod:`posenc.tensorflow._backend`: what the layers share (dtypes, constants, shapes).

Every layer is registered for saving as ``"posenc.tensorflow>ClassName"``: import
``posenc.tensorflow`` before ``keras.models.load_model``. The names below are the public
API; import them from ``posenc.tensorflow``.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before Keras imports TensorFlow

from ._backend import REGISTERED_PACKAGE  # noqa: E402
from .alibi import ALiBi  # noqa: E402
from .rotary import RotaryEmbedding  # noqa: E402
from .sinusoidal import PositionalEncoding, positional_encoding  # noqa: E402

__all__ = ["ALiBi", "PositionalEncoding", "REGISTERED_PACKAGE", "RotaryEmbedding",
           "positional_encoding"]
