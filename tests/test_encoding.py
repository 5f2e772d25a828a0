"""posenc.encoding: the NumPy and loop versions against the formula, shapes, dtypes, errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc import angular_frequencies, positional_encoding, positional_encoding_loop, shift_matrix
from posenc.encoding import float32_round_to_odd

from reference import exact_encoding

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


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, "float32"])
def test_dtype(dtype):
    pe = positional_encoding(5, 6, dtype=dtype)
    assert pe.dtype == np.dtype(dtype)
    np.testing.assert_allclose(pe, positional_encoding(5, 6).astype(dtype))


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


def test_shift_matrix_rejects_odd_width():
    with pytest.raises(ValueError, match="even d_model"):
        shift_matrix(1, 5)


BAD_ARGUMENTS = [
    ({"seq_len": -1}, ValueError, "seq_len must be an integer >= 0, got -1"),
    ({"seq_len": 2.0}, TypeError, "seq_len must be an integer, got float 2.0"),
    ({"seq_len": True}, TypeError, "seq_len must be an integer, got bool"),
    ({"d_model": 0}, ValueError, "d_model must be an integer >= 1, got 0"),
    ({"d_model": "8"}, TypeError, "d_model must be an integer, got str '8'"),
    ({"base": 0}, ValueError, "base must be a finite number > 0, got 0.0"),
    ({"base": -2.0}, ValueError, "base must be a finite number > 0"),
    ({"base": float("inf")}, ValueError, "base must be a finite number > 0, got inf"),
    ({"base": float("nan")}, ValueError, "base must be a finite number > 0, got nan"),
    ({"base": "10000"}, TypeError, "base must be a real number, got str"),
]


@pytest.mark.parametrize("encode", IMPLEMENTATIONS)
@pytest.mark.parametrize("change, error, message", BAD_ARGUMENTS)
def test_bad_arguments(encode, change, error, message):
    kwargs = {"seq_len": 4, "d_model": 8, "base": 10000.0} | change
    with pytest.raises(error, match=message.replace("(", r"\(").replace("+", r"\+")):
        encode(kwargs.pop("seq_len"), kwargs.pop("d_model"), **kwargs)


@pytest.mark.parametrize("change, error, message", [
    ({"offset": -3}, ValueError, "offset must be an integer >= 0, got -3"),
    ({"offset": 1.5}, TypeError, "offset must be an integer, got float 1.5"),
    ({"dtype": np.int32}, TypeError, "dtype must be a floating-point dtype"),
    ({"dtype": "not a dtype"}, TypeError, "dtype must be a NumPy floating-point dtype"),
])
def test_bad_keyword_arguments(change, error, message):
    with pytest.raises(error, match=message):
        positional_encoding(4, 8, **change)


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
