"""posenc.tensorflow: the tensor factory and the Keras 3 layer, under the current Keras backend.

Every test not marked ``tf_only`` is backend-independent: ``make test`` runs this file under
the default backend (TensorFlow) and tests/test_keras_backends.py runs it again in one
process per other backend (``KERAS_BACKEND=jax``, ``KERAS_BACKEND=torch``).
"""

import sys

import numpy as np
import pytest

keras = pytest.importorskip("keras")

import posenc  # noqa: E402
import posenc.tensorflow  # noqa: E402

TENSORFLOW_IMPORTED = "tensorflow" in sys.modules  # by posenc.tensorflow or Keras, before any test
from keras import ops  # noqa: E402
from posenc.tensorflow import PositionalEncoding, positional_encoding  # noqa: E402

from keras_layer_checks import compiled, numpy_of  # noqa: E402
from reference import assert_nearest, exact_encoding, exactly, whole_line  # noqa: E402

BACKEND = keras.backend.backend()
tf = pytest.importorskip("tensorflow") if BACKEND == "tensorflow" else None
tf_only = pytest.mark.skipif(BACKEND != "tensorflow", reason="TensorFlow backend only")
# JAX holds no float64 and no int64 unless its 64-bit mode is on (it is off by default).
needs_64_bits = pytest.mark.skipif(BACKEND == "jax", reason="JAX without its 64-bit mode")
# compile(jit_compile=...): under JAX, False runs fit eagerly (slow, and not what users
# run); under PyTorch, True means torch.compile (minutes per model on a CPU).
JIT_COMPILE = {"tensorflow": [False, True], "jax": [True], "torch": [False]}[BACKEND]


def dtype_of(tensor):
    return keras.backend.standardize_dtype(tensor.dtype)


def zeros(shape, dtype="float32"):
    return np.zeros(shape, dtype)


@needs_64_bits
def test_factory_matches_numpy():
    got = positional_encoding(50, 7, base=100.0, offset=3, dtype="float64")
    np.testing.assert_array_equal(numpy_of(got), posenc.positional_encoding(50, 7, base=100.0, offset=3))
    assert dtype_of(positional_encoding(4, 6)) == "float32"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_factory_rounds_to_nearest(dtype):
    # Large enough that a conversion through float32 would miss the nearest value (for
    # bfloat16, 11 of these 2 million entries), so the check can fail.
    got = numpy_of(positional_encoding(4096, 512, dtype=dtype))
    assert_nearest(got, posenc.positional_encoding(4096, 512))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_rows_past_the_table_round_to_nearest(dtype):
    """Rows computed on their own (explicit positions past the table) are the nearest
    values of the dtype too: rounding to odd in float32 first."""
    layer = PositionalEncoding(max_len=0, dtype=dtype)
    out = layer(zeros((1, 4096, 512), dtype), positions=np.arange(4096)[None])
    assert layer.max_len == 0 and dtype_of(out) == dtype  # every row came from that path
    assert_nearest(numpy_of(out)[0], posenc.encoding.encoding_at(np.arange(4096), 512, 10000.0))


def test_tensorflow_is_imported_only_by_its_backend():
    assert TENSORFLOW_IMPORTED == (BACKEND == "tensorflow")


def test_factory_rejects_integer_dtype():
    with pytest.raises(TypeError, match=exactly("dtype must be a floating-point dtype, got int32")):
        positional_encoding(4, 6, dtype="int32")


@pytest.mark.skipif(BACKEND != "jax", reason="JAX only")
def test_float64_without_jax_64_bit_mode_is_refused():
    message = ("dtype float64 needs JAX's 64-bit mode (JAX_ENABLE_X64=1, or "
               "jax.config.update('jax_enable_x64', True) before any computation)")
    with pytest.raises(TypeError, match=exactly(message)):
        positional_encoding(4, 6, dtype="float64")
    with pytest.raises(TypeError, match=exactly(message)):
        PositionalEncoding(max_len=4, dtype="float64")


@pytest.mark.parametrize("base", [100.0, 2.5])
def test_layer_uses_its_base(base):
    out = PositionalEncoding(max_len=20, base=base)(zeros((1, 20, 6)))
    np.testing.assert_allclose(numpy_of(out)[0], exact_encoding(range(20), 6, base), rtol=0, atol=6e-8)


@pytest.mark.parametrize("d_model", [1, 6, 7])
@pytest.mark.parametrize("offset", [0, 5])
def test_call_adds_the_table(d_model, offset):
    x = np.random.default_rng(0).standard_normal((2, 10, d_model)).astype("float32")
    got = numpy_of(PositionalEncoding(max_len=64)(x, offset=offset))
    expected = x + posenc.positional_encoding(10, d_model, offset=offset)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


@pytest.mark.skipif(BACKEND != "tensorflow", reason="checked once: the other backends' values are "
                    "checked against mpmath by the other tests")
@pytest.mark.parametrize("d_model", [64, 65])
@pytest.mark.parametrize("offset", [0, 1234])
def test_numpy_pytorch_keras_agree(d_model, offset):
    torch = pytest.importorskip("torch")
    from posenc.pytorch import PositionalEncoding as TorchPositionalEncoding

    exact = posenc.positional_encoding(300, d_model, offset=offset)
    results = {
        "numpy": posenc.positional_encoding(300, d_model, offset=offset, dtype=np.float32),
        "pytorch": TorchPositionalEncoding(d_model, max_len=100)(torch.zeros(300, d_model), offset).numpy(),
        "keras": numpy_of(PositionalEncoding(max_len=100)(zeros((300, d_model)), offset=offset)),
    }
    for name, values in results.items():
        assert np.abs(values - exact).max() <= 1e-7, name
        assert np.abs(values - results["numpy"]).max() <= 1e-7, name


def test_table_is_not_recomputed_per_call(monkeypatch):
    calls = []
    original = posenc.tensorflow.sinusoidal.positional_encoding
    monkeypatch.setattr(posenc.tensorflow.sinusoidal, "positional_encoding",
                        lambda *a, **k: calls.append(a) or original(*a, **k))
    layer = PositionalEncoding(max_len=16)
    for seq_len in (4, 9, 16, 9):
        layer(zeros((2, seq_len, 8)))
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
    return tokens.astype("int32"), np.zeros((4, seq_len, 1), "float32")


def assert_layer_encodes(layer, seq_len, d_model=8, offset=0):
    """The layer, called eagerly on zeros, gives the encoding (against mpmath)."""
    out = numpy_of(layer(zeros((1, seq_len, d_model)), offset=offset))[0]
    np.testing.assert_allclose(out, exact_encoding(range(offset, offset + seq_len), d_model),
                               rtol=0, atol=6e-8 + offset * 2.0**-52)


@pytest.mark.parametrize("jit_compile", JIT_COMPILE)
def test_subclassed_model_fit_without_an_eager_call(jit_compile):
    keras.utils.set_random_seed(0)
    model = TinyModel(max_len=16)
    model.compile("sgd", "mse", jit_compile=jit_compile)
    model.fit(*training_data(10), epochs=2, verbose=0)  # the layer is built inside fit
    assert model.predict(training_data(10)[0], verbose=0).shape == (4, 10, 1)
    assert_layer_encodes(model.encoding, 10)


@tf_only
@pytest.mark.parametrize("jit_compile", [False, True])
def test_first_call_inside_tf_function_then_eager(jit_compile):
    layer = PositionalEncoding(max_len=16)
    run = tf.function(lambda x: layer(x, offset=2), jit_compile=jit_compile)
    np.testing.assert_allclose(run(tf.zeros((1, 5, 8))).numpy()[0], exact_encoding(range(2, 7), 8),
                               rtol=0, atol=6e-8)
    assert_layer_encodes(layer, 5)
    assert_layer_encodes(layer, 40, offset=3)  # eager growth after the traced build


def test_first_call_inside_a_compiled_function_then_eager():
    layer = PositionalEncoding(max_len=16)
    run = compiled(lambda x: layer(x, offset=2))
    np.testing.assert_allclose(numpy_of(run(ops.zeros((1, 5, 8))))[0], exact_encoding(range(2, 7), 8),
                               rtol=0, atol=6e-8)
    assert_layer_encodes(layer, 5)
    assert_layer_encodes(layer, 40, offset=3)  # eager growth after the traced build


@pytest.mark.parametrize("jit_compile", JIT_COMPILE)
def test_functional_model_fit(jit_compile):
    keras.utils.set_random_seed(0)
    tokens = keras.Input(shape=(None,), dtype="int32")
    encoding = PositionalEncoding(max_len=16)
    model = keras.Model(tokens, keras.layers.Dense(1)(encoding(keras.layers.Embedding(20, 8)(tokens))))
    model.compile("sgd", "mse", jit_compile=jit_compile)
    model.fit(*training_data(10), epochs=1, verbose=0, batch_size=4)
    assert model.predict(training_data(10)[0], verbose=0).shape == (4, 10, 1)
    assert model(training_data(12)[0]).shape == (4, 12, 1)
    assert_layer_encodes(encoding, 10)


def test_functional_model_grows_inside_fit():
    """fit traces with the lengths of the data it is given: the table grows."""
    tokens = keras.Input(shape=(None,), dtype="int32")
    encoding = PositionalEncoding(max_len=4)
    model = keras.Model(tokens, keras.layers.Dense(1)(encoding(keras.layers.Embedding(20, 8)(tokens))))
    model.compile("sgd", "mse")
    model.fit(*training_data(10), epochs=1, verbose=0)
    assert encoding.max_len >= 10
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
    for seq_len in (3, 17, 32):
        out = model(zeros((2, seq_len, 8)))
        np.testing.assert_allclose(numpy_of(out)[1], posenc.positional_encoding(seq_len, 8), atol=1e-7)


@pytest.mark.parametrize("seq_len, offset, grown", [
    (25, 0, 25), (1, 15, 20), (3, 7, 10), (2, 11, 20),
    (3, 25, 10), (2, 2**40, 10), (2, 2**52, 10),  # far past the table: computed on their own
])
def test_grows_past_max_len_in_eager_mode(seq_len, offset, grown):
    layer = PositionalEncoding(max_len=10)
    layer(zeros((1, 4, 8)))
    out = layer(zeros((1, seq_len, 8)), offset=offset)
    assert layer.max_len == grown and tuple(layer.pe.shape) == (grown, 8)
    expected = exact_encoding(range(offset, offset + seq_len), 8)
    np.testing.assert_allclose(numpy_of(out)[0], expected, rtol=0, atol=6e-8 + offset * 2.0**-52)


def test_failed_growth_leaves_the_layer_as_it_was(monkeypatch):
    layer = PositionalEncoding(max_len=10)
    layer(zeros((1, 4, 8)))

    def out_of_memory(*args, **kwargs):
        raise MemoryError("simulated")
    monkeypatch.setattr(posenc.tensorflow.sinusoidal, "positional_encoding", out_of_memory)
    with pytest.raises(MemoryError):
        layer(zeros((1, 30, 8)))
    assert layer.max_len == 10 and tuple(layer.pe.shape) == (10, 8)
    monkeypatch.undo()
    assert_layer_encodes(layer, 5, offset=3)


#: Rows computed inside a graph past the table: within 2**-20 + pos * 2**-52 of eager.
def graph_bound(pos):
    return 2.0**-20 + pos * 2.0**-52


@tf_only
def test_run_time_positions_past_the_table_are_computed_in_the_graph():
    """A length or an offset known only when the graph runs: rows below max_len come from
    the table, the others are computed in the graph (before issue 28: an error)."""
    layer = PositionalEncoding(max_len=10)
    signature = [tf.TensorSpec([None, None, 8], tf.float32)]
    run = tf.function(lambda x: layer(x, offset=3), input_signature=signature)
    for length in (7, 8, 300):  # the end of the table, one row past it, 2 digits
        out = run(tf.zeros((2, length, 8)))
        np.testing.assert_allclose(out.numpy()[0], posenc.positional_encoding(length, 8, offset=3),
                                   rtol=0, atol=graph_bound(length))
    tensor = tf.function(lambda x, t: layer(x, offset=t),
                         input_signature=signature + [tf.TensorSpec([], tf.int64)])
    for offset in (8, 2**40):  # no int32 wrap-around
        np.testing.assert_allclose(tensor(tf.zeros((1, 2, 8)), tf.constant(offset, tf.int64)).numpy()[0],
                                   posenc.positional_encoding(2, 8, offset=offset), rtol=0,
                                   atol=graph_bound(offset))
    out = tf.function(lambda x: layer(x, offset=10), input_signature=signature)(tf.zeros((1, 3, 8)))
    np.testing.assert_allclose(out.numpy()[0], posenc.positional_encoding(3, 8, offset=10), atol=1e-7)
    assert layer.max_len == 10  # nothing grew


def test_tensor_offset_equals_int_offset():
    layer = PositionalEncoding(max_len=10)
    x = np.random.default_rng(1).standard_normal((2, 4, 6)).astype("float32")
    offsets = (0, 3, 8, 50) if BACKEND == "jax" else (0, 3, 8, 50, 2**40)
    for offset in offsets:  # in, across and far past the table
        expected = numpy_of(layer(x, offset=offset))
        for tensor in (ops.convert_to_tensor(offset), np.int64(offset), np.array(offset)):
            np.testing.assert_array_equal(numpy_of(layer(x, offset=tensor)), expected)
    small = ops.convert_to_tensor(3, "int32")
    np.testing.assert_array_equal(numpy_of(layer(x, offset=small)), numpy_of(layer(x, offset=3)))


def test_tensor_offset_in_a_compiled_decoding_loop():
    """keras-hub's start_index: one token at a time inside a compiled step, past the table
    too (rows computed in the graph; before issue 28 they were NaN)."""
    layer = PositionalEncoding(max_len=8)
    step = compiled(lambda x, t: layer(x, offset=t))
    x = ops.zeros((2, 1, 8))
    for t in (0, 1, 7, 30, 300, 70000):
        got = numpy_of(step(x, ops.convert_to_tensor(t, "int32")))[0]
        np.testing.assert_allclose(got, exact_encoding([t], 8), rtol=0,
                                   atol=6e-8 if t < 256 else graph_bound(t))
    assert layer.max_len == 8


def test_positions_of_a_left_padded_batch():
    layer = PositionalEncoding(max_len=16)
    x = zeros((2, 5, 8))
    # Sequence 0 has two padding tokens on the left: its real tokens are at 0, 1, 2.
    positions = np.array([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]], "int32")
    for call in (layer, compiled(layer)):
        out = numpy_of(call(x, positions=ops.convert_to_tensor(positions)))
        np.testing.assert_allclose(out[0, 2:], exact_encoding(range(3), 8), rtol=0, atol=6e-8)
        np.testing.assert_allclose(out[1], exact_encoding(range(5), 8), rtol=0, atol=6e-8)
    far = [0, 20, 2**30 if BACKEND == "jax" else 2**40, 3, 4]  # past the table: on the host
    out = numpy_of(layer(x, positions=np.array([far])))
    expected = exact_encoding(far, 8)
    np.testing.assert_allclose(out[0], expected, rtol=0, atol=6e-8 + far[2] * 2.0**-52)
    np.testing.assert_allclose(out[1], expected, rtol=0, atol=6e-8 + far[2] * 2.0**-52)
    assert layer.max_len == 16


ERRORS = [
    ({"positions": np.zeros(5, "float32")}, TypeError,
     "positions must be an integer tensor of shape (..., seq_len), got dtype float32"),
    ({"positions": [0, 1, 2, 3, 4]}, TypeError,
     "positions must be an integer tensor of shape (..., seq_len), got list"),
    ({"positions": np.arange(4)}, ValueError,
     "positions must have shape (..., seq_len) broadcastable to the input's (2, 5), got shape (4,)"),
    ({"positions": np.zeros((3, 5), "int32")}, ValueError,
     "positions must have shape (..., seq_len) broadcastable to the input's (2, 5), got shape (3, 5)"),
    ({"positions": np.array([0, 1, -2, 3, 4])}, ValueError,
     "positions must be >= 0, got a minimum of -2"),
    ({"positions": np.arange(5), "offset": 2}, ValueError, "pass either offset or positions, not both"),
    ({"offset": np.array(1.0, "float32")}, TypeError,
     "offset must be an integer or an integer tensor, got a tensor of dtype float32"),
    ({"offset": np.array([1])}, ValueError,
     "offset must be a scalar (0-dimensional) tensor, got shape (1,)"),
    ({"offset": np.array(-1)}, ValueError, "offset must be an integer >= 0, got -1"),
    ({"offset": 2**53 - 4}, ValueError, "offset + seq_len must be <= 2**53 = 9007199254740992 "
     "(float64 holds every position up to it exactly), got offset=9007199254740988, seq_len=5"),
]
if BACKEND != "jax":  # JAX's int32 cannot hold the position
    ERRORS.append(({"positions": np.array([0, 1, 2, 3, 2**53], "int64")}, ValueError,
                   "positions must be < 2**53 = 9007199254740992 (float64 holds every position below "
                   "it exactly), got a maximum of 9007199254740992"))


@pytest.mark.parametrize("kwargs, error, message", ERRORS)
def test_offset_and_positions_errors(kwargs, error, message):
    layer = PositionalEncoding(max_len=10)
    with pytest.raises(error, match=whole_line(message)):
        layer(zeros((2, 5, 8)), **kwargs)
    assert layer.max_len == 10


@tf_only
def test_run_time_checks_inside_tf_function():
    layer = PositionalEncoding(max_len=10)
    run = tf.function(lambda x, t: layer(x, offset=t))
    with pytest.raises(tf.errors.InvalidArgumentError, match="positions must be >= 0"):
        run(tf.zeros((1, 3, 8)), tf.constant(-1))
    far = run(tf.zeros((1, 3, 8)), tf.constant(2**40, tf.int64)).numpy()[0]  # computed, no error
    np.testing.assert_allclose(far, posenc.positional_encoding(3, 8, offset=2**40), rtol=0,
                               atol=graph_bound(2**40))
    at = tf.function(lambda x, p: layer(x, positions=p))
    with pytest.raises(tf.errors.InvalidArgumentError, match="positions must be >= 0"):
        at(tf.zeros((1, 3, 8)), tf.constant([0, -1, 2]))


@tf_only
def test_ragged_inputs_get_a_clear_error():
    with pytest.raises(TypeError, match=exactly(
            "inputs must be a dense tensor of shape (..., seq_len, d_model), got a "
            "tf.RaggedTensor: pad it (inputs.to_tensor()) and pass the padding mask along")):
        PositionalEncoding()(tf.ragged.constant([[[1.0] * 4] * 3, [[1.0] * 4]], ragged_rank=1))


def test_too_wide_inputs_get_a_clear_error():
    with pytest.raises(ValueError, match="^d_model is too large: "):
        PositionalEncoding(max_len=4).build((None, 5, 2**62))


def test_symbolic_call_with_positions():
    """keras-hub checks symbolic calls: Keras tensors as inputs and positions."""
    inputs = keras.Input(shape=(None, 8))
    positions = keras.Input(shape=(None,), dtype="int32")
    model = keras.Model([inputs, positions], PositionalEncoding(max_len=8)(inputs, positions=positions))
    out = model([zeros((1, 6, 8)), np.array([[5, 4, 3, 2, 1, 0]], "int32")])
    np.testing.assert_allclose(numpy_of(out)[0], exact_encoding([5, 4, 3, 2, 1, 0], 8), rtol=0, atol=6e-8)


def test_dropout_only_when_training():
    keras.utils.set_random_seed(0)
    layer = PositionalEncoding(max_len=16, dropout=0.5)
    x = np.ones((4, 16, 64), "float32")
    assert np.any(numpy_of(layer(x, training=True)) == 0)
    np.testing.assert_allclose(numpy_of(layer(x)), x + posenc.positional_encoding(16, 64), atol=1e-6)


@needs_64_bits
def test_float64_layer_keeps_float64():
    layer = PositionalEncoding(max_len=10, dtype="float64")
    out = layer(zeros((1, 5, 8), "float64"))
    assert dtype_of(out) == "float64"
    np.testing.assert_allclose(numpy_of(out)[0], exact_encoding(range(5), 8), rtol=0, atol=1e-15)


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
    assert dtype_of(out) == "float16"
    embedding = numpy_of(model.layers[1](np.zeros((1, 20), "int32"))).astype(np.float64)
    np.testing.assert_allclose(numpy_of(out) - embedding, posenc.positional_encoding(20, 8)[None],
                               atol=2e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_layer(dtype):
    out = PositionalEncoding(max_len=10, dtype=dtype)(zeros((1, 5, 8)))
    assert dtype_of(out) == dtype
    assert_nearest(numpy_of(out)[0], exact_encoding(range(5), 8))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
def test_mixed_policy_fit(policy):
    keras.utils.set_random_seed(0)
    model = TinyModel(max_len=16)
    model.compile("sgd", "mse")
    model.fit(*training_data(10), epochs=1, verbose=0)
    out = model.encoding(zeros((1, 10, 8)))
    assert dtype_of(out) == policy.removeprefix("mixed_")
    assert_nearest(numpy_of(out)[0], exact_encoding(range(10), 8))


@pytest.mark.parametrize("x, offset, error, message", [
    (zeros((2, 5, 6)), 0, ValueError,
     "input's last dimension is 6 but this positional encoding has d_model=8; they must be equal"),
    (zeros((1, 5, 8)), -1, ValueError, "offset must be an integer >= 0, got -1"),
    (zeros((1, 5, 8)), 0.5, TypeError, "offset must be an integer, got float 0.5"),
    (zeros((1, 5, 8), "int32"), 0, TypeError,
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


def test_max_len_by_position_says_what_to_write():
    with pytest.raises(TypeError, match=exactly(
            "PositionalEncoding takes max_len as a keyword argument: write "
            "PositionalEncoding(max_len=50, dropout=0.1), not PositionalEncoding(50, dropout=0.1)")):
        PositionalEncoding(50, dropout=0.1)


def test_dropout_of_one_drops_everything():
    layer = PositionalEncoding(max_len=16, dropout=1.0)
    assert np.all(numpy_of(layer(np.ones((2, 16, 8), "float32"), training=True)) == 0)
