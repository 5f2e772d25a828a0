"""Sphinx extension of the decks: directives that pull a chapter's parts in at build time.

The decks (written by slides/build.py from book/teaching.md) copy no prose: each slide names
what it shows, and these directives read it from the chapter's notebook while Sphinx reads the
deck, so a deck rebuilt after a chapter changed shows the chapter as it is.

``{chapter-part} CHAPTER`` with ``:section: TITLE`` and ``:item: N``
    item N (0-based) of :func:`items` of that core section of book/CHAPTER.ipynb: its display
    equations (two at most), a code cell with its figures and a few lines of its printed
    output, or a live figure (``{posenc-explorer}``, book/_ext/posenc_explorer.py).
``{chapter-poll} CHAPTER N``
    question N of the chapter's "Check your understanding": the question and its options, then
    the folded answer as a reveal.js fragment (it appears at the next key press).

Roles of the book that the decks cannot resolve (``{term}``, ``{doc}``, ``{ref}``, ``{cite}``)
are replaced by their text. Figures stored in a notebook's outputs are written next to the
doctrees (``<build>/figures/``) and Sphinx copies them to ``_images/``; their alt text is the
cell's ``mystnb.image.alt`` metadata, as on the website.
"""

from __future__ import annotations

import base64
import os
import re
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import plan  # noqa: E402  (slides/plan.py)

#: A display equation of MyST: $$ ... $$ (with an optional label after it) or an amsmath
#: environment on lines of its own.
DISPLAY_MATH = re.compile(r"^\$\$(.*?)\$\$[ \t]*(?:\([^)]*\))?[ \t]*$"
                          r"|^(\\begin\{(\w+\*?)\}.*?\\end\{\3\})[ \t]*$", re.S | re.M)
EXPLORER = re.compile(r"^(`{3,})\{posenc-explorer\}\s+(\w+)\s*$.*?^\1\s*$", re.S | re.M)
ROLE = re.compile(r"\{[\w:-]+\}`([^`]*)`")
#: Equations on one slide, printed output lines under a code cell.
MATH_PER_SLIDE = 2
OUTPUT_LINES = 8


def plain_roles(text: str) -> str:
    """The book's cross-reference roles replaced by their text: {term}`a <b>` -> a."""
    def text_of(match):
        inner = match.group(1)
        return re.sub(r"\s*<[^>]*>$", "", inner) if "<" in inner else inner

    return ROLE.sub(text_of, text)


def items(chapter: str, title: str) -> list:
    """What a core section shows, one slide each, in the chapter's order:
    ("math", [TeX, ...]), ("code", cell), ("explorer", name)."""
    section = next((s for s in plan.sections(chapter) if s.title == title), None)
    if section is None or not section.core:
        raise ValueError(f"{chapter}: no core section {title!r}")
    found = []
    for cell, text in section.parts:
        if text is None:
            found.append(("code", cell))
            continue
        marks = sorted([(m.start(), "math", (m.group(1) or m.group(2)).strip())
                        for m in DISPLAY_MATH.finditer(text)]
                       + [(m.start(), "explorer", m.group(2)) for m in EXPLORER.finditer(text)])
        for _, kind, value in marks:
            if kind == "math" and found and found[-1][0] == "math" \
                    and len(found[-1][1]) < MATH_PER_SLIDE:
                found[-1][1].append(value)
            elif kind == "math":
                found.append(("math", [value]))
            else:
                found.append(("explorer", value))
    return found


def _parse(directive, text: str, node):
    """Parse MyST text into node, with the book's roles made plain."""
    directive.state.nested_parse(StringList(plain_roles(text).splitlines(), source="chapter"),
                                 directive.content_offset, node)
    return node


class ChapterPart(SphinxDirective):
    """``{chapter-part} CHAPTER``: one slide's worth of a core section (see the module)."""

    required_arguments = 1
    option_spec = {"section": directives.unchanged_required, "item": directives.nonnegative_int}

    def run(self):
        chapter, title = self.arguments[0], self.options["section"]
        self.env.note_dependency(str(plan.BOOK / f"{chapter}.ipynb"))
        try:
            kind, value = items(chapter, title)[self.options.get("item", 0)]
        except (ValueError, IndexError) as error:
            raise self.error(f"chapter-part {chapter} {title!r}: {error}")
        box = nodes.container(classes=["chapter-part", f"chapter-part-{kind}"])
        if kind == "math":
            for tex in value:
                box += nodes.math_block(tex, tex, nowrap=tex.startswith("\\begin"), number=None,
                                        docname=self.env.docname)
        elif kind == "explorer":
            _parse(self, f"```{{posenc-explorer}} {value}\n```", box)
        else:
            self._code(chapter, value, box)
        return [box]

    def _code(self, chapter, cell, box):
        box += nodes.literal_block(cell.source, cell.source, language="python")
        printed = []
        for index, output in enumerate(cell.get("outputs", [])):
            data = output.get("data", {})
            if "image/png" in data:
                box += self._figure(chapter, cell, index, data["image/png"])
            elif output.get("name") == "stdout":
                printed += output["text"].splitlines()
            elif "text/plain" in data and output.output_type == "execute_result":
                printed += data["text/plain"].splitlines()
        if printed:
            cut = printed[:OUTPUT_LINES] + (["..."] if len(printed) > OUTPUT_LINES else [])
            text = "\n".join(cut)
            box += nodes.literal_block(text, text, language="nohighlight",
                                       classes=["chapter-output"])

    def _figure(self, chapter, cell, index, png):
        folder = Path(self.env.app.doctreedir).parent / "figures"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{chapter}-cell{cell.index}-{index}.png"
        data = base64.b64decode(png)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        uri = "/" + os.path.relpath(path, self.env.srcdir).replace(os.sep, "/")
        return nodes.image(uri=uri, alt=alt, classes=["chapter-figure"])


class ChapterPoll(SphinxDirective):
    """``{chapter-poll} CHAPTER N``: a check question as a poll, its answer a fragment."""

    required_arguments = 2

    def run(self):
        chapter, number = self.arguments[0], int(self.arguments[1])
        self.env.note_dependency(str(plan.BOOK / f"{chapter}.ipynb"))
        try:
            poll = plan.polls(chapter)[number]
        except (ValueError, KeyError) as error:
            raise self.error(f"chapter-poll {chapter} {number}: {error}")
        box = nodes.container(classes=["poll"])
        _parse(self, poll.stem, box)
        if poll.options:
            options = "\n".join(f"- **{letter}.** {text}" for letter, text in poll.options)
            _parse(self, options, box)[-1]["classes"].append("poll-options")
        answer = nodes.container(classes=["fragment", "poll-answer"])
        box += _parse(self, f"**Answer.** {poll.answer}" if not poll.right
                      else poll.answer, answer)
        return [box]


def setup(app):
    app.add_directive("chapter-part", ChapterPart)
    app.add_directive("chapter-poll", ChapterPoll)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
