"""The time rule of the lecture decks, and the plan computed from the decks with it.

    python slides/timing.py [OUTPUT]     (default OUTPUT: _build/plan.md)

A deck (slides/lecture-N.md) is a list of slots (its level-1 headings after the title), each a
list of slides (the slot's title slide, then its level-2 headings). Every slide holds one
``{notes} KIND`` directive (``{slot}`` on a slot's title slide, a slide of kind ``title``), and
the rule below gives its minutes from its kind: the minutes are computed, never typed. The
speaker notes (slides/_ext/deck_notes.py) and the plan of book/teaching.md (the table this
script writes, which the page includes) both read them from here.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DECKS = sorted(HERE.glob("lecture-*.md"))
#: The most a lecture of 90 minutes may plan: 5 minutes stay free (late start, questions).
LONGEST = 85

#: Minutes per slide, by kind: (minutes, what the slide is, why it takes that long). A ``step``
#: slide costs its minutes once per step it reveals (``:steps: N``).
RULE = {
    "title": (0.5, "a slot's title slide", "say what the slot is for, and switch topic"),
    "text": (1.5, "a headline and up to three bullets", "read, say them in other words"),
    "figure": (1.5, "a static figure alone", "point at the axes, then at what the figure shows"),
    "output": (1.5, "what a chapter's cell prints", "read the numbers that make the point"),
    "table": (1.5, "a table", "read one row and one column aloud"),
    "code": (2, "up to 12 lines of code", "read every line once, as the students cannot run it"),
    "equation": (2, "an equation with its symbols", "name each symbol, point at it"),
    "step": (1, "one step of board material revealed at a key press",
             "one line said and written per step; a proof of four steps takes 4 minutes"),
    "live": (3, "a live figure, driven in class", "move one control, ask what will happen, move it"),
    "poll": (3, "a poll: read, vote, reveal, discuss", "1 minute to read and vote, 2 to discuss "
             "the wrong options"),
    "exercise": (4, "students compute by hand", "2 to 3 minutes of work, 1 to compare"),
}

FENCE = re.compile(r"^(`{3,}|:{3,})\{(notes|slot|chapter-poll)\}\s*(.*?)\s*$")
OPTION = re.compile(r"^:([\w-]+):\s*(.*?)\s*$")
LABEL = re.compile(r"^\(([\w-]+)\)=\s*$")


@dataclass
class Slide:
    headline: str
    line: int  #: 1-based line of its heading in the deck's source
    label: str = ""
    kind: str = ""
    options: dict = field(default_factory=dict)  #: the notes' (or slot's) options
    say: str = ""  #: the notes' text
    poll: tuple = ()  #: (chapter, number) of a chapter-poll on the slide
    poll_options: dict = field(default_factory=dict)  #: :predict: or :check:

    @property
    def minutes(self) -> float:
        if self.kind not in RULE:
            raise ValueError(f"line {self.line}: slide {self.headline!r}: kind {self.kind!r} "
                             f"is none of {', '.join(RULE)}")
        steps = int(self.options.get("steps", 1)) if self.kind == "step" else 1
        return RULE[self.kind][0] * steps


@dataclass
class Slot:
    title: str
    slides: list

    @property
    def minutes(self) -> float:
        return sum(s.minutes for s in self.slides)

    @property
    def options(self) -> dict:
        return self.slides[0].options


@dataclass
class Deck:
    name: str
    title: str
    opening: Slide  #: the deck's title slide (counted in the first slot's minutes)
    slots: list

    @property
    def minutes(self) -> float:
        return self.opening.minutes + sum(s.minutes for s in self.slots)

    def slot_minutes(self, number: int) -> float:
        """Minutes of slot `number` (1-based), the deck's title slide counted in the first."""
        extra = self.opening.minutes if number == 1 else 0
        return extra + self.slots[number - 1].minutes

    def slides(self) -> list:
        """Every slide in order, the title slide first."""
        return [self.opening] + [s for slot in self.slots for s in slot.slides]

    def where(self, index: int) -> tuple:
        """(slot number, slot, minute the slide starts at) of slide `index` of slides()."""
        start, count = 0.0, 0
        for number, slot in enumerate(self.slots, 1):
            for slide in ([self.opening] if number == 1 else []) + slot.slides:
                if count == index:
                    return number, slot, start
                start += slide.minutes
                count += 1
        raise IndexError(index)


def parse(path: Path) -> Deck:
    """The slots and slides of a deck's source."""
    slides, label, fence, directive = [], "", None, None
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        opened = FENCE.match(line) if fence is None else None
        if fence is not None:
            if directive is not None:
                option = OPTION.match(line)
                if option and not directive[2]:
                    directive[1][option.group(1)] = option.group(2)
                elif line.strip() and not line.startswith(fence):
                    directive[2].append(line.strip())
            if line.strip() == fence:
                if directive is not None:
                    _close(slides[-1], *directive)
                fence, directive = None, None
            continue
        if opened:
            if not slides:
                raise ValueError(f"{path}:{number}: a directive before the first heading")
            fence, directive = opened.group(1), (opened.group(2), {}, [], opened.group(3))
            continue
        if re.match(r"^(`{3,}|:{3,})", line):
            fence = re.match(r"^(`{3,}|:{3,})", line).group(1)
            continue
        if LABEL.match(line):
            label = LABEL.match(line).group(1)
            continue
        heading = re.match(r"^(#{1,2})\s+(.*?)\s*$", line)
        if heading:
            slides.append(Slide(heading.group(2), number, label))
            slides[-1].level = len(heading.group(1))
            label = ""
    if not slides or slides[0].level != 1:
        raise ValueError(f"{path}: the deck must start with its title (# ...)")
    slots = []
    for slide in slides[1:]:
        if slide.level == 1:
            slots.append(Slot(slide.headline, []))
        elif not slots:
            raise ValueError(f"{path}:{slide.line}: a slide before the first slot (# ...)")
        slots[-1].slides.append(slide)
    return Deck(Path(path).stem, slides[0].headline, slides[0], slots)


def _close(slide: Slide, name: str, options: dict, body: list, argument: str):
    if name == "chapter-poll":
        chapter, number = argument.split()
        slide.poll, slide.poll_options = (chapter, int(number)), options
        return
    if slide.kind:
        raise ValueError(f"line {slide.line}: slide {slide.headline!r} has two notes")
    slide.kind = "title" if name == "slot" else argument
    slide.options, slide.say = options, " ".join(body)


def decks() -> list:
    return [parse(path) for path in DECKS]


def _minutes(value: float) -> str:
    return f"{value:g}"


def _kinds(slides: list) -> str:
    counts = {}
    for slide in slides:
        counts[slide.kind] = counts.get(slide.kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def rule_table() -> str:
    rows = ["| Kind of slide | Minutes | What it is | Why |", "| --- | --- | --- | --- |"]
    rows += [f"| {kind} | {_minutes(m)}{' per step' if kind == 'step' else ''} | {what} | {why} |"
             for kind, (m, what, why) in RULE.items()]
    return "\n".join(rows)


def plan_markdown(found: list | None = None) -> str:
    """The plan of book/teaching.md: a table per lecture, slot minutes computed by RULE."""
    out = ["<!-- Written by slides/timing.py from slides/lecture-*.md: do not edit. -->", "",
           "The time rule, per kind of slide:", "", rule_table(), ""]
    for deck in found if found is not None else decks():
        out += [f"**{deck.title}** ({_minutes(deck.minutes)} minutes of the 90, computed from "
                f"{len(deck.slides())} slides; at most {LONGEST})", "",
                "| Slot | Minutes | Slides by kind | Polls | If it runs long, drop first | "
                "Out of the lecture |", "| --- | --- | --- | --- | --- | --- |"]
        for number, slot in enumerate(deck.slots, 1):
            slides = ([deck.opening] if number == 1 else []) + slot.slides
            polls = "; ".join(f"{s.poll[0]} {s.poll[1]} "
                              f"({'predict' if 'predict' in s.poll_options else 'check'})"
                              for s in slides if s.poll)
            out.append(f"| {number}. {slot.title} | {_minutes(deck.slot_minutes(number))} | "
                       f"{_kinds(slides)} | {polls or '-'} | {slot.options.get('drop', '-')} | "
                       f"{slot.options.get('moved', '-')} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    output = Path(argv[0] if argv else ROOT / "_build" / "plan.md")
    found = decks()
    text = plan_markdown(found)
    for deck in found:
        if deck.minutes > LONGEST:
            raise SystemExit(f"{deck.name}: {deck.minutes} minutes, more than {LONGEST}")
    output.parent.mkdir(parents=True, exist_ok=True)
    if not output.exists() or output.read_text() != text:
        output.write_text(text)


if __name__ == "__main__":
    main()
