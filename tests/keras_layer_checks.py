"""What keras-hub's tests check of every modeling layer, for the ported keras-hub tests.

keras-hub's test files call ``TestCase.run_layer_test`` (keras_hub/src/tests/test_case.py,
0.32.0), which imports TensorFlow and keras-hub; :func:`run_layer_test` makes the same
checks of a layer without weights, with Keras alone, so that the ported tests run under
every backend: the config and serialization round trips, ``build``, a symbolic call, an
eager call, one step of ``fit`` and, except on the PyTorch backend without a GPU (as in
keras-hub), the mixed-precision policies.
"""

import json
import warnings

import keras
import numpy as np
from keras import ops

BACKEND = keras.backend.backend()


def numpy_of(tensor) -> np.ndarray:
    """A backend tensor (or nested lists of numbers) as a NumPy array of the same dtype
    (bfloat16 through ml_dtypes)."""
    values = ops.convert_to_numpy(tensor)
    if hasattr(tensor, "dtype") and keras.backend.standardize_dtype(tensor.dtype) == "bfloat16":
        import ml_dtypes

        values = values.astype(ml_dtypes.bfloat16)
    return values


def compiled(function, signature=None):
    """``function`` compiled by the backend: XLA for TensorFlow (with ``signature``, a list
    of ``tf.TensorSpec`` arguments ``(shape, dtype)``, sizes ``None`` unknown when traced)
    and JAX, eager for PyTorch (whose ``jit_compile`` means minutes of torch.compile)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        specs = None if signature is None else [tf.TensorSpec(*spec) for spec in signature]
        return tf.function(function, jit_compile=True, input_signature=specs)
    if BACKEND == "jax":
        import jax

        return jax.jit(function)
    return function


def _dtype(tensor) -> str:
    return keras.backend.standardize_dtype(tensor.dtype)


def _check_serialization(layer):
    config = layer.get_config()
    as_json = json.dumps(config, sort_keys=True)
    assert json.dumps(type(layer).from_config(config).get_config(), sort_keys=True) == as_json
    serialized = json.loads(json.dumps(keras.saving.serialize_keras_object(layer)))
    revived = keras.saving.deserialize_keras_object(serialized)
    assert type(revived) is type(layer)
    assert json.dumps(revived.get_config(), sort_keys=True) == as_json


def _check_output(layer, output, expected_shape):
    assert tuple(output.shape) == tuple(expected_shape), "unexpected output shape"
    assert _dtype(output) == keras.backend.standardize_dtype(layer.compute_dtype)


def run_layer_test(cls, init_kwargs: dict, input_data, expected_output_shape):
    """keras-hub's ``run_layer_test`` for a layer without weights (see the module docstring)."""
    _check_serialization(cls(**init_kwargs))
    layer = cls(**init_kwargs)
    layer.build(tuple(input_data.shape))
    assert layer.built and not layer.weights and not layer.non_trainable_variables
    layer = cls(**init_kwargs)
    symbolic = layer(keras.KerasTensor(tuple(input_data.shape), _dtype(input_data)))
    assert layer.built and not layer.weights
    _check_output(layer, symbolic, expected_output_shape)
    layer = cls(**init_kwargs)
    output = layer(input_data)
    _check_output(layer, output, expected_output_shape)

    class Wrapper(keras.Model):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def call(self, x):
            return self.inner(x)

    model = Wrapper(layer)  # keras-hub compiles with XLA, except on PyTorch
    model.compile(optimizer="sgd", loss="mse", jit_compile=BACKEND != "torch")
    with warnings.catch_warnings():  # nothing to train: the step runs the layer in the graph
        warnings.filterwarnings("ignore", "The model does not have any trainable weights")
        model.fit(numpy_of(input_data), numpy_of(output), verbose=0)

    if BACKEND == "torch":  # keras-hub skips mixed precision on PyTorch without a GPU
        import torch

        if not torch.cuda.is_available():
            return
    for name in ("mixed_float16", "mixed_bfloat16", "bfloat16"):
        policy = keras.mixed_precision.Policy(name)
        layer = cls(**init_kwargs, dtype=policy)
        assert _dtype(layer(input_data)) == policy.compute_dtype
        assert _dtype(layer.compute_output_spec(input_data)) == policy.compute_dtype
        assert layer.compute_dtype == policy.compute_dtype
