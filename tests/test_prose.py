"""The main path stays lean (issue 24): prose words per chapter, counted by tools/prose_words.py.

A chapter's prose is the text of its markdown cells without fenced blocks and math. Every
main-path chapter (the parts Foundations, Implementations and Going further of _toc.yml) has at
most 3,000 words of it, and the main path at most 30,000; what a learner reads beyond that
belongs in an appendix. The counts are printed (`pytest -s`) so that a change shows its cost.

Every main-path chapter also ends with "Check your understanding" (issue 34): 2 to 4 conceptual
questions, no code, and their answers in a collapsed admonition.
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


def check_your_understanding_problems(notebook: Path) -> list[str]:
    """What keeps the notebook's last cell from being a concept check: a markdown cell headed
    "## Check your understanding" with 2 to 4 numbered questions, then their answers, as many, in
    a collapsed admonition (hidden until the reader opens it)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    last = cells[-1] if cells else {}
    source = "".join(last.get("source", ""))
    if last.get("cell_type") != "markdown" or not source.startswith("## Check your understanding\n"):
        return ["the last cell is not a markdown cell headed '## Check your understanding'"]
    questions, _, answers = source.partition("```{admonition} Answers\n:class: dropdown\n")
    problems = []
    if not answers:
        return ["no '{admonition} Answers' with ':class: dropdown' (the answers must be hidden)"]
    n_questions = len(re.findall(r"^\d+\. ", questions, flags=re.M))
    n_answers = len(re.findall(r"^\d+\. ", answers, flags=re.M))
    if not 2 <= n_questions <= 4:
        problems.append(f"{n_questions} questions, expected 2 to 4")
    if n_answers != n_questions:
        problems.append(f"{n_questions} questions but {n_answers} answers")
    if "```" in questions.split("\n", 1)[1]:
        problems.append("code in the questions: the checks are conceptual")
    return problems


@pytest.mark.parametrize("notebook", prose_words.main_path(), ids=lambda p: p.stem)
def test_every_main_path_chapter_ends_with_check_your_understanding(notebook):
    assert check_your_understanding_problems(notebook) == []


@pytest.mark.parametrize("markdown, expected", [
    ("## Check your understanding\n\n1. Why?\n2. How?\n\n```{admonition} Answers\n:class: dropdown\n\n"
     "1. Because.\n2. So.\n```", []),
    ("## Summary\n\n1. Why?", ["the last cell is not a markdown cell headed '## Check your understanding'"]),
    ("## Check your understanding\n\n1. Why?\n2. How?\n\n1. Because.\n2. So.",
     ["no '{admonition} Answers' with ':class: dropdown' (the answers must be hidden)"]),
    ("## Check your understanding\n\n1. Why?\n\n```{admonition} Answers\n:class: dropdown\n\n1. Because.\n```",
     ["1 questions, expected 2 to 4"]),
    ("## Check your understanding\n\n1. Why?\n2. How?\n\n```{admonition} Answers\n:class: dropdown\n\n1. So.\n```",
     ["2 questions but 1 answers"]),
])
def test_the_concept_check_is_recognised(tmp_path, markdown, expected):
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": markdown}],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert check_your_understanding_problems(path) == expected
