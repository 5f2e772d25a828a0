"""grading/manual.py: the written questions' pages and score sheets, and the merge of filled sheets.

No grading here (tests/test_grade.py grades classes): the answers a graded run keeps are written
by hand (keep() on a notebook as Otter hands it out), the pages and sheets come from
attend-by-position's master (its q5 and q6), and the merge reads CSVs. About 1 s in all.
"""

import csv
import importlib.util
import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("manual", ROOT / "grading" / "manual.py")
manual = importlib.util.module_from_spec(_spec)
sys.modules["manual"] = manual
_spec.loader.exec_module(manual)

ZIP = Path("/nowhere/attend-by-position-autograder_2026.zip")  # the public master's questions
STUDENTS = ["ann", "bob", "cy/attend-by-position", "dee"]


def _notebook(q6_text, q6_code, outputs):
    """A notebook laid out as Otter hands out written questions, with q5 left blank."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    answer = code(q6_code)
    answer.outputs = outputs
    return nbformat.v4.new_notebook(cells=[
        code("import numpy as np"), md("<!-- BEGIN QUESTION -->\n\n## Question 5 (written): worst case"),
        md(manual.PLACEHOLDER), code("..."),
        md("<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\n## Question 6 (written): rotate"),
        md(q6_text), answer, md("<!-- END QUESTION -->\n\n## Question 7"), code("x = 7")])


@pytest.fixture
def graded(tmp_path):
    """A grades folder as make grade leaves it: grades.csv and each student's kept answers."""
    stream = nbformat.v4.new_output("stream", text="query 100 looks at 100\n")
    image = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
    html = nbformat.v4.new_output("execute_result", data={"text/html": "<script>alert(1)</script>",
                                                          "text/plain": "'shown as text'"}, execution_count=1)
    texts = {"ann": ("The shifts cancel: $M_k^\\top M_k = I$, so it looks at $q = p$.", "print(1)", [stream, image]),
             "bob": ("<script>alert('x')</script> It looks **2k** back.", "w", [html]),
             "cy/attend-by-position": ("ann is my friend", "", [])}
    for student, (text, source, outputs) in texts.items():
        path = tmp_path / "submitted" / f"{student}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nb = _notebook(text, source, outputs)
        nbformat.write(nb, path)
        executed = json.loads(nbformat.writes(nb)) if student != "bob" else None
        manual.keep(tmp_path / "out" / "results" / student, executed, path)
    out = tmp_path / "out"
    with (out / "grades.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "q1", "q2", "q3", "q4", "q7", "total", "possible", "reason", "review"])
        for student, scores in zip(STUDENTS, ([1, 2, 1, 2, 3], [1, 0, 1, 0, 0], [0] * 5, [0] * 5)):
            writer.writerow([student, *scores, sum(scores), 10, "" if sum(scores) else "empty file", ""])
    manual.write(ZIP, out, STUDENTS)
    return out


def _sheet(graded, question):
    return list(csv.reader((graded / "manual" / f"{question}-scores.csv").read_text().splitlines()))


def _key(graded):
    return dict(csv.reader((graded / manual.KEY).read_text().splitlines()))


def _dicts(path):
    return list(csv.DictReader(path.read_text().splitlines()))


def _fill(graded, question, scores, path=None):
    """The sheet of question filled: scores maps a student to their row of item scores."""
    key = _key(graded)
    rows = _sheet(graded, question)
    by_code = {code: student for student, code in key.items()}
    filled = [rows[0]] + [[row[0], *scores.get(by_code[row[0]], ["0"] * (len(row) - 2)), ""] for row in rows[1:]]
    path = path or graded / f"{question}-filled.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(filled)
    return path


def test_a_page_per_written_question_anonymized_shuffled_with_its_rubric(graded):
    key = _key(graded)
    assert set(key) - {"student"} == set(STUDENTS)
    codes = [key[s] for s in STUDENTS]
    pages = {q: (graded / "manual" / f"{q}.html").read_text() for q in ("q5", "q6")}
    for question, page in pages.items():
        assert page.index("Rubric (") < min(page.index(f"Answer {c}") for c in codes)
        for student in ("ann", "bob", "dee"):
            assert f">{student}<" not in page and f"Answer {student}" not in page
        assert [row[0] for row in _sheet(graded, question)[1:]] == sorted(codes, key=page.index)
    page = pages["q6"]
    assert "query 100 looks at 100" in page and "data:image/png;base64,iVBORw0KGgo=" in page
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert('x')" in page and "&#x27;shown as text&#x27;" in page
    assert "as submitted (the grader did not run it)" in page  # bob's outputs were not the run's
    assert "none (the notebook could not be graded)" in page  # dee has no kept answers
    assert r"\(M_k^\top M_k = I\)" in page and "x = 7" not in page
    assert _sheet(graded, "q6")[0] == ["code", "q6.1 (0.5)", "q6.2 (0.5)", "q6.3 (0.5)", "q6.4 (0.5)", "comment"]
    assert _sheet(graded, "q5")[0] == ["code", "q5.1 (0.5)", "q5.2 (0.5)", "comment"]
    orders = [[row[0] for row in _sheet(graded, q)[1:]] for q in ("q5", "q6")]
    assert sorted(orders[0]) == sorted(orders[1]) == sorted(codes)


def test_codes_stay_the_same_from_one_run_to_the_next(graded):
    before = _key(graded)
    manual.write(ZIP, graded, STUDENTS + ["eve"])
    after = _key(graded)
    assert {s: c for s, c in after.items() if s != "eve"} == before
    assert after["eve"] not in before.values()


def test_filled_sheets_merge_into_grades_csv(graded):
    sheets = [_fill(graded, "q5", {"ann": ["0.5", "½"], "bob": ["0", "0.5"]}),
              _fill(graded, "q6", {"ann": ["0.5"] * 4, "bob": ["0", "0", "1/2", "0"]})]
    table = manual.merge(graded, sheets, ZIP)
    rows = _dicts(table)
    assert list(rows[0]) == ["student", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "autograded",
                             "hand-graded", "total", "possible", "reason", "review"]
    ann, bob = rows[0], rows[1]
    assert (ann["q5"], ann["q6"], ann["autograded"], ann["hand-graded"], ann["total"], ann["possible"]) == \
        ("1", "2", "9", "3", "12", "13")
    assert (bob["q5"], bob["q6"], bob["total"]) == ("0.5", "0.5", "3")
    assert rows[3]["reason"] == "empty file"
    # merging again (a corrected sheet) starts from the autograded columns
    sheets[0] = _fill(graded, "q5", {"ann": ["0", "0"]})
    rows = _dicts(manual.merge(graded, sheets, ZIP))
    assert (rows[0]["q5"], rows[0]["total"]) == ("0", "11") and list(rows[0]).count("q5") == 1


def _rewrite(path, edit):
    rows = list(csv.reader(path.read_text().splitlines()))
    edit(rows)
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda rows: rows.pop(2), "student(s) have no row"),
    (lambda rows: rows[1].__setitem__(0, "ZZZZZ"), "unknown student code 'ZZZZZ'"),
    (lambda rows: rows[1].__setitem__(1, "1"), "1 is outside 0 to 0.5, the rubric item's points"),
    (lambda rows: rows[1].__setitem__(2, ""), "no score (write 0 for none)"),
    (lambda rows: rows[1].__setitem__(2, "half"), "'half' is not a number"),
    (lambda rows: rows.append(list(rows[1])), "appears twice"),
    (lambda rows: rows[0].__setitem__(2, "q6.9 (1)"), "is no rubric item"),
])
def test_a_wrong_sheet_is_refused_naming_why(graded, edit, message):
    q5 = _fill(graded, "q5", {})
    q6 = _rewrite(_fill(graded, "q6", {}), edit)
    with pytest.raises(manual.SheetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        manual.merge(graded, [q5, q6], ZIP)
    before = (graded / "grades.csv").read_text()
    with pytest.raises(manual.SheetError, match="no sheet grades q6"):
        manual.merge(graded, [q5], ZIP)
    assert (graded / "grades.csv").read_text() == before  # nothing written


def test_the_command_line_names_the_error(graded, capsys):
    q5 = _fill(graded, "q5", {})
    with pytest.raises(SystemExit, match="no sheet grades q6"):
        manual.main([str(graded), str(q5)])
