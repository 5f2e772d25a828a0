"""Print the lecture handouts (`make handouts`) into _build/handouts/:

- <deck>-with-notes.pdf for every deck of _build/slides/ (`make slides`): reveal.js's print view
  with the speaker notes on a page after each slide (`?print-pdf&showNotes=separate-page`), a
  page per slide and per step of its fragments (a poll's answer), as slides/README.md says;
- student-sheet.pdf: one A4 page for the unit, made from the chapter book/formula.ipynb by
  reference (its section "The formula": the formula, its symbols, the angular frequency and the
  wavelength; its worked example "I am a robot", with the table's entries left empty for the
  students to compute by hand). Its HTML, student-sheet.html, is kept beside it.

Both are printed by headless Chromium through Playwright, with tools/print_pdf.py's page server
and waits (the book's PDF is printed the same way); MathJax is the decks' own offline copy.

Usage: python tools/print_handouts.py [SLIDES_DIR] [OUTPUT_DIR]   (OUTPUT_DIR beside SLIDES_DIR)
Environment: POSENC_CHROMIUM, the browser executable (default /usr/bin/chromium).
"""

import html
import re
import sys
import time
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from print_pdf import CHROMIUM, ROOT, STATIC_FIGURES_JS, TYPESET_JS, served_page  # noqa: E402

SLIDES = ROOT / "_build" / "slides"
HANDOUTS = ROOT / "_build" / "handouts"
CHAPTER = ROOT / "book" / "formula.ipynb"
SHEET = "student-sheet"
NOTES_VIEW = "?print-pdf&showNotes=separate-page"
VIEWPORT = {"width": 1280, "height": 720}
# The chapter's sections the sheet shows: (heading, the first line shown, the first line not
# shown), a line named by how it starts (None: the cell's first line after the heading, its end).
FORMULA = ("## The formula", "$$", None)  # from the formula on: its source's citation stays out
EXAMPLE = ("## Worked example 1", None, "The cell types")

SHEET_CSS = """
@page { size: A4; margin: 14mm 16mm; }
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: 10.5pt;
  line-height: 1.35; color: #000; margin: 0; }
header { display: flex; justify-content: space-between; align-items: baseline;
  border-bottom: 1.5pt solid #000; margin-bottom: 6pt; }
h1 { font-size: 15pt; margin: 0 0 3pt; }
h2 { font-size: 12pt; margin: 9pt 0 3pt; }
.name { font-size: 10.5pt; }
ul { margin: 3pt 0; padding-left: 16pt; }
li + li { margin-top: 2pt; }
p { margin: 3pt 0; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.92em; }
mjx-container[display="true"] { margin: 5pt 0 !important; }
table { width: 100%; border-collapse: collapse; margin-top: 5pt; font-size: 9.5pt; }
th, td { border: 0.8pt solid #000; padding: 3pt 4pt; text-align: center; vertical-align: middle; }
th { background: #eee; }
td { height: 30pt; }
footer { margin-top: 8pt; font-size: 8.5pt; color: #333; }
"""


def _section(cells, heading, start, stop):
    """The markdown of the cell that starts with `heading`, from the first line that starts with
    `start` (None: the heading's next line) up to the first that starts with `stop` (None: its
    end)."""
    def find(lines, prefix):
        for number, line in enumerate(lines):
            if line.startswith(prefix):
                return number
        raise SystemExit(f"{CHAPTER.name}, {heading!r}: no line starts with {prefix!r}")

    for cell in cells:
        if cell.cell_type == "markdown" and cell.source.startswith(heading):
            lines = cell.source.splitlines()[1:]
            lines = lines[find(lines, start):] if start else lines
            lines = lines[:find(lines, stop)] if stop else lines
            return "\n".join(lines).strip()
    raise SystemExit(f"{CHAPTER.name}: no markdown cell starts with {heading!r}")


def _plain(markdown):
    """MyST roles as the sheet shows them: a term or a document by its text, references and
    citations dropped (the sheet has no chapters to point to)."""
    markdown = re.sub(r"\s*\(\{(?:ref|numref|doc)\}`[^`]*`\)", "", markdown)
    markdown = re.sub(r"\s*\{cite(?::\w+)?\}`[^`]*`", "", markdown)
    markdown = re.sub(r"\s*\(see \{doc\}`[^`]*`\)", "", markdown)
    return re.sub(r"\{[\w:-]+\}`(?:([^`<]*?)\s*<[^>]*>|([^`]*))`",
                  lambda m: m.group(1) or m.group(2), markdown)


def _empty_table(markdown):
    """The example's table with its pos and word columns kept and every entry left blank."""
    out, header = [], None
    for line in markdown.splitlines():
        cells = line.strip().strip("|").split("|")
        if line.startswith("|") and len(cells) > 2 and not set(line) <= set("|-: "):
            if header is None:
                header = line
            else:  # a row of values: keep the position and the word
                line = "| " + " | ".join(cells[:2] + ["&nbsp;"] * (len(cells) - 2)) + " |"
        out.append(line)
    text = "\n".join(out)
    # the chapter's sentence that leads to the written-out table leads to the empty one
    return text.replace("Every entry, written out:", "Write every entry, first as a formula "
                        "(e.g. $\\sin 1$), then as a number with 4 decimals:")


def _render(markdown):
    def math(content, options):
        opening, closing = (r"\[", r"\]") if options["display_mode"] else (r"\(", r"\)")
        return opening + html.escape(content) + closing

    md = MarkdownIt("commonmark").enable("table")
    dollarmath_plugin(md, renderer=math)
    return md.render(markdown)


def sheet_html(mathjax):
    """The student sheet's HTML page; `mathjax`: the URL of MathJax's tex-chtml.js."""
    cells = nbformat.read(CHAPTER, as_version=4).cells
    title = next(line[2:] for c in cells if c.cell_type == "markdown"
                 for line in c.source.splitlines() if line.startswith("# "))
    formula = _render(_plain(_section(cells, *FORMULA)))
    example_heading = next(line[3:] for c in cells if c.cell_type == "markdown"
                           for line in c.source.splitlines() if line.startswith(EXAMPLE[0]))
    example = _render(_empty_table(_plain(_section(cells, *EXAMPLE))))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Student sheet: {html.escape(title)}</title>
<style>{SHEET_CSS}</style>
<script>MathJax = {{chtml: {{scale: 1.0}}}};</script>
<script defer src="{mathjax}"></script>
</head><body>
<header><h1>Sinusoidal positional encoding: student sheet</h1>
<span class="name">Name: ______________________</span></header>
<h2>{html.escape(title)}</h2>
{formula}
<h2>{html.escape(example_heading)}</h2>
{example}
<footer>From the chapter "{html.escape(title)}" of the course Positional Encoding, from Sines to
Layers (book/formula.ipynb), printed by tools/print_handouts.py.</footer>
</body></html>
"""


def _wait_for_deck(page):
    """Until reveal.js has laid out the print view and MathJax and the live figures' stills are
    ready; return the number of pages reveal.js made (slides, fragment steps, notes)."""
    page.wait_for_function("() => window.Reveal && Reveal.isReady() && window.MathJax"
                           " && MathJax.startup && MathJax.startup.promise", timeout=60_000)
    page.wait_for_function("document.querySelector('.pdf-page')", timeout=60_000)
    maths = page.evaluate(TYPESET_JS)
    if maths["errors"]:
        raise SystemExit(f"{page.url}: MathJax errors: {maths}")
    page.wait_for_function("""() => Array.from(document.images).every(img => img.complete
        && !img.currentSrc.startsWith("data:") || img.closest("noscript"))""", timeout=60_000)
    figures = page.evaluate(STATIC_FIGURES_JS)
    if figures["missing"]:
        raise SystemExit(f"{page.url}: live figures' still images not shown: {figures}")
    return page.evaluate("document.querySelectorAll('.pdf-page, .speaker-notes-pdf"
                         "[data-layout=separate-page]').length")


def _pages(pdf):
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        return len(document)
    finally:
        document.close()


def print_handouts(slides=SLIDES, output=HANDOUTS):
    """Print every deck with its notes, and the student sheet; return {PDF: its pages}. Stops
    when a PDF has other pages than reveal.js laid out (a slide or notes longer than a page) or
    the sheet more than one."""
    slides, output = Path(slides), Path(output)
    if not CHROMIUM or not Path(CHROMIUM).is_file():
        raise SystemExit(f"no Chromium at {CHROMIUM!r}: install it (apt-get install chromium) or "
                         "set POSENC_CHROMIUM to a Chromium-based browser (README.md, The PDF)")
    decks = sorted(slides.glob("*.html"))
    if not decks:
        raise SystemExit(f"no deck in {slides}: build them first (make slides)")
    mathjax = slides / "_static" / "mathjax" / "tex-chtml.js"
    if not mathjax.is_file():
        raise SystemExit(f"{mathjax} is missing: build the decks first (make slides)")
    if output.resolve().parent != slides.resolve().parent:
        raise SystemExit(f"{output} must be beside {slides} (the sheet loads the decks' MathJax)")
    output.mkdir(parents=True, exist_ok=True)
    sheet = output / f"{SHEET}.html"
    sheet.write_text(sheet_html(f"../{slides.name}/_static/mathjax/tex-chtml.js"),
                     encoding="utf-8")
    printed = {}
    start = f"{slides.name}/{decks[0].name}{NOTES_VIEW}"
    with served_page(slides.parent, start, VIEWPORT, timeout=120_000, media="print") as page:
        base = page.url.split(slides.name + "/")[0]
        for n, deck in enumerate(decks):
            if n:
                page.goto(f"{base}{slides.name}/{deck.name}{NOTES_VIEW}", wait_until="networkidle")
            pages = _wait_for_deck(page)
            pdf = output / f"{deck.stem}-with-notes.pdf"
            page.pdf(path=str(pdf), print_background=True, prefer_css_page_size=True)
            printed[pdf] = _pages(pdf)
            if printed[pdf] != pages:
                raise SystemExit(f"{pdf}: {printed[pdf]} pages printed, reveal.js laid out "
                                 f"{pages} (a slide or its notes longer than a page?)")
        page.goto(f"{base}{output.name}/{sheet.name}", wait_until="networkidle")
        page.wait_for_function("() => window.MathJax && MathJax.startup"
                               " && MathJax.startup.promise", timeout=60_000)
        maths = page.evaluate(TYPESET_JS)
        if maths["errors"] or not page.locator("mjx-container").count():
            raise SystemExit(f"{sheet}: formulas not typeset: {maths}")
        pdf = output / f"{SHEET}.pdf"
        page.pdf(path=str(pdf), format="A4", print_background=True, prefer_css_page_size=True)
        printed[pdf] = _pages(pdf)
        if printed[pdf] != 1:
            raise SystemExit(f"{pdf}: {printed[pdf]} pages: the student sheet must fit one")
    return printed


def main(argv):
    slides = Path(argv[1]) if len(argv) > 1 else SLIDES
    output = Path(argv[2]) if len(argv) > 2 else HANDOUTS
    start = time.perf_counter()
    for pdf, pages in print_handouts(slides, output).items():
        print(f"{pdf} written ({pages} pages, {pdf.stat().st_size / 1e6:.1f} MB)")
    print(f"handouts printed in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
