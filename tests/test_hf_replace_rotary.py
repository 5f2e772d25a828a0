"""posenc.pytorch.replace_rotary on tiny random transformers models of several families: it
finds each family's rotary (model.model.rotary_emb, model.gpt_neox.rotary_emb, a wrapper's
model.model.language_model.rotary_emb, Gemma 3's per-layer-type module), and model.generate
(KV cache, a left-padded batch) gives the same greedy tokens in float32; what does not fit is
refused. The models are built from small configs (no weights downloaded)."""

import logging

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import posenc  # noqa: E402
from posenc.pytorch import HFRotaryEmbedding, replace_rotary  # noqa: E402

logging.getLogger("transformers").setLevel(logging.ERROR)
pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = {"vocab_size": 48, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 128}
VISION = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
          "num_attention_heads": 2, "head_dim": 8, "image_size": 28, "patch_size": 14}
# family: (config keys, where its rotary lives)
FAMILIES = {
    "llama": ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 64}},
              ["model.rotary_emb"]),
    "qwen2": ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                "original_max_position_embeddings": 64}}, ["model.rotary_emb"]),
    "gpt_neox": ({"rotary_pct": 0.25, "rotary_emb_base": 25000, "num_key_value_heads": None,
                  "hidden_size": 64}, ["gpt_neox.rotary_emb"]),
    "deepseek_v3": ({"num_key_value_heads": 2, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16,
                     "kv_lora_rank": 16, "q_lora_rank": None, "n_routed_experts": 4,
                     "num_experts_per_tok": 2, "moe_intermediate_size": 16, "n_group": 1,
                     "topk_group": 1, "first_k_dense_replace": 1,
                     "rope_scaling": {"type": "yarn", "factor": 4.0, "mscale": 1.0,
                                      "mscale_all_dim": 1.0,
                                      "original_max_position_embeddings": 64}},
                    ["model.rotary_emb"]),
    "gemma3_text": ({"head_dim": 16, "rope_local_base_freq": 100.0, "sliding_window": 4,
                     "sliding_window_pattern": 2, "rope_scaling": {"rope_type": "linear",
                                                                   "factor": 2.0}},
                    ["model.rotary_emb"]),
    "mistral3": ({"text_config": {"model_type": "ministral3", **SMALL, "head_dim": 16,
                                  "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                                                      "original_max_position_embeddings": 64,
                                                      "llama_4_scaling_beta": 0.1,
                                                      "rope_theta": 1e6}},
                  "vision_config": {"model_type": "pixtral", **VISION}, "image_token_index": 47},
                 ["model.language_model.rotary_emb"]),
}


def tiny_model(family: str):
    keys, _ = FAMILIES[family]
    values = keys if "text_config" in keys else {**SMALL, **keys}
    config = transformers.AutoConfig.for_model(family, **values)
    torch.manual_seed(0)
    if "text_config" in keys:
        return transformers.AutoModelForImageTextToText.from_config(config).eval()
    return transformers.AutoModelForCausalLM.from_config(config).eval()


PROMPT = torch.tensor([[5, 7, 11, 13, 17, 19, 23, 29], [0, 0, 0, 3, 1, 4, 1, 5]])
MASK = torch.tensor([[1] * 8, [0, 0, 0, 1, 1, 1, 1, 1]])  # a left-padded batch


@pytest.mark.parametrize("family", list(FAMILIES))
def test_same_greedy_tokens_after_replace_rotary(family):
    model = tiny_model(family)
    kwargs = {"attention_mask": MASK, "max_new_tokens": 40, "min_new_tokens": 40,
              "do_sample": False, "pad_token_id": 0}
    with torch.no_grad():
        theirs = model.generate(PROMPT, **kwargs)
        replaced = replace_rotary(model)
        assert sorted(replaced) == FAMILIES[family][1]
        calls = []
        for name in replaced:
            assert isinstance(model.get_submodule(name), HFRotaryEmbedding)
            model.get_submodule(name).register_forward_hook(lambda *args: calls.append(1))
        ours = model.generate(PROMPT, **kwargs)
    assert torch.equal(ours, theirs)
    assert len(calls) >= 40  # the model calls the drop-in, once per step at least
    if family != "mistral3":  # the tiny random wrapper repeats its last prompt token
        assert len(set(ours[0, 8:].tolist())) >= 4  # the tokens depend on the positions


def test_gemma3_gets_one_table_per_layer_type():
    model = tiny_model("gemma3_text")
    replace_rotary(model)
    module = model.model.rotary_emb
    assert module.layer_types == ("sliding_attention", "full_attention")
    assert module.rotaries["sliding_attention"].base == 100.0
    assert module.rotaries["full_attention"].scaling == {"rope_type": "linear", "factor": 2.0}


def test_a_model_without_rotary_is_refused():
    config = transformers.AutoConfig.for_model("gpt2", vocab_size=48, n_embd=32, n_layer=1,
                                               n_head=2, n_positions=64)
    with pytest.raises(ValueError, match="no rotary embedding"):
        replace_rotary(transformers.AutoModelForCausalLM.from_config(config))
    with pytest.raises(TypeError, match="transformers model"):
        replace_rotary(torch.nn.Linear(2, 2))


def test_cohere_interleaved_pairs_are_refused_and_nothing_replaced():
    config = transformers.AutoConfig.for_model("cohere", **SMALL)
    model = transformers.AutoModelForCausalLM.from_config(config)
    before = model.model.rotary_emb
    with pytest.raises(ValueError, match="CohereRotaryEmbedding"):
        replace_rotary(model)
    assert model.model.rotary_emb is before


def test_mrope_gets_the_mrope_drop_in_and_the_one_axis_drop_in_refuses_it():
    config = transformers.AutoConfig.for_model("qwen2_vl", text_config={
        **SMALL, "rope_parameters": {"rope_type": "default", "mrope_section": [2, 3, 3]}},
        vision_config={"depth": 1, "embed_dim": 16, "num_heads": 2, "hidden_size": 32})
    model = transformers.Qwen2VLForConditionalGeneration(config)
    with pytest.raises(ValueError, match="mrope_section.*HFMultimodalRotaryEmbedding"):
        HFRotaryEmbedding(config)
    # its frequencies are one-axis RoPE's, read as transformers reads them (for posenc.mrope)
    read = posenc.rope_config(config)
    expected = model.model.language_model.rotary_emb.inv_freq.double().numpy()
    ours, _ = posenc.rope_frequencies(read["head_dim"], base=read["base"])
    assert abs(ours / expected - 1).max() < 1e-6
    before = model.model.language_model.rotary_emb
    assert replace_rotary(model) == {"model.language_model.rotary_emb": before}
    assert isinstance(model.model.language_model.rotary_emb,
                      posenc.pytorch.HFMultimodalRotaryEmbedding)
