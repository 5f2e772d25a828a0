"""posenc.tensorflow.RotaryEmbedding under the current Keras backend.

Backend-independent: ``make test`` runs it under TensorFlow and tests/test_keras_backends.py
again under JAX and PyTorch. The first tests are keras-hub's own tests of its
``RotaryEmbedding`` (keras_hub/src/layers/modeling/rotary_embedding_test.py, keras-hub
0.32.0, Apache-2.0: see tests/third_party/keras_hub/LICENSE), all 12 ported to posenc's
layer: keras-hub's ``RotaryEmbedding(max_wavelength=b, scaling_factor=f, ...)`` is
``RotaryEmbedding(base=b, scaling={"rope_type": "linear", "factor": f}, layout="half", ...)``
here, and the expected values are keras-hub's. The others compare the layer with
:func:`posenc.rope` (which tests/test_pytorch_rotary.py compares with
``posenc.pytorch.RotaryEmbedding``) and keras-hub's layer itself (the
vendored copy tests/third_party/keras_hub/rotary_embedding.py).
"""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

import posenc  # noqa: E402
from keras import ops, random  # noqa: E402
from posenc.relative import rotate_pairs  # noqa: E402
from posenc.tensorflow import RotaryEmbedding  # noqa: E402

from keras_layer_checks import BACKEND, compiled, numpy_of, run_layer_test  # noqa: E402
from reference import exactly, whole_line  # noqa: E402
from third_party.keras_hub.rotary_embedding import RotaryEmbedding as KerasHubRotary  # noqa: E402

needs_64_bits = pytest.mark.skipif(BACKEND == "jax", reason="JAX without its 64-bit mode")
# Comparisons of values checked once, under TensorFlow: each new shape costs JAX seconds of
# compilation, and the ported keras-hub tests check the values of every backend's ops.
once = pytest.mark.skipif(BACKEND != "tensorflow", reason="values checked once, under TensorFlow")


def hub_equivalent(factor=1.0, **kwargs):
    """posenc's layer as keras-hub's RotaryEmbedding(scaling_factor=factor, ...)."""
    return RotaryEmbedding(layout="half", scaling={"rope_type": "linear", "factor": factor},
                           **kwargs)


def assert_close(actual, expected, atol=1e-6, rtol=1e-6):
    np.testing.assert_allclose(numpy_of(actual), numpy_of(expected), atol=atol, rtol=rtol)


# keras-hub's tests, ported.

def test_keras_hub_layer_behaviors():
    run_layer_test(RotaryEmbedding, {"base": 1000, "layout": "half", "sequence_axis": 1,
                                     "feature_axis": -1,
                                     "scaling": {"rope_type": "linear", "factor": 2.0}},
                   random.uniform(shape=(2, 4, 6)), (2, 4, 6))


def test_keras_hub_layer_behaviors_4d():
    run_layer_test(RotaryEmbedding, {"base": 1000, "layout": "half"},
                   random.uniform(shape=(2, 8, 4, 6)), (2, 8, 4, 6))


def test_keras_hub_dynamic_layer_output_shape():
    assert RotaryEmbedding()(keras.Input(shape=(None, 32))).shape == (None, None, 32)


def test_keras_hub_multi_dimension_layer_output_shape():
    outputs = RotaryEmbedding()(keras.Input(shape=(None, 100, 32)))
    assert outputs.shape == (None, None, 100, 32)


def test_keras_hub_output_correct_values():
    model = keras.Sequential([keras.Input(shape=(4, 6)), RotaryEmbedding(layout="half")])
    output = numpy_of(model(ops.ones((1, 4, 6))))
    np.testing.assert_allclose(output[0, 0], [1.0] * 6, atol=0.01, rtol=0.01)
    np.testing.assert_allclose(output[0, 3], [-1.1311, 0.8515, 0.9935, -0.8489, 1.1291, 1.0064],
                               atol=0.01, rtol=0.01)


def test_keras_hub_start_index():
    layer = RotaryEmbedding(base=3, layout="half")
    data = random.uniform(shape=(2, 3, 4))
    steps = ops.zeros((2, 3, 4))
    for i in range(3):
        steps = ops.slice_update(steps, (0, i, 0), layer(data[:, i:i + 1, :], start_index=i))
    assert_close(steps, layer(data))


def test_keras_hub_permuted_axes():
    data = random.uniform(shape=(2, 3, 4))
    outputs = RotaryEmbedding(base=3, layout="half")(data)
    permuted = RotaryEmbedding(base=3, layout="half", sequence_axis=-1, feature_axis=-2)(
        ops.transpose(data, (0, 2, 1)))
    assert_close(outputs, ops.transpose(permuted, (0, 2, 1)))


def test_keras_hub_float16_dtype():
    outputs = RotaryEmbedding(dtype="float16")(keras.Input(shape=(100, 32)))
    assert outputs.dtype == "float16"


def standard_normal(shape):
    return np.random.default_rng(0).standard_normal(size=shape).astype(np.float32)


# keras-hub's values (computed with Flax's RoPE, half layout) for positions [0, 0] and, in the
# second sequence, [0, 1].
FIRST_SEQUENCE = [
    [[[0.12573022, -0.13210486, 0.64042264, 0.10490011, -0.5356694, 0.36159506, 1.304,
       0.94708097, -0.70373523, -1.2654215, -0.62327445, 0.04132598, -2.3250308, -0.21879166,
       -1.245911, -0.7322674]],
     [[-0.544259, -0.31630015, 0.41163054, 1.0425134, -0.12853466, 1.3664634, -0.6651947,
       0.35151008, 0.90347016, 0.0940123, -0.7434993, -0.9217254, -0.45772582, 0.22019513,
       -1.0096182, -0.20917557]]]]
SECOND_SEQUENCE = [
    [[[-0.159225017, 0.540845573, 0.214659125, 0.355372697, -0.653828621, -0.129613638,
       0.783975482, 1.49343109, -1.25906551, 1.51392376, 1.34587538, 0.781311393, 0.264455616,
       -0.313922822, 1.45802069, 1.96025836]],
     [[0.611709595, 1.03343689, 0.47380957, -1.18679309, -8.96309502e-05, 0.660170913,
       -1.29010022, 0.395278841, 1.74827969, 1.07050526, -1.14252377, -0.699575782,
       -0.436457992, -1.1677202, 1.73807859, -0.495785743]]]]


def test_keras_hub_positions_1d_array():
    output = RotaryEmbedding(layout="half")(standard_normal((1, 2, 1, 16)),
                                            positions=ops.cast([0, 0], "float32"))
    np.testing.assert_allclose(np.array(FIRST_SEQUENCE, np.float32), numpy_of(output))


def test_keras_hub_positions_2d_array():
    output = RotaryEmbedding(layout="half")(standard_normal((2, 2, 1, 16)),
                                            positions=ops.cast([[0, 0], [0, 1]], "float32"))
    assert_close(output, np.array([FIRST_SEQUENCE[0], SECOND_SEQUENCE[0]]), atol=1e-5, rtol=1e-5)


def test_keras_hub_rope_scaling():
    # keras-hub's values from Hugging Face's Llama with linear scaling, factor 2.
    row = {0: [1.0, 1.0, 1.0, 1.0], 1: [0.398157001, 0.994987488, 1.357008100, 1.004987478],
           2: [-0.301168621, 0.989950180, 1.381773233, 1.009949803]}
    expected = [[[row[pos]] * 2 for pos in range(3)]]
    assert_close(hub_equivalent(2.0)(ops.ones((1, 3, 2, 4))), expected)


def test_keras_hub_rope_scaling_with_kv_cache():
    expected = [[[[-1.412856817, 0.975714266, -0.061930716, 1.023709655]] * 2]]
    assert_close(hub_equivalent(5.0)(ops.ones((1, 1, 2, 4)), start_index=12), expected)


# posenc's own tests.

def rope_reference(x, positions, *, base=10000.0, scaling=None, layout="interleaved",
                   seq_len=None):
    """float64 RoPE of x (..., seq_len, d) at ``positions`` with posenc.rope_frequencies."""
    frequencies, factor = posenc.rope_frequencies(x.shape[-1], base=base, scaling=scaling,
                                                  seq_len=seq_len)
    angles = np.asarray(positions, np.float64)[..., None] * frequencies
    return rotate_pairs(np.asarray(x, np.float64), factor * np.cos(angles),
                        factor * np.sin(angles), layout)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("start_index", [7, 100_000])
def test_equals_posenc_rope(layout, start_index):
    """Within the docstring's bound, 1e-6 + pos * 2**-22, for entries in [-1, 1]."""
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 40, 8)).astype(np.float32)
    layer = RotaryEmbedding(layout=layout, sequence_axis=2, base=500.0)
    got = numpy_of(layer(x, start_index=start_index))
    expected = posenc.rope(x.astype(np.float64), base=500.0, offset=start_index, layout=layout)
    positions = np.arange(start_index, start_index + 40)[:, None]
    assert np.all(np.abs(got - expected) <= 1e-6 + positions * 2.0**-22)


@once
@pytest.mark.parametrize("axes", [(1, -1), (1, 2), (-1, 1)])
@pytest.mark.parametrize("call", [{}, {"start_index": 5}, {"positions": [[3, 1, 4, 1, 5, 9]]}])
def test_equals_keras_hub(axes, call):
    """layout="half" with linear scaling f is keras-hub's RotaryEmbedding(scaling_factor=f)."""
    x = standard_normal((1, 6, 4, 6))  # the sequence (6) on axis 1 or 3
    sequence_axis, feature_axis = axes
    if "positions" in call:
        call = {"positions": np.array(call["positions"], np.int32)}
    kwargs = {"sequence_axis": sequence_axis, "feature_axis": feature_axis}
    expected = KerasHubRotary(max_wavelength=100, scaling_factor=3.0, **kwargs)(x, **call)
    assert_close(hub_equivalent(3.0, base=100.0, **kwargs)(x, **call), expected)


SCALINGS = {
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 16,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0},
}


@once
@pytest.mark.parametrize("name", sorted(SCALINGS))
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_scaled_frequencies_and_attention_factor(name, layout):
    x = standard_normal((2, 50, 2, 32))  # (batch, seq_len, heads, head_dim)
    got = RotaryEmbedding(scaling=SCALINGS[name], layout=layout)(x, start_index=30)
    expected = rope_reference(np.moveaxis(x, 1, 2), np.arange(30, 80), scaling=SCALINGS[name],
                              layout=layout)
    assert np.abs(np.moveaxis(numpy_of(got), 1, 2) - expected).max() < 1e-5


@once
def test_yarn_equals_keras_hubs():
    x = np.random.default_rng(0).uniform(-1, 1, (1, 300, 2, 64)).astype(np.float32)
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    expected = KerasHubRotary(scaling_factor=4.0, rope_type="yarn",
                              original_max_position_embeddings=64)(x)
    assert_close(RotaryEmbedding(layout="half", scaling=scaling)(x), expected, atol=2e-4, rtol=0)


DYNAMIC = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}


@once
@pytest.mark.parametrize("start_index", [0, 20])
def test_dynamic_scaling_follows_the_sequence_length(start_index):
    """The base of "dynamic" grows with start_index + seq_len (unchanged up to 16 tokens)."""
    x = standard_normal((1, 10, 1, 16))
    got = numpy_of(RotaryEmbedding(scaling=DYNAMIC)(x, start_index=start_index))
    positions = np.arange(start_index, start_index + 10)
    expected = rope_reference(np.moveaxis(x, 1, 2), positions, scaling=DYNAMIC,
                              seq_len=start_index + 10)
    assert np.abs(np.moveaxis(got, 1, 2) - expected).max() < 1e-5
    if start_index:  # the longer sequence did change the frequencies
        assert np.abs(expected - rope_reference(np.moveaxis(x, 1, 2), positions)).max() > 0.1


@once
def test_dynamic_scaling_reads_the_length_from_positions():
    """Hugging Face's length: the largest position plus one (here 25)."""
    x = standard_normal((1, 10, 1, 16))
    positions = np.arange(24, 14, -1)
    got = numpy_of(RotaryEmbedding(scaling=DYNAMIC)(x, positions=positions))
    expected = rope_reference(np.moveaxis(x, 1, 2), positions, scaling=DYNAMIC, seq_len=25)
    assert np.abs(np.moveaxis(got, 1, 2) - expected).max() < 1e-5


def test_tensor_start_index_in_a_compiled_step_equals_the_int():
    """In a compiled function, under TensorFlow with a length unknown when traced: the
    "dynamic" base follows the tensor start_index and the length."""
    layer = RotaryEmbedding(scaling=DYNAMIC)
    step = compiled(lambda t, start: layer(t, start_index=start),
                    [((None, None, 3, 8), "float32"), ((), "int32")])
    for start, length in ((3, 1), (40, 1)):
        x = standard_normal((2, length, 3, 8))
        assert_close(step(x, ops.convert_to_tensor(start, "int32")), layer(x, start_index=start))


def test_save_and_load_in_a_model(tmp_path):
    inputs = keras.Input(shape=(None, 2, 8))
    layer = RotaryEmbedding(base=50.0, scaling=SCALINGS["yarn"], layout="half", name="rope")
    keras.Model(inputs, layer(inputs)).save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    x = standard_normal((3, 20, 2, 8))
    assert_close(loaded(x), layer(x), atol=0, rtol=0)
    assert loaded.get_layer("rope").get_config() == layer.get_config()


def test_config_fills_the_defaults_of_scaling():
    config = RotaryEmbedding(scaling=SCALINGS["yarn"]).get_config()
    assert config["scaling"]["beta_fast"] == 32.0 and config["scaling"]["truncate"] is True
    assert {k: config[k] for k in ("base", "layout", "sequence_axis", "feature_axis")} == {
        "base": 10000.0, "layout": "interleaved", "sequence_axis": 1, "feature_axis": -1}
    assert RotaryEmbedding(scaling={"rope_type": "default"}).get_config()["scaling"] is None


@needs_64_bits
def test_float64_layer_rotates_in_float64():
    x = np.random.default_rng(1).standard_normal((1, 64, 6))
    got = numpy_of(RotaryEmbedding(dtype="float64")(x, start_index=1000))
    assert got.dtype == np.float64
    assert np.abs(got - posenc.rope(x, offset=1000)).max() < 1e-12


@pytest.mark.parametrize("shape, kwargs, message", [
    ((2, 3, 5), {}, "the feature size of inputs (axis -1) must be even and >= 2 (RoPE rotates "
                    "pairs of coordinates), got 5"),
    ((4,), {}, "sequence_axis=1 is out of range for inputs of rank 1 (shape (4,)); "
               "RotaryEmbedding needs inputs of rank >= 2"),
    ((2, 4, 6), {"sequence_axis": -1, "feature_axis": 2},
     "sequence_axis=-1 and feature_axis=2 are the same axis of inputs of rank 3"),
])
def test_bad_inputs_are_refused(shape, kwargs, message):
    with pytest.raises(ValueError, match=whole_line(message)):
        RotaryEmbedding(**kwargs)(np.zeros(shape, "float32"))


def test_unknown_feature_size_is_refused():
    with pytest.raises(ValueError, match="^inputs must have a known feature size"):
        RotaryEmbedding().build((None, 4, None))


@pytest.mark.parametrize("call, error, message", [
    ({"start_index": 1, "positions": np.arange(4)}, ValueError,
     "pass either start_index or positions, not both"),
    ({"start_index": -1}, ValueError, "start_index must be an integer >= 0, got -1"),
    ({"start_index": 1.5}, TypeError, "start_index must be an integer, got float 1.5"),
    ({"positions": np.zeros(4, bool)}, TypeError,
     "positions must be an integer or floating-point tensor, got dtype bool"),
    ({"positions": np.arange(5)}, ValueError,
     "positions must have shape (seq_len,) or (batch, seq_len) for inputs of shape "
     "(2, 3, 4, 6) read with the sequence on axis 1 and the batch on axis 0, got shape (5,)"),
    ({"positions": np.zeros((3, 4))}, ValueError,
     "positions must have shape (seq_len,) or (batch, seq_len) for inputs of shape "
     "(2, 3, 4, 6) read with the sequence on axis 1 and the batch on axis 0, got shape (3, 4)"),
])
def test_bad_calls_are_refused(call, error, message):
    x = np.zeros((2, 4, 3, 6), "float32")  # (batch, seq_len, heads, head_dim)
    with pytest.raises(error, match=whole_line(message)):
        RotaryEmbedding()(x, **call)


def test_batch_positions_need_the_batch_on_axis_0():
    with pytest.raises(ValueError, match=whole_line(
            "positions of shape (batch, seq_len) need the batch on axis 0 of inputs, but axis 0 "
            "is the sequence or feature axis")):
        RotaryEmbedding(sequence_axis=0)(np.zeros((4, 2, 6), "float32"),
                                         positions=np.arange(4)[None])


def test_integer_inputs_are_refused():
    with pytest.raises(TypeError, match=whole_line("inputs must be a floating-point tensor, "
                                                   "got dtype int32")):
        RotaryEmbedding()(np.zeros((1, 2, 4), "int32"))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"layout": "split"}, ValueError, "layout must be 'interleaved' or 'half', got 'split'"),
    ({"base": 1.0}, ValueError, None),
    ({"scaling": {"rope_type": "linear"}}, ValueError, None),
    ({"scaling": {"rope_type": "dynamic", "factor": 2.0}}, ValueError, None),
    ({"sequence_axis": 2, "feature_axis": 2}, ValueError,
     "sequence_axis and feature_axis must be different axes, both are 2"),
    ({"sequence_axis": 1.0}, TypeError, None),
])
def test_bad_constructor_arguments_are_refused(kwargs, error, message):
    with pytest.raises(error, match=None if message is None else exactly(message)):
        RotaryEmbedding(**kwargs)


def test_arguments_are_keyword_only():
    with pytest.raises(TypeError, match="positional argument"):
        RotaryEmbedding(10000.0)
