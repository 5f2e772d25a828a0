"""posenc.pytorch.HFRotaryEmbedding swapped into tiny random transformers models (Llama, Qwen2):
the same greedy tokens at the trained length, closer to float64 far out, stateless dynamic."""

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import posenc  # noqa: E402
from posenc.pytorch import HFRotaryEmbedding  # noqa: E402

logging.getLogger("transformers").setLevel(logging.ERROR)

SCALINGS = {
    "default": None,
    "linear": {"rope_type": "linear", "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 64,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0},
}
TRAINED = 128  # max_position_embeddings of the tiny models


def tiny_model(family: str, rope_type: str, *, seed: int = 0):
    scaling = SCALINGS[rope_type]
    config = transformers.AutoConfig.for_model(
        family, vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=TRAINED,
        rope_theta=10000.0, rope_scaling=dict(scaling) if scaling else None)
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


PROMPT = torch.tensor([[5, 7, 11, 13, 17, 19, 23, 29], [0, 0, 0, 3, 1, 4, 1, 5]])
MASK = torch.tensor([[1] * 8, [0, 0, 0, 1, 1, 1, 1, 1]])  # a left-padded batch




pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("rope_type", list(SCALINGS))
def test_same_greedy_tokens_as_transformers(family, rope_type):
    """The engineer's call: model.generate (KV cache, a left-padded batch), rotary swapped."""
    model = tiny_model(family, rope_type)
    kwargs = {"attention_mask": MASK, "max_new_tokens": 64, "min_new_tokens": 64,
              "do_sample": False, "pad_token_id": 0}
    with torch.no_grad():
        theirs = model.generate(PROMPT, **kwargs)
        model.model.rotary_emb = HFRotaryEmbedding(model.config)
        ours = model.generate(PROMPT, **kwargs)
    assert ours.shape == (2, 72) and torch.equal(ours, theirs)
    assert len(set(ours[0, 8:].tolist())) >= 4  # the tokens say something about the positions


@pytest.mark.parametrize("rope_type", list(SCALINGS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cos_sin_shaped_and_typed_as_transformers(rope_type, dtype):
    model = tiny_model("llama", rope_type)
    theirs_module = model.model.rotary_emb
    ours_module = HFRotaryEmbedding(model.config)
    x = torch.zeros(2, 5, 32, dtype=dtype)
    position_ids = torch.tensor([[0, 1, 2, 3, 4], [60, 61, 62, 63, 127]])
    theirs, ours = theirs_module(x, position_ids), ours_module(x, position_ids)
    for a, b in zip(theirs, ours):
        assert a.shape == b.shape == (2, 5, 16) and a.dtype == b.dtype == dtype
        # transformers' float32 angles are off by up to 127 * 2**-24 = 7.6e-6 here
        tolerance = 1e-5 if dtype == torch.float32 else 2 ** -7
        torch.testing.assert_close(b.float(), a.float(), rtol=0, atol=tolerance)
    assert ours_module.attention_scaling == theirs_module.attention_scaling


def angle_error(position: int, dtype) -> tuple[float, float]:
    """Largest |cos - exact|, |sin - exact| of posenc's and transformers' rows at ``position``
    (Llama 3.1's head: 128 wide, base 500000, no scaling), the exact ones from float64."""
    config = {"head_dim": 128, "rope_theta": 500000.0, "max_position_embeddings": 8192}
    positions = torch.arange(position - 64, position)[None]
    frequencies, _ = posenc.rope_frequencies(128, base=500000.0)
    angles = positions[0].double().numpy()[:, None] * np.concatenate([frequencies] * 2)
    exact = np.stack((np.cos(angles), np.sin(angles)))
    llama = transformers.LlamaConfig(hidden_size=512, num_attention_heads=4, **config)
    theirs_module = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(llama)
    x = torch.zeros(1, dtype=dtype)
    errors = []
    for module in (HFRotaryEmbedding(config, max_len=0), theirs_module):
        got = np.stack([t[0].double().numpy() for t in module(x, positions)])
        errors.append(float(np.abs(got - exact).max()))
    return tuple(errors)


def test_cos_sin_exact_to_float32_far_out():
    """posenc: one float32 rounding (<= 2**-25 = 3.0e-8); transformers' float32 angles: far
    more. Measured (Llama 3.1's head, 64 positions up to pos): at 2**15 2.3e-3, at 2**17
    9.0e-3, at 2**20 7.5e-2 for transformers, 3.0e-8 for posenc; in bfloat16 both round
    the float32 values, posenc's to within 2.0e-3, transformers' 3.5e-3 and 9.2e-3."""
    for position in (2**15, 2**17, 2**20):
        ours, theirs = angle_error(position, torch.float32)
        assert ours <= 2**-25
        assert theirs > 100 * ours
    ours, theirs = angle_error(2**17, torch.bfloat16)
    assert ours <= 2**-9  # one bfloat16 rounding of the float32 value
    assert theirs > ours


def test_logits_closer_to_float64_at_32k_positions():
    """Measured (weights x4, 32 tokens at positions 32768 to 32799): posenc's float32 logits
    within 4.3e-6 of the float64 model's, transformers' 2.4e-3 (largest logit 6.9)."""
    model = tiny_model("llama", "default", seed=1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(4.0)  # sharper attention, so that positions matter
        ids = torch.randint(0, 48, (1, 32), generator=torch.Generator().manual_seed(2))
        position_ids = torch.arange(32768, 32768 + 32)[None]
        theirs = model(ids, position_ids=position_ids).logits.double()
        model.model.rotary_emb = HFRotaryEmbedding(model.config)
        ours = model(ids, position_ids=position_ids).logits.double()
        reference = model.double()(ids, position_ids=position_ids).logits
    ours_error = (ours - reference).abs().max().item()
    theirs_error = (theirs - reference).abs().max().item()
    assert ours_error < theirs_error / 10, (ours_error, theirs_error)


def test_dynamic_is_stateless_where_transformers_keeps_the_longest():
    """transformers#25104: transformers' dynamic module keeps the base of the longest sequence
    seen until one shorter than max_position_embeddings resets it. Measured here (weights x4,
    so that attention is sharp): a 132-token run after a 260-token one moves the logits by
    8.45 (largest logit 6.37) from the same run on a fresh model; posenc's stays within 2e-5
    of the fresh one (float32 rounding) and is the same before and after."""
    model = tiny_model("llama", "dynamic")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(4.0)
    long_ids = torch.randint(0, 48, (1, 2 * TRAINED + 4), generator=torch.Generator().manual_seed(3))
    short_ids = long_ids[:, : TRAINED + 4]  # past the trained length: no reset
    with torch.no_grad():
        fresh = model(short_ids).logits
        model(long_ids)
        after_long = model(short_ids).logits
        model.model.rotary_emb = HFRotaryEmbedding(model.config)
        ours_fresh = model(short_ids).logits
        model(long_ids)
        ours_after_long = model(short_ids).logits
    assert (after_long - fresh).abs().max() > 1.0  # transformers: the long run changed it
    assert torch.equal(ours_after_long, ours_fresh)  # posenc: the length of each call
    torch.testing.assert_close(ours_fresh, fresh, rtol=0, atol=1e-4)


@pytest.mark.parametrize("bad, error", [
    ((torch.zeros(1, 2), torch.tensor([[0.0, 1.0]])), TypeError),
    ((torch.zeros(1, 2, dtype=torch.long), torch.tensor([[0, 1]])), TypeError),
    ((torch.zeros(1, 2), torch.tensor([[0, 2**53]])), ValueError),
])
def test_bad_input_is_a_clear_error(bad, error):
    module = HFRotaryEmbedding({"head_dim": 8, "max_position_embeddings": 64})
    with pytest.raises(error):
        module(*bad)
    with pytest.raises(ValueError, match="layer_type"):
        module(torch.zeros(1, 2), torch.tensor([[0, 1]]), layer_type="sliding_attention")


@pytest.mark.parametrize("order", ["built in float32, called in float64", "moved with .double()",
                                   "moved with .double(), called in float32"])
def test_compiles_fullgraph_in_float64_as_in_float32(order):
    """The issue's order: a module built in float32 (the default) in a float64 model, or moved
    afterwards; the graph needs no host work ("Attempted to call function marked as skipped"
    before)."""
    torch._dynamo.reset()
    module = HFRotaryEmbedding({"head_dim": 8, "max_position_embeddings": 64}, max_len=16)
    dtype = torch.float32 if order.endswith("float32") else torch.float64
    if "moved" in order:
        module = module.double()
    x, positions = torch.zeros(1, 3, 8, dtype=dtype), torch.tensor([[0, 5, 40]])
    # Dynamo traces the graph (where the error was) as inductor would; no inductor build
    compiled = torch.compile(module, fullgraph=True, dynamic=False, backend="eager")
    for got, expected in zip(compiled(x, positions), module(x, positions)):
        assert got.dtype == dtype
        torch.testing.assert_close(got, expected, rtol=0, atol=2**-20)


def test_wrapper_config_is_read_from_its_text_config():
    text = {"model_type": "mistral", "hidden_size": 32, "num_attention_heads": 2,
            "num_key_value_heads": 1, "head_dim": 16, "rope_theta": 1e6,
            "max_position_embeddings": 64}
    wrapper = transformers.AutoConfig.for_model("mistral3", text_config=text)
    x, positions = torch.zeros(1), torch.arange(8)[None]
    for a, b in zip(HFRotaryEmbedding(wrapper)(x, positions),
                    HFRotaryEmbedding(wrapper.text_config)(x, positions)):
        assert torch.equal(a, b)
