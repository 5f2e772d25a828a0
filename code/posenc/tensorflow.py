"""Sinusoidal positional encoding for TensorFlow: a tensor factory and a Keras 3 layer.

Importing this module imports TensorFlow. It first sets ``TF_CPP_MIN_LOG_LEVEL=2``
(unless already set) so TensorFlow's C++ start-up messages do not clutter notebooks.
The values come from :func:`posenc.positional_encoding` (angles in float64, cast once).
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from ._validate import (  # noqa: E402
    MAX_POSITION,
    check_base,
    check_dropout,
    check_int,
    check_window,
    check_width,
)
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
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        offset: position of the first row, an ``int >= 0`` with ``offset + seq_len <= 2**53``.
        dtype: a floating-point ``tf.DType`` or its name (default ``tf.float32``).

    Returns:
        ``tf.Tensor`` of shape ``(seq_len, d_model)``; row ``r`` encodes position
        ``offset + r``. See :func:`posenc.positional_encoding` for the formula and the
        accuracy as a function of position. Every entry is the value of ``dtype``
        nearest to the float64 result (float16 and bfloat16 included).

    Raises:
        TypeError: wrong argument types, or ``dtype`` is not a floating-point dtype.
        ValueError: negative ``seq_len``/``offset``, ``offset + seq_len > 2**53``,
            ``d_model < 1`` or too large, bad ``base``.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    dtype = tf.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype.name}")
    table = _numpy_positional_encoding(seq_len, d_model, base=base, offset=offset)
    if dtype.size < 4:  # TensorFlow would go through float32 and could round twice
        table = float32_round_to_odd(table)
    return tf.constant(table, dtype=dtype)


def _round_float64(values: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
    """Float64 ``values`` rounded to ``dtype``, each to the nearest value of ``dtype``.

    The graph version of what :func:`positional_encoding` does with NumPy: for types
    narrower than float32, round to float32 "to odd" first (see
    :func:`posenc.encoding.float32_round_to_odd`), here with integer operations on the
    float32 bits, so that the second rounding lands on the nearest value.
    """
    if dtype.size >= 4:
        return tf.cast(values, dtype)
    nearest = tf.cast(values, tf.float32)
    away = tf.abs(tf.cast(nearest, tf.float64)) > tf.abs(values)  # rounded away from zero
    # One step towards zero: the magnitude is the low 31 bits, so subtract one from them.
    bits = tf.bitcast(nearest, tf.int32) - tf.cast(away, tf.int32)
    inexact = tf.cast(tf.bitcast(bits, tf.float32), tf.float64) != values
    return tf.cast(tf.bitcast(bits | tf.cast(inexact, tf.int32), tf.float32), dtype)


def _encoding_ops(positions: tf.Tensor, d_model: int, base: float, dtype) -> tf.Tensor:
    """The encoding of integer ``positions`` (any shape) built from TensorFlow ops.

    For rows the layer's table lacks when the positions are known only when the graph
    runs. Angles in float64, one rounding to ``dtype``. Shape ``positions.shape + (d_model,)``.
    """
    frequencies = tf.constant(angular_frequencies(d_model, base=base), tf.float64)
    angles = tf.cast(positions, tf.float64)[..., tf.newaxis] * frequencies
    is_sine = tf.constant(np.arange(d_model) % 2 == 0)
    return _round_float64(tf.where(is_sine, tf.sin(angles), tf.cos(angles)), tf.as_dtype(dtype))


def _check_tensor_offset(offset) -> tf.Tensor:
    if not offset.dtype.is_integer:
        raise TypeError(
            f"offset must be an integer or an integer tensor, got a tensor of dtype {offset.dtype.name}"
        )
    if offset.shape.rank != 0:
        raise ValueError(f"offset must be a scalar (0-dimensional) tensor, got shape {offset.shape}")
    return tf.cast(offset, tf.int64)


@keras.saving.register_keras_serializable(package="posenc")
class PositionalEncoding(keras.layers.Layer):
    """Keras layer that adds the sinusoidal positional encoding to its input (batch first).

    ``d_model`` is read from the last dimension of the input when the layer is built.
    That is the Keras convention: state whose shape depends on the input (weights,
    or here the table) is created in ``build``, which Keras calls with the input shape
    on the first call, so a layer is written once for any width and never asked for it
    twice. The table of ``max_len`` positions is then computed once (in float64, rounded
    once to the layer's compute dtype) and every call only slices and adds. The table is
    created outside any traced function (``tf.init_scope``), so a layer first built or
    grown inside ``fit``, a ``tf.function`` or an XLA-compiled step keeps working
    everywhere afterwards. It holds no weights, so saved models store only the
    constructor arguments (see :meth:`get_config`).

    Longer inputs: when the window ``offset .. offset + seq_len - 1`` is known as the
    layer is called (Python ``int`` offset and a fixed sequence length, eager or traced)
    and runs past ``max_len``, the table grows to at least twice its size, if the window
    starts inside the table or fits in twice its length; a window further away is
    computed on its own, leaving the table as it is. A failed growth (e.g. out of
    memory) leaves the layer as it was. When the positions are known only at run time
    (``seq_len`` None in a ``tf.function`` or a functional model, a tensor ``offset``, or
    explicit ``positions``), rows past the table are computed on the fly with TensorFlow
    ops in float64. Positions go up to ``2**53``; for the accuracy as a function of
    position see :func:`posenc.positional_encoding`.

    Args:
        max_len: number of positions in the table, an ``int >= 0`` (at most ``2**53``);
            it grows as above.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        dropout: rate of the dropout applied to the sum, a real number in ``[0, 1]``;
            active only when the layer is called with ``training=True`` (e.g. inside ``fit``).
        **layer_kwargs: passed to ``keras.layers.Layer`` (``name``, ``dtype``, ...).
            ``dtype="float16"``, ``"bfloat16"`` and the ``mixed_float16`` and
            ``mixed_bfloat16`` policies compute in that type.

    Shapes:
        ``call(inputs, offset=0, positions=None)``: ``inputs`` of shape
        ``(..., seq_len, d_model)``, floating-point. The result has the same shape, in the
        layer's compute dtype (Keras casts floating inputs to it: float32 by default,
        float16 under a ``mixed_float16`` policy): ``dropout(inputs + PE[offset : offset +
        seq_len])`` or ``dropout(inputs + PE[positions])``.

    Raises:
        TypeError, ValueError: bad constructor arguments, an input whose last
            dimension is unknown, or a bad input to ``call`` (see :meth:`call`).

    Source: Vaswani et al. 2017, section 3.5 (encoding, and dropout on the sum in 5.4).
    """

    def __init__(self, max_len: int = 5000, *, base: float = 10000.0, dropout: float = 0.0,
                 **layer_kwargs) -> None:
        super().__init__(**layer_kwargs)
        self.max_len = check_int("max_len", max_len)
        check_window(0, self.max_len)
        self.base = check_base(base)
        self.rate = check_dropout(dropout)
        self.dropout_layer = keras.layers.Dropout(self.rate, dtype=self.dtype_policy)
        self.supports_masking = True

    def build(self, input_shape) -> None:
        """Read ``d_model`` from ``input_shape[-1]`` and compute the table.

        Raises:
            ValueError: the input has fewer than 2 dimensions, an unknown last
                dimension, or one too large for a table.
        """
        if len(input_shape) < 2 or input_shape[-1] is None:
            raise ValueError(
                "PositionalEncoding expects inputs of shape (..., seq_len, d_model) with a "
                f"known d_model, got shape {tuple(input_shape)}"
            )
        self.d_model = check_int("d_model", int(input_shape[-1]), minimum=1)
        self._set_table(self.max_len)

    def _set_table(self, length: int) -> None:
        """Compute a table of ``length`` rows; only then make it the layer's state."""
        with tf.init_scope():  # an eager tensor, never one owned by a traced graph
            table = positional_encoding(length, self.d_model, base=self.base,
                                        dtype=self.compute_dtype)
        self.max_len, self.pe = length, table
        self._last_rows = (None, None)  # (offset, seq_len), slice: reused by eager calls

    def _rows(self, offset: int, seq_len: int):
        """Rows ``offset .. offset + seq_len - 1`` (Python ints), the table grown if need be."""
        check_window(offset, seq_len)
        end = offset + seq_len
        if end > self.max_len:
            if offset > self.max_len and end > 2 * self.max_len:  # far away: on its own
                positions = tf.range(offset, end, dtype=tf.int64)
                return _encoding_ops(positions, self.d_model, self.base, self.pe.dtype)
            self._set_table(max(end, 2 * self.max_len))
        if not tf.executing_eagerly():  # a graph being traced keeps its own slice op
            return self.pe[offset:end]
        key, rows = self._last_rows
        if key != (offset, seq_len):
            rows = self.pe[offset:end]
            self._last_rows = ((offset, seq_len), rows)
        return rows

    def _gather(self, positions: tf.Tensor, top: tf.Tensor) -> tf.Tensor:
        """Rows for int64 ``positions``: from the table if ``top < max_len``, else from ops."""
        if self.max_len == 0:  # nothing to gather from (and XLA cannot gather from nothing)
            return _encoding_ops(positions, self.d_model, self.base, self.pe.dtype)
        return tf.cond(
            top < self.max_len,
            lambda: tf.gather(self.pe, positions),
            lambda: _encoding_ops(positions, self.d_model, self.base, self.pe.dtype),
        )

    def _rows_at_run_time(self, offset, seq_len):
        """Rows for an offset and a length that may be tensors (int64 throughout)."""
        offset = tf.cast(offset, tf.int64)
        seq_len = tf.cast(seq_len, tf.int64)
        end = offset + seq_len
        checks = [
            tf.debugging.assert_non_negative(offset, message="offset must be >= 0"),
            tf.debugging.assert_less_equal(end, tf.constant(MAX_POSITION, tf.int64),
                                           message="offset + seq_len must be <= 2**53"),
        ]
        with tf.control_dependencies(checks):  # checked before any row is looked up
            positions = offset + tf.range(seq_len, dtype=tf.int64)
        return self._gather(positions, end - 1)

    def _rows_at(self, positions, batch_shape):
        """Rows for explicit positions, shape ``positions.shape + (d_model,)``."""
        if isinstance(positions, tf.RaggedTensor) or not tf.is_tensor(positions) and not isinstance(
                positions, np.ndarray):
            raise TypeError(
                "positions must be an integer tensor of shape (..., seq_len), got "
                f"{type(positions).__name__}"
            )
        positions = tf.convert_to_tensor(positions)
        if not positions.dtype.is_integer:
            raise TypeError(
                "positions must be an integer tensor of shape (..., seq_len), got dtype "
                f"{positions.dtype.name}"
            )
        try:
            fits = (positions.shape.rank is not None and positions.shape.rank >= 1
                    and tf.broadcast_static_shape(positions.shape, batch_shape).as_list()
                    == batch_shape.as_list()
                    and positions.shape[-1] in (None, batch_shape[-1]))
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"positions must have shape (..., seq_len) broadcastable to the input's "
                f"{tuple(batch_shape)}, got shape {tuple(positions.shape)}"
            )
        positions = tf.cast(positions, tf.int64)
        top = tf.reduce_max(positions)  # the smallest int64 when there are no positions
        if tf.executing_eagerly():
            if tf.size(positions) > 0:
                low = int(tf.reduce_min(positions))
                if low < 0:
                    raise ValueError(f"positions must be >= 0, got a minimum of {low}")
                if int(top) >= MAX_POSITION:
                    raise ValueError(
                        f"positions must be < 2**53 = {MAX_POSITION} (float64 holds every "
                        f"position below it exactly), got a maximum of {int(top)}"
                    )
        else:
            checks = [
                tf.debugging.assert_non_negative(positions, message="positions must be >= 0"),
                tf.debugging.assert_less(positions, tf.constant(MAX_POSITION, tf.int64),
                                         message="positions must be < 2**53"),
            ]
            with tf.control_dependencies(checks):  # checked before any row is looked up
                positions = tf.identity(positions)
        return self._gather(positions, top)

    def call(self, inputs, offset=0, positions=None, training=None):
        """Return ``dropout(inputs + PE[offset : offset + seq_len])`` or ``dropout(inputs + PE[positions])``.

        Args:
            inputs: floating-point dense tensor of shape ``(..., seq_len, d_model)``.
            offset: position of the first row: a Python ``int >= 0`` or a scalar integer
                tensor (e.g. the number of tokens decoded so far inside a
                ``tf.function``; same results as the ``int``), with ``offset + seq_len <=
                2**53``. Inside a traced function a tensor offset is checked by
                TensorFlow assertions (XLA skips them).
            positions: instead of ``offset``, an integer tensor of shape
                ``(..., seq_len)`` broadcastable to ``inputs.shape[:-1]``, the position of
                every token, each in ``[0, 2**53)``: for left-padded batches and packed
                sequences (Hugging Face's ``position_ids``).
            training: Keras' training flag (dropout is applied only when true).

        Returns:
            Tensor of the same shape as ``inputs``, in the layer's compute dtype.

        Raises:
            TypeError: ``inputs`` is ragged or not floating-point, ``offset`` is not an
                integer (or integer tensor), or ``positions`` is not an integer tensor.
            ValueError: the last dimension of ``inputs`` is not ``d_model``, ``offset``
                is negative or not a scalar, the positions reach past ``2**53`` or are
                negative, ``positions`` has the wrong shape, or both ``offset`` and
                ``positions`` are given.
        """
        if not inputs.dtype.is_floating:
            raise TypeError(
                f"inputs must be a floating-point tensor, got dtype {inputs.dtype.name}"
            )
        check_width(self.d_model, inputs.shape[-1])
        seq_len = inputs.shape[-2]
        if positions is not None:
            if tf.is_tensor(offset) or not (isinstance(offset, int) and offset == 0):
                raise ValueError("pass either offset or positions, not both")
            pe = self._rows_at(positions, inputs.shape[:-1])
        else:
            if tf.is_tensor(offset) or isinstance(offset, np.ndarray):
                offset = _check_tensor_offset(tf.convert_to_tensor(offset))
                if tf.executing_eagerly():  # eager: same path, same values as an int
                    offset = int(offset)
            if tf.is_tensor(offset) or seq_len is None:  # known only at run time
                if not tf.is_tensor(offset):
                    offset = check_int("offset", offset)
                pe = self._rows_at_run_time(offset, tf.shape(inputs)[-2])
            else:  # known now: slice the table, grown if need be
                pe = self._rows(check_int("offset", offset), seq_len)
        outputs = inputs + tf.cast(pe, inputs.dtype)
        if training and self.rate > 0:
            outputs = self.dropout_layer(outputs, training=training)
        return outputs

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, tf.RaggedTensor):  # Keras would fail deep inside with "not uniform"
            raise TypeError(
                "inputs must be a dense tensor of shape (..., seq_len, d_model), got a "
                "tf.RaggedTensor: pad it (inputs.to_tensor()) and pass the padding mask along"
            )
        return super().__call__(inputs, *args, **kwargs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        """The constructor arguments, for saving: ``max_len``, ``base``, ``dropout``."""
        config = super().get_config()
        config.update({"max_len": self.max_len, "base": self.base, "dropout": self.rate})
        return config
