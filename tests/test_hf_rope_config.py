"""posenc.rope_config against transformers: real models' rope sections (tests/data), read as
transformers 5 reads them, give its inverse frequencies and attention factor."""

import importlib
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pytest

import posenc

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: E402

from posenc import hf_config as hf_config_module  # noqa: E402
from posenc.hf_config import DICT_FAMILIES, rope_layer_types  # noqa: E402

logging.getLogger("transformers").setLevel(logging.ERROR)  # its warnings on unused keys

MODELS = json.loads((Path(__file__).parent / "data" / "hf_rope_configs.json").read_text())["models"]
READ = [entry for entry in MODELS if "refused" not in entry]
FAMILIES = sorted({entry["config"]["model_type"] for entry in READ})


def hf_config(config: dict):
    """transformers' config object of a config.json dict (a Llama config for the families
    transformers does not know, internlm2 and minicpm, which rotate as Llama does)."""
    config = json.loads(json.dumps(config))  # transformers writes into the dicts it is given
    model_type = config.pop("model_type")
    if model_type not in CONFIG_MAPPING:
        model_type = "llama"
    return transformers.AutoConfig.for_model(model_type, **config)


def hf_rotary(config):
    """The model family's own rotary embedding, built from the (text) config."""
    module = importlib.import_module(type(config).__module__.replace(".configuration_",
                                                                     ".modeling_"))
    (name,) = [name for name in dir(module) if name.endswith("RotaryEmbedding")
               and not name.startswith("_") and "Dynamic" not in name and "Linear" not in name
               and "Vision" not in name]
    return getattr(module, name)(config)


def frequencies(read: dict, seq_len: int):
    return posenc.rope_frequencies(read["head_dim"], base=read["base"],
                                   scaling=read["scaling"], seq_len=seq_len)


def reads(config) -> dict:
    """posenc's reading of every layer type's section ({None: ...} for one section)."""
    return {layer_type: posenc.rope_config(config, layer_type=layer_type)
            for layer_type in rope_layer_types(config) or [None]}


@pytest.mark.parametrize("entry", READ, ids=[entry["model"].split(" ")[0] for entry in READ])
def test_real_config_gives_transformers_frequencies(entry, monkeypatch):
    config = hf_config(entry["config"])
    text = config.get_text_config(decoder=True)
    read = reads(entry["config"])
    assert reads(config) == read  # the PretrainedConfig reads the same
    assert reads(config.to_dict()) == read  # and so does its transformers 5 JSON
    if entry["config"]["model_type"] in DICT_FAMILIES:  # read without transformers: the same
        monkeypatch.setattr(hf_config_module, "_transformers_object", lambda config: None)
        assert reads(entry["config"]) == read
        monkeypatch.undo()
    module = hf_rotary(text)
    for layer_type, ours_read in read.items():
        section = text.rope_parameters[layer_type] if layer_type else text.rope_parameters
        rope_type = section["rope_type"]
        prefix = f"{layer_type}_" if layer_type else ""
        inv_freq = getattr(module, prefix + "inv_freq")
        scaling = getattr(module, prefix + "attention_scaling")
        for seq_len in [16, 200_000] if rope_type == "dynamic" else [0]:
            expected, factor = inv_freq, scaling
            if rope_type != "default":
                kwargs = {"layer_type": layer_type} if layer_type else {}
                if rope_type == "dynamic":
                    kwargs["seq_len"] = seq_len
                expected, factor = ROPE_INIT_FUNCTIONS[rope_type](text, "cpu", **kwargs)
                if rope_type != "dynamic":
                    assert torch.equal(expected, inv_freq)
            ours, our_factor = frequencies(ours_read, seq_len)
            np.testing.assert_allclose(ours, expected.double().numpy(), rtol=1e-6, atol=0)
            assert our_factor == pytest.approx(factor, rel=1e-12)
            assert our_factor == pytest.approx(scaling, rel=1e-12)


def test_at_least_fifteen_families_are_read_and_listed_in_the_readme():
    assert len(FAMILIES) >= 15, FAMILIES
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    table = readme[readme.index("## transformers models: the families tested"):]
    table = table[:table.index("\n## ")]
    for family in FAMILIES + ["phi3"]:
        assert f"`{family}`" in table, family


@pytest.mark.parametrize("model, expected", [
    # the silent errors, now read as transformers reads them
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", {None: 64}),  # qk_rope_head_dim, not 2048 // 16
    ("deepseek-ai/DeepSeek-V3", {None: 64}),  # not 7168 // 128 = 56
    ("stabilityai/stablelm-2-zephyr-1_6b", {None: 16}),  # partial_rotary_factor 0.25 of 64
    ("google/gemma-3-1b-it", {"sliding_attention": (256, 1e4), "full_attention": (256, 1e6)}),
])
def test_family_keys_read_as_transformers_reads_them(model, expected):
    (entry,) = [entry for entry in READ if entry["model"] == model]
    for layer_type, value in expected.items():
        read = posenc.rope_config(entry["config"], layer_type=layer_type)
        assert (read["head_dim"], read["base"]) == value if isinstance(value, tuple) \
            else read["head_dim"] == value


def test_gpt_neox_rotary_pct_and_base_with_and_without_transformers(monkeypatch):
    """Pythia's keys: rotary_pct (0.25 when absent, as GPTNeoXConfig) and rotary_emb_base."""
    pythia = {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8,
              "rotary_emb_base": 25000, "max_position_embeddings": 2048}
    expected = {"head_dim": 16, "base": 25000.0, "scaling": None}
    assert posenc.rope_config(pythia) == expected
    monkeypatch.setattr(hf_config_module, "_transformers_object", lambda config: None)
    assert posenc.rope_config(pythia) == expected


@pytest.mark.parametrize("config, match", [
    ({"model_type": "gemma3_text", "head_dim": 256, "rope_local_base_freq": 10000}, "gemma3_text"),
    ({"model_type": "qwen2_vl", "hidden_size": 64, "num_attention_heads": 4}, "qwen2_vl"),
    ({"head_dim": 64, "rope_local_base_freq": 10000}, "rope_local_base_freq"),
    ({"head_dim": 64, "rope_scaling": {"type": "default", "mrope_section": [16, 24, 24]}},
     "mrope_section"),
    ({"model_type": "llama", "head_dim": 64, "rotary_pct": 0.5}, "rotary_pct"),
    ({"head_dim": 64, "text_config": {"head_dim": 64}}, "text_config"),
])
def test_without_transformers_other_families_and_keys_are_refused(config, match, monkeypatch):
    monkeypatch.setattr(hf_config_module, "_transformers_object", lambda config: None)
    with pytest.raises(ValueError, match=match):
        posenc.rope_config(config)


def test_per_layer_sections_need_a_layer_type():
    (entry,) = [entry for entry in READ if entry["model"] == "google/gemma-3-27b-it"]
    assert rope_layer_types(entry["config"]) == ("sliding_attention", "full_attention")
    with pytest.raises(ValueError, match="layer_type= one of them"):
        posenc.rope_config(entry["config"])
    with pytest.raises(ValueError, match="layer_type"):
        posenc.rope_config(READ[0]["config"], layer_type="sliding_attention")
    nope = {"head_dim": 64, "layer_types": ["full_attention", "sliding_attention"],
            "rope_parameters": {"full_attention": {"rope_type": "default"},
                                "sliding_attention": None}}
    assert rope_layer_types(nope) == ("full_attention",)
    with pytest.raises(ValueError, match="no rope section"):
        posenc.rope_config(nope, layer_type="sliding_attention")


def test_multimodal_wrapper_is_read_from_its_text_config():
    (entry,) = [entry for entry in READ if entry["model"].startswith("mistralai/Ministral-3")]
    text = entry["config"]["text_config"]
    assert posenc.rope_config(entry["config"]) == posenc.rope_config(text)
    assert posenc.rope_config(entry["config"])["scaling"]["factor"] == 16.0


@pytest.mark.parametrize("entry", [entry for entry in MODELS if entry.get("refused")])
def test_longrope_is_refused_with_the_reason(entry):
    with pytest.raises(ValueError, match="longrope"):
        posenc.rope_config(entry["config"])


def test_dynamic_reads_max_position_embeddings_not_the_sections_length():
    (entry,) = [entry for entry in READ if entry["model"].startswith("a 78B")]
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
    # the user's key is named, not posenc's argument
    ({"head_dim": 64, "rope_theta": "1e4"}, TypeError, "rope_theta must"),
    ({"head_dim": 64, "rope_theta": None}, TypeError, "rope_theta must"),
    ({"head_dim": 64, "rope_theta": 0.5}, ValueError, "rope_theta must"),
    # transformers fails on these too
    ({"head_dim": 64, "max_position_embeddings": 4096, "rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": None}},
     ValueError, "original_max_position_embeddings null"),
    ({"model_type": "llama", "head_dim": 64, "max_position_embeddings": 4096, "rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": None}},
     ValueError, "transformers refuses"),
    ({"model_type": "llama", "head_dim": 64, "rope_scaling": {"rope_type": "linear"}},
     ValueError, "transformers refuses"),
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


def test_transformers_not_importable_reads_the_tested_families_only(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers.models.auto.configuration_auto", None)
    (gemma,) = [entry for entry in READ if entry["model"] == "google/gemma-3-1b-it"]
    with pytest.raises(ValueError, match="'gemma3_text' is a family posenc reads only through"):
        posenc.rope_config(gemma["config"])
    assert posenc.rope_config(READ[0]["config"])["head_dim"] == 128  # Llama 3.1
