"""posenc.pytorch.sinusoidal: the tensor factory positional_encoding and the module
PositionalEncoding (its table machinery, shared with RoPE and ALiBi: test_pytorch_tables.py)."""

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
from posenc.pytorch import PositionalEncoding, positional_encoding  # noqa: E402

from reference import assert_nearest_torch, exact_encoding, exactly  # noqa: E402


def test_factory_matches_numpy():
    got = positional_encoding(50, 7, base=100.0, offset=3, dtype=torch.float64)
    np.testing.assert_array_equal(got.numpy(), posenc.positional_encoding(50, 7, base=100.0, offset=3))
    assert positional_encoding(4, 6).dtype == torch.float32


def test_factory_rejects_integer_dtype():
    with pytest.raises(TypeError, match=exactly("dtype must be a floating-point torch.dtype, got torch.int64")):
        positional_encoding(4, 6, dtype=torch.int64)


@pytest.mark.parametrize("base", [100.0, 2.5])
def test_module_uses_its_base(base):
    module = PositionalEncoding(6, max_len=20, base=base)
    out = module(torch.zeros(1, 20, 6, dtype=torch.float64))
    np.testing.assert_allclose(out[0].numpy(), exact_encoding(range(20), 6, base), rtol=0, atol=1e-13)


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
    assert_nearest_torch(out[0], exact)


def test_precision_survives_half():
    module = PositionalEncoding(16, max_len=100).half()  # no buffer is rounded to float16
    out = module(torch.zeros(100, 16, dtype=torch.float64))
    np.testing.assert_allclose(out.numpy(), posenc.positional_encoding(100, 16), rtol=0, atol=1e-15)


def test_empty_positions():
    out = PositionalEncoding(8, max_len=10)(torch.ones(2, 0, 8), positions=torch.zeros(2, 0, dtype=torch.int64))
    assert out.shape == (2, 0, 8)


def test_positions_shared_across_two_batch_dimensions():
    module = PositionalEncoding(8, max_len=10)
    x = torch.zeros(2, 3, 5, 8, dtype=torch.float64)
    out = module(x, positions=torch.tensor([4, 3, 2, 1, 0]))
    np.testing.assert_allclose(out[1, 2].numpy(), exact_encoding([4, 3, 2, 1, 0], 8), rtol=0, atol=1e-15)


def test_positions_error_names_the_sequence_length():
    with pytest.raises(ValueError, match=exactly(
            "positions must have shape (..., seq_len) with seq_len=5, broadcastable to the "
            "input's (2, 3, 5), got shape (4,)")):
        PositionalEncoding(8, max_len=10)(torch.zeros(2, 3, 5, 8), positions=torch.arange(4))


def test_defaults():
    module = PositionalEncoding(8)
    assert (module.max_len, module.base, module.dropout.p) == (5000, 10000.0, 0.0)
    np.testing.assert_allclose(positional_encoding(3, 6).numpy(), exact_encoding(range(3), 6),
                               rtol=0, atol=6e-8)


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
    kept = module.train()(x) != 0
    assert 0.3 < kept.float().mean() < 0.7  # about half the entries survive, scaled by 2
    expected = 2 * (x.numpy() + posenc.positional_encoding(16, 64))
    torch.manual_seed(0)
    out = module(x).numpy()
    np.testing.assert_allclose(out[kept.numpy()], expected[kept.numpy()], rtol=0, atol=5e-7)
    np.testing.assert_allclose(module.eval()(x).numpy(), expected / 2, rtol=0, atol=1e-6)


def test_dropout_of_one_drops_everything():
    module = PositionalEncoding(8, max_len=16, dropout=1.0).train()
    assert torch.all(module(torch.ones(2, 16, 8)) == 0)


def test_torch_compile():
    compiled = torch.compile(PositionalEncoding(8, max_len=10))
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(2))
    for offset in (0, 3, torch.tensor(4), torch.tensor(5, dtype=torch.int32)):
        expected = x.numpy() + exact_encoding(range(int(offset), int(offset) + 5), 8)
        np.testing.assert_allclose(compiled(x, offset).numpy(), expected, rtol=0, atol=5e-7)


def test_torch_compile_after_to():
    module = PositionalEncoding(8, max_len=16).to(torch.float64)
    compiled = torch.compile(module)
    for offset in range(3):  # a decoding loop, one token at a time
        out = compiled(torch.zeros(1, 1, 8, dtype=torch.float64), torch.tensor(offset))
        assert out.dtype == torch.float64
        np.testing.assert_allclose(out[0].numpy(), exact_encoding([offset], 8), rtol=0, atol=1e-15)
    out = compiled(torch.zeros(2, 3, 8, dtype=torch.float64),
                   positions=torch.tensor([[0, 0, 1], [5, 6, 7]]))
    np.testing.assert_allclose(out.numpy(), exact_encoding([0, 0, 1, 5, 6, 7], 8).reshape(2, 3, 8),
                               rtol=0, atol=1e-15)


def test_torch_export():
    module = PositionalEncoding(8, max_len=10)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(3))
    exported = torch.export.export(module, (x,))
    np.testing.assert_allclose(exported.module()(x).numpy(), x.numpy() + exact_encoding(range(5), 8),
                               rtol=0, atol=5e-7)


def test_positions_of_a_left_padded_batch():
    module = PositionalEncoding(8, max_len=16)
    x = torch.zeros(2, 5, 8, dtype=torch.float64)
    # Sequence 0 has two padding tokens on the left: its real tokens are at 0, 1, 2.
    positions = torch.tensor([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]])
    out = module(x, positions=positions)
    np.testing.assert_allclose(out[0, 2:].numpy(), exact_encoding(range(3), 8), rtol=0, atol=1e-15)
    np.testing.assert_allclose(out[1].numpy(), exact_encoding(range(5), 8), rtol=0, atol=1e-15)
    shared = module(x, positions=torch.arange(5, dtype=torch.int32))  # one row for the batch
    torch.testing.assert_close(shared, module(x), rtol=0, atol=0)


@pytest.mark.parametrize("x, offset, error, message", [
    (torch.zeros(2, 5, 6), 0, ValueError,
     "input's last dimension is 6 but this positional encoding has d_model=8; they must be equal"),
])  # the checks it shares with LearnedPositionalEmbedding: test_pytorch_tables.py
def test_forward_errors(x, offset, error, message):
    with pytest.raises(error, match=exactly(message)):
        PositionalEncoding(8, max_len=10)(x, offset=offset)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"d_model": 0}, ValueError, "d_model must be an integer >= 1, got 0"),
    ({"d_model": 8.0}, TypeError, "d_model must be an integer, got float 8.0"),
    ({"d_model": 2**62}, ValueError, f"d_model is too large: a (1, {2**62}) float64 table would "
     f"need {2**65} bytes, more than an array can hold (9223372036854775807)"),
    ({"d_model": 8, "max_len": -1}, ValueError, "max_len must be an integer >= 0, got -1"),
    ({"d_model": 8, "max_len": 2**53 + 1}, ValueError, "offset + seq_len must be <= 2**53 = "
     "9007199254740992 (float64 holds every position up to it exactly), got offset=0, "
     "seq_len=9007199254740993"),
    ({"d_model": 8, "base": float("nan")}, ValueError, "base must be a finite number > 1, got nan"),
    ({"d_model": 8, "base": -1.0}, ValueError, "base must be a finite number > 1, got -1.0"),
    ({"d_model": 8, "base": 1e-300}, ValueError, "base must be a finite number > 1, got 1e-300"),
    ({"d_model": 8, "dropout": "0.1"}, TypeError, "dropout must be a real number in [0, 1], got str '0.1'"),
    ({"d_model": 8, "dropout": None}, TypeError, "dropout must be a real number in [0, 1], got NoneType None"),
    ({"d_model": 8, "dropout": float("nan")}, ValueError, "dropout must be a real number in [0, 1], got nan"),
    ({"d_model": 8, "dropout": 1.5}, ValueError, "dropout must be a real number in [0, 1], got 1.5"),
])
def test_constructor_errors(kwargs, error, message):
    with pytest.raises(error, match=exactly(message)):
        PositionalEncoding(**kwargs)


def test_max_len_by_position_says_what_to_write():
    with pytest.raises(TypeError, match=exactly(
            "PositionalEncoding takes max_len as a keyword argument: write "
            "PositionalEncoding(64, max_len=128), not PositionalEncoding(64, 128)")):
        PositionalEncoding(64, 128)


# --- batch_first=False: the layout of torch.nn.Transformer and of PyTorch's tutorial -------------


def test_sequence_first_adds_each_position_to_every_sample():
    module = PositionalEncoding(8, max_len=16, batch_first=False)
    x = torch.randn(5, 3, 8, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    out = module(x, offset=2)
    np.testing.assert_allclose((out - x).numpy(),
                               np.broadcast_to(exact_encoding(range(2, 7), 8)[:, None], (5, 3, 8)),
                               rtol=0, atol=1e-15)
    torch.testing.assert_close(out, PositionalEncoding(8, max_len=16)(x.transpose(0, 1), 2)
                               .transpose(0, 1), rtol=0, atol=0)
    assert "batch_first=False" in repr(module) and "batch_first" not in repr(PositionalEncoding(8))


def test_sequence_first_matches_the_tutorials_module():
    """The foil re-creating the tutorial's module (float32 angles) on its own layout."""
    from posenc.foils import SeqFirstPositionalEncoding

    x = torch.randn(35, 4, 16, generator=torch.Generator().manual_seed(7))
    theirs = SeqFirstPositionalEncoding(16, dropout=0.0, max_len=50)
    ours = PositionalEncoding(16, max_len=50, batch_first=False)
    assert (ours(x) - theirs(x)).abs().max().item() < 1e-5
    # The silent mistake this option avoids: the default layout reads dim 1 (batch) as positions.
    assert (PositionalEncoding(16, max_len=50)(x) - theirs(x)).abs().max().item() > 0.5


def test_sequence_first_positions():
    module = PositionalEncoding(8, max_len=16, batch_first=False)
    x = torch.zeros(4, 2, 8, dtype=torch.float64)
    positions = torch.tensor([[0, 0], [1, 0], [2, 1], [3, 2]])  # (seq_len, batch): sample 1 left-padded
    out = module(x, positions=positions)
    np.testing.assert_allclose(out[:, 1].numpy(), exact_encoding([0, 0, 1, 2], 8), rtol=0, atol=1e-15)
    torch.testing.assert_close(module(x, positions=torch.arange(4)), module(x), rtol=0, atol=0)


@pytest.mark.parametrize("shape, message", [
    ((5, 8), "with batch_first=False, x must have shape (seq_len, batch, d_model), got shape (5, 8): "
     "a 2-D input has no batch axis; for (seq_len, d_model) use batch_first=True"),
    ((2, 5, 3, 8), "with batch_first=False, x must have shape (seq_len, batch, d_model), got shape "
     "(2, 5, 3, 8)"),
])
def test_sequence_first_errors(shape, message):
    with pytest.raises(ValueError, match=exactly(message)):
        PositionalEncoding(8, batch_first=False)(torch.zeros(shape))
    with pytest.raises(TypeError, match=exactly("batch_first must be True or False, got int 0")):
        PositionalEncoding(8, batch_first=0)


# --- Checkpoints of the tutorial's and the snippet's modules ---------------------------------------


def tutorial_state(max_len=40, d_model=8, layout="tutorial"):
    from posenc.foils import SeqFirstPositionalEncoding, SnippetPositionalEncoding

    torch.manual_seed(0)
    module = (SeqFirstPositionalEncoding(d_model, max_len=max_len) if layout == "tutorial"
              else SnippetPositionalEncoding(d_model, max_len=max_len))
    return torch.nn.Sequential(torch.nn.Linear(d_model, d_model), module).state_dict()


@pytest.mark.parametrize("layout", ["tutorial", "snippet"])
@pytest.mark.parametrize("max_len", [40, 5000])
def test_checkpoint_with_the_tutorials_table_loads_strictly(layout, max_len):
    state = tutorial_state(max_len, 512 if max_len == 5000 else 8, layout)
    d_model = state["0.weight"].shape[0]
    shape = (max_len, 1, d_model) if layout == "tutorial" else (1, max_len, d_model)
    assert tuple(state["1.pe"].shape) == shape
    model = torch.nn.Sequential(torch.nn.Linear(d_model, d_model), PositionalEncoding(d_model, max_len=100))
    result = model.load_state_dict(state, strict=True)
    assert result.missing_keys == [] and result.unexpected_keys == []
    torch.testing.assert_close(model[0].weight, state["0.weight"], rtol=0, atol=0)
    assert "1.pe" in state  # the caller's dictionary is left as it was


@pytest.mark.parametrize("change, message", [
    (lambda pe: pe * 1.01, "1.pe: values are not the sinusoidal encoding of this module (d_model=8, "
     "base=10000.0): the largest difference, "),
    (lambda pe: torch.randn(pe.shape, generator=torch.Generator().manual_seed(1)),
     "1.pe: values are not the sinusoidal encoding"),
    (lambda pe: pe.reshape(40, 8)[None, None], "1.pe: shape (1, 1, 40, 8) is not a table of width "
     "d_model=8: expected (max_len, 1, 8) (PyTorch's tutorial), (1, max_len, 8) (the common snippet) "
     "or (max_len, 8)"),
    (lambda pe: pe[..., :6], "1.pe: shape (40, 1, 6) is not a table of width d_model=8"),
    (lambda pe: pe.long(), "1.pe: expected a floating-point tensor (a sinusoidal table), got Tensor "
     "of dtype torch.int64"),
    (lambda pe: pe.clone().fill_(float("nan")), "1.pe: values are not the sinusoidal encoding"),
])
def test_checkpoint_with_another_table_names_what_differs(change, message):
    state = tutorial_state()
    state["1.pe"] = change(state["1.pe"])
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), PositionalEncoding(8, max_len=100))
    with pytest.raises(RuntimeError, match=re.escape(message)):
        model.load_state_dict(state, strict=True)


def test_checkpoint_with_another_base_is_refused():
    state = tutorial_state()
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), PositionalEncoding(8, max_len=100, base=500.0))
    with pytest.raises(RuntimeError, match=re.escape("(d_model=8, base=500.0)")):
        model.load_state_dict(state)


def test_own_checkpoints_still_have_no_table():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), PositionalEncoding(8, max_len=100))
    assert list(model.state_dict()) == ["0.weight", "0.bias"]
    model.load_state_dict(model.state_dict(), strict=True)


def test_docstring_states_the_amplitude_and_the_paths():
    doc = PositionalEncoding.__doc__
    for claim in ("amplitude 1", "sqrt(d_model)", "book/embeddings.ipynb", "torch.export",
                  "torch.jit.trace", "onnxruntime", "batch_first"):
        assert claim in doc
    table = PositionalEncoding(64, max_len=100).table().double()
    assert table.abs().max().item() <= 1
    torch.testing.assert_close(table.norm(dim=1), torch.full((100,), 32.0 ** 0.5, dtype=torch.float64))
