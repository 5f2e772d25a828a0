"""Every live figure has a still image for notebook readers (tools/explorer_stills.py, issue 34)."""

from pathlib import Path

import nbformat
import pytest

import tool_scripts

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(ROOT.glob("book/*.ipynb"))

explorer_stills = tool_scripts.load("explorer_stills")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_live_figure_has_its_still_image_next_to_it(path):
    assert not explorer_stills.update(path, write=False), (
        f"{path.name}: still images missing or out of date: run `python tools/explorer_stills.py book/*.ipynb`")


def test_the_still_cells_are_left_out_of_the_website():
    stills = [cell for path in NOTEBOOKS for cell in nbformat.read(path, as_version=4).cells
              if str(cell.get("id", "")).startswith("still-")]
    assert {cell["id"] for cell in stills} == {f"still-{name}" for name in explorer_stills.posenc_explorer.DRAW}
    assert all(cell.metadata["tags"] == ["remove-cell"] for cell in stills)


def test_a_missing_or_stale_still_image_is_found(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("```{posenc-explorer} dot\n```")])
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    assert explorer_stills.update(path, write=False)
    assert explorer_stills.update(path) and not explorer_stills.update(path, write=False)
    nb = nbformat.read(path, as_version=4)
    nb.cells[1]["attachments"]["posenc-explorer-dot.png"]["image/png"] = "AAAA"
    nbformat.write(nb, path)
    assert explorer_stills.update(path, write=False)
