"""posenc.encoding: the NumPy and loop versions against the formula, shapes, dtypes, errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc import angular_frequencies, positional_encoding, positional_encoding_loop, shift_matrix
from posenc.encoding import encoding_at, float32_round_to_odd

from reference import assert_nearest, exact_encoding, exactly

# The worked example of Machine Learning Mastery (seq_len=4, d_model=4, base=100), by hand.
WORKED_EXAMPLE = np.array([
    [math.sin(0), math.cos(0), math.sin(0 / 10), math.cos(0 / 10)],
    [math.sin(1), math.cos(1), math.sin(1 / 10), math.cos(1 / 10)],
    [math.sin(2), math.cos(2), math.sin(2 / 10), math.cos(2 / 10)],
    [math.sin(3), math.cos(3), math.sin(3 / 10), math.cos(3 / 10)],
])

IMPLEMENTATIONS = [positional_encoding, positional_encoding_loop]


@pytest.mark.parametrize("encode", IMPLEMENTATIONS)
def test_worked_example(encode):
    np.testing.assert_allclose(encode(4, 4, base=100), WORKED_EXAMPLE, rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        encode(4, 4, base=100).round(4),
        [[0, 1, 0, 1], [0.8415, 0.5403, 0.0998, 0.995],
         [0.9093, -0.4161, 0.1987, 0.9801], [0.1411, -0.99, 0.2955, 0.9553]],
    )


@pytest.mark.parametrize("encode", IMPLEMENTATIONS)
@pytest.mark.parametrize("d_model", [1, 2, 3, 4, 7, 16, 33])
@pytest.mark.parametrize("base", [10000, 100, 2.5])
def test_against_exact_formula(encode, d_model, base):
    expected = exact_encoding(range(20), d_model, base)
    np.testing.assert_allclose(encode(20, d_model, base=base), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("d_model", [1024, 1023, 2])
@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-9), (np.float32, 1e-7)])
def test_accuracy_at_long_context(d_model, dtype, tolerance):
    """Positions near 10**6, across several blocks: the accuracy targets of the package."""
    offset, seq_len, every = 10**6 - 150, 150, 7
    got = positional_encoding(seq_len, d_model, offset=offset, dtype=dtype)[::every]
    expected = exact_encoding(range(offset, offset + seq_len, every), d_model)
    assert np.abs(got.astype(np.float64) - expected).max() <= tolerance


def test_offset_rows_are_later_positions():
    positions = [1000, 1001, 1002, 123456]
    got = positional_encoding(3, 8, offset=1000)
    np.testing.assert_allclose(got, exact_encoding(positions[:3], 8), rtol=0, atol=1e-12)


def test_gfg_example_positions_1_to_6():
    got = positional_encoding(6, 4, offset=1)
    hand = [[math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)] for p in range(1, 7)]
    np.testing.assert_allclose(got, hand, rtol=0, atol=1e-15)


@pytest.mark.parametrize("d_model", [1, 3, 5])
def test_odd_width_last_column_is_a_sine(d_model):
    pe = positional_encoding(10, d_model)
    last_frequency = 10000.0 ** (-(d_model - 1) / d_model)
    np.testing.assert_allclose(pe[:, -1], np.sin(np.arange(10) * last_frequency), atol=1e-15)


@pytest.mark.parametrize("encode", IMPLEMENTATIONS)
def test_empty_sequence(encode):
    pe = encode(0, 6)
    assert pe.shape == (0, 6) and pe.dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float16, np.float32, "float32"])
def test_narrow_dtype_is_the_nearest_value_of_the_exact_formula(dtype):
    pe = positional_encoding(70, 6, offset=1000, dtype=dtype)
    assert pe.dtype == np.dtype(dtype)
    assert_nearest(pe, exact_encoding(range(1000, 1070), 6))


def test_float64_is_within_rounding_of_the_exact_formula():
    pe = positional_encoding(70, 6, offset=1000, dtype=np.float64)
    assert pe.dtype == np.float64
    np.testing.assert_allclose(pe, exact_encoding(range(1000, 1070), 6), rtol=0, atol=1e-13)


@pytest.mark.parametrize("position", [10**3, 10**6, 10**9, 2**40, 2**52])
@pytest.mark.parametrize("d_model", [8, 9])
def test_accuracy_grows_with_position_as_documented(position, d_model):
    """The docstring's statement: the float64 error stays below about pos * 2**-52."""
    got = positional_encoding(2, d_model, offset=position)
    error = np.abs(got - exact_encoding([position, position + 1], d_model)).max()
    assert error <= max(position * 2.0**-52, 2e-16)


def test_encoding_at_arbitrary_positions():
    positions = np.array([[0, 5, 10**6], [3, 2**40, 7]])
    got = encoding_at(positions, 7, 100.0)
    assert got.shape == (2, 3, 7) and got.dtype == np.float64
    expected = exact_encoding(positions.ravel().tolist(), 7, 100).reshape(2, 3, 7)
    bound = np.maximum(positions * 2.0**-52, 2e-16)[..., np.newaxis]  # as documented
    assert np.all(np.abs(got - expected) <= bound)


@pytest.mark.parametrize("base, row, column, value", [
    (7169.081669797251, 133, 2, 1.0),    # sin(133 w) with 133 w = pi / 2
    (2382.173606524297, 230, 2, -1.0),   # sin(230 w) with 230 w = 3 pi / 2
    (448.0676043623282, 133, 3, 1.0),    # cos(133 w) with 133 w = 2 pi
    (1957.6265891536082, 139, 3, -1.0),  # cos(139 w) with 139 w = pi
])
def test_values_never_overshoot_one(base, row, column, value):
    """Bases found by search where the angle-addition sum overshoots by one unit in the
    last place: w = base**-0.5 (pair 1 of d_model=4) puts position ``row`` at a multiple
    of pi / 2, and the block sum comes out at +-(1 + 2**-52); only the clip brings it back."""
    pe = positional_encoding(row + 1, 4, base=base)
    assert pe[row, column] == value
    assert np.abs(pe).max() <= 1.0


@pytest.mark.parametrize("d_model, error, message", [
    (0, ValueError, "d_model must be an integer >= 1, got 0"),
    (8.0, TypeError, "d_model must be an integer, got float 8.0"),
    (2**62, ValueError, f"d_model is too large: a (1, {2**62}) float64 table would need "
     f"{2**65} bytes, more than an array can hold (9223372036854775807)"),
])
def test_angular_frequencies_errors(d_model, error, message):
    with pytest.raises(error, match=exactly(message)):
        angular_frequencies(d_model)


def test_loop_default_base_is_the_papers():
    np.testing.assert_allclose(positional_encoding_loop(3, 6), exact_encoding(range(3), 6, 10000),
                               rtol=0, atol=1e-15)


def test_angular_frequencies_are_a_geometric_progression():
    omega = angular_frequencies(8)
    np.testing.assert_allclose(omega, [1, 1, 0.1, 0.1, 0.01, 0.01, 0.001, 0.001], rtol=1e-15)
    ratios = omega[2::2] / omega[:-2:2]
    np.testing.assert_allclose(ratios, 10000 ** (-2 / 8), rtol=1e-14)


@pytest.mark.parametrize("k", [-5, 0, 1, 37])
def test_shift_matrix_moves_rows(k):
    pe = positional_encoding(200, 16)
    matrix = shift_matrix(k, 16)
    start = max(0, -k)
    stop = min(200, 200 - k)
    np.testing.assert_allclose(pe[start + k:stop + k], pe[start:stop] @ matrix.T, atol=1e-12)
    np.testing.assert_allclose(matrix @ matrix.T, np.eye(16), atol=1e-15)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((1, 5), {}, ValueError, "shift_matrix needs an even d_model (pairs of sine and cosine), got 5"),
    ((1, 0), {}, ValueError, "d_model must be an integer >= 1, got 0"),
    ((1.0, 4), {}, TypeError, "k must be an integer, got float 1.0"),
    ((True, 4), {}, TypeError, "k must be an integer, got bool True"),
    ((1, "4"), {}, TypeError, "d_model must be an integer, got str '4'"),
    ((1, 4), {"base": 1.0}, ValueError, "base must be a finite number > 1, got 1.0"),
    ((1, 4), {"base": "e"}, TypeError, "base must be a real number, got str 'e'"),
    ((2**53 + 1, 4), {}, ValueError, "k must satisfy |k| <= 2**53 = 9007199254740992 (float64 "
     "holds every shift up to it exactly), got k=9007199254740993"),
    ((-(2**53) - 1, 4), {}, ValueError, "k must satisfy |k| <= 2**53 = 9007199254740992 (float64 "
     "holds every shift up to it exactly), got k=-9007199254740993"),
    ((10**400, 4), {}, ValueError, f"k must satisfy |k| <= 2**53 = 9007199254740992 (float64 "
     f"holds every shift up to it exactly), got k={10**400}"),
    ((1, 2**32), {}, ValueError, f"d_model is too large: a ({2**32}, {2**32}) float64 table "
     f"would need {2**67} bytes, more than an array can hold (9223372036854775807)"),
])
def test_shift_matrix_errors(args, kwargs, error, message):
    with pytest.raises(error, match=exactly(message)):
        shift_matrix(*args, **kwargs)


@pytest.mark.parametrize("k", [2**53, -(2**53)])
def test_shift_matrix_largest_shift(k):
    matrix = shift_matrix(k, 4)
    np.testing.assert_allclose(matrix @ matrix.T, np.eye(4), atol=1e-15)


def test_shift_matrix_with_another_base():
    # pair 1 of d_model=4 has w = 100**-0.5 = 0.1
    expected = np.array([[np.cos(3), np.sin(3), 0, 0], [-np.sin(3), np.cos(3), 0, 0],
                         [0, 0, np.cos(0.3), np.sin(0.3)], [0, 0, -np.sin(0.3), np.cos(0.3)]])
    np.testing.assert_allclose(shift_matrix(3, 4, base=100), expected, rtol=0, atol=1e-15)


BAD_ARGUMENTS = [
    ({"seq_len": -1}, ValueError, "seq_len must be an integer >= 0, got -1"),
    ({"seq_len": 2.0}, TypeError, "seq_len must be an integer, got float 2.0"),
    ({"seq_len": True}, TypeError, "seq_len must be an integer, got bool True"),
    ({"d_model": 0}, ValueError, "d_model must be an integer >= 1, got 0"),
    ({"d_model": "8"}, TypeError, "d_model must be an integer, got str '8'"),
    ({"d_model": 2**62}, ValueError, f"d_model is too large: a (1, {2**62}) float64 table "
     f"would need {2**65} bytes, more than an array can hold (9223372036854775807)"),
    ({"seq_len": 2**40, "d_model": 2**30}, ValueError, f"seq_len is too large: a ({2**40}, "
     f"{2**30}) float64 table would need {2**73} bytes, more than an array can hold "
     "(9223372036854775807)"),
    ({"base": 0}, ValueError, "base must be a finite number > 1, got 0.0"),
    ({"base": -2.0}, ValueError, "base must be a finite number > 1, got -2.0"),
    ({"base": 1.0}, ValueError, "base must be a finite number > 1, got 1.0"),
    ({"base": 1e-300}, ValueError, "base must be a finite number > 1, got 1e-300"),
    ({"base": float("inf")}, ValueError, "base must be a finite number > 1, got inf"),
    ({"base": float("nan")}, ValueError, "base must be a finite number > 1, got nan"),
    ({"base": "10000"}, TypeError, "base must be a real number, got str '10000'"),
]


@pytest.mark.parametrize("encode", IMPLEMENTATIONS)
@pytest.mark.parametrize("change, error, message", BAD_ARGUMENTS)
def test_bad_arguments(encode, change, error, message):
    kwargs = {"seq_len": 4, "d_model": 8, "base": 10000.0} | change
    with pytest.raises(error, match=exactly(message)):
        encode(kwargs.pop("seq_len"), kwargs.pop("d_model"), **kwargs)


@pytest.mark.parametrize("change, error, message", [
    ({"offset": -3}, ValueError, "offset must be an integer >= 0, got -3"),
    ({"offset": 1.5}, TypeError, "offset must be an integer, got float 1.5"),
    ({"offset": 2**53 - 3}, ValueError, "offset + seq_len must be <= 2**53 = 9007199254740992 "
     "(float64 holds every position up to it exactly), got offset=9007199254740989, seq_len=4"),
    ({"offset": 10**400}, ValueError, "offset + seq_len must be <= 2**53 = 9007199254740992 "
     f"(float64 holds every position up to it exactly), got offset={10**400}, seq_len=4"),
    ({"dtype": np.int32}, TypeError,
     "dtype must be a floating-point dtype such as numpy.float32, got int32"),
    ({"dtype": "not a dtype"}, TypeError,
     "dtype must be a NumPy floating-point dtype, got 'not a dtype'"),
])
def test_bad_keyword_arguments(change, error, message):
    with pytest.raises(error, match=exactly(message)):
        positional_encoding(4, 8, **change)


def test_last_exact_positions_are_accepted():
    got = positional_encoding(4, 2, offset=2**53 - 4)
    np.testing.assert_allclose(got, exact_encoding(range(2**53 - 4, 2**53), 2), rtol=0, atol=8)
    assert got.shape == (4, 2)


def test_numpy_integers_are_accepted():
    pe = positional_encoding(np.int64(3), np.int32(4), offset=np.uint8(2))
    np.testing.assert_array_equal(pe, positional_encoding(3, 4, offset=2))


widths = st.integers(min_value=1, max_value=64)
lengths = st.integers(min_value=0, max_value=300)  # several blocks of BLOCK_ROWS rows
offsets = st.integers(min_value=0, max_value=10**6)
bases = st.floats(min_value=1.5, max_value=1e5)


@given(seq_len=lengths, d_model=widths, base=bases, offset=offsets)
def test_shape_and_bounds(seq_len, d_model, base, offset):
    pe = positional_encoding(seq_len, d_model, base=base, offset=offset)
    assert pe.shape == (seq_len, d_model)
    assert np.all(np.abs(pe) <= 1.0)


@given(seq_len=lengths, d_model=widths, base=bases, offset=st.integers(0, 500))
def test_offset_equals_later_rows(seq_len, d_model, base, offset):
    shifted = positional_encoding(seq_len, d_model, base=base, offset=offset)
    full = positional_encoding(seq_len + offset, d_model, base=base)
    np.testing.assert_allclose(shifted, full[offset:], rtol=0, atol=1e-12)


@given(half_width=st.integers(1, 32), base=bases, k=st.integers(-300, 300),
       pos=st.integers(300, 10**5))
def test_rotation_property(half_width, base, k, pos):
    d_model = 2 * half_width
    rows = positional_encoding(1, d_model, base=base, offset=pos)[0]
    moved = positional_encoding(1, d_model, base=base, offset=pos + k)[0]
    np.testing.assert_allclose(shift_matrix(k, d_model, base=base) @ rows, moved, atol=1e-9)


@given(seq_len=st.integers(0, 150), d_model=st.integers(1, 12), base=bases)
def test_loop_equals_vectorized(seq_len, d_model, base):
    np.testing.assert_allclose(positional_encoding_loop(seq_len, d_model, base=base),
                               positional_encoding(seq_len, d_model, base=base),
                               rtol=0, atol=1e-13)


@pytest.mark.parametrize("value", [1.0, -1.0, 0.5, 1 + 2.0**-23, -(1 - 2.0**-24), 2.0**-149,
                                   3 * 2.0**-130, 0.0, -0.0, float(np.float32(0.1))])
def test_round_to_odd_keeps_values_float32_holds(value):
    """A float64 value that float32 holds exactly comes back bit for bit, whatever its last bit."""
    exact = np.float32(value)
    got = float32_round_to_odd(np.array([exact], dtype=np.float64))
    assert got.dtype == np.float32
    assert got.view(np.uint32)[0] == np.array([exact]).view(np.uint32)[0]


def test_round_to_odd_then_nearest_is_nearest():
    # 1 + 2**-11 + 2**-40 lies just above the midpoint of two float16 values: nearest is the
    # upper one, but a plain float32 rounding drops the 2**-40 and a second rounding to
    # float16 then breaks the tie to the even (lower) one.
    x = np.array([1 + 2.0**-11 + 2.0**-40, -(1 + 2.0**-11 + 2.0**-40), 0.5, 0.0])
    assert x.astype(np.float32).astype(np.float16)[0] == 1.0  # the double-rounding trap
    twice = float32_round_to_odd(x).astype(np.float16)
    np.testing.assert_array_equal(twice, [1 + 2.0**-10, -(1 + 2.0**-10), 0.5, 0.0])


@given(st.floats(min_value=-1, max_value=1))
def test_round_to_odd_is_exact_or_odd(value):
    odd = float32_round_to_odd(np.array([value]))
    if float(odd[0]) != value:  # inexact: last bit set, within one float32 step of the value
        assert odd.view(np.uint32)[0] & 1 == 1
        assert abs(float(odd[0]) - value) <= float(np.spacing(np.abs(odd[0])))
        assert np.sign(odd[0]) in (np.sign(value), 0)
