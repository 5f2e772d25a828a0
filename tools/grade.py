"""Grade a class's notebooks with Otter-Grader's ``otter run``, without Docker.

    python tools/grade.py AUTOGRADER_ZIP SUBMISSIONS_DIR --output OUT_DIR [--jobs N] [--timeout S]

Every ``*.ipynb`` under SUBMISSIONS_DIR is one student's submission; the student is named by the
notebook's path relative to SUBMISSIONS_DIR without ``.ipynb`` (``alice/build-the-encoding``,
or ``alice`` for ``alice.ipynb``). Each one is copied, under the assignment's own notebook name
(so a renamed notebook is graded as if it had kept its name), into a folder of its own and
graded by one ``otter run`` process; ``--jobs`` of them run at a time (default: the machine's
cores). A submission that does not finish within ``--timeout`` seconds (a student's infinite
loop) is stopped with the kernel it started. The tool writes

- ``OUT_DIR/grades.csv``: one row per student, the score of every question, the total, the
  points possible and, when the notebook could not be graded, ``0`` everywhere and the reason
  (not a notebook, empty, time limit, ``otter run`` failed: its last error line);
- ``OUT_DIR/feedback/<student>.txt``: that student's feedback, each question's score and the
  output of its tests (public and hidden);
- ``OUT_DIR/results/<student>/results.json``: Otter's own results, in Gradescope's format.

It uses only the standard library and ``otter`` (found next to this Python, or on the PATH).
``otter run`` executes the notebook in this environment: grade only submissions you are willing
to run on this machine. ``make grade ASSIGNMENT=<name> SUBMISSIONS=<dir>`` calls this tool with
the autograder that ``make assignments`` generates.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Grade:
    """One student's result: scores per question, or the reason there are none."""

    student: str
    scores: dict = field(default_factory=dict)     # question -> (score, possible)
    feedback: str = ""
    reason: str = ""                               # empty when graded
    seconds: float = 0.0


def assignment_name(zip_path: Path) -> str:
    """The assignment's name, from the autograder zip (``otter_config.json``) or its file name."""
    with zipfile.ZipFile(zip_path) as archive:
        if "otter_config.json" in archive.namelist():
            config = json.loads(archive.read("otter_config.json"))
            if config.get("assignment_name"):
                return config["assignment_name"]
    return zip_path.name.split("-autograder_")[0]


def otter_command() -> list[str]:
    """The ``otter`` executable of this Python's environment, else the one on the PATH."""
    local = Path(sys.executable).with_name("otter")
    if local.exists():
        return [str(local)]
    found = shutil.which("otter")
    if found is None:
        raise SystemExit("otter not found: install otter-grader (pip install 'otter-grader[grading]')")
    return [found]


def check_notebook(path: Path) -> str:
    """Why path cannot be graded ('' when it looks like a notebook): empty file, not JSON, no cells."""
    text = path.read_bytes()
    if not text.strip():
        return "empty file"
    try:
        notebook = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"not a notebook (invalid JSON: {error})"
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return "not a notebook (no list of cells)"
    return ""


def _descendants(pid: int) -> list[int]:
    """The processes pid started, and theirs (from /proc; empty where there is none)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def _stop(process: subprocess.Popen) -> None:
    """Kill process and everything it started: its process group, and the notebook's kernel,
    which jupyter_client starts in a session of its own."""
    children = _descendants(process.pid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _last_error(output: str) -> str:
    """The last line of otter's output that names an error, for the CSV's reason column."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or ["no output"])[-1][:300]


def grade_one(student: str, notebook: Path, zip_path: Path, name: str, work: Path,
              timeout: float) -> Grade:
    """Grade one submission with ``otter run`` in a folder of its own, within timeout seconds."""
    start = time.monotonic()
    grade = Grade(student)
    grade.reason = check_notebook(notebook)
    if grade.reason:
        return grade
    folder = work / student
    (folder / "results").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(notebook, folder / f"{name}.ipynb")
    command = [*otter_command(), "run", "-a", str(zip_path.resolve()), "-o", "results",
               f"{name}.ipynb"]
    # A session of its own: on a timeout, the kernel otter started is killed with it.
    process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        grade.reason = f"time limit: not finished after {timeout:g} s (an infinite loop?)"
        grade.seconds = time.monotonic() - start
        return grade
    grade.seconds = time.monotonic() - start
    results = folder / "results" / "results.json"
    if process.returncode != 0 or not results.exists():
        grade.reason = f"otter run failed: {_last_error(output)}"
        return grade
    report = json.loads(results.read_text())
    lines = []
    for test in report["tests"]:
        if "max_score" in test and test.get("score") is not None:
            grade.scores[test["name"]] = (float(test["score"]), float(test["max_score"]))
            lines.append(f"{test['name']}: {test['score']:g} / {test['max_score']:g}")
        else:
            lines.append(test["name"])
        lines += ["    " + line for line in test.get("output", "").splitlines()] + [""]
    grade.feedback = "\n".join(lines)
    return grade


def submissions_in(folder: Path) -> dict[str, Path]:
    """Every notebook under folder, by student name (its relative path without .ipynb)."""
    found = {}
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        found[path.relative_to(folder).with_suffix("").as_posix()] = path
    return found


def write_outputs(grades: list[Grade], output: Path) -> Path:
    """grades.csv (one row per student) and feedback/<student>.txt; returns the CSV's path."""
    questions = sorted({q for g in grades for q in g.scores},
                       key=lambda q: (len(q), q))  # q1, q2, ..., q10
    possible = {q: p for g in grades for q, (_, p) in g.scores.items()}
    table = output / "grades.csv"
    with table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *questions, "total", "possible", "reason"])
        for g in grades:
            scores = [g.scores.get(q, (0.0, 0.0))[0] for q in questions]
            writer.writerow([g.student, *(f"{s:g}" for s in scores), f"{sum(scores):g}",
                             f"{sum(possible.values()):g}", g.reason])
    for g in grades:
        text = output / "feedback" / f"{g.student}.txt"
        text.parent.mkdir(parents=True, exist_ok=True)
        text.write_text(g.feedback if not g.reason else f"Not graded: {g.reason}. Score 0.\n")
    return table


def grade_class(zip_path: Path, submissions: Path, output: Path, *, jobs: int,
                timeout: float) -> list[Grade]:
    """Grade every submission, jobs at a time; write the CSV and the feedback under output."""
    name = assignment_name(zip_path)
    found = submissions_in(submissions)
    if not found:
        raise SystemExit(f"no .ipynb file under {submissions}")
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch:
        work = Path(scratch)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            grades = list(pool.map(
                lambda item: grade_one(item[0], item[1], zip_path, name, work, timeout),
                found.items()))
        for g in grades:
            results = work / g.student / "results" / "results.json"
            if results.exists():
                target = output / "results" / g.student / "results.json"
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(results, target)
    write_outputs(grades, output)
    return grades


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("autograder", type=Path, help="the autograder zip of `otter assign`")
    parser.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    parser.add_argument("--output", "-o", type=Path, default=Path("grades"),
                        help="where grades.csv, feedback/ and results/ go (created)")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                        help="submissions graded at a time (default: the number of cores)")
    parser.add_argument("--timeout", "-t", type=float, default=600.0,
                        help="seconds one submission may take before it is stopped (default 600)")
    args = parser.parse_args(argv)
    if not args.autograder.is_file():
        parser.error(f"no autograder zip at {args.autograder} (run `make assignments` first)")
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder of submissions")
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs must be at least 1 and --timeout positive")
    start = time.monotonic()
    grades = grade_class(args.autograder, args.submissions, args.output, jobs=args.jobs,
                         timeout=args.timeout)
    failed = [g for g in grades if g.reason]
    print(f"graded {len(grades) - len(failed)} of {len(grades)} submissions in "
          f"{time.monotonic() - start:.0f} s with {args.jobs} at a time: "
          f"{args.output / 'grades.csv'}")
    for g in failed:
        print(f"  {g.student}: 0 ({g.reason})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
