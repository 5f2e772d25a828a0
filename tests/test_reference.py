"""posenc.reference: the correct reference forms agree with the package, and differ from it
where their docstrings say. (That importing it imports NumPy only is checked in test_init.py.)"""

import inspect

import numpy as np
import pytest

import posenc
from posenc import reference


def test_unknown_attribute_raises():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        reference.Nope  # noqa: B018


def test_dir_lists_the_lazy_class():
    assert {"textbook_encoding", "BufferedPositionalEncoding"} <= set(dir(reference))
    assert set(reference.__all__) == {"textbook_encoding", "mae_2d_encoding", "BufferedPositionalEncoding"}


# --- textbook form ---------------------------------------------------------------------------

@pytest.mark.parametrize("seq_len, d_model, offset", [(70, 9, 0), (300, 64, 0), (50, 7, 1000)])
def test_textbook_form_same_values(seq_len, d_model, offset):
    np.testing.assert_allclose(reference.textbook_encoding(seq_len, d_model, offset=offset),
                               posenc.positional_encoding(seq_len, d_model, offset=offset),
                               rtol=0, atol=1e-11)


def test_textbook_form_rounds_once_to_dtype():
    table = reference.textbook_encoding(100, 16, offset=99_000, dtype=np.float32)
    assert table.dtype == np.float32
    exact = posenc.positional_encoding(100, 16, offset=99_000)
    assert np.abs(table - exact).max() <= 2.0**-25 + 1e-10


# --- buffered module ---------------------------------------------------------------------------

def test_buffered_module_follows_half_and_loses_precision():
    torch = pytest.importorskip("torch")
    exact = posenc.positional_encoding(50, 8)
    module = reference.BufferedPositionalEncoding(d_model=8, max_len=50)
    assert [name for name, _ in module.named_buffers()] == ["pe"] and module.state_dict() == {}
    before = np.abs(module(torch.zeros(1, 50, 8))[0].double().numpy() - exact).max()
    assert before <= 2.0**-25
    module.half().float()
    after = np.abs(module(torch.zeros(1, 50, 8))[0].double().numpy() - exact).max()
    assert after > 1e-4  # float16 rounding kept for good
    float64_error = np.abs(module(torch.zeros(1, 50, 8, dtype=torch.float64))[0].numpy() - exact)
    assert float64_error.max() > 1e-8  # a float64 input gets the buffer's precision


def test_buffered_module_takes_max_len_by_keyword_as_the_package():
    pytest.importorskip("torch")
    parameters = inspect.signature(reference.BufferedPositionalEncoding).parameters
    assert list(parameters) == ["d_model", "max_len"]
    assert parameters["max_len"].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError):
        reference.BufferedPositionalEncoding(8, 50)
