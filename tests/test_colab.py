"""The Colab install cell: first in every notebook, the configured address, no effect elsewhere.

tools/colab_cell.py writes the cell (`make colab-cells`); these tests check every notebook of
book/ and assignments/ against _config.yml's `repository:` and run the cell's code both as on
Colab (it must call `%pip install` with the configured address) and as anywhere else (it must
call nothing).
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from IPython.core.inputtransformer2 import TransformerManager

import tool_scripts

ROOT = Path(__file__).resolve().parents[1]
colab_cell = tool_scripts.load("colab_cell")

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
URL, BRANCH = CONFIG["url"].rstrip("/"), CONFIG["branch"]
REQUIREMENT = f"posenc @ git+{URL}@{BRANCH}"
NOTEBOOKS = colab_cell.notebooks()


def test_the_notebooks_are_found():
    assert len([p for p in NOTEBOOKS if p.parent == ROOT / "book"]) >= 8


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_starts_with_the_install_cell(path):
    cells = nbformat.read(path, as_version=4).cells
    first = cells[0]
    assert first.cell_type == "code"
    ref = colab_cell.ref_for(path, URL, BRANCH)
    assert f'%pip install --quiet "{colab_cell.requirement(URL, ref)}"' in first.source
    assert 'if "google.colab" in sys.modules:' in first.source
    assert first.metadata.get("tags") == ["remove-cell"]
    assert first.get("outputs") == []
    assert colab_cell.is_current(first, URL, ref, colab_cell.extras_for(path))
    if "assignments" in path.parts:  # students' grader.check needs otter on Colab too
        assert '"otter-grader==' in first.source
        # ... and self-checks against the posenc that grades them: the autograder's release tag
        version = {}
        exec((ROOT / "code" / "posenc" / "_version.py").read_text(), version)
        assert ref == f"v{version['__version__']}" != BRANCH
    others = [c for c in cells[1:] if colab_cell.is_install_cell(c) or "google.colab" in c.source]
    assert others == [], "the install cell appears more than once"


class _FakeIPython:
    """Records the magics a cell calls."""

    def __init__(self):
        self.calls = []

    def run_line_magic(self, name, line):
        self.calls.append((name, line))


def _run_cell(on_colab, monkeypatch):
    """Run the install cell's code as IPython would; return the magics it called."""
    shell = _FakeIPython()
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", object())
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    code = TransformerManager().transform_cell(colab_cell.cell_source(URL, BRANCH))
    exec(compile(code, "<colab cell>", "exec"), {"get_ipython": lambda: shell})
    return shell.calls


def test_the_cell_installs_the_package_on_colab(monkeypatch):
    assert _run_cell(True, monkeypatch) == [("pip", f'install --quiet "{REQUIREMENT}"')]


def test_the_cell_does_nothing_elsewhere(monkeypatch):
    assert _run_cell(False, monkeypatch) == []


def test_the_tool_is_idempotent_and_replaces_an_old_address(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title")])
    assert colab_cell.update(notebook, URL, BRANCH) is True
    assert colab_cell.update(notebook, URL, BRANCH) is False
    assert [c.cell_type for c in notebook.cells] == ["code", "markdown"]
    notebook.cells[0].execution_count = 1  # re-executing the notebook changes nothing
    assert colab_cell.update(notebook, URL, BRANCH) is False
    assert colab_cell.update(notebook, "https://github.com/someone/fork", "v9") is True
    assert [c.cell_type for c in notebook.cells] == ["code", "markdown"]
    assert "someone/fork@v9" in notebook.cells[0].source


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_colab_cells_runs_the_tool():
    dry = subprocess.run(["make", "--dry-run", "-C", ROOT, "colab-cells"],
                         capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    assert "tools/colab_cell.py" in dry.stdout


def test_every_written_pip_install_names_the_configured_repository():
    """README.md and the book's pages show the same address as the Colab cell."""
    files = [ROOT / "README.md", *sorted((ROOT / "book").glob("**/*.md"))]
    found = [(path.name, m.group(1), m.group(2)) for path in files
             for m in re.finditer(r"posenc(?:\[\w+\])? @ git\+(\S+?)@([\w.\-/]+)\"",
                                  path.read_text())]
    assert found, "no pip install of the package from the repository is shown"
    wrong = [f for f in found if f[1:] != (URL, BRANCH)]
    assert wrong == []


# Colab's Python (its runtime, November 2026); the install cell installs posenc there.
COLAB_PYTHON = "3.12"


def test_colabs_python_is_supported_by_the_package_and_the_makefile():
    import tomllib

    from packaging.specifiers import SpecifierSet

    root = Path(__file__).resolve().parents[1]
    supported = re.search(r"^SUPPORTED_PYTHONS := (.+)$", (root / "Makefile").read_text(),
                          re.M).group(1).split()
    requires = tomllib.loads((root / "pyproject.toml").read_text())["project"]["requires-python"]
    assert COLAB_PYTHON in supported
    assert SpecifierSet(requires).contains(f"{COLAB_PYTHON}.0")
