"""posenc.foils: each foil shows the flaw its docstring documents, and agrees with posenc elsewhere.
(That importing it imports NumPy only is checked in test_init.py.)"""

import numpy as np
import pytest

import posenc
from posenc import foils


def test_unknown_attribute_raises():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        foils.Nope  # noqa: B018


# --- pair loop (Machine Learning Mastery) ---------------------------------------------------

def test_pair_loop_right_for_even_width():
    np.testing.assert_allclose(foils.pair_loop_encoding(20, 6), posenc.positional_encoding(20, 6),
                               rtol=0, atol=1e-12)


def test_pair_loop_leaves_last_column_zero_for_odd_width():
    table = foils.pair_loop_encoding(20, 5)
    assert np.all(table[:, 4] == 0.0)
    assert np.abs(posenc.positional_encoding(20, 5)[1:, 4]).min() > 0
    np.testing.assert_allclose(table[:, :4], posenc.positional_encoding(20, 5)[:, :4], atol=1e-12)


def test_pair_loop_rounded_up_runs_past_the_end():
    with pytest.raises(IndexError):
        foils.pair_loop_encoding(3, 5, round_up=True)


# --- float32 div_term snippet ----------------------------------------------------------------

def test_div_term_is_the_angular_frequency_to_float32():
    exponent, div_term, angles = foils.float32_div_term_parts(10, 512)
    assert exponent.dtype == div_term.dtype == angles.dtype == np.float32
    assert angles.shape == (10, 256)
    omega = posenc.angular_frequencies(512)[0::2]
    assert np.abs(div_term / omega - 1).max() < 1e-6


def test_float32_angles_small_error_at_small_positions():
    error = np.abs(foils.float32_div_term_encoding(1000, 512) - posenc.positional_encoding(1000, 512))
    assert error.max() < 1e-4


@pytest.mark.parametrize("offset, low, high", [(99_000, 3e-3, 3e-2), (999_000, 3e-2, 3e-1)])
def test_float32_angles_error_grows_with_position(offset, low, high):
    table = foils.float32_div_term_encoding(1000, 512, offset=offset)
    exact = posenc.positional_encoding(1000, 512, offset=offset)
    assert table.dtype == np.float32
    assert low < np.abs(table - exact).max() < high
    ours = posenc.positional_encoding(1000, 512, offset=offset, dtype=np.float32)
    assert np.abs(ours - exact).max() <= 2.0**-25  # the fix: float64 angles, one rounding


def test_float32_div_term_fails_for_odd_width():
    with pytest.raises(ValueError, match="broadcast"):
        foils.float32_div_term_encoding(4, 5)


def test_table_without_batch_axis_silently_wrong_when_square():
    table = posenc.positional_encoding(50, 16)
    with pytest.raises(ValueError):
        foils.add_table_without_batch_axis(np.zeros((5, 3, 16)), table)
    out = foils.add_table_without_batch_axis(np.zeros((5, 5, 16)), table)
    assert np.array_equal(out[0, 3], table[3])  # time step 0 of sample 3 got PE[3]


# --- PyTorch foils ----------------------------------------------------------------------------

def test_torch_div_term_matches_numpy_foil_in_size_of_error():
    pytest.importorskip("torch")
    table = foils.float32_div_term_encoding_torch(1000, 512, offset=99_000).numpy()
    exact = posenc.positional_encoding(1000, 512, offset=99_000)
    assert 3e-3 < np.abs(table - exact).max() < 3e-2
    with pytest.raises(RuntimeError):
        foils.float32_div_term_encoding_torch(4, 5)


def test_snippet_module_flaws():
    torch = pytest.importorskip("torch")
    snippet = foils.SnippetPositionalEncoding(d_model=512, max_len=5000)
    state = snippet.state_dict()
    assert list(state) == ["pe"] and tuple(state["pe"].shape) == (1, 5000, 512)
    error = np.abs(state["pe"][0].numpy() - posenc.positional_encoding(5000, 512)).max()
    assert 1e-4 < error < 1e-3  # float32 angles: about 4e-4 at 5000 positions
    small = foils.SnippetPositionalEncoding(d_model=8, max_len=50)
    assert small(torch.zeros(1, 50, 8, dtype=torch.float16)).dtype == torch.float32
    with pytest.raises(RuntimeError):
        small(torch.zeros(1, 60, 8))  # fixed max_len
    with pytest.raises(RuntimeError):
        foils.SnippetPositionalEncoding(d_model=5, max_len=10)
    x = torch.zeros(2, 7, 8)
    np.testing.assert_allclose(small(x)[1].numpy(), posenc.positional_encoding(7, 8), atol=1e-5)


def test_seq_first_module_right_for_seq_first_wrong_for_batch_first():
    torch = pytest.importorskip("torch")
    module = foils.SeqFirstPositionalEncoding(d_model=16, dropout=0.0, max_len=50).eval()
    assert tuple(module.pe.shape) == (50, 1, 16)
    table = torch.from_numpy(posenc.positional_encoding(50, 16, dtype=np.float32))
    seq_first = module(torch.zeros(7, 3, 16))
    assert torch.allclose(seq_first, table[:7, None, :].expand(7, 3, 16), atol=1e-5)
    batch_first = module(torch.zeros(3, 7, 16))  # runs without error
    for b in range(3):  # every position of sample b got PE[b]
        assert torch.allclose(batch_first[b], table[b].expand(7, 16), atol=1e-5)


def test_plain_attribute_ignored_by_to():
    torch = pytest.importorskip("torch")
    module = foils.PlainAttributePositionalEncoding(d_model=8, max_len=50).to(torch.float64)
    assert module.pe.dtype == torch.float32 and module.state_dict() == {}


# --- TensorFlow foils -------------------------------------------------------------------------

@pytest.mark.parametrize("d_model", [512, 5])
def test_gfg_table_batch_axis_same_values(d_model):
    pytest.importorskip("tensorflow")
    table = foils.gfg_like_table(50, d_model)
    assert tuple(table.shape) == (1, 50, d_model) and table.dtype.name == "float32"
    ours = posenc.positional_encoding(50, d_model, dtype=np.float32)
    assert np.abs(table.numpy()[0] - ours).max() <= 2.0**-24


def _tokens(source):
    import io
    import tokenize
    return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENDMARKER)]


# Foils reproduce a source's behaviour in our own code, never its lines: token sequences of the
# articles' code that must not appear in posenc/foils.py (whitespace and comments ignored).
SOURCE_LINES = {
    "GeeksforGeeks 2025": "np.arange(position)[:, np.newaxis] / np.power",
}


@pytest.mark.parametrize("article", sorted(SOURCE_LINES))
def test_foils_do_not_copy_the_articles_code(article):
    import inspect
    ours = " ".join(_tokens(inspect.getsource(foils)))
    assert " ".join(_tokens(SOURCE_LINES[article])) not in ours, article


def test_token_check_can_fail():
    assert " ".join(_tokens(SOURCE_LINES["GeeksforGeeks 2025"])) in " ".join(
        _tokens("x = np.arange(position)[:,np.newaxis]  /  np.power(10000, 2)\n"))


def test_tutorial_table_concatenated_layout():
    pytest.importorskip("tensorflow")
    d_model = 64
    table = foils.tutorial_like_table(100, d_model).numpy()
    ours = posenc.positional_encoding(100, d_model)
    to_blocks = np.concatenate([np.arange(0, d_model, 2), np.arange(1, d_model, 2)])
    np.testing.assert_allclose(table, ours[:, to_blocks], rtol=0, atol=1e-7)
    assert np.abs(table - ours).max() > 1.0  # not the interleaved layout


def test_tutorial_table_one_column_too_many_for_odd_width():
    pytest.importorskip("tensorflow")
    assert tuple(foils.tutorial_like_table(10, 5).shape) == (10, 6)
