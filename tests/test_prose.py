"""The main path stays lean (issue 24): prose words per chapter, counted by tools/prose_words.py.

A chapter's prose is the text of its markdown cells without fenced blocks and math. Every
main-path chapter (the parts Foundations, Implementations and Going further of _toc.yml) has at
most 3,000 words of it, and the main path at most 30,000; what a learner reads beyond that
belongs in an appendix. The counts are printed (`pytest -s`) so that a change shows its cost.
"""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_LIMIT = 3_000
MAIN_PATH_LIMIT = 30_000

_spec = importlib.util.spec_from_file_location("prose_words", ROOT / "tools" / "prose_words.py")
prose_words = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prose_words)


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
