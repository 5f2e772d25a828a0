"""Read the decks' single sources: the lecture plan of book/teaching.md, the chapters' notebooks.

Nothing here is copied into the repository: slides/build.py calls these functions at build time
and the directives of slides/_ext/chapter_parts.py call them while Sphinx reads the decks.

- :func:`lectures` parses the two-lecture plan (or the four-lecture one, where it has tables):
  each lecture's heading ``**Lecture N: title.**`` and the table under it, one row per slot, with
  the columns Time or Minutes (``15`` or ``15 min``), Sections or Show, Live figure and Poll,
  found by their headers (other columns, e.g. Skip, are kept and go into the speaker notes);
  :func:`shown_sections` finds the sections a slot's Sections cell names, :func:`place` where a
  poll goes among them.
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
class PollRef:
    chapter: str
    number: int
    when: str = ""  #: "before" or "after" a part of the slot, or "" (at the slot's end)
    what: str = ""  #: that part, in the plan's words ("a shift is a rotation")


@dataclass
class Slot:
    """One row of a lecture's table."""

    minutes: int
    sections: str  #: the Sections (Show) cell, as written (MyST)
    chapters: list  #: the chapters it shows: every {doc} outside parentheses
    figure: str  #: the Live figure cell, as written
    poll: str  #: the Poll cell, as written
    polls: list  #: [PollRef]
    extra: dict = field(default_factory=dict)  #: other columns: {header: cell}
    #: [(chapter, [phrase, ...])]: what the Sections cell shows of each chapter
    shows: list = field(default_factory=list)


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
    """[PollRef] of a Poll cell: "{doc}`formula`, question 1, after the list of symbols;
    {doc}`formula`, question 3: ask it before "a shift is a rotation", which answers it"."""
    refs = []
    for match in re.finditer(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`([^{]*)", text):
        rest = match.group(2)
        place = re.search(r"\b(before|after)\b\s*(.*)", rest)
        numbers = re.findall(r"\d+", rest[:place.start()] if place else rest.split("(")[0])
        when, what = (place.group(1), place.group(2)) if place else ("", "")
        what = re.split(r",\s*which\b|;", what)[0].strip(" .,;:\"'“”")
        refs += [PollRef(match.group(1), int(n), when, what) for n in numbers]
    return refs


def _shows(text: str) -> list:
    """[(chapter, [phrase])] of a Sections cell: "{doc}`loops`: the loop, line by line; checking
    against the worked example. {doc}`vectorized`: ..." (what is in parentheses is left out)."""
    text = re.sub(r"\$[^$]*\$", "", text)
    while re.search(r"\([^()]*\)", text):
        text = re.sub(r"\([^()]*\)", "", text)
    # A chapter's part starts at "{doc}`name`:"; another {doc} inside it is a word of a phrase.
    parts = re.split(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`\s*:", text)
    if len(parts) == 1:  # no "{doc}`name`:": the chapters named, each whole
        return [(chapter, []) for chapter in DOC.findall(text)]
    found = []
    for chapter, words in zip(parts[1::2], parts[2::2]):
        words = DOC.sub(lambda m: m.group(1), words)
        phrases = []
        for phrase in re.split(r";|,|\.\s", words.lstrip(":")):
            phrase = phrase.strip(" .,:;\"'“”")
            if phrases and not re.search(r"[a-z]", " ".join(_words(phrase))):
                phrases[-1] += f" {phrase}"  # "breaks 1, 3 and 4": the numbers go together
            elif _words(phrase):
                phrases.append(phrase)
        found.append((chapter, phrases))
    return found


STOP = {"the", "a", "an", "and", "of", "to", "from", "with", "on", "in", "at", "by", "is", "it",
        "its", "as", "or", "for", "this", "that", "be", "are", "s", "against", "why", "what",
        "how", "where", "when", "which", "not", "no"}


def _words(text: str) -> set:
    """The words of a phrase or heading that say what it is about (plural s dropped)."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w
            for w in re.findall(r"[a-z]+|\d+", text.lower()) if w not in STOP}


def _best(phrase: str, candidates: list):
    """The candidate [(title, body)] whose title shares most words with phrase (then most
    numbers, then the one whose body holds more of them), or None when no title shares a word
    and no body holds half of them."""
    words = _words(phrase)
    numbers = {w for w in words if w.isdigit()}
    scored = [(len((words - numbers) & _words(title)), len(numbers & _words(title)),
               len(words & _words(body)) / len(words), index)
              for index, (title, body) in enumerate(candidates)]
    title, number, body, index = max(scored, key=lambda s: (s[0], s[1], s[2], -s[3]))
    return index if title + number >= 1 or body >= 0.5 else None


def shown_sections(slot: "Slot") -> tuple:
    """([(chapter, Section)] that the slot's Sections cell names, in the chapters' order,
    [phrases that name no core section]). A chapter named without phrases shows its whole
    core."""
    found, missing = [], []
    for chapter, phrases in slot.shows:
        core = [s for s in sections(chapter) if s.core]
        if not phrases:
            found += [(chapter, s) for s in core]
            continue
        bodies = [(s.title, "\n".join(t for _, t in s.parts if t)) for s in core]
        picked = set()
        for phrase in phrases:
            index = _best(phrase, bodies)
            if index is None:
                missing.append(f"{chapter}: {phrase}")
            else:
                picked.add(index)
        found += [(chapter, core[i]) for i in sorted(picked)]
    return found, missing


def place(ref: PollRef, titles: list) -> int:
    """Where a poll goes among a slot's shown sections (their titles): the index of the
    section it comes before; 0 ("before" what matches nothing shown: at the start) to
    len(titles) (no place said, or "after" what matches nothing: at the end)."""
    if not ref.when:
        return len(titles)
    words = _words(ref.what)
    scores = [len(words & _words(t)) for t in titles]
    if scores and max(scores) >= max(2, (len(words) + 1) // 2):
        index = scores.index(max(scores))
        return index if ref.when == "before" else index + 1
    return 0 if ref.when == "before" else len(titles)


def parse_slot(headers: list, cells: list) -> Slot:
    columns = {"time": ("time", "min"), "sections": ("section", "show"), "figure": ("figure",),
               "poll": ("poll",)}
    index = {key: _column(headers, *words) for key, words in columns.items()}
    get = {key: cells[i] if i is not None and i < len(cells) else "" for key, i in index.items()}
    minutes = re.match(r"\s*(\d+)\s*(min\w*)?\s*$", get["time"])
    if not minutes:
        raise ValueError(f"teaching.md: a slot's time must read 'N' or 'N min', found "
                         f"{get['time']!r}")
    used = set(index.values())
    extra = {h: c for i, (h, c) in enumerate(zip(headers, cells)) if i not in used and c}
    shows = _shows(get["sections"])
    return Slot(int(minutes.group(1)), get["sections"], [c for c, _ in shows], get["figure"],
                get["poll"], _poll_refs(get["poll"]), extra, shows)


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
