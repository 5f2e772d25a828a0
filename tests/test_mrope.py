"""posenc.mrope (NumPy M-RoPE) against transformers' own rotary embeddings of Qwen2-VL, Qwen2.5-VL
and Qwen3-VL, on the rope fields of their released configs and on the position ids the models
make for a text + image input (get_rope_index)."""

import logging

import numpy as np
import pytest

import posenc
from posenc.mrope import MROPE_AXES, mrope, mrope_angles, mrope_cos_sin, mrope_pair_axes

#: The fields M-RoPE reads of real config.json files (Hugging Face Hub), as published (key
#: spellings, number types); "checked" says how the text was confirmed (the tests run offline).
REAL_CONFIGS = {
    "Qwen2-VL-7B-Instruct": {
        "source": "https://huggingface.co/Qwen/Qwen2-VL-7B-Instruct/blob/main/config.json",
        "checked": "copies of the file found with the search tool (VARGPT's config built on "
                   "Qwen/Qwen2-VL-7B-Instruct: the same rope fields, sizes and lengths)",
        "config": {"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28,
                   "num_key_value_heads": 4, "max_position_embeddings": 32768,
                   "rope_theta": 1000000.0,
                   "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
    },
    "Qwen2.5-VL-7B-Instruct": {
        "source": "https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct/blob/main/config.json",
        "checked": "copies found with the search tool (NVIDIA TensorRT-LLM's test config "
                   "QWEN2_5_VL_7B_CONFIG and a config.json quoted in an evaluation README)",
        "config": {"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28,
                   "num_key_value_heads": 4, "max_position_embeddings": 128000,
                   "rope_theta": 1000000.0,
                   "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
    },
    "Qwen3-VL-4B-Instruct": {
        "source": "https://huggingface.co/Qwen/Qwen3-VL-4B-Instruct/blob/main/config.json",
        "checked": "a copy of the file found with the search tool (a test's "
                   "QWEN3_VL_4B_INSTRUCT_CONFIG, transformers_version 4.57.0.dev0)",
        "config": {"model_type": "qwen3_vl", "text_config": {
            "model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 2560,
            "num_attention_heads": 32, "num_key_value_heads": 8,
            "max_position_embeddings": 262144, "rope_theta": 5000000,
            "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20],
                             "rope_type": "default"}}},
    },
}
#: Each family's layout, as transformers 5.24 applies it.
INTERLEAVED = {"qwen2_vl": False, "qwen2_5_vl": False, "qwen3_vl": True}


def test_consecutive_sections_give_time_the_fastest_pairs():
    axes = mrope_pair_axes([16, 24, 24])
    assert axes.dtype == np.int64 and axes.shape == (64,)
    assert (axes[:16] == 0).all() and (axes[16:40] == 1).all() and (axes[40:] == 2).all()
    assert MROPE_AXES[axes[-1]] == "width"


def test_interleaved_sections_take_turns_and_keep_their_counts():
    axes = mrope_pair_axes([24, 20, 20], interleaved=True)
    assert axes[:9].tolist() == [0, 1, 2] * 3 and axes[60:].tolist() == [0, 0, 0, 0]
    assert np.bincount(axes).tolist() == [24, 20, 20]
    for axis in range(3):  # every axis has fast and slow pairs
        assert np.flatnonzero(axes == axis).min() <= 2 and np.flatnonzero(axes == axis).max() >= 58


def test_text_tokens_get_the_1d_rope():
    """t = h = w = pos: M-RoPE is 1-D RoPE (angles, and the rotation of posenc.rope)."""
    pos = np.arange(40)
    ids = np.broadcast_to(pos, (3, 1, 40))
    frequencies, _ = posenc.rope_frequencies(16, base=1e6)
    x = np.random.default_rng(0).standard_normal((1, 40, 16))
    for interleaved, section in [(False, [2, 3, 3]), (True, [4, 2, 2])]:
        angles = mrope_angles(ids, section, base=1e6, interleaved=interleaved)
        np.testing.assert_array_equal(angles[0], pos[:, None] * frequencies)
        np.testing.assert_allclose(mrope(x, ids, section, base=1e6, interleaved=interleaved),
                                   posenc.rope(x[0], base=1e6, layout="half")[None], atol=1e-14)


def test_scores_depend_on_the_offsets_on_each_axis():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, 32))
    query, key, shift = np.array([3, 5, 7]), np.array([1, 9, 2]), np.array([40, -2, 11])

    def score(a, b, interleaved):
        ids = np.stack([a, b], axis=1)[:, None, :]              # (3, 1, 2): the two tokens
        turned = mrope(np.stack([q, k])[None], ids, [6, 5, 5], interleaved=interleaved)
        return turned[0, 0] @ turned[0, 1]

    for interleaved in (False, True):
        assert np.isclose(score(query, key, interleaved),
                          score(query + shift, key + shift, interleaved), rtol=0, atol=1e-12)
        assert not np.isclose(score(query, key, interleaved),
                              score(query, key + [0, 1, 0], interleaved))


def test_yarn_multiplies_cos_and_sin_by_its_attention_factor():
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    ids = np.arange(30).reshape(3, 1, 10)
    cos, sin = mrope_cos_sin(ids, [2, 3, 3], scaling=scaling)
    angles = mrope_angles(ids, [2, 3, 3], scaling=scaling)
    factor = 0.1 * np.log(4.0) + 1.0
    np.testing.assert_allclose(cos[..., :8], factor * np.cos(angles), rtol=1e-15)
    np.testing.assert_allclose(sin[..., 8:], factor * np.sin(angles), rtol=1e-15)


@pytest.mark.parametrize("call, error, match", [
    (lambda: mrope_pair_axes([16, 24]), ValueError, "three entries"),
    (lambda: mrope_pair_axes("16,24,24"), TypeError, "list of three integers"),
    (lambda: mrope_pair_axes([16, -1, 24]), ValueError, r"mrope_section\[1\]"),
    (lambda: mrope_pair_axes([16, 2.5, 24]), TypeError, r"mrope_section\[1\]"),
    (lambda: mrope_pair_axes([0, 0, 0]), ValueError, "positive sum"),
    (lambda: mrope_pair_axes([2, 3, 3], interleaved=True), ValueError, "must be below the 8"),
    (lambda: mrope_pair_axes([2, 3, 3], interleaved=1), TypeError, "interleaved must be a bool"),
    (lambda: mrope_angles(np.zeros((3, 1, 4)), [2, 3, 3]), TypeError, "integers"),
    (lambda: mrope_angles(np.zeros((2, 1, 4), int), [2, 3, 3]), ValueError, r"shape \(3, \.\.\.\)"),
    (lambda: mrope_angles(np.full((3, 1, 1), 2**53), [2, 3, 3]), ValueError, "2\\*\\*53"),
    (lambda: mrope_angles(np.zeros((3, 1, 1), int), [2, 3, 3], base=1.0), ValueError, "base"),
    (lambda: mrope(np.zeros((1, 4, 10)), np.zeros((3, 1, 4), int), [2, 3, 3]), ValueError,
     "2 \\* sum"),
    (lambda: mrope(np.zeros((1, 4, 16), int), np.zeros((3, 1, 4), int), [2, 3, 3]), TypeError,
     "floating-point"),
    (lambda: mrope(np.zeros((2, 5, 16)), np.zeros((3, 1, 4), int), [2, 3, 3]), ValueError,
     "does not broadcast"),
])
def test_bad_input_is_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---- against transformers 5.24 ------------------------------------------------------------

def _transformers():
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    return transformers


def hf_config(name: str):
    """The real config, read by transformers' config class of its model_type."""
    transformers = _transformers()
    values = dict(REAL_CONFIGS[name]["config"])
    return transformers.AutoConfig.for_model(values.pop("model_type"), **values)


def hf_rotary(config):
    """transformers' own rotary embedding of the family's text model."""
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLRotaryEmbedding
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding
    classes = {"qwen2_vl": Qwen2VLRotaryEmbedding, "qwen2_5_vl": Qwen2_5_VLRotaryEmbedding,
               "qwen3_vl": Qwen3VLTextRotaryEmbedding}
    return classes[config.model_type](config.text_config)


IMAGE_GRID = (1, 4, 6)  # one image of 4 x 6 patches: 2 x 3 tokens after the 2 x 2 merge


def image_position_ids(family: str):
    """get_rope_index's position ids (3, 1, seq_len) for 5 text tokens, an image, 4 text tokens,
    from a tiny model of the family (its spatial_merge_size is the real models' 2)."""
    import torch
    from mrope_models import text_image_prompt, tiny_model
    model = tiny_model(family)
    input_ids, mm_token_type_ids = text_image_prompt(IMAGE_GRID)
    with torch.no_grad():
        ids, _ = model.model.get_rope_index(input_ids, mm_token_type_ids=mm_token_type_ids,
                                            image_grid_thw=torch.tensor([IMAGE_GRID]))
    return ids.numpy()


@pytest.mark.parametrize("name", REAL_CONFIGS)
def test_pair_axes_are_those_of_transformers(name):
    """transformers' recomposition run on markers (entry a on axis a) gives every pair's axis."""
    import torch
    rotary = hf_rotary(hf_config(name))
    section = rotary.mrope_section
    markers = torch.arange(3.0)[:, None, None, None].expand(3, 1, 1, sum(section)).clone()
    theirs = rotary.recomposition_frequencies(markers)[0, 0, :sum(section)]
    family = REAL_CONFIGS[name]["config"]["model_type"]
    ours = mrope_pair_axes(section, interleaved=INTERLEAVED[family])
    np.testing.assert_array_equal(theirs.numpy(), ours)


@pytest.mark.parametrize("name", REAL_CONFIGS)
def test_cos_sin_equal_transformers_on_real_configs(name):
    """On get_rope_index's ids of a text + image input, and on far random ids: equal to
    transformers' float32 values within their float32 angle error (about pos * 2**-24)."""
    import torch
    config = hf_config(name)
    rotary = hf_rotary(config)
    parameters = config.text_config.rope_parameters
    family = REAL_CONFIGS[name]["config"]["model_type"]
    far = np.random.default_rng(0).integers(0, 32768, (3, 2, 64))
    for ids, tolerance in [(image_position_ids(family), 1e-6), (far, 32768 * 2**-22)]:
        theirs = rotary(torch.zeros(1), torch.from_numpy(ids))
        ours = mrope_cos_sin(ids, parameters["mrope_section"], base=parameters["rope_theta"],
                             interleaved=INTERLEAVED[family])
        for mine, their in zip(ours, theirs):
            assert mine.shape == tuple(their.shape) == ids.shape[1:] + (128,)
            assert np.abs(mine - their.double().numpy()).max() <= tolerance
