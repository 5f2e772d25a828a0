"""The students' install (assignments/student-requirements.txt, issue 36): what the assignments'
notebooks import and JupyterLab, pinned like requirements.txt, without the book's toolchain.

Checked statically, like binder/: the file parses and pins every distribution at the version of
the root requirements.txt; it installs the package from the clone and takes torch's CPU build
from PyTorch's index; it provides every module the assignment masters import (their code cells,
read with ast) and nothing else but JupyterLab; and every assignment page names it.
"""

from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.version import Version

from dependencies import closure, imported_modules, pinned, providers, requirement_lines

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "assignments" / "student-requirements.txt"
MASTERS = sorted(p for p in ROOT.glob("assignments/*/*.ipynb") if p.stem == p.parent.name)
PAGES = sorted((ROOT / "book" / "assignments").glob("*.md"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TO_OPEN_THEM = {"jupyterlab"}   # not imported by a notebook: what the student opens them with
FASTER = {"jsonschema"}  # not imported by a notebook: otter's validator, pinned to start fast
LINES = requirement_lines(STUDENT)
PINS = pinned(STUDENT)
ROOT_PINS = pinned(ROOT / "requirements.txt")


def _assignment_imports():
    transform = TransformerManager().transform_cell
    return {name for master in MASTERS for cell in nbformat.read(master, as_version=4).cells
            if cell.cell_type == "code" for name in imported_modules(transform(cell.source))}


def test_it_parses_and_pins_every_distribution():
    assert [line for line in LINES if line.startswith("-")] == [f"--extra-index-url {CPU_INDEX}"]
    assert "." in LINES, "the package itself is installed from the clone"
    assert len([line for line in LINES if not line.startswith("-") and line != "."]) == len(PINS)
    for name, requirement in PINS.items():
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{name} is not pinned"


def test_versions_are_those_of_the_root_requirements():
    for name, requirement in PINS.items():
        assert name in ROOT_PINS, f"{name} is not in the root requirements.txt"
        (ours,), (theirs,) = requirement.specifier, ROOT_PINS[name].specifier
        assert Version(ours.version) == Version(theirs.version), name


def test_nothing_from_the_book_toolchain_tests_or_other_frameworks():
    assert PINS.keys().isdisjoint({"jupyter-book", "sphinx-exercise", "pytest", "nbval", "hypothesis",
                                   "playwright", "build", "twine", "pypdf", "tensorflow",
                                   "tensorflow-cpu", "keras", "jax", "onnx", "onnxruntime",
                                   "matplotlib"})


@pytest.fixture(scope="module")
def owners():
    return providers()


def test_it_lists_only_what_the_assignments_import(owners):
    imported = {d for module in _assignment_imports() for d in owners.get(module, ())}
    unused = sorted(set(PINS) - imported - TO_OPEN_THEM - FASTER)
    assert unused == [], f"{STUDENT.name} installs what no assignment imports: {unused}"


def test_it_provides_everything_the_assignments_import(owners):
    provided = closure(set(PINS) | {"posenc"})
    missing = sorted(module for module in _assignment_imports()
                     if not owners.get(module, set()) & provided)
    assert missing == [], f"the assignments import what {STUDENT.name} does not install: {missing}"


@pytest.mark.parametrize("page", [p for p in PAGES if p.stem != "instructors"], ids=lambda p: p.stem)
def test_every_assignment_page_names_the_students_install(page):
    text = page.read_text(encoding="utf-8")
    assert "assignments/student-requirements.txt" in text and "Google Colab" in text


def test_the_intro_states_the_prerequisites_of_the_readme_and_the_light_install():
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for needed in ("Python 3.11, 3.12 or 3.13", "`make`", "`git`", "npm"):
        assert needed in readme and needed in intro, needed
    assert "assignments/student-requirements.txt" in intro
