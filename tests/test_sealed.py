"""grading/sealed.py's data format: what crosses between a graded notebook's kernel and the
grader comes back as the value it was (type, dtype and shape included), and anything else is
refused or kept as a handle, and a stand-in of an object of the kernel crosses back as its handle
alone (what a test that sends inputs only passes to the student's function). The grading itself
is tested through grading/grade.py (tests/test_grade.py, tests/test_sandbox.py,
tests/test_assignments.py)."""

import math
from pathlib import Path

import numpy as np
import pytest

import tool_scripts

ROOT = Path(__file__).resolve().parents[1]
sealed = tool_scripts.load("sealed", tool_scripts.GRADING)


def _round_trip(value):
    import json

    return sealed.decode(json.loads(json.dumps(sealed.encode(value))))


@pytest.mark.parametrize("value", [
    np.float64(0.25), np.float32(0.1), np.int64(-3), np.int8(7), np.bool_(True), np.str_("rope"),
    np.array(2.5), np.array(3, dtype=np.int32), np.arange(6, dtype=np.float32).reshape(2, 3),
], ids=repr)
def test_numpy_values_cross_as_they_are(value):
    """NumPy scalars (numpy.float64 is a float subclass, as np.mean returns) and 0-d arrays:
    the same type, dtype, shape and value."""
    back = _round_trip(value)
    assert type(back) is type(value)
    assert back.dtype == value.dtype and np.shape(back) == np.shape(value)
    assert np.array_equal(back, value)


@pytest.mark.parametrize("value", [0.25, -0.0, math.inf, 1e-300, 7, True, None, "text"], ids=repr)
def test_python_values_cross_as_they_are(value):
    back = _round_trip(value)
    assert type(back) is type(value) and back == value
    if isinstance(value, float):
        assert math.copysign(1.0, back) == math.copysign(1.0, value)


def test_nan_crosses():
    assert math.isnan(_round_trip(float("nan")))


def test_containers_keep_their_kind_and_numpy_items():
    value = {"rope": {"train_acc": np.float64(1.0), "test_acc": 0.5}, (1, 2): [np.float32(2.0), (3,)]}
    back = _round_trip(value)
    assert back == value
    assert type(back["rope"]["train_acc"]) is np.float64
    assert type(back[(1, 2)][0]) is np.float32 and type(back[(1, 2)][1]) is tuple


def test_other_objects_are_refused_without_a_keeper():
    with pytest.raises(TypeError, match="only data can cross"):
        sealed.encode(object())
    with pytest.raises(TypeError, match="only data can cross"):
        sealed.encode(np.array([object()]))


def test_a_stand_in_crosses_back_as_its_handle_only():
    """A test passes an object the kernel made (a stand-in, e.g. a class a helper returned) to the
    student's function: the call carries the object's number in the kernel, nothing the test holds."""
    stand_in = sealed.Remote(None, 7, "type")
    assert sealed.encode([[stand_in, 3], {}], keep=sealed._handle_of) == {
        "list": [{"list": [{"handle": 7, "type": "Remote"}, 3]}, {"dict": []}]}
    with pytest.raises(TypeError, match="only data can be sent to the notebook"):
        sealed.encode([object()], keep=sealed._handle_of)
