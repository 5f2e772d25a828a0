"""The Makefile refuses a Python the course does not support, at once and before pip runs.

A stand-in interpreter (a shell script answering the Makefile's probe with a version and its
path) plays each Python, so that the test needs none installed."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _python(tmp_path, version):
    """A stand-in `python` that reports `version` to the Makefile's probe."""
    path = tmp_path / f"python{version}"
    path.write_text(f'#!/bin/sh\necho "{version} {path}"\n')
    path.chmod(0o755)
    return path


def _make(*arguments, **environment):
    return subprocess.run(["make", "--no-print-directory", "-C", ROOT, *arguments],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **environment})


@pytest.mark.parametrize("version", ["3.9", "3.10", "3.14", "2.7"])
def test_an_unsupported_python_stops_make_book_with_the_message(tmp_path, version):
    python = _python(tmp_path, version)
    run = _make("--dry-run", "book", f"PYTHON={python}")
    assert run.returncode != 0
    assert (f"this course needs Python 3.11–3.13; found {version} at {python}; set PYTHON="
            in run.stderr)
    assert "pip" not in run.stdout  # stopped before any command, pip's included


def test_python_from_the_environment_is_checked_too(tmp_path):
    run = _make("--dry-run", "book", PYTHON=str(_python(tmp_path, "3.10")))
    assert "found 3.10 at" in run.stderr and run.returncode != 0


def test_a_python_that_does_not_run_is_named(tmp_path):
    run = _make("--dry-run", "book", f"PYTHON={tmp_path / 'nothing'}")
    assert f'found no Python at "{tmp_path / "nothing"}"' in run.stderr


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_supported_python_creates_the_venv(tmp_path, version):
    python = _python(tmp_path, version)
    run = _make("--dry-run", "--always-make", ".venv/.installed", f"PYTHON={python}")
    assert run.returncode == 0, run.stderr
    assert f"{python} -m venv .venv" in run.stdout


def test_this_python_passes_the_real_probe():
    """The probe itself, run by a real interpreter (this one, a supported version)."""
    run = _make("--dry-run", "--always-make", ".venv/.installed", f"PYTHON={sys.executable}")
    assert run.returncode == 0, run.stderr


def test_the_default_python3_is_checked_before_it_creates_the_venv(tmp_path):
    """No PYTHON given: an unsupported python3 on the PATH stops make when .venv is missing
    (here VENV names a folder that does not exist), and only then: `make clean` still runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _python(tmp_path, "3.10").rename(bin_dir / "python3")
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS")}
    run = subprocess.run(["make", "--no-print-directory", "-C", ROOT, "--dry-run", "book",
                          f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True,
                         timeout=60, env={**environment, "PATH": path})
    assert run.returncode != 0 and "found 3.10 at" in run.stderr
    assert "-m venv" not in run.stdout
    clean = subprocess.run(["make", "-C", ROOT, "--dry-run", "clean"], capture_output=True,
                           text=True, timeout=60, env={**environment, "PATH": path})
    assert clean.returncode == 0, clean.stderr


@pytest.mark.parametrize(("machine", "release", "stops"), [
    ("x86_64", "14.5", True), ("arm64", "13.6", True), ("arm64", "14.0", False)])
def test_a_mac_torch_has_no_wheel_for_stops_before_the_venv(tmp_path, machine, release, stops):
    """uname and sw_vers stand-ins play an Intel Mac, an old macOS, and a supported Mac."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "uname").write_text(
        f'#!/bin/sh\n[ "$1" = -m ] && echo {machine} || echo Darwin\n')
    (bin_dir / "sw_vers").write_text(f"#!/bin/sh\necho {release}\n")
    for tool in ("uname", "sw_vers"):
        (bin_dir / tool).chmod(0o755)
    python = _python(tmp_path, "3.12")
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS")}
    environment["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    run = subprocess.run(
        ["make", "--no-print-directory", "-C", ROOT, f"VENV={tmp_path / 'venv'}",
         f"PYTHON={python}", str(tmp_path / "venv" / ".installed")], capture_output=True,
        text=True, timeout=60, env=environment)
    assert run.returncode != 0  # the stand-in python creates no venv either way
    assert ("has macOS wheels for macOS 14 or later on Apple Silicon only" in run.stderr) == stops
    assert (f"found macOS {release} on {machine}" in run.stderr) == stops
    assert ("-m venv" in run.stdout) != stops
