"""The core stands alone (issue 45): no link from the core of a main-path chapter leads into an
optional part of another page, unless its sentence says that the target is optional.

A page's optional parts are what `tools/prose_words.py` counts as optional: a section whose
heading starts with "Optional:" (with its subsections), the "Exercises" section, and the
exercises and solutions themselves. The test reads the built website (`make book`), so it sees
every link as a reader does: `{doc}`, `{ref}`, `{numref}` and markdown links alike.
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from prose_words import is_optional_heading, main_path  # noqa: E402

HTML = Path(os.environ.get("POSENC_BOOK_OUTPUT", ROOT)) / "_build" / "html"
PAGES = HTML / "book"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'*])")

if not (PAGES / "why_order.html").exists():
    pytest.skip("the book is not built: run `make book` first", allow_module_level=True)


def _heading_text(section) -> str:
    heading = section.find(re.compile(r"^h[1-6]$"), recursive=False)
    if heading is None:
        return ""
    for extra in heading.select("a.headerlink, span.section-number"):
        extra.extract()
    return heading.get_text(" ", strip=True)


def _is_optional(element) -> bool:
    """Whether ``element`` is or lies in an optional section, an exercise or a solution."""
    for parent in (element, *element.parents):
        classes = parent.get("class") or []
        if parent.name == "div" and ("exercise" in classes or "solution" in classes):
            return True
        if parent.name == "section" and is_optional_heading(_heading_text(parent)):
            return True
    return False


@cache
def _page(path: Path):
    """The page's article (its text without the navigation), parsed."""
    html = path.read_text(encoding="utf-8")
    start, end = html.find("<article"), html.rfind("</article>")
    if start >= 0 and end > start:
        html = html[start:end + len("</article>")]  # parsing only the article is 2-3 times faster
    soup = BeautifulSoup(html, "html.parser")
    return soup.find("article") or soup


def _sentence(link) -> str:
    """The sentence of the paragraph (or list item, table cell) that holds ``link``."""
    block = link.find_parent(["p", "li", "td", "dd"]) or link.parent
    text, anchor = block.get_text(" ", strip=True), link.get_text(" ", strip=True)
    where = text.find(anchor)
    for sentence in _SENTENCE_END.split(text):
        if where < len(sentence) + 1:
            return sentence
        where -= len(sentence) + 1
    return text


def _core_links_into_optional_parts(page: Path) -> list[str]:
    chapter, found = page.stem, []
    for link in _page(page).find_all("a", href=True):
        parts = urlsplit(link["href"])
        if parts.scheme or parts.netloc or not parts.path.endswith(".html"):
            continue  # external, or a link within this page
        target = (page.parent / parts.path).resolve()
        if target == page.resolve() or not target.exists() or _is_optional(link):
            continue
        if not parts.fragment:
            continue  # the top of a page is never optional
        anchor = _page(target).find(id=parts.fragment)
        if anchor is None or not _is_optional(anchor):
            continue
        sentence = _sentence(link)
        # A link shown with its target's heading, "Optional: ...", says it too.
        if "optional" not in sentence.lower():
            found.append(f"{chapter} -> {parts.path}#{parts.fragment}: {sentence[:160]!r}")
    return found


@pytest.mark.parametrize("chapter", [nb.stem for nb in main_path()])
def test_the_core_links_into_no_optional_part_without_saying_so(chapter):
    found = _core_links_into_optional_parts(PAGES / f"{chapter}.html")
    assert not found, ("core sentences that link into an optional part of another page without "
                       "saying it is optional:\n" + "\n".join(found))


def test_the_check_sees_the_optional_sections_of_the_built_site():
    attention = _page(PAGES / "attention.html")
    one_head = attention.find(id="optional-one-head-and-several")
    assert one_head is not None and _is_optional(one_head.find("p"))
    assert not _is_optional(attention.find(id="queries-keys-and-values").find("p"))


_TARGET = """<article><section id="t"><h1>T</h1><p>Core.</p>
<section id="optional-deep"><span id="deep-label"></span><h2>Optional: Deep</h2><p>More.</p></section>
<div class="exercise admonition" id="ex-t-1"><p>Try.</p></div></section></article>"""


@pytest.mark.parametrize("sentence, flagged", [
    ('See <a href="t.html#deep-label">the details</a>.', True),
    ('See <a href="t.html#ex-t-1">Exercise 1</a>.', True),
    ('See the optional <a href="t.html#deep-label">details</a>.', False),
    ('See <a href="t.html#deep-label">Optional: Deep</a>.', False),
    ('See <a href="t.html">the chapter</a> and <a href="t.html#t">its core</a>.', False),
])
def test_the_check_fails_on_a_core_link_into_an_optional_part(tmp_path, sentence, flagged):
    (tmp_path / "t.html").write_text(_TARGET, encoding="utf-8")
    source = tmp_path / "s.html"
    source.write_text(f"<article><section id='s'><h1>S</h1><p>Intro. {sentence} Outro.</p>"
                      f"<section id='optional-x'><h2>Optional: X</h2>"
                      f"<p><a href='t.html#deep-label'>inside an optional part</a></p></section>"
                      f"</section></article>", encoding="utf-8")
    assert bool(_core_links_into_optional_parts(source)) == flagged
