"""posenc.tensorflow: the tensor factory and the Keras layer."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import keras  # noqa: E402

import posenc  # noqa: E402
import posenc.tensorflow  # noqa: E402
from posenc.tensorflow import PositionalEncoding, positional_encoding  # noqa: E402

from reference import assert_nearest, exact_encoding, exactly, whole_line  # noqa: E402


def test_factory_matches_numpy():
    got = positional_encoding(50, 7, base=100.0, offset=3, dtype=tf.float64)
    np.testing.assert_array_equal(got.numpy(), posenc.positional_encoding(50, 7, base=100.0, offset=3))
    assert positional_encoding(4, 6).dtype == tf.float32


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_factory_rounds_to_nearest(dtype):
    # Large enough that a conversion through float32 would miss the nearest value (for
    # bfloat16, 11 of these 2 million entries), so the check can fail.
    got = positional_encoding(4096, 512, dtype=dtype).numpy()  # NumPy (ml_dtypes for bfloat16)
    assert_nearest(got, posenc.positional_encoding(4096, 512))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("jit_compile", [False, True])
def test_graph_path_rounds_to_nearest(dtype, jit_compile):
    """Rows computed by TensorFlow ops (past the table, length known only at run time)
    are the nearest values of the dtype too: rounding to odd in float32 bits first."""
    def graph_path(dtype):
        layer = PositionalEncoding(max_len=0, dtype=dtype)
        run = tf.function(lambda x: layer(x), jit_compile=jit_compile,
                          input_signature=[tf.TensorSpec([1, None, 512], dtype)])
        out = run(tf.zeros((1, 4096, 512), dtype)).numpy()[0]
        assert layer.max_len == 0  # every row came from the graph path
        return out

    # The path's own float64 values (checked against mpmath on a few rows) are what each
    # narrower result must be the nearest value to.
    float64 = graph_path("float64")
    np.testing.assert_allclose(float64[::500], exact_encoding(range(0, 4096, 500), 512),
                               rtol=0, atol=4096 * 2.0**-52)
    got = graph_path(dtype)
    assert got.dtype.name == dtype
    assert_nearest(got, float64)


def test_factory_rejects_integer_dtype():
    with pytest.raises(TypeError, match=exactly("dtype must be a floating-point dtype, got int32")):
        positional_encoding(4, 6, dtype="int32")


@pytest.mark.parametrize("base", [100.0, 2.5])
def test_layer_uses_its_base(base):
    out = PositionalEncoding(max_len=20, base=base, dtype="float64")(tf.zeros((1, 20, 6), tf.float64))
    np.testing.assert_allclose(out.numpy()[0], exact_encoding(range(20), 6, base), rtol=0, atol=1e-13)


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


class TinyModel(keras.Model):
    """A subclassed model as users write them: embedding, positional encoding, dense."""

    def __init__(self, max_len):
        super().__init__()
        self.embedding = keras.layers.Embedding(20, 8)
        self.encoding = PositionalEncoding(max_len=max_len)
        self.dense = keras.layers.Dense(1)

    def call(self, tokens, training=None):
        return self.dense(self.encoding(self.embedding(tokens), training=training))


def training_data(seq_len):
    tokens = np.arange(4 * seq_len).reshape(4, seq_len) % 20
    return tokens, np.zeros((4, seq_len, 1), "float32")


def assert_layer_encodes(layer, seq_len, d_model=8, offset=0):
    """The layer, called eagerly on zeros, gives the encoding (against mpmath)."""
    out = layer(tf.zeros((1, seq_len, d_model)), offset=offset).numpy()[0]
    np.testing.assert_allclose(out, exact_encoding(range(offset, offset + seq_len), d_model),
                               rtol=0, atol=6e-8)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_subclassed_model_fit_without_an_eager_call(jit_compile):
    keras.utils.set_random_seed(0)
    model = TinyModel(max_len=16)
    model.compile("sgd", "mse", jit_compile=jit_compile)
    model.fit(*training_data(10), epochs=2, verbose=0)  # the layer is built inside fit
    assert model.predict(training_data(10)[0], verbose=0).shape == (4, 10, 1)
    assert_layer_encodes(model.encoding, 10)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_first_call_inside_tf_function_then_eager(jit_compile):
    layer = PositionalEncoding(max_len=16)
    run = tf.function(lambda x: layer(x, offset=2), jit_compile=jit_compile)
    np.testing.assert_allclose(run(tf.zeros((1, 5, 8))).numpy()[0], exact_encoding(range(2, 7), 8),
                               rtol=0, atol=6e-8)
    assert_layer_encodes(layer, 5)
    assert_layer_encodes(layer, 40, offset=3)  # eager growth after the traced build


@pytest.mark.parametrize("jit_compile", [False, True])
def test_functional_model_grows_inside_fit(jit_compile):
    keras.utils.set_random_seed(0)
    tokens = keras.Input(shape=(None,), dtype="int32")
    encoding = PositionalEncoding(max_len=4)
    model = keras.Model(tokens, keras.layers.Dense(1)(encoding(keras.layers.Embedding(20, 8)(tokens))))
    model.compile("sgd", "mse", jit_compile=jit_compile)
    model.fit(*training_data(10), epochs=1, verbose=0, batch_size=4)
    assert model.predict(training_data(10)[0], verbose=0).shape == (4, 10, 1)
    assert model(training_data(12)[0]).shape == (4, 12, 1)
    assert_layer_encodes(encoding, 10)


def test_fit_with_dropout_and_a_mask():
    keras.utils.set_random_seed(0)
    tokens = keras.Input(shape=(None,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(tokens)
    x = PositionalEncoding(max_len=16, dropout=0.1)(x)
    model = keras.Model(tokens, keras.layers.Dense(1)(x))
    model.compile("adam", "mse")
    history = model.fit(*training_data(10), epochs=3, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


def test_unknown_sequence_length_in_functional_model():
    inputs = keras.Input(shape=(None, 8))
    model = keras.Model(inputs, PositionalEncoding(max_len=32)(inputs))
    for seq_len in (3, 17, 40):  # 40 > max_len
        out = model(np.zeros((2, seq_len, 8), "float32"))
        np.testing.assert_allclose(out.numpy()[1], posenc.positional_encoding(seq_len, 8), atol=1e-7)


@pytest.mark.parametrize("seq_len, offset, grown", [
    (25, 0, 25), (1, 15, 20), (3, 7, 10), (2, 11, 20),
    (3, 25, 10), (2, 2**40, 10), (2, 2**52, 10),  # far past the table: computed on their own
])
def test_grows_past_max_len_in_eager_mode(seq_len, offset, grown):
    layer = PositionalEncoding(max_len=10, dtype="float64")
    layer(tf.zeros((1, 4, 8), tf.float64))
    out = layer(tf.zeros((1, seq_len, 8), tf.float64), offset=offset)
    assert layer.max_len == grown and layer.pe.shape == (grown, 8)
    expected = exact_encoding(range(offset, offset + seq_len), 8)
    np.testing.assert_allclose(out.numpy()[0], expected, rtol=0, atol=max(offset * 2.0**-52, 1e-15))


def test_failed_growth_leaves_the_layer_as_it_was(monkeypatch):
    layer = PositionalEncoding(max_len=10)
    layer(tf.zeros((1, 4, 8)))

    def out_of_memory(*args, **kwargs):
        raise MemoryError("simulated")
    monkeypatch.setattr(posenc.tensorflow, "positional_encoding", out_of_memory)
    with pytest.raises(MemoryError):
        layer(tf.zeros((1, 30, 8)))
    assert layer.max_len == 10 and layer.pe.shape == (10, 8)
    monkeypatch.undo()
    assert_layer_encodes(layer, 5, offset=3)


@pytest.mark.parametrize("offset", [2**31 - 2, 2**31, 2**32 + 7, 2**40])
def test_int64_positions_when_length_is_known_only_at_run_time(offset):
    layer = PositionalEncoding(max_len=10, dtype="float64")
    signature = [tf.TensorSpec([None, None, 8], tf.float64)]
    python_int = tf.function(lambda x: layer(x, offset=offset), input_signature=signature)
    tensor = tf.function(lambda x, t: layer(x, offset=t),
                         input_signature=signature + [tf.TensorSpec([], tf.int64)])
    expected = exact_encoding(range(offset, offset + 5), 8)
    for out in (python_int(tf.zeros((1, 5, 8), tf.float64)),
                tensor(tf.zeros((1, 5, 8), tf.float64), tf.constant(offset, tf.int64))):
        assert out.shape == (1, 5, 8)
        np.testing.assert_allclose(out.numpy()[0], expected, rtol=0, atol=offset * 2.0**-52)


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


def test_tensor_offset_equals_int_offset():
    layer = PositionalEncoding(max_len=10)
    x = tf.random.stateless_normal((2, 4, 6), seed=[1, 2])
    for offset in (0, 3, 8, 50, 2**40):  # in, across and far past the table
        expected = layer(x, offset=offset).numpy()
        for tensor in (tf.constant(offset, tf.int64), np.int64(offset), np.array(offset)):
            np.testing.assert_array_equal(layer(x, offset=tensor).numpy(), expected)
    small = tf.constant(3, tf.int32)
    np.testing.assert_array_equal(layer(x, offset=small).numpy(), layer(x, offset=3).numpy())


@pytest.mark.parametrize("jit_compile", [False, True])
def test_tensor_offset_in_a_decoding_loop(jit_compile):
    """keras-hub's start_index: one token at a time inside a compiled step."""
    layer = PositionalEncoding(max_len=8)
    step = tf.function(lambda x, t: layer(x, offset=t), jit_compile=jit_compile)
    x = tf.zeros((2, 1, 8))
    for t in (0, 1, 7, 8, 30):  # the last two are past the table: computed by TensorFlow ops
        got = step(x, tf.constant(t)).numpy()[0]
        np.testing.assert_allclose(got, exact_encoding([t], 8), rtol=0, atol=6e-8)
    assert layer.max_len == 8 and step.experimental_get_tracing_count() == 1  # one trace for all


@pytest.mark.parametrize("jit_compile", [False, True, None])
def test_positions_of_a_left_padded_batch(jit_compile):
    layer = PositionalEncoding(max_len=16, dtype="float64")
    call = (lambda x, p: layer(x, positions=p)) if jit_compile is None else tf.function(
        lambda x, p: layer(x, positions=p), jit_compile=jit_compile)
    x = tf.zeros((2, 5, 8), tf.float64)
    # Sequence 0 has two padding tokens on the left: its real tokens are at 0, 1, 2.
    positions = tf.constant([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]])
    out = call(x, positions).numpy()
    np.testing.assert_allclose(out[0, 2:], exact_encoding(range(3), 8), rtol=0, atol=1e-15)
    np.testing.assert_allclose(out[1], exact_encoding(range(5), 8), rtol=0, atol=1e-15)
    far = tf.constant([[0, 20, 2**40, 3, 4]], tf.int64)  # past the table: TensorFlow ops
    out = call(x, far).numpy()
    expected = exact_encoding([0, 20, 2**40, 3, 4], 8)
    np.testing.assert_allclose(out[0], expected, rtol=0, atol=2**40 * 2.0**-52)
    np.testing.assert_allclose(out[1], expected, rtol=0, atol=2**40 * 2.0**-52)
    assert layer.max_len == 16


@pytest.mark.parametrize("kwargs, error, message", [
    ({"positions": tf.zeros(5)}, TypeError,
     "positions must be an integer tensor of shape (..., seq_len), got dtype float32"),
    ({"positions": [0, 1, 2, 3, 4]}, TypeError,
     "positions must be an integer tensor of shape (..., seq_len), got list"),
    ({"positions": tf.range(4)}, ValueError,
     "positions must have shape (..., seq_len) broadcastable to the input's (2, 5), got shape (4,)"),
    ({"positions": tf.zeros((3, 5), tf.int32)}, ValueError,
     "positions must have shape (..., seq_len) broadcastable to the input's (2, 5), got shape (3, 5)"),
    ({"positions": tf.constant([0, 1, -2, 3, 4])}, ValueError,
     "positions must be >= 0, got a minimum of -2"),
    ({"positions": tf.constant([0, 1, 2, 3, 2**53], tf.int64)}, ValueError,
     "positions must be < 2**53 = 9007199254740992 (float64 holds every position below it "
     "exactly), got a maximum of 9007199254740992"),
    ({"positions": tf.range(5), "offset": 2}, ValueError, "pass either offset or positions, not both"),
    ({"offset": tf.constant(1.0)}, TypeError,
     "offset must be an integer or an integer tensor, got a tensor of dtype float32"),
    ({"offset": tf.constant([1])}, ValueError,
     "offset must be a scalar (0-dimensional) tensor, got shape (1,)"),
    ({"offset": tf.constant(-1)}, ValueError, "offset must be an integer >= 0, got -1"),
    ({"offset": 2**53 - 4}, ValueError, "offset + seq_len must be <= 2**53 = 9007199254740992 "
     "(float64 holds every position up to it exactly), got offset=9007199254740988, seq_len=5"),
])
def test_offset_and_positions_errors(kwargs, error, message):
    layer = PositionalEncoding(max_len=10)
    with pytest.raises(error, match=whole_line(message)):
        layer(tf.zeros((2, 5, 8)), **kwargs)
    assert layer.max_len == 10


def test_run_time_checks_inside_tf_function():
    layer = PositionalEncoding(max_len=10)
    run = tf.function(lambda x, t: layer(x, offset=t))
    with pytest.raises(tf.errors.InvalidArgumentError, match="offset must be >= 0"):
        run(tf.zeros((1, 3, 8)), tf.constant(-1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="offset \\+ seq_len must be <= 2\\*\\*53"):
        run(tf.zeros((1, 3, 8)), tf.constant(2**53 - 1, tf.int64))
    at = tf.function(lambda x, p: layer(x, positions=p))
    with pytest.raises(tf.errors.InvalidArgumentError, match="positions must be >= 0"):
        at(tf.zeros((1, 3, 8)), tf.constant([0, -1, 2]))


def test_ragged_and_too_wide_inputs_get_clear_errors():
    with pytest.raises(TypeError, match=exactly(
            "inputs must be a dense tensor of shape (..., seq_len, d_model), got a "
            "tf.RaggedTensor: pad it (inputs.to_tensor()) and pass the padding mask along")):
        PositionalEncoding()(tf.ragged.constant([[[1.0] * 4] * 3, [[1.0] * 4]], ragged_rank=1))
    with pytest.raises(ValueError, match="^d_model is too large: "):
        PositionalEncoding(max_len=4).build((None, 5, 2**62))


def test_symbolic_call_with_tensor_offset_and_positions():
    """keras-hub checks symbolic calls: Keras tensors as inputs, positions and offsets."""
    inputs = keras.Input(shape=(None, 8))
    positions = keras.Input(shape=(None,), dtype="int32")
    model = keras.Model([inputs, positions], PositionalEncoding(max_len=4)(inputs, positions=positions))
    out = model([np.zeros((1, 6, 8), "float32"), np.array([[5, 4, 3, 2, 1, 0]], "int32")])
    np.testing.assert_allclose(out.numpy()[0], exact_encoding([5, 4, 3, 2, 1, 0], 8), rtol=0, atol=6e-8)


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
    np.testing.assert_allclose(out.numpy()[0], exact_encoding(range(5), 8), rtol=0, atol=1e-15)


@pytest.fixture
def policy(request):
    """Sets Keras' global dtype policy to ``request.param`` for one test."""
    keras.mixed_precision.set_global_policy(request.param)
    yield request.param
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("policy", ["mixed_float16"], indirect=True)
def test_mixed_float16_policy(policy):
    inputs = keras.Input(shape=(None,), dtype="int32")
    outputs = PositionalEncoding(max_len=32)(keras.layers.Embedding(20, 8)(inputs))
    model = keras.Model(inputs, outputs)
    out = model(np.zeros((1, 20), "int32"))
    assert out.dtype == tf.float16
    embedding = model.layers[1](np.zeros((1, 20), "int32")).numpy().astype(np.float64)
    np.testing.assert_allclose(out.numpy() - embedding, posenc.positional_encoding(20, 8)[None],
                               atol=2e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_layer(dtype):
    out = PositionalEncoding(max_len=10, dtype=dtype)(tf.zeros((1, 5, 8)))
    assert out.dtype == dtype
    assert_nearest(out.numpy()[0], exact_encoding(range(5), 8))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_policy_fit(policy):
    keras.utils.set_random_seed(0)
    model = TinyModel(max_len=16)
    model.compile("sgd", "mse")
    model.fit(*training_data(10), epochs=1, verbose=0)
    out = model.encoding(tf.zeros((1, 10, 8)))
    assert out.dtype == policy.removeprefix("mixed_")
    assert_nearest(out.numpy()[0], exact_encoding(range(10), 8))


@pytest.mark.parametrize("x, offset, error, message", [
    (tf.zeros((2, 5, 6)), 0, ValueError,
     "input's last dimension is 6 but this positional encoding has d_model=8; they must be equal"),
    (tf.zeros((1, 5, 8)), -1, ValueError, "offset must be an integer >= 0, got -1"),
    (tf.zeros((1, 5, 8)), 0.5, TypeError, "offset must be an integer, got float 0.5"),
    (tf.zeros((1, 5, 8), tf.int32), 0, TypeError,
     "inputs must be a floating-point tensor, got dtype int32"),
])
def test_call_errors(x, offset, error, message):
    layer = PositionalEncoding(max_len=10)
    layer.build((None, None, 8))
    with pytest.raises(error, match=whole_line(message)):
        layer(x, offset=offset)


@pytest.mark.parametrize("shape", [(None, 5, None), (8,)])
def test_unknown_width_or_rank_below_two_is_rejected(shape):
    with pytest.raises(ValueError, match=exactly(
            "PositionalEncoding expects inputs of shape (..., seq_len, d_model) with a known "
            f"d_model, got shape {shape}")):
        PositionalEncoding().build(shape)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"max_len": -1}, ValueError, "max_len must be an integer >= 0, got -1"),
    ({"max_len": 10.0}, TypeError, "max_len must be an integer, got float 10.0"),
    ({"max_len": 2**53 + 1}, ValueError, "offset + seq_len must be <= 2**53 = 9007199254740992 "
     "(float64 holds every position up to it exactly), got offset=0, seq_len=9007199254740993"),
    ({"base": 0.0}, ValueError, "base must be a finite number > 1, got 0.0"),
    ({"base": 1e-300}, ValueError, "base must be a finite number > 1, got 1e-300"),
    ({"base": float("inf")}, ValueError, "base must be a finite number > 1, got inf"),
    ({"dropout": "0.1"}, TypeError, "dropout must be a real number in [0, 1], got str '0.1'"),
    ({"dropout": None}, TypeError, "dropout must be a real number in [0, 1], got NoneType None"),
    ({"dropout": float("nan")}, ValueError, "dropout must be a real number in [0, 1], got nan"),
    ({"dropout": -0.5}, ValueError, "dropout must be a real number in [0, 1], got -0.5"),
])
def test_constructor_errors(kwargs, error, message):
    with pytest.raises(error, match=exactly(message)):
        PositionalEncoding(**kwargs)


def test_dropout_of_one_drops_everything():
    layer = PositionalEncoding(max_len=16, dropout=1.0)
    assert np.all(layer(tf.ones((2, 16, 8)), training=True).numpy() == 0)
