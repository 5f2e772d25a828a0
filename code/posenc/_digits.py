"""Sines and cosines of any integer position inside a graph, from small float64 tables.

The framework modules keep a table of ``max_len`` rows; inside ``torch.compile``,
``torch.export``, ONNX, a ``tf.function``, a SavedModel, TensorFlow Lite or ``jax.jit`` a
position past it is computed in the graph, with integer and floating-point tensor
operations only, none of them a ``sin`` or ``cos`` of a large angle:

- write the position in base ``DIGIT = 256``: ``pos = sum_k d_k * 256**k`` with digits
  ``0 <= d_k < 256`` (integer ``//`` and ``%``);
- look up, for every digit, ``sin`` and ``cos`` of ``d_k * 256**k * w`` in a table of
  ``n_digits * 256`` rows computed on the host in float64 and rounded once;
- combine them with the angle-addition identities, the two-part angle of
  :func:`posenc.positional_encoding` applied once per pair:
  ``sin(a + b) = sin a cos b + cos a sin b``, ``cos(a + b) = cos a cos b - sin a sin b``,
  pairs of digits first, then pairs of pairs (``log2(n_digits)`` rounds, each one set of
  tensor operations for all the digits, so a graph stays small).

Accuracy (float32): each looked-up value is off by at most half an ulp (``2**-25``) and each
of the ``log2(n_digits)`` rounds of combinations adds a few roundings. The float64 products
``d_k * 256**k * w`` of the table, like the eager ``pos * w``, carry the float64 error of
:func:`posenc.positional_encoding` (up to about ``pos * 2**-53`` each). So a row computed
in a graph is within ``GRAPH_TOLERANCE + pos * 2**-52`` of the eager (float64) row, with
``GRAPH_TOLERANCE = 2**-20`` (about 1e-6): measured, at most ``0.2 * 2**-20`` above
``pos * 2**-52`` for widths 8 to 512 and positions up to ``2**53`` (the project's tests).
Positions below 256 are exact lookups. In float64 the combinations add at most ``2**-50``.

The combination is written with Python operators (``%``, ``//``, ``*``, ``+``, ``-``,
indexing and slicing), two small integer tensors of :func:`digit_steps` and a
``take(table, index)`` function given by the caller, so the same code builds the graph of
PyTorch, TensorFlow and JAX tensors.
"""

from __future__ import annotations

import numpy as np

#: Base in which positions are written: each digit indexes a table of this many rows.
DIGIT = 256

#: A row computed in a float32 graph is within ``GRAPH_TOLERANCE + pos * 2**-52`` of the
#: eager float64 row (checked by the tests of the modules at positions up to 2**40).
GRAPH_TOLERANCE = 2.0**-20


def digit_count(int_bits: int) -> int:
    """How many base-256 digits cover every position of a signed integer of ``int_bits`` bits
    (positions stay below ``2**53`` in any case), rounded up to a power of two so that the
    digits combine in pairs: 4 for int32, 8 for int64 (whose eighth digit is always 0)."""
    bits = min(int_bits - 1, 53)
    needed = -(-bits // 8)
    return 1 << (needed - 1).bit_length()


def digit_table(frequencies: np.ndarray, n_digits: int) -> np.ndarray:
    """The float64 table of every digit's sine and cosine.

    Args:
        frequencies: float64 angular frequencies ``w``, shape ``(n,)``.
        n_digits: number of base-256 digits, an ``int >= 1``.

    Returns:
        ``numpy.ndarray`` of shape ``(n_digits * 256, 2, n)``: row ``k * 256 + d`` holds
        ``sin`` (``[.., 0, :]``) and ``cos`` (``[.., 1, :]``) of ``d * 256**k * w``.
    """
    multiples = (np.arange(DIGIT, dtype=np.float64)[None, :]
                 * float(DIGIT) ** np.arange(n_digits, dtype=np.float64)[:, None]).reshape(-1)
    angles = multiples[:, None] * frequencies[None, :]  # each product exact but for one rounding
    return np.stack((np.sin(angles), np.cos(angles)), axis=1)


def digit_steps(n_digits: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The integer constants with which :func:`compose` finds each digit's row.

    Args:
        n_digits: number of base-256 digits, a power of two (:func:`digit_count`).
        dtype: the NumPy integer dtype of the positions (int32 or int64).

    Returns:
        ``(powers, starts)``, two arrays of shape ``(n_digits,)`` and ``dtype``: ``256**k``
        and ``256 * k``, so that digit ``k`` of ``pos`` is ``pos // powers[k] % 256`` and its
        row of the :func:`digit_table` is that digit plus ``starts[k]``.
    """
    k = np.arange(n_digits)
    return (DIGIT ** k).astype(dtype), (DIGIT * k).astype(dtype)


def compose(positions, table, n_digits: int, steps, take):
    """Sines and cosines of ``positions * w`` from a :func:`digit_table`, in the table's dtype.

    Args:
        positions: integer tensor of any shape, entries in ``[0, 256**n_digits)``.
        table: the digit table as a tensor of the framework, shape ``(m * 256, 2, n)`` with
            ``m >= n_digits``.
        n_digits: number of digits, a power of two (a Python int: the rounds of the
            combination are unrolled in the graph).
        steps: ``digit_steps(n_digits, ...)`` as two tensors of the framework, in the dtype
            of ``positions``.
        take: ``take(table, index)``, the rows of ``table`` at an integer tensor ``index``
            (``index.shape + (2, n)``).

    Returns:
        ``(sin, cos)``, two tensors of shape ``positions.shape + (n,)``.
    """
    powers, starts = steps
    rows = take(table, positions[..., None] // powers % DIGIT + starts)  # (..., n_digits, 2, n)
    sin, cos = rows[..., 0, :], rows[..., 1, :]  # (..., n_digits, n) each
    for _ in range(n_digits.bit_length() - 1):  # add the angles of digits 2j and 2j + 1, all j
        s0, s1, c0, c1 = sin[..., 0::2, :], sin[..., 1::2, :], cos[..., 0::2, :], cos[..., 1::2, :]
        sin, cos = s0 * c1 + c0 * s1, c0 * c1 - s0 * s1
    return sin[..., 0, :], cos[..., 0, :]
