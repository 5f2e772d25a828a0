"""Sphinx extension of the decks: directives that bring a chapter's content in by reference.

A deck's source (slides/lecture-N.md) copies no equation, figure, code or output: it names the
chapter (book/CHAPTER.ipynb) and the cell (by its id, which notebooks keep), and these directives
read the cell while Sphinx reads the deck, so a deck rebuilt after a chapter changed shows the
chapter as it is. A reference that finds nothing is an error (the build runs with -W).

``{chapter-math} CHAPTER CELL``
    Display equation ``:index:`` (0-based, default 0) of a markdown cell, always typeset as
    display math (``\\[ ... \\]``: an equation that starts with ``\\begin{aligned}`` and goes on
    after it is wrapped too). ``:inline: 2 0`` takes the cell's inline equations 2 and 0
    instead, one below the other. ``:steps:`` splits each equation at its top-level ``=`` and
    reveals the pieces one per key press (reveal.js fragments): board material for proofs.
``{chapter-list} CHAPTER CELL``
    List ``:index:`` (0-based) of a markdown cell (bulleted or numbered), ``:items: 1-3`` to keep
    some of its items (1-based), ``:fragments:`` to reveal them one per key press.
``{chapter-table} CHAPTER CELL``
    Markdown table ``:index:`` of a cell. ``:fill: 2`` shows the first 2 columns and the header,
    and fills the other cells row by row, one row per key press (a table done on the board).
``{chapter-code} CHAPTER CELL``
    Lines ``:lines: 9-11`` (1-based, default all) of a code cell; lines that check (``assert``)
    or draw (``plt.``, ``ax.``, ``fig``) are refused: they stay in the chapter.
``{chapter-output} CHAPTER CELL``
    What a code cell prints (stdout and its result), ``:lines:`` to keep some lines (1-based).
``{chapter-figure} CHAPTER CELL``
    Figure ``:index:`` (default 0) of a code cell's outputs, alone on the slide, with the alt
    text the book gives it (``mystnb.image.alt``).
``{chapter-poll} CHAPTER N``
    Question N of the chapter's "Check your understanding" as a poll: the question and its
    options, then the folded answer as a fragment (it appears at the next key press).
    ``:predict: why`` (asked before the idea on purpose) or ``:check: LABEL`` (asked after the
    slide labelled LABEL, which teaches the answer); tests/test_slides.py checks the order.

The book's roles (``{term}``, ``{doc}``, ``{ref}``, ``{cite}``) become their text.
"""

from __future__ import annotations

import base64
import html
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
INLINE_MATH = re.compile(r"(?<![$\\])\$([^$\n]+(?:\n[^$\n]+)?)\$(?!\$)")
ROLE = re.compile(r"\{[\w:-]+\}`([^`]*)`")
#: A cross-reference without words of its own, in parentheses: " ({ref}`odd-d-model`)".
BARE_REFERENCE = re.compile(r"\s*\(\{(?:ref|doc|numref|eq)\}`[^`<]*`\)")
#: Code or output short enough for the large font (deck-kinds.css, .output-large).
LARGE_OUTPUT = (14, 72)  # at most 14 lines of at most 72 characters
#: Top-level amsmath environments, typeset as they are (the others go inside \[ ... \]).
TOP_LEVEL = re.compile(r"^\\begin\{(equation|align|gather|multline|flalign|alignat)\*?\}"
                       r".*\\end\{\1\*?\}$", re.S)
#: Lines of a code cell that stay in the chapter: self-checks and plotting.
NOT_ON_SLIDES = re.compile(r"^\s*(assert\b|np\.testing\.|plt\.|ax\.|fig\b|fig,)")


def plain_roles(text: str) -> str:
    """The book's cross-reference roles replaced by their text: {term}`a <b>` -> a. A bare
    reference in parentheses, " ({ref}`odd-d-model`)", names a page the slide cannot link:
    it is dropped (a slide would show the label, not words)."""
    def text_of(match):
        inner = match.group(1)
        return re.sub(r"\s*<[^>]*>$", "", inner) if "<" in inner else inner

    return ROLE.sub(text_of, BARE_REFERENCE.sub("", text))


def _lines(spec: str, count: int) -> list:
    """0-based indices of the 1-based line ranges "2-4 7" (every line when spec is empty)."""
    if not spec:
        return list(range(count))
    found = []
    for part in spec.split():
        first, _, last = part.partition("-")
        found += range(int(first) - 1, int(last or first))
    if not found or max(found) >= count or min(found) < 0:
        raise ValueError(f"lines {spec!r} of {count}")
    return found


def display_math(text: str) -> list:
    return [(m.group(1) or m.group(2)).strip() for m in DISPLAY_MATH.finditer(text)]


def inline_math(text: str) -> list:
    return [m.group(1).strip() for m in INLINE_MATH.finditer(DISPLAY_MATH.sub("", text))]


def split_at_equals(tex: str) -> list:
    """Pieces of an equation at its top-level '=' (outside braces): ["a", "= b", "= c"]."""
    pieces, depth, current = [], 0, ""
    for char in tex:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "=" and depth == 0 and current.strip():
            pieces.append(current.strip())
            current = "= "
            continue
        current += char
    return pieces + [current.strip().rstrip(".,").strip()]


def markdown_blocks(text: str, kind: str) -> list:
    """The lists ("list") or tables ("table") of markdown text, each as its lines."""
    blocks, current, fence = [], [], False
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        starts = (re.match(r"^([-*]|\d+\.)\s", line) if kind == "list"
                  else line.startswith("|"))
        goes_on = kind == "list" and current and line.startswith("  ") and line.strip()
        if not fence and (starts or goes_on):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks


def math_html(text: str) -> str:
    """Escaped text with its $...$ as MathJax's inline math (as Sphinx writes it)."""
    out, last = [], 0
    for match in INLINE_MATH.finditer(text):
        out += [html.escape(plain_roles(text[last:match.start()]).replace("`", "")),
                '<span class="math notranslate nohighlight">\\(' + html.escape(match.group(1))
                + "\\)</span>"]
        last = match.end()
    out.append(html.escape(plain_roles(text[last:]).replace("`", "")))
    return "".join(out)


class ChapterDirective(SphinxDirective):
    """Base: arguments CHAPTER CELL; self.cell is the cell."""

    required_arguments = 2
    option_spec = {"index": directives.nonnegative_int, "lines": directives.unchanged,
                   "items": directives.unchanged, "inline": directives.unchanged,
                   "fill": directives.nonnegative_int, "steps": directives.flag,
                   "fragments": directives.flag}
    cell_type = "markdown"

    def run(self):
        chapter, cell_id = self.arguments
        self.env.note_dependency(str(plan.BOOK / f"{chapter}.ipynb"))
        try:
            self.chapter, self.cell = chapter, plan.cell(chapter, cell_id)
            if self.cell.cell_type != self.cell_type:
                raise ValueError(f"cell {cell_id} is a {self.cell.cell_type} cell, not "
                                 f"{self.cell_type}")
            return self.content_nodes()
        except (ValueError, IndexError, KeyError) as error:
            raise self.error(f"{self.name} {chapter} {cell_id}: {error}")

    def parse(self, text: str, node):
        """Parse MyST text into node, with the book's roles made plain."""
        self.state.nested_parse(StringList(plain_roles(text).splitlines(), source="chapter"),
                                self.content_offset, node)
        return node

    def content_nodes(self):
        raise NotImplementedError


def _math(tex: str, docname: str):
    return nodes.math_block(tex, tex, nowrap=bool(TOP_LEVEL.match(tex)), number=None,
                            docname=docname)


class ChapterMath(ChapterDirective):
    def content_nodes(self):
        if "inline" in self.options:
            found = inline_math(self.cell.source)
            equations = [found[int(n)] for n in self.options["inline"].split()]
        else:
            equations = [display_math(self.cell.source)[self.options.get("index", 0)]]
        # the chapter's sentence goes on after its equation: its comma or full stop stays there
        equations = [re.sub(r"\s*(\\[,;!]|\\quad|\\qquad|\s)*[.,;]\s*$", "", tex)
                     for tex in equations]
        box = nodes.container(classes=["slide-math"])
        for number, tex in enumerate(equations):
            if "steps" not in self.options:
                box += _math(tex, self.env.docname)
                continue
            for piece in split_at_equals(tex):
                step = nodes.container(classes=["fragment", "proof-step"]
                                       + (["proof-next"] if number and not piece.startswith("=")
                                          else []))
                step += _math(piece, self.env.docname)
                box += step
        return [box]


class ChapterList(ChapterDirective):
    def content_nodes(self):
        lines = markdown_blocks(self.cell.source, "list")[self.options.get("index", 0)]
        items, current = [], []
        for line in lines:
            if re.match(r"^([-*]|\d+\.)\s", line) and current:
                items.append(current)
                current = []
            current.append(line)
        items.append(current)
        keep = _lines(self.options.get("items", ""), len(items))
        text = "\n".join(line for n in keep for line in items[n])
        box = self.parse(text, nodes.container(classes=["slide-list"]))
        if "fragments" in self.options:
            for item in box.findall(nodes.list_item):
                item["classes"].append("fragment")
        return [box]


class ChapterTable(ChapterDirective):
    def content_nodes(self):
        lines = markdown_blocks(self.cell.source, "table")[self.options.get("index", 0)]
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
        header, body = rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]
        fill = self.options.get("fill")
        out = ["<table class='slide-table'><thead><tr>"]
        out += [f"<th>{math_html(c)}</th>" for c in header]
        out.append("</tr></thead><tbody>")
        for number, row in enumerate(body):
            out.append("<tr>")
            for column, text in enumerate(row):
                hidden = fill is not None and column >= fill
                attributes = (f" class='fragment' data-fragment-index='{number}'" if hidden
                              else "")
                out.append(f"<td{attributes}>{math_html(text)}</td>")
            out.append("</tr>")
        out.append("</tbody></table>")
        return [nodes.raw("", "".join(out), format="html")]


class ChapterCode(ChapterDirective):
    cell_type = "code"

    def content_nodes(self):
        source = self.cell.source.splitlines()
        lines = [source[n] for n in _lines(self.options.get("lines", ""), len(source))]
        refused = [line for line in lines if NOT_ON_SLIDES.match(line)]
        if refused:
            raise ValueError(f"lines that stay in the chapter (checks, plotting): {refused}")
        text = "\n".join(lines).strip("\n")
        return [_boxed(nodes.literal_block(text, text, language="python"),
                       ["slide-code"] + (["output-large"] if _short(text) else []))]


def _short(text: str) -> bool:
    """Whether a code block or output fits the large font (LARGE_OUTPUT)."""
    lines, width = LARGE_OUTPUT
    found = text.splitlines()
    return len(found) <= lines and max(len(line) for line in found) <= width


def _boxed(block, classes: list):
    """A literal block in a container with classes: sphinx-revealjs writes a block as a bare
    <pre><code> and drops the block's own classes, not a container's."""
    box = nodes.container(classes=classes)
    box += block
    return box


def printed(cell) -> list:
    """The lines a code cell prints: its stdout and its result's text."""
    found = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if output.get("name") == "stdout":
            found += output["text"].splitlines()
        elif "text/plain" in data and output.output_type == "execute_result":
            found += data["text/plain"].splitlines()
    return found


class ChapterOutput(ChapterDirective):
    cell_type = "code"

    def content_nodes(self):
        found = printed(self.cell)
        if not found:
            raise ValueError("the cell prints nothing")
        text = "\n".join(found[n] for n in _lines(self.options.get("lines", ""), len(found)))
        return [_boxed(nodes.literal_block(text, text, language="nohighlight"),
                       ["chapter-output"] + (["output-large"] if _short(text) else []))]


class ChapterFigure(ChapterDirective):
    cell_type = "code"

    def content_nodes(self):
        pngs = [(n, o["data"]["image/png"]) for n, o in enumerate(self.cell.get("outputs", []))
                if "image/png" in o.get("data", {})]
        index, png = pngs[self.options.get("index", 0)]
        folder = Path(self.env.app.doctreedir).parent / "figures"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.chapter}-{self.cell.id}-{index}.png"
        data = base64.b64decode(png)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        alt = self.cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        if not alt:
            raise ValueError("the figure has no alt text (mystnb.image.alt)")
        uri = "/" + os.path.relpath(path, self.env.srcdir).replace(os.sep, "/")
        return [nodes.image(uri=uri, alt=alt, classes=["figure-alone"])]


class ChapterPoll(SphinxDirective):
    """``{chapter-poll} CHAPTER N``: a check question as a poll, its answer a fragment."""

    required_arguments = 2
    option_spec = {"predict": directives.unchanged_required,
                   "check": directives.unchanged_required}

    def run(self):
        chapter, number = self.arguments[0], int(self.arguments[1])
        self.env.note_dependency(str(plan.BOOK / f"{chapter}.ipynb"))
        if len(set(self.options) & {"predict", "check"}) != 1:
            raise self.error(f"chapter-poll {chapter} {number}: say :predict: or :check:")
        try:
            poll = plan.polls(chapter)[number]
        except (ValueError, KeyError) as error:
            raise self.error(f"chapter-poll {chapter} {number}: {error}")
        kind = "predict" if "predict" in self.options else "check"
        box = nodes.container(classes=["poll", f"poll-{kind}"])
        self.parse(poll.stem, box)
        if poll.options:
            options = "\n".join(f"- **{letter}.** {text}" for letter, text in poll.options)
            self.parse(options, box)[-1]["classes"].append("poll-options")
        answer = nodes.container(classes=["fragment", "poll-answer"])
        box += self.parse(f"**Answer.** {poll.answer}" if not poll.right else poll.answer,
                          answer)
        return [box]

    parse = ChapterDirective.parse


def setup(app):
    for name, directive in [("chapter-math", ChapterMath), ("chapter-list", ChapterList),
                            ("chapter-table", ChapterTable), ("chapter-code", ChapterCode),
                            ("chapter-output", ChapterOutput), ("chapter-figure", ChapterFigure),
                            ("chapter-poll", ChapterPoll)]:
        app.add_directive(name, directive)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
