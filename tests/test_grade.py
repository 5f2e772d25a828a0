"""tools/grade.py: grading a class's notebooks with `otter run`, several at a time, no Docker.

The unit tests below run in-process; the class tests take build-the-encoding's autograder from
`make assignments` (which runs otter in a subprocess: importing otter here would emit a
DeprecationWarning that `filterwarnings = error` turns into a failure) and grade a small class
through the command line: a correct notebook, a wrong one, a renamed one, an empty file, a
corrupt file, and in a run of its own a notebook that never finishes.
"""

import csv
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("grade", ROOT / "tools" / "grade.py")
grade = importlib.util.module_from_spec(_spec)
sys.modules["grade"] = grade  # dataclasses look their module up there
_spec.loader.exec_module(grade)

NAME = "build-the-encoding"
WORK = ROOT / "_build" / "test-grade"  # under the repository: otter assign needs that


def test_check_notebook(tmp_path):
    empty, corrupt, cells, good = (tmp_path / n for n in ("e.ipynb", "c.ipynb", "x.ipynb", "g.ipynb"))
    empty.write_text("  \n")
    corrupt.write_text('{"cells": [')
    cells.write_text('{"cells": 3}')
    nbformat.write(nbformat.v4.new_notebook(), good)
    assert grade.check_notebook(empty) == "empty file"
    assert grade.check_notebook(corrupt).startswith("not a notebook (invalid JSON")
    assert grade.check_notebook(cells) == "not a notebook (no list of cells)"
    assert grade.check_notebook(good) == ""


def test_submissions_are_named_by_their_path(tmp_path):
    for path in ("alice.ipynb", "bob/build-the-encoding.ipynb", "bob/.ipynb_checkpoints/x.ipynb",
                 "notes.txt"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    assert list(grade.submissions_in(tmp_path)) == ["alice", "bob/build-the-encoding"]


def test_csv_has_a_row_per_student_and_zero_with_a_reason(tmp_path):
    grades = [grade.Grade("ann", {"q1": (1.0, 1.0), "q10": (0.0, 2.0), "q2": (2.0, 2.0)}, "fine"),
              grade.Grade("bo", reason="empty file")]
    table = grade.write_outputs(grades, tmp_path)
    rows = list(csv.reader(table.read_text().splitlines()))
    assert rows[0] == ["student", "q1", "q2", "q10", "total", "possible", "reason"]
    assert rows[1] == ["ann", "1", "2", "0", "3", "5", ""]
    assert rows[2] == ["bo", "0", "0", "0", "0", "5", "empty file"]
    assert (tmp_path / "feedback" / "ann.txt").read_text() == "fine"
    assert "empty file" in (tmp_path / "feedback" / "bo.txt").read_text()


@pytest.fixture(scope="module")
def autograder(make):
    """build-the-encoding's autograder zip and solution notebook, as `make assignments` generates
    them (again only when out of date), copied here."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    run = make(f"_build/assignments/{NAME}/.assigned")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    shutil.copytree(ROOT / "_build" / "assignments" / NAME / "autograder", WORK / "assign" / "autograder")
    (zip_path,) = (WORK / "assign" / "autograder").glob(f"{NAME}-autograder_*.zip")
    assert grade.assignment_name(zip_path) == NAME
    return zip_path, nbformat.read(WORK / "assign" / "autograder" / f"{NAME}.ipynb", 4)


def _with_q3(solution, new_source):
    """The solution notebook with the answer cell of question 3 replaced."""
    nb = nbformat.from_dict(json.loads(json.dumps(solution)))
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "def positional_encoding(" in c.source]
    cell.source = new_source
    return nb


def _grade(zip_path, submissions, output, *options):
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), str(zip_path),
                          str(submissions), "--output", str(output), *options],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return {row["student"]: row for row in csv.DictReader((output / "grades.csv").read_text().splitlines())}


def test_grades_a_class_and_survives_broken_notebooks(autograder):
    zip_path, solution = autograder
    submissions = WORK / "class"
    (submissions / "bob").mkdir(parents=True)
    nbformat.write(solution, submissions / "alice.ipynb")
    swapped = _with_q3(solution, "def positional_encoding(seq_len, d_model, *, base=10000.0, offset=0):\n"
                       "    positions = np.arange(offset, offset + seq_len, dtype=np.float64)[:, None]\n"
                       "    angles = positions * base ** (-2.0 * (np.arange(d_model) // 2) / d_model)\n"
                       "    return np.where(np.arange(d_model) % 2 == 0, np.cos(angles), np.sin(angles))\n")
    nbformat.write(swapped, submissions / "bob" / f"{NAME}.ipynb")
    nbformat.write(solution, submissions / "carol-renamed-copy.ipynb")
    (submissions / "dave.ipynb").write_text("")
    (submissions / "erin.ipynb").write_text('{"cells": [{"cell_type": "code", "sour')
    output = WORK / "grades"
    rows = _grade(zip_path, submissions, output, "--jobs", "2")
    assert set(rows) == {"alice", f"bob/{NAME}", "carol-renamed-copy", "dave", "erin"}
    for student in ("alice", "carol-renamed-copy"):
        assert rows[student]["total"] == rows[student]["possible"] == "7", rows[student]
        assert rows[student]["reason"] == ""
    bob = rows[f"bob/{NAME}"]
    assert (bob["q1"], bob["q2"], bob["q3"], bob["q4"], bob["total"]) == ("1", "2", "0", "1", "4")
    assert rows["dave"]["total"] == "0" and rows["dave"]["reason"] == "empty file"
    assert rows["erin"]["total"] == "0" and rows["erin"]["reason"].startswith("not a notebook")
    feedback = (output / "feedback" / "bob" / f"{NAME}.txt").read_text()
    assert "q3: 0 / 3" in feedback and "sine and cosine are swapped" in feedback
    assert "Public Tests" in feedback
    assert json.loads((output / "results" / "alice" / "results.json").read_text())["tests"]


def test_a_notebook_that_never_ends_is_stopped(autograder):
    zip_path, solution = autograder
    submissions = WORK / "looping"
    submissions.mkdir(parents=True)
    forever = _with_q3(solution, "while True:\n    pass\n")
    nbformat.write(forever, submissions / "frank.ipynb")
    start = time.monotonic()
    rows = _grade(zip_path, submissions, WORK / "grades-looping", "--timeout", "8")
    assert time.monotonic() - start < 60
    assert rows["frank"]["total"] == "0"
    assert rows["frank"]["reason"].startswith("time limit: not finished after 8 s")
