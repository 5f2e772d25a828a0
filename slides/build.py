"""Build the lecture decks: one reveal.js deck per lecture of book/teaching.md's plans.

    python slides/build.py [--quiet] [--work DIR] [OUTPUT]     (default OUTPUT: _build/slides)

1. Reads the two-lecture plan's tables (and the four-lecture plan's, when it has tables) with
   slides/plan.py and writes one MyST source per lecture into <OUTPUT>/../.slides/src: a title
   slide, then for each slot (a row of the table) a slide with the slot's sections and speaker
   notes giving its minutes, a slide per equation, code cell or live figure of the core
   sections the slot names (by reference: directives of slides/_ext/chapter_parts.py that read
   the notebooks while Sphinx builds), the plan's live figures not shown yet, and a slide per
   poll, where the Poll cell places it (slides/README.md).
2. Runs Sphinx's revealjs builder (sphinx-revealjs) with slides/conf.py, warnings as errors,
   into OUTPUT, and prints the decks' paths (unless --quiet: `make slides` prints them).

The sources are written only when their text changes, so Sphinx rereads only what changed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE))
import plan  # noqa: E402
from chapter_parts import items  # noqa: E402

#: {plan heading in teaching.md: file name prefix of its decks}
PLANS = {"Two lectures": "lecture", "Four lectures": "four-lectures"}


def _plain(text: str) -> str:
    """A cell of the plan for a slide or a note: {doc}`x` becomes the chapter's title."""
    text = re.sub(r"\{doc\}`(?:([^`<]*?)\s*<)?([^`>]+)>?`",
                  lambda m: m.group(1) or _title(m.group(2)), text)
    return re.sub(r"\{[\w:-]+\}`(?:([^`<]*?)\s*<[^>]*>|([^`]*))`",
                  lambda m: m.group(1) or m.group(2), text)


def _title(doc: str) -> str:
    path = plan.BOOK / f"{doc}.ipynb"
    if path.exists():
        return plan.chapter_title(doc)
    md = plan.BOOK / f"{doc}.md"
    match = re.search(r"^# (.*)$", md.read_text(), re.M) if md.exists() else None
    return match.group(1).strip() if match else doc


def explorer_figures() -> dict:
    """{figure name: heading} of book/explore.md, the page of every live figure."""
    found, heading = {}, ""
    for line in (plan.BOOK / "explore.md").read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        match = re.match(r"^`{3,}\{posenc-explorer\}\s+(\w+)", line)
        if match:
            found[match.group(1)] = heading
    return found


def plan_figures(text: str) -> list:
    """The live figures a Live figure cell names ("the table and the rotation"): each part
    of the cell matched to the figure whose name and explore.md heading share most words."""
    figures = explorer_figures()
    found = []
    for part in re.split(r";|,| and (?=the |[A-Z])", re.sub(r"\([^)]*\)", "", _plain(text))):
        words = plan._words(part)
        if not words:
            continue
        scores = {name: len(words & (plan._words(heading) | {name}))
                  for name, heading in figures.items()}
        best = max(scores.values())
        winners = [name for name, score in scores.items() if score == best]
        if best == 0 or len(winners) > 1:
            raise ValueError(f"teaching.md: which live figure is {part.strip()!r}? "
                             f"One of {', '.join(f'{n} ({h})' for n, h in figures.items())}")
        found.append(winners[0])
    return found


def _directive(name: str, arguments: str = "", options: dict | None = None, body: str = ""):
    lines = [f"```{{{name}}} {arguments}".rstrip()]
    lines += [f":{key}: {value}" for key, value in (options or {}).items()]
    lines += ([body] if body else []) + ["```", ""]
    return "\n".join(lines)


def _notes(text: str) -> str:
    return _directive("revealjs-notes", body=text)


def deck(lecture: plan.Lecture, plan_name: str, count: int) -> str:
    """The MyST source of one lecture's deck."""
    out = ["---", "orphan: true", "---", "",
           f"# Lecture {lecture.number}: {lecture.title}", ""]
    slots = len(lecture.slots)
    out.append(_notes(f"{plan_name} plan, lecture {lecture.number} of {count}: "
                      f"{lecture.minutes} minutes in {slots} slots. Press S for this window, "
                      "Esc for the overview."))
    out.append("\n".join(f"{n}. {_plain(s.sections)} ({s.minutes} min)"
                         for n, s in enumerate(lecture.slots, 1)) + "\n")
    start = 0
    headings = explorer_figures()
    for n, slot in enumerate(lecture.slots, 1):
        tag = f"Slot {n} of {slots} ({slot.minutes} min"
        titles = " · ".join(dict.fromkeys(_title(c) for c in slot.chapters))
        out += [f"# {titles}", "", _plain(slot.sections), ""]
        note = [f"{tag}, minutes {start} to {start + slot.minutes} of {lecture.minutes}).",
                f"Show: {_plain(slot.sections)}."]
        if slot.figure:
            note.append(f"Live figure: {_plain(slot.figure)}.")
        if slot.poll:
            note.append(f"Poll: {_plain(slot.poll)}.")
        note += [f"{header}: {_plain(cell)}." for header, cell in slot.extra.items()]
        out.append(_notes(" ".join(note)))
        start += slot.minutes
        shown, _ = plan.shown_sections(slot)
        slides = [[] for _ in range(len(shown) + 1)]  # the slides of each section, then the end
        figures = set()
        for k, (chapter, section) in enumerate(shown):
            for index, (kind, value) in enumerate(items(chapter, section.title)):
                figures |= {value} if kind == "explorer" else set()
                slides[k] += [f"## {section.title}", "",
                              _directive("chapter-part", chapter,
                                         {"section": section.title, "item": index}),
                              _notes(f"{tag}). {_title(chapter)}: {section.title}.")]
        for name in plan_figures(slot.figure):
            if name not in figures:
                slides[-1] += [f"## Live figure: {headings[name]}", "",
                               _directive("posenc-explorer", name),
                               _notes(f"{tag}). Live figure: {_plain(slot.figure)}.")]
        polls = [[] for _ in slides]
        for ref in slot.polls:
            when = f" ({ref.when} {ref.what})" if ref.when else ""
            polls[plan.place(ref, [s.title for _, s in shown])] += [
                f"## Poll: {_title(ref.chapter)}, question {ref.number}", "",
                _directive("chapter-poll", f"{ref.chapter} {ref.number}"),
                _notes(f"{tag}). Poll{when}: {_title(ref.chapter)}, question {ref.number}. "
                       "Let the class vote, then show the answer (next key).")]
        for before, section in zip(polls, slides):  # the last: live figures, then the polls
            out += (section + before) if before is polls[-1] else (before + section)
    return "\n".join(out) + "\n"


def write_sources(src: Path) -> list:
    """Write every deck's source into src; return their names (without .md)."""
    src.mkdir(parents=True, exist_ok=True)
    names = []
    for plan_name, prefix in PLANS.items():
        try:
            lectures = plan.lectures(plan=plan_name)
        except ValueError:
            lectures = []
        for lecture in lectures:
            name = f"{prefix}-{lecture.number}"
            text = deck(lecture, plan_name, len(lectures))
            path = src / f"{name}.md"
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
            names.append(name)
    for stale in set(p.stem for p in src.glob("*.md")) - set(names):
        (src / f"{stale}.md").unlink()
    if "lecture-1" not in names:
        raise SystemExit("book/teaching.md: no two-lecture plan table found")
    return names


def main(argv=None):
    import argparse

    from sphinx.cmd.build import build_main

    parser = argparse.ArgumentParser(description="Build the lecture decks (slides/README.md).")
    parser.add_argument("output", nargs="?", default="_build/slides", type=Path,
                        help="the decks' folder (default: _build/slides)")
    parser.add_argument("--work", type=Path, help="the decks' sources and Sphinx's saved state "
                        "(default: .slides beside OUTPUT)")
    parser.add_argument("--quiet", action="store_true", help="do not print the decks' paths")
    args = parser.parse_args(argv)
    output = args.output.resolve()
    work = (args.work or output.parent / ".slides").resolve()
    names = write_sources(work / "src")
    status = build_main(["-b", "revealjs", "-c", str(HERE), "-d", str(work / "doctrees"),
                         "-W", "-n", "--keep-going", "-q", str(work / "src"), str(output)])
    if status == 0 and not args.quiet:
        for name in names:
            print(output / f"{name}.html")
    return status


if __name__ == "__main__":
    sys.exit(main())
