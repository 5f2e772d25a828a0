"""posenc._validate: each check's accepted values, boundaries and exact messages, and
keyword_max_len on every module and layer of the package that takes a max_len."""

import copy
import importlib
import importlib.util
import inspect
import math
import pickle
import pkgutil
import re

import numpy as np
import pytest

import posenc
from posenc._validate import (
    MAX_BYTES,
    MAX_POSITION,
    check_base,
    check_dropout,
    check_float_dtype,
    check_int,
    check_position_range,
    check_real,
    check_size,
    check_width,
    check_window,
    keyword_max_len,
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


@pytest.mark.parametrize("value, bounds, expected", [
    (8, {"above": 0.0}, 8.0), (np.float32(0.5), {"above": 0.0}, 0.5), (1, {"at_least": 1.0}, 1.0),
    (-3, {}, -3.0), (np.int64(2), {"above": 1.0, "at_least": 2.0}, 2.0),
])
def test_check_real_accepts(value, bounds, expected):
    result = check_real("x", value, **bounds)
    assert result == expected and type(result) is float


@pytest.mark.parametrize("value, bounds, error, message", [
    ("8", {}, TypeError, "x must be a real number, got str '8'"),
    (True, {}, TypeError, "x must be a real number, got bool True"),
    (1j, {}, TypeError, "x must be a real number, got complex 1j"),
    (math.nan, {}, ValueError, "x must be finite, got nan"),
    (-math.inf, {}, ValueError, "x must be finite, got -inf"),
    (10**400, {}, ValueError, "x must be finite, got inf"),
    (0, {"above": 0.0}, ValueError, "x must be > 0, got 0.0"),
    (0.5, {"at_least": 1.0}, ValueError, "x must be >= 1, got 0.5"),
])
def test_check_real_rejects(value, bounds, error, message):
    with pytest.raises(error, match=exactly(message)):
        check_real("x", value, **bounds)


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


# --- keyword_max_len ------------------------------------------------------------------------------


class Table:
    """A stand-in module: ``Table(width, *, max_len=10, base=2.0)``."""

    @keyword_max_len
    def __init__(self, width, *, max_len=10, base=2.0):
        """Docstring kept."""
        self.width, self.max_len, self.base = width, max_len, base


class OldFirst:
    """A stand-in whose max_len came first: ``OldFirst(max_len, width)`` before."""

    @keyword_max_len(first=True)
    def __init__(self, width, *, max_len):
        self.width, self.max_len = width, max_len


def test_keyword_max_len_keeps_the_signature_and_the_calls():
    assert str(inspect.signature(Table)) == "(width, *, max_len=10, base=2.0)"
    assert inspect.getfullargspec(Table.__init__).kwonlyargs == ["max_len", "base"]
    assert Table.__init__.__doc__ == "Docstring kept." and Table.__init__.__name__ == "__init__"
    table = Table(4, max_len=3, base=5.0)
    assert (table.width, table.max_len, table.base) == (4, 3, 5.0)
    assert vars(pickle.loads(pickle.dumps(table))) == vars(copy.deepcopy(table)) == vars(table)


@pytest.mark.parametrize("call, message", [
    (lambda: Table(4, 3), "Table takes max_len as a keyword argument: write Table(4, max_len=3), "
     "not Table(4, 3)"),
    (lambda: Table(4, 3, base=5.0), "Table takes max_len as a keyword argument: write "
     "Table(4, max_len=3, base=5.0), not Table(4, 3, base=5.0)"),
    (lambda: OldFirst(512, 64), "OldFirst takes max_len as a keyword argument: write "
     "OldFirst(64, max_len=512), not OldFirst(512, 64)"),
    (lambda: Table(4, 3, 5.0), "Table takes 1 positional argument (width) and max_len and the "
     "others by keyword, got 3: Table(4, 3, 5.0)"),
    (lambda: Table(4, 3, max_len=3), "Table takes 1 positional argument (width) and max_len and "
     "the others by keyword, got 2: Table(4, 3, max_len=3)"),
])
def test_keyword_max_len_says_what_to_write(call, message):
    with pytest.raises(TypeError, match=exactly(message)):
        call()


def test_keyword_max_len_refuses_an_init_without_a_keyword_only_max_len():
    with pytest.raises(TypeError, match=re.escape(
            "keyword_max_len decorates an __init__ with a keyword-only max_len and no *args, got ")):
        keyword_max_len(lambda self, width, max_len=10: None)


#: Frameworks an optional module of the package imports; not installed in CI's NumPy-only job.
FRAMEWORKS = {"torch", "keras", "tensorflow", "jax", "matplotlib"}
#: The book's comparison forms: the foils re-create other sources' modules with their
#: signatures, and the reference forms keep their code minimal, without argument checks.
BOOK_FORMS = {"posenc.foils", "posenc.reference"}


def _package_modules(package=posenc):
    """Every module of the package (subpackages included) whose framework is installed."""
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name in BOOK_FORMS:
            continue
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as error:
            if (error.name or "").split(".")[0] in FRAMEWORKS:
                continue
            raise
        yield module
        if info.ispkg:
            yield from _package_modules(module)


def _classes_with_max_len():
    """{qualified name: class} of the package's public classes whose __init__ takes max_len."""
    found = {}
    for module in _package_modules():
        for name, cls in vars(module).items():
            if (isinstance(cls, type) and not name.startswith("_")
                    and cls.__module__.split(".")[0] == "posenc"
                    and "max_len" in inspect.signature(cls.__init__).parameters):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


WITH_MAX_LEN = _classes_with_max_len()


@pytest.mark.parametrize("name", sorted(WITH_MAX_LEN))
def test_every_module_and_layer_takes_max_len_by_keyword(name):
    """max_len is keyword-only, and one positional argument too many (a positional max_len, as
    the old signatures took it) is a TypeError that gives the keyword call with its values."""
    cls = WITH_MAX_LEN[name]
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert {p.name: p.kind for p in parameters}["max_len"] is inspect.Parameter.KEYWORD_ONLY
    positional = [p for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    args = [8] * len(positional) + [16]  # two sizes for a module of one positional argument
    given = ", ".join(map(str, args))
    with pytest.raises(TypeError) as error:
        cls(*args)
    head = f"{cls.__name__} takes max_len as a keyword argument: write {cls.__name__}("
    message = str(error.value)
    assert message.startswith(head) and message.endswith(f"), not {cls.__name__}({given})")
    wanted = message[len(head):message.index(f"), not {cls.__name__}(")].split(", ")
    assert sorted(w.removeprefix("max_len=") for w in wanted) == sorted(given.split(", "))
    assert sum(w.startswith("max_len=") for w in wanted) == 1


def test_the_search_finds_the_frameworks_modules():
    """The search cannot pass by finding nothing: with PyTorch and Keras installed, it finds
    the sinusoidal module and layer of each (the NumPy-only job has neither)."""
    expected = {"posenc.pytorch.sinusoidal.PositionalEncoding": "torch",
                "posenc.pytorch.learned.LearnedPositionalEmbedding": "torch",
                "posenc.pytorch.rotary.RotaryEmbedding": "torch",
                "posenc.pytorch.alibi.ALiBi": "torch",
                "posenc.tensorflow.sinusoidal.PositionalEncoding": "keras"}
    installed = {name for name, framework in expected.items()
                 if importlib.util.find_spec(framework) is not None}
    if not installed:
        pytest.skip("neither PyTorch nor Keras is installed")
    assert installed <= set(WITH_MAX_LEN)
