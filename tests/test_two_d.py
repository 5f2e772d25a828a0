"""posenc.two_d: the 2-D sinusoidal encoding and axial 2-D RoPE (issue 38, first part)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc
from posenc.reference import mae_2d_encoding
from posenc.two_d import positional_encoding_2d, rope_2d


@pytest.mark.parametrize("height, width, d_model", [(1, 1, 2), (3, 5, 8), (7, 4, 10), (0, 3, 4)])
def test_the_halves_are_the_1d_encodings_of_row_and_column(height, width, d_model):
    table = positional_encoding_2d(height, width, d_model)
    assert table.shape == (height, width, d_model) and table.dtype == np.float64
    half = d_model // 2
    rows, columns = posenc.positional_encoding(height, half), posenc.positional_encoding(width, half)
    for r in range(height):
        for c in range(width):
            np.testing.assert_array_equal(table[r, c, :half], rows[r])
            np.testing.assert_array_equal(table[r, c, half:], columns[c])


def test_patches_share_a_half_exactly_when_they_share_a_coordinate():
    table = positional_encoding_2d(6, 6, 16)
    assert np.array_equal(table[2, 1, :8], table[2, 5, :8]) and not np.array_equal(table[2, 1, 8:], table[2, 5, 8:])
    assert np.array_equal(table[1, 3, 8:], table[4, 3, 8:]) and not np.array_equal(table[1, 3, :8], table[4, 3, :8])


@pytest.mark.parametrize("height, width, embed_dim", [(4, 4, 16), (3, 5, 8), (14, 14, 64)])
def test_reordered_it_equals_mae(height, width, embed_dim):
    half = embed_dim // 2
    to_blocks = np.concatenate([np.arange(0, half, 2), np.arange(1, half, 2)])  # sines, then cosines
    table = positional_encoding_2d(height, width, embed_dim)
    mae_order = np.concatenate([table[..., half:][..., to_blocks], table[..., :half][..., to_blocks]], axis=-1)
    np.testing.assert_allclose(mae_order.reshape(height * width, embed_dim),
                               mae_2d_encoding(height, width, embed_dim), rtol=0, atol=1e-12)


def _grid(vector, height, width):
    return np.broadcast_to(vector, (height, width, vector.size)).copy()


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 7), st.integers(0, 7), st.integers(0, 7), st.integers(0, 7), st.integers(0, 3))
def test_a_rope_2d_score_depends_only_on_the_offsets(r1, c1, r2, c2, seed):
    draw = np.random.default_rng(seed)
    q, k = draw.standard_normal(16), draw.standard_normal(16)
    queries, keys = rope_2d(_grid(q, 12, 12)), rope_2d(_grid(k, 12, 12))
    score = queries[r1, c1] @ keys[r2, c2]
    shifted = queries[r1 + 4, c1 + 3] @ keys[r2 + 4, c2 + 3]
    assert score == pytest.approx(shifted, abs=1e-10)


def test_the_halves_turn_with_their_own_coordinate():
    x = _grid(np.random.default_rng(0).standard_normal(8), 5, 6)
    rotated = rope_2d(x)
    np.testing.assert_allclose(rotated[..., :4], posenc.rope(x[..., :4].swapaxes(0, 1)).swapaxes(0, 1),
                               rtol=0, atol=1e-12)                     # rows along axis 0
    np.testing.assert_allclose(rotated[..., 4:], posenc.rope(x[..., 4:]), rtol=0, atol=1e-12)
    assert not np.allclose(rotated[1, 0, 4:], rotated[1, 2, 4:])
    np.testing.assert_allclose(rotated[0, 0], x[0, 0], rtol=0, atol=0)  # patch (0, 0) does not turn


def test_rope_2d_keeps_shape_and_dtype_and_leading_axes():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5, 8)).astype(np.float32)
    out = rope_2d(x)
    assert out.shape == x.shape and out.dtype == np.float32
    np.testing.assert_allclose(out[1, 2], rope_2d(x[1, 2]), rtol=0, atol=0)


@pytest.mark.parametrize("call, error, message", [
    (lambda: positional_encoding_2d(3, 3, 7), ValueError, "d_model must be a multiple of 2, got 7"),
    (lambda: positional_encoding_2d(-1, 3, 8), ValueError, "height must be an integer >= 0, got -1"),
    (lambda: positional_encoding_2d(3, 2.0, 8), TypeError, "width must be an integer"),
    (lambda: rope_2d(np.zeros((3, 3, 6))), ValueError, "must be a multiple of 4 .* got 6"),
    (lambda: rope_2d(np.zeros((3, 8))), ValueError, "at least 3 dimensions, got shape \\(3, 8\\)"),
    (lambda: rope_2d(np.zeros((2, 2, 8), dtype=int)), TypeError, "floating-point dtype"),
    (lambda: mae_2d_encoding(2, 2, 6), ValueError, "multiple of 4, got 6"),
])
def test_bad_input_gets_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("height, width, embed_dim", [(4, 4, 16), (3, 5, 8)])
def test_mae_layout_is_one_call(height, width, embed_dim):
    table = positional_encoding_2d(height, width, embed_dim, layout="mae")
    assert table.shape == (height * width, embed_dim)
    np.testing.assert_allclose(table, mae_2d_encoding(height, width, embed_dim), rtol=0, atol=1e-12)


def rope_vit_axial(x, theta):
    """RoPE-ViT's axial rotation (naver-ai/rope-vit, self-attn/rope_self_attn.py:
    compute_axial_cis, init_t_xy, apply_rotary_emb) re-created with NumPy complex numbers:
    patches flattened row by row, t_x = t % width (the column) on the first half of the
    pairs, t_y = t // width (the row) on the second, consecutive coordinates as one pair."""
    height, width, dim = x.shape
    frequencies = 1.0 / theta ** (np.arange(0, dim, 4)[: dim // 4] / dim)
    t = np.arange(height * width)
    angles = np.concatenate([np.outer(t % width, frequencies), np.outer(t // width, frequencies)], 1)
    pairs = x.reshape(height * width, dim // 2, 2)
    turned = (pairs[..., 0] + 1j * pairs[..., 1]) * np.exp(1j * angles)
    return np.stack([turned.real, turned.imag], -1).reshape(height, width, dim)


def test_rope_2d_columns_first_is_rope_vits_code():
    x = np.random.default_rng(4).standard_normal((3, 5, 16))
    np.testing.assert_allclose(rope_2d(x, base=100.0, first="columns"), rope_vit_axial(x, 100.0),
                               rtol=0, atol=1e-12)
    assert np.abs(rope_2d(x, base=100.0) - rope_vit_axial(x, 100.0)).max() > 0.1  # rows first


@pytest.mark.parametrize("call, error", [
    (lambda: positional_encoding_2d(2, 2, 6, layout="mae"), ValueError),
    (lambda: positional_encoding_2d(2, 2, 8, layout="MAE"), ValueError),
    (lambda: rope_2d(np.zeros((2, 2, 8)), first=0), TypeError),
    (lambda: rope_2d(np.zeros((2, 2, 8)), first="x"), ValueError),
])
def test_bad_layout_or_first_is_a_clear_error(call, error):
    with pytest.raises(error):
        call()
