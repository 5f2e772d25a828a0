"""Sinusoidal positional encoding for Keras 3: a tensor factory and a layer, on every backend.

Written with ``keras.ops`` only, so it runs under each backend of Keras 3 (TensorFlow,
PyTorch, JAX). The values come from :func:`posenc.positional_encoding` (angles in float64,
rounded once).
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from .._digits import compose, digit_count, digit_steps, digit_table
from .._validate import (
    check_base, check_dropout, check_int, check_position_range, check_width, check_window,
    keyword_max_len,
)
from ..encoding import angular_frequencies, encoding_at
from ..encoding import positional_encoding as _numpy_positional_encoding
from ._backend import (
    REGISTERED_PACKAGE, _concrete_int_array, _float_dtype, _is_concrete, _is_ragged, _rounded,
    _scalar_index, _static_shape,
)


def positional_encoding(seq_len: int, d_model: int, *, base: float = 10000.0, offset: int = 0,
                        dtype="float32"):
    """Sinusoidal positional encoding as a constant tensor of the current Keras backend.

    Args:
        seq_len: number of positions (rows), an ``int >= 0``.
        d_model: width of the encoding, an ``int >= 1``.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        offset: position of the first row, an ``int >= 0`` with ``offset + seq_len <= 2**53``.
        dtype: a floating-point dtype: a name such as ``"float32"`` (default) or
            ``"bfloat16"``, or a NumPy, TensorFlow, torch or JAX dtype.

    Returns:
        A tensor of the backend (``tf.Tensor``, ``torch.Tensor`` or ``jax.Array``) of shape
        ``(seq_len, d_model)``; row ``r`` encodes position ``offset + r``. See
        :func:`posenc.positional_encoding` for the formula and the accuracy as a function of
        position. Every entry is the value of ``dtype`` nearest to the float64 result
        (float16 and bfloat16 included).

    Raises:
        TypeError: wrong argument types, or ``dtype`` is not a floating-point dtype.
        ValueError: negative ``seq_len``/``offset``, ``offset + seq_len > 2**53``,
            ``d_model < 1`` or too large, bad ``base``.

    Source: Vaswani et al. 2017, "Attention Is All You Need", section 3.5.
    """
    dtype = _float_dtype(dtype)
    return _rounded(_numpy_positional_encoding(seq_len, d_model, base=base, offset=offset), dtype)


def _run_time_checks(positions, what: str):
    """TensorFlow graphs: an assertion that stops negative positions with a clear message.

    Other backends (and XLA and TensorFlow Lite, which skip assertions) cannot stop a
    compiled function; there the rows of negative positions are NaN (see
    :class:`PositionalEncoding`).
    """
    if keras.backend.backend() != "tensorflow":
        return positions
    import tensorflow as tf

    check = tf.debugging.assert_non_negative(positions, message=f"{what} must be >= 0")
    with tf.control_dependencies([check]):
        return tf.identity(positions)


def _digit_dtype(dtype) -> str:
    """The integer dtype in which the digits of positions of ``dtype`` are computed: the
    dtype itself for 32- and 64-bit integers, int32 for narrower ones (whose digit rows,
    ``256 * k + d``, would overflow)."""
    dtype = keras.backend.standardize_dtype(dtype)
    return dtype if dtype in ("int32", "int64", "uint32", "uint64") else "int32"


@keras.saving.register_keras_serializable(package=REGISTERED_PACKAGE)
class PositionalEncoding(keras.layers.Layer):
    """Keras 3 layer that adds the sinusoidal positional encoding to its input (batch first).

    Amplitude: the encoding has amplitude 1 (each column is a sine or a cosine, every entry
    in ``[-1, 1]``; root mean square ``1/sqrt(2)`` for an even ``d_model``), whatever
    ``d_model``. Token embeddings initialised small (standard deviation ``d_model**-0.5``,
    as when the matrix is shared with the output layer; Keras' ``Embedding`` draws from
    ``[-0.05, 0.05]``) are swamped by it unless they are multiplied by ``sqrt(d_model)``
    before this layer, as the Transformer does (Vaswani et al. 2017, section 3.4). The
    course's chapter on embeddings, ``book/embeddings.ipynb`` ("Why multiply by
    sqrt(d_model)", https://positional-encoding-course.github.io/positional-encoding-course/book/embeddings.html),
    measures it.

    Backends and shipping paths (each checked by the course's tests): the layer is written
    with ``keras.ops`` and runs, saves to and reloads from ``.keras`` files under the
    TensorFlow, PyTorch and JAX backends of Keras 3, in eager calls and in ``fit`` and
    ``predict`` (compiled with ``jit_compile=True`` under TensorFlow and JAX). With the
    TensorFlow backend, ``model.export`` (SavedModel) reloads and gives the same outputs,
    and a model converts to TensorFlow Lite with builtin ops only, for a fixed and for a
    dynamic sequence length (``keras.Input(shape=(None, d_model))``).

    ``d_model`` is read from the last dimension of the input when the layer is built (the
    Keras convention: state whose shape depends on the input is created in ``build``).
    The table of ``max_len`` positions is then computed once on the host (NumPy, float64,
    rounded once to the layer's compute dtype) and every call only slices (or gathers)
    and adds. The table is a constant made outside any traced function, so a layer first
    built or grown inside ``fit``, a ``tf.function`` or a ``jax.jit`` keeps working
    afterwards. It holds no weights: saved models store only the constructor arguments.

    Positions past the table:

    - Known when the layer is called (a Python ``int`` offset or a concrete tensor, a
      fixed sequence length, concrete ``positions``; eager or traced): the table grows to
      at least twice its size when the window starts inside it or fits in twice its
      length; rows further away are computed on their own on the host, leaving the table
      as it is. A failed growth (e.g. out of memory) leaves the layer as it was.
    - Known only at run time (a sequence length unknown while tracing, e.g.
      ``Input(shape=(None, d_model))``; a traced tensor ``offset``; traced ``positions``):
      rows below ``max_len`` are looked up, rows past it are computed inside the graph
      from a small constant table of base-256 digits (:mod:`posenc._digits`), within
      ``2**-20 + pos * 2**-52`` of the eager rows in float32, with integer and
      floating-point operations that every path supports: ``tf.function``, XLA,
      SavedModel (``model.export``), a ``.keras`` file reloaded inside ``tf.function``,
      TensorFlow Lite with builtin ops only, ``jax.jit`` and the PyTorch backend. Any
      length works in each. Negative positions known only at run time stop a TensorFlow
      graph with an ``InvalidArgumentError``; where a compiled function cannot stop (JAX,
      XLA, TensorFlow Lite) their rows are NaN, never a wrong number.

    Positions go up to ``2**53``; for the accuracy see :func:`posenc.positional_encoding`.
    Under JAX without its 64-bit mode, integer tensors are int32 (Keras converts int64
    arrays to int32 there), so positions must stay below ``2**31``, and ``dtype="float64"``
    is refused.

    Args:
        max_len: keyword only (``PositionalEncoding(max_len=...)``), the number of positions
            in the table, an ``int >= 0`` (default 5000, at most ``2**53``); it grows as above.
        base: the constant of the formula (10000 in the paper), a finite ``float > 1``.
        dropout: rate of the dropout applied to the sum, a real number in ``[0, 1]``;
            active only when the layer is called with ``training=True`` (e.g. inside ``fit``).
        **layer_kwargs: passed to ``keras.layers.Layer`` (``name``, ``dtype``, ...).
            ``dtype="float16"``, ``"bfloat16"`` and the ``mixed_float16`` and
            ``mixed_bfloat16`` policies compute in that type (each entry of the table the
            nearest value of that type).

    Shapes:
        ``call(inputs, offset=0, positions=None)``: ``inputs`` of shape
        ``(..., seq_len, d_model)``, floating-point. The result has the same shape, in the
        layer's compute dtype: ``dropout(inputs + PE[offset : offset + seq_len])`` or
        ``dropout(inputs + PE[positions])``.

    Saving: a model saves its layers' constructor arguments only (``get_config``); the
    layer is registered as ``"posenc.tensorflow>PositionalEncoding"``. Loading a ``.keras``
    file needs the class: ``import posenc.tensorflow`` before
    ``keras.models.load_model(path)`` (or pass ``custom_objects={"PositionalEncoding":
    posenc.tensorflow.PositionalEncoding}``). Without it Keras raises a ``TypeError``
    saying "Could not locate class 'PositionalEncoding'", whose config names the module
    ``posenc.tensorflow`` and the registered name. Files saved before this name (as
    ``"posenc>PositionalEncoding"``) load too.

    Raises:
        TypeError, ValueError: bad constructor arguments (a positional ``max_len`` is a
            ``TypeError`` saying what to write), an input whose last dimension is unknown, or
            a bad input to ``call`` (see :meth:`call`).

    Source: Vaswani et al. 2017, section 3.5 (encoding, and dropout on the sum in 5.4).
    """

    @keyword_max_len
    def __init__(self, *, max_len: int = 5000, base: float = 10000.0, dropout: float = 0.0,
                 **layer_kwargs) -> None:
        super().__init__(**layer_kwargs)
        self.max_len = check_int("max_len", max_len)
        check_window(0, self.max_len)
        self.base = check_base(base)
        self.rate = check_dropout(dropout)
        _float_dtype(self.compute_dtype)  # e.g. float64 under JAX without its 64-bit mode
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
        """Compute a table of ``length`` rows; only then make it the layer's state.

        Also the digit table (:mod:`posenc._digits`) from which rows past the table are
        computed inside graphs, in float32 (float64 for a float64 layer).
        """
        table = positional_encoding(length, self.d_model, base=self.base, dtype=self.compute_dtype)
        far_dtype = "float64" if self.compute_dtype == "float64" else "float32"
        frequencies = angular_frequencies(self.d_model, base=self.base)[0::2]
        digits = _rounded(digit_table(frequencies, digit_count(64)), far_dtype)
        self.max_len, self._table, self._digits = length, table, digits
        self._last_rows = (None, None)  # (offset, seq_len), slice: reused by eager calls

    @property
    def pe(self):
        """The table, a tensor of shape ``(max_len, d_model)`` in the compute dtype."""
        return self._table

    def _rows(self, offset: int, seq_len: int):
        """Rows ``offset .. offset + seq_len - 1`` (Python ints), the table grown if need be."""
        check_window(offset, seq_len)
        end = offset + seq_len
        if end > self.max_len:
            if offset > self.max_len and end > 2 * self.max_len:  # far away: on its own
                return positional_encoding(seq_len, self.d_model, base=self.base, offset=offset,
                                           dtype=self.compute_dtype)
            self._set_table(max(end, 2 * self.max_len))
        key, rows = self._last_rows
        if key != (offset, seq_len):
            rows = ops.slice(self._table, (offset, 0), (seq_len, self.d_model))
            if _is_concrete(rows):  # a slice made in a trace belongs to that trace
                self._last_rows = ((offset, seq_len), rows)
        return rows

    def _lookup(self, positions, what: str):
        """Rows for integer ``positions`` known only at run time (any shape): the table's
        row below ``max_len``, the row computed in the graph from there on
        (:mod:`posenc._digits`); negative positions are stopped by TensorFlow's assertion,
        or else get NaN rows."""
        positions = _run_time_checks(positions, what)
        dtype = _digit_dtype(positions.dtype)
        natural = ops.cast(ops.maximum(positions, ops.zeros_like(positions)), dtype)
        n_digits = digit_count(64 if dtype.endswith("64") else 32)
        steps = [ops.convert_to_tensor(step) for step in digit_steps(n_digits, dtype)]
        sin, cos = compose(natural, self._digits, n_digits, steps,
                           lambda table, index: ops.take(table, index, axis=0))
        n = sin.shape[-1]
        order = [column // 2 + (column % 2) * n for column in range(self.d_model)]
        rows = ops.cast(ops.take(ops.concatenate([sin, cos], axis=-1), np.array(order, "int32"), axis=-1),
                        self.compute_dtype)
        if self.max_len:
            index = ops.cast(ops.minimum(natural, ops.full_like(natural, self.max_len - 1)), "int32")
            inside = ops.less(positions, ops.full_like(positions, self.max_len))
            rows = ops.where(ops.expand_dims(inside, -1), ops.take(self._table, index, axis=0), rows)
        negative = ops.expand_dims(ops.less(positions, ops.zeros_like(positions)), -1)
        return ops.where(negative, ops.full_like(rows, float("nan")), rows)

    def _rows_at(self, positions, batch_shape: tuple):
        """Rows for explicit positions, shape ``positions.shape + (d_model,)``."""
        if _is_ragged(positions) or not (ops.is_tensor(positions) or isinstance(positions, np.ndarray)):
            raise TypeError(
                "positions must be an integer tensor of shape (..., seq_len), got "
                f"{type(positions).__name__}"
            )
        dtype = keras.backend.standardize_dtype(positions.dtype)
        if not keras.backend.is_int_dtype(dtype):
            raise TypeError(
                f"positions must be an integer tensor of shape (..., seq_len), got dtype {dtype}"
            )
        shape = _static_shape(positions)
        fits = 1 <= len(shape) <= len(batch_shape) and all(
            p is None or b is None or p in (1, b) for p, b in zip(reversed(shape), reversed(batch_shape))
        ) and shape[-1] in (None, batch_shape[-1])
        if not fits:
            raise ValueError(
                f"positions must have shape (..., seq_len) broadcastable to the input's "
                f"{batch_shape}, got shape {shape}"
            )
        values = _concrete_int_array(positions)
        if values is None:
            return self._lookup(positions, "positions")
        if values.size:
            low, top = int(values.min()), int(values.max())
            check_position_range(low, top)
            if top >= self.max_len:  # computed on the host, the table left as it is
                return _rounded(encoding_at(values, self.d_model, self.base), self.compute_dtype)
        return ops.take(self._table, ops.cast(ops.convert_to_tensor(values), "int32"), axis=0)

    def call(self, inputs, offset=0, positions=None, training=None):
        """Return ``dropout(inputs + PE[offset : offset + seq_len])`` or ``dropout(inputs + PE[positions])``.

        Args:
            inputs: floating-point dense tensor of shape ``(..., seq_len, d_model)``.
            offset: position of the first row: a Python ``int >= 0`` or a scalar integer
                tensor (e.g. the number of tokens decoded so far inside a compiled step;
                same results as the ``int``), with ``offset + seq_len <= 2**53``.
            positions: instead of ``offset``, an integer tensor of shape
                ``(..., seq_len)`` broadcastable to ``inputs.shape[:-1]``, the position of
                every token, each in ``[0, 2**53)``: for left-padded batches and packed
                sequences (Hugging Face's ``position_ids``).
            training: Keras' training flag (dropout is applied only when true).

        Returns:
            Tensor of the same shape as ``inputs``, in the layer's compute dtype.

        Raises:
            TypeError: ``inputs`` is not floating-point, ``offset`` is not an integer (or
                integer tensor), or ``positions`` is not an integer tensor.
            ValueError: the last dimension of ``inputs`` is not ``d_model``, ``offset``
                is negative or not a scalar, the positions reach past ``2**53`` or are
                negative, ``positions`` has the wrong shape, or both ``offset`` and
                ``positions`` are given.
            tf.errors.InvalidArgumentError: (TensorFlow graphs) negative positions known
                only at run time.
        """
        dtype = keras.backend.standardize_dtype(inputs.dtype)
        if not keras.backend.is_float_dtype(dtype):
            raise TypeError(f"inputs must be a floating-point tensor, got dtype {dtype}")
        shape = _static_shape(inputs)
        check_width(self.d_model, shape[-1])
        seq_len = shape[-2]
        if positions is not None:
            if ops.is_tensor(offset) or not (isinstance(offset, int) and offset == 0):
                raise ValueError("pass either offset or positions, not both")
            pe = self._rows_at(positions, shape[:-1])
        else:
            offset = _scalar_index("offset", offset)
            if isinstance(offset, int) and seq_len is not None:  # known now: slice the table
                pe = self._rows(offset, seq_len)
            else:  # known only at run time: looked up or computed in the graph
                length = ops.shape(inputs)[-2]
                if isinstance(offset, int):
                    window = offset + ops.arange(length, dtype="int32" if offset < 2**30 else "int64")
                else:
                    window = offset + ops.arange(length, dtype=offset.dtype)
                pe = self._lookup(window, "positions")
        outputs = inputs + ops.cast(pe, inputs.dtype)
        if training and self.rate > 0:
            outputs = self.dropout_layer(outputs, training=training)
        return outputs

    def __call__(self, inputs, *args, **kwargs):
        if _is_ragged(inputs):  # Keras would fail deep inside with "not uniform"
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


# Files saved under the layer's first registered name load too.
keras.saving.get_custom_objects().setdefault("posenc>PositionalEncoding", PositionalEncoding)
