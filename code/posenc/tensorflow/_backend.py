"""What the Keras layers of :mod:`posenc.tensorflow` share: dtypes, constants made outside
traces, and static shapes, on every backend of Keras 3 (``keras.ops`` and, where a backend
needs it, the module Keras has already imported for it)."""

from __future__ import annotations

import contextlib
import sys

import keras
import numpy as np
from keras import ops

from .._validate import check_int
from ..encoding import float32_round_to_odd

#: The package name under which the layer is registered for saving: a ``.keras`` file names
#: the layer ``"posenc.tensorflow>PositionalEncoding"`` (and
#: likewise every layer of the package), the module to import before loading.
REGISTERED_PACKAGE = "posenc.tensorflow"



def _jax():
    """The ``jax`` module, which Keras has imported when JAX is its backend (the only case
    that calls this); the package's ``[tensorflow]`` extra does not install JAX."""
    return sys.modules["jax"]


def _float_dtype(dtype) -> str:
    """The Keras name of a floating-point ``dtype`` (a name, NumPy, TensorFlow, torch or JAX dtype)."""
    try:
        name = keras.backend.standardize_dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype!r}") from None
    if not keras.backend.is_float_dtype(name):
        raise TypeError(f"dtype must be a floating-point dtype, got {name}")
    if name == "float64" and keras.backend.backend() == "jax":
        jax = _jax()
        if not jax.config.jax_enable_x64:
            raise TypeError(
                "dtype float64 needs JAX's 64-bit mode (JAX_ENABLE_X64=1, or "
                "jax.config.update('jax_enable_x64', True) before any computation)"
            )
    return name


def _outside_traces():
    """A context in which new tensors are concrete, even while a function is being traced.

    TensorFlow: ``tf.init_scope`` (an eager tensor, never one owned by a graph being
    traced); JAX: ``jax.ensure_compile_time_eval``; PyTorch: the real device (Keras' symbolic
    calls run on the meta device, whose tensors hold no values).
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.init_scope()
    if backend == "jax":
        jax = _jax()
        return jax.ensure_compile_time_eval()
    if backend == "torch":  # Keras traces symbolic calls on the meta device
        torch = sys.modules["torch"]  # imported by Keras' torch backend: no dependency of ours
        return keras.device("cuda" if torch.cuda.is_available() else "cpu")
    return contextlib.nullcontext()


def _is_concrete(tensor) -> bool:
    """Whether ``tensor`` holds values now (not a graph tensor, a JAX tracer or a meta tensor)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.executing_eagerly() and hasattr(tensor, "numpy")
    if backend == "jax":
        jax = _jax()
        return not isinstance(tensor, jax.core.Tracer)
    if backend == "torch":
        return tensor.device.type != "meta"
    return False


def _concrete_int_array(tensor):
    """The values of an integer tensor as a NumPy array, or ``None`` if known only at run time."""
    if isinstance(tensor, (np.ndarray, np.integer)):
        return np.asarray(tensor)
    return ops.convert_to_numpy(tensor) if _is_concrete(tensor) else None


def _rounded(values: np.ndarray, dtype: str):
    """Float64 ``values`` as a concrete backend tensor of ``dtype``, each the nearest value.

    Types narrower than float32 go through float32 rounded "to odd" first
    (:func:`posenc.encoding.float32_round_to_odd`), so the cast to ``dtype`` lands on the
    nearest value instead of rounding twice.
    """
    if dtype in ("float16", "bfloat16"):
        values = float32_round_to_odd(values)
    elif dtype == "float32":
        values = values.astype(np.float32)
    with _outside_traces():
        return ops.cast(ops.convert_to_tensor(values), dtype)


def _static_shape(tensor) -> tuple:
    """The shape as a tuple of ints, with ``None`` for sizes known only at run time."""
    return tuple(None if size is None else int(size) for size in tensor.shape)


def _is_ragged(tensor) -> bool:
    return type(tensor).__name__ == "RaggedTensor"  # without importing TensorFlow


def _scalar_index(name: str, value):
    """A position given as a Python ``int >= 0`` (returned as an ``int``) or as a scalar
    integer tensor: its value as an ``int`` when concrete, else the tensor itself (known
    only at run time).

    Raises:
        TypeError: ``value`` is neither an integer nor an integer tensor.
        ValueError: ``value`` is negative or a tensor that is not 0-dimensional.
    """
    if not (ops.is_tensor(value) or isinstance(value, (np.ndarray, np.integer))):
        return check_int(name, value)
    dtype = keras.backend.standardize_dtype(value.dtype)
    if not keras.backend.is_int_dtype(dtype):
        raise TypeError(
            f"{name} must be an integer or an integer tensor, got a tensor of dtype {dtype}"
        )
    if len(value.shape) != 0:
        raise ValueError(
            f"{name} must be a scalar (0-dimensional) tensor, got shape {_static_shape(value)}"
        )
    concrete = _concrete_int_array(value)
    return value if concrete is None else check_int(name, int(concrete))
