"""posenc.tensorflow.PositionalEncoding on the paths users ship with: a .keras file (saved,
reloaded, served at any length in a compiled function), its registered names, SavedModel
export and TFLite with builtin ops only.

Tests not marked ``tf_only`` are backend-independent: tests/test_keras_backends.py runs this
file again under JAX and PyTorch, as tests/test_tensorflow.py.
"""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

import posenc  # noqa: E402
import posenc.tensorflow  # noqa: E402
from posenc.tensorflow import PositionalEncoding  # noqa: E402

from keras_layer_checks import BACKEND, compiled, numpy_of  # noqa: E402

tf = pytest.importorskip("tensorflow") if BACKEND == "tensorflow" else None
tf_only = pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow backend only")


def test_a_saved_model_serves_any_length(tmp_path):
    """max_len=16, served at length 40 from a .keras file reloaded into a compiled function
    (XLA under TensorFlow, jax.jit, eager PyTorch): equal to the eager rows."""
    inputs = keras.Input(shape=(None, 8))
    keras.Model(inputs, PositionalEncoding(max_len=16)(inputs)).save(tmp_path / "m.keras")
    reloaded = keras.models.load_model(tmp_path / "m.keras")
    x = np.random.default_rng(3).standard_normal((2, 40, 8)).astype("float32")
    got = numpy_of(compiled(lambda t: reloaded(t))(x))
    np.testing.assert_allclose(got, x + posenc.positional_encoding(40, 8).astype("float32"),
                               rtol=0, atol=1e-6)
    if BACKEND == "tensorflow":  # and in an ordinary tf.function with a dynamic length
        run = tf.function(lambda t: reloaded(t), input_signature=[tf.TensorSpec([None, None, 8])])
        np.testing.assert_allclose(run(x).numpy(), got, rtol=0, atol=1e-6)


def test_loading_without_importing_posenc_names_the_module(tmp_path):
    """A .keras file loaded in a fresh Python that never imported posenc.tensorflow: Keras'
    error names the registered name "posenc.tensorflow>PositionalEncoding" (the docstring's
    saving section says to import it)."""
    import subprocess
    import sys

    inputs = keras.Input(shape=(None, 8))
    keras.Model(inputs, PositionalEncoding(max_len=16)(inputs)).save(tmp_path / "m.keras")
    code = f"import keras; keras.models.load_model({str(tmp_path / 'm.keras')!r})"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "Could not locate class 'PositionalEncoding'" in run.stderr
    assert "'registered_name': 'posenc.tensorflow>PositionalEncoding'" in run.stderr
    assert "import posenc.tensorflow" in PositionalEncoding.__doc__


def test_files_saved_under_the_first_registered_name_load():
    layer = keras.saving.deserialize_keras_object(
        {"module": "posenc.tensorflow", "class_name": "PositionalEncoding",
         "config": {"max_len": 16}, "registered_name": "posenc>PositionalEncoding"})
    assert isinstance(layer, PositionalEncoding) and layer.max_len == 16


def test_save_and_load(tmp_path):
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(20, 8)(inputs)
    x = PositionalEncoding(max_len=16, base=100.0, dropout=0.1, name="pe")(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(x))
    tokens = np.arange(10).reshape(2, 5).astype("int32")
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(numpy_of(loaded(tokens)), numpy_of(model(tokens)))
    assert loaded.get_layer("pe").get_config()["base"] == 100.0


def test_config_round_trip():
    layer = PositionalEncoding(max_len=12, base=50.0, dropout=0.2, name="posenc")
    config = layer.get_config()
    assert {k: config[k] for k in ("max_len", "base", "dropout", "name")} == {
        "max_len": 12, "base": 50.0, "dropout": 0.2, "name": "posenc"}
    assert PositionalEncoding.from_config(config).get_config() == config


def encoder(seq_len):
    """A small model to ship: positional encoding then a dense layer, on inputs of shape
    ``(batch, seq_len, 8)`` (``seq_len`` None: a dynamic length)."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(seq_len, 8))
    return keras.Model(inputs, keras.layers.Dense(4)(PositionalEncoding(max_len=32)(inputs)))


def run_tflite(flatbuffer, x):
    interpreter = tf.lite.Interpreter(model_content=flatbuffer)
    index = interpreter.get_input_details()[0]["index"]
    interpreter.resize_tensor_input(index, x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(index, x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


@tf_only
@pytest.mark.filterwarnings(r"ignore:\s*Warning. tf.lite.Interpreter is deprecated:UserWarning")
@pytest.mark.parametrize("seq_len", [12, None])
def test_tflite_with_builtin_ops_only(seq_len):
    model = encoder(seq_len)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # no TensorFlow ops
    flatbuffer = converter.convert()
    rng = np.random.default_rng(0)
    for length in [12] if seq_len else [1, 12, 32, 40, 300]:  # past the table (32) too
        x = rng.standard_normal((2, length, 8)).astype("float32")
        np.testing.assert_allclose(run_tflite(flatbuffer, x), model(x).numpy(), rtol=0, atol=1e-5)


@tf_only
def test_saved_model_export_reloads_and_matches(tmp_path):
    model = encoder(None)
    model.export(tmp_path / "saved", verbose=False)
    reloaded = tf.saved_model.load(tmp_path / "saved")
    for length in (20, 40):  # max_len=32: 40 is served past the table
        x = np.random.default_rng(0).standard_normal((2, length, 8)).astype("float32")
        np.testing.assert_allclose(reloaded.serve(x).numpy(), model(x).numpy(), rtol=0, atol=1e-6)
