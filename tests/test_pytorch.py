"""posenc.pytorch: the tensor factory and the nn.Module."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.pytorch  # noqa: E402
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


@pytest.mark.parametrize("shape", [(5, 8), (3, 5, 8), (2, 3, 5, 8)])
def test_any_leading_dimensions(shape):
    out = PositionalEncoding(8, max_len=10)(torch.zeros(shape))
    assert out.shape == shape
    np.testing.assert_allclose(out.reshape(-1, 5, 8)[-1].numpy(),
                               posenc.positional_encoding(5, 8), atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_output_keeps_input_dtype_and_its_precision(dtype):
    """Each entry is the nearest value of the input's dtype: no neighbour is closer.

    At this size a conversion through float32 misses the nearest value of 141 float16
    and 11 bfloat16 entries, so the check can fail.
    """
    exact = torch.from_numpy(posenc.positional_encoding(4096, 512))
    out = PositionalEncoding(512, max_len=4096)(torch.zeros(1, 4096, 512, dtype=dtype))
    assert out.dtype == dtype
    got = out[0]
    error = (got.double() - exact).abs()
    for direction in (float("inf"), float("-inf")):
        neighbour = torch.nextafter(got, torch.full_like(got, direction))
        assert torch.all(error <= (neighbour.double() - exact).abs())


def test_precision_survives_half():
    module = PositionalEncoding(16, max_len=100).half()  # no buffer is rounded to float16
    out = module(torch.zeros(100, 16, dtype=torch.float64))
    np.testing.assert_allclose(out.numpy(), posenc.positional_encoding(100, 16), rtol=0, atol=1e-15)


def test_table_is_cached_per_dtype_and_device(monkeypatch):
    calls = []
    original = posenc.pytorch.positional_encoding
    monkeypatch.setattr(posenc.pytorch, "positional_encoding",
                        lambda *a, **k: calls.append(k["dtype"]) or original(*a, **k))
    module = PositionalEncoding(8, max_len=10)  # computes the float32 CPU table
    for _ in range(3):
        module(torch.zeros(2, 5, 8))
        module(torch.zeros(2, 5, 8, dtype=torch.bfloat16))
    assert calls == [torch.float32, torch.bfloat16]
    assert module.table(torch.float32) is module.table(torch.float32, "cpu")


def test_input_on_another_device():
    # The meta device has shapes but no data: it shows the table follows the input's device.
    out = PositionalEncoding(8, max_len=10).to("meta")(torch.zeros(2, 5, 8, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 5, 8)


@pytest.mark.parametrize("seq_len, offset, grown", [(25, 0, 25), (1, 15, 20), (4, 7, 20), (3, 7, 10)])
def test_grows_past_max_len(seq_len, offset, grown):
    module = PositionalEncoding(8, max_len=10)
    module(torch.zeros(1, 4, 8))  # fills the cache with the short table
    out = module(torch.zeros(1, seq_len, 8), offset=offset)
    assert module.max_len == grown
    np.testing.assert_allclose(out[0].numpy(), posenc.positional_encoding(seq_len, 8, offset=offset),
                               atol=1e-7)


def test_offset_matches_full_sequence():
    module = PositionalEncoding(16, max_len=32)
    x = torch.randn(1, 12, 16, generator=torch.Generator().manual_seed(1))
    full = module(x)
    for t in range(12):
        torch.testing.assert_close(module(x[:, t:t + 1], offset=t), full[:, t:t + 1])


def test_nothing_in_state_dict_and_round_trip():
    def model():
        return torch.nn.Sequential(torch.nn.Embedding(20, 8), PositionalEncoding(8, max_len=10),
                                   torch.nn.Linear(8, 3))
    torch.manual_seed(0)
    original, copy = model(), model()
    assert list(original[1].parameters()) == [] and original[1].state_dict() == {}
    copy.load_state_dict(original.state_dict())
    tokens = torch.arange(10).reshape(2, 5)
    torch.testing.assert_close(copy(tokens), original(tokens), rtol=0, atol=0)


def test_dropout_only_in_training_mode():
    module = PositionalEncoding(64, max_len=16, dropout=0.5)
    x = torch.ones(4, 16, 64)
    torch.manual_seed(0)
    assert (module.train()(x) == 0).any()
    torch.testing.assert_close(module.eval()(x), x + module.table())


def test_torch_compile():
    module = PositionalEncoding(8, max_len=10)
    compiled = torch.compile(module)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(compiled(x), module(x))
    torch.testing.assert_close(compiled(x, 3), module(x, 3))


def test_torch_export():
    module = PositionalEncoding(8, max_len=10)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(3))
    exported = torch.export.export(module, (x,))
    torch.testing.assert_close(exported.module()(x), module(x))


@pytest.mark.parametrize("x, offset, error, message", [
    (torch.zeros(2, 5, 6), 0, ValueError, "last dimension is 6 but this positional encoding has d_model=8"),
    (torch.zeros(2, 5, 8, dtype=torch.int64), 0, TypeError, "floating-point torch.Tensor.*torch.int64"),
    (np.zeros((2, 5, 8)), 0, TypeError, "floating-point torch.Tensor.*got ndarray"),
    (torch.zeros(8), 0, ValueError, r"at least 2 dimensions, got shape \(8,\)"),
    (torch.zeros(1, 5, 8), -1, ValueError, "offset must be an integer >= 0, got -1"),
    (torch.zeros(1, 5, 8), 1.0, TypeError, "offset must be an integer, got float"),
])
def test_forward_errors(x, offset, error, message):
    with pytest.raises(error, match=message):
        PositionalEncoding(8, max_len=10)(x, offset=offset)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"d_model": 0}, ValueError, "d_model must be an integer >= 1"),
    ({"d_model": 8.0}, TypeError, "d_model must be an integer, got float"),
    ({"d_model": 8, "max_len": -1}, ValueError, "max_len must be an integer >= 0"),
    ({"d_model": 8, "base": float("nan")}, ValueError, "base must be a finite number > 0"),
    ({"d_model": 8, "base": -1.0}, ValueError, "base must be a finite number > 0"),
])
def test_constructor_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        PositionalEncoding(**kwargs)
