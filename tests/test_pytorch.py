"""posenc.pytorch: the tensor factory and the nn.Module."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
from posenc.pytorch import PositionalEncoding, positional_encoding  # noqa: E402


def test_factory_matches_numpy():
    got = positional_encoding(50, 7, base=100.0, offset=3, dtype=torch.float64)
    np.testing.assert_array_equal(got.numpy(), posenc.positional_encoding(50, 7, base=100.0, offset=3))
    assert positional_encoding(4, 6).dtype == torch.float32


def test_factory_rejects_integer_dtype():
    with pytest.raises(TypeError, match="floating-point torch.dtype, got torch.int64"):
        positional_encoding(4, 6, dtype=torch.int64)


@pytest.mark.parametrize("d_model", [1, 6, 7])
@pytest.mark.parametrize("offset", [0, 5])
def test_forward_adds_the_table(d_model, offset):
    module = PositionalEncoding(d_model, max_len=64)
    x = torch.randn(2, 10, d_model, generator=torch.Generator().manual_seed(0))
    expected = x.numpy() + posenc.positional_encoding(10, d_model, offset=offset)
    np.testing.assert_allclose(module(x, offset=offset).numpy(), expected, rtol=0, atol=1e-6)


def test_values_within_float32_rounding_of_numpy():
    module = PositionalEncoding(33, max_len=1000)
    got = module(torch.zeros(1000, 33)).double().numpy()
    assert np.abs(got - posenc.positional_encoding(1000, 33)).max() <= 1e-7


@pytest.mark.parametrize("shape", [(5, 8), (3, 5, 8), (2, 3, 5, 8)])
def test_any_leading_dimensions(shape):
    out = PositionalEncoding(8, max_len=10)(torch.zeros(shape))
    assert out.shape == shape
    np.testing.assert_allclose(out.reshape(-1, 5, 8)[-1].numpy(),
                               posenc.positional_encoding(5, 8), atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_output_keeps_input_dtype(dtype):
    out = PositionalEncoding(8, max_len=10)(torch.zeros(2, 5, 8, dtype=dtype))
    assert out.dtype == dtype


def test_offset_matches_full_sequence():
    module = PositionalEncoding(16, max_len=32)
    x = torch.randn(1, 12, 16, generator=torch.Generator().manual_seed(1))
    full = module(x)
    for t in range(12):
        torch.testing.assert_close(module(x[:, t:t + 1], offset=t), full[:, t:t + 1])


def test_table_is_a_non_persistent_buffer():
    module = PositionalEncoding(8, max_len=10)
    assert "pe" in dict(module.named_buffers())
    assert list(module.parameters()) == []
    assert module.state_dict() == {}
    assert module.to(torch.float64).pe.dtype == torch.float64


def test_dropout_only_in_training_mode():
    module = PositionalEncoding(64, max_len=16, dropout=0.5)
    x = torch.ones(4, 16, 64)
    torch.manual_seed(0)
    train_out = module.train()(x)
    assert (train_out == 0).any()
    eval_out = module.eval()(x)
    torch.testing.assert_close(eval_out, x + module.pe)


@pytest.mark.parametrize("x, offset, error, message", [
    (torch.zeros(2, 5, 6), 0, ValueError, "last dimension is 6 but this positional encoding has d_model=8"),
    (torch.zeros(2, 5, 8, dtype=torch.int64), 0, TypeError, "floating-point torch.Tensor.*torch.int64"),
    (np.zeros((2, 5, 8)), 0, TypeError, "floating-point torch.Tensor.*got ndarray"),
    (torch.zeros(8), 0, ValueError, r"at least 2 dimensions, got shape \(8,\)"),
    (torch.zeros(1, 11, 8), 0, ValueError, "do not fit in the table of max_len=10"),
    (torch.zeros(1, 5, 8), 6, ValueError, r"positions 6..10 do not fit"),
    (torch.zeros(1, 5, 8), -1, ValueError, "offset must be an integer >= 0, got -1"),
    (torch.zeros(1, 5, 8), 1.0, TypeError, "offset must be an integer, got float"),
])
def test_forward_errors(x, offset, error, message):
    with pytest.raises(error, match=message):
        PositionalEncoding(8, max_len=10)(x, offset=offset)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"d_model": 0}, ValueError, "d_model must be an integer >= 1"),
    ({"d_model": 8, "max_len": -1}, ValueError, "max_len must be an integer >= 0"),
    ({"d_model": 8, "base": float("nan")}, ValueError, "base must be a finite number > 0"),
])
def test_constructor_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        PositionalEncoding(**kwargs)
