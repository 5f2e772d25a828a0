"""The PDF of the whole book (`make pdf`), read back with pypdf (its structure) and pypdfium2
(its text).

The fixture builds the PDF with `make pdf` (the single-page HTML, printed by headless Chromium
through tools/print_pdf.py) when it is missing or older than the book's sources, then
the tests check what a reader of the PDF gets: every page of _toc.yml (as a bookmark and as
text), typeset formulas (no TeX left in the text), every figure, the solutions of the
exercises, the bibliography, and long code lines printed whole (wrapped, not clipped).

Chromium is needed as for the site tests: without it the tests are skipped, or fail when
POSENC_REQUIRE_BROWSER=1 (as in CI).
"""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from reuse import digest, reused

# The site tests' settings and helpers: the build folder, the browser, the pages, TeX leftovers.
from test_site import BUILD, CHROMIUM, PAGES, RAW_TEX, REQUIRE_BROWSER, _source

ROOT = Path(__file__).resolve().parents[1]
PDF = BUILD / "pdf" / "positional-encoding-course.pdf"
DOCS = PAGES  # every page of _toc.yml, in reading order
HIDDEN = {"remove-cell", "remove-input"}  # code the book does not show
PRINTED = "_build/pdf/.printed-by-tests"  # the Makefile's PDF_PRINTED, for the tests' `make pdf`
LONG_LINE = 80  # characters: wider than a code block of the printed page


def _cells(docname):
    """The cells of a notebook page; a markdown page is one markdown cell."""
    source = _source(docname)
    if source.suffix == ".md":
        return [nbformat.v4.new_markdown_cell(source.read_text())]
    return nbformat.read(source, as_version=4).cells


def _title(docname):
    """The first '# ' heading of a page."""
    for cell in _cells(docname):
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise AssertionError(f"{docname} has no title")


def _squash(text):
    """Text without any whitespace: line wrapping must not matter."""
    return re.sub(r"\s+", "", text)


def _stale():
    if not PDF.exists():
        return True
    sources = [ROOT / "_config.yml", ROOT / "_toc.yml", ROOT / "tools" / "print_pdf.py",
               ROOT / "tools" / "print.css", *ROOT.glob("book/**/*")]
    built = PDF.stat().st_mtime
    return any(p.stat().st_mtime > built for p in sources if p.is_file())


def _build_elsewhere(make):
    """Build the PDF into POSENC_BOOK_OUTPUT's _build (the commands of `make pdf`)."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    # The assignment pages link the student notebooks that `make assignments` generates.
    run = make("assignments")
    for command in ([jupyter_book, "build", ROOT, "--builder", "singlehtml", "-W", "-n",
                     "--keep-going", "--path-output", BUILD.parent],
                    [sys.executable, ROOT / "tools" / "print_pdf.py", BUILD / "singlehtml", PDF]):
        if run.returncode:
            break
        run = subprocess.run(command, capture_output=True, text=True)
    return run


@pytest.fixture(scope="module")
def pdf(make):
    """The PDF, built if needed: {"reader": PdfReader, "text": all pages' text, "outline": [...]}.

    In the repository's _build, `make pdf` builds it when it is older than its sources (make -q
    says whether it is), once for all pytest-xdist workers. It marks its run in a file of its
    own (PRINTED), not in the one whose date makes the website link the PDF: the site that `make
    book` built stays up to date, and the site tests, running meanwhile, do not build it again.
    """
    from pypdf import PdfReader

    here = BUILD == ROOT / "_build"
    stale = make("-q", PDF.relative_to(ROOT)).returncode != 0 if here else _stale()
    if stale:
        missing = None if CHROMIUM.exists() else f"no Chromium at {CHROMIUM}"
        if missing and REQUIRE_BROWSER:
            pytest.fail(f"the PDF cannot be built: {missing}")
        if missing:
            pytest.skip(f"the PDF cannot be built: {missing}")
        run = make(PDF.relative_to(ROOT), f"PDF_PRINTED={PRINTED}") if here else _build_elsewhere(make)
        if run.returncode:
            pytest.fail(f"building the PDF failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    reader = PdfReader(PDF)

    def titles(outline):
        for item in outline:
            yield from titles(item) if isinstance(item, list) else [item.title]

    # The text by PDFium (pypdfium2, Chromium's own PDF library): 2 s where pypdf's extract_text
    # takes 30 s of CPU for the book's 280 pages. Kept while the PDF, pypdfium2 and
    # extract() are the same.
    from importlib.metadata import version

    import pypdfium2

    def extract():
        document = pypdfium2.PdfDocument(PDF)
        try:
            text = "\n".join(page.get_textpage().get_text_range() for page in document)
        finally:
            document.close()
        return text.replace("\ufffe", "-")  # PDFium's mark of a hyphen where a line breaks

    key = digest(PDF.read_bytes(), version("pypdfium2"), inspect.getsource(extract))
    text = reused("pdf-text", key, extract)
    return {"reader": reader, "text": text, "outline": list(titles(reader.outline))}


@pytest.mark.parametrize("docname", DOCS)
def test_every_page_of_the_toc_is_in_the_pdf(pdf, docname):
    """Its title is a bookmark of the PDF, and its first paragraph is in the text."""
    title = _squash(_title(docname))
    assert any(_squash(entry).endswith(title) for entry in pdf["outline"]), title
    assert title in _squash(pdf["text"])


def _code_text():
    """All code the book prints (cell sources and text outputs), without whitespace."""
    parts = []
    for doc in DOCS:
        for cell in _cells(doc):
            if cell.cell_type == "code":
                parts.append(cell.source)
                for output in cell.get("outputs", []):
                    parts.append(output.get("text", ""))
                    parts.append(output.get("data", {}).get("text/plain", ""))
    return _squash("\n".join(parts))


def test_formulas_are_typeset(pdf):
    """No TeX delimiter in the prose (code, such as a regular expression, may contain one)."""
    code = _code_text()
    prose = [line for line in pdf["text"].splitlines() if _squash(line) not in code]
    leftovers = {mark: line for line in prose for mark in RAW_TEX if mark in line}
    assert leftovers == {}, "raw TeX delimiters in the PDF's text"
    assert len(prose) > 1000


def _images(resources, seen):
    """The number of image objects in a page's resources (inside forms too) not yet seen.

    Reading the objects' dictionaries is enough: pypdf's page.images decodes every image.
    """
    xobjects = resources.get_object().get("/XObject") if resources else None
    count = 0
    for reference in (xobjects.get_object().values() if xobjects else []):
        xobject = reference.get_object()
        if xobject.get("/Subtype") == "/Image" and reference.idnum not in seen:
            seen.add(reference.idnum)
            count += 1
        elif xobject.get("/Subtype") == "/Form":
            count += _images(xobject.get("/Resources"), seen)
    return count


def test_every_figure_is_embedded(pdf):
    # Distinct images: Chromium embeds a picture shown on two pages once (the Transformer
    # diagram is in why_order and embeddings).
    figures = len({output["data"]["image/png"] for doc in DOCS for cell in _cells(doc)
                   if cell.cell_type == "code" for output in cell.get("outputs", [])
                   if "image/png" in output.get("data", {})})
    # Markdown images, and the interactive figures, printed as their static images: one image
    # per kind of figure (table, rotation, ...), embedded once however many pages show it.
    # (Not the cells tagged remove-cell: the stills for notebook readers, tools/explorer_stills.py.)
    markdown = [cell.source for doc in DOCS for cell in _cells(doc) if cell.cell_type == "markdown"
                and "remove-cell" not in cell.metadata.get("tags", [])]
    figures += sum(len(re.findall(r"!\[|```\{(?:figure|image)\}", source)) for source in markdown)
    figures += len({kind for source in markdown
                    for kind in re.findall(r"```\{posenc-explorer\}\s*(\w+)", source)})
    seen = set()
    images = sum(_images(page.get("/Resources"), seen) for page in pdf["reader"].pages)
    assert figures > 0
    assert images >= figures


def test_exercises_come_with_their_solutions(pdf):
    solutions = sum(len(re.findall(r"```\{solution(?:-start)?\}", cell.source))
                    for doc in DOCS for cell in _cells(doc) if cell.cell_type == "markdown")
    assert solutions > 0
    assert len(re.findall(r"Solution to\s*Exercise", pdf["text"])) == solutions


def test_bibliography_is_included(pdf):
    assert "Bibliography" in pdf["outline"]
    assert "Attention Is All You Need" in pdf["text"]


def _long_code_lines():
    """Code lines the book shows that are too wide for the page."""
    lines = []
    for doc in DOCS:
        for cell in _cells(doc):
            if cell.cell_type == "code" and not HIDDEN & set(cell.metadata.get("tags", [])):
                lines += [line.strip() for line in cell.source.splitlines()
                          if len(line) > LONG_LINE and not line.lstrip().startswith("%")]
    return lines


def test_long_code_lines_are_printed_whole(pdf):
    lines = _long_code_lines()
    assert len(lines) >= 3, "no long code lines to check"
    text = _squash(pdf["text"])
    clipped = [line for line in lines if _squash(line) not in text]
    assert clipped == []


def test_interactive_figures_print_their_static_images(pdf):
    """The PDF has the static image of each {posenc-explorer} figure, not its live part: none
    of the live figures' controls or summaries is in the text."""
    explorers = sum(len(re.findall(r"```\{posenc-explorer\}", cell.source))
                    for doc in DOCS for cell in _cells(doc) if cell.cell_type == "markdown")
    assert explorers > 0
    for live_text in ("pair i (line plot)", "Encoding table: seq_len =",
                      "both with the content x (every coordinate", "Move the sliders"):
        assert live_text not in pdf["text"]
    # Beside each still image, the line that says what it shows (the directive's print line).
    # (without "fi", which the PDF's text holds as a ligature)
    note = _squash("at its default setting; on the course's website the")
    assert _squash(pdf["text"]).count(note) == explorers
    # Each static image (book/_ext/posenc_explorer.py draws them) is embedded at its pixel size.
    from PIL import Image

    statics = sorted((BUILD / "singlehtml" / "_images").glob("posenc-explorer-*.png"))
    assert statics, "no static image of an interactive figure in the single-page build"
    sizes = set()
    for page in pdf["reader"].pages:
        xobjects = (page.get("/Resources") or {}).get("/XObject")
        for ref in (xobjects.get_object().values() if xobjects else []):
            image = ref.get_object()
            if image.get("/Subtype") == "/Image":
                sizes.add((int(image["/Width"]), int(image["/Height"])))
    missing = []
    for path in statics:
        with Image.open(path) as image:
            if image.size not in sizes:
                missing.append(path.name)
    assert missing == [], f"static images not in the PDF: {missing}"


def test_a_site_built_after_the_pdf_links_and_carries_it(pdf):
    """`make book` prints the PDF, then builds the site: every page's footer links the PDF and
    the site's root holds the same file, also when Sphinx wrote no page again (tools/
    book_release.py copies it at the end of every build), and nothing else of _build/pdf."""
    built, site = BUILD / ".html-built", BUILD / "html"
    if not built.exists() or built.stat().st_mtime < PDF.stat().st_mtime:
        pytest.skip("the site was built before this PDF was printed")
    assert (site / PDF.name).read_bytes() == PDF.read_bytes(), "the site carries another print"
    for docname in ("book/intro", "book/formula"):
        assert f'class="pdf-download" href="{"../" * docname.count("/")}{PDF.name}"' in (
            site / f"{docname}.html").read_text(encoding="utf-8"), docname
    assert not [p.name for p in site.iterdir() if p.name.startswith(".printed")]
