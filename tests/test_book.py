"""The introduction's chapter table: every page of _toc.yml, in order, each with what it needs.

The table is the reader's map of the book (book/intro.md, section "The chapters"): one row per
page of _toc.yml, whose first cell is {doc}`page` and whose last cell ("Needs") names the
chapters it builds on, or "nothing". A needed chapter must come earlier in _toc.yml: the book
puts every prerequisite before its first use.
"""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOC = re.compile(r"\{doc\}`([^`<]+?)(?:\s*<([^>]+)>)?`")


def toc_pages(toc: dict) -> list[str]:
    """Every page of a parsed _toc.yml except the root, in reading order, relative to book/."""
    pages = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []):
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    return [page.removeprefix("book/") for page in pages]


def _target(match: re.Match) -> str:
    return (match.group(2) or match.group(1)).strip().removeprefix("/book/")


def chapter_table(intro: str) -> dict[str, list[str]]:
    """The rows of the intro's table: {page: [pages it needs]}, in the order of the table."""
    section = intro.split("## The chapters", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        first = DOC.fullmatch(cells[0])
        if first is None:
            continue  # the header, the separator, a part's title
        assert len(cells) == 3, f"row of {cells[0]}: expected 3 cells, got {len(cells)}"
        needs = cells[2]
        assert needs, f"row of {cells[0]}: the 'Needs' cell is empty (write 'nothing')"
        rows[_target(first)] = [] if needs == "nothing" else [_target(m) for m in DOC.finditer(needs)]
    return rows


def problems(pages: list[str], rows: dict[str, list[str]]) -> list[str]:
    """What is wrong with a chapter table against the pages of _toc.yml (empty if nothing)."""
    found = []
    found += [f"{page} is in _toc.yml but not in the table" for page in pages if page not in rows]
    found += [f"{page} is in the table but not in _toc.yml" for page in rows if page not in pages]
    listed = [page for page in rows if page in pages]
    if listed != [page for page in pages if page in rows]:
        found.append(f"the table's order {listed} is not the order of _toc.yml")
    for page, needs in rows.items():
        for need in needs:
            if need not in pages:
                found.append(f"{page} needs {need}, which is not in _toc.yml")
            elif page in pages and pages.index(need) >= pages.index(page):
                found.append(f"{page} needs {need}, which does not come before it")
    return found


def test_intro_lists_every_page_of_the_toc_in_order_with_its_prerequisites():
    pages = toc_pages(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    rows = chapter_table((ROOT / "book" / "intro.md").read_text())
    assert pages, "no page found in _toc.yml"
    assert problems(pages, rows) == []


TOY_INTRO = """# Book

## The chapters

| Chapter | What it covers | Needs |
| --- | --- | --- |
| **Part** | | |
| {doc}`a` | first | nothing |
| {doc}`b` | second | {doc}`a` |

## Next section
"""


def test_the_check_reads_a_table_and_a_toc():
    toc = {"root": "book/intro", "parts": [{"chapters": [{"file": "book/a"}, {"file": "book/b"}]}]}
    assert toc_pages(toc) == ["a", "b"]
    assert chapter_table(TOY_INTRO) == {"a": [], "b": ["a"]}
    assert problems(["a", "b"], chapter_table(TOY_INTRO)) == []


@pytest.mark.parametrize("pages, expected", [
    (["a", "b", "c"], "c is in _toc.yml but not in the table"),
    (["a"], "b is in the table but not in _toc.yml"),
    (["b", "a"], "b needs a, which does not come before it"),
])
def test_the_check_fails_on_a_missing_page_or_a_late_prerequisite(pages, expected):
    assert expected in problems(pages, chapter_table(TOY_INTRO))


def test_an_empty_needs_cell_is_an_error():
    with pytest.raises(AssertionError, match="'Needs' cell is empty"):
        chapter_table(TOY_INTRO.replace("| second | {doc}`a` |", "| second | |"))
