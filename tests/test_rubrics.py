"""Every written question of the assignments has a rubric whose points add up (issue 36).

A question graded by hand is marked `manual: true` in its master's `# BEGIN QUESTION` cell, with
its points. Its model answer (a solution cell of the master, so never in the student's notebook)
ends with "**Rubric (P points ...**" and a table: either a last column of points that add up to
P, or one row per point ("one per sub-question").
"""

import importlib.util
import re
from fractions import Fraction
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted(p for p in ROOT.glob("assignments/*/*.ipynb") if p.stem == p.parent.name)


def written_questions():
    """(assignment, question name, points, the text of its solution cells) of every manual question."""
    found = []
    for master in MASTERS:
        cells = nbformat.read(master, as_version=4).cells
        for i, cell in enumerate(cells):
            config = cell.source if cell.cell_type == "raw" else ""
            if config.startswith("# BEGIN QUESTION") and "manual: true" in config:
                name = re.search(r"name: (\w+)", config).group(1)
                points = Fraction(re.search(r"points: ([\d.]+)", config).group(1))
                end = next(j for j in range(i + 1, len(cells)) if cells[j].source.startswith("# END QUESTION"))
                text = "\n".join(c.source for c in cells[i:end] if c.cell_type == "markdown")
                found.append((master.stem, name, points, text))
    return found


QUESTIONS = written_questions()


def test_every_assignment_with_a_written_question_is_found():
    assert {(a, q) for a, q, _, _ in QUESTIONS} >= {("build-the-encoding", "q5"),
                                                   ("attend-by-position", "q5"),
                                                   ("attend-by-position", "q6"),
                                                   ("experiment-positions", "q5")}


def _points(cell: str) -> Fraction:
    return Fraction(cell.strip().replace("½", "1/2"))


@pytest.mark.parametrize("assignment, question, points, text", QUESTIONS, ids=[f"{a}-{q}" for a, q, _, _ in QUESTIONS])
def test_the_rubric_adds_up_to_the_question_s_points(assignment, question, points, text):
    stated = re.search(r"\*\*Rubric \((\d+) points?", text)
    assert stated, f"{assignment} {question}: no '**Rubric (P points' in its model answer"
    assert Fraction(stated.group(1)) == points
    rubric = text[stated.start():]
    rows = [line for line in rubric.splitlines() if line.startswith("|") and not set(line) <= set("|- ")][1:]
    last = [row.strip().strip("|").split("|")[-1] for row in rows]
    if all(re.fullmatch(r"\s*[\d½/]+\s*", cell) for cell in last):
        assert sum(map(_points, last)) == points, (assignment, question, last)
    else:
        assert "one per sub-question" in rubric and len(rows) == points, (assignment, question, len(rows))


_spec = importlib.util.spec_from_file_location("rubrics", ROOT / "grading" / "rubrics.py")
rubrics = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rubrics)


@pytest.mark.parametrize("assignment, question, points, text", QUESTIONS, ids=[f"{a}-{q}" for a, q, _, _ in QUESTIONS])
def test_each_rubric_has_a_calibration_set_decisions_and_the_copied_prose_policy(assignment, question, points, text):
    """At least a good, a partly right and a fluent but wrong answer, each with its points (the
    good one all of them, the others fewer), the decisions on ambiguous cases, the policy."""
    rubric = text[text.index("**Rubric ("):]
    examples = {label: value for label, value, _ in rubrics.calibration(rubric)}
    assert {"Good", "Partly right", "Fluent but wrong"} <= set(examples), (assignment, question, examples)
    assert examples["Good"] == points and examples["Fluent but wrong"] < examples["Partly right"] < points
    assert all(0 <= value <= points for value in examples.values())
    assert "**Decisions.**" in rubric and "**Copied prose.**" in rubric
    assert sum(p for _, p in rubrics.rubric_items(rubric)) == points


def test_q6_decides_a_right_computation_with_a_contradicting_sentence():
    (text,) = [t for a, q, _, t in QUESTIONS if (a, q) == ("attend-by-position", "q6")]
    assert "*A right computation with a contradicting sentence*" in text and "*The ambiguous case, 1 point.*" in text


def test_the_hand_grading_time_is_computed_from_the_masters():
    """The table's hours are the measured rule's: the sample's words at READ_WPM, the items, the
    answers, for each class size; attend-by-position's row is checked against minutes()."""
    (master,) = [m for m in MASTERS if m.stem == "attend-by-position"]
    timed = [rubrics.minutes(rubric, model) for *_, rubric, model in rubrics.written_questions(master)]
    per_answer = sum(t[1] for t in timed)
    hours = [f"{(n * per_answer + sum(t[2] for t in timed)) / 60:.1f} h" for n in rubrics.CLASSES]
    row = next(line for line in rubrics.page().splitlines() if "`attend-by-position`" in line)
    assert row.endswith(" | ".join(hours) + " |") and f"| {per_answer:.1f} |" in row
    assert 2 < per_answer < 6  # minutes per submission: a sanity range, not the value


def test_instructors_page_quotes_the_computed_hours():
    (master,) = [m for m in MASTERS if m.stem == "attend-by-position"]
    timed = [rubrics.minutes(rubric, model) for *_, rubric, model in rubrics.written_questions(master)]
    hours = [f"{(n * sum(t[1] for t in timed) + sum(t[2] for t in timed)) / 60:.1f}".removesuffix(".0")
             for n in rubrics.CLASSES]
    text = " ".join((ROOT / "book" / "assignments" / "instructors.md").read_text().split())
    assert f"{hours[0]} hours for 120 students and {hours[1]} hours for 200" in text, hours
