"""Read the decks' single sources: the lecture plan of book/teaching.md, the chapters' notebooks.

Nothing here is copied into the repository: slides/build.py calls these functions at build time
and the directives of slides/_ext/chapter_parts.py call them while Sphinx reads the decks.

- :func:`lectures` parses the two-lecture plan (or the four-lecture one, where it has tables):
  each lecture's heading ``**Lecture N: title.**`` and the table under it, one row per slot, with
  the columns Time (``15 min``), Sections, Live figure and Poll, found by their headers (extra
  columns, e.g. what to skip, are kept and go into the speaker notes).
- :func:`sections` splits a chapter notebook into its level-2 sections and says which are core.
- :func:`polls` parses a chapter's final "Check your understanding" cell (the format of
  helpers' COMMON.md: numbered questions, options ``- **A.** ...``, a folded ``Answers``
  admonition whose items start with the right letter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
#: Sections of a chapter that are no part of a lecture: set-up cells, the recap, exercises, the
#: checks (they become polls).
NOT_SHOWN = re.compile(r"^(Setup\b|Summary$|Exercises$|Check your understanding$)", re.I)
OPTIONAL = re.compile(r"^Optional\b", re.I)
DOC = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
LABEL = re.compile(r"^\(([^)\s]+)\)=\s*$")


@dataclass
class Slot:
    """One row of a lecture's table."""

    minutes: int
    sections: str  #: the Sections cell, as written (MyST)
    chapters: list  #: the chapters it shows: every {doc} outside parentheses
    figure: str  #: the Live figure cell, as written
    poll: str  #: the Poll cell, as written
    polls: list  #: [(chapter, question number)]
    extra: dict = field(default_factory=dict)  #: other columns: {header: cell}

    @property
    def polls_first(self) -> bool:
        """The plan asks the poll before the slot's slides show its answer ("before ...")."""
        return bool(re.search(r"\bbefore\b", self.poll, re.I))


@dataclass
class Lecture:
    number: int
    title: str
    slots: list

    @property
    def minutes(self) -> int:
        return sum(s.minutes for s in self.slots)


def _cells(row: str) -> list:
    """The cells of a markdown table row (| a | b |), pipes inside backquotes kept."""
    parts, current, in_code = [], "", False
    for char in row.strip().strip("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


def _column(headers: list, *words: str):
    """The index of the first header that contains one of words (lower case), or None."""
    for index, header in enumerate(headers):
        if any(w in header.lower() for w in words):
            return index
    return None


def _poll_refs(text: str) -> list:
    """[(chapter, question)] of a Poll cell: "{doc}`formula`, questions 1 and 3; ..."."""
    refs = []
    for match in re.finditer(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`([^{]*)", text):
        numbers = re.findall(r"\d+", re.split(r"\(|\bbefore\b|\bafter\b", match.group(2))[0])
        refs += [(match.group(1), int(n)) for n in numbers]
    return refs


def parse_slot(headers: list, cells: list) -> Slot:
    get = {}
    for key, words in {"time": ("time", "min"), "sections": ("section", "show"),
                       "figure": ("figure",), "poll": ("poll",)}.items():
        index = _column(headers, *words)
        get[key] = cells[index] if index is not None and index < len(cells) else ""
    minutes = re.match(r"\s*(\d+)\s*min", get["time"])
    if not minutes:
        raise ValueError(f"teaching.md: a slot's time must read 'N min', found {get['time']!r}")
    used = {_column(headers, *w) for w in (("time", "min"), ("section", "show"), ("figure",),
                                            ("poll",))}
    extra = {h: c for i, (h, c) in enumerate(zip(headers, cells)) if i not in used and c}
    outside = re.sub(r"\([^()]*\)", "", get["sections"])
    return Slot(int(minutes.group(1)), get["sections"], DOC.findall(outside), get["figure"],
                get["poll"], _poll_refs(get["poll"]), extra)


def lectures(teaching: Path = BOOK / "teaching.md", plan: str = "Two lectures") -> list:
    """The lectures of the plan whose level-2 heading starts with `plan`, in order."""
    text = teaching.read_text()
    start = re.search(rf"^## {re.escape(plan)}.*$", text, re.M)
    if not start:
        raise ValueError(f"{teaching}: no section '## {plan}...'")
    end = re.search(r"^## ", text[start.end():], re.M)
    body = text[start.end(): start.end() + end.start() if end else len(text)]
    found = []
    for match in re.finditer(r"^\*\*Lecture (\d+):\s*(.*?)\.?\*\*\s*$", body, re.M):
        rows = []
        for line in body[match.end():].lstrip("\n").splitlines():
            if not line.startswith("|"):
                break
            rows.append(_cells(line))
        if len(rows) < 3:
            continue
        headers = rows[0]
        slots = [parse_slot(headers, cells) for cells in rows[2:]]
        found.append(Lecture(int(match.group(1)), match.group(2), slots))
    return found


# --- chapters --------------------------------------------------------------------------------

def notebook(chapter: str):
    """The chapter's cells (nbformat), with their index as cell.index."""
    cells = nbformat.read(BOOK / f"{chapter}.ipynb", as_version=4).cells
    for index, cell in enumerate(cells):
        cell.index = index
    return cells


@dataclass
class Section:
    title: str
    level: int
    core: bool
    #: [(cell, markdown text of the part of the cell in this section)] for markdown cells,
    #: [(cell, None)] for code cells
    parts: list = field(default_factory=list)
    label: str = ""


def sections(chapter: str) -> list:
    """The chapter's level-2 sections (a level-3 "Optional:" subsection is dropped from its
    section's parts); the text before the first level-2 heading is not a section."""
    found, current, skipping = [], None, False
    for cell in notebook(chapter):
        if "remove-cell" in cell.metadata.get("tags", []):
            continue
        if cell.cell_type != "markdown":
            if current is not None and not skipping:
                current.parts.append((cell, None))
            continue
        chunk, label, fence = [], "", False
        for line in cell.source.splitlines() + [None]:
            heading = None if line is None or fence else HEADING.match(line)
            if line is not None and line.lstrip().startswith(("```", "~~~")):
                fence = not fence
            if line is not None and not heading:
                if LABEL.match(line) and not fence:
                    label = LABEL.match(line).group(1)
                else:
                    chunk.append(line)
                continue
            if current is not None and not skipping and "\n".join(chunk).strip():
                current.parts.append((cell, "\n".join(chunk)))
            chunk = []
            if heading is None:
                continue
            level, title = len(heading.group(1)), heading.group(2)
            if level == 2:
                current = Section(title, 2, not (OPTIONAL.match(title) or NOT_SHOWN.match(title)),
                                  label=label)
                found.append(current)
                skipping = False
            elif level >= 3 and current is not None:
                skipping = bool(OPTIONAL.match(title)) or (skipping and level > 3)
            label = ""
    return found


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
