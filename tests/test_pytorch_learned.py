"""posenc.pytorch.learned: LearnedPositionalEmbedding, a trained vector per position."""

import pytest

torch = pytest.importorskip("torch")

from posenc.pytorch import LearnedPositionalEmbedding  # noqa: E402

from reference import exactly, randn  # noqa: E402


@pytest.mark.parametrize("offset", [0, 3, 6])
def test_learned_adds_its_rows(offset):
    module = LearnedPositionalEmbedding(8, max_len=10)
    x = randn(2, 4, 8)
    expected = x + module.embedding.weight[offset:offset + 4]
    torch.testing.assert_close(module(x, offset=offset), expected, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(5, 8), (3, 5, 8), (2, 3, 5, 8)])
def test_learned_any_leading_dimensions(shape):
    module = LearnedPositionalEmbedding(8, max_len=5)
    out = module(torch.zeros(shape))
    assert out.shape == shape
    torch.testing.assert_close(out.reshape(-1, 5, 8)[-1], module.embedding.weight.detach())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_learned_keeps_the_input_dtype(dtype):
    out = LearnedPositionalEmbedding(8, max_len=5)(torch.zeros(2, 5, 8, dtype=dtype))
    assert out.dtype == dtype


def test_learned_past_max_len_is_an_error():
    module = LearnedPositionalEmbedding(8, max_len=10)
    module(torch.zeros(1, 10, 8))  # exactly max_len positions: fine
    module(torch.zeros(1, 1, 8), offset=9)
    message = ("positions 8 to 10 (offset=8, seq_len=3) run past max_len=10: a learned "
               "positional embedding has rows for positions 0 to 9 only")
    with pytest.raises(ValueError, match=exactly(message)):
        module(torch.zeros(1, 3, 8), offset=8)
    with pytest.raises(ValueError, match="run past max_len=10"):
        module(torch.zeros(1, 11, 8))


def test_learned_rows_are_parameters_that_train():
    torch.manual_seed(0)
    module = LearnedPositionalEmbedding(4, max_len=10)
    assert list(module.state_dict()) == ["embedding.weight"]
    module(torch.zeros(1, 3, 4), offset=2).sum().backward()
    used = module.embedding.weight.grad.abs().sum(dim=1) > 0
    assert used.tolist() == [False, False, True, True, True] + [False] * 5


def test_learned_initialisation():
    torch.manual_seed(0)
    weight = LearnedPositionalEmbedding(100, max_len=1000).embedding.weight
    assert abs(weight.mean().item()) < 1e-3 and 0.0195 < weight.std().item() < 0.0205


def test_learned_dropout_only_in_training_mode():
    module = LearnedPositionalEmbedding(64, max_len=16, dropout=0.5)
    x = torch.ones(4, 16, 64)
    torch.manual_seed(0)
    assert (module.train()(x) == 0).any()
    torch.testing.assert_close(module.eval()(x), x + module.embedding.weight)


@pytest.mark.parametrize("x, offset, error, message", [
    (torch.zeros(2, 5, 6), 0, ValueError, "x's last dimension is 6 but d_model=8; they must be equal"),
])  # the checks it shares with PositionalEncoding: test_pytorch_tables.py
def test_learned_forward_errors(x, offset, error, message):
    with pytest.raises(error, match=exactly(message)):
        LearnedPositionalEmbedding(8, max_len=10)(x, offset=offset)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((8,), {"max_len": 0}, ValueError, "max_len must be an integer >= 1, got 0"),
    ((0,), {"max_len": 10}, ValueError, "d_model must be an integer >= 1, got 0"),
    ((8.0,), {"max_len": 10}, TypeError, "d_model must be an integer, got float 8.0"),
    ((8,), {"max_len": 10, "dropout": 1.5}, ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    ((8,), {}, TypeError,
     "LearnedPositionalEmbedding.__init__() missing 1 required keyword-only argument: 'max_len'"),
    # The order before issue 35, (max_len, d_model): the message gives the call to write.
    ((512, 64), {}, TypeError, "LearnedPositionalEmbedding takes max_len as a keyword argument: "
     "write LearnedPositionalEmbedding(64, max_len=512), not LearnedPositionalEmbedding(512, 64)"),
    ((512, 64), {"dropout": 0.1}, TypeError, "LearnedPositionalEmbedding takes max_len as a "
     "keyword argument: write LearnedPositionalEmbedding(64, max_len=512, dropout=0.1), not "
     "LearnedPositionalEmbedding(512, 64, dropout=0.1)"),
])
def test_learned_constructor_errors(args, kwargs, error, message):
    with pytest.raises(error, match=exactly(message)):
        LearnedPositionalEmbedding(*args, **kwargs)


def test_torch_export():
    x = randn(2, 5, 8, seed=12)
    learned = LearnedPositionalEmbedding(8, max_len=10)
    torch.testing.assert_close(torch.export.export(learned, (x,)).module()(x), learned(x))
