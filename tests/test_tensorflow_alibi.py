"""posenc.tensorflow.ALiBi under the current Keras backend.

Backend-independent: ``make test`` runs it under TensorFlow and tests/test_keras_backends.py
again under JAX and PyTorch. The first tests are keras-hub's own tests of its ``AlibiBias``
(keras_hub/src/layers/modeling/alibi_bias_test.py, keras-hub 0.32.0, Apache-2.0: see
tests/third_party/keras_hub/LICENSE), ported to posenc's layer: 9 of its 9, keras-hub's
``alibi_bias_max`` passed as ``max_bias`` (``test_correct_output_alibi_bias_max`` and
``test_correct_output_alibi_bias_max_num_heads_not_power_of_two`` set it to 12 and 6). The
expected values are keras-hub's. The others compare the layer with keras-hub's layer itself
(the vendored copy tests/third_party/keras_hub/alibi_bias.py) and with
:func:`posenc.alibi_bias`.
"""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

import posenc  # noqa: E402
from keras import ops, random  # noqa: E402
from posenc.tensorflow import ALiBi  # noqa: E402

from keras_layer_checks import BACKEND, compiled, numpy_of, run_layer_test  # noqa: E402
from reference import whole_line  # noqa: E402
from third_party.keras_hub.alibi_bias import AlibiBias  # noqa: E402


# keras-hub's tests, ported.

def test_keras_hub_layer_behaviors():
    run_layer_test(ALiBi, {"max_bias": 8}, random.uniform(shape=(4, 8, 10, 10)), (4, 8, 10, 10))


def test_keras_hub_float16_dtype():
    output = ALiBi(dtype="float16")(keras.Input(shape=(8, 5, 10)))
    assert output.shape == (None, 8, 5, 10) and output.dtype == "float16"


def test_keras_hub_dynamic_layer_output_shape():
    assert ALiBi()(keras.Input(shape=(4, 10, 10))).shape == (None, 4, 10, 10)


def test_keras_hub_value_error_when_inputs_shape_is_not_4():
    with pytest.raises(ValueError):
        ALiBi()(random.uniform(shape=(12, 12)))


def test_keras_hub_num_heads_is_not_power_of_two():
    assert ALiBi()(random.uniform(shape=(1, 12, 12, 12))).shape == (1, 12, 12, 12)


# keras-hub's values for one query and three keys: -slope * (2, 1, 0) for each head.
EIGHT_HEADS = [[-2.0 ** -k, -2.0 ** -(k + 1), 0.0] for k in range(8)]
SIX_MORE = [[-1.4142135, -0.70710677, 0.0], [-0.70710677, -0.35355338, 0.0],
            [-0.35355338, -0.17677669, 0.0], [-0.17677669, -0.08838835, 0.0],
            [-0.08838835, -0.04419417, 0.0], [-0.04419417, -0.02209709, 0.0]]


def test_keras_hub_correct_output():
    output = numpy_of(ALiBi()(ops.zeros((1, 8, 1, 3))))
    np.testing.assert_allclose(output[0, :, 0], EIGHT_HEADS, rtol=1e-6, atol=1e-6)


def test_keras_hub_correct_output_num_heads_not_power_of_two():
    output = numpy_of(ALiBi()(ops.zeros((1, 14, 1, 3))))
    np.testing.assert_allclose(output[0, :, 0], EIGHT_HEADS + SIX_MORE, rtol=1e-6, atol=1e-6)


def test_keras_hub_correct_output_alibi_bias_max():
    output = numpy_of(ALiBi(max_bias=12)(ops.zeros((1, 2, 1, 3))))
    expected = [[-0.03125, -0.015625, 0.0], [-0.00048828, -0.00024414, 0.0]]
    np.testing.assert_allclose(output[0, :, 0], expected, rtol=1e-6, atol=1e-6)


def test_keras_hub_correct_output_alibi_bias_max_num_heads_not_power_of_two():
    output = numpy_of(ALiBi(max_bias=6)(ops.zeros((1, 3, 1, 3))))
    expected = [[-0.25, -0.125, 0.0], [-0.03125, -0.015625, 0.0], [-0.70710677, -0.35355338, 0.0]]
    np.testing.assert_allclose(output[0, :, 0], expected, rtol=1e-6, atol=1e-6)


# posenc's own tests.

# Comparisons of values checked once, under TensorFlow: each new shape costs JAX seconds of
# compilation, and the ported keras-hub tests check the values of every backend's ops.
once = pytest.mark.skipif(BACKEND != "tensorflow", reason="values checked once, under TensorFlow")


@once
@pytest.mark.parametrize("n_heads, q_len, k_len", [(1, 3, 3), (3, 1, 7), (12, 5, 9)])
def test_equals_keras_hub(n_heads, q_len, k_len):
    scores = np.random.default_rng(0).standard_normal((2, n_heads, q_len, k_len)).astype("float32")
    np.testing.assert_array_equal(numpy_of(ALiBi()(scores)), numpy_of(AlibiBias()(scores)))


@once
@pytest.mark.parametrize("n_heads, max_bias", [(2, 12), (3, 6), (4, 0.5), (6, 16), (12, 3.5)])
def test_max_bias_equals_keras_hubs_alibi_bias_max(n_heads, max_bias):
    scores = np.random.default_rng(3).standard_normal((1, n_heads, 2, 5)).astype("float32")
    got = numpy_of(ALiBi(max_bias=max_bias)(scores))
    np.testing.assert_array_equal(got, numpy_of(AlibiBias(alibi_bias_max=max_bias)(scores)))
    assert not np.array_equal(got, numpy_of(ALiBi()(scores)))  # max_bias made a difference


def softmax(scores, axis=-1):
    scores = scores - scores.max(axis=axis, keepdims=True)
    return np.exp(scores) / np.exp(scores).sum(axis=axis, keepdims=True)


@once
def test_relation_to_posenc_alibi_bias():
    """Equal for the last query; for the others lower by a constant of the row, so the
    attention weights of causal attention are those of posenc.alibi_bias (and of
    posenc.pytorch.ALiBi, tested against it)."""
    scores = np.random.default_rng(1).standard_normal((1, 6, 9, 9))
    got = numpy_of(ALiBi()(scores.astype("float32"))).astype(np.float64)
    expected = scores + posenc.alibi_bias(9, 6)
    np.testing.assert_allclose(got[:, :, -1], expected[:, :, -1], rtol=0, atol=1e-5)
    future = np.triu(np.ones((9, 9), bool), 1)
    masked = [np.where(future, -np.inf, s) for s in (got, expected)]
    np.testing.assert_allclose(softmax(masked[0]), softmax(masked[1]), rtol=0, atol=1e-6)
    assert np.abs(got - expected)[..., :-1, :].max() > 1  # the scores themselves differ


@once
def test_bias_within_two_units_in_the_last_place():
    """float32 bias of 12 heads (slopes not powers of two) at distances up to 4095."""
    got = numpy_of(ALiBi()(np.zeros((1, 12, 1, 4096), "float32")))[0, :, 0]
    exact = -posenc.alibi_slopes(12)[:, None] * np.arange(4095, -1, -1)
    assert np.all(np.abs(got - exact) <= 2 * np.spacing(np.abs(exact).astype(np.float32)))


def test_any_length_in_a_compiled_function():
    layer = ALiBi()
    run = compiled(lambda scores: layer(scores), [((None, 4, None, None), "float32")])
    for k_len in (3, 17):
        scores = np.zeros((1, 4, 2, k_len), "float32")
        expected = -posenc.alibi_slopes(4)[:, None, None] * np.arange(k_len - 1, -1, -1)
        got = numpy_of(run(scores))[0]  # (n_heads, 2 queries, k_len): both rows alike
        np.testing.assert_allclose(got, np.broadcast_to(expected, got.shape), rtol=1e-7, atol=0)


@pytest.mark.parametrize("max_bias", [8.0, 6.0])
def test_save_and_load_in_a_model(tmp_path, max_bias):
    inputs = keras.Input(shape=(4, None, None))
    layer = ALiBi(name="alibi", max_bias=max_bias)
    keras.Model(inputs, layer(inputs)).save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    scores = np.random.default_rng(2).standard_normal((2, 4, 3, 5)).astype("float32")
    np.testing.assert_array_equal(numpy_of(loaded(scores)), numpy_of(layer(scores)))
    assert isinstance(loaded.get_layer("alibi"), ALiBi)
    assert loaded.get_layer("alibi").max_bias == max_bias


def test_config_holds_max_bias():
    assert ALiBi().get_config()["max_bias"] == 8.0
    config = ALiBi(max_bias=12).get_config()
    assert config["max_bias"] == 12.0 and ALiBi.from_config(config).max_bias == 12.0
    del config["max_bias"]  # a layer saved before max_bias existed: the default
    assert ALiBi.from_config(config).max_bias == 8.0


@pytest.mark.parametrize("shape, message", [
    ((2, 3, 4), "scores must have shape (batch, n_heads, q_len, k_len), got shape (2, 3, 4)"),
    ((1, 2, 3, 4, 5), "scores must have shape (batch, n_heads, q_len, k_len), got shape "
                      "(1, 2, 3, 4, 5)"),
])
def test_wrong_rank_is_refused(shape, message):
    with pytest.raises(ValueError, match=whole_line(message)):
        ALiBi()(np.zeros(shape, "float32"))


def test_unknown_number_of_heads_is_refused():
    with pytest.raises(ValueError, match="^scores must have a known number of heads"):
        ALiBi().build((None, None, 4, 4))


def test_integer_scores_are_refused():
    with pytest.raises(TypeError, match=whole_line("scores must be a floating-point tensor, "
                                                   "got dtype int32")):
        ALiBi()(np.zeros((1, 2, 3, 3), "int32"))


@pytest.mark.parametrize("max_bias, error, message", [
    (0, ValueError, "max_bias must be > 0, got 0.0"),
    (float("nan"), ValueError, "max_bias must be finite, got nan"),
    ("8", TypeError, "max_bias must be a real number, got str '8'"),
])
def test_bad_max_bias_is_refused(max_bias, error, message):
    with pytest.raises(error, match=whole_line(message)):
        ALiBi(max_bias=max_bias)


def test_max_bias_is_keyword_only():
    with pytest.raises(TypeError, match="positional argument"):
        ALiBi(8)
