"""The Binder environment (binder/): only what the notebooks import, pinned like requirements.txt.

Binder cannot be run from here, so the files are checked statically: runtime.txt names Python
3.11; requirements.txt parses; it installs the package from the repository, the CPU-only torch
from PyTorch's CPU wheel index, and otherwise exactly the distributions that provide what the
notebooks import (their code cells, read with ast), each at the version the root
requirements.txt pins.
"""

import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.utils import canonicalize_name
from packaging.version import Version

from dependencies import closure, imported_modules, pinned, providers, requirement_lines

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Binder's base image runs the notebooks: Jupyter and its kernel come with it.
BASE_IMAGE = {"IPython", "ipykernel", "ipywidgets"}
# Needed by an imported library at call time, never imported by a notebook itself:
# torch.onnx.export (book/deeper_shipping_onnx.ipynb) imports onnx and onnxscript when it runs.
CALL_TIME_ONLY = {"onnx", "onnxscript"}


BINDER_LINES = requirement_lines(BINDER / "requirements.txt")
BINDER_PINS = pinned(BINDER / "requirements.txt")
ROOT_PINS = pinned(ROOT / "requirements.txt")


def _notebook_imports():
    """Top-level modules imported by the notebooks' code cells (IPython magics transformed)."""
    transform = TransformerManager().transform_cell
    return {name for notebook in NOTEBOOKS for cell in nbformat.read(notebook, as_version=4).cells
            if cell.cell_type == "code" for name in imported_modules(transform(cell.source))}


def test_runtime_is_python_311():
    assert (BINDER / "runtime.txt").read_text() == "python-3.11\n"


def test_requirements_parse_and_pin_every_distribution():
    options = [line for line in BINDER_LINES if line.startswith("-")]
    assert options == [f"--extra-index-url {CPU_INDEX}"]
    assert "." in BINDER_LINES, "the package itself is installed from the repository root"
    others = [line for line in BINDER_LINES if not line.startswith("-") and line != "."]
    assert len(others) == len(BINDER_PINS)
    for name, requirement in BINDER_PINS.items():
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{name} is not pinned"


def test_torch_is_the_cpu_build():
    (spec,) = BINDER_PINS["torch"].specifier
    assert Version(spec.version).local == "cpu"


def test_versions_are_those_of_the_root_requirements():
    for name, requirement in BINDER_PINS.items():
        assert name in ROOT_PINS, f"{name} is not in the root requirements.txt"
        (ours,) = requirement.specifier
        (theirs,) = ROOT_PINS[name].specifier
        assert Version(ours.version).public == Version(theirs.version).public, name


def test_nothing_from_the_book_toolchain_tests_or_browser():
    assert BINDER_PINS.keys().isdisjoint({"jupyter-book", "sphinx-exercise", "jupyterlab",
                                          "pytest", "nbval", "hypothesis", "playwright",
                                          "build", "twine", "pypdf", "pypdfium2", "otter-grader"})


@pytest.fixture(scope="module")
def owners():
    """{module name: canonical names of the installed distributions that provide it}."""
    return providers()


def test_binder_lists_only_what_the_notebooks_import(owners):
    imported = {d for module in _notebook_imports() for d in owners.get(module, ())}
    unused = sorted(set(BINDER_PINS) - imported - CALL_TIME_ONLY)
    assert unused == [], f"binder/requirements.txt installs what no notebook imports: {unused}"


def test_binder_provides_everything_the_notebooks_import(owners):
    provided = closure(set(BINDER_PINS) | {"posenc"})
    missing = sorted(module for module in _notebook_imports() - BASE_IMAGE
                     if not owners.get(module, set()) & provided)
    assert missing == [], f"notebooks import what Binder does not install: {missing}"


def _install_recipe(*variables):
    """The shell commands `make` would run to set up .venv, with the given variables."""
    dry = subprocess.run(["make", "--dry-run", "--always-make", "-C", ROOT, ".venv/.installed",
                          *variables], capture_output=True, text=True, check=True)
    return dry.stdout


TORCH_FROM_CPU_INDEX = f"-m pip install --quiet --index-url {CPU_INDEX} torch=="


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_makefile_takes_torch_from_the_cpu_index_on_linux_unless_torch_cpu_0():
    torch = str(ROOT_PINS["torch"].specifier).removeprefix("==")
    assert TORCH_FROM_CPU_INDEX + torch in _install_recipe()
    assert '[ "$(uname -s)" = Linux ] && [ "auto" != 0 ]' in _install_recipe()
    assert '[ "0" != 0 ]' in _install_recipe("TORCH_CPU=0")


def test_binder_python_is_one_the_makefile_supports():
    supported = re.search(r"^SUPPORTED_PYTHONS := (.+)$", (ROOT / "Makefile").read_text(),
                          re.M).group(1).split()
    assert (BINDER / "runtime.txt").read_text().strip().removeprefix("python-") in supported
