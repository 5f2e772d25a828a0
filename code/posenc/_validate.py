"""Argument checks shared by the NumPy, PyTorch and Keras implementations.

Each check either returns the value in a canonical Python type or raises a
``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
whose message names the argument, the value received and what was expected.
:func:`keyword_max_len` makes the constructors of the modules and layers say how to pass
``max_len``, which they take by keyword only.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import sys

import numpy as np

#: Every integer up to ``2**53`` is exact in float64; past it, a position would be
#: rounded to a neighbouring one before its angle is even computed.
MAX_POSITION = 2**53

#: Largest number of bytes one array can have (NumPy refuses larger ones outright).
MAX_BYTES = sys.maxsize


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


def check_head_dim(name: str, value) -> int:
    """Return ``value`` as an ``int`` after checking it is even and >= 2 (a number of pairs).

    Raises:
        TypeError: ``value`` is not an integer.
        ValueError: ``value`` is odd or smaller than 2; rotations act on pairs of
            coordinates, so a vector of odd width has one coordinate with no partner.
    """
    value = check_int(name, value, minimum=None)
    if value < 2 or value % 2:
        raise ValueError(
            f"{name} must be even and >= 2 (RoPE rotates pairs of coordinates), got {value}"
        )
    return value


def check_base(base) -> float:
    """Return ``base`` as a Python ``float`` after checking it is finite and > 1.

    Why > 1: the angular frequencies are ``base ** (-2i / d_model)``. For a base above
    1 they fall from 1 towards ``1 / base``, so every one is finite and > 0 and the
    wavelengths grow from ``2 * pi`` to ``2 * pi * base``, as in the paper. A base of 1
    gives every column the same frequency (pairs repeat, nothing tells positions apart
    beyond ``2 * pi``), and a base below 1 makes the frequencies grow instead of shrink
    (a tiny one overflows them to infinity and the table to NaN): both are refused.

    Raises:
        TypeError: ``base`` is not a real number.
        ValueError: ``base`` is NaN, infinite (or too large for a float), or <= 1.
    """
    if isinstance(base, (bool, np.bool_)) or not isinstance(base, numbers.Real):
        raise TypeError(
            f"base must be a real number, got {type(base).__name__} {base!r}"
        )
    try:
        value = float(base)
    except OverflowError:  # an int too large for a float
        value = math.inf
    if not math.isfinite(value) or value <= 1.0:
        raise ValueError(f"base must be a finite number > 1, got {value!r}")
    return value


def check_real(name: str, value, *, above: float | None = None,
               at_least: float | None = None) -> float:
    """Return ``value`` as a finite Python ``float`` after checking it against a bound.

    ``above`` asks for ``value > above``, ``at_least`` for ``value >= at_least``; ``None``
    (the default of both) checks no bound.

    Raises:
        TypeError: ``value`` is not a real number (``None``, a string, a bool, a complex).
        ValueError: ``value`` is NaN or infinite (or an integer too large for a float), or
            outside the bound.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number!r}")
    if above is not None and not number > above:
        raise ValueError(f"{name} must be > {above:g}, got {number!r}")
    if at_least is not None and not number >= at_least:
        raise ValueError(f"{name} must be >= {at_least:g}, got {number!r}")
    return number


def check_dropout(rate) -> float:
    """Return the dropout probability ``rate`` as a Python ``float`` in ``[0, 1]``.

    Raises:
        TypeError: ``rate`` is not a real number (``None``, a string, a bool, ...).
        ValueError: ``rate`` is NaN or outside ``[0, 1]``.
    """
    if isinstance(rate, (bool, np.bool_)) or not isinstance(rate, numbers.Real):
        raise TypeError(
            f"dropout must be a real number in [0, 1], got {type(rate).__name__} {rate!r}"
        )
    value = float(rate)
    if not 0.0 <= value <= 1.0:  # NaN fails both comparisons
        raise ValueError(f"dropout must be a real number in [0, 1], got {value!r}")
    return value


def check_window(offset: int, seq_len: int) -> None:
    """Check that positions ``offset .. offset + seq_len - 1`` are all exact in float64.

    Raises:
        ValueError: ``offset + seq_len > 2**53``; the message names ``offset``.
    """
    if offset + seq_len > MAX_POSITION:
        raise ValueError(
            f"offset + seq_len must be <= 2**53 = {MAX_POSITION} (float64 holds every "
            f"position up to it exactly), got offset={offset}, seq_len={seq_len}"
        )


def check_position_range(low: int, high: int) -> None:
    """Check the smallest and largest of explicit positions: 0 <= low and high < 2**53.

    Raises:
        ValueError: a negative position, or one that float64 cannot hold exactly.
    """
    if low < 0:
        raise ValueError(f"positions must be >= 0, got a minimum of {low}")
    if high >= MAX_POSITION:
        raise ValueError(
            f"positions must be < 2**53 = {MAX_POSITION} (float64 holds every "
            f"position below it exactly), got a maximum of {high}"
        )


def check_size(name: str, rows: int, columns: int) -> None:
    """Check that a float64 array of ``rows x columns`` entries can exist at all.

    Raises:
        ValueError: it would need more bytes than an array can have; the message
            names the argument ``name`` (the one that made it too large).
    """
    if rows * columns * 8 > MAX_BYTES:
        raise ValueError(
            f"{name} is too large: a ({rows}, {columns}) float64 table would need "
            f"{rows * columns * 8} bytes, more than an array can hold ({MAX_BYTES})"
        )


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


def keyword_max_len(init=None, *, first: bool = False):
    """Decorate an ``__init__`` whose ``max_len`` is keyword-only: a positional one is refused
    with a message that says what to write.

    For ``def __init__(self, d_model, *, max_len=5000, ...)``. A call with exactly one positional
    argument too many, as the old signatures allowed (``PositionalEncoding(64, 128)``), raises
    a ``TypeError`` that names the class and gives the call to write with the caller's values:
    "PositionalEncoding takes max_len as a keyword argument: write PositionalEncoding(64,
    max_len=128), not PositionalEncoding(64, 128)", where Python alone would say "takes 2
    positional arguments but 3 were given". Every other call goes to ``__init__`` unchanged.

    The wrapper keeps the name, the docstring and ``__wrapped__`` (:func:`functools.wraps`) and
    carries the real signature as ``__signature__``, so :func:`inspect.signature` and
    :func:`inspect.getfullargspec` (which Keras reads to build a layer's default config) show
    ``max_len`` as keyword-only. Only construction is wrapped: ``forward`` and ``call``,
    tracing and export, pickling and ``copy.deepcopy`` (which do not call ``__init__``) and
    Keras ``from_config`` (keywords only) are unaffected.

    Args:
        init: the ``__init__`` function, when used as ``@keyword_max_len``.
        first: keyword only; ``True`` if ``max_len`` came first in the old signature
            (``LearnedPositionalEmbedding(max_len, d_model)``): the caller's first value is
            then read as ``max_len`` in the suggested call.

    Returns:
        The wrapped ``__init__``; without ``init``, a decorator (``@keyword_max_len(first=True)``).

    Raises:
        TypeError: at decoration, if ``init`` has no keyword-only parameter ``max_len`` or takes
            ``*args``; at construction, for a positional ``max_len`` (the message above) or
            more positional arguments than that (the message lists what is positional).
    """
    if init is None:
        return functools.partial(keyword_max_len, first=first)
    signature = inspect.signature(init)
    parameters = list(signature.parameters.values())[1:]  # without self
    if (signature.parameters.get("max_len") is None
            or signature.parameters["max_len"].kind is not inspect.Parameter.KEYWORD_ONLY
            or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)):
        raise TypeError(f"keyword_max_len decorates an __init__ with a keyword-only max_len and "
                        f"no *args, got {init.__qualname__}{signature}")
    positional = [p.name for p in parameters if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                           inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    name = init.__qualname__.rsplit(".", 2)[-2]  # the class

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        if len(args) > len(positional):
            raise TypeError(_positional_max_len_message(name, positional, args, kwargs, first))
        return init(self, *args, **kwargs)

    wrapper.__signature__ = signature
    return wrapper


def _positional_max_len_message(name: str, positional: list, args: tuple, kwargs: dict,
                                first: bool) -> str:
    """Why a call with ``args`` is refused, and the call to write instead when there is one."""
    given = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    call = f"{name}({', '.join(given)})"
    if len(args) == len(positional) + 1 and "max_len" not in kwargs:
        max_len, others = (args[0], args[1:]) if first else (args[-1], args[:-1])
        wanted = ([repr(a) for a in others] + [f"max_len={max_len!r}"]
                  + [f"{k}={v!r}" for k, v in kwargs.items()])
        return (f"{name} takes max_len as a keyword argument: write "
                f"{name}({', '.join(wanted)}), not {call}")
    takes = f"{len(positional)} positional argument" + ("" if len(positional) == 1 else "s")
    return (f"{name} takes {takes}" + (f" ({', '.join(positional)})" if positional else "")
            + f" and max_len and the others by keyword, got {len(args)}: {call}")
