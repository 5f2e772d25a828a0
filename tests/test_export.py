"""Shipping the PyTorch modules: torch.compile, torch.export, ONNX (run by onnxruntime), jit.trace.

Every module is built fresh for every path (no eager call first), traced or exported for one
sequence length, then run at other lengths up to ``max_len`` and compared with eager. These are
the rows of issue 18 that concern PyTorch; the tests of the modules' own contracts (offsets,
positions, layouts, checkpoints) are in test_pytorch.py and test_pytorch_relative.py.
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
LENGTHS = (3, 7, MAX_LEN)  # traced at 5; 16 = max_len, the longest a graph accepts
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

    def __init__(self, make, inputs, dims, offset=True):
        self.make, self.inputs, self.dims, self.offset = make, inputs, dims, offset

    def dynamic_shapes(self):
        q_len = torch.export.Dim("q_len", max=MAX_LEN)
        k_len = torch.export.Dim("k_len", max=MAX_LEN)
        return tuple({axis: (q_len, k_len)[which] for axis, which in spec} for spec in self.dims)


CASES = {
    "PositionalEncoding": Case(lambda: PositionalEncoding(8, max_len=MAX_LEN),
                               lambda n: (randn(2, n, 8, seed=n),), [[(1, 0)]]),
    "PositionalEncoding(batch_first=False)": Case(
        lambda: PositionalEncoding(8, max_len=MAX_LEN, batch_first=False),
        lambda n: (randn(n, 2, 8, seed=n),), [[(0, 0)]]),
    "RotaryEmbedding": Case(lambda: RotaryEmbedding(8, max_len=MAX_LEN, layout="half"),
                            lambda n: (randn(2, 3, n, 8, seed=n), randn(2, 3, n, 8, seed=n + 1)),
                            [[(2, 0)], [(2, 1)]]),
    "ALiBi": Case(lambda: ALiBi(4, max_len=MAX_LEN), lambda n: (randn(2, 4, n, n, seed=n),),
                  [[(2, 0), (3, 1)]], offset=False),
    "LearnedPositionalEmbedding": Case(lambda: LearnedPositionalEmbedding(MAX_LEN, 8),
                                       lambda n: (randn(2, n, 8, seed=n),), [[(1, 0)]]),
}


def fresh(name):
    torch.manual_seed(0)  # the learned table: the same weights in every fresh module
    return CASES[name].make().eval()


def largest_difference(run, name):
    """Largest |graph - eager| over LENGTHS, eager on another fresh module."""
    eager = fresh(name)
    worst = 0.0
    for n in LENGTHS:
        inputs = CASES[name].inputs(n)
        got, expected = run(inputs), eager(*inputs)
        got = [got] if isinstance(got, torch.Tensor) else list(got)
        expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
        assert [g.shape for g in got] == [e.shape for e in expected]
        worst = max(worst, *((g - e).abs().max().item() for g, e in zip(got, expected)))
    return worst


@pytest.mark.parametrize("name", CASES)
def test_torch_compile_dynamic(name):
    """aot_eager: the graph capture of inductor without its C++ compiler, as in the book."""
    compiled = torch.compile(fresh(name), dynamic=True, backend="aot_eager")
    assert largest_difference(lambda inputs: compiled(*inputs), name) == 0


@pytest.mark.parametrize("name", CASES)
def test_torch_export_dynamic_length(name):
    case = CASES[name]
    exported = torch.export.export(fresh(name), case.inputs(5), dynamic_shapes=case.dynamic_shapes())
    module = exported.module()
    assert largest_difference(lambda inputs: module(*inputs), name) == 0


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
def test_a_refused_trace_leaves_the_module_as_it_was(name):
    """Tracing a window past max_len is a clear error, and the module (tables included) is
    unchanged: eager calls still work and still grow the table."""
    module = fresh(name)
    before = state(module)
    too_long = CASES[name].inputs(MAX_LEN + 4)
    with pytest.raises(ValueError, match="run[s]? past max_len=16: inside torch.compile"):
        torch.jit.trace(module, too_long)
    with pytest.raises(Exception, match="max_len|q_len|k_len"):
        torch.export.export(module, too_long)
    assert state(module) == before
    eager = module(*too_long)  # eager grows the table
    assert module.max_len >= MAX_LEN + 4
    assert isinstance(eager, (torch.Tensor, tuple))


def test_export_past_max_len_names_the_layout():
    module = fresh("PositionalEncoding")
    with pytest.raises(ValueError, match=r"build it with batch_first=False$"):
        torch.export.export(module, (torch.zeros(2, MAX_LEN + 1, 8),))


def test_numpy_alibi_bias_refuses_a_traced_length():
    class Model(torch.nn.Module):
        def forward(self, scores):
            return scores + alibi_bias(scores.shape[-1], 4)

    message = ("seq_len is a traced size (SymInt): alibi_bias computes on the host with NumPy "
               "and cannot follow a length that is only known when the graph runs; use the "
               "module posenc.pytorch.ALiBi(n_heads, max_len) in forward")
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
