"""Exercise solutions are folded for notebook readers (tools/fold_solutions.py, issue 34)."""

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import tool_scripts

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(ROOT.glob("book/*.ipynb"))

fold_solutions = tool_scripts.load("fold_solutions")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_solution_is_folded_and_nothing_else(path):
    assert fold_solutions.unfolded(path) == [], (
        f"{path.name}: cells whose folding is wrong: run `make strip` (tools/fold_solutions.py)")


def test_the_chapters_have_solutions_to_fold():
    folded = sum(any(fold_solutions.folds(nbformat.read(p, as_version=4).cells)) for p in NOTEBOOKS)
    assert folded >= 12


def _exercise() -> list:
    return [new_markdown_cell("```{exercise-start}\n:label: e\n```"), new_markdown_cell("Do it."),
            new_markdown_cell("```{exercise-end}\n```"),
            new_markdown_cell("```{solution-start} e\n:class: dropdown\n```\nHow."),
            new_code_cell("answer = 42"), new_markdown_cell("Why.\n\n```{solution-end}\n```"),
            new_markdown_cell("## Next")]


def test_fold_hides_the_solution_cells_only(tmp_path):
    path = tmp_path / "x.ipynb"
    nbformat.write(new_notebook(cells=_exercise()), path)
    assert fold_solutions.unfolded(path) != []
    assert fold_solutions.fold(path) is True
    cells = nbformat.read(path, as_version=4).cells
    assert [c.metadata.get("jupyter") for c in cells] == [
        None, None, None, {"source_hidden": True}, {"source_hidden": True, "outputs_hidden": True},
        {"source_hidden": True}, None]
    assert fold_solutions.unfolded(path) == [] and fold_solutions.fold(path) is False


@pytest.mark.parametrize("drop, message", [(5, "never ends"), (3, "ends without starting")])
def test_a_broken_solution_is_an_error(drop, message):
    cells = _exercise()
    del cells[drop]
    with pytest.raises(ValueError, match=message):
        fold_solutions.folds(cells)
