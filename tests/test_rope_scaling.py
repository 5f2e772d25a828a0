"""posenc.rope_scaling: RoPE's frequencies stretched for long contexts, equal to Hugging Face's.

transformers (a test-only dependency) computes the same frequencies in float32 with
``ROPE_INIT_FUNCTIONS[rope_type](config, device, seq_len)``; posenc keeps float64, so they
agree to float32's precision: 1e-6 relative.
"""

import math

import numpy as np
import pytest

import posenc
from posenc.rope_scaling import SCALING_KEYS, check_scaling, rope_frequencies

from reference import llama_config

#: (head_dim, base, scaling, seq_len): every type at several settings, Llama 3.1's and a
#: YaRN model's (Qwen2.5's 4 x 32768, DeepSeek's mscale) among them.
CASES = [
    (64, 10000.0, {"rope_type": "linear", "factor": 1.0}, None),
    (64, 10000.0, {"rope_type": "linear", "factor": 4.0}, None),
    (96, 500000.0, {"rope_type": "linear", "factor": 2.5}, None),
    (64, 10000.0, {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 2048}, 1000),
    (64, 10000.0, {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 2048}, 8192),
    (128, 1e6, {"rope_type": "dynamic", "factor": 8.0, "original_max_position_embeddings": 4096}, 50000),
    (8, 10000.0, {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 64}, 256),
    (128, 1e6, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, None),
    (64, 10000.0, {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 4096,
                   "beta_fast": 16, "beta_slow": 2, "truncate": False}, None),
    (64, 10000.0, {"rope_type": "yarn", "factor": 1.0, "original_max_position_embeddings": 4096}, None),
    (64, 10000.0, {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 16,
                   "attention_factor": 1.5}, None),
    (64, 10000.0, {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                   "mscale": 1.0, "mscale_all_dim": 0.8}, None),
    (16, 10000.0, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}, None),
    (128, 500000.0, {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
                     "low_freq_factor": 1.0, "high_freq_factor": 4.0}, None),
    (64, 10000.0, {"rope_type": "llama3", "factor": 4.0, "original_max_position_embeddings": 64,
                   "low_freq_factor": 0.5, "high_freq_factor": 3}, None),
    (16, 10000.0, {"rope_type": "llama3", "factor": 2.0, "original_max_position_embeddings": 32,
                   "low_freq_factor": 1.0, "high_freq_factor": 4.0}, None),
]


@pytest.fixture(scope="module")
def rope_init_functions():
    """transformers' ``ROPE_INIT_FUNCTIONS``, imported once for the module (about 1.5 s)."""
    pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    return ROPE_INIT_FUNCTIONS


def hugging_face(functions, head_dim, base, scaling, seq_len):
    """transformers' ``(inv_freq, attention_factor)``, as float64 NumPy and a float."""
    config = llama_config(head_dim, base, dict(scaling))
    inv_freq, factor = functions[scaling["rope_type"]](config, "cpu", seq_len=seq_len)
    return inv_freq.double().numpy(), float(factor)


def largest_relative_difference(functions, head_dim, base, scaling, seq_len):
    ours, our_factor = rope_frequencies(head_dim, base=base, scaling=scaling, seq_len=seq_len)
    theirs, their_factor = hugging_face(functions, head_dim, base, scaling, seq_len)
    assert ours.shape == theirs.shape == (head_dim // 2,) and ours.dtype == np.float64
    assert our_factor == pytest.approx(their_factor, rel=1e-12) and isinstance(our_factor, float)
    return float(np.max(np.abs(ours - theirs) / theirs))


@pytest.mark.parametrize("head_dim, base, scaling, seq_len", CASES,
                         ids=[f"{c[2]['rope_type']}-{i}" for i, c in enumerate(CASES)])
def test_equal_to_transformers(rope_init_functions, head_dim, base, scaling, seq_len):
    assert largest_relative_difference(rope_init_functions, head_dim, base, scaling, seq_len) < 1e-6


def test_the_cases_cover_every_type_and_change_the_frequencies():
    """Each type is compared, and (but for factor 1 and a short sequence) the scaling changes
    something: the comparison cannot pass by both sides ignoring it."""
    assert {c[2]["rope_type"] for c in CASES} == set(SCALING_KEYS) - {"default"}
    changed = [not np.allclose(rope_frequencies(h, base=b, scaling=s, seq_len=n)[0],
                               rope_frequencies(h, base=b)[0], rtol=1e-12, atol=0)
               for h, b, s, n in CASES]
    assert sum(changed) == len(CASES) - 3  # linear and yarn with factor 1, dynamic below L


def test_without_scaling_the_frequencies_of_rope():
    inverse, factor = rope_frequencies(10, base=100.0)
    np.testing.assert_array_equal(inverse, posenc.angular_frequencies(10, base=100.0)[0::2])
    assert factor == 1.0
    for same in (None, {"rope_type": "default"}):
        np.testing.assert_array_equal(rope_frequencies(10, base=100.0, scaling=same)[0], inverse)


def test_linear_divides_every_frequency():
    inverse = rope_frequencies(16, scaling={"rope_type": "linear", "factor": 4})[0]
    np.testing.assert_allclose(inverse * 4, rope_frequencies(16)[0], rtol=1e-15)


def test_dynamic_changes_nothing_up_to_the_original_length_then_slows_the_slow_pairs_most():
    scaling = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 100}
    plain = rope_frequencies(32)[0]
    np.testing.assert_allclose(rope_frequencies(32, scaling=scaling, seq_len=100)[0], plain, rtol=1e-15)
    ratio = plain / rope_frequencies(32, scaling=scaling, seq_len=400)[0]
    assert ratio[0] == 1.0 and np.all(np.diff(ratio) > 0)
    # the slowest pair: base ** ((d - 2) / d) grows by the stretch f * n / L - (f - 1) = 13
    assert ratio[-1] == pytest.approx(13.0, rel=1e-12)
    assert rope_frequencies(2, scaling=scaling, seq_len=400)[0].tolist() == [1.0]


def test_yarn_keeps_fast_pairs_interpolates_slow_ones_and_scales_attention():
    scaling = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 1024}
    plain = rope_frequencies(64)[0]
    inverse, factor = rope_frequencies(64, scaling=scaling)
    turns = 1024 * plain / (2 * math.pi)
    np.testing.assert_array_equal(inverse[turns > 64], plain[turns > 64])  # well past beta_fast
    np.testing.assert_allclose(inverse[turns < 0.5], plain[turns < 0.5] / 8, rtol=1e-15)
    assert factor == pytest.approx(0.1 * math.log(8) + 1)


def test_llama3_by_wavelength():
    scaling = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    plain = rope_frequencies(128, base=500000.0)[0]
    inverse, factor = rope_frequencies(128, base=500000.0, scaling=scaling)
    wavelength = 2 * math.pi / plain
    np.testing.assert_array_equal(inverse[wavelength < 2048], plain[wavelength < 2048])
    np.testing.assert_array_equal(inverse[wavelength > 8192], plain[wavelength > 8192] / 8)
    between = (wavelength >= 2048) & (wavelength <= 8192)
    assert between.any() and np.all((inverse[between] < plain[between])
                                    & (inverse[between] > plain[between] / 8))
    assert factor == 1.0


def test_explicit_none_means_the_default():
    explicit = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 64,
                "beta_fast": None, "attention_factor": None}
    assert check_scaling(explicit)["beta_fast"] == 32.0
    np.testing.assert_array_equal(
        rope_frequencies(8, scaling=explicit)[0],
        rope_frequencies(8, scaling={"rope_type": "yarn", "factor": 2.0,
                                     "original_max_position_embeddings": 64})[0])


YARN = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 64}
LLAMA3 = {"rope_type": "llama3", "factor": 2.0, "original_max_position_embeddings": 64,
          "low_freq_factor": 1.0, "high_freq_factor": 4.0}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"scaling": {"rope_type": "ntk", "factor": 2.0}}, ValueError, "rope_type.*one of.*got 'ntk'"),
    ({"scaling": {"factor": 2.0}}, ValueError, "must have a 'rope_type' key"),
    ({"scaling": {"rope_type": 3}}, TypeError, "rope_type'\\] must be a string"),
    ({"scaling": [("rope_type", "linear")]}, TypeError, "scaling must be None or a dict"),
    ({"scaling": {"rope_type": "linear", "factor": 0.5}}, ValueError, "'factor'.*>= 1, got 0.5"),
    ({"scaling": {"rope_type": "linear", "factor": "4"}}, TypeError, "'factor'.*real number, got str"),
    ({"scaling": {"rope_type": "linear", "factor": float("nan")}}, ValueError, "'factor'.*finite"),
    ({"scaling": {"rope_type": "linear"}}, ValueError, "needs the key.*'factor'"),
    ({"scaling": {"rope_type": "yarn", "factor": 2.0}}, ValueError,
     "needs the key.*'original_max_position_embeddings'"),
    ({"scaling": {"rope_type": "llama3", "factor": 2.0, "original_max_position_embeddings": 8}},
     ValueError, "needs the key.*'low_freq_factor', 'high_freq_factor'"),
    ({"scaling": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}, ValueError,
     "unknown key.*'rope_theta'.*pass rope_theta as base="),
    ({"scaling": {**YARN, "low_freq_factor": 1.0}}, ValueError, "unknown key.*'low_freq_factor'"),
    ({"scaling": {**YARN, "original_max_position_embeddings": 64.0}}, TypeError,
     "original_max_position_embeddings'\\] must be an integer, got float"),
    ({"scaling": {**YARN, "original_max_position_embeddings": 0}}, ValueError,
     "original_max_position_embeddings'\\] must be an integer >= 1"),
    ({"scaling": {**YARN, "beta_fast": 1.0, "beta_slow": 2.0}}, ValueError, "beta_fast.*>= .*beta_slow"),
    ({"scaling": {**YARN, "beta_slow": -1.0}}, ValueError, "'beta_slow'.*> 0"),
    ({"scaling": {**YARN, "attention_factor": 0}}, ValueError, "'attention_factor'.*> 0"),
    ({"scaling": {**YARN, "truncate": 1}}, TypeError, "'truncate'.*bool"),
    ({"scaling": {**LLAMA3, "high_freq_factor": 1.0}}, ValueError, "high_freq_factor.*> .*low_freq_factor"),
    ({"scaling": {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 8}},
     ValueError, "'dynamic' needs seq_len"),
    ({"scaling": YARN, "seq_len": -1}, ValueError, "seq_len must be an integer >= 0"),
    ({"scaling": YARN, "seq_len": 3.0}, TypeError, "seq_len must be an integer"),
    ({"head_dim": 7}, ValueError, "head_dim must be even"),
    ({"base": 1.0}, ValueError, "base must be a finite number > 1"),
])
def test_bad_input_gets_a_clear_error(kwargs, error, match):
    kwargs = {"head_dim": 8, **kwargs}
    with pytest.raises(error, match=match):
        rope_frequencies(**kwargs)
