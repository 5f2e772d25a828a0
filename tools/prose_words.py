"""Words of prose per chapter of the main path (issue 24's measure).

A chapter's prose is the text of its markdown cells with fenced blocks (```...```, directives
included), display math ($$...$$) and inline math ($...$) removed; a word is a run of
non-space characters. `python tools/prose_words.py` prints the count per main-path chapter
(Foundations, Implementations, Going further in _toc.yml) and the total.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN_PATH_PARTS = ("Foundations", "Implementations", "Going further")


def prose_words(notebook: Path) -> int:
    """Number of prose words in the markdown cells of ``notebook`` (a ``.ipynb`` path)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " ", text)
    return len(text.split())


def main_path() -> list[Path]:
    """The main path's notebooks, in the order of ``_toc.yml``."""
    chapters, part = [], None
    for line in (ROOT / "_toc.yml").read_text(encoding="utf-8").splitlines():
        if m := re.match(r"\s*- caption:\s*(.+)", line):
            part = m.group(1).strip()
        elif (m := re.match(r"\s*- file:\s*(\S+)", line)) and part in MAIN_PATH_PARTS:
            chapters.append(ROOT / f"{m.group(1)}.ipynb")
    return chapters


if __name__ == "__main__":
    total = 0
    for nb in main_path():
        words = prose_words(nb)
        total += words
        print(f"{nb.stem:<18} {words:>6}")
    print(f"{'main path':<18} {total:>6}")
