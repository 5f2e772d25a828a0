"""Sinusoidal positional encoding for TensorFlow: a tensor factory and a Keras 3 layer.

Importing this module imports TensorFlow. It first sets ``TF_CPP_MIN_LOG_LEVEL=2``
(unless already set) so TensorFlow's C++ start-up messages do not clutter notebooks.
The values come from :func:`posenc.positional_encoding` (angles in float64, cast once).
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from ._validate import check_base, check_int, check_width  # noqa: E402
from .encoding import angular_frequencies, float32_round_to_odd  # noqa: E402
from .encoding import positional_encoding as _numpy_positional_encoding  # noqa: E402


def positional_encoding(
    seq_len: int,
    d_model: int,
    *,
    base: float = 10000.0,
    offset: int = 0,
    dtype=tf.float32,
) -> tf.Tensor:
    """Sinusoidal positional encoding as a constant ``tf.Tensor``.

    Args:
        seq_len: number of positions (rows), an ``int >= 0``.
        d_model: width of the encoding, an ``int >= 1``.
        base: the constant of the formula (10000 in the paper), a finite ``float > 0``.
        offset: position of the first row, an ``int >= 0``.
        dtype: a floating-point ``tf.DType`` or its name (default ``tf.float32``).

    Returns:
        ``tf.Tensor`` of shape ``(seq_len, d_model)``; row ``r`` encodes position
        ``offset + r``. See :func:`posenc.positional_encoding` for the formula. Every
        entry is the value of ``dtype`` nearest to the float64 result (bfloat16 included).

    Raises:
        TypeError: wrong argument types, or ``dtype`` is not a floating-point dtype.
        ValueError: negative ``seq_len``/``offset``, ``d_model < 1``, bad ``base``.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    dtype = tf.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype.name}")
    table = _numpy_positional_encoding(seq_len, d_model, base=base, offset=offset)
    if dtype.size < 4:  # TensorFlow would go through float32 and could round twice
        table = float32_round_to_odd(table)
    return tf.constant(table, dtype=dtype)


def _encoding_ops(offset, seq_len, d_model: int, base: float, dtype) -> tf.Tensor:
    """The encoding of positions ``offset .. offset + seq_len - 1`` built from TensorFlow ops.

    For lengths known only when the graph runs (a ``tf.function`` or a functional model
    with ``seq_len`` None) and longer than the layer's table. Angles in float64, one cast.
    """
    frequencies = tf.constant(angular_frequencies(d_model, base=base)[0::2], tf.float64)
    positions = tf.cast(tf.range(offset, offset + seq_len), tf.float64)
    angles = positions[:, tf.newaxis] * frequencies[tf.newaxis, :]  # (seq_len, ceil(d/2))
    pairs = tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1)  # sin, cos side by side
    return tf.cast(tf.reshape(pairs, [seq_len, -1])[:, :d_model], dtype)


@keras.saving.register_keras_serializable(package="posenc")
class PositionalEncoding(keras.layers.Layer):
    """Keras layer that adds the sinusoidal positional encoding to its input (batch first).

    ``d_model`` is read from the last dimension of the input when the layer is built;
    the table of ``max_len`` positions is then computed once (in float64, rounded once to
    the layer's compute dtype) and every call only slices and adds. It holds no weights,
    so saved models store only the constructor arguments (see :meth:`get_config`).

    Longer inputs: when the sequence length is known as the layer is called (eager mode,
    or a traced function with a fixed shape), a length past ``max_len`` grows the table to
    at least twice its size. When the length is only known at run time (``seq_len`` None
    in a ``tf.function`` or a functional model), positions past the table are computed on
    the fly with TensorFlow ops in float64.

    Args:
        max_len: number of positions in the table, an ``int >= 0``; it grows as above.
        base: the constant of the formula (10000 in the paper), a finite ``float > 0``.
        dropout: rate of the dropout applied to the sum, in ``[0, 1]``; active only
            when the layer is called with ``training=True`` (e.g. inside ``fit``).
        **layer_kwargs: passed to ``keras.layers.Layer`` (``name``, ``dtype``, ...).
            ``dtype="float16"`` and a ``mixed_float16`` policy compute in float16.

    Shapes:
        ``call(inputs, offset=0)``: ``inputs`` of shape ``(..., seq_len, d_model)``,
        floating-point. The result has the same shape, in the layer's compute dtype
        (Keras casts floating inputs to it: float32 by default, float16 under a
        ``mixed_float16`` policy): ``dropout(inputs + PE[offset : offset + seq_len])``.

    Raises:
        TypeError, ValueError: bad constructor arguments, an input whose last
            dimension is unknown, or a bad input to ``call`` (see :meth:`call`).

    Source: Vaswani et al. 2017, section 3.5 (encoding, and dropout on the sum in 5.4).
    """

    def __init__(self, max_len: int = 5000, *, base: float = 10000.0, dropout: float = 0.0,
                 **layer_kwargs) -> None:
        super().__init__(**layer_kwargs)
        self.max_len = check_int("max_len", max_len)
        self.base = check_base(base)
        self.rate = float(dropout)
        self.dropout_layer = keras.layers.Dropout(self.rate, dtype=self.dtype_policy)
        self.supports_masking = True

    def build(self, input_shape) -> None:
        """Read ``d_model`` from ``input_shape[-1]`` and compute the table.

        Raises:
            ValueError: the input has fewer than 2 dimensions or an unknown last dimension.
        """
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ValueError(
                "PositionalEncoding expects inputs of shape (..., seq_len, d_model) with a "
                f"known d_model, got shape {tuple(input_shape)}"
            )
        self.d_model = check_int("d_model", int(input_shape[-1]), minimum=1)
        self._compute_table()

    def _compute_table(self) -> None:
        self.pe = positional_encoding(self.max_len, self.d_model, base=self.base,
                                      dtype=self.compute_dtype)
        self._last_rows = (None, None)  # (offset, seq_len), slice: reused by eager calls

    def _rows(self, offset: int, seq_len: int):
        """Rows ``offset .. offset + seq_len - 1`` of the table, grown if need be."""
        if offset + seq_len > self.max_len:
            self.max_len = max(offset + seq_len, 2 * self.max_len)
            self._compute_table()
        if not tf.executing_eagerly():  # a graph being traced keeps its own slice op
            return self.pe[offset : offset + seq_len]
        key, rows = self._last_rows
        if key != (offset, seq_len):
            rows = self.pe[offset : offset + seq_len]
            self._last_rows = ((offset, seq_len), rows)
        return rows

    def call(self, inputs, offset: int = 0, training=None):
        """Return ``dropout(inputs + PE[offset : offset + seq_len])``.

        Args:
            inputs: floating-point tensor of shape ``(..., seq_len, d_model)``.
            offset: position of the first row, a Python ``int >= 0``.
            training: Keras' training flag (dropout is applied only when true).

        Returns:
            Tensor of the same shape as ``inputs``, in the layer's compute dtype.

        Raises:
            TypeError: ``inputs`` is not floating-point, or ``offset`` is not an int.
            ValueError: the last dimension of ``inputs`` is not ``d_model``.
        """
        if not inputs.dtype.is_floating:
            raise TypeError(
                f"inputs must be a floating-point tensor, got dtype {inputs.dtype.name}"
            )
        offset = check_int("offset", offset)
        check_width(self.d_model, inputs.shape[-1])
        seq_len = inputs.shape[-2]
        if seq_len is not None:  # known now: slice the table, grown if need be
            pe = self._rows(offset, seq_len)
        else:  # known only at run time: slice the table, or compute what it lacks
            seq_len = tf.shape(inputs)[-2]
            pe = tf.cond(
                offset + seq_len <= self.max_len,
                lambda: self.pe[offset : offset + seq_len],
                lambda: _encoding_ops(offset, seq_len, self.d_model, self.base, self.pe.dtype),
            )
        outputs = inputs + tf.cast(pe, inputs.dtype)
        if training and self.rate > 0:
            outputs = self.dropout_layer(outputs, training=training)
        return outputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        """The constructor arguments, for saving: ``max_len``, ``base``, ``dropout``."""
        config = super().get_config()
        config.update({"max_len": self.max_len, "base": self.base, "dropout": self.rate})
        return config
