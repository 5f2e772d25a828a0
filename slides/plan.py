"""Read the decks' content from the chapters: notebooks, cells by id, polls.

Nothing here is copied into the repository: the directives of slides/_ext/chapter_parts.py call
these functions while Sphinx reads the decks' sources (slides/lecture-*.md).

- :func:`cell` finds a chapter's cell by its id (notebooks keep their cell ids).
- :func:`polls` parses a chapter's final "Check your understanding" cell (numbered questions,
  options ``- **A.** ...``, a folded ``Answers`` admonition whose items start with the right
  letter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


# --- chapters -----------------------------------------------------------------------------

def notebook(chapter: str):
    """The chapter's cells (nbformat), with their index as cell.index."""
    cells = nbformat.read(BOOK / f"{chapter}.ipynb", as_version=4).cells
    for index, cell in enumerate(cells):
        cell.index = index
    return cells


def cell(chapter: str, cell_id: str):
    """The cell of book/CHAPTER.ipynb whose id is cell_id (ValueError if there is none)."""
    for found in notebook(chapter):
        if found.get("id") == cell_id:
            return found
    raise ValueError(f"book/{chapter}.ipynb has no cell with the id {cell_id!r}")


def chapter_title(chapter: str) -> str:
    for cell in notebook(chapter):
        if cell.cell_type == "markdown":
            match = re.search(r"^# (.*)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return chapter


# --- polls -------------------------------------------------------------------------------------

@dataclass
class Poll:
    number: int
    stem: str  #: the question, MyST
    options: list  #: [(letter, MyST text)]; empty for an open question
    answer: str  #: the folded answer, MyST (the right letter first)

    @property
    def right(self):
        match = re.match(r"\s*\*\*([A-E])\b", self.answer)
        return match.group(1) if match else None


def _items(text: str) -> dict:
    """{number: text} of the top-level numbered list items of text (continuations dedented)."""
    items, number = {}, None
    for line in text.splitlines():
        match = re.match(r"^(\d+)\.\s+(.*)$", line)
        if match:
            number = int(match.group(1))
            items[number] = [match.group(2)]
        elif number is not None:
            items[number].append(line[3:] if line.startswith("   ") else line.lstrip())
    return {n: "\n".join(lines).strip() for n, lines in items.items()}


def polls(chapter: str) -> dict:
    """{number: Poll} of the chapter's final "Check your understanding" cell."""
    cells = [c for c in notebook(chapter) if c.cell_type == "markdown"]
    source = cells[-1].source
    if not re.search(r"^## Check your understanding", source, re.M):
        raise ValueError(f"{chapter}: the last markdown cell is not 'Check your understanding'")
    body = source.split("## Check your understanding", 1)[1]
    fence = re.search(r"^(`{3,}|:{3,})\{admonition\}\s*Answers.*$", body, re.M)
    if not fence:
        raise ValueError(f"{chapter}: 'Check your understanding' has no Answers admonition")
    questions = body[:fence.start()]
    answers = body[fence.end():]
    answers = answers[:answers.find(fence.group(1), 1)] if fence.group(1) in answers else answers
    answers = "\n".join(line for line in answers.splitlines() if not line.startswith(":"))
    answer_items = _items(answers)
    found = {}
    for number, text in _items(questions).items():
        options, stem = [], []
        for line in text.splitlines():
            match = re.match(r"^\s*[-*]\s+\*\*([A-E])\.?\*\*\.?\s*(.*)$", line)
            if match:
                options.append([match.group(1), match.group(2)])
            elif options and line.strip():
                options[-1][1] += " " + line.strip()
            elif not options:
                stem.append(line)
        found[number] = Poll(number, "\n".join(stem).strip(), [tuple(o) for o in options],
                             answer_items.get(number, ""))
    return found
