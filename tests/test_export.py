"""Shipping the PyTorch modules: torch.compile, torch.export, ONNX (run by onnxruntime), jit.trace.

Every module is built fresh for every path (no eager call first), traced or exported for one
sequence length, then run at other lengths, past ``max_len`` included (rows computed in the
graph), and compared with eager. These are the rows of issues 18 and 28 that concern PyTorch;
the tests of the modules' own contracts (offsets, positions, layouts, checkpoints) are in
test_pytorch_<module>.py, one file per module of posenc.pytorch.

Inductor compiles C++ (slow on two cores): one compilation serves every module
(``test_inductor_fullgraph_dynamic``); graph breaks are counted with dynamo's own counters
under the cheap ``eager`` back end, which captures the same graphs.
"""

import io
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")  # the dynamo ONNX exporter needs it

import posenc  # noqa: E402
from posenc.pytorch import (  # noqa: E402
    ALiBi,
    LearnedPositionalEmbedding,
    PositionalEncoding,
    RotaryEmbedding,
    alibi_bias,
)

MAX_LEN = 16
LENGTHS = (3, 7, MAX_LEN, 40)  # traced at 5; 40 runs past max_len: rows computed in the graph
#: A far offset: its rows are computed in the graph from its base-256 digits, six of them nonzero.
FAR = 2**40 + 12345
#: onnxruntime against eager, float32 (the issue's bound).
ONNX_TOLERANCE = 1e-5

# Warnings of the export paths themselves, named one by one (pyproject.toml turns the rest
# into errors).
TRACE_DEPRECATED = [
    "ignore:`torch.jit.trace` is deprecated:DeprecationWarning",
    "ignore:`torch.jit.trace_method` is deprecated:DeprecationWarning",
]
ONNX_WARNINGS = [
    # torch.onnx (dynamo) on torch 2.13: an internal use of a deprecated pytree API.
    r"ignore:`isinstance\(treespec, LeafSpec\)` is deprecated:FutureWarning",
    # The legacy exporter is TorchScript-based and deprecated in favour of dynamo=True; it
    # calls its own deprecated logging helper.
    "ignore:You are using the legacy TorchScript-based ONNX export:DeprecationWarning",
    "ignore:The feature will be removed. Please remove usage of this function:DeprecationWarning",
    *TRACE_DEPRECATED,
]


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def exactly(message):
    return "^" + re.escape(message) + "$"


class Case:
    """A module factory, its inputs for a sequence length, and the dynamic dimensions."""

    def __init__(self, make, inputs, dims, offset=True, lengths=LENGTHS, longest=None):
        self.make, self.inputs, self.dims, self.offset = make, inputs, dims, offset
        self.lengths, self.longest = lengths, longest  # longest: a length the module refuses past

    def dynamic_shapes(self):
        q_len = torch.export.Dim("q_len", max=self.longest)
        k_len = torch.export.Dim("k_len", max=self.longest)
        return tuple({axis: (q_len, k_len)[which] for axis, which in spec} for spec in self.dims)


#: Scalings of a model trained on 8 positions, run past MAX_LEN (posenc.rope_frequencies).
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}
DYNAMIC = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 8}

CASES = {
    "PositionalEncoding": Case(lambda: PositionalEncoding(8, max_len=MAX_LEN),
                               lambda n: (randn(2, n, 8, seed=n),), [[(1, 0)]]),
    "PositionalEncoding(batch_first=False)": Case(
        lambda: PositionalEncoding(8, max_len=MAX_LEN, batch_first=False),
        lambda n: (randn(n, 2, 8, seed=n),), [[(0, 0)]]),
    "RotaryEmbedding": Case(lambda: RotaryEmbedding(8, max_len=MAX_LEN, layout="half"),
                            lambda n: (randn(2, 2, n, 8, seed=n), randn(2, 2, n, 8, seed=n + 1)),
                            [[(2, 0)], [(2, 1)]]),
    # Dynamic NTK: frequencies computed in every call from the sequence length (float64 in the
    # graph), a path of its own. The fixed scalings (YaRN here) only change the table's numbers
    # and multiply by a constant: they run in the inductor block and the far-offset export only.
    "RotaryEmbedding(dynamic)": Case(
        lambda: RotaryEmbedding(8, max_len=MAX_LEN, layout="half", scaling=DYNAMIC),
        lambda n: (randn(2, 2, n, 8, seed=n), randn(2, 2, n, 8, seed=n + 1)), [[(2, 0)], [(2, 1)]]),
    "ALiBi": Case(lambda: ALiBi(4, max_len=MAX_LEN), lambda n: (randn(2, 4, n, n, seed=n),),
                  [[(2, 0), (3, 1)]], offset=False),
    "LearnedPositionalEmbedding": Case(lambda: LearnedPositionalEmbedding(8, max_len=MAX_LEN),
                                       lambda n: (randn(2, n, 8, seed=n),), [[(1, 0)]],
                                       lengths=(3, 7, MAX_LEN), longest=MAX_LEN),  # no row past it
}


#: CASES and the cases of some tests only: YaRN's table and attention factor (see CASES).
ALL_CASES = {**CASES, "RotaryEmbedding(yarn)": Case(
    lambda: RotaryEmbedding(8, max_len=MAX_LEN, layout="half", scaling=YARN),
    CASES["RotaryEmbedding"].inputs, CASES["RotaryEmbedding"].dims)}


def fresh(name):
    torch.manual_seed(0)  # the learned table: the same weights in every fresh module
    return ALL_CASES[name].make().eval()


def largest_difference(run, name):
    """Largest |graph - eager| over LENGTHS, eager on another fresh module."""
    eager = fresh(name)
    worst = 0.0
    for n in CASES[name].lengths:
        inputs = CASES[name].inputs(n)
        got, expected = run(inputs), eager(*inputs)
        got = [got] if isinstance(got, torch.Tensor) else list(got)
        expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
        assert [g.shape for g in got] == [e.shape for e in expected]
        worst = max(worst, *((g - e).abs().max().item() for g, e in zip(got, expected)))
    return worst


def graph_breaks(module, calls, backend="eager"):
    """Graph breaks and compiled frames of ``torch.compile(module, dynamic=True)`` over calls."""
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    counter = CompileCounterWithBackend(backend)
    compiled = torch.compile(module, dynamic=True, backend=counter)
    outputs = [compiled(*args) for args in calls]
    return sum(counters["graph_break"].values()), counter.frame_count, outputs


@pytest.mark.parametrize("name", CASES)
def test_torch_compile_has_no_graph_break(name):
    """Dynamic lengths, an int and a tensor offset, past max_len: one graph, no break (before
    issue 28: 1 to 5 breaks per module, from the message closures of torch._check)."""
    case = CASES[name]
    calls = [case.inputs(n) for n in case.lengths]
    if case.offset:
        calls += [case.inputs(3) + (torch.tensor(2),), case.inputs(4) + (torch.tensor(5),)]
    breaks, frames, outputs = graph_breaks(fresh(name), calls)
    assert breaks == 0
    assert frames == (2 if case.offset else 1)  # without and with the offset argument
    eager = fresh(name)
    for args, got in zip(calls, outputs):
        torch.testing.assert_close(got, eager(*args), rtol=0, atol=0)


class Block(torch.nn.Module):
    """Every module in one forward, so that one inductor compilation tests them all."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.pe = PositionalEncoding(8, max_len=MAX_LEN)
        self.pe_seq_first = PositionalEncoding(8, max_len=MAX_LEN, batch_first=False)
        self.learned = LearnedPositionalEmbedding(8, max_len=64)
        self.rotary = RotaryEmbedding(8, max_len=MAX_LEN, layout="half")
        self.yarn = RotaryEmbedding(8, max_len=MAX_LEN, scaling=YARN)
        self.dynamic = RotaryEmbedding(8, max_len=MAX_LEN, scaling=DYNAMIC)
        self.alibi = ALiBi(2, max_len=MAX_LEN)

    def forward(self, x, offset):
        x = self.pe(x, offset) + self.learned(x) + self.pe_seq_first(x.transpose(0, 1)).transpose(0, 1)
        q = x.view(x.shape[0], x.shape[1], 2, 4).transpose(1, 2)  # (batch, heads, seq_len, 4)
        q, k = self.rotary(q.repeat(1, 1, 1, 2), q.repeat(1, 1, 1, 2), offset)
        q, k = self.yarn(q, k, offset)
        q, k = self.dynamic(q, k, offset)
        return self.alibi(q @ k.transpose(-2, -1))


def test_inductor_fullgraph_dynamic():
    """The default back end, fullgraph=True, dynamic lengths, any length and a far offset."""
    torch._dynamo.reset()
    block = Block().eval()
    compiled = torch.compile(block, fullgraph=True, dynamic=True)
    for n, offset in ((5, 0), (9, 3), (40, 0), (6, FAR)):
        x = randn(2, n, 8, seed=n)
        got, expected = compiled(x, torch.tensor(offset)), block(x, offset)
        bound = 2.0**-20 + offset * 2.0**-52  # rows computed in the graph (posenc._digits)
        torch.testing.assert_close(got, expected, rtol=0, atol=64 * bound)


@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "strict"])
@pytest.mark.parametrize("name", CASES)
def test_torch_export_dynamic_length(name, strict):
    case = CASES[name]
    exported = torch.export.export(fresh(name), case.inputs(5), dynamic_shapes=case.dynamic_shapes(),
                                   strict=strict)
    module = exported.module()
    assert largest_difference(lambda inputs: module(*inputs), name) == 0


@pytest.mark.parametrize("name", ["PositionalEncoding", "RotaryEmbedding", "RotaryEmbedding(yarn)",
                                  "RotaryEmbedding(dynamic)"])
def test_torch_export_far_tensor_offset(name):
    """A tensor offset of 2**40 + 12345: every digit table used, within the documented bound."""
    case = ALL_CASES[name]
    inputs = case.inputs(5) + (torch.tensor(0),)
    exported = torch.export.export(fresh(name), inputs, strict=True,
                                   dynamic_shapes=case.dynamic_shapes() + (None,)).module()
    x = case.inputs(7)
    eager = fresh(name)
    for got, expected in zip(*(out if isinstance(out, tuple) else (out,) for out in (
            exported(*x, torch.tensor(FAR)), eager(*x, FAR)))):
        bound = 2.0**-20 + FAR * 2.0**-52
        torch.testing.assert_close(got, expected, rtol=0, atol=8 * bound)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.filterwarnings(*TRACE_DEPRECATED)
def test_jit_trace_keeps_the_length_dynamic(name):
    traced = torch.jit.trace(fresh(name), CASES[name].inputs(5))
    assert largest_difference(lambda inputs: traced(*inputs), name) == 0


def onnx_runner(model_bytes, extra=()):
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def run(inputs):
        feed = dict(zip(names, [t.numpy() for t in inputs] + list(extra)))
        return [torch.from_numpy(out) for out in session.run(None, feed)]
    return run


@pytest.mark.filterwarnings(*TRACE_DEPRECATED)
def test_rotary_q_and_k_of_other_lengths_in_graphs():
    """forward shares one set of rows between q and k only where their shapes are provably
    equal: compiled (dynamic shapes) and traced with equal shapes, then given one query
    against many keys (a KV cache's decoding step) and the reverse, each is rotated for its
    own length, as eager rotate does."""
    rotary = RotaryEmbedding(8, max_len=16)
    compiled = torch.compile(rotary, dynamic=True, fullgraph=True, backend="eager")
    traced = torch.jit.trace(rotary, (randn(1, 2, 6, 8), randn(1, 2, 6, 8, seed=1)))
    for q_len, k_len in ((6, 6), (1, 20), (20, 1), (3, 9)):
        q, k = randn(1, 2, q_len, 8, seed=q_len), randn(1, 2, k_len, 8, seed=100 + k_len)
        expected = (rotary.rotate(q), rotary.rotate(k))
        for run in (compiled, traced):
            got = run(q, k)
            assert [g.shape for g in got] == [q.shape, k.shape]
            for g, e in zip(got, expected):
                torch.testing.assert_close(g, e, rtol=0, atol=2e-6)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.filterwarnings(*ONNX_WARNINGS)
def test_onnx_dynamo_exporter(name):
    case = CASES[name]
    program = torch.onnx.export(fresh(name), case.inputs(5), dynamo=True, verbose=False,
                                dynamic_shapes=case.dynamic_shapes())
    run = onnx_runner(program.model_proto.SerializeToString())
    assert largest_difference(run, name) <= ONNX_TOLERANCE


@pytest.mark.parametrize("name", CASES)
@pytest.mark.filterwarnings(*ONNX_WARNINGS)
def test_onnx_legacy_exporter(name):
    """The TorchScript-based exporter passes every argument of forward, defaults included:
    ``offset`` becomes an input of the ONNX graph, fed here as 0."""
    case = CASES[name]
    inputs = case.inputs(5)
    names = [f"input{i}" for i in range(len(inputs))]
    axes = {}
    for input_name, spec in zip(names, case.dims):
        axes[input_name] = {axis: ("q_len", "k_len")[which] for axis, which in spec}
    extra = ()
    if case.offset:
        inputs, names, extra = inputs + (torch.tensor(0),), names + ["offset"], (np.array(0),)
    buffer = io.BytesIO()
    torch.onnx.export(fresh(name), inputs, buffer, dynamo=False, input_names=names,
                      dynamic_axes=axes)
    assert largest_difference(onnx_runner(buffer.getvalue(), extra), name) <= ONNX_TOLERANCE


# --- Errors and state ----------------------------------------------------------------------------


def state(module):
    return module.max_len, [(key, id(table)) for key, table in module._tables.items()]


@pytest.mark.parametrize("name", ["PositionalEncoding", "RotaryEmbedding", "ALiBi"])
@pytest.mark.filterwarnings(*TRACE_DEPRECATED)
def test_a_graph_past_max_len_leaves_the_module_as_it_was(name):
    """Tracing and exporting at a length past max_len work (rows computed in the graph) and
    change nothing in the module: no table grows while tracing."""
    module = fresh(name)
    before = state(module)
    too_long = CASES[name].inputs(MAX_LEN + 4)
    traced = torch.jit.trace(module, too_long, check_trace=False)  # the check runs eagerly
    exported = torch.export.export(module, too_long, strict=True).module()
    assert state(module) == before
    for run in (traced, exported):
        got = run(*too_long)
        for g, e in zip(*(out if isinstance(out, tuple) else (out,) for out in (got, fresh(name)(*too_long)))):
            torch.testing.assert_close(g, e, rtol=0, atol=0)


@pytest.mark.filterwarnings(*ONNX_WARNINGS)
def test_learned_embedding_past_max_len_in_onnxruntime():
    """ONNX keeps no check of the declared maximum: the learned table's graph runs up to
    max_len, and past it onnxruntime stops with a broadcasting error of its own (what the ONNX
    appendix says)."""
    case = CASES["LearnedPositionalEmbedding"]
    program = torch.onnx.export(fresh("LearnedPositionalEmbedding"), case.inputs(5), dynamo=True,
                                verbose=False, dynamic_shapes=case.dynamic_shapes())
    run = onnx_runner(program.model_proto.SerializeToString())
    assert run(case.inputs(MAX_LEN))[0].shape == (2, MAX_LEN, 8)
    with pytest.raises(Exception, match=r"(?s)Attempting to broadcast an axis by a dimension "
                                        r"other than 1\. 16 by 17"):
        run(case.inputs(MAX_LEN + 1))


def test_learned_embedding_past_max_len_in_a_graph():
    """The learned table has no row past max_len - 1: an exported graph refuses longer inputs
    (its length is declared with max=max_len), a compiled one names max_len."""
    case = CASES["LearnedPositionalEmbedding"]
    exported = torch.export.export(fresh("LearnedPositionalEmbedding"), case.inputs(5),
                                   dynamic_shapes=case.dynamic_shapes(), strict=True)
    with pytest.raises(Exception, match=r"size\(\)\[1\] <= 16"):
        exported.module()(randn(2, MAX_LEN + 1, 8))
    torch._dynamo.reset()
    compiled = torch.compile(fresh("LearnedPositionalEmbedding"), fullgraph=True, dynamic=True,
                             backend="eager")
    compiled(*case.inputs(5))
    with pytest.raises(Exception, match=r"offset \+ seq_len runs past max_len=16: a learned "
                                        r"positional embedding has rows for positions 0 to 15 only"):
        compiled(randn(2, MAX_LEN + 1, 8))


def test_numpy_alibi_bias_refuses_a_traced_length():
    class Model(torch.nn.Module):
        def forward(self, scores):
            return scores + alibi_bias(scores.shape[-1], 4)

    message = ("seq_len is a traced size (SymInt): alibi_bias computes on the host with NumPy "
               "and cannot follow a length that is only known when the graph runs; use the "
               "module posenc.pytorch.ALiBi(n_heads, max_len=...) in forward")
    k_len = torch.export.Dim("k_len", max=MAX_LEN)
    with pytest.raises(TypeError, match=exactly(message)):
        torch.export.export(Model(), (torch.zeros(1, 4, 5, 5),),
                            dynamic_shapes=({2: k_len, 3: k_len},))


def test_alibi_module_matches_the_numpy_reference_in_a_traced_graph():
    exported = torch.export.export(ALiBi(4, max_len=MAX_LEN), (torch.zeros(1, 4, 5, 5),),
                                   dynamic_shapes=CASES["ALiBi"].dynamic_shapes()).module()
    for n in LENGTHS:
        got = exported(torch.zeros(1, 4, n, n))[0]
        np.testing.assert_array_equal(got.numpy(), posenc.alibi_bias(n, 4).astype(np.float32))
