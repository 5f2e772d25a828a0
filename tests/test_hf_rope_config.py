"""posenc.rope_config against transformers: real models' rope sections (tests/data), read as
transformers 5 reads them, give its inverse frequencies and attention factor."""

import importlib
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import posenc

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

logging.getLogger("transformers").setLevel(logging.ERROR)  # its warnings on unused keys

MODELS = json.loads((Path(__file__).parent / "data" / "hf_rope_configs.json").read_text())["models"]
READ = [entry for entry in MODELS if "refused" not in entry]


def hf_config(config: dict):
    config = json.loads(json.dumps(config))  # transformers writes into the dicts it is given
    return transformers.AutoConfig.for_model(config.pop("model_type"), **config)


def hf_rotary(config):
    """The model family's own rotary embedding, built from the config."""
    module = importlib.import_module(
        f"transformers.models.{config.model_type}.modeling_{config.model_type}")
    (name,) = [name for name in dir(module) if name.endswith("RotaryEmbedding")
               and not name.startswith("_") and "Dynamic" not in name and "Linear" not in name]
    return getattr(module, name)(config)


def frequencies(read: dict, seq_len: int):
    return posenc.rope_frequencies(read["head_dim"], base=read["base"],
                                   scaling=read["scaling"], seq_len=seq_len)


@pytest.mark.parametrize("entry", READ, ids=[entry["model"].split(" ")[0] for entry in READ])
def test_real_config_gives_transformers_frequencies(entry):
    config = hf_config(entry["config"])
    read = posenc.rope_config(entry["config"])
    assert posenc.rope_config(config) == read  # the PretrainedConfig reads the same
    assert posenc.rope_config(config.to_dict()) == read  # and so does its transformers 5 JSON
    rope_type = config.rope_parameters["rope_type"]
    module = hf_rotary(config)
    lengths = [16, 200_000] if rope_type == "dynamic" else [0]
    for seq_len in lengths:
        if rope_type == "dynamic":
            expected, factor = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", seq_len=seq_len)
        elif rope_type == "default":
            expected, factor = module.inv_freq, module.attention_scaling
        else:
            expected, factor = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu")
            assert torch.equal(expected, module.inv_freq)
        ours, our_factor = frequencies(read, seq_len)
        np.testing.assert_allclose(ours, expected.double().numpy(), rtol=1e-6, atol=0)
        assert our_factor == pytest.approx(factor, rel=1e-12)
        assert our_factor == pytest.approx(module.attention_scaling, rel=1e-12)


def test_longrope_is_refused_with_the_reason():
    (entry,) = [entry for entry in MODELS if entry.get("refused") == "longrope"]
    with pytest.raises(ValueError, match="longrope.*Phi-3"):
        posenc.rope_config(entry["config"])


def test_dynamic_reads_max_position_embeddings_not_the_sections_length():
    (entry,) = [entry for entry in READ if "dynamic" in json.dumps(entry["config"])]
    section = entry["config"]["rope_scaling"]
    read = posenc.rope_config(entry["config"])
    assert read["scaling"]["original_max_position_embeddings"] == 98304
    expected, _ = ROPE_INIT_FUNCTIONS["dynamic"](hf_config(entry["config"]), "cpu", seq_len=131072)
    # The section read as it is (its own length 32768) is far off: the silent error of old.
    as_it_is = {"rope_type": "dynamic", "factor": section["factor"],
                "original_max_position_embeddings": section["original_max_position_embeddings"]}
    wrong, _ = posenc.rope_frequencies(read["head_dim"], base=read["base"], scaling=as_it_is,
                                       seq_len=131072)
    assert np.max(np.abs(wrong / expected.double().numpy() - 1)) > 0.5
    ours, _ = frequencies(read, 131072)
    np.testing.assert_allclose(ours, expected.double().numpy(), rtol=1e-6)


def test_defaults_and_spellings_as_transformers_fills_them():
    base = {"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 8192.0}
    # yarn and llama3 without original_max_position_embeddings: max_position_embeddings
    yarn = posenc.rope_config({**base, "rope_parameters": {"rope_type": "yarn", "factor": 4,
                                                           "rope_theta": 5e5, "beta_fast": None}})
    assert yarn["base"] == 5e5 and yarn["head_dim"] == 64
    assert yarn["scaling"]["original_max_position_embeddings"] == 8192
    assert yarn["scaling"]["beta_fast"] == 32.0
    llama3 = posenc.rope_config({**base, "rope_scaling": {
        "type": "llama3", "factor": 8.0, "low_freq_factor": 1, "high_freq_factor": 4}})
    assert llama3["scaling"]["original_max_position_embeddings"] == 8192
    assert llama3["base"] == 10000.0  # transformers' default rope_theta
    # yarn with factor null: max_position_embeddings / original_max_position_embeddings
    ratio = posenc.rope_config({**base, "rope_scaling": {
        "type": "yarn", "factor": None, "original_max_position_embeddings": 2048}})
    assert ratio["scaling"]["factor"] == 4.0
    # the Phi-3 rule: a top-level original_max_position_embeddings wins
    top = posenc.rope_config({**base, "original_max_position_embeddings": 1024,
                              "rope_scaling": {"type": "yarn", "factor": 2.0,
                                               "original_max_position_embeddings": 4096}})
    assert top["scaling"]["original_max_position_embeddings"] == 1024
    for config in ({**base}, {**base, "rope_scaling": None}, {**base, "rope_parameters": {}},
                   {**base, "rope_scaling": {"type": "default"}}):
        assert posenc.rope_config(config)["scaling"] is None


@pytest.mark.parametrize("config, error, match", [
    ({"hidden_size": 64, "num_attention_heads": 4, "rope_scaling": {"type": "linear"}},
     ValueError, "no 'factor'"),
    ({"rope_scaling": {"type": "linear", "factor": 2.0}}, ValueError, "head_dim"),
    ({"head_dim": 64, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, ValueError,
     "max_position_embeddings"),
    ({"head_dim": 64, "rope_scaling": {"type": "linear", "factor": -2.0}}, ValueError, "factor"),
    ({"head_dim": 64, "rope_scaling": {"type": "su"}}, ValueError, "not implemented"),
    ({"head_dim": 64, "layer_types": ["full_attention"], "rope_parameters": {
        "full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "default"}}},
     ValueError, "per layer"),
    ({"head_dim": 64, "max_position_embeddings": 8192.5,
      "rope_scaling": {"type": "yarn", "factor": 2.0}}, TypeError, "max_position_embeddings"),
    ({"head_dim": 10, "partial_rotary_factor": 0.5}, ValueError, "even"),
    ("config.json", TypeError, "PretrainedConfig"),
])
def test_configs_transformers_cannot_read_either_are_refused(config, error, match):
    with pytest.raises(error, match=match):
        posenc.rope_config(config)


def test_seq_len_past_float_range_is_a_clear_error():
    scaling = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}
    with pytest.raises(ValueError, match="seq_len must be <= 2"):
        posenc.rope_frequencies(8, scaling=scaling, seq_len=10**400)


def test_the_pytorch_module_takes_the_same_keys():
    from posenc.pytorch import RotaryEmbedding

    read = posenc.rope_config(READ[0]["config"])  # Llama 3.1
    module = RotaryEmbedding(**read, layout="half", max_len=8)
    np.testing.assert_array_equal(module._frequencies, frequencies(read, 0)[0])
