"""ALiBi for Keras 3: a layer that adds linear biases to attention scores, on every backend.

The slopes come from :func:`posenc.alibi_slopes` (NumPy, float64); the bias is written with
``keras.ops``.
"""

from __future__ import annotations

import keras
from keras import ops

from .._validate import check_real
from ..relative import alibi_slopes
from ._backend import REGISTERED_PACKAGE, _static_shape


@keras.saving.register_keras_serializable(package=REGISTERED_PACKAGE)
class ALiBi(keras.layers.Layer):
    """Keras 3 layer that adds ALiBi's linear bias to attention scores (causal attention).

    Called on the scores ``q . k / sqrt(d)`` of ``n_heads`` heads (read from the input), it
    returns ``scores + bias`` with ``bias[h, j] = -slope[h] * (k_len - 1 - j)``: each key is
    penalised in proportion to its distance from the last key, with the slopes of
    :func:`posenc.alibi_slopes` (``2 ** (-max_bias h / n_heads)`` for a power of two, the
    authors' code's interpolation otherwise). This is keras-hub's ``AlibiBias`` (0.32.0):
    ``ALiBi(max_bias=b)`` is ``AlibiBias(alibi_bias_max=b)``, same call, same values (tested
    against a vendored copy for several ``b``); ``ALiBi()`` is its default, 8 (the paper's).

    How it relates to ``posenc.pytorch.ALiBi`` and :func:`posenc.alibi_bias`, whose bias is
    ``-slope[h] * |i' - j|`` for query ``i`` at position ``i' = k_len - q_len + i``: for the
    last query (``q_len = 1``, a decoding step) the two biases are equal. For an earlier
    query this layer's bias is lower by ``slope[h] * (k_len - 1 - i')`` on every key, a
    constant of the row, which the softmax removes: on causal attention (keys after each
    query masked, as in ALiBi's paper) the attention weights are the same (tested). The
    layer is for causal attention; on keys after a query it is not ``-slope * |i' - j|``
    (bidirectional models need ``posenc.pytorch.ALiBi``'s symmetric form).

    Computation: the slopes are computed in float64 and rounded to float32 (float64 for a
    float64 layer); the bias is computed in that dtype in the graph (exact in the heads
    whose slope is a power of two, as every head's is for up to 8 heads with the default
    ``max_bias``; within two units in the last place otherwise, for distances below
    ``2**24``) and rounded to the compute dtype. No weights; any ``k_len``, known or not
    when traced.

    Args:
        max_bias: keyword only, the exponent of the slopes, a finite real number ``> 0``
            (default 8.0, the paper's; keras-hub's ``alibi_bias_max``): the flattest head's
            slope is ``2 ** -max_bias``, see :func:`posenc.alibi_slopes`.
        **layer_kwargs: passed to ``keras.layers.Layer`` (``name``, ``dtype``, ...). The
            number of heads is read from the scores.

    Shapes:
        ``call(scores)``: ``scores`` floating-point of shape ``(batch, n_heads, q_len,
        k_len)`` with a known ``n_heads``; returns the same shape in the compute dtype.

    Saving: ``get_config`` holds ``max_bias``; registered as ``"posenc.tensorflow>ALiBi"``:
    import ``posenc.tensorflow`` before ``keras.models.load_model``; tested with ``.keras``
    files on every backend.

    Raises:
        TypeError: ``max_bias`` is not a real number (at construction), or ``scores`` is
            not floating-point.
        ValueError: ``max_bias`` is not finite and ``> 0`` (at construction), or ``scores``
            is not of rank 4, or its number of heads is unknown.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long: Attention with Linear
    Biases Enables Input Length Extrapolation", ICLR, section 3.
    """

    def __init__(self, *, max_bias: float = 8.0, **layer_kwargs) -> None:
        super().__init__(**layer_kwargs)
        self.max_bias = check_real("max_bias", max_bias, above=0.0)

    def _heads(self, shape: tuple) -> int:
        if len(shape) != 4:
            raise ValueError(f"scores must have shape (batch, n_heads, q_len, k_len), got "
                             f"shape {shape}")
        if shape[1] is None:
            raise ValueError(f"scores must have a known number of heads (axis 1), got shape "
                             f"{shape}")
        return shape[1]

    def build(self, input_shape) -> None:
        """Check the shape of the scores (see :meth:`call`)."""
        self._heads(tuple(input_shape))

    def call(self, scores):
        """Return ``scores + bias``; see the class docstring.

        Args:
            scores: floating-point tensor of shape ``(batch, n_heads, q_len, k_len)``.

        Returns:
            Tensor of the same shape, in the layer's compute dtype.

        Raises:
            TypeError: ``scores`` is not floating-point.
            ValueError: ``scores`` is not of rank 4 or its number of heads is unknown.
        """
        dtype = keras.backend.standardize_dtype(scores.dtype)
        if not keras.backend.is_float_dtype(dtype):
            raise TypeError(f"scores must be a floating-point tensor, got dtype {dtype}")
        n_heads = self._heads(_static_shape(scores))
        work_dtype = "float64" if self.compute_dtype == "float64" else "float32"
        slopes = ops.convert_to_tensor(alibi_slopes(n_heads, max_bias=self.max_bias)
                                     .astype(work_dtype)[:, None, None])
        k_len = ops.shape(scores)[-1]
        offsets = ops.cast(ops.arange(k_len), work_dtype) - ops.cast(k_len - 1, work_dtype)
        bias = slopes * offsets  # (n_heads, 1, k_len): -slope * (k_len - 1 - j)
        return scores + ops.cast(bias, scores.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        """The constructor arguments, for saving: ``max_bias``."""
        config = super().get_config()
        config.update({"max_bias": self.max_bias})
        return config
