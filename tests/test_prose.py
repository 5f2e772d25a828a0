"""The main path stays lean (issue 24): prose words per chapter, counted by tools/prose_words.py.

A chapter's prose is the text of its markdown cells without fenced blocks and math. Every
main-path chapter (the parts Foundations, Implementations and Going further of _toc.yml) has at
most 3,000 words of it, and the main path at most 30,000; what a learner reads beyond that
belongs in an appendix. The counts are printed (`pytest -s`) so that a change shows its cost.

Every chapter also ends with "Check your understanding" (issue 34), in the poll format that
tests/test_polls.py checks (issue 45).
"""

import json
import re
from pathlib import Path

import pytest

import tool_scripts

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_LIMIT = 3_000
MAIN_PATH_LIMIT = 30_000

prose_words = tool_scripts.load("prose_words")


@pytest.fixture(scope="module")
def counts() -> dict[str, int]:
    found = {nb.stem: prose_words.prose_words(nb) for nb in prose_words.main_path()}
    for stem, words in found.items():
        print(f"{stem:<18} {words:>6}")
    print(f"{'main path':<18} {sum(found.values()):>6}")
    return found


def test_the_main_path_is_read_from_the_toc(counts):
    assert {"why_order", "formula", "pytorch_module", "training"} <= set(counts)
    assert not any(stem.startswith("deeper_") for stem in counts)


def test_every_main_path_chapter_is_at_most_3000_words(counts):
    over = {stem: words for stem, words in counts.items() if words > CHAPTER_LIMIT}
    assert over == {}, f"chapters over {CHAPTER_LIMIT} words of prose: {over}"


def test_the_main_path_is_at_most_30000_words(counts):
    assert sum(counts.values()) <= MAIN_PATH_LIMIT


CORE_LIMIT = 12_000  # words of core prose over the whole main path: about 4 hours for a student


@pytest.fixture(scope="module")
def core_counts() -> dict:
    print()
    print(prose_words.table())
    return {nb.stem: prose_words.counts(nb) for nb in prose_words.main_path()}


def test_the_core_of_the_main_path_is_at_most_12000_words(core_counts):
    core = sum(c.core_words for c in core_counts.values())
    assert core <= CORE_LIMIT, f"{core} words of core prose on the main path, more than {CORE_LIMIT}"


def test_every_main_path_chapter_has_a_core_and_optional_sections(core_counts):
    without = [stem for stem, c in core_counts.items() if not (c.core_words and c.optional_words)]
    assert without == []


NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5}


@pytest.mark.parametrize("page", ["book/teaching.md", "book/intro.md"])
def test_the_pages_state_the_core_time_of_the_main_path(core_counts, page):
    hours = round(sum(c.core_minutes for c in core_counts.values()) / 60)
    stated = re.findall(r"about (two|three|four|five) hours", (ROOT / page).read_text(encoding="utf-8"))
    assert stated and all(NUMBERS[word] == hours for word in stated), (page, stated, hours)


@pytest.mark.parametrize("notebook", prose_words.main_path(), ids=lambda p: p.stem)
def test_every_main_path_chapter_states_its_estimated_times(notebook):
    c = prose_words.counts(notebook)
    assert prose_words.stated_times(notebook) == (c.core_minutes, c.total_minutes), (
        "the time line under the title is missing or out of date: run `python tools/prose_words.py --write`")


# Headings count as words ("#" too); _notebook() ends the notebook with one code cell.
@pytest.mark.parametrize("markdown, core, optional, optional_code", [
    ("# T\n\none two\n\n## A\n\nthree\n\n## Optional: B\n\nfour five\n\n### C\n\nsix\n\n## D\n\nseven",
     10, 8, 0),
    ("# T\n\n## Exercises\n\none two three\n\n## Check your understanding\n\nfour", 7, 5, 0),
    ("# T\n\n```python\n# not a heading\n```\n\n## Optional: X\n\none", 2, 4, 1),
])
def test_optional_sections_are_counted_apart(tmp_path, markdown, core, optional, optional_code):
    c = prose_words.counts(_notebook(tmp_path, markdown))
    assert (c.core_words, c.optional_words, c.optional_code, c.core_code) == (core, optional, optional_code,
                                                                             1 - optional_code)


def _notebook(tmp_path: Path, *markdown: str) -> Path:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": text} for text in markdown]
    cells.append({"cell_type": "code", "metadata": {}, "source": "one two three", "outputs": [],
                  "execution_count": None})
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


@pytest.mark.parametrize("markdown, expected", [
    (["one two three"], 3),
    (["a $x + y$ b", "$$\nE = mc^2\n$$\nc"], 3),                 # math removed
    (["before\n```{exercise-start}\n:label: x\n```\nafter"], 2),  # directives removed
    (["```python\nprint('a b c')\n```"], 0),                       # code blocks removed
])
def test_the_count_drops_math_fences_and_code_cells(tmp_path, markdown, expected):
    assert prose_words.prose_words(_notebook(tmp_path, *markdown)) == expected


@pytest.mark.parametrize("notebook", prose_words.appendices(), ids=lambda p: p.stem)
def test_every_appendix_states_its_estimated_time_once(notebook):
    stated = prose_words.stated_appendix_time(notebook)
    assert stated == prose_words.counts(notebook).total_minutes, (
        "the appendix's time line is missing or out of date: run `python tools/prose_words.py --write`")
    assert prose_words.stated_times(notebook) is None, "an appendix states one time, not core and whole"
