"""posenc.relative: RoPE and ALiBi in NumPy against independent references, properties, errors."""

import re

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import posenc
from posenc import alibi_bias, alibi_slopes, rope


def exact_rope(x, positions, pairs, base=10000):
    """Rotate each row of ``x`` by the block-diagonal matrix of RoFormer, in 50-digit arithmetic.

    Written from the paper (Su et al. 2021, section 3.2), not from the package: for the
    vector at position ``m``, the plane spanned by the two coordinates of pair ``i``
    (listed in ``pairs``) is rotated by ``m * theta_i`` with
    ``theta_i = base ** (-2 i / d)``; the full d x d matrix is built and multiplied.
    """
    d = x.shape[-1]
    rows = []
    with mpmath.workdps(50):
        for row, m in zip(x, positions):
            matrix = mpmath.zeros(d, d)
            for i, (a, b) in enumerate(pairs):
                theta = mpmath.mpf(base) ** (-mpmath.mpf(2 * i) / d)
                c, s = mpmath.cos(m * theta), mpmath.sin(m * theta)
                matrix[a, a], matrix[a, b], matrix[b, a], matrix[b, b] = c, -s, s, c
            vector = mpmath.matrix([mpmath.mpf(float(v)) for v in row])
            rows.append([float(v) for v in matrix * vector])
    return np.array(rows)


def interleaved_pairs(d):
    return [(2 * i, 2 * i + 1) for i in range(d // 2)]


def half_pairs(d):
    return [(i, i + d // 2) for i in range(d // 2)]


def half_to_interleaved(d):
    """Column order that turns a half-split vector into an interleaved one: [0, d/2, 1, d/2+1, ...]."""
    return np.stack([np.arange(d // 2), np.arange(d // 2, d)], axis=1).reshape(-1)


RNG = np.random.default_rng(20260411)


def test_exported_from_posenc():
    for name in ("rope", "alibi_slopes", "alibi_bias"):
        assert name in posenc.__all__ and getattr(posenc, name).__doc__


# --- RoPE: values -----------------------------------------------------------------------


@pytest.mark.parametrize("layout, pairs", [("interleaved", interleaved_pairs), ("half", half_pairs)])
@pytest.mark.parametrize("d", [2, 4, 10, 64])
@pytest.mark.parametrize("base, offset", [(10000, 0), (100, 7), (2.5, 0), (500000, 10**5)])
def test_rope_against_exact_rotation(layout, pairs, d, base, offset):
    x = RNG.standard_normal((12, d))
    expected = exact_rope(x, range(offset, offset + 12), pairs(d), base)
    got = rope(x, base=base, offset=offset, layout=layout)
    # A float64 angle pos * w is off by up to about pos * 2e-16 radians.
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 + 1e-15 * offset)


def test_rope_by_hand_for_one_pair():
    # d = 2: one pair with frequency 1, so position pos rotates (1, 0) to (cos pos, sin pos).
    got = rope(np.tile([1.0, 0.0], (3, 1)))
    expected = [[1, 0], [np.cos(1), np.sin(1)], [np.cos(2), np.sin(2)]]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-16)
    np.testing.assert_allclose(rope(np.array([[0.0, 1.0]]), offset=2), [[-np.sin(2), np.cos(2)]],
                               rtol=0, atol=1e-16)


def test_position_zero_is_the_identity():
    x = RNG.standard_normal((2, 1, 8))
    np.testing.assert_array_equal(rope(x), x)


def test_offset_gives_later_rows():
    x = RNG.standard_normal((20, 8))
    np.testing.assert_array_equal(rope(x)[5:], rope(x[5:], offset=5))


def test_leading_dimensions_are_independent():
    x = RNG.standard_normal((2, 3, 6, 8))  # (batch, heads, seq_len, d)
    got = rope(x, layout="half")
    for b in range(2):
        for h in range(3):
            np.testing.assert_array_equal(got[b, h], rope(x[b, h], layout="half"))


# --- RoPE: the relative property and the two layouts ---------------------------------------


def score(q, k, m, n, **kwargs):
    """Dot product of q rotated for position m with k rotated for position n."""
    return float(rope(q[np.newaxis], offset=m, **kwargs)[0] @ rope(k[np.newaxis], offset=n, **kwargs)[0])


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_score_depends_only_on_the_distance(layout):
    q, k = RNG.standard_normal((2, 16))
    for distance in (0, 1, 5, 100):
        scores = [score(q, k, m, m + distance, layout=layout) for m in (0, 1, 17, 1000, 123456)]
        np.testing.assert_allclose(scores, scores[0], rtol=0, atol=1e-10)
        # q^T R(m)^T R(n) k = q^T R(n - m) k: the key alone rotated by the distance.
        np.testing.assert_allclose(scores[0], q @ rope(k[np.newaxis], offset=distance, layout=layout)[0],
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("pos", [0, 1, 7, 1000, -3])
def test_rotation_is_the_inverse_shift_matrix(pos):
    """R_pos = M_(-pos): RoPE turns each pair the other way from a shift of the encoding."""
    d = 8
    # Row j of rope(I) is e_j @ R_pos.T, so rope of the identity's rows is R_pos.T.
    r_pos = rope(np.eye(d)[:, np.newaxis, :], offset=abs(pos))[:, 0, :].T
    if pos < 0:
        r_pos = r_pos.T                                   # R_(-p) = R_p^T
    np.testing.assert_allclose(r_pos, posenc.shift_matrix(-pos, d), rtol=0, atol=1e-12)
    if pos != 0:
        assert not np.allclose(r_pos, posenc.shift_matrix(pos, d))   # not M_pos itself


def test_score_is_a_shift_matrix_between_query_and_key():
    """rope(q)[m] . rope(u)[n] = q R_(n - m) u^T = q M_(m - n) u^T (row vectors)."""
    q, u = RNG.standard_normal((2, 16))
    for m, n in ((10, 3), (3, 10), (500, 500)):
        np.testing.assert_allclose(score(q, u, m, n), q @ posenc.shift_matrix(m - n, 16) @ u,
                                   rtol=0, atol=1e-10)


def test_score_changes_with_the_distance():
    """The property above is not trivially true: other distances give other scores."""
    q, k = RNG.standard_normal((2, 16))
    scores = [score(q, k, 0, distance) for distance in range(6)]
    assert min(abs(a - b) for i, a in enumerate(scores) for b in scores[i + 1:]) > 1e-3


@given(m=st.integers(0, 10**5), n=st.integers(0, 10**5), shift=st.integers(0, 10**5),
       seed=st.integers(0, 2**32 - 1))
def test_relative_property(m, n, shift, seed):
    q, k = np.random.default_rng(seed).standard_normal((2, 8))
    assert score(q, k, m, n) == pytest.approx(score(q, k, m + shift, n + shift), rel=0, abs=1e-9)


@pytest.mark.parametrize("d", [2, 8, 64])
def test_layouts_equal_up_to_a_fixed_permutation(d):
    perm = half_to_interleaved(d)
    x = RNG.standard_normal((3, 9, d))
    np.testing.assert_array_equal(rope(x, layout="half")[..., perm],
                                  rope(x[..., perm], layout="interleaved"))


def test_layouts_are_not_interchangeable():
    """Same weights, other convention: the scores change (the layout trap)."""
    q, k = RNG.standard_normal((2, 16, 32))
    half = rope(q, layout="half") @ rope(k, layout="half").T
    interleaved = rope(q, layout="interleaved") @ rope(k, layout="interleaved").T
    perm = half_to_interleaved(32)
    permuted = rope(q[:, perm]) @ rope(k[:, perm]).T
    np.testing.assert_allclose(permuted, half, rtol=0, atol=1e-12)
    assert np.abs(interleaved - half).max() > 1.0


@given(x=arrays(np.float64, st.tuples(st.integers(1, 5), st.sampled_from([2, 4, 6, 12])),
                elements=st.floats(-1e3, 1e3)),
       offset=st.integers(0, 10**6), layout=st.sampled_from(["interleaved", "half"]))
def test_each_pair_keeps_its_length(x, offset, layout):
    pairs = interleaved_pairs if layout == "interleaved" else half_pairs
    index = np.array(pairs(x.shape[-1]))
    got = rope(x, offset=offset, layout=layout)
    np.testing.assert_allclose(np.hypot(got[:, index[:, 0]], got[:, index[:, 1]]),
                               np.hypot(x[:, index[:, 0]], x[:, index[:, 1]]), rtol=1e-13, atol=1e-12)


@given(a=st.integers(0, 10**6), b=st.integers(0, 10**6), seed=st.integers(0, 2**32 - 1))
def test_rotations_add_their_angles(a, b, seed):
    x = np.random.default_rng(seed).standard_normal((1, 10))
    np.testing.assert_allclose(rope(rope(x, offset=a), offset=b), rope(x, offset=a + b),
                               rtol=0, atol=1e-9)


# --- RoPE: shapes and dtypes ------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 2), (0, 4), (3, 5, 8), (2, 3, 5, 8), (1, 1, 1, 1, 6)])
def test_shape_is_kept(shape):
    assert rope(np.zeros(shape)).shape == shape


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble])
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_dtype_is_kept_and_rounded_once(dtype, layout):
    x = RNG.standard_normal((4, 50, 16)).astype(dtype)
    got = rope(x, offset=1000, layout=layout)
    assert got.dtype == dtype
    # Computed in float64 (or wider) and rounded once: equal to the float64 result, rounded.
    wide = rope(x.astype(np.result_type(dtype, np.float64)), offset=1000, layout=layout)
    np.testing.assert_array_equal(got, wide.astype(dtype))


def test_array_likes_are_converted():
    np.testing.assert_array_equal(rope([[1.0, 0.0], [1.0, 0.0]]), rope(np.array([[1.0, 0.0]] * 2)))


def test_input_is_not_modified():
    x = RNG.standard_normal((4, 8))
    copy = x.copy()
    rope(x, offset=3)
    np.testing.assert_array_equal(x, copy)


# --- RoPE: errors -------------------------------------------------------------------------------


def exactly(message):
    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize("x, kwargs, error, message", [
    (np.zeros((4, 5)), {}, ValueError,
     "x's last dimension must be even and >= 2 (RoPE rotates pairs of coordinates), got 5"),
    (np.zeros((4, 0)), {}, ValueError,
     "x's last dimension must be even and >= 2 (RoPE rotates pairs of coordinates), got 0"),
    (np.zeros(8), {}, ValueError,
     "x must have shape (..., seq_len, d) with at least 2 dimensions, got shape (8,)"),
    (np.zeros((4, 8), dtype=np.int64), {}, TypeError,
     "x must be an array of a floating-point dtype (float16, float32, float64), got dtype int64"),
    (np.zeros((4, 8), dtype=bool), {}, TypeError,
     "x must be an array of a floating-point dtype (float16, float32, float64), got dtype bool"),
    (np.zeros((4, 8), dtype=np.complex128), {}, TypeError,
     "x must be an array of a floating-point dtype (float16, float32, float64), got dtype complex128"),
    (np.zeros((4, 8)), {"layout": "neox"}, ValueError,
     "layout must be 'interleaved' or 'half', got 'neox'"),
    (np.zeros((4, 8)), {"layout": None}, TypeError,
     "layout must be the string 'interleaved' or 'half', got NoneType None"),
    (np.zeros((4, 8)), {"offset": -1}, ValueError, "offset must be an integer >= 0, got -1"),
    (np.zeros((4, 8)), {"offset": 1.5}, TypeError, "offset must be an integer, got float 1.5"),
    (np.zeros((4, 8)), {"base": 0}, ValueError, "base must be a finite number > 1, got 0.0"),
    (np.zeros((4, 8)), {"base": "10000"}, TypeError, "base must be a real number, got str '10000'"),
])
def test_rope_errors(x, kwargs, error, message):
    with pytest.raises(error, match=exactly(message)):
        rope(x, **kwargs)


# --- ALiBi ------------------------------------------------------------------------------------


def test_slopes_of_eight_heads_from_the_paper():
    np.testing.assert_array_equal(alibi_slopes(8), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64,
                                                    1 / 128, 1 / 256])


#: Exponents of the slopes other than the paper's 8 (keras-hub's tests use 12 and 6).
OTHER_MAX_BIAS = [12, 6, 0.5, 3.75, 16.0]


@pytest.mark.parametrize("n_heads, max_bias", [(n, 8.0) for n in (1, 2, 4, 8, 16, 32, 64, 128)]
                         + list(zip((2, 4, 1, 8, 64), OTHER_MAX_BIAS)))
def test_slopes_of_a_power_of_two_are_geometric(n_heads, max_bias):
    """Start and ratio both 2 ** (-max_bias / n), checked in 50-digit arithmetic."""
    with mpmath.workdps(50):
        start = mpmath.mpf(2) ** (-mpmath.mpf(max_bias) / n_heads)
        expected = [float(start ** (h + 1)) for h in range(n_heads)]
    got = alibi_slopes(n_heads) if max_bias == 8.0 else alibi_slopes(n_heads, max_bias=max_bias)
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize("n_heads, max_bias", [(n, 8.0) for n in (3, 5, 6, 7, 12, 20, 24, 40, 96, 112)]
                         + list(zip((3, 3, 6, 12, 40), OTHER_MAX_BIAS)))
def test_slopes_of_other_counts_interpolate(n_heads, max_bias):
    """The first p slopes are those of p heads (p the power of two below); the others are
    every other slope of 2p heads, i.e. the geometric means of consecutive slopes of p."""
    p = 2 ** int(np.log2(n_heads))

    def slopes_of(n):
        return alibi_slopes(n, max_bias=max_bias)
    slopes = slopes_of(n_heads)
    np.testing.assert_array_equal(slopes[:p], slopes_of(p))
    np.testing.assert_allclose(slopes[p:], slopes_of(2 * p)[0::2][: n_heads - p], rtol=1e-15)
    between = np.sqrt(slopes_of(p)[:-1] * slopes_of(p)[1:])
    np.testing.assert_allclose(slopes[p + 1:], between[: n_heads - p - 1], rtol=1e-15)


def test_slopes_of_twelve_heads_by_hand():
    """The authors' code's interpolation, not the paper's general sentence read literally
    for 12 heads (2 ** (-8 h / 12)), which would give other slopes."""
    expected = [2.0 ** -e for e in (1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5)]
    np.testing.assert_allclose(alibi_slopes(12), expected, rtol=1e-15, atol=0)
    assert not np.allclose(alibi_slopes(12), 2.0 ** (-8 * np.arange(1, 13) / 12))


def test_slopes_of_three_heads_by_hand_with_max_bias():
    """keras-hub's example of alibi_bias_max=6: 2 ** -3, 2 ** -6, then 2 ** -1.5."""
    np.testing.assert_allclose(alibi_slopes(3, max_bias=6), [2.0 ** -3, 2.0 ** -6, 2.0 ** -1.5],
                               rtol=1e-15, atol=0)


@given(n_heads=st.integers(1, 512),
       max_bias=st.just(8.0) | st.floats(min_value=0.01, max_value=64.0))
def test_slopes_are_distinct_and_in_range(n_heads, max_bias):
    slopes = alibi_slopes(n_heads, max_bias=max_bias)
    assert slopes.shape == (n_heads,) and slopes.dtype == np.float64
    flattest = 2.0 ** -max_bias * (1 - 2.0 ** -52)  # within a unit in the last place
    assert np.all((slopes >= flattest) & (slopes < 1))
    assert len(set(slopes.tolist())) == n_heads


@pytest.mark.parametrize("seq_len, n_heads", [(0, 4), (1, 1), (7, 3), (16, 8)])
def test_bias_entries(seq_len, n_heads):
    bias = alibi_bias(seq_len, n_heads)
    assert bias.shape == (n_heads, seq_len, seq_len) and bias.dtype == np.float64
    slopes = alibi_slopes(n_heads)
    for h in range(n_heads):
        for i in range(seq_len):
            for j in range(seq_len):
                assert bias[h, i, j] == -slopes[h] * abs(i - j)
    assert not np.signbit(np.diagonal(bias, axis1=1, axis2=2)).any()  # 0.0, not -0.0


def test_causal_row_is_the_papers_bias():
    """Row i, keys 0..i: m * [-(i), ..., -1, 0], as in figure 3 of Press et al. (2022)."""
    bias = alibi_bias(6, 8)
    np.testing.assert_array_equal(bias[0, 5, :6], 0.5 * np.array([-5, -4, -3, -2, -1, 0]))


@pytest.mark.parametrize("call, error, message", [
    (lambda: alibi_slopes(0), ValueError, "n_heads must be an integer >= 1, got 0"),
    (lambda: alibi_slopes(8.0), TypeError, "n_heads must be an integer, got float 8.0"),
    (lambda: alibi_slopes(True), TypeError, "n_heads must be an integer, got bool True"),
    (lambda: alibi_slopes(4, max_bias=0), ValueError, "max_bias must be > 0, got 0.0"),
    (lambda: alibi_slopes(4, max_bias=-8), ValueError, "max_bias must be > 0, got -8.0"),
    (lambda: alibi_slopes(4, max_bias=float("nan")), ValueError, "max_bias must be finite, got nan"),
    (lambda: alibi_slopes(4, max_bias=np.inf), ValueError, "max_bias must be finite, got inf"),
    (lambda: alibi_slopes(4, max_bias="8"), TypeError, "max_bias must be a real number, got str '8'"),
    (lambda: alibi_slopes(4, max_bias=None), TypeError,
     "max_bias must be a real number, got NoneType None"),
    (lambda: alibi_slopes(4, 8), TypeError,
     "alibi_slopes() takes 1 positional argument but 2 were given"),
    (lambda: alibi_bias(-1, 4), ValueError, "seq_len must be an integer >= 0, got -1"),
    (lambda: alibi_bias(4, 0), ValueError, "n_heads must be an integer >= 1, got 0"),
    (lambda: alibi_bias("4", 2), TypeError, "seq_len must be an integer, got str '4'"),
])
def test_alibi_errors(call, error, message):
    with pytest.raises(error, match=exactly(message)):
        call()


@pytest.mark.parametrize("call", [
    lambda: rope(np.zeros((2, 4)), offset=10**400),
    lambda: posenc.relative.rope_cos_sin(2, 4, offset=2**53),
    lambda: alibi_bias(10**400, 2),
], ids=["rope", "rope_cos_sin", "alibi_bias"])
def test_positions_past_float64s_exact_range_are_refused_by_name(call):
    """Past 2**53 float64 skips integers: a clear ValueError, not NumPy's OverflowError."""
    with pytest.raises(ValueError, match=r"2\*\*53"):
        call()
