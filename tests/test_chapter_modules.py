"""The minimal module and layer that the chapters write in front of the reader equal posenc's.

book/pytorch_module.ipynb writes `sinusoid_table` and `MinimalPositionalEncoding` (an
`nn.Module` with a buffer); book/keras_layer.ipynb writes `MinimalPositionalEncoding` (a Keras 3
layer). Each test runs those cells, read from the committed notebook by their cell ids, and
compares what they define with the package, on more shapes than the chapter shows.
"""

import contextlib
import inspect
import io
from pathlib import Path

import nbformat
import numpy as np
import pytest

import posenc

BOOK = Path(__file__).resolve().parents[1] / "book"

# (notebook, the ids of the cells that define the chapter's module, in order)
PYTORCH_CELLS = ("pytorch_module.ipynb", ["table-code", "minimal-module"])
KERAS_CELLS = ("keras_layer.ipynb", ["minimal-layer"])


def chapter_namespace(notebook: str, cell_ids: list, preamble: str) -> dict:
    """The names the chapter's cells `cell_ids` define, run after `preamble` (their imports)."""
    cells = {cell.get("id"): cell.source for cell in nbformat.read(BOOK / notebook, as_version=4).cells}
    missing = [cell_id for cell_id in cell_ids if cell_id not in cells]
    assert not missing, f"{notebook} has no cell with id {missing}: the test reads the chapter's module from them"
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):  # the cells print their own checks
        exec(preamble, namespace)
        for cell_id in cell_ids:
            exec(cells[cell_id], namespace)
    return namespace


@pytest.fixture(scope="module")
def torch_chapter():
    pytest.importorskip("torch")
    return chapter_namespace(*PYTORCH_CELLS, "import numpy as np\nimport torch\nfrom torch import nn\nimport posenc\n")


@pytest.fixture(scope="module")
def keras_chapter():
    pytest.importorskip("keras")
    return chapter_namespace(*KERAS_CELLS, "import keras\nfrom keras import layers, ops\nimport posenc\n")


@pytest.mark.parametrize("max_len, d_model", [(1, 2), (50, 8), (128, 64), (200, 512)])
def test_the_chapters_torch_table_is_the_encoding(torch_chapter, max_len, d_model):
    table = torch_chapter["sinusoid_table"](max_len, d_model)
    assert tuple(table.shape) == (max_len, d_model)
    # float32 angles: the error grows with the position, about 1e-7 per radian of angle
    np.testing.assert_allclose(table.double().numpy(), posenc.positional_encoding(max_len, d_model),
                               rtol=0, atol=2e-7 * max_len + 1e-7)


@pytest.mark.parametrize("seq_len, d_model, max_len", [(1, 2, 1), (10, 8, 50), (64, 64, 64), (30, 16, 5000)])
def test_the_chapters_torch_module_equals_posenc(torch_chapter, seq_len, d_model, max_len):
    import torch

    import posenc.pytorch

    minimal = torch_chapter["MinimalPositionalEncoding"](d_model, max_len=max_len).eval()
    packaged = posenc.pytorch.PositionalEncoding(d_model, max_len=max_len).eval()
    x = torch.randn(3, seq_len, d_model, generator=torch.Generator().manual_seed(seq_len))
    torch.testing.assert_close(minimal(x), packaged(x), rtol=0, atol=2e-7 * seq_len + 1e-7)
    assert list(minimal.state_dict()) == ["pe"], "the chapter's module keeps its table in a buffer"


def test_the_chapters_torch_module_applies_dropout_in_training_only(torch_chapter):
    import torch

    module = torch_chapter["MinimalPositionalEncoding"](8, max_len=20, dropout=0.5)
    x = torch.ones(4, 20, 8)
    torch.manual_seed(0)
    assert (module.train()(x) == 0).any()
    torch.testing.assert_close(module.eval()(x), x + module.pe, rtol=0, atol=0)


def test_the_chapters_keras_layer_equals_posenc(keras_chapter):
    import keras

    import posenc.tensorflow

    for seq_len, d_model, max_len in [(1, 2, 1), (10, 16, 50), (7, 5, 7), (64, 32, 5000)]:
        minimal = keras_chapter["MinimalPositionalEncoding"](max_len=max_len)
        packaged = posenc.tensorflow.PositionalEncoding(max_len=max_len)
        x = keras.random.normal((2, seq_len, d_model), seed=seq_len)
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(minimal(x)),
                                      keras.ops.convert_to_numpy(packaged(x)))
        assert minimal.weights == [], "the chapter's layer has no weights"


def test_the_chapters_keras_layer_round_trips_its_configuration(keras_chapter):
    cls = keras_chapter["MinimalPositionalEncoding"]
    layer = cls(max_len=64, dropout=0.1, name="pe")
    rebuilt = cls.from_config(layer.get_config())
    assert rebuilt.get_config() == layer.get_config()
    assert (rebuilt.max_len, rebuilt.dropout) == (64, 0.1)


@pytest.mark.parametrize("chapter", ["torch_chapter", "keras_chapter"])
def test_the_chapters_take_max_len_by_keyword(chapter, request):
    parameters = inspect.signature(request.getfixturevalue(chapter)["MinimalPositionalEncoding"]).parameters
    assert parameters["max_len"].kind is inspect.Parameter.KEYWORD_ONLY
