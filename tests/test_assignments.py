"""The graded assignments: Otter-Grader masters in assignments/<name>/<name>.ipynb.

What an instructor relies on, checked on every master:

- ``otter assign`` turns it into a student notebook and an autograder zip;
- the student notebook as handed out scores 0 on every autograded question, and the
  master's solutions score full marks;
- the checks discriminate: each realistic wrong answer of tests/assignment_answers.py (1-based positions, ``j``
  instead of ``2i``, the concatenated layout, a crash on odd widths, float32 angles,
  sequence-first slicing, a fix of debug-the-module that keeps its symptom or fixes more, the
  book's module copied as the fixes, an experiment whose seed is ignored, that tests at the
  training length, measures the wrong encoding or drops ``base``, ...) loses the points of its
  question and only those (or of the later questions that measure with a broken
  ``run_experiment``, when it says so), a partly right one (PARTIAL) part of them;
- a student function that raises fails its question while the others are still graded;
- a renamed or half-done notebook gets a clear message, not a traceback from inside otter.

Otter runs in subprocesses only: importing it emits a DeprecationWarning (through ipylab)
that this project's ``filterwarnings = error`` would turn into a failure. Grading uses
``grading/grade.py`` as ``make grade`` does (sealed: ``grading/sealed.py``, no Docker). ``make assignments`` generates what is out of date
(as for the book), its output is copied under _build/test-assignments (otter assign cannot find
its own zip when the output folder is outside the repository) and graded there once per session,
and the slow steps (kernels) run two at a time.

Grades are reused when nothing they depend on changed (tests/reuse.py): each graded
submission's scores, and each notebook executed as a student runs it, are kept under a digest of
the submission, the autograder's tests and configuration, the package's sources,
requirements.txt, this Python and the grading script. Editing a master, a wrong answer below or
the package grades again what they touch; a fresh clone (CI) grades everything.
"""

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import yaml

from assignment_answers import PARTIAL, SHARED, WRONG_ANSWERS, partner
from reuse import digest, keep, kept, reused

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "_build" / "test-assignments"
GENERATED = ROOT / "_build" / "assignments"  # what `make assignments` generates
MASTERS = sorted(p for p in ROOT.glob("assignments/*/*.ipynb") if p.stem == p.parent.name)
NAMES = [p.stem for p in MASTERS]
WORKERS = 2  # the CI machine has two cores
TIMEOUT = 1200  # seconds for one subprocess: an otter run, or grading one assignment's submissions
GRADE_BATCH = 40  # submissions graded by one subprocess (one grader, grading/grade.py): an assignment
# The assignments whose submissions take longest to grade: experiment-positions trains its
# models in every one (about 10 s of CPU each), debug-the-module imports PyTorch (about 5 s);
# the others take about 3 s.
SLOWEST_GRADED = ["experiment-positions", "debug-the-module"]


GRADE_SCRIPT = """
import importlib.util, json, sys, tempfile
from pathlib import Path
folder, zip_path, *submissions = sys.argv[1:]
spec = importlib.util.spec_from_file_location("grade", Path(folder) / "grade.py")
grade = sys.modules["grade"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(grade)
name = grade.assignment_name(Path(zip_path))
tests = grade.read_tests(Path(zip_path))
given = grade.given_cells(Path("student") / f"{name}.ipynb")
scores = {}
# Graded as make grade does (grading/sealed.py): one grader for the batch, a kernel per submission.
with tempfile.TemporaryDirectory() as work, grade.Grader(Path(work), threads=1) as grader:
    for path in submissions:
        result = grade.grade_one(path, Path(path), name, tests, Path(work), 600, given=given,
                                 grader=grader)
        assert result.scores, result.reason
        # The instructor's details by question; the errors of the notebook's own cells (a
        # section of their own) are added to every question's.
        sections, question = {}, None
        for line in result.details.splitlines():
            question = (line.split(":")[0] if line.split(":")[0] in result.scores else "cells"
                        ) if line and not line.startswith(" ") else question
            sections[question] = sections.get(question, "") + line + "\\n"
        scores[path] = {q: [s, p, sections.get(q, "") + sections.get("cells", "")]
                        for q, (s, p) in result.scores.items()}
print(json.dumps(scores))
"""


GRADER = [(ROOT / "grading" / name).read_bytes() for name in ("grade.py", "sealed.py", "crossing.py", "limits.py", "feedback.py")]


def _fingerprint(*parts):
    """The digest of parts and of what every grade depends on besides them: the package's
    sources, the pins, this Python and the grading script."""
    package = sorted((ROOT / "code" / "posenc").rglob("*.py"))
    return digest(*parts, sys.version, GRADE_SCRIPT, (ROOT / "requirements.txt").read_bytes(),
                  *(f"{p.relative_to(ROOT)}\n".encode() + p.read_bytes() for p in package))


def _zip_fingerprint(zip_path):
    """The fingerprint of an autograder zip's files (their contents: the zip's own name and
    timestamps change at every `otter assign`)."""
    with zipfile.ZipFile(zip_path) as archive:
        return digest(*(f"{n}\n".encode() + archive.read(n) for n in sorted(archive.namelist())))


@dataclass
class Assignment:
    """One master and what `otter assign` made of it."""

    name: str
    folder: Path                # WORK / name
    assign: subprocess.CompletedProcess
    variants: dict              # label -> submission notebook path
    scores: dict = None         # label -> {question: (score, possible, summary)}

    @property
    def student(self):
        return self.folder / "student" / f"{self.name}.ipynb"

    @property
    def solution(self):
        return self.folder / "autograder" / f"{self.name}.ipynb"

    @property
    def autograder_zip(self):
        (zip_path,) = (self.folder / "autograder").glob(f"{self.name}-autograder_*.zip")
        return zip_path


def _run(command, **kwargs):
    """Run a command (otter and kernels live in subprocesses) and capture its output."""
    return subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=TIMEOUT, **kwargs)


def _parallel(jobs):
    """Call every function of jobs, two at a time, and return their results in order."""
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(lambda job: job(), jobs))


def _answer_cell(nb, marker):
    """The one code cell of nb whose source contains marker."""
    cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    assert len(cells) == 1, f"{len(cells)} code cells contain {marker!r}"
    return cells[0]


def _wrong_answer(solution, edits):
    """A copy of the solution notebook with the edits of one wrong answer applied."""
    nb = nbformat.read(solution, as_version=4)
    for marker, old, new in edits:
        cell = _answer_cell(nb, marker)
        assert cell.source.count(old) == 1, f"{old!r} is not once in the cell of {marker!r}"
        cell.source = cell.source.replace(old, new)
    return nb


def _submission(folder, label, nb):
    """Write nb as <folder>/<label>/<name>.ipynb (submissions keep the notebook's name)."""
    path = folder / "submissions" / label.replace(" ", "-").replace(":", "") / nb.metadata["otter"]["assignment_name"]
    path = path.with_suffix(".ipynb")
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _execute(notebook):
    """Run a notebook the way a student does (all cells, errors shown) and return it."""
    result = _run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                   "--allow-errors", "--inplace", notebook.name], cwd=notebook.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return nbformat.read(notebook, as_version=4)


@pytest.fixture(scope="module")
def assignments(make):
    """otter assign on every master, then every submission graded: once per session.

    `make assignments` runs otter assign (with the masters' tests) on the masters that changed,
    or whose package or pins did, since it last did (none, usually); each one's output is then
    copied to WORK, where the submissions are written and graded.
    """
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    made = make("--keep-going", f"--jobs={WORKERS}", "assignments")
    runs = []
    for master in MASTERS:
        # make writes .assigned after otter assign succeeded, and deletes the folder before.
        output = GENERATED / master.stem
        if (output / ".assigned").exists():
            shutil.copytree(output, WORK / master.stem)
            runs.append(subprocess.CompletedProcess(made.args, 0, made.stdout, made.stderr))
        else:
            runs.append(made if made.returncode else subprocess.CompletedProcess(
                made.args, 1, made.stdout, f"make assignments made no {output}\n{made.stderr}"))
    found = {}
    for master, run in zip(MASTERS, runs):
        a = Assignment(master.stem, WORK / master.stem, run, {})
        found[a.name] = a
        if run.returncode:
            continue
        a.variants["student"] = _submission(a.folder, "student", nbformat.read(a.student, 4))
        a.variants["solution"] = _submission(a.folder, "solution", nbformat.read(a.solution, 4))
        answers = {label: edits for label, _, edits in WRONG_ANSWERS.get(a.name, [])}
        for label, edits in answers.items():
            mate = partner(a.name, label)
            if mate is None:
                a.variants[label] = _submission(a.folder, label, _wrong_answer(a.solution, edits))
            elif mate in a.variants:  # written with its partner
                a.variants[label] = a.variants[mate]
            else:
                a.variants[label] = _submission(a.folder, f"{label} + {mate}",
                                                _wrong_answer(a.solution, edits + answers[mate]))

    def grade(a, paths):
        result = _run([sys.executable, "-c", GRADE_SCRIPT, ROOT / "grading", a.autograder_zip, *paths],
                      cwd=a.folder)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1])

    # The grades kept from an earlier run of the same inputs; the others are graded below.
    keys, by_path = {}, {}
    for a in found.values():
        if a.assign.returncode == 0:
            tests = _zip_fingerprint(a.autograder_zip), *GRADER
            for path in set(a.variants.values()):
                keys[str(path)] = _fingerprint(*tests, path.read_bytes())
                saved = kept("grades", keys[str(path)])
                if saved is not None:
                    by_path[str(path)] = saved
    # Each assignment's other submissions in batches of GRADE_BATCH, so that the two workers
    # share the slow ones; the slowest assignments first (SLOWEST_GRADED), so that the two end
    # together.
    order = sorted(found.values(), key=lambda a: SLOWEST_GRADED.index(a.name)
                   if a.name in SLOWEST_GRADED else len(SLOWEST_GRADED))
    batches = [(a, paths[i:i + GRADE_BATCH]) for a in order if a.assign.returncode == 0
               for paths in [sorted({p for p in a.variants.values() if str(p) not in by_path})]
               for i in range(0, len(paths), GRADE_BATCH)]
    for scores in _parallel([lambda a=a, paths=paths: grade(a, paths) for a, paths in batches]):
        for path, score in scores.items():
            by_path[path] = keep("grades", keys[path], score)
    for a in found.values():
        if a.assign.returncode == 0:
            a.scores = {label: by_path[str(path)] for label, path in a.variants.items()}
    return found


def _autograded(nb):
    """The autograded questions of a generated notebook: the tests stored in its metadata."""
    return sorted(nb.metadata["otter"]["tests"])


@pytest.mark.parametrize("name", NAMES)
def test_otter_assign_succeeds(assignments, name):
    a = assignments[name]
    assert a.assign.returncode == 0, a.assign.stdout[-3000:] + a.assign.stderr[-3000:]
    assert a.student.exists() and a.solution.exists() and a.autograder_zip.exists()


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_scores_zero(assignments, name):
    scores = assignments[name].scores["student"]
    assert scores, "no autograded question"
    assert {q: s[0] for q, s in scores.items()} == {q: 0 for q in scores}


@pytest.mark.parametrize("name", NAMES)
def test_solutions_score_full_marks(assignments, name):
    scores = assignments[name].scores["solution"]
    failed = {q: s[2] for q, s in scores.items() if s[0] != s[1]}
    assert not failed, "\n".join(failed.values())


@pytest.mark.parametrize("name", NAMES)
def test_every_autograded_question_has_public_and_hidden_tests(assignments, name):
    """Public tests in the student notebook; hidden ones only in the autograder."""
    a = assignments[name]
    questions = set(a.scores["solution"])
    student = nbformat.read(a.student, 4)
    assert set(_autograded(student)) == questions, "every autograded question has public tests"
    for question, source in student.metadata["otter"]["tests"].items():
        assert "hidden=False" in source and "hidden=True" not in source, question
    solution = nbformat.read(a.solution, 4)
    for question, source in solution.metadata["otter"]["tests"].items():
        assert "hidden=True" in source, f"{question} has no hidden test"


@pytest.mark.parametrize("name", NAMES)
def test_every_autograded_question_has_a_wrong_answer(name):
    """Every autograded code question is covered by at least one wrong answer below."""
    solution = nbformat.read(MASTERS[NAMES.index(name)], 4)
    questions = {c.source.split("name:")[1].split()[0] for c in solution.cells
                 if c.cell_type == "raw" and c.source.startswith("# BEGIN QUESTION")
                 and "manual: true" not in c.source}
    assert questions == {q for _, lost, _ in WRONG_ANSWERS[name] for q in _questions(lost)}


def _questions(lost):
    """The questions a wrong answer must lose: one name or a tuple of names."""
    return (lost,) if isinstance(lost, str) else lost


def test_shared_answers_edit_different_functions_for_different_questions():
    """Each pair of SHARED: two wrong answers (not correct ones) whose edits touch different
    cells and whose questions differ; no answer in two pairs."""
    for name, pairs in SHARED.items():
        labels = [label for pair in pairs for label in pair]
        assert len(labels) == len(set(labels)), f"{name}: an answer in two pairs"
        answers = {label: (_questions(lost), edits) for label, lost, edits in WRONG_ANSWERS[name]}
        for a, b in pairs:
            (lost_a, edits_a), (lost_b, edits_b) = answers[a], answers[b]
            assert lost_a and lost_b, f"{name}: a correct answer is graded alone ({a!r}, {b!r})"
            assert set(lost_a).isdisjoint(lost_b), f"{name}: {a!r} and {b!r} lose the same question"
            assert {m for m, _, _ in edits_a}.isdisjoint(m for m, _, _ in edits_b), (
                f"{name}: {a!r} and {b!r} edit the same cell")


WRONG = [(name, label, _questions(lost)) for name, answers in WRONG_ANSWERS.items()
         for label, lost, _ in answers]


@pytest.mark.parametrize(("name", "label", "questions"), WRONG,
                         ids=[f"{n}: {label}" for n, label, _ in WRONG])
def test_wrong_answer_loses_its_points_only(assignments, name, label, questions):
    """A wrong answer loses its questions' points and only those (a partly right one, PARTIAL, keeps
    part of them); a differently correct one loses none."""
    scores = assignments[name].scores[label]
    for question in questions:  # all its points, or those a partly right answer keeps (PARTIAL)
        kept = PARTIAL.get(name, {}).get(label, {}).get(question, 0)
        assert scores[question][0] == kept, f"{label} kept {scores[question][0]} points of {question}, not {kept}"
    mate = partner(name, label)  # graded in the same submission: its questions are its own
    theirs = _questions(next(lost for other, lost, _ in WRONG_ANSWERS[name] if other == mate)) if mate else ()
    others = {q: s[2] for q, s in scores.items() if q not in (*questions, *theirs) and s[0] != s[1]}
    assert not others, f"{label} also lost points elsewhere:\n" + "\n".join(others.values())


@pytest.fixture(scope="module")
def executed(assignments):
    """Notebooks run as a student runs them: renamed copies, and a half-done one."""
    paths = {}
    for a in assignments.values():
        # The self-check's set-up is in the first code cells: run only up to those.
        nb = nbformat.read(a.student, 4)
        nb.cells = nb.cells[:3]
        renamed = a.folder / "renamed" / "my-copy.ipynb"
        renamed.parent.mkdir(exist_ok=True)
        nbformat.write(nb, renamed)
        paths[a.name, "renamed"] = renamed
    # build-the-encoding with question 1 answered only.
    a = assignments["build-the-encoding"]
    nb = nbformat.read(a.student, 4)
    _answer_cell(nb, "def position_of").source = _answer_cell(
        nbformat.read(a.solution, 4), "def position_of").source
    half = a.folder / "half-done" / f"{a.name}.ipynb"
    half.parent.mkdir(exist_ok=True)
    nbformat.write(nb, half)
    paths[a.name, "half-done"] = half
    jobs = [lambda p=p: reused("executed", _fingerprint(p.name, p.read_bytes()), lambda: _execute(p))
            for p in paths.values()]
    return {key: nbformat.from_dict(nb) for key, nb in zip(paths, _parallel(jobs))}


def _text(output):
    """What a student reads of one cell output."""
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}\n" + "\n".join(output.traceback)
    return output.get("text", "") + output.get("data", {}).get("text/plain", "")


@pytest.mark.parametrize("name", NAMES)
def test_renamed_notebook_gets_a_clear_message(executed, name):
    nb = executed[name, "renamed"]
    first = next(c for c in nb.cells if c.cell_type == "code" and c.get("id") != "colab-install")
    errors = [o for o in first.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "FileNotFoundError"
    assert f"back its name {name}.ipynb" in errors[0].evalue
    assert "site-packages" not in _text(errors[0]), "a traceback from inside a library"


def test_half_done_notebook_gets_clear_messages(executed):
    nb = executed["build-the-encoding", "half-done"]
    checks = {c.source.split('"')[1]: "".join(_text(o) for o in c.outputs)
              for c in nb.cells if c.cell_type == "code" and c.source.startswith("grader.check(")}
    assert "q1 results: All test cases passed!" in checks["q1"], checks["q1"]
    for question, function in [("q2", "positional_encoding_loop"), ("q3", "positional_encoding"),
                               ("q4", "wavelengths")]:
        assert "finish the function" in checks[question] or "is not defined" in checks[question], checks[question]
        assert function in checks[question]
        assert "Traceback" not in checks[question] and "site-packages" not in checks[question]


def test_wrong_answers_are_graded_with_a_message(assignments):
    """The grader's report names what is wrong, e.g. the function that raised."""
    report = assignments["build-the-encoding"].scores["vectorized: the function raises"]["q3"][2]
    assert "NotImplementedError: not vectorized yet" in report


# The message a student reads for some of the wrong answers above: (question, words it contains).
# Each frequent mistake is told its own cause, and each broken rule is named.
MESSAGES = {
    "build-the-encoding": {
        "position from the fastest pair": ("q1", "modulo 2 pi, the wavelength of pair 0"),
        "position truncated, not rounded": ("q1", "round to the nearest integer instead of cutting the decimals off"),
        "loops: 1-based positions": ("q2", "positions start at 0"),
        "loops: exponent j instead of 2i": ("q2", "must share their angular frequency"),
        "posenc instead of own code (loops, vectorized under another name, wavelengths)": ("q2", "uses the course's package"),
        "methods swapped: loops with no loop, vectorized with a loop over positions": ("q2", "has 0 level(s) of Python loops: question 2 asks for two nested loops"),
        "one loop only in q2, q3 calls the loop function of q2": ("q2", "has 1 level(s) of Python loops"),
        "vectorized: concatenated [sin | cos] layout": ("q3", "concatenated layout"),
        # Absent while grading: the cells that import it fail (grading/sealed.py).
        "posenc through a default argument, a dict and functools.partial": ("q2", "posenc is not available while grading"),
        "position from posenc's table": ("q1", "posenc is not available while grading"),
        "posenc through eval, importlib and sys.modules": ("q2", "runs code or imports modules chosen at run time (eval)"),
        "loops that copy a vectorized table": ("q2", "sines or cosines of single angles for 42 entries"),
        "vectorized except a loop over positions for odd widths": ("q3", "more lines of Python for 64 positions than for 8 (d_model = 7)"),
        "numpy.vectorize imported under another name": ("q3", "calls vectorize, a Python loop in disguise"),
        "wavelengths: angular frequency instead of wavelength": ("q4", "returned the angular frequencies"),
    },
    "debug-the-module": {
        "q1: the window sliced by seq_len, still sequence first": ("q1", "Fix1 does not remove question 1's symptom in: 3 sentences of 5 tokens"),
        "q2: the angular frequencies still rounded to float32": ("q2", "Fix2 does not remove question 2's symptom in: positions near 4000"),
        "q3: row 0 overwritten, positions still from 1": ("q3", "Fix3 behaves as the handed-out module in: offset 9"),
        "q5: odd width: the last column a cosine": ("q5", "Fix5 does not remove question 5's symptom in: d_model 7"),
        "q6: dropout without the 1 / (1 - p) rescale": ("q6", "Fix6 does not remove question 6's symptom in: dropout=0.5"),
        "q6: dropout fixed, and the output always float64": ("q6", "Fix6 also changes: a float32 input, where question 6's bug does not show"),
        "q4: posenc's module as a base class": ("q4", "posenc is not available while grading"),
        "copies the book's MinimalPositionalEncoding as every fix": ("q3", "write it as class Fix3(PositionalEncoding)"),
        "copies textbook_encoding into the window of every fix": ("q2", "Fix2 also changes: 3 sentences of 5 tokens"),
        "the handed-out class fixed in place, each fix as asked": ("q1", "is not the handed-out module with question 1's bug fixed and nothing else"),
        "check: shapes only": ("q7", "<a module that adds nothing>: returned True, expected False"),
        "check: even widths only": ("q7", "<a bug: the last column of an odd width holds a cosine>: returned True"),
        "check: zeros as the input": ("q7", "<a bug: x replaced by the encoding instead of added to it>: returned True"),
        "check: a batch of one sentence": ("q7", "<a bug: only the first sentence of the batch gets positions>: returned True"),
        "check: compares with the notebook's own class": ("q7", "<correct: a float64 table of max_len rows, sliced>: returned False"),
        "check: lets a module's error through": ("q7", "<a bug: the window's length taken from the batch size>: raised RuntimeError"),
        "check: reads the expected verdicts from the caller's frames": ("q7", "<the module as handed out>: returned True, expected False"),
    },
    "attend-by-position": {
        "rotation the wrong way (transposed blocks)": ("q1", "check the sign of the sine terms"),
        # Absent while grading (grading/sandbox.py): the import fails, by any route.
        "rotation from posenc.shift_matrix, spread as a list": ("q1", "posenc is not available while grading"),
        "q1 from posenc kept in an instance attribute": ("q1", "'NoneType' object has no attribute 'shift_matrix'"),
        "smallest factor: the weight averaged over the queries": ("q4", "c is too small"),
        "smallest factor: question 2's factor": ("q4", "is not the smallest factor to 1%"),
        "smallest factor: its arguments ignored": ("q4", "smallest_factor(0.99, 50) = "),
    },
    "experiment-positions": {
        "every run with seed 0": ("q1", "the same run done step by step gives"),
        "a seed per encoding and per base": ("q2", "a controlled comparison trains each of the three encodings once"),
        "cherry-picked: the best of three seeds": ("q2", "trained 9 models"),
        "sweep of sinusoidal instead of rope; logits compared unshuffled": ("q4", "shuffle the model's logits of the tokens along the sequence axis"),
        "rope mixed up with sinusoidal; causal mask not passed": ("q4", "not the gap of that model"),
        "wrong default arguments": ("q1", "has the default 32, the question gives 16"),
        "a cache keyed without base": ("q1", "no result kept from another call"),
        "numbers typed in instead of run": ("q2", "trained 0 models"),
        "0-d tensors for floats": ("q1", "expected a Python float"),
    },
}
# ... and the other questions of the answers that lose several, each for its own reason.
MESSAGES_ALSO = [
    ("build-the-encoding", "sine and cosine swapped (loops, vectorized)", "q2", "sine and cosine are swapped"),
    ("build-the-encoding", "posenc through a default argument, a dict and functools.partial", "q3", "posenc is not available while grading"),
    ("build-the-encoding", "posenc through a default argument, a dict and functools.partial", "q4", "posenc is not available while grading"),
    ("build-the-encoding", "posenc through eval, importlib and sys.modules", "q3", "chosen at run time (import_module)"),
    ("build-the-encoding", "posenc through eval, importlib and sys.modules", "q4", "chosen at run time (modules)"),
    ("build-the-encoding", "sine and cosine swapped (loops, vectorized)", "q3", "sine and cosine are swapped"),
    ("build-the-encoding", "methods swapped: loops with no loop, vectorized with a loop over positions", "q3", "asks for no Python loop over positions"),
    ("build-the-encoding", "one loop only in q2, q3 calls the loop function of q2", "q3", "asks for no Python loop over positions"),
    ("build-the-encoding", "posenc instead of own code (loops, vectorized under another name, wavelengths)", "q3", "posenc is not available while grading"),
    ("build-the-encoding", "posenc instead of own code (loops, vectorized under another name, wavelengths)", "q4", "uses the course's package"),
    ("attend-by-position", "rotation from posenc.shift_matrix, spread as a list", "q3", "returned a list, expected a numpy.ndarray"),
    ("experiment-positions", "a seed per encoding and per base", "q3", "a controlled sweep gives every base the seed and steps it"),
    ("experiment-positions", "numbers typed in instead of run", "q3", "is not RoPE with that base, seed and number of steps"),
    ("experiment-positions", "0-d tensors for floats", "q3", "expected a Python float"),
]
MESSAGE_CASES = [(name, label, *expected) for name, labels in MESSAGES.items()
                 for label, expected in labels.items()] + MESSAGES_ALSO


@pytest.mark.parametrize(("name", "label", "question", "words"), MESSAGE_CASES,
                         ids=[f"{n}: {label}: {q}" for n, label, q, _ in MESSAGE_CASES])
def test_wrong_answer_gets_a_message_naming_its_cause(assignments, name, label, question, words):
    lost = {lost for other, lost, _ in WRONG_ANSWERS[name] if other == label}
    assert lost, f"{label} is not a wrong answer of {name}"
    report = assignments[name].scores[label][question][2]
    assert words in report, report[-3000:]


def _pins(path):
    """The lines of a requirements file, without comments and blank lines."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


@pytest.mark.parametrize("name", NAMES)
def test_autograder_environment_matches_the_course(assignments, name):
    """The zip's environment.yml (Gradescope, `otter grade`): the course's Python, the CPU build of
    its torch, its NumPy and Otter, and posenc at the release tag of this version."""
    with zipfile.ZipFile(assignments[name].autograder_zip) as archive:
        environment = yaml.safe_load(archive.read("environment.yml"))
    dependencies = environment["dependencies"]
    python = (ROOT / "binder" / "runtime.txt").read_text().strip().removeprefix("python-")
    assert f"python={python}" in dependencies, dependencies
    (pip,) = [d["pip"] for d in dependencies if isinstance(d, dict)]
    course = {line.split("==")[0].split("[")[0]: line.split("==")[1]
              for line in _pins(ROOT / "requirements.txt") if "==" in line}
    assert set(_pins(ROOT / "assignments" / "autograder-requirements.txt")) <= set(pip), pip
    assert f"otter-grader[grading,plugins]=={course['otter-grader']}" in pip, pip
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip, pip
    assert f"torch=={course['torch']}+cpu" in pip, "the CPU build of the course's torch"
    assert f"numpy=={course['numpy']}" in pip, pip
    version = {}
    exec((ROOT / "code" / "posenc" / "_version.py").read_text(), version)
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert f"posenc @ git+{url}@v{version['__version__']}" in pip, "posenc pinned to this version's tag"
    assert not [line for line in pip if line.split("==")[0] in ("numpy", "torch") and line not in (
        f"numpy=={course['numpy']}", f"torch=={course['torch']}+cpu")], pip
