"""posenc.shipping: the shipping appendices' test bed and their measure of a shipped model."""

import math
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from posenc.pytorch import ALiBi, PositionalEncoding, RotaryEmbedding  # noqa: E402
from posenc.shipping import TinyAttention, example_inputs, largest_difference  # noqa: E402


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_tiny_attention_is_the_three_modules_in_one_layer():
    """The output, rebuilt by hand from the layer's own weights and the three modules."""
    torch.manual_seed(0)
    model = TinyAttention(d_model=8, n_heads=2, max_len=4).eval()
    x = randn(3, 6, 8, seed=1)  # past max_len: the modules grow their tables
    with torch.no_grad():
        q, k, v = (model.qkv(PositionalEncoding(8)(x)).view(3, 6, 3, 2, 4)
                   .permute(2, 0, 3, 1, 4).unbind(0))
        q, k = RotaryEmbedding(4)(q, k)
        weights = ALiBi(2)(q @ k.transpose(-2, -1) / 2.0).softmax(dim=-1)
        expected = (weights @ v).transpose(1, 2).reshape(3, 6, 8)
        torch.testing.assert_close(model(x), expected)


def test_tiny_attention_keeps_shape_and_dtype():
    torch.manual_seed(0)
    model = TinyAttention().double()
    x = randn(2, 5, 16).double()
    out = model(x)
    assert out.shape == x.shape and out.dtype == torch.float64


@pytest.mark.parametrize("kwargs, error, message", [
    ({"d_model": 16.0}, TypeError, "d_model must be an integer"),
    ({"n_heads": 0}, ValueError, "n_heads must be"),
    ({"d_model": 12, "n_heads": 5}, ValueError,
     "d_model must be n_heads times an even head width, got d_model=12 and n_heads=5"),
    ({"d_model": 6, "n_heads": 2}, ValueError,
     "d_model must be n_heads times an even head width, got d_model=6 and n_heads=2"),
    ({"max_len": -1}, ValueError, "max_len"),
])
def test_tiny_attention_errors(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        TinyAttention(**kwargs)


def test_tiny_attention_takes_max_len_by_keyword():
    with pytest.raises(TypeError, match="^" + re.escape(
            "TinyAttention takes max_len as a keyword argument: write TinyAttention(16, 2, "
            "max_len=64), not TinyAttention(16, 2, 64)") + "$"):
        TinyAttention(16, 2, 64)


def test_largest_difference():
    torch.manual_seed(0)
    model = TinyAttention().eval()
    inputs = {n: randn(2, n, 16, seed=n) for n in (3, 70)}
    assert largest_difference(model, model, inputs) == 0.0
    assert largest_difference(model, model, list(inputs.values())) == 0.0
    worst = max((model(x) * 1e-3).abs().max().item() for x in inputs.values())
    with torch.no_grad():
        assert largest_difference(lambda x: (model(x) * 1.001).numpy(), model, inputs) == pytest.approx(worst, rel=1e-3)
    nan_once = lambda x: model(x) * (math.nan if x.shape[1] == 3 else 1.0)  # noqa: E731
    assert math.isnan(largest_difference(nan_once, model, inputs))
    assert largest_difference(model, model, [randn(2, 0, 16)]) == 0.0


def test_largest_difference_errors():
    model = TinyAttention().eval()
    with pytest.raises(ValueError, match="inputs must hold at least one tensor, got none"):
        largest_difference(model, model, {})
    with pytest.raises(ValueError, match=re.escape(
            "the shipped model returned shape (2, 3) for an input of shape (2, 3, 16), "
            "the eager model (2, 3, 16)")):
        largest_difference(lambda x: np.zeros((2, 3)), model, [randn(2, 3, 16)])


def test_a_seed_gives_the_same_weights_and_leaves_the_global_generator():
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    a, b = TinyAttention(seed=7), TinyAttention(seed=7)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a.qkv.weight, b.qkv.weight)
    assert not torch.equal(a.qkv.weight, TinyAttention(seed=8).qkv.weight)
    torch.manual_seed(7)
    assert torch.equal(TinyAttention().qkv.weight, a.qkv.weight)
    with pytest.raises(TypeError, match="seed must be an integer"):
        TinyAttention(seed=1.5)


def test_example_inputs():
    inputs = example_inputs((3, 0, 11), d_model=8, batch=4)
    assert list(inputs) == [3, 0, 11]
    assert [tuple(x.shape) for x in inputs.values()] == [(4, 3, 8), (4, 0, 8), (4, 11, 8)]
    assert torch.equal(example_inputs([3], d_model=8, batch=4)[3], inputs[3])
    assert not torch.equal(inputs[3][:, :3], inputs[11][:, :3])
    with pytest.raises(ValueError, match="seq_len must be"):
        example_inputs([-1])
    with pytest.raises(TypeError, match="batch must be an integer"):
        example_inputs([3], batch=2.0)
