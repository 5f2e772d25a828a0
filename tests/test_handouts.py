"""The lecture handouts (`make handouts`, tools/print_handouts.py), read back with pypdfium2 as
tests/test_pdf.py reads the book's PDF: every deck printed with its notes, a page per slide,
its page of notes, a page per step of its fragments, in the deck's order; and the student sheet, one
A4 page whose formula, symbols and table are text (typeset, no TeX left).

The expected pages come from the decks' HTML (_build/slides/*.html), counted as reveal.js's
print view lays them out (pdfSeparateFragments, showNotes=separate-page).
Chromium is needed as for the other browser tests: without it the tests are skipped, or fail
when POSENC_REQUIRE_BROWSER=1.
"""

import re
import unicodedata
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from test_site import CHROMIUM, RAW_TEX, REQUIRE_BROWSER

ROOT = Path(__file__).resolve().parents[1]
SLIDES = ROOT / "_build" / "slides"
HANDOUTS = ROOT / "_build" / "handouts"
A4 = (595.3, 841.9)  # points


def _squash(text):
    """Text without whitespace, ligatures spelt out (PDFium may give "ﬁ" for "fi")."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def _before_math(text):
    """The text up to its first formula (the PDF holds the formula typeset, not its TeX)."""
    return re.split(r"\\\(|\\\[|\$", text)[0]


def _texts(pdf):
    """Each page's text, and each page's size in points."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        return ([page.get_textpage().get_text_range().replace("\ufffe", "-") for page in document],
                [page.get_size() for page in document])
    finally:
        document.close()


def expected_pages(deck):
    """[(kind, text)] for every page the deck's print view with notes prints, in reveal.js's
    order: ("slide", its heading), ("notes", their text) when it has notes, then ("slide", its
    heading) again for each step of its fragments (a poll's answer)."""
    soup = BeautifulSoup(deck.read_text(encoding="utf-8"), "html.parser")
    pages = []
    for slide in soup.select(".reveal .slides section"):
        if slide.find("section"):
            continue  # a vertical stack: its slides are printed
        heading = slide.find(["h1", "h2", "h3"])
        title = heading.get_text(" ", strip=True) if heading else ""
        fragments = slide.select(".fragment")
        indexed = [f["data-fragment-index"] for f in fragments if f.has_attr("data-fragment-index")]
        steps = len(set(indexed)) + len(fragments) - len(indexed)  # one step per index, or each
        notes = " ".join(n.get_text(" ", strip=True) for n in slide.select("aside.notes"))
        pages += ([("slide", title)] + [("notes", notes)] * bool(notes.strip())
                  + [("slide", title)] * steps)
    return pages


@pytest.fixture(scope="module")
def handouts(make):
    """`make handouts` (built when older than the decks or the printing tools)."""
    if not CHROMIUM.exists():
        message = f"handouts cannot be printed: no Chromium at {CHROMIUM}"
        if REQUIRE_BROWSER:
            pytest.fail(message)
        pytest.skip(message)
    run = make("_build/handouts/.built")
    if run.returncode:
        pytest.fail(f"make handouts failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return HANDOUTS


def test_every_deck_prints_with_its_notes(handouts):
    decks = sorted(SLIDES.glob("*.html"))
    assert decks
    for deck in decks:
        pdf = handouts / f"{deck.stem}-with-notes.pdf"
        assert pdf.exists(), f"{pdf.name} missing"
        texts, sizes = _texts(pdf)
        expected = expected_pages(deck)
        assert len(texts) == len(expected), (
            f"{pdf.name}: {len(texts)} pages, the deck has {len(expected)} (slides, fragment "
            "steps and notes)")
        assert sum(kind == "notes" for kind, _ in expected) >= len(expected) / 3
        wrong = [f"page {n + 1}: {kind} {text[:50]!r}, printed {page[:50]!r}"
                 for n, ((kind, text), page) in enumerate(zip(expected, texts))
                 if _squash(_before_math(text))[:24] not in _squash(page)]
        assert not wrong, f"{pdf.name}: pages out of order or missing:\n" + "\n".join(wrong[:10])
        width, height = sizes[0]
        assert width > height, f"{pdf.name}: slides print landscape"


def test_student_sheet_is_one_readable_page(handouts):
    texts, sizes = _texts(handouts / "student-sheet.pdf")
    assert len(texts) == 1, f"the student sheet has {len(texts)} pages"
    assert sizes[0] == pytest.approx(A4, abs=1)
    text = texts[0]
    assert not [mark for mark in RAW_TEX if mark in text], "TeX left in the student sheet"
    assert not re.search(r"\\[A-Za-z]+|\{(?:term|ref|doc|cite)", text), "TeX or MyST left"
    squashed = _squash(text)
    for formula in ("PE(pos,2i)=sin(", "PE(pos,2i+1)=cos(", "base=10000", "i=⌊j/2⌋",
                    "ωi=base", "λi="):
        assert formula in squashed, f"{formula!r} not in the sheet's text"
    for symbol in ("0-based row index", "dimension (column) index", "pair index",
                   "angular frequency", "wavelength"):
        assert symbol in text.replace("\r\n", " "), symbol
    # the worked example's table: its rows named, its entries empty (no value printed)
    assert re.search(r"0\s+I\s+1\s+am\s+2\s+a\s+3\s+robot", text)
    assert not re.search(r"0\.8415|0\.0998|0\.5403", text), "the table's values are printed"
