"""posenc._validate: each check's accepted values, boundaries and exact messages."""

import math

import numpy as np
import pytest

from posenc._validate import (
    MAX_BYTES,
    MAX_POSITION,
    check_base,
    check_dropout,
    check_float_dtype,
    check_int,
    check_position_range,
    check_size,
    check_width,
    check_window,
)

from reference import exactly


@pytest.mark.parametrize("value, minimum, expected", [
    (0, 0, 0), (5, 1, 5), (np.int64(7), 0, 7), (-3, None, -3), (np.uint8(3), 3, 3),
])
def test_check_int_accepts(value, minimum, expected):
    result = check_int("n", value, minimum=minimum)
    assert result == expected and type(result) is int


@pytest.mark.parametrize("value, minimum, error, message", [
    (-1, 0, ValueError, "n must be an integer >= 0, got -1"),
    (0, 1, ValueError, "n must be an integer >= 1, got 0"),
    (2.0, 0, TypeError, "n must be an integer, got float 2.0"),
    (True, 0, TypeError, "n must be an integer, got bool True"),
    (np.bool_(False), None, TypeError, "n must be an integer, got bool np.False_"),
    ("3", 0, TypeError, "n must be an integer, got str '3'"),
])
def test_check_int_rejects(value, minimum, error, message):
    with pytest.raises(error, match=exactly(message)):
        check_int("n", value, minimum=minimum)


@pytest.mark.parametrize("value", [10000, 1.0000001, 2.5, np.float32(100), 10**300])
def test_check_base_accepts(value):
    assert check_base(value) == float(value) and type(check_base(value)) is float


@pytest.mark.parametrize("value, error, message", [
    (1.0, ValueError, "base must be a finite number > 1, got 1.0"),
    (1, ValueError, "base must be a finite number > 1, got 1.0"),
    (0.5, ValueError, "base must be a finite number > 1, got 0.5"),
    (1e-300, ValueError, "base must be a finite number > 1, got 1e-300"),
    (0, ValueError, "base must be a finite number > 1, got 0.0"),
    (-2.0, ValueError, "base must be a finite number > 1, got -2.0"),
    (math.inf, ValueError, "base must be a finite number > 1, got inf"),
    (math.nan, ValueError, "base must be a finite number > 1, got nan"),
    (10**400, ValueError, "base must be a finite number > 1, got inf"),
    ("10000", TypeError, "base must be a real number, got str '10000'"),
    (None, TypeError, "base must be a real number, got NoneType None"),
    (True, TypeError, "base must be a real number, got bool True"),
])
def test_check_base_rejects(value, error, message):
    with pytest.raises(error, match=exactly(message)):
        check_base(value)


@pytest.mark.parametrize("value", [0, 0.0, 0.1, 1, 1.0, np.float32(0.5)])
def test_check_dropout_accepts(value):
    result = check_dropout(value)
    assert result == float(value) and type(result) is float


@pytest.mark.parametrize("value, error, message", [
    ("0.1", TypeError, "dropout must be a real number in [0, 1], got str '0.1'"),
    (None, TypeError, "dropout must be a real number in [0, 1], got NoneType None"),
    (False, TypeError, "dropout must be a real number in [0, 1], got bool False"),
    (math.nan, ValueError, "dropout must be a real number in [0, 1], got nan"),
    (-0.1, ValueError, "dropout must be a real number in [0, 1], got -0.1"),
    (1.5, ValueError, "dropout must be a real number in [0, 1], got 1.5"),
    (math.inf, ValueError, "dropout must be a real number in [0, 1], got inf"),
])
def test_check_dropout_rejects(value, error, message):
    with pytest.raises(error, match=exactly(message)):
        check_dropout(value)


def test_check_window_boundary():
    assert MAX_POSITION == 2**53
    check_window(2**53 - 5, 5)  # the last position, 2**53 - 1, is exact in float64
    check_window(2**53, 0)
    with pytest.raises(ValueError, match=exactly(
            "offset + seq_len must be <= 2**53 = 9007199254740992 (float64 holds every "
            "position up to it exactly), got offset=9007199254740988, seq_len=5")):
        check_window(2**53 - 4, 5)


def test_check_size_boundary():
    check_size("d_model", 1, MAX_BYTES // 8)
    check_size("seq_len", 0, 10**30)  # an empty table is fine whatever its width
    with pytest.raises(ValueError, match=exactly(
            f"seq_len is too large: a (2, {MAX_BYTES // 8}) float64 table would need "
            f"{2 * (MAX_BYTES // 8) * 8} bytes, more than an array can hold ({MAX_BYTES})")):
        check_size("seq_len", 2, MAX_BYTES // 8)


@pytest.mark.parametrize("dtype, expected", [
    (np.float16, np.float16), ("float32", np.float32), (float, np.float64)])
def test_check_float_dtype_accepts(dtype, expected):
    assert check_float_dtype(dtype) == np.dtype(expected)


@pytest.mark.parametrize("dtype, message", [
    (np.int32, "dtype must be a floating-point dtype such as numpy.float32, got int32"),
    (np.complex64, "dtype must be a floating-point dtype such as numpy.float32, got complex64"),
    ("not a dtype", "dtype must be a NumPy floating-point dtype, got 'not a dtype'"),
])
def test_check_float_dtype_rejects(dtype, message):
    with pytest.raises(TypeError, match=exactly(message)):
        check_float_dtype(dtype)


def test_check_width():
    check_width(8, 8)
    with pytest.raises(ValueError, match=exactly(
            "input's last dimension is 6 but this positional encoding has d_model=8; "
            "they must be equal")):
        check_width(8, 6)


def test_check_position_range():
    check_position_range(0, 2**53 - 1)  # the last position float64 holds exactly
    with pytest.raises(ValueError, match=exactly("positions must be >= 0, got a minimum of -1")):
        check_position_range(-1, 5)
    with pytest.raises(ValueError, match=exactly(
            f"positions must be < 2**53 = {2**53} (float64 holds every position below it "
            f"exactly), got a maximum of {2**53}")):
        check_position_range(0, 2**53)
