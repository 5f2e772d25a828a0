"""Every notebook of the book ends with "Check your understanding" in the poll format (issue 45).

The last cell of every notebook in book/ (main path and appendices) is a markdown cell headed
"## Check your understanding": 2 to 4 numbered questions, each ending with a question mark and
followed by 3 to 5 options labelled **A.**, **B.**, ... in order, then the answers, as many, in a
collapsed admonition. Each answer starts with the one right letter (**B.**) and names every wrong
option (**A** ...) with the misconception it reveals, so that a lecturer can read the polls'
results. No question is asked twice in the book. The format:

    1. The question?

       - **A.** first option
       - **B.** second option
       - **C.** third option

    ```{admonition} Answers
    :class: dropdown

    1. **B.** Why B is right. **A** reveals the misconception that ... **C** reveals ...
    ```
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
HEADING = "## Check your understanding\n"
ANSWERS = "```{admonition} Answers\n:class: dropdown\n"
LETTERS = "ABCDE"

_ITEM = re.compile(r"^(\d+)\. ", flags=re.M)                     # a numbered item, unindented
_OPTION = re.compile(r"^ {3}- \*\*([A-Z])\.\*\* \S", flags=re.M)   # an option, inside its item


def _items(text: str) -> list[tuple[int, str]]:
    """The numbered items of ``text``: (number, text up to the next item)."""
    starts = list(_ITEM.finditer(text))
    ends = [m.start() for m in starts[1:]] + [len(text)]
    return [(int(m.group(1)), text[m.end():end]) for m, end in zip(starts, ends)]


def poll_problems(source: str) -> tuple[list[str], list[str]]:
    """What keeps ``source``, the last cell of a notebook, from being a set of polls; and the
    questions' texts (without their options), for the test that no question is asked twice."""
    if not source.startswith(HEADING):
        return ["the last cell is not a markdown cell headed '## Check your understanding'"], []
    questions_text, _, answers_text = source[len(HEADING):].partition(ANSWERS)
    if not answers_text:
        return ["no '{admonition} Answers' with ':class: dropdown' (the answers must be hidden)"], []
    if "```" in questions_text:
        return ["a fenced block in the questions: the polls are conceptual"], []
    answers_text = answers_text.rsplit("```", 1)[0]
    questions, answers = _items(questions_text), _items(answers_text)
    problems, texts = [], []
    if not 2 <= len(questions) <= 4:
        problems.append(f"{len(questions)} questions, expected 2 to 4")
    if len(answers) != len(questions):
        problems.append(f"{len(questions)} questions but {len(answers)} answers")
    for position, (number, body) in enumerate(questions, start=1):
        if number != position:
            problems.append(f"question {position} is numbered {number}")
        question = body.split("\n\n", 1)[0]
        texts.append(" ".join(question.split()))
        if not question.rstrip().endswith("?"):
            problems.append(f"question {position} does not end with a question mark")
        letters = "".join(_OPTION.findall(body))
        if not 3 <= len(letters) <= 5 or letters != LETTERS[:len(letters)]:
            problems.append(f"question {position} has the options {letters or 'none'}, expected A, B, C (D, E)")
            continue
        if position > len(answers):
            continue
        answer_number, answer = answers[position - 1]
        answer = " ".join(answer.split())
        if answer_number != position:
            problems.append(f"answer {position} is numbered {answer_number}")
        right = re.match(r"\*\*([A-Z])\.\*\* ", answer)
        if not right or right.group(1) not in letters:
            problems.append(f"answer {position} does not start with the right letter of an option, as '**B.** '")
            continue
        if f"**{right.group(1)}**" in answer:
            problems.append(f"answer {position} gives a misconception for its right option {right.group(1)}")
        for wrong in letters.replace(right.group(1), ""):
            # "**A** reveals the misconception ..." or "**A** and **C** reveal the misconception ..."
            named = rf"\*\*{wrong}\*\*(?:(?:,| and) \*\*[A-Z]\*\*)* reveals? the misconception"
            named_later = rf"\*\*{wrong}\*\*(?:(?:,| and) \*\*[A-Z]\*\*)+ reveal the misconception"
            earlier = rf"\*\*[A-Z]\*\*(?:(?:,| and) \*\*[A-Z]\*\*)*(?:,| and) \*\*{wrong}\*\* reveal the misconception"
            if not re.search(f"{named}|{named_later}|{earlier}", answer):
                problems.append(f"answer {position} does not say which misconception option {wrong} reveals")
    return problems, texts


def _last_cell(notebook: Path) -> dict:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return cells[-1] if cells else {}


def test_the_book_has_notebooks_and_appendices():
    stems = {nb.stem for nb in NOTEBOOKS}
    assert {"why_order", "attention", "training", "deeper_sources"} <= stems


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_ends_with_polls(notebook):
    last = _last_cell(notebook)
    assert last.get("cell_type") == "markdown", "the last cell must be the markdown check"
    assert poll_problems("".join(last["source"]))[0] == []


def repeated_questions(checks: dict[str, str]) -> list[str]:
    """The questions asked twice among ``checks`` (chapter -> its check cell), case and spacing
    ignored."""
    seen: dict[str, str] = {}
    repeated = []
    for chapter, source in checks.items():
        for text in poll_problems(source)[1]:
            key = text.casefold()
            if key in seen:
                repeated.append(f"{chapter} repeats {seen[key]}: {text}")
            seen.setdefault(key, chapter)
    return repeated


def test_no_question_is_asked_twice_in_the_book():
    checks = {nb.stem: "".join(_last_cell(nb).get("source", "")) for nb in NOTEBOOKS}
    assert sum(len(poll_problems(source)[1]) for source in checks.values()) >= 2 * len(NOTEBOOKS)
    assert repeated_questions(checks) == []


GOOD = ("## Check your understanding\n\n"
        "1. Why?\n\n   - **A.** one\n   - **B.** two\n   - **C.** three\n\n"
        "2. How?\n\n   - **A.** one\n   - **B.** two\n   - **C.** three\n   - **D.** four\n\n"
        "```{admonition} Answers\n:class: dropdown\n\n"
        "1. **B.** Because. **A** reveals the misconception that a. **C** reveals the misconception that c.\n"
        "2. **A.** So. **B** and **C** reveal the misconception that b. **D** reveals the misconception that d.\n"
        "```")


@pytest.mark.parametrize("source, expected", [
    (GOOD, []),
    (GOOD.replace("## Check", "## Summary\n\n## Check"),
     ["the last cell is not a markdown cell headed '## Check your understanding'"]),
    (GOOD.replace(":class: dropdown\n", ""),
     ["no '{admonition} Answers' with ':class: dropdown' (the answers must be hidden)"]),
    (GOOD.replace("1. Why?", "1. Why"), ["question 1 does not end with a question mark"]),
    (GOOD.replace("   - **C.** three\n\n2.", "\n2."),                          # two options only
     ["question 1 has the options AB, expected A, B, C (D, E)"]),
    (GOOD.replace("**D.** four", "**E.** four"), ["question 2 has the options ABCE, expected A, B, C (D, E)"]),
    (GOOD.replace("1. **B.** Because.", "1. Because."),
     ["answer 1 does not start with the right letter of an option, as '**B.** '"]),
    (GOOD.replace("1. **B.** Because.", "1. **F.** Because."),
     ["answer 1 does not start with the right letter of an option, as '**B.** '"]),
    (GOOD.replace(" **C** reveals the misconception that c.", ""),
     ["answer 1 does not say which misconception option C reveals"]),
    (GOOD.replace("**B** and **C** reveal", "**B** and **C** are wrong"),
     ["answer 2 does not say which misconception option B reveals",
      "answer 2 does not say which misconception option C reveals"]),
    (GOOD.replace("1. **B.** Because.", "1. **B.** Because. **B** reveals the misconception that b."),
     ["answer 1 gives a misconception for its right option B"]),
    (GOOD.replace("2. **A.** So. **B** and **C** reveal the misconception that b. **D** reveals the misconception that d.\n",
                  ""), ["2 questions but 1 answers"]),
    (GOOD.replace("**A** reveals the misconception that a.", "**A** reveals the\n   misconception that a."), []),
    (GOOD.replace("2. How?", "3. How?"), ["question 2 is numbered 3"]),
    (GOOD.replace("1. Why?\n", "1. Why?\n\n```python\nx = 1\n```\n"),
     ["a fenced block in the questions: the polls are conceptual"]),
])
def test_the_poll_format_is_recognised(source, expected):
    assert poll_problems(source)[0] == expected


def test_repeated_questions_are_found():
    assert poll_problems(GOOD)[1] == ["Why?", "How?"]
    assert repeated_questions({"a": GOOD, "b": GOOD.replace("1. Why?", "1. What?")}) == ["b repeats a: How?"]
    assert repeated_questions({"a": GOOD.replace("2. How?", "2. why?")}) == ["a repeats a: why?"]
    assert repeated_questions({"a": GOOD, "b": GOOD.replace("Why?", "What?").replace("How?", "Where?")}) == []
