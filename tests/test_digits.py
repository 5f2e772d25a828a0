"""Tests of posenc._digits: rows of far positions from base-256 digit tables, checked with
NumPy arrays (the modules' own tests check the same code on PyTorch, Keras and TFLite)."""

import numpy as np
import pytest

from posenc._digits import DIGIT, GRAPH_TOLERANCE, compose, digit_count, digit_steps, digit_table
from posenc.encoding import angular_frequencies, encoding_at


def composed_rows(positions, width, n_digits, table_dtype=np.float32, step_dtype=np.int64):
    """Rows (sines in even columns, cosines in odd ones) as a graph computes them."""
    table = digit_table(angular_frequencies(width)[0::2], n_digits).astype(table_dtype)
    steps = digit_steps(n_digits, step_dtype)
    sin, cos = compose(positions.astype(step_dtype), table, n_digits, steps,
                       lambda table, index: table[index])
    rows = np.empty(positions.shape + (width,), dtype=table_dtype)
    rows[..., 0::2], rows[..., 1::2] = sin, cos
    return rows


def test_digit_counts_cover_the_integers_in_pairs():
    assert digit_count(32) == 4 and digit_count(64) == 8
    for bits in (32, 64):
        n = digit_count(bits)
        assert n & (n - 1) == 0  # a power of two: the digits combine in pairs
        assert DIGIT**n >= 2 ** min(bits - 1, 53)


def test_steps_find_each_digit():
    powers, starts = digit_steps(8, np.int64)
    assert powers.dtype == starts.dtype == np.int64
    position = np.int64(0x0102030405060708)
    assert list(position // powers % DIGIT + starts) == [8 + 0, 7 + 256, 6 + 512, 5 + 768,
                                                        4 + 1024, 3 + 1280, 2 + 1536, 1 + 1792]


def test_positions_below_256_are_the_rounded_eager_rows():
    positions = np.arange(DIGIT)
    expected = encoding_at(positions, 16, 10000.0).astype(np.float32)
    np.testing.assert_array_equal(composed_rows(positions, 16, 8), expected)


@pytest.mark.parametrize("width", [8, 16, 64, 128, 512])
def test_float32_rows_are_within_the_documented_bound(width):
    """Within GRAPH_TOLERANCE + pos * 2**-52 of the float64 row, and (the module docstring's
    measured figure) at most 0.2 * 2**-20 above pos * 2**-52."""
    rng = np.random.default_rng(width)
    positions = np.concatenate([np.arange(4096), rng.integers(0, 2**53, 20_000),
                                2 ** np.arange(53), 2 ** np.arange(1, 54) - 1])
    error = np.abs(composed_rows(positions, width, 8).astype(np.float64)
                   - encoding_at(positions, width, 10000.0))
    excess = (error - positions[:, None] * 2.0**-52).max()
    assert excess <= 0.2 * 2.0**-20 < GRAPH_TOLERANCE


def test_int32_positions_use_four_digits():
    positions = np.array([0, 255, 256, 65_535, 2**24 + 7, 2**31 - 1])
    error = np.abs(composed_rows(positions, 16, 4, step_dtype=np.int32).astype(np.float64)
                   - encoding_at(positions, 16, 10000.0))
    assert (error <= GRAPH_TOLERANCE + positions[:, None] * 2.0**-52).all()


def test_float64_tables_add_about_2_to_the_minus_50():
    positions = np.random.default_rng(1).integers(0, 2**40, 5_000)
    error = np.abs(composed_rows(positions, 64, 8, table_dtype=np.float64)
                   - encoding_at(positions, 64, 10000.0))
    assert (error - positions[:, None] * 2.0**-52).max() <= 2.0**-50
