"""posenc.tensorflow under each other backend of Keras 3, each in a process of its own.

Keras fixes its backend when it is first imported, so this pytest process (the default
backend, TensorFlow) cannot switch: each test below reruns the Keras test modules
(:data:`MODULES`: the layers of posenc.tensorflow, whose tests not marked to run under
TensorFlow only are backend-independent) in one fresh Python with ``KERAS_BACKEND`` set, and
fails with that run's output when it fails. Both runs start
together (the first test starts them), so on two cores they take the time of the longer one.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
BACKENDS = {"jax": "jax", "torch": "torch"}  # KERAS_BACKEND: the package it needs
#: The test modules of posenc.tensorflow, one per module of the package.
MODULES = ["test_tensorflow.py", "test_tensorflow_shipping.py", "test_tensorflow_rotary.py",
           "test_tensorflow_alibi.py"]


def test_every_keras_test_module_is_rerun():
    assert sorted(MODULES) == sorted(p.name for p in TESTS.glob("test_tensorflow*.py"))


@pytest.fixture(scope="module")
def runs():
    """One pytest process per installed backend, all started at once: {backend: Popen}."""
    started = {}
    for backend, package in BACKENDS.items():
        if importlib.util.find_spec(package) is None:
            continue
        command = [sys.executable, "-m", "pytest", *(str(TESTS / m) for m in MODULES), "-q",
                   "--no-header", "-rfEs"]
        started[backend] = subprocess.Popen(
            command, cwd=ROOT, env={**os.environ, "KERAS_BACKEND": backend},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield started
    for process in started.values():  # only if a test stopped before reading its run
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_keras_tests_pass_under_backend(backend, runs):
    if backend not in runs:
        pytest.skip(f"{BACKENDS[backend]} is not installed")
    stdout, stderr = runs[backend].communicate(timeout=900)
    if runs[backend].returncode != 0:
        pytest.fail(f"{', '.join(MODULES)} under KERAS_BACKEND={backend} failed "
                    f"(exit {runs[backend].returncode}):\n{stdout[-20000:]}\n{stderr[-5000:]}",
                    pytrace=False)
    summary = stdout.splitlines()[-1]
    print(f"KERAS_BACKEND={backend}: {summary}")  # shown by pytest -rP
    assert " passed" in summary  # the run did collect the tests
