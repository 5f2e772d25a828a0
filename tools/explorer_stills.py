"""Still images of the interactive figures, for readers of the notebooks (issue 34).

On the website a ``{posenc-explorer} NAME`` directive draws a live figure (book/_ext). A notebook
opened in Jupyter, Colab, Binder or VS Code shows the directive as a code block, so "the figure
below" would point at nothing. Right after every cell with such a directive, this script keeps a
markdown cell (id ``still-NAME``, tagged ``remove-cell`` so the website leaves it out) holding
the figure's default setting as a PNG attachment, drawn by the extension itself
(``posenc_explorer.still_png``), with the figure's alt text.

    python tools/explorer_stills.py book/*.ipynb          # write the cells that change
    python tools/explorer_stills.py --check book/*.ipynb  # list them, exit 1 if any
"""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_markdown_cell

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import posenc_explorer  # noqa: E402

DIRECTIVE = re.compile(r"^```\{posenc-explorer\}\s+(\w+)", flags=re.M)
INTRO = ("*A still image of the figure at its default setting; on the course's website it is "
         "live.*")


def still_cell(name: str, png: bytes | None = None):
    """The markdown cell that shows figure ``name`` to notebook readers."""
    filename = f"posenc-explorer-{name}.png"
    alt = " ".join(posenc_explorer.alt_text(name).replace("[", "(").replace("]", ")").split())
    cell = new_markdown_cell(f"{INTRO}\n\n![{alt}](attachment:{filename})")
    cell["id"] = f"still-{name}"
    cell.metadata["tags"] = ["remove-cell"]
    data = base64.b64encode(png if png is not None else posenc_explorer.still_png(name)).decode()
    cell["attachments"] = {filename: {"image/png": data}}
    return cell


def expected_cells(nb) -> list:
    """The notebook's cells with a still cell after every directive, and no stale one."""
    cells = [c for c in nb.cells if not str(c.get("id", "")).startswith("still-")]
    out = []
    for cell in cells:
        out.append(cell)
        if cell.cell_type == "markdown":
            out += [still_cell(name) for name in DIRECTIVE.findall(cell.source)]
    return out


def _same(a, b) -> bool:
    keys = ("cell_type", "id", "source", "metadata")
    return all(a.get(k) == b.get(k) for k in keys) and a.get("attachments") == b.get("attachments")


def update(notebook: Path, *, write: bool = True) -> bool:
    """Whether the still cells of ``notebook`` differ from what they should be (written if so)."""
    nb = nbformat.read(notebook, as_version=4)
    want = expected_cells(nb)
    if len(want) == len(nb.cells) and all(map(_same, want, nb.cells)):
        return False
    if write:
        nb.cells = want
        nbformat.write(nb, notebook)
    return True


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    stale = [p for p in map(Path, (a for a in sys.argv[1:] if a != "--check")) if update(p, write=not check)]
    for path in stale:
        print(f"{path}: {'still images out of date' if check else 'still images written'}")
    sys.exit(1 if check and stale else 0)
