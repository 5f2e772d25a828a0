"""grading/grade.py: grading a class's notebooks sealed, each in the sandbox, several at a time.

The unit tests below run in-process; the class tests take build-the-encoding's autograder from
`make assignments` (which runs otter in a subprocess: importing otter here would emit a
DeprecationWarning that `filterwarnings = error` turns into a failure) and grade a small class
through the command line: a correct notebook, a wrong one, a renamed one, an empty file, a
corrupt file, the notebook as handed out, one that deletes its results folder, one that patches
NumPy and reports what its sandbox shows, and the attacks of issue 46 (posenc through sys.path,
posenc's files loaded by path, posenc in an instance attribute, a process that outlives its
kernel to rewrite grades.csv: each loses its points); in runs of their own, loops stopped by the
per-test and per-cell limits, and a notebook that never finishes. tests/test_sandbox.py tests
the sandbox itself, the hidden tests' frames and the copies flagged.
"""

import csv
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("grade", ROOT / "grading" / "grade.py")
grade = importlib.util.module_from_spec(_spec)
sys.modules["grade"] = grade  # dataclasses look their module up there
_spec.loader.exec_module(grade)
review = sys.modules["review"]  # grading/review.py, which grade.py loads

NAME = "build-the-encoding"
WORK = ROOT / "_build" / "test-grade"  # under the repository: otter assign needs that


def test_check_notebook(tmp_path):
    empty, corrupt, cells, no_code, good = (
        tmp_path / n for n in ("e.ipynb", "c.ipynb", "x.ipynb", "n.ipynb", "g.ipynb"))
    empty.write_text("  \n")
    corrupt.write_text('{"cells": [')
    cells.write_text('{"cells": 3}')
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("hi"),
                                                   nbformat.v4.new_code_cell("  ")]), no_code)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), good)
    assert grade.check_notebook(empty) == "empty file"
    assert grade.check_notebook(corrupt).startswith("not a notebook (invalid JSON")
    assert grade.check_notebook(cells) == "not a notebook (no list of cells)"
    assert grade.check_notebook(no_code) == "no code cell (nothing to grade)"
    assert grade.check_notebook(good) == ""


def test_review_flags_code_that_can_reach_the_grader(tmp_path):
    """Patched modules, modules or the grader reached by name, built code, files opened: flagged;
    the handed-out cells and ordinary code are not."""
    given = "import otter\ngrader = otter.Notebook('x.ipynb')"
    cells = [given, "import numpy as np\nnp.allclose = lambda *a, **k: True",
             "import sys\nref = sys.modules['posenc']\n%time 1",
             "from importlib import import_module as load\nf = eval('1')",
             "text = open('tests/q1.py').read()\nnp.testing.assert_allclose = print",
             "from numpy import linalg\nlinalg.norm = abs",
             "class A:\n    pass\na = A()\na.x = np.sin(1.0)"]
    path = tmp_path / "s.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    handed = tmp_path / "given.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(given)]), handed)
    assert review.constructs(path, grade.given_cells(handed)) == (
        "eval; importlib; open; patches linalg.norm; patches np.allclose; "
        "patches np.testing.assert_allclose; sys.modules")
    assert "otter" in review.constructs(path)
    plain = tmp_path / "p.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cells[-1])]), plain)
    assert review.constructs(plain) == ""


def test_a_new_run_clears_the_previous_one(tmp_path):
    for stale in ("feedback/old.txt", "details/old.txt", "results/old/results.json", "grades.csv"):
        (tmp_path / stale).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / stale).write_text("stale")
    (tmp_path / "notes.md").write_text("mine")
    grade.clear_outputs(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


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
    assert rows[0] == ["student", "q1", "q2", "q10", "total", "possible", "reason", "review"]
    assert rows[1] == ["ann", "1", "2", "0", "3", "5", "", ""]
    assert rows[2] == ["bo", "0", "0", "0", "0", "5", "empty file", ""]
    assert (tmp_path / "feedback" / "ann.txt").read_text() == "fine"
    assert "empty file" in (tmp_path / "feedback" / "bo.txt").read_text()
    assert "empty file" in (tmp_path / "details" / "bo.txt").read_text()


def test_feedback_agrees_with_the_grade():
    """No "All test cases passed!" beside a lost point (a hidden test failed), and a question that
    kept its points beside a failed public test (without points of its own) says so."""
    report = {"tests": [
        {"name": "Public Tests", "output": "q1 results: All test cases passed!\n"
                                           "q2 results:\n    q2 - 1 result:\n        ❌ Test case failed\n"},
        {"name": "q1", "score": 0, "max_score": 2, "output": "hidden: AssertionError: wrong"},
        {"name": "q2", "score": 2, "max_score": 2, "output": "q2 - 1 result: Test case failed"}]}
    result = grade.Grade("ann")
    grade.read_results(result, report)
    assert "All test cases passed" not in result.feedback, result.feedback
    assert "q1: 0 / 2\n    q1 results: the public tests passed, a hidden test of this question failed" in result.feedback
    assert "q2: 2 / 2" in result.feedback and "carries no points of its own" in result.feedback
    assert "hidden: AssertionError" not in result.feedback and "hidden: AssertionError" in result.details


def test_limits_parse_and_name():
    limits = grade.limits.Limits.parse("memory=1.5G, processes=32,disk=200M")
    assert (limits.memory, limits.processes, limits.cpu, limits.disk) == (1.5 * 2**30, 32, 600, 200 * 2**20)
    assert limits.name("memory") == "memory limit 1.5 GB" and limits.name("cpu") == "CPU time limit 600 s"
    assert grade.limits.Limits.parse("") == grade.limits.Limits()
    for wrong in ("memory=lots", "gpu=1", "cpu=0", "disk"):
        with pytest.raises(ValueError, match="limit|size"):
            grade.limits.Limits.parse(wrong)
    assert grade.limits.limit_of("cell 3: OSError: [Errno 28] No space left on device") == "disk"
    assert grade.limits.limit_of("cell 3: NameError: name 'x' is not defined") is None


@pytest.fixture(scope="module")
def autograder(make):
    """build-the-encoding's autograder zip and solution notebook, as `make assignments` generates
    them (again only when out of date), copied here."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    run = make(f"_build/assignments/{NAME}/.assigned")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    shutil.copytree(ROOT / "_build" / "assignments" / NAME / "autograder", WORK / "assign" / "autograder")
    shutil.copytree(ROOT / "_build" / "assignments" / NAME / "student", WORK / "assign" / "student")
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
    run = subprocess.run([sys.executable, str(ROOT / "grading" / "grade.py"), str(zip_path),
                          str(submissions), "--output", str(output), *options],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return {row["student"]: row for row in csv.DictReader((output / "grades.csv").read_text().splitlines())}


def _with_cell(solution, source, at=0):
    """The solution notebook with a code cell added at index at."""
    nb = nbformat.from_dict(json.loads(json.dumps(solution)))
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


# What the sandbox shows a notebook (a cell that ends with `seen` set).
SEEN = f"""import json, os, socket, tempfile
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    network = True
except OSError:
    network = False
seen = {{"cwd": os.getcwd(), "listing": sorted(os.listdir()), "root": sorted(os.listdir("/")),
        "repository": os.path.exists({str(ROOT / "code")!r}), "network": network,
        "home": sorted(n for n in os.listdir(os.path.expanduser("~")) if n != ".ipython"),
        "processes": sum(n.isdigit() for n in os.listdir("/proc"))}}
"""

# The ways a notebook took to posenc or to the grades before the sandbox (issue 46), each in a
# notebook graded with the class below. The first three look for posenc's files where the
# repository, an editable install or an installed copy keeps them, after taking the stand-in
# "posenc is not available" off sys.path.
_FIND_POSENC = f"""import glob, importlib.util, os, site, sys
sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "posenc"))
               or os.path.exists(os.path.join(p or ".", "posenc", "encoding.py"))]
sys.modules.pop("posenc", None)
places = [{str(ROOT / "code")!r}, "/work/main/code", *sys.path, *site.getsitepackages()]
places += [line.strip() for d in site.getsitepackages() for pth in glob.glob(os.path.join(d, "*.pth"))
           for line in open(pth) if line.startswith("/")]
found = [p for p in places if os.path.exists(os.path.join(p, "posenc", "encoding.py"))]
"""
SURVIVOR = "survivor-of-the-grading-" + "b6e1"  # marks the survivor's command line (not this file's)
# A process that outlives its kernel and rewrites its row of grades.csv to full marks, wherever it
# finds the file (named in /proc, or where it guesses the grades go).
_REWRITE = f"""import glob, time
for _ in range(300):
    for path in glob.glob("/proc/*/cmdline") + [{str(WORK / "grades" / "grades.csv")!r}]:
        try:
            text = open(path).read()
            if path.endswith("grades.csv") and "oz," in text:
                open(path, "w").write(text.replace("oz,2,2,0,1,5,8", "oz,2,2,3,1,8,8"))
        except OSError:
            pass
    time.sleep(0.1)  # {SURVIVOR}
"""


def attacks(solution):
    """{student: notebook}: the attacks on build-the-encoding (ATTACKS says how each ends)."""
    def with_answer(marker, source):
        nb = nbformat.from_dict(json.loads(json.dumps(solution)))
        (cell,) = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
        cell.source = source
        return nb
    survivor = _with_q3(solution, "def positional_encoding(seq_len, d_model, *, base=10000.0, offset=0):\n"
                        "    angles = np.arange(offset, offset + seq_len)[:, None] * base ** (-2.0 * (np.arange(d_model) // 2) / d_model)\n"
                        "    return np.where(np.arange(d_model) % 2 == 0, np.cos(angles), np.sin(angles))\n")
    survivor.cells.append(nbformat.v4.new_code_cell(
        f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {_REWRITE!r}], start_new_session=True,\n"
        "                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"))
    return {
        # q1 from posenc's table (8/8 before the sandbox).
        "lee": with_answer("def position_of", _FIND_POSENC + "import posenc\n\n"
                           "def position_of(row, base=10000.0):\n"
                           "    table = posenc.positional_encoding(50000, len(row), base=base)\n"
                           "    return int(np.argmin(np.abs(table - row).sum(axis=1)))"),
        # q3 from posenc's files loaded by path under another name (8/8 before).
        "max": with_answer("def positional_encoding(", _FIND_POSENC +
                           "folder = os.path.join(found[0], 'posenc')\n"
                           "spec = importlib.util.spec_from_file_location('tables', os.path.join(folder, '__init__.py'),\n"
                           "                                              submodule_search_locations=[folder])\n"
                           "tables = importlib.util.module_from_spec(spec)\nsys.modules['tables'] = tables\n"
                           "spec.loader.exec_module(tables)\n\n"
                           "def positional_encoding(seq_len, d_model, *, base=10000.0, offset=0):\n"
                           "    return tables.positional_encoding(seq_len, d_model, base=base, offset=offset)"),
        # q4 from posenc kept in an instance attribute (which the check of its function does not
        # look into), imported by a name built at run time (8/8 before).
        "nia": with_answer("def wavelengths", _FIND_POSENC + "sys.path.insert(0, (found or ['.'])[0])\n\n"
                           "class Tools:\n    def __init__(self):\n"
                           "        self.frequencies = __import__('pos' + 'enc').angular_frequencies\n\n"
                           "tools = Tools()\n\n"
                           "def wavelengths(d_model, base=10000.0):\n"
                           "    return 2 * np.pi / tools.frequencies(d_model, base=base)"),
        # q3 wrong (5/8), and the survivor (8/8 in the CSV before).
        "oz": survivor,
    }


def _survivors():
    """The processes of this machine that the survivor started and that still run."""
    found = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if SURVIVOR in path.read_text():
                found.append(path.parent.name)
        except OSError:
            pass
    return found


def _lost(question, words):
    """A check that a student lost question's points only, the instructor's details saying words."""
    def check(row, details):
        assert row[question] == "0" and float(row["total"]) == 8 - {"q1": 2, "q3": 3, "q4": 1}[question], row
        assert words in details, details[-2000:]
    return check


def _survived(row, details):
    assert (row["q3"], row["total"]) == ("0", "5"), row  # its own score, not 8 rewritten
    assert not _survivors(), "a process the notebook started outlived its grading"


ATTACKS = {"lee": _lost("q1", "No module named 'posenc'"), "max": _lost("q3", "IndexError: list index out of range"),
           "nia": _lost("q4", "NameError"), "oz": _survived}


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
    # The notebook as handed out: 0 everywhere, with the reason.
    shutil.copyfile(WORK / "assign" / "student" / f"{NAME}.ipynb", submissions / "gus.ipynb")
    # A notebook that deletes the files of its folder (itself included) and whatever results
    # folder it can find beside it.
    nbformat.write(_with_cell(solution, "import os, shutil\nfor name in os.listdir('.'):\n    os.remove(name)\n"
                              "shutil.rmtree('../results', ignore_errors=True)\nopen('../results', 'w').close()",
                              len(solution.cells)),
                   submissions / "hal.ipynb")
    # A notebook that looks at what its sandbox shows (its cell raises to report it: nothing it
    # writes outside its folder reaches us) and patches NumPy (flagged).
    nbformat.write(_with_cell(solution, SEEN + "import numpy\nnumpy.allclose = lambda *a, **k: True\n"
                              "raise RuntimeError('seen ' + json.dumps(seen))", 1),
                   submissions / "ivy.ipynb")
    for student, notebook in attacks(solution).items():
        nbformat.write(notebook, submissions / f"{student}.ipynb")
    # A notebook that looks for the test files to read, and patches Otter's test runner so that
    # every test passes, with no answer to q3: the tests run in the grader's process
    # (grading/sealed.py), from sources read before the notebook ran, so q3 still gets 0 (the CSV
    # flags the notebook for review).
    nbformat.write(_with_cell(_with_q3(solution, "positional_encoding = None\n"),
                              "from pathlib import Path\ntexts = [open(p).read() for p in Path('.').glob('**/q*.py')]\n"
                              "from otter.test_files import exception_test\n"
                              "exception_test.test_case.call_func = lambda self, env: None", len(solution.cells)),
                   submissions / "jon.ipynb")
    # A notebook that reads positions back with the course's package: absent while grading.
    kim = nbformat.from_dict(json.loads(json.dumps(solution)))
    (cell,) = [c for c in kim.cells if c.cell_type == "code" and "def position_of" in c.source]
    cell.source = ("import posenc\n\ndef position_of(row, base=10000.0):\n"
                   "    table = posenc.positional_encoding(50000, len(row), base=base)\n"
                   "    return int(np.argmin(np.abs(table - row).sum(axis=1)))")
    nbformat.write(kim, submissions / "kim.ipynb")
    output = WORK / "grades"
    (output / "feedback").mkdir(parents=True)
    (output / "feedback" / "stale.txt").write_text("from an earlier run")
    rows = _grade(zip_path, submissions, output, "--jobs", "2",
                  "--given", str(WORK / "assign" / "student" / f"{NAME}.ipynb"))
    assert set(rows) == {"alice", f"bob/{NAME}", "carol-renamed-copy", "dave", "erin", "gus", "hal", "ivy",
                         "jon", "kim", *ATTACKS}
    jon = rows["jon"]
    # Every notebook below answers q5 with the published model answer (flagged; not as alike
    # each other: the model answer explains that).
    model = "written q5: the published model answer (100%)"
    assert jon["review"] == f"open; otter; patches exception_test.test_case.call_func; {model}", jon
    assert (jon["q1"], jon["q2"], jon["q3"], jon["q4"], jon["total"]) == ("2", "2", "0", "1", "5"), jon
    kim = rows["kim"]
    assert (kim["q1"], kim["total"], kim["review"]) == ("0", "6", f"posenc; copy of lee (100%); {model}"), kim
    assert "posenc is not available while grading" in (output / "details" / "kim.txt").read_text()
    for student in ("alice", "carol-renamed-copy"):
        assert rows[student]["total"] == rows[student]["possible"] == "8", rows[student]
        assert rows[student]["reason"] == "", rows[student]
        # The solutions handed in: flagged as copies of the published ones, not of each other.
        assert rows[student]["review"] == f"copy of the published solutions (100%); {model}", rows[student]
    bob = rows[f"bob/{NAME}"]
    assert (bob["q1"], bob["q2"], bob["q3"], bob["q4"], bob["total"]) == ("2", "2", "0", "1", "5")
    assert rows["dave"]["total"] == "0" and rows["dave"]["reason"] == "empty file"
    assert rows["erin"]["total"] == "0" and rows["erin"]["reason"].startswith("not a notebook")
    assert rows["gus"]["total"] == "0" and rows["gus"]["reason"].startswith("0 on every question; q1: "), rows["gus"]
    # hal deletes its files: the grader read the notebook before it ran, and keeps its results
    # in its own memory, so nothing is lost.
    assert rows["hal"]["total"] == "8", rows["hal"]
    # ivy patches numpy.allclose in its kernel: flagged, and its correct answers keep their marks.
    assert rows["ivy"]["review"].startswith("patches numpy.allclose; copy of the published solutions")
    assert rows["ivy"]["total"] == "8", rows["ivy"]
    seen = json.loads((output / "details" / "ivy.txt").read_text().split("RuntimeError: seen ")[1].splitlines()[0])
    # The notebook runs alone in the submission's private folder (no tests, no other submission),
    # in a sandbox that shows the system, the course's Python and nothing else: not the
    # repository, not the machine's processes, no network, an empty home.
    assert seen["listing"] == [f"{NAME}.ipynb"], seen
    assert "/submission-" in seen["cwd"] and seen["cwd"].startswith(tempfile.gettempdir()), seen
    assert not Path(seen["cwd"].split("/submission-")[0]).exists(), "the class's folder is removed after grading"
    assert set(seen["root"]) <= {"usr", "bin", "lib", "lib32", "lib64", "sbin", "proc", "dev", "tmp", "home",
                                 *(Path(p).resolve().parts[1] for p in (sys.prefix, sys.base_prefix))}, seen
    assert (seen["repository"], seen["network"], seen["home"]) == (False, False, []), seen
    assert seen["processes"] <= 3, seen
    # Each attack loses its points (and the survivor ended with its kernel).
    for student, check in ATTACKS.items():
        check(rows[student], (output / "details" / f"{student}.txt").read_text())
    assert not (output / "feedback" / "stale.txt").exists(), "an earlier run's files are removed"
    feedback = (output / "feedback" / "bob" / f"{NAME}.txt").read_text()
    assert "q3: 0 / 3" in feedback and "sine and cosine are swapped" in feedback
    details = (output / "details" / "bob" / f"{NAME}.txt").read_text()
    assert "q3: 0 / 3" in details
    # Feedback for students shows no hidden test (their failures show source lines, messages
    # and expected values); the instructor's details do. The notebook as handed out fails the
    # hidden test of q4 with this message:
    master = nbformat.read(ROOT / "assignments" / NAME / f"{NAME}.ipynb", 4)
    message = "wrong wavelengths for d_model="
    assert [c for c in master.cells if c.source.startswith("# HIDDEN") and message in c.source]
    assert message in (output / "details" / "gus.txt").read_text()
    for student in ("alice", f"bob/{NAME}", "gus"):
        text = (output / "feedback" / f"{student}.txt").read_text()
        assert message not in text, text
    assert json.loads((output / "results" / "alice" / "results.json").read_text())["tests"]


def test_a_loop_costs_its_question_only(autograder):
    """A loop in an answer cell, or in a function a test calls, is stopped by the per-cell or
    per-test limit: that question loses its points, the others keep theirs."""
    zip_path, solution = autograder
    submissions = WORK / "loops"
    submissions.mkdir(parents=True)
    # The loops wait instead of spinning (an interrupt stops both alike), so that the seconds they
    # last leave the CPU to the other tests.
    nbformat.write(_with_q3(solution, "import time\nwhile True:\n    time.sleep(0.01)\n"), submissions / "frank.ipynb")
    nbformat.write(_with_q3(solution, "import time\n\n\ndef positional_encoding(seq_len, d_model, *, base=10000.0, offset=0):\n"
                            "    while True:\n        time.sleep(0.01)\n"), submissions / "gina.ipynb")
    # A loop whose bare except catches the interrupt (issue 55: a 600 s stop, Score 0, before):
    # its cell and its question are left out, in a new kernel, and the other questions graded.
    nbformat.write(_with_q3(solution, "import time\n\n\ndef positional_encoding(seq_len, d_model, *, base=10000.0, offset=0):\n"
                            "    while True:\n        try:\n            time.sleep(0.01)\n        except:\n            pass\n"),
                   submissions / "hugo.ipynb")
    start = time.monotonic()
    # Graded as make grade does (--given): the handed-out set-up cell (Otter's import, about 5 s
    # of CPU under load) and self-checks are not run, so every cell left takes well under a
    # second and a short per-cell limit stops frank's loop soon. (Without --given, gina's
    # self-check cells call her looping function too: each ran until the per-cell limit.)
    rows = _grade(zip_path, submissions, WORK / "grades-loops", "--timeout", "120",
                  "--test-timeout", "3", "--cell-timeout", "6",
                  "--given", str(WORK / "assign" / "student" / f"{NAME}.ipynb"))
    assert time.monotonic() - start < 120
    for student in ("frank", "gina", "hugo"):
        row = rows[student]
        assert (row["q1"], row["q2"], row["q3"], row["q4"]) == ("2", "2", "0", "1"), row
    details = (WORK / "grades-loops" / "details" / "gina.txt").read_text()
    assert "time limit: this call ran longer than 3 s" in details
    hugo = (WORK / "grades-loops" / "details" / "hugo.txt").read_text()
    assert "went on when interrupted" in hugo and "not defined" not in hugo, hugo


def test_a_notebook_that_never_ends_is_stopped(autograder):
    """A loop the per-cell limit cannot stop (the notebook ignores the interrupt) hits the
    notebook's time limit: 0, with the reason; its grader is stopped with it, and a new one
    grades the next submission (one job: frank, then zed)."""
    zip_path, solution = autograder
    submissions = WORK / "looping"
    submissions.mkdir(parents=True)
    forever = _with_q3(solution, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                       "while True:\n    time.sleep(0.1)\n")
    nbformat.write(forever, submissions / "frank.ipynb")
    nbformat.write(solution, submissions / "zed.ipynb")
    start = time.monotonic()
    rows = _grade(zip_path, submissions, WORK / "grades-looping", "--timeout", "30", "--jobs", "1",
                  "--given", str(WORK / "assign" / "student" / f"{NAME}.ipynb"))
    assert time.monotonic() - start < 120  # frank stopped after 30 s, then zed in a new grader
    assert rows["frank"]["total"] == "0"
    assert rows["frank"]["reason"].startswith("time limit: not finished after 30 s")
    assert rows["frank"]["review"] == "signal"
    assert rows["zed"]["total"] == rows["zed"]["possible"] == "8", rows["zed"]


@pytest.mark.parametrize(("threads", "preset", "expected"), [(1, None, "1"), (None, None, None), (1, "3", "3")])
def test_a_grader_caps_its_kernels_threads_unless_told(tmp_path, monkeypatch, threads, preset, expected):
    """Graders side by side (`--jobs`) give their kernels a share of the cores each
    (OMP_NUM_THREADS, which the kernels inherit); an OMP_NUM_THREADS already set wins."""
    if preset is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", preset)
    assert grade.Grader(tmp_path, threads=threads).environment().get("OMP_NUM_THREADS") == expected


# A loop over positions that, while the grader counts the lines it runs (sys.settrace), displays
# the kernel side's answer with a count of its own (issue 55): 3/3 for q3 when the grader took
# the first result message of a request; the grader now reads the reply to its request only.
FORGER = """import json, sys


def positional_encoding(seq_len, d_model, *, base=10000.0, offset=0):
    if sys.gettrace() is not None:
        get_ipython().displayhook(json.dumps({"value": 7}))
    table = np.zeros((seq_len, d_model))
    frequencies = base ** (-2.0 * (np.arange(d_model) // 2) / d_model)
    for pos in range(offset, offset + seq_len):
        angles = pos * frequencies
        table[pos - offset] = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
    return table
"""
# The same loop sending a second reply to the grader's request with the kernel's own session:
# the request fails, whichever reply came first.
SESSION_FORGER = FORGER.replace(
    '        get_ipython().displayhook(json.dumps({"value": 7}))\n',
    '        k = get_ipython().kernel\n'
    '        answer = {"status": "ok", "data": {"text/plain": repr(json.dumps({"value": 7}))}, "metadata": {}}\n'
    '        k.session.send(k.shell_stream, "execute_reply", {"status": "ok", "execution_count": 1,\n'
    '                       "user_expressions": {"answer": answer}}, k.get_parent(), ident=k._parent_ident["shell"])\n')
# Notebooks that run into a limit after answering everything (issue 55): each keeps its points,
# its reason names the limit; the notebook graded beside them loses nothing.
OVER_LIMITS = {
    "mem": ("big = bytearray(3 * 2**30)", "stopped: memory limit 1 GB (cell {}: MemoryError)"),
    "fork": ("import subprocess\nchildren = []\nwhile True:\n    children.append(subprocess.Popen(['sleep', '60']))",
             "stopped: process limit 24 (cell {}: BlockingIOError)"),
    "fill": ("with open('fill', 'wb') as f:\n    while True:\n        f.write(b'0' * 2**20)",
             "stopped: disk limit 40 MB (cell {}: OSError)"),
    # A loop that ignores the interrupt: killed at the CPU limit, graded again without that cell.
    "spin": ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
             "stopped: CPU time limit 10 s: the kernel was killed in cell {}"),
}


def test_limits_stop_what_crosses_them_and_forged_replies_are_not_read(autograder):
    """One run, two at a time, with small limits: a notebook that allocates past the memory
    limit, one that starts processes in a loop, one that fills its disk, one that spins past the
    CPU limit (each named in the reason, its answers graded), two forgers of the grader's replies (a displayed result, a
    second reply: q3 lost), and the solution (every point)."""
    zip_path, solution = autograder
    submissions = WORK / "limits"
    submissions.mkdir(parents=True)
    for student, (source, _) in OVER_LIMITS.items():
        nbformat.write(_with_cell(solution, source, len(solution.cells)), submissions / f"{student}.ipynb")
    nbformat.write(_with_q3(solution, FORGER), submissions / "forger.ipynb")
    nbformat.write(_with_q3(solution, SESSION_FORGER), submissions / "sender.ipynb")
    nbformat.write(solution, submissions / "zed.ipynb")
    output = WORK / "grades-limits"
    rows = _grade(zip_path, submissions, output, "--jobs", "2", "--limits", "memory=1G,processes=24,disk=40M,cpu=10",
                  "--given", str(WORK / "assign" / "student" / f"{NAME}.ipynb"))
    cell = len(solution.cells) + 1
    for student, (_, reason) in OVER_LIMITS.items():
        row = rows[student]
        assert (row["total"], row["reason"]) == ("8", reason.format(cell)), row
        assert reason.format(cell).split(" (")[0].removeprefix("stopped: ") in \
            (output / "feedback" / f"{student}.txt").read_text()
    forger = rows["forger"]
    assert (forger["q3"], forger["total"]) == ("0", "5"), forger
    assert "more lines of Python for 64 positions than for 8" in (output / "details" / "forger.txt").read_text()
    sender = rows["sender"]
    assert float(sender["q3"]) < 3 and float(sender["total"]) < 8, sender
    assert "sent replies of its own to the grader's request" in (output / "details" / "sender.txt").read_text()
    assert (rows["zed"]["total"], rows["zed"]["reason"]) == ("8", ""), rows["zed"]
