"""posenc.tensorflow under each other backend of Keras 3, each in a process of its own.

Keras fixes its backend when it is first imported, so this pytest process (the default
backend, TensorFlow) cannot switch: each test below reruns tests/test_tensorflow.py, whose
tests not marked ``tf_only`` are backend-independent, in a fresh Python with
``KERAS_BACKEND`` set, and fails with that run's output when it fails.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def run_python(backend, *args):
    """Run ``python *args`` from the repository's root with ``KERAS_BACKEND=backend``."""
    env = {**os.environ, "KERAS_BACKEND": backend}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)


@pytest.mark.parametrize("backend, package", [("jax", "jax"), ("torch", "torch")])
def test_keras_tests_pass_under_backend(backend, package):
    pytest.importorskip(package)
    result = run_python(backend, "-m", "pytest", str(TESTS / "test_tensorflow.py"), "-q",
                        "--no-header", "-rfEs")
    if result.returncode != 0:
        pytest.fail(f"tests/test_tensorflow.py under KERAS_BACKEND={backend} failed "
                    f"(exit {result.returncode}):\n{result.stdout[-20000:]}\n{result.stderr[-5000:]}",
                    pytrace=False)
    summary = result.stdout.splitlines()[-1]
    print(f"KERAS_BACKEND={backend}: {summary}")  # shown by pytest -rP
    assert " passed" in summary  # the run did collect the tests

