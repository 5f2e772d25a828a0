"""posenc.pytorch._tables: the cached tables shared by PositionalEncoding, RotaryEmbedding
and ALiBi (one per dtype and device, prepared by .to(), grown or computed past max_len) and
the checks of inputs, offsets and positions, seen through PositionalEncoding, the simplest of
them (and LearnedPositionalEmbedding, for the checks of its input and offset)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import posenc  # noqa: E402
import posenc.pytorch  # noqa: E402
import posenc.pytorch._tables  # noqa: E402
import posenc.pytorch.sinusoidal  # noqa: E402
from posenc.pytorch import LearnedPositionalEmbedding, PositionalEncoding  # noqa: E402

from reference import assert_nearest_torch, exact_encoding, exactly  # noqa: E402


@pytest.fixture
def host_computations(monkeypatch):
    """The (dtype, device) of every table the module computes on the host from now on."""
    calls = []
    original = posenc.pytorch.sinusoidal.positional_encoding
    monkeypatch.setattr(posenc.pytorch.sinusoidal, "positional_encoding",
                        lambda *a, **k: calls.append((k["dtype"], str(k["device"])))
                        or original(*a, **k))
    return calls


def test_table_is_cached_per_dtype_and_device(host_computations):
    module = PositionalEncoding(8, max_len=10)  # computes the float32 CPU table
    for _ in range(3):
        module(torch.zeros(2, 5, 8))
        module(torch.zeros(2, 5, 8, dtype=torch.bfloat16))
    assert host_computations == [(torch.float32, "cpu"), (torch.bfloat16, "cpu")]
    assert module.table(torch.float32) is module.table(torch.float32, "cpu")


def test_cache_evicts_the_least_recently_used(host_computations):
    module = PositionalEncoding(8, max_len=10)
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        module(torch.zeros(1, 2, 8, dtype=dtype))  # float32 is used again before float64 comes
    assert [dtype for dtype, _ in module._tables] == [torch.bfloat16, torch.float32, torch.float64]


def test_to_the_current_dtype_computes_nothing(host_computations):
    module = PositionalEncoding(8, max_len=10).float().to("cpu")
    assert host_computations == [(torch.float32, "cpu")]
    assert list(module._tables) == [(torch.float32, torch.device("cpu"))]


def test_cache_keeps_only_the_most_recent_tables(host_computations):
    module = PositionalEncoding(8, max_len=10)
    dtypes = [torch.float16, torch.bfloat16, torch.float64, torch.float32]
    for dtype in dtypes:
        out = module(torch.zeros(1, 10, 8, dtype=dtype))
        assert_nearest_torch(out[0], torch.from_numpy(posenc.positional_encoding(10, 8)))
    assert len(module._tables) == posenc.pytorch.CACHE_SIZE == 3
    assert [dtype for dtype, _ in module._tables] == dtypes[1:]  # float32 was evicted, then reused
    assert [dtype for dtype, _ in host_computations] == [torch.float32] + dtypes


@pytest.mark.parametrize("move, dtype", [
    (lambda m: m.half(), torch.float16), (lambda m: m.double(), torch.float64),
    (lambda m: m.to(torch.bfloat16), torch.bfloat16), (lambda m: m.float(), torch.float32),
    (lambda m: torch.nn.Sequential(m).to("cpu", torch.float64)[0], torch.float64),
])
def test_to_prepares_the_table_it_targets(host_computations, move, dtype):
    module = PositionalEncoding(8, max_len=10)
    moved = move(module)
    assert list(module._tables) == [(dtype, torch.device("cpu"))]  # the others are freed
    calls = len(host_computations)
    out = moved(torch.zeros(1, 10, 8, dtype=dtype))
    assert len(host_computations) == calls  # no host computation in forward
    assert_nearest_torch(out[0], torch.from_numpy(posenc.positional_encoding(10, 8)))


def test_input_on_another_device(host_computations):
    # The meta device has shapes but no data: it shows the table follows the module and
    # the input to their device, prepared by .to() and not in forward.
    module = PositionalEncoding(8, max_len=10).to("meta")
    assert host_computations[-1] == (torch.float32, "meta")
    calls = len(host_computations)
    out = module(torch.zeros(2, 5, 8, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 5, 8)
    assert len(host_computations) == calls
    out = module(torch.zeros(2, 5, 8, device="meta"), offset=torch.tensor(3, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 5, 8)


@pytest.mark.parametrize("seq_len, offset, grown", [
    (25, 0, 25), (1, 15, 20), (4, 7, 20), (3, 7, 10), (1, 10, 20),
    (11, 10, 21), (9, 11, 20),  # the edges of the rule: start at max_len, end at twice it
    (2, 11, 20), (3, 25, 10), (3, 100, 10), (2, 2**40, 10),  # far past it: computed alone
])
def test_grows_past_max_len(seq_len, offset, grown):
    module = PositionalEncoding(8, max_len=10)
    module(torch.zeros(1, 4, 8, dtype=torch.float64))
    out = module(torch.zeros(1, seq_len, 8, dtype=torch.float64), offset=offset)
    assert module.max_len == grown
    expected = exact_encoding(range(offset, offset + seq_len), 8)
    np.testing.assert_allclose(out[0].numpy(), expected, rtol=0, atol=max(offset * 2.0**-52, 1e-15))
    assert module.table(torch.float64).shape == (grown, 8)


def test_growth_computes_one_table(host_computations, monkeypatch):
    far_rows = []
    monkeypatch.setattr(posenc.pytorch._tables, "sines_and_cosines_at",
                        lambda *a: far_rows.append(a) or posenc.encoding.sines_and_cosines_at(*a))
    module = PositionalEncoding(8, max_len=10)
    out = module(torch.zeros(1, 15, 8))
    module(torch.zeros(1, 15, 8))
    assert host_computations == [(torch.float32, "cpu")] * 2 and far_rows == []
    np.testing.assert_allclose(out[0].numpy(), exact_encoding(range(15), 8), rtol=0, atol=6e-8)


def test_growth_and_far_rows_on_the_module_device(host_computations):
    module = PositionalEncoding(8, max_len=10).to("meta")
    for kwargs in ({}, {"offset": 1000}, {"positions": torch.arange(30, device="meta")}):
        out = module(torch.zeros(1, 30, 8, device="meta"), **kwargs)
        assert out.device.type == "meta" and out.shape == (1, 30, 8)
    assert all(device == "meta" for _, device in host_computations[1:])


def test_failed_growth_leaves_the_module_as_it_was(monkeypatch):
    module = PositionalEncoding(8, max_len=10)
    before = module.table()

    def out_of_memory(*args, **kwargs):
        raise MemoryError("simulated")
    monkeypatch.setattr(posenc.pytorch.sinusoidal, "positional_encoding", out_of_memory)
    with pytest.raises(MemoryError):
        module(torch.zeros(1, 30, 8))
    assert module.max_len == 10 and module.table() is before
    monkeypatch.undo()
    out = module(torch.zeros(1, 5, 8), offset=2)
    np.testing.assert_allclose(out[0].numpy(), exact_encoding(range(2, 7), 8), rtol=0, atol=6e-8)


def test_huge_offset_allocates_only_its_rows():
    module = PositionalEncoding(8, max_len=10)
    out = module(torch.zeros(1, 3, 8, dtype=torch.float64), offset=2**52)
    assert module.max_len == 10 and list(module._tables)[0][0] == torch.float32
    expected = posenc.encoding.encoding_at(np.arange(2**52, 2**52 + 3), 8, 10000.0)
    np.testing.assert_array_equal(out[0].numpy(), expected)


def test_tensor_offset_equals_int_offset():
    module = PositionalEncoding(6, max_len=10)
    x = torch.randn(2, 4, 6, generator=torch.Generator().manual_seed(4))
    for offset in (0, 3, 8, 50, 2**40):  # in, across and far past the table
        for tensor in (torch.tensor(offset), torch.tensor(offset, dtype=torch.int64)[None][0]):
            torch.testing.assert_close(module(x, tensor), module(x, offset), rtol=0, atol=0)


@pytest.mark.parametrize("top, grown", [(15, 16), (20, 32), (40, 16), (2**40, 16)])
def test_positions_past_the_table(top, grown):
    """The table grows to twice its length, or by no more rows than positions were asked
    for; other rows are computed on their own (40: 25 new rows for 4 positions)."""
    module = PositionalEncoding(8, max_len=16)
    positions = torch.tensor([[2, top], [0, 1]]) if top < 2**40 else torch.tensor([[2**40 - 1, top]])
    out = module(torch.zeros(positions.shape + (8,), dtype=torch.float64), positions=positions)
    assert module.max_len == grown
    expected = exact_encoding(positions.ravel().tolist(), 8).reshape(out.shape)
    np.testing.assert_allclose(out.numpy(), expected, rtol=0, atol=max(top * 2.0**-52, 1e-15))


def test_near_and_far_positions_together():
    """0 and 2**40 in one call: rows computed for the positions asked for, not a table of
    2**40 rows (the issue's MemoryError of 8 TiB)."""
    module = PositionalEncoding(8, max_len=16)
    positions = torch.tensor([[0, 2**40, 3], [2**40 + 5, 1, 0]])
    out = module(torch.zeros(2, 3, 8, dtype=torch.float64), positions=positions)
    assert module.max_len == 16
    expected = exact_encoding(positions.ravel().tolist(), 8).reshape(out.shape)
    np.testing.assert_allclose(out.numpy(), expected, rtol=0, atol=2.0**40 * 2.0**-52)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"positions": torch.zeros(5)}, TypeError,
     "positions must be an integer torch.Tensor of shape (..., seq_len), got a tensor of dtype torch.float32"),
    ({"positions": [0, 1, 2, 3, 4]}, TypeError,
     "positions must be an integer torch.Tensor of shape (..., seq_len), got list"),
    ({"positions": torch.arange(4)}, ValueError, "positions must have shape (..., seq_len) with "
     "seq_len=5, broadcastable to the input's (2, 5), got shape (4,)"),
    ({"positions": torch.zeros(3, 5, dtype=torch.int64)}, ValueError, "positions must have shape "
     "(..., seq_len) with seq_len=5, broadcastable to the input's (2, 5), got shape (3, 5)"),
    ({"positions": torch.tensor([0, 1, -2, 3, 4])}, ValueError, "positions must be >= 0, got a minimum of -2"),
    ({"positions": torch.tensor([0, 1, 2, 3, 2**53])}, ValueError, "positions must be < 2**53 = "
     "9007199254740992 (float64 holds every position below it exactly), got a maximum of 9007199254740992"),
    ({"positions": torch.arange(5), "offset": 2}, ValueError, "pass either offset or positions, not both"),
    ({"positions": torch.arange(5), "offset": torch.tensor(0)}, ValueError,
     "pass either offset or positions, not both"),
    ({"offset": torch.tensor(1.0)}, TypeError,
     "offset must be an integer or an integer tensor, got a tensor of dtype torch.float32"),
    ({"offset": torch.tensor([1])}, ValueError, "offset must be a scalar (0-dimensional) tensor, got shape (1,)"),
    ({"offset": torch.tensor(-1)}, ValueError, "offset must be an integer >= 0, got -1"),
    ({"offset": 2**53 - 4}, ValueError, "offset + seq_len must be <= 2**53 = 9007199254740992 (float64 "
     "holds every position up to it exactly), got offset=9007199254740988, seq_len=5"),
])
def test_offset_and_positions_errors(kwargs, error, message):
    module = PositionalEncoding(8, max_len=10)
    with pytest.raises(error, match=exactly(message)):
        module(torch.zeros(2, 5, 8), **kwargs)
    assert module.max_len == 10


def test_last_exact_positions_are_accepted():
    out = PositionalEncoding(2, max_len=4)(torch.zeros(1, 5, 2, dtype=torch.float64), offset=2**53 - 5)
    assert out.shape == (1, 5, 2) and torch.all(out.abs() <= 1)


@pytest.mark.parametrize("make", [lambda: PositionalEncoding(8, max_len=10),
                                  lambda: LearnedPositionalEmbedding(8, max_len=10)],
                         ids=["PositionalEncoding", "LearnedPositionalEmbedding"])
@pytest.mark.parametrize("x, offset, error, message", [
    (torch.zeros(2, 5, 8, dtype=torch.int64), 0, TypeError, "x must be a floating-point "
     "torch.Tensor of shape (..., seq_len, d_model), got Tensor of dtype torch.int64"),
    (np.zeros((2, 5, 8)), 0, TypeError,
     "x must be a floating-point torch.Tensor of shape (..., seq_len, d_model), got ndarray"),
    (torch.zeros(8), 0, ValueError,
     "x must have shape (..., seq_len, d_model) with at least 2 dimensions, got shape (8,)"),
    (torch.zeros(1, 5, 8), -1, ValueError, "offset must be an integer >= 0, got -1"),
    (torch.zeros(1, 5, 8), 1.0, TypeError, "offset must be an integer, got float 1.0"),
])
def test_forward_errors(make, x, offset, error, message):
    """The input and offset checks that PositionalEncoding and LearnedPositionalEmbedding share."""
    with pytest.raises(error, match=exactly(message)):
        make()(x, offset=offset)


# Eager use never imports Dynamo (about a second of CPU); a trace of modules built before Dynamo
# was loaded still gives one full graph for every length, equal to eager. In a new process:
# this one has imported Dynamo long ago.
LAZY_DYNAMO = """
import sys
import torch
from posenc.pytorch import ALiBi, PositionalEncoding, RotaryEmbedding
modules = [PositionalEncoding(8, max_len=16), RotaryEmbedding(8, max_len=16),
           RotaryEmbedding(8, max_len=16, scaling={"rope_type": "dynamic", "factor": 2.0,
                                                   "original_max_position_embeddings": 8})]
x = torch.randn(2, 3, 8)
eager = [modules[0](x), *modules[1](x, x), *modules[2](x, x), ALiBi(2, max_len=16).bias(3)]
assert "torch._dynamo" not in sys.modules, "eager use imported Dynamo"
import torch._dynamo.testing
counter = torch._dynamo.testing.CompileCounter()
def run(x):
    return [modules[0](x), *modules[1](x, x), *modules[2](x, x)]
compiled = torch.compile(run, backend=counter, fullgraph=True, dynamic=True)
for n in (3, 5, 7, 30):  # 30: past max_len
    x = torch.randn(2, n, 8)
    assert all(torch.equal(a, b) for a, b in zip(compiled(x), run(x)))
assert counter.frame_count == 1, counter.frame_count  # one graph for every length
"""


def test_eager_use_does_not_import_dynamo_and_a_trace_marks_the_tables_static():
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", LAZY_DYNAMO], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
