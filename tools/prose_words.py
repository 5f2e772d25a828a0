"""Words of prose per chapter of the main path, core and optional (issues 24 and 34).

A chapter's prose is the text of its markdown cells (but those tagged remove-cell, which the
website leaves out) with fenced blocks (```...```, directives
included), display math ($$...$$) and inline math ($...$) removed; a word is a run of
non-space characters.

A chapter's *core* is what a reader short of time reads: everything except its optional
sections. A section is optional when its heading starts with "Optional: " (its subsections
with it), and the exercises are practice, counted as optional too. Code cells belong to the
section they stand in.

A chapter's *time* is estimated from the same counts: reading at 150 words a minute plus one
minute for each code cell (run it, read its output), rounded to 5 minutes; the time of the core
counts the core only. Solving the exercises is extra.

Every main-path chapter states both times in a line under its title (``TIME_LINE``); an
appendix ("Going deeper" in _toc.yml) has no core and states one time, the whole appendix read
(``APPENDIX_TIME_LINE``);
`python tools/prose_words.py` prints, per main-path chapter (Foundations, Implementations,
Going further in _toc.yml), the core and optional words and both times, and the totals;
`python tools/prose_words.py --write` writes the time lines anew (`--write FILE...`: only those).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN_PATH_PARTS = ("Foundations", "Implementations", "Going further")
APPENDIX_PARTS = ("Going deeper",)
OPTIONAL_PREFIX = "Optional: "
PRACTICE_SECTIONS = ("Exercises",)
WORDS_PER_MINUTE = 150
MINUTES_PER_CODE_CELL = 1

_HEADING = re.compile(r"^(#{1,6}) (.*)$")
TIME_LINE = "**Time:** core {core} min · whole chapter {total} min ({{ref}}`how estimated <chapter-times>`)."
_TIME_LINE = re.compile(r"^\*\*Time:\*\* core (\d+) min · whole chapter (\d+) min .*$", flags=re.M)
APPENDIX_TIME_LINE = "**Time:** {total} min, the whole appendix ({{ref}}`how estimated <chapter-times>`)."
_APPENDIX_TIME_LINE = re.compile(r"^\*\*Time:\*\* (\d+) min, the whole appendix .*$", flags=re.M)


def _without_fences_and_math(text: str) -> str:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    return re.sub(r"\$[^$\n]+\$", " ", text)


def _cells(notebook: Path) -> list[dict]:
    return json.loads(notebook.read_text(encoding="utf-8"))["cells"]


def _shown(cell: dict) -> bool:
    """Whether the website shows the cell (a cell tagged remove-cell is for notebook readers)."""
    return "remove-cell" not in cell.get("metadata", {}).get("tags", [])


def prose_words(notebook: Path) -> int:
    """Number of prose words in the markdown cells of ``notebook`` (a ``.ipynb`` path)."""
    text = "\n".join("".join(c["source"]) for c in _cells(notebook) if c["cell_type"] == "markdown" and _shown(c))
    return len(_without_fences_and_math(text).split())


def is_optional_heading(title: str) -> bool:
    """Whether a section with this heading text is optional (see the module's docstring)."""
    return title.startswith(OPTIONAL_PREFIX) or title.strip() in PRACTICE_SECTIONS


@dataclass
class Counts:
    """Prose words and code cells of one chapter, split into core and optional."""

    core_words: int = 0
    optional_words: int = 0
    core_code: int = 0
    optional_code: int = 0

    @property
    def core_minutes(self) -> int:
        return _rounded(self.core_words / WORDS_PER_MINUTE + self.core_code * MINUTES_PER_CODE_CELL)

    @property
    def total_minutes(self) -> int:
        words, code = self.core_words + self.optional_words, self.core_code + self.optional_code
        return _rounded(words / WORDS_PER_MINUTE + code * MINUTES_PER_CODE_CELL)


def _rounded(minutes: float) -> int:
    return max(5, 5 * round(minutes / 5))


def counts(notebook: Path) -> Counts:
    """Core and optional words and code cells of ``notebook``, by the headings of its sections."""
    found = Counts()
    stack: list[tuple[int, bool]] = []  # (level, optional) of the enclosing headings

    def optional_now() -> bool:
        return bool(stack) and stack[-1][1]

    for cell in _cells(notebook):
        source = "".join(cell["source"])
        if not _shown(cell):
            continue
        if cell["cell_type"] == "code":
            if optional_now():
                found.optional_code += 1
            else:
                found.core_code += 1
            continue
        if cell["cell_type"] != "markdown":
            continue
        segment: list[str] = []

        def flush() -> None:
            words = len(_without_fences_and_math("\n".join(segment)).split())
            if optional_now():
                found.optional_words += words
            else:
                found.core_words += words
            segment.clear()

        for line in re.sub(r"```.*?```", " ", source, flags=re.S).split("\n"):
            heading = _HEADING.match(line)
            if heading:
                flush()
                level, title = len(heading.group(1)), heading.group(2)
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, optional_now() or is_optional_heading(title)))
            segment.append(line)
        flush()
    return found


def stated_times(notebook: Path) -> tuple[int, int] | None:
    """The (core, whole chapter) minutes that the chapter's time line states, or None."""
    first = next(c for c in _cells(notebook) if c["cell_type"] == "markdown")
    found = _TIME_LINE.search("".join(first["source"]))
    return (int(found.group(1)), int(found.group(2))) if found else None


def stated_appendix_time(notebook: Path) -> int | None:
    """The minutes that an appendix's time line states, or None."""
    first = next(c for c in _cells(notebook) if c["cell_type"] == "markdown")
    found = _APPENDIX_TIME_LINE.search("".join(first["source"]))
    return int(found.group(1)) if found else None


def write_time_line(notebook: Path, *, appendix: bool = False) -> bool:
    """Put the estimated times under the title of ``notebook``; True when the file changed.

    An appendix (``appendix=True``) gets one time, the whole appendix. The line itself is
    prose, so it is written until the estimate no longer moves."""
    import nbformat

    pattern = _APPENDIX_TIME_LINE if appendix else _TIME_LINE
    changed = False
    for _ in range(3):
        c = counts(notebook)
        if appendix:
            line = APPENDIX_TIME_LINE.format(total=c.total_minutes)
        else:
            line = TIME_LINE.format(core=c.core_minutes, total=c.total_minutes)
        nb = nbformat.read(notebook, as_version=4)
        first = next(cell for cell in nb.cells if cell.cell_type == "markdown")
        if pattern.search(first.source):
            source = pattern.sub(line, first.source, count=1)
        else:
            title, _, rest = first.source.partition("\n")
            source = f"{title}\n\n{line}\n{rest}"
        if source == first.source:
            return changed
        first.source = source
        nbformat.write(nb, notebook)
        changed = True
    return changed


def _chapters_of(parts: tuple[str, ...]) -> list[Path]:
    chapters, part = [], None
    for line in (ROOT / "_toc.yml").read_text(encoding="utf-8").splitlines():
        if m := re.match(r"\s*- caption:\s*(.+)", line):
            part = m.group(1).strip()
        elif (m := re.match(r"\s*- file:\s*(\S+)", line)) and part in parts:
            chapters.append(ROOT / f"{m.group(1)}.ipynb")
    return chapters


def main_path() -> list[Path]:
    """The main path's notebooks, in the order of ``_toc.yml``."""
    return _chapters_of(MAIN_PATH_PARTS)


def appendices() -> list[Path]:
    """The appendices' notebooks ("Going deeper"), in the order of ``_toc.yml``."""
    return _chapters_of(APPENDIX_PARTS)


def table() -> str:
    """The core and optional words and times of every main-path chapter, and the totals."""
    lines = [f"{'chapter':<18} {'core':>6} {'optional':>9} {'core min':>9} {'all min':>8}"]
    total = Counts()
    for nb in main_path():
        c = counts(nb)
        lines.append(f"{nb.stem:<18} {c.core_words:>6} {c.optional_words:>9} {c.core_minutes:>9} {c.total_minutes:>8}")
        total.core_words += c.core_words
        total.optional_words += c.optional_words
    lines.append(f"{'main path':<18} {total.core_words:>6} {total.optional_words:>9}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    if "--write" in sys.argv[1:]:
        only = {(ROOT / name).resolve() for name in sys.argv[1:] if name != "--write"}
        for nb, appendix in [(nb, False) for nb in main_path()] + [(nb, True) for nb in appendices()]:
            if (not only or nb.resolve() in only) and write_time_line(nb, appendix=appendix):
                print(f"time line of {nb.relative_to(ROOT)} written")
    print(table())
