"""Argument checks shared by the NumPy, PyTorch and Keras implementations.

Each check either returns the value in a canonical Python type or raises a
``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
whose message names the argument, the value received and what was expected.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def check_int(name: str, value, *, minimum: int | None = 0) -> int:
    """Return ``value`` as a Python ``int`` after checking it is an integer >= ``minimum``.

    ``minimum=None`` accepts any integer, negative ones included.

    Booleans are rejected even though Python treats them as integers: ``True``
    as a sequence length is always a bug in the caller.

    Raises:
        TypeError: ``value`` is not an integer (a float such as ``4.0`` included).
        ValueError: ``value`` is smaller than ``minimum``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer, got {type(value).__name__} {value!r}"
        )
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def check_base(base) -> float:
    """Return ``base`` as a Python ``float`` after checking it is finite and > 0.

    Raises:
        TypeError: ``base`` is not a real number.
        ValueError: ``base`` is zero, negative, infinite or NaN.
    """
    if isinstance(base, (bool, np.bool_)) or not isinstance(base, numbers.Real):
        raise TypeError(
            f"base must be a real number, got {type(base).__name__} {base!r}"
        )
    base = float(base)
    if not math.isfinite(base) or base <= 0.0:
        raise ValueError(f"base must be a finite number > 0, got {base!r}")
    return base


def check_float_dtype(dtype) -> np.dtype:
    """Return ``numpy.dtype(dtype)`` after checking it is a floating-point type.

    Raises:
        TypeError: ``dtype`` is not a NumPy dtype, or not a floating-point one.
    """
    try:
        resolved = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be a NumPy floating-point dtype, got {dtype!r}") from exc
    if resolved.kind != "f":
        raise TypeError(
            f"dtype must be a floating-point dtype such as numpy.float32, got {resolved}"
        )
    return resolved


def check_width(d_model: int, last_dim: int) -> None:
    """Check that an input's last dimension equals the encoding width ``d_model``.

    Raises:
        ValueError: the two widths differ; the message names both.
    """
    if last_dim != d_model:
        raise ValueError(
            f"input's last dimension is {last_dim} but this positional encoding "
            f"has d_model={d_model}; they must be equal"
        )
