"""One notation (issue 24): no chapter's math uses a symbol that book/notation.md rules out.

book/notation.md ends with a table, "Symbols the book does not use", whose first column gives
each forbidden symbol as it is typed (`\\Delta`, `s_h`, `R_i(`, ...). This test reads that
table and looks for each symbol in the math of every book/*.ipynb (markdown cells) and
book/*.md, except that table itself. Math is the text between $...$ or $$...$$ and the body of
{math} directives. As far as it can be checked mechanically: a letter reused with another
meaning in words is for the reader, not this test, to catch.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTATION = ROOT / "book" / "notation.md"
SECTION = "## Symbols the book does not use"

MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$|```\{math\}(.*?)```", re.S)


def forbidden_symbols(notation: str) -> list[str]:
    """The first-column entries of the "not used" table of notation.md."""
    section = notation.split(SECTION, 1)[1]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.M)


def pattern(symbol: str) -> re.Pattern:
    """A regex for ``symbol``: a letter-ending symbol may not run on into more letters."""
    tail = r"(?![A-Za-z])" if symbol[-1].isalpha() else ""
    head = r"(?<![A-Za-z\\])" if symbol[0].isalpha() else ""
    return re.compile(head + re.escape(symbol) + tail)


def math_of(text: str) -> str:
    return "\n".join(next(g for g in m.groups() if g is not None) for m in MATH.finditer(text))


def sources() -> dict[str, str]:
    """Markdown text per page: a notebook's markdown cells, a .md file (notation.md without its
    table of forbidden symbols)."""
    found = {}
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        found[path.name] = "\n".join("".join(c["source"]) for c in cells
                                     if c["cell_type"] == "markdown")
    for path in sorted((ROOT / "book").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        found[path.name] = text.split(SECTION, 1)[0] if path == NOTATION else text
    return found


def violations(pages: dict[str, str], symbols: list[str]) -> list[str]:
    found = []
    for name, text in pages.items():
        math = math_of(text)
        for symbol in symbols:
            hits = pattern(symbol).findall(math)
            if hits:
                found.append(f"{name}: {symbol!r} x{len(hits)}")
    return found


SYMBOLS = forbidden_symbols(NOTATION.read_text(encoding="utf-8"))


def test_the_notation_page_lists_the_symbols_of_issue_24():
    assert {r"\Delta", "s_h", "R_i(", r"\mathbf{u}", r"\mathbf{b}_", "h_t", "h_{pos}"} <= set(SYMBOLS)


def test_no_page_uses_a_symbol_the_notation_rules_out():
    assert violations(sources(), SYMBOLS) == []


@pytest.mark.parametrize("text, bad", [
    (r"a shift $\Delta = n - m$", True),
    (r"$$s_{mn} - s_h |m - n|$$", True),
    (r"the block $R_i(k)$", True),
    (r"a key $\mathbf{u}_n$", True),
    (r"a key $\mathbf{k}_n$", False),
    (r"the state $h_{pos}$ of an RNN", True),
    (r"with $k = n - m$ and $\beta_h$", False),
    (r"$s_{hm}$ and $\mathbf{k}_n$ and $M_k^{(i)}$", False),
    (r"Delta and s_h outside math", False),
    ("```{math}\nR_{i}(k)\n```", True),
])
def test_the_check_finds_a_symbol_only_in_math(text, bad):
    assert bool(violations({"x.md": text}, SYMBOLS)) is bad
