"""posenc.pytorch.HFMultimodalRotaryEmbedding: the M-RoPE of Qwen2-VL, Qwen2.5-VL and Qwen3-VL,
swapped into tiny random models of each family (the same greedy tokens, text only and with an
image's 3-D position ids), equal to posenc.mrope rounded once, close to transformers' own."""

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mrope_models import pixels, text_image_prompt, tiny_config, tiny_model  # noqa: E402
from test_mrope import REAL_CONFIGS, hf_config, hf_rotary, image_position_ids  # noqa: E402

from posenc.mrope import mrope_cos_sin  # noqa: E402
from posenc.pytorch import HFMultimodalRotaryEmbedding, replace_rotary  # noqa: E402

logging.getLogger("transformers").setLevel(logging.ERROR)
pytestmark = pytest.mark.usefixtures("one_torch_thread")

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


def install(model):
    """posenc.pytorch.replace_rotary finds where these models keep the text model's rotary
    (transformers 5.24: model.model.language_model.rotary_emb of a ...ForConditionalGeneration)
    and puts the M-RoPE drop-in there."""
    before = model.model.language_model.rotary_emb
    assert replace_rotary(model) == {"model.language_model.rotary_emb": before}
    assert isinstance(model.model.language_model.rotary_emb, HFMultimodalRotaryEmbedding)


@pytest.mark.parametrize("family", FAMILIES)
def test_same_greedy_tokens_text_only(family):
    model = tiny_model(family)
    prompt = torch.randint(1, 120, (1, 12), generator=torch.Generator().manual_seed(1))
    kwargs = {"max_new_tokens": 24, "do_sample": False}
    with torch.no_grad():
        theirs = model.generate(prompt, **kwargs)
        install(model)
        ours = model.generate(prompt, **kwargs)
    assert ours.shape == (1, 36) and torch.equal(ours, theirs)
    assert len(set(ours[0, 12:].tolist())) >= 4  # the tokens say something about the positions


@pytest.mark.parametrize("family", FAMILIES)
def test_same_greedy_tokens_with_an_image(family):
    """A text + image prompt: the model builds 3-D position ids (get_rope_index) and then
    continues them with its rope deltas while generating."""
    grid = (1, 4, 6)
    model = tiny_model(family)
    prompt, mm_token_type_ids = text_image_prompt(grid)
    kwargs = {"pixel_values": pixels(family, grid), "image_grid_thw": torch.tensor([grid]),
              "mm_token_type_ids": mm_token_type_ids, "max_new_tokens": 12, "do_sample": False}
    with torch.no_grad():
        ids, _ = model.model.get_rope_index(prompt, mm_token_type_ids=mm_token_type_ids,
                                            image_grid_thw=torch.tensor([grid]))
        assert not torch.equal(ids[1], ids[2])  # the image's rows and columns differ
        theirs = model.generate(prompt, **kwargs)
        install(model)
        ours = model.generate(prompt, **kwargs)
    assert torch.equal(ours, theirs)
    assert len(set(ours[0, prompt.shape[1]:].tolist())) >= 3


@pytest.mark.parametrize("name", REAL_CONFIGS)
def test_real_configs_equal_posenc_mrope_rounded_once(name):
    """On the real configs: float32 cos/sin are posenc.mrope_cos_sin's float64 values rounded
    once (text + image ids, far ids, negative ids), and within transformers' float32 error."""
    config = hf_config(name)
    ours = HFMultimodalRotaryEmbedding(config)
    theirs = hf_rotary(config)
    parameters = config.text_config.rope_parameters
    family = REAL_CONFIGS[name]["config"]["model_type"]
    assert ours.mrope_section == parameters["mrope_section"]
    assert ours.interleaved == (family == "qwen3_vl")
    image = torch.from_numpy(image_position_ids(family))
    far = torch.randint(-2**20, 2**20, (3, 2, 40), generator=torch.Generator().manual_seed(0))
    for ids in (image, far):
        cos, sin = ours(torch.zeros(1), ids)
        exact = mrope_cos_sin(ids.numpy(), parameters["mrope_section"],
                              base=parameters["rope_theta"], interleaved=ours.interleaved)
        assert cos.dtype == torch.float32 and cos.shape == exact[0].shape
        assert torch.equal(cos, torch.from_numpy(exact[0]).float())
        assert torch.equal(sin, torch.from_numpy(exact[1]).float())
    their_cos, their_sin = theirs(torch.zeros(1), image)
    cos, sin = ours(torch.zeros(1), image)
    assert max((cos - their_cos).abs().max(), (sin - their_sin).abs().max()) < 1e-6


def test_follows_the_dtype_and_device_of_x():
    rotary = HFMultimodalRotaryEmbedding(tiny_config("qwen3_vl"))
    ids = torch.arange(30).reshape(3, 1, 10)
    exact = mrope_cos_sin(ids.numpy(), [6, 5, 5], base=1e6, interleaved=True)
    cos, _ = rotary.double()(torch.zeros(1, dtype=torch.float64), ids)
    assert cos.dtype == torch.float64 and torch.equal(cos, torch.from_numpy(exact[0]))
    cos, _ = rotary(torch.zeros(1, dtype=torch.bfloat16), ids[:1, 0])  # (batch, seq_len) ids
    assert cos.dtype == torch.bfloat16 and cos.shape == (1, 10, 32)
    text = mrope_cos_sin(np.broadcast_to(ids[:1, 0].numpy(), (3, 1, 10)), [6, 5, 5], base=1e6,
                         interleaved=True)
    assert torch.equal(cos, torch.from_numpy(text[0]).float().bfloat16())


def test_yarn_as_transformers():
    """A Qwen3-VL text config with YaRN (the 1M-token extension): the attention factor too."""
    text = dict(tiny_config("qwen3_vl").text_config.to_dict(), rope_scaling={
        "rope_type": "yarn", "factor": 3.0, "original_max_position_embeddings": 512,
        "mrope_section": [6, 5, 5], "mrope_interleaved": True})
    config = transformers.AutoConfig.for_model("qwen3_vl", text_config=text)
    ours = HFMultimodalRotaryEmbedding(config)
    theirs = hf_rotary(config)
    assert ours.rope_type == "yarn" and ours.attention_scaling == pytest.approx(
        theirs.attention_scaling)
    ids = torch.randint(0, 1500, (3, 2, 30), generator=torch.Generator().manual_seed(0))
    for mine, their in zip(ours(torch.zeros(1), ids), theirs(torch.zeros(1), ids)):
        assert (mine - their).abs().max() < 1e-4


@pytest.mark.parametrize("make, error, match", [
    (lambda: HFMultimodalRotaryEmbedding({"model_type": "qwen2_vl"}), TypeError,
     "AutoConfig.for_model"),
    (lambda: HFMultimodalRotaryEmbedding(transformers.LlamaConfig()), ValueError,
     "model_type 'llama'"),
    (lambda: HFMultimodalRotaryEmbedding(transformers.AutoConfig.for_model(
        "qwen2_vl", hidden_size=64, num_attention_heads=4,
        rope_scaling={"type": "mrope", "mrope_section": [2, 3, 4]})), ValueError,
     "has 9 pairs, but a head of width 16 has 8"),
    (lambda: HFMultimodalRotaryEmbedding(tiny_config("qwen3_vl"), 64), TypeError, "max_len"),
])
def test_bad_config_is_a_clear_error(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("x, ids, error, match", [
    (torch.zeros(1), torch.zeros(3, 1, 4), TypeError, "integer torch.Tensor"),
    (torch.zeros(1, dtype=torch.long), torch.zeros(3, 1, 4, dtype=torch.long), TypeError,
     "floating-point"),
    (torch.zeros(1), torch.zeros(2, 1, 4, dtype=torch.long), ValueError, r"\(3, batch, seq_len\)"),
    (torch.zeros(1), torch.zeros(4, dtype=torch.long), ValueError, r"\(3, batch, seq_len\)"),
    (torch.zeros(1), torch.full((3, 1, 1), 2**53), ValueError, "2\\*\\*53"),
])
def test_bad_input_is_a_clear_error(x, ids, error, match):
    rotary = HFMultimodalRotaryEmbedding(tiny_config("qwen2_vl"))
    with pytest.raises(error, match=match):
        rotary(x, ids)
