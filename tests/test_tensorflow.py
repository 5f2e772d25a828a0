"""posenc.tensorflow: the tensor factory and the Keras layer."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import keras  # noqa: E402

import posenc  # noqa: E402
from posenc.tensorflow import PositionalEncoding, positional_encoding  # noqa: E402


def test_factory_matches_numpy():
    got = positional_encoding(50, 7, base=100.0, offset=3, dtype=tf.float64)
    np.testing.assert_array_equal(got.numpy(), posenc.positional_encoding(50, 7, base=100.0, offset=3))
    assert positional_encoding(4, 6).dtype == tf.float32


def test_factory_rejects_integer_dtype():
    with pytest.raises(TypeError, match="floating-point dtype, got int32"):
        positional_encoding(4, 6, dtype="int32")


@pytest.mark.parametrize("d_model", [1, 6, 7])
@pytest.mark.parametrize("offset", [0, 5])
def test_call_adds_the_table(d_model, offset):
    x = np.random.default_rng(0).standard_normal((2, 10, d_model)).astype("float32")
    got = PositionalEncoding(max_len=64)(x, offset=offset).numpy()
    expected = x + posenc.positional_encoding(10, d_model, offset=offset)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


def test_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    from posenc.pytorch import positional_encoding as torch_encoding

    for d_model in (8, 9):
        tf_values = positional_encoding(300, d_model, offset=17).numpy()
        torch_values = torch_encoding(300, d_model, offset=17).numpy()
        assert np.abs(tf_values - torch_values).max() <= 1e-7


def test_unknown_sequence_length_in_functional_model():
    inputs = keras.Input(shape=(None, 8))
    model = keras.Model(inputs, PositionalEncoding(max_len=32)(inputs))
    for seq_len in (3, 17):
        out = model(np.zeros((2, seq_len, 8), "float32"))
        np.testing.assert_allclose(out.numpy()[1], posenc.positional_encoding(seq_len, 8), atol=1e-7)


def test_save_and_load(tmp_path):
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(20, 8)(inputs)
    x = PositionalEncoding(max_len=16, base=100.0, dropout=0.1, name="pe")(x)
    model = keras.Model(inputs, keras.layers.Dense(2)(x))
    tokens = np.arange(10).reshape(2, 5)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    np.testing.assert_array_equal(loaded(tokens).numpy(), model(tokens).numpy())
    assert loaded.get_layer("pe").get_config()["base"] == 100.0


def test_config_round_trip():
    layer = PositionalEncoding(max_len=12, base=50.0, dropout=0.2, name="posenc")
    config = layer.get_config()
    assert {k: config[k] for k in ("max_len", "base", "dropout", "name")} == {
        "max_len": 12, "base": 50.0, "dropout": 0.2, "name": "posenc"}
    assert PositionalEncoding.from_config(config).get_config() == config


def test_dropout_only_when_training():
    keras.utils.set_random_seed(0)
    layer = PositionalEncoding(max_len=16, dropout=0.5)
    x = tf.ones((4, 16, 64))
    assert np.any(layer(x, training=True).numpy() == 0)
    np.testing.assert_allclose(layer(x).numpy(), x.numpy() + posenc.positional_encoding(16, 64),
                               atol=1e-6)


def test_output_keeps_input_dtype():
    layer = PositionalEncoding(max_len=10, dtype="float64")
    out = layer(tf.zeros((1, 5, 8), tf.float64))
    assert out.dtype == tf.float64


@pytest.mark.parametrize("x, offset, error, message", [
    (tf.zeros((2, 5, 6)), 0, ValueError, "last dimension is 6 but this positional encoding has d_model=8"),
    (tf.zeros((1, 11, 8)), 0, ValueError, "do not fit in the table of max_len=10"),
    (tf.zeros((1, 5, 8)), 6, ValueError, r"positions 6..10 do not fit"),
    (tf.zeros((1, 5, 8)), -1, ValueError, "offset must be an integer >= 0, got -1"),
    (tf.zeros((1, 5, 8), tf.int32), 0, TypeError, "floating-point tensor, got dtype int32"),
])
def test_call_errors(x, offset, error, message):
    layer = PositionalEncoding(max_len=10)
    layer.build((None, None, 8))
    with pytest.raises(error, match=message):
        layer(x, offset=offset)


def test_unknown_width_is_rejected():
    with pytest.raises(ValueError, match="known d_model"):
        PositionalEncoding().build((None, 5, None))
