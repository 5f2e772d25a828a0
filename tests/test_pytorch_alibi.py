"""posenc.pytorch.alibi: the module ALiBi and the tensor alibi_bias, against the NumPy
version in posenc.relative and the paper's slope rule written another way."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
from posenc.pytorch import ALiBi, alibi_bias  # noqa: E402

from reference import assert_nearest, assert_nearest_torch, exactly, randn  # noqa: E402


# --- alibi_bias ----------------------------------------------------------------------------------


def papers_slopes(n_heads):
    """Slopes written from the paper's description: for 2^a heads, the geometric sequence with
    start and ratio 2^(-8/n); other counts take the power of two below and interpolate by
    geometric means with the sequence for twice as many heads."""
    def geometric(n):
        start = 2.0 ** (-8.0 / n)
        return [start * start ** h for h in range(n)]
    below = 2 ** math.floor(math.log2(n_heads))
    if below == n_heads:
        return geometric(n_heads)
    return geometric(below) + geometric(2 * below)[0::2][: n_heads - below]


@pytest.mark.parametrize("n_heads", [1, 2, 3, 6, 8, 12, 16, 20, 32, 96])
def test_alibi_bias_against_the_papers_slopes(n_heads):
    bias = alibi_bias(10, n_heads, dtype=torch.float64)
    distance = (torch.arange(10)[:, None] - torch.arange(10)[None, :]).abs()
    expected = -torch.tensor(papers_slopes(n_heads), dtype=torch.float64)[:, None, None] * distance
    torch.testing.assert_close(bias, expected, rtol=1e-14, atol=0)


def test_alibi_bias_matches_numpy():
    np.testing.assert_array_equal(alibi_bias(7, 5, dtype=torch.float64).numpy(), posenc.alibi_bias(7, 5))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_alibi_bias_dtype_nearest_value(dtype):
    exact = torch.from_numpy(posenc.alibi_bias(64, 12))
    got = alibi_bias(64, 12, dtype=dtype)
    assert got.dtype == dtype and got.shape == (12, 64, 64)
    assert_nearest_torch(got, exact)


def test_alibi_bias_as_an_attention_mask():
    """scaled_dot_product_attention adds a float mask to q k^T / sqrt(d): softmax by hand agrees."""
    q, k, v = (randn(2, 4, 6, 8, seed=s, dtype=torch.float64) for s in (9, 10, 11))
    bias = alibi_bias(6, 4, dtype=torch.float64)
    got = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8) + bias, dim=-1)
    torch.testing.assert_close(got, weights @ v)


def test_alibi_bias_device():
    assert alibi_bias(4, 2, device="meta").device.type == "meta"


@pytest.mark.parametrize("kwargs, error, message", [
    ({"dtype": torch.int64}, TypeError, "dtype must be a floating-point torch.dtype, got torch.int64"),
    ({"dtype": np.float32}, TypeError, "dtype must be a floating-point torch.dtype, got <class 'numpy.float32'>"),
])
def test_alibi_bias_errors(kwargs, error, message):
    with pytest.raises(error, match=exactly(message)):
        alibi_bias(4, 2, **kwargs)
    with pytest.raises(ValueError, match=exactly("n_heads must be an integer >= 1, got 0")):
        alibi_bias(4, 0)


# --- ALiBi, the module ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_heads", [1, 3, 8, 12])
@pytest.mark.parametrize("seq_len", [0, 1, 7, 40])
def test_alibi_module_matches_the_numpy_reference(n_heads, seq_len):
    module = ALiBi(n_heads, max_len=16)
    assert_nearest(module.bias(seq_len).numpy(), posenc.alibi_bias(seq_len, n_heads))
    np.testing.assert_array_equal(module.bias(seq_len, dtype=torch.float64).numpy(),
                                  posenc.alibi_bias(seq_len, n_heads))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_alibi_module_half_precision_nearest(dtype):
    got = ALiBi(12, max_len=8).bias(64, dtype=dtype)
    assert_nearest_torch(got, torch.from_numpy(posenc.alibi_bias(64, 12)))


def test_alibi_module_adds_to_scores_and_follows_a_kv_cache():
    module = ALiBi(4, max_len=32)
    scores = randn(2, 4, 6, 6, seed=16, dtype=torch.float64)
    torch.testing.assert_close(module(scores), scores + torch.from_numpy(posenc.alibi_bias(6, 4)),
                               rtol=0, atol=0)
    # Two new queries against 6 keys: the last two rows of the full bias.
    torch.testing.assert_close(module.bias(2, 6, dtype=torch.float64),
                               module.bias(6, dtype=torch.float64)[:, 4:], rtol=0, atol=0)
    assert module.state_dict() == {} and list(module.parameters()) == []


@pytest.mark.parametrize("n_heads, max_bias", [(2, 12), (3, 6), (5, 0.5)])
def test_alibi_module_max_bias(n_heads, max_bias):
    """The slopes of posenc.alibi_slopes(n_heads, max_bias=...), in the table and past it."""
    module = ALiBi(n_heads, max_len=4, max_bias=max_bias)
    assert module.max_bias == float(max_bias)
    assert repr(module) == f"ALiBi(n_heads={n_heads}, max_len=4, max_bias={float(max_bias)!r})"
    slopes = posenc.alibi_slopes(n_heads, max_bias=max_bias)
    distance = np.abs(np.arange(6)[:, None] - np.arange(6))
    expected = 0.0 - slopes[:, None, None] * distance  # no -0.0
    np.testing.assert_array_equal(module.bias(6, dtype=torch.float64).numpy(), expected)


@pytest.mark.filterwarnings("ignore:`torch.jit.trace` is deprecated:DeprecationWarning",
                            "ignore:`torch.jit.trace_method` is deprecated:DeprecationWarning")
def test_alibi_module_max_bias_in_a_graph():
    """Past max_len a traced graph computes -slope * distance itself, with the same slopes."""
    module = ALiBi(3, max_len=2, max_bias=6)
    traced = torch.jit.trace(module, torch.zeros(1, 3, 4, 4), check_trace=False)  # no eager run
    distance = np.abs(np.arange(7)[:, None] - np.arange(7))
    expected = -posenc.alibi_slopes(3, max_bias=6)[:, None, None] * distance
    np.testing.assert_allclose(traced(torch.zeros(1, 3, 7, 7))[0].numpy(), expected,
                               rtol=2 * 2.0**-23, atol=0)  # two units in the last place
    assert module.max_len == 2  # nothing grew: the rows past 2 came from the graph


def test_alibi_module_default_max_bias():
    assert ALiBi(12).max_bias == 8.0 and repr(ALiBi(1, max_len=3)) == (
        "ALiBi(n_heads=1, max_len=3, max_bias=8.0)")
    np.testing.assert_array_equal(ALiBi(12)._slopes, posenc.alibi_slopes(12))


@pytest.mark.parametrize("call, error, message", [
    (lambda: ALiBi(4, max_bias=0), ValueError, "max_bias must be > 0, got 0.0"),
    (lambda: ALiBi(4, max_bias="8"), TypeError, "max_bias must be a real number, got str '8'"),
    (lambda: ALiBi(0), ValueError, "n_heads must be an integer >= 1, got 0"),
    (lambda: ALiBi(4, max_len=-1), ValueError, "max_len must be an integer >= 0, got -1"),
    (lambda: ALiBi(4, 64), TypeError,
     "ALiBi takes max_len as a keyword argument: write ALiBi(4, max_len=64), not ALiBi(4, 64)"),
    (lambda: ALiBi(4)(torch.zeros(3, 5, 5)), ValueError,
     "scores must have shape (..., n_heads, q_len, k_len) with n_heads=4, got shape (3, 5, 5)"),
    (lambda: ALiBi(4)(torch.zeros(4, 5)), ValueError,
     "scores must have shape (..., n_heads, q_len, k_len) with n_heads=4, got shape (4, 5)"),
    (lambda: ALiBi(4)(torch.zeros(4, 5, 5, dtype=torch.int64)), TypeError,
     "scores must be a floating-point torch.Tensor of shape (..., n_heads, q_len, k_len), got "
     "Tensor of dtype torch.int64"),
    (lambda: ALiBi(4).bias(-1), ValueError, "q_len must be an integer >= 0, got -1"),
    (lambda: ALiBi(4).bias(3, dtype=torch.int32), TypeError,
     "dtype must be a floating-point torch.dtype, got torch.int32"),
])
def test_alibi_module_errors(call, error, message):
    with pytest.raises(error, match=exactly(message)):
        call()
