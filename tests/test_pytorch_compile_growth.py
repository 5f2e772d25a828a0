"""Compiled graphs and eager growth: a module whose table grew in an eager call keeps its
compiled graphs (issue 47: every growth recompiled every graph, and the four call forms below
reached torch's limit of 8 recompilations, FailOnRecompileLimitHit under fullgraph=True)."""

import pytest

torch = pytest.importorskip("torch")

from posenc.pytorch import HFRotaryEmbedding, PositionalEncoding, RotaryEmbedding  # noqa: E402



pytestmark = pytest.mark.usefixtures("one_torch_thread")


FORMS = [dict(fullgraph=True, dynamic=True), dict(fullgraph=True, dynamic=None),
         dict(dynamic=True), dict(dynamic=None)]


def test_eager_growth_does_not_recompile_graphs():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    rotary = RotaryEmbedding(8, max_len=16)
    counters = [CompileCounterWithBackend("eager") for _ in FORMS]
    compiled = [torch.compile(rotary, backend=counter, **form)
                for counter, form in zip(counters, FORMS)]
    frames = []
    for step in range(3):  # three growths, 16 rows -> 128 (two made the old code fail)
        q = torch.randn(1, 2, 8, 8)
        for run in compiled:
            for got, expected in zip(run(q, q, 3), rotary(q, q, 3)):
                assert torch.equal(got, expected)
        frames.append(sum(counter.frame_count for counter in counters))
        long = torch.randn(1, 1, 16 * 2 ** (step + 1), 8)
        rotary(long, long)  # eager: the table grows
    assert rotary.max_len == 16 * 2**3
    # the graphs compiled in the first round serve every later call, growth or not (before
    # the fix: four recompilations per growth, FailOnRecompileLimitHit at the second one)
    assert frames == [4, 4, 4], frames


def test_graph_rows_past_the_graph_table_equal_the_grown_table():
    """After growth, a graph reads its own (shorter) table and computes the rows past it: the
    same values as eager within the documented 2**-20 + pos * 2**-52."""
    torch._dynamo.reset()
    encoding = PositionalEncoding(8, max_len=4)
    compiled = torch.compile(encoding, backend="eager", fullgraph=True, dynamic=True)
    x = torch.zeros(1, 6, 8)
    compiled(x)
    encoding(torch.zeros(1, 40, 8))  # eager growth to 40 rows
    assert encoding.max_len == 40
    torch.testing.assert_close(compiled(x, 20), encoding(x, 20), rtol=0, atol=2**-20)


def test_hf_rotary_embedding_compiles_in_one_graph():
    torch._dynamo.reset()
    module = HFRotaryEmbedding({"head_dim": 8, "max_position_embeddings": 64,
                                "rope_scaling": {"type": "yarn", "factor": 2.0}}, max_len=16)
    compiled = torch.compile(module, backend="eager", fullgraph=True, dynamic=True)
    x = torch.zeros(1, dtype=torch.bfloat16)
    for n in (5, 7, 40):  # 40: past the table, computed in the graph
        positions = torch.arange(n)[None]
        for got, expected in zip(compiled(x, positions), module(x, positions)):
            assert got.dtype == torch.bfloat16
            torch.testing.assert_close(got.float(), expected.float(), rtol=0, atol=2**-8)
