"""Fold the exercise solutions of the book's notebooks for readers in Jupyter, Colab and VS Code.

On the website, sphinx-exercise shows each solution in a collapsed drop-down. A notebook opened in
JupyterLab, VS Code or Colab shows every cell, so the solution would sit right under its
exercise. nbformat's standard cell metadata ``"jupyter": {"source_hidden": true}`` (and
``"outputs_hidden": true`` for a code cell) collapses a cell in JupyterLab and VS Code until the
reader opens it. This script sets it on every cell from a ``{solution-start}`` cell to its
``{solution-end}`` cell, and removes it from every other cell.

    python tools/fold_solutions.py book/*.ipynb     # rewrite the notebooks that change
    python tools/fold_solutions.py --check book/*.ipynb   # list them, exit 1 if any

``make strip`` runs it on the book's notebooks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

START, END = "```{solution-start}", "```{solution-end}"


def folds(cells) -> list[bool]:
    """For each cell, whether it belongs to a solution (its start and end cells included)."""
    inside, found = False, []
    for cell in cells:
        source = cell.source.lstrip()
        starts = cell.cell_type == "markdown" and source.startswith(START)
        ends = cell.cell_type == "markdown" and END in source
        if starts and inside:
            raise ValueError(f"a solution starts inside another one, at cell {cell.get('id')}")
        inside = inside or starts
        found.append(inside)
        if ends:
            if not inside:
                raise ValueError(f"a solution ends without starting, at cell {cell.get('id')}")
            inside = False
    if inside:
        raise ValueError("a solution starts and never ends")
    return found


def hidden(cell) -> dict:
    """The ``jupyter`` metadata that folds ``cell``."""
    return {"source_hidden": True, "outputs_hidden": True} if cell.cell_type == "code" else {"source_hidden": True}


def fold(notebook: Path) -> bool:
    """Fold the solutions of ``notebook`` and unfold every other cell; True when it changed."""
    nb = nbformat.read(notebook, as_version=4)
    changed = False
    for cell, in_solution in zip(nb.cells, folds(nb.cells)):
        want = hidden(cell) if in_solution else None
        if cell.metadata.get("jupyter") != want:
            changed = True
            if want:
                cell.metadata["jupyter"] = want
            else:
                cell.metadata.pop("jupyter", None)
    if changed:
        nbformat.write(nb, notebook)
    return changed


def unfolded(notebook: Path) -> list[str]:
    """The ids of the cells of ``notebook`` whose folding is not what ``fold`` would make it."""
    nb = nbformat.read(notebook, as_version=4)
    return [cell.get("id") for cell, in_solution in zip(nb.cells, folds(nb.cells))
            if cell.metadata.get("jupyter") != (hidden(cell) if in_solution else None)]


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    paths = [Path(arg) for arg in sys.argv[1:] if arg != "--check"]
    wrong = [p for p in paths if (unfolded(p) if check else fold(p))]
    for path in wrong:
        print(f"{path}: {'solutions not folded' if check else 'solutions folded'}")
    sys.exit(1 if check and wrong else 0)
