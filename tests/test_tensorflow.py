"""posenc.tensorflow: the tensor factory and the Keras layer."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import keras  # noqa: E402

import posenc  # noqa: E402
import posenc.tensorflow  # noqa: E402
from posenc.tensorflow import PositionalEncoding, positional_encoding  # noqa: E402


def test_factory_matches_numpy():
    got = positional_encoding(50, 7, base=100.0, offset=3, dtype=tf.float64)
    np.testing.assert_array_equal(got.numpy(), posenc.positional_encoding(50, 7, base=100.0, offset=3))
    assert positional_encoding(4, 6).dtype == tf.float32


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_factory_rounds_to_nearest(dtype):
    # Large enough that a conversion through float32 would miss the nearest value (for
    # bfloat16, 11 of these 2 million entries), so the check can fail.
    exact = posenc.positional_encoding(4096, 512)
    got = positional_encoding(4096, 512, dtype=dtype).numpy()  # NumPy (ml_dtypes for bfloat16)
    error = np.abs(got.astype(np.float64) - exact)
    for direction in (np.inf, -np.inf):
        neighbour = np.nextafter(got, np.full_like(got, direction))
        assert np.all(error <= np.abs(neighbour.astype(np.float64) - exact))


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


@pytest.mark.parametrize("d_model", [64, 65])
@pytest.mark.parametrize("offset", [0, 1234])
def test_numpy_pytorch_tensorflow_agree(d_model, offset):
    torch = pytest.importorskip("torch")
    from posenc.pytorch import PositionalEncoding as TorchPositionalEncoding

    exact = posenc.positional_encoding(300, d_model, offset=offset)
    results = {
        "numpy": posenc.positional_encoding(300, d_model, offset=offset, dtype=np.float32),
        "pytorch": TorchPositionalEncoding(d_model, 100)(torch.zeros(300, d_model), offset).numpy(),
        "tensorflow": PositionalEncoding(100)(tf.zeros((300, d_model)), offset=offset).numpy(),
    }
    for name, values in results.items():
        assert np.abs(values - exact).max() <= 1e-7, name
        assert np.abs(values - results["numpy"]).max() <= 1e-7, name


def test_table_is_not_recomputed_per_call(monkeypatch):
    calls = []
    original = posenc.tensorflow.positional_encoding
    monkeypatch.setattr(posenc.tensorflow, "positional_encoding",
                        lambda *a, **k: calls.append(a) or original(*a, **k))
    layer = PositionalEncoding(max_len=16)
    for seq_len in (4, 9, 16, 9):
        layer(tf.zeros((2, seq_len, 8)))
    assert len(calls) == 1


def test_unknown_sequence_length_in_functional_model():
    inputs = keras.Input(shape=(None, 8))
    model = keras.Model(inputs, PositionalEncoding(max_len=32)(inputs))
    for seq_len in (3, 17, 40):  # 40 > max_len
        out = model(np.zeros((2, seq_len, 8), "float32"))
        np.testing.assert_allclose(out.numpy()[1], posenc.positional_encoding(seq_len, 8), atol=1e-7)


@pytest.mark.parametrize("seq_len, offset, grown", [(25, 0, 25), (1, 15, 20), (3, 7, 10)])
def test_grows_past_max_len_in_eager_mode(seq_len, offset, grown):
    layer = PositionalEncoding(max_len=10)
    layer(tf.zeros((1, 4, 8)))
    out = layer(tf.zeros((1, seq_len, 8)), offset=offset)
    assert layer.max_len == grown
    np.testing.assert_allclose(out.numpy()[0], posenc.positional_encoding(seq_len, 8, offset=offset),
                               atol=1e-7)


@pytest.mark.parametrize("d_model", [8, 9])
def test_computes_past_the_table_when_length_is_known_only_at_run_time(d_model):
    layer = PositionalEncoding(max_len=10)
    run = tf.function(lambda x: layer(x, offset=3),
                      input_signature=[tf.TensorSpec([None, None, d_model], tf.float32)])
    for seq_len in (5, 30):  # 3 + 30 is past the table of 10 positions
        out = run(tf.zeros((2, seq_len, d_model)))
        np.testing.assert_allclose(out.numpy()[0], posenc.positional_encoding(seq_len, d_model, offset=3),
                                   atol=1e-7)
    assert layer.max_len == 10  # nothing grew: the extra rows were computed on the fly


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


def test_float64_layer_keeps_float64():
    layer = PositionalEncoding(max_len=10, dtype="float64")
    out = layer(tf.zeros((1, 5, 8), tf.float64))
    assert out.dtype == tf.float64
    np.testing.assert_array_equal(out.numpy()[0], posenc.positional_encoding(5, 8))


@pytest.fixture
def mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.usefixtures("mixed_float16")
def test_mixed_float16_policy():
    inputs = keras.Input(shape=(None,), dtype="int32")
    outputs = PositionalEncoding(max_len=32)(keras.layers.Embedding(20, 8)(inputs))
    model = keras.Model(inputs, outputs)
    out = model(np.zeros((1, 20), "int32"))
    assert out.dtype == tf.float16
    embedding = model.layers[1](np.zeros((1, 20), "int32")).numpy().astype(np.float64)
    np.testing.assert_allclose(out.numpy() - embedding, posenc.positional_encoding(20, 8)[None],
                               atol=2e-3)


def test_float16_layer():
    out = PositionalEncoding(max_len=10, dtype="float16")(tf.zeros((1, 5, 8)))
    assert out.dtype == tf.float16
    np.testing.assert_array_equal(out.numpy()[0], posenc.positional_encoding(5, 8, dtype=np.float16))


@pytest.mark.parametrize("x, offset, error, message", [
    (tf.zeros((2, 5, 6)), 0, ValueError, "last dimension is 6 but this positional encoding has d_model=8"),
    (tf.zeros((1, 5, 8)), -1, ValueError, "offset must be an integer >= 0, got -1"),
    (tf.zeros((1, 5, 8)), 0.5, TypeError, "offset must be an integer, got float 0.5"),
    (tf.zeros((1, 5, 8), tf.int32), 0, TypeError, "floating-point tensor, got dtype int32"),
])
def test_call_errors(x, offset, error, message):
    layer = PositionalEncoding(max_len=10)
    layer.build((None, None, 8))
    with pytest.raises(error, match=message):
        layer(x, offset=offset)


@pytest.mark.parametrize("shape", [(None, 5, None), (8,)])
def test_unknown_width_or_rank_below_two_is_rejected(shape):
    with pytest.raises(ValueError, match=r"shape \(\.\.\., seq_len, d_model\) with a known d_model"):
        PositionalEncoding().build(shape)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"max_len": -1}, ValueError, "max_len must be an integer >= 0"),
    ({"max_len": 10.0}, TypeError, "max_len must be an integer, got float"),
    ({"base": 0.0}, ValueError, "base must be a finite number > 0"),
    ({"base": float("inf")}, ValueError, "base must be a finite number > 0"),
])
def test_constructor_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        PositionalEncoding(**kwargs)
