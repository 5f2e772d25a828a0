"""Grade a class's notebooks sealed (``grading/sealed.py``), each in a sandbox (``grading/sandbox.py``).

    python grading/grade.py AUTOGRADER_ZIP SUBMISSIONS_DIR --output OUT_DIR [--jobs N] [--timeout S]

Every ``*.ipynb`` under SUBMISSIONS_DIR is one student's submission; the student is named by the
notebook's path relative to SUBMISSIONS_DIR without ``.ipynb`` (``alice/build-the-encoding``,
or ``alice`` for ``alice.ipynb``). Each one is copied, under the assignment's own notebook name
(so a renamed notebook is graded as if it had kept its name), into a private temporary folder
of its own (only its notebook in it, removed as soon as it is graded) and graded sealed by a
``grading/sealed.py`` process: the notebook runs in a Jupyter kernel of its own, the autograder's
tests (read from the zip once, before any submission runs) run in that grader process on the
values the notebook's functions return (see ``grading/sealed.py``); the kernel runs under
bubblewrap (see ``grading/sandbox.py``), where it sees its folder, the course's Python and its
assignment's part of posenc only, has no network, and ends with every process it started
before the grader answers. ``--jobs`` grader processes
run at a time (default: the machine's cores), each grading one submission after another, every
one in a new kernel: a grader imports Python's libraries and Otter once, not once per submission
(about 2 s of CPU each), and is replaced by a new one after a submission it had to stop. Time
limits, from the finest to the coarsest: a call of the
student's code from a test that runs longer than ``--test-timeout`` seconds fails with "time
limit" (and so does every later call of that question; the other questions are still graded),
a cell that runs longer than ``--cell-timeout`` seconds is interrupted (the notebook goes on),
and a submission that does not finish within ``--timeout`` seconds (a loop in C code, a notebook
that ignores interrupts) is stopped with the kernel it started and gets 0. The tool writes,
after removing what an earlier run left there:

- ``OUT_DIR/grades.csv``: one row per student, the score of every question, the total, the
  points possible, ``reason`` (why a notebook got 0: not a notebook, empty, no code cell, time
  limit, the grader failed, or the first failing test when every question scored 0; and first,
  the limit a notebook ran into, ``--limits``: "stopped: memory limit 2 GB (cell 12:
  MemoryError)", see ``grading/limits.py``) and
  ``review`` (code that can reach what the kernel measures: patched modules, ``sys.modules``,
  ``importlib``, ``eval``/``exec``, files opened, ...; and copies: answers that match the
  published solutions or another submission, found with copydetect (``grading/review.py``):
  read those notebooks before trusting their grade);
- ``OUT_DIR/feedback/<student>.txt``: feedback safe to return to the student: each question's
  score, the output of the public tests and, for a question that lost points in hidden tests
  only, that a hidden test failed (no hidden test's source or expected values), and the errors
  of the notebook's own cells;
- ``OUT_DIR/details/<student>.txt``: for the instructor only, the output of every test, hidden
  ones included (their source lines and expected values): do not return it;
- ``OUT_DIR/results/<student>/results.json``: the same, in Gradescope's format (hidden tests'
  output included: do not return it either).

The grades are written once every submission is graded and every sandbox has ended, to
OUT_DIR, which no sandbox sees. Where bubblewrap is missing or cannot run, ``--sandbox auto``
(the default) grades with Docker (``otter grade``: Otter's containers and its CSV,
OUT_DIR/final_grades.csv), and where neither runs it stops with an error naming what to install;
the sandbox used is printed first. ``make grade ASSIGNMENT=<name> SUBMISSIONS=<dir>`` calls this
tool with the autograder that ``make assignments`` generates.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))  # grading/'s scripts import each other by name
import feedback  # noqa: E402
import limits  # noqa: E402
import manual  # noqa: E402  (the written questions' pages and score sheets)
import review  # noqa: E402
import sandbox  # noqa: E402
read_results = feedback.read_results


@dataclass
class Grade:
    """One student's result: scores per question, or the reason there are none."""

    student: str
    scores: dict = field(default_factory=dict)     # question -> (score, possible)
    feedback: str = ""                             # safe to return to the student
    details: str = ""                              # every test's output: instructor only
    reason: str = ""                               # why the total is 0, when it is
    review: str = ""                               # code that can reach the grading machinery
    seconds: float = 0.0


def assignment_name(zip_path: Path) -> str:
    """The assignment's name, from the autograder zip (``otter_config.json``) or its file name."""
    with zipfile.ZipFile(zip_path) as archive:
        if "otter_config.json" in archive.namelist():
            config = json.loads(archive.read("otter_config.json"))
            if config.get("assignment_name"):
                return config["assignment_name"]
    return zip_path.name.split("-autograder_")[0]


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
    if not any(isinstance(c, dict) and c.get("cell_type") == "code" and "".join(c.get("source", ""))
               .strip() for c in notebook["cells"]):
        return "no code cell (nothing to grade)"
    return ""


def given_cells(path: Path | None) -> frozenset[str]:
    """The code cells of the handed-out notebook (stripped), which the review column does not flag."""
    if path is None:
        return frozenset()
    cells = json.loads(path.read_bytes())["cells"]
    return frozenset("".join(c["source"]).strip() for c in cells if c["cell_type"] == "code")


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


def read_tests(zip_path: Path) -> dict[str, str]:
    """The autograder's test files (tests/*.py in the zip): {path: source}, in question order."""
    with zipfile.ZipFile(zip_path) as archive:
        names = sorted((n for n in archive.namelist() if n.startswith("tests/") and n.endswith(".py")),
                       key=lambda n: (len(n), n))
        return {name: archive.read(name).decode() for name in names}


def _checks(cells: frozenset[str]) -> list[str]:
    """The handed-out cells that run Otter's self-checks (not run when grading)."""
    return sorted(c for c in cells if "grader." in c or "import otter" in c)


class Grader:
    """A ``grading/sealed.py`` process that grades submissions one after another (each notebook in
    a kernel of its own), started when first asked and again after one it had to stop; in a
    private folder of its own under work (its working and temporary folder, removed by close).
    threads, when given, caps the CPU threads of its kernels (OMP_NUM_THREADS, which PyTorch and
    NumPy's BLAS read), unless the environment sets it: graders that run side by side then share
    the cores instead of each starting a thread per core."""

    def __init__(self, work: Path, threads: int | None = None):
        self.work, self.process, self.threads = work, None, threads
        sandbox.choose("bwrap")  # SandboxMissing, naming what to install, where it cannot run

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def environment(self) -> dict[str, str]:
        """The process's environment (its kernels inherit it): this one's, with its own folder as
        TMPDIR and OMP_NUM_THREADS set to threads unless this one sets it."""
        threads = {"OMP_NUM_THREADS": str(self.threads)} if self.threads else {}
        return {**threads, **os.environ, "TMPDIR": str(getattr(self, "folder", self.work))}

    def _start(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="grader-", dir=self.work))  # mode 0700
        self.stderr = (self.folder / "stderr").open("w+")
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("sealed.py"))], cwd=self.folder,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            env=self.environment(), start_new_session=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(self.process.stdout, self.lines), daemon=True).start()

    @staticmethod
    def _read(stream, lines: queue.Queue) -> None:
        with stream:  # closed here, at its end
            for line in stream:
                lines.put(line)
        lines.put(None)  # the process closed its output: it ended

    def ask(self, request: dict, timeout: float) -> dict:
        """The process's answer to request, within timeout seconds. Raises TimeoutError (the
        process was stopped, with its kernel) or RuntimeError (it ended: its last error)."""
        if self.process is None:
            self._start()
        token = secrets.token_hex(16)  # marks the answer as this process's, to this request
        try:
            self.process.stdin.write(json.dumps({**request, "token": token}) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it ended: the end of its output says why
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                self.close(stop=True)
                raise TimeoutError(f"not finished after {timeout:g} s") from None
            if line is None:
                self.stderr.seek(0)
                error = _last_error(self.stderr.read())
                self.close()
                raise RuntimeError(error)
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if isinstance(answer, dict) and answer.get("token") == token:
                return answer

    def close(self, stop: bool = False) -> None:
        """End the process (stop: at once, with its kernel; otherwise when it has read the end
        of its input, or after 10 s) and remove its folder."""
        if self.process is None:
            return
        try:
            self.process.stdin.close()
        except OSError:
            pass
        if not stop:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.process.poll() is None:
            _stop(self.process)
            limits.sweep()  # the cgroups of the submission it was grading
        self.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.process = None


def grade_sealed(grade: Grade, notebook: Path, grader: Grader, tests: dict[str, str],
                 environment: Path, timeout: float, test_timeout: float, cell_timeout: float,
                 skip: list[str], bounds: limits.Limits | None = None) -> dict | None:
    """Grade notebook with grader (grading/sealed.py), its kernel in the sandbox (with
    environment: the assignment's part of posenc; the kernel's sockets in a folder beside the
    notebook's); the results in Otter's results.json format, or None (grade.reason says why)."""
    sockets = notebook.parent.parent / "s"  # short: a socket's path has at most 107 bytes
    sockets.mkdir()
    bounds = bounds or limits.Limits()
    command = sandbox.bwrap_command(notebook.parent, sockets, environment,
                                    threads=str(grader.threads) if grader.threads else None, disk=bounds.disk)
    request = {"notebook": str(notebook), "tests": tests, "skip": skip, "sandbox": command,
               "sockets": str(sockets), "test_timeout": test_timeout, "cell_timeout": cell_timeout,
               "limits": limits.asdict(bounds)}
    try:
        answer = grader.ask(request, timeout)
    except TimeoutError:
        grade.reason = (f"time limit: not finished after {timeout:g} s (an infinite loop the "
                        "per-test and per-cell limits could not stop?)")
        return None
    except RuntimeError as error:
        grade.reason = f"the grader failed: {error}"
        return None
    if "error" in answer:
        error = answer["error"].removeprefix("RuntimeError: ")
        grade.reason = error[:300] if error.startswith("stopped: ") else f"the grader failed: {error[:300]}"
        return None
    questions = answer["questions"]
    public = "\n".join(q["public"] for q in questions.values())
    errors = [str(e) for e in answer.get("errors", [])]
    return {"executed": answer.get("executed"), "tests": [{"name": "Public Tests", "output": public}] + [
        {"name": name, "score": q["score"], "max_score": q["possible"], "output": q["output"]}
        for name, q in questions.items()] + ([{"name": "Errors in the notebook's cells", "output":
            "\n".join(errors), "visibility": "visible"}] if errors else []),
        "stopped": [str(s) for s in answer.get("stopped", [])]}


def grade_one(student: str, notebook: Path, name: str, tests: dict[str, str], work: Path,
              timeout: float, test_timeout: float = 60.0, cell_timeout: float = 120.0,
              keep: Path | None = None, given: frozenset[str] = frozenset(),
              grader: Grader | None = None, bounds: limits.Limits | None = None) -> Grade:
    """Grade one submission with grader (a new one, for it alone, if None) in a private folder
    of its own (under work, removed afterwards), within timeout seconds; tests: the
    autograder's, read from its zip before any submission ran; keep receives its results.json."""
    if grader is None:
        with Grader(work) as alone:
            return grade_one(student, notebook, name, tests, work, timeout, test_timeout,
                             cell_timeout, keep, given, alone, bounds)
    start = time.monotonic()
    grade = Grade(student)
    grade.reason = check_notebook(notebook)
    if grade.reason:
        return grade
    grade.review = review.constructs(notebook, given)
    folder = Path(tempfile.mkdtemp(prefix="submission-", dir=work))  # mode 0700
    try:
        (folder / "notebook").mkdir()   # the kernel's folder: the notebook alone
        copy = folder / "notebook" / f"{name}.ipynb"
        shutil.copyfile(notebook, copy)
        environment = sandbox.environment(name, work / "environments")
        report = grade_sealed(grade, copy, grader, tests, environment, timeout,
                              test_timeout, cell_timeout, _checks(given), bounds)
        executed = report.pop("executed", None) if report is not None else None
        if keep is not None:  # the written answers, with the outputs of this run, for grading/manual.py
            manual.keep(keep, executed, notebook)
        if report is not None:
            read_results(grade, report)
            if report.get("stopped"):  # a limit the notebook ran into: named first
                grade.reason = "; ".join(["stopped: " + "; ".join(report["stopped"]), grade.reason][:1 + bool(grade.reason)])
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                (keep / "results.json").write_text(json.dumps(report))
        return grade
    finally:
        grade.seconds = time.monotonic() - start
        shutil.rmtree(folder, ignore_errors=True)


def submissions_in(folder: Path) -> dict[str, Path]:
    """Every notebook under folder, by student name (its relative path without .ipynb)."""
    found = {}
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        found[path.relative_to(folder).with_suffix("").as_posix()] = path
    return found


OUTPUTS = ("grades.csv", "feedback", "details", "results", "copies.txt")  # what a run writes in its folder


def clear_outputs(output: Path) -> None:
    """Remove what an earlier run wrote in output (only OUTPUTS), so the folder matches the CSV."""
    for name in OUTPUTS:
        path = output / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def write_outputs(grades: list[Grade], output: Path) -> Path:
    """grades.csv (one row per student), feedback/ and details/<student>.txt; the CSV's path."""
    questions = sorted({q for g in grades for q in g.scores},
                       key=lambda q: (len(q), q))  # q1, q2, ..., q10
    possible = {q: p for g in grades for q, (_, p) in g.scores.items()}
    table = output / "grades.csv"
    with table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *questions, "total", "possible", "reason", "review"])
        for g in grades:
            scores = [g.scores.get(q, (0.0, 0.0))[0] for q in questions]
            writer.writerow([g.student, *(f"{s:g}" for s in scores), f"{sum(scores):g}",
                             f"{sum(possible.values()):g}", g.reason, g.review])
    for g in grades:
        for folder, text in (("feedback", g.feedback), ("details", g.details)):
            path = output / folder / f"{g.student}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            if not g.scores:
                text = f"Not graded: {g.reason}. Score 0.\n"
            elif g.reason:
                total = sum(score for score, _ in g.scores.values())
                text = f"{text}\n{'Total 0' if not total else f'Total {total:g}'}: {g.reason}\n"
            path.write_text(text)
    return table


def published(zip_path: Path) -> dict[str, Path]:
    """The solutions a copy may come from, by the name the review column gives them: the public
    ones of ``make assignments`` and the solution notebook beside the autograder zip (a
    variant's, when it is not the public one)."""
    name = assignment_name(zip_path)
    public = Path(__file__).resolve().parents[1] / "_build" / "assignments" / name / "autograder" / f"{name}.ipynb"
    beside = zip_path.parent / f"{name}.ipynb"
    found = {"the published solutions": public}
    if not public.is_file() or not beside.is_file() or beside.read_bytes() != public.read_bytes():
        found["this variant's solutions"] = beside  # grading/review.py names what comes from them
    return {label: path for label, path in found.items() if path.is_file()}


def grade_class(zip_path: Path, submissions: Path, output: Path, *, jobs: int,
                timeout: float, test_timeout: float = 60.0, cell_timeout: float = 120.0,
                given: Path | None = None, solutions: dict[str, Path] | None = None,
                copy_threshold: float = 0.8, bounds: limits.Limits | None = None) -> list[Grade]:
    """Grade every submission, jobs at a time, each in the sandbox; flag the copies of the
    solutions ({name in the review column: notebook}; published(zip_path) unless given) or of
    each other in the review column; write the
    CSV and the feedback under output (after clearing what an earlier run wrote there), once every
    sandbox has ended."""
    name = assignment_name(zip_path)
    found = submissions_in(submissions)
    if not found:
        raise SystemExit(f"no .ipynb file under {submissions}")
    output.mkdir(parents=True, exist_ok=True)
    clear_outputs(output)
    handed_out = given_cells(given)
    tests = read_tests(zip_path)  # once, before any submission runs
    with tempfile.TemporaryDirectory(prefix="grade-") as scratch:
        work = Path(scratch)
        graders: queue.Queue = queue.Queue()  # one per job, each used by one job at a time
        for _ in range(jobs):
            graders.put(Grader(work, threads=max(1, (os.cpu_count() or 1) // jobs)))

        def one(item):
            grader = graders.get()
            try:
                return grade_one(item[0], item[1], name, tests, work, timeout, test_timeout,
                                 cell_timeout, keep=output / "results" / item[0],
                                 given=handed_out, grader=grader, bounds=bounds)
            finally:
                graders.put(grader)

        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                grades = list(pool.map(one, found.items()))
        finally:
            while not graders.empty():
                graders.get().close()
    flags = review.copies({g.student: found[g.student] for g in grades if g.scores},
                          published(zip_path) if solutions is None else solutions, handed_out, copy_threshold)
    for g in grades:
        g.review = "; ".join(part for part in (g.review, flags.get(g.student, "")) if part)
    (output / "copies.txt").write_text(flags.listing)  # the copies grouped, for the instructor
    write_outputs(grades, output)
    manual.write(zip_path, output, [g.student for g in grades])
    return grades


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("autograder", type=Path, help="the autograder zip of `otter assign`")
    parser.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    parser.add_argument("--output", "-o", type=Path, default=Path("grades"),
                        help="where grades.csv, feedback/ and results/ go (created)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "docker"), default="auto",
                        help="where each notebook runs: bubblewrap, or Docker (otter grade) where "
                             "bubblewrap is missing (default auto)")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                        help="submissions graded at a time (default: the number of cores)")
    parser.add_argument("--timeout", "-t", type=float, default=600.0,
                        help="seconds one submission may take before it is stopped and gets 0 "
                             "(default 600)")
    parser.add_argument("--test-timeout", type=float, default=60.0,
                        help="seconds one test case may run before it fails with 'time limit' "
                             "(default 60)")
    parser.add_argument("--cell-timeout", type=float, default=120.0,
                        help="seconds one cell of the notebook may run before it is interrupted "
                             "(default 120)")
    parser.add_argument("--solutions", type=Path, action="append", default=None,
                        help="a notebook of the published solutions, whose copies the review column "
                             "flags (repeatable; default: the autograder's and make assignments' one)")
    parser.add_argument("--copy-threshold", type=float, default=0.8,
                        help="the share of one answer found in another that flags a copy (default 0.8)")
    parser.add_argument("--limits", default="",
                        help="what one submission may take, e.g. memory=2G,processes=64,cpu=600,disk=500M "
                             "(default: those; see grading/limits.py)")
    parser.add_argument("--given", type=Path, default=None,
                        help="the student notebook as handed out: its cells are not flagged in "
                             "the CSV's review column")
    args = parser.parse_args(argv)
    if not args.autograder.is_file():
        parser.error(f"no autograder zip at {args.autograder} (run `make assignments` first)")
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder of submissions")
    if args.jobs < 1 or min(args.timeout, args.test_timeout, args.cell_timeout) <= 0:
        parser.error("--jobs must be at least 1 and every timeout positive")
    try:
        bounds = limits.Limits.parse(args.limits)
    except ValueError as error:
        parser.error(str(error))
    start = time.monotonic()
    try:
        kind = sandbox.choose(args.sandbox)
    except sandbox.SandboxMissing as error:
        sys.exit(f"grade.py: {error}")
    print(sandbox.describe(kind), flush=True)
    if kind == "bwrap":
        print(f"limits per submission: {bounds.describe(limits.processes_enforced())}", flush=True)
    if kind == "docker":  # Otter's own containers and CSV (no sealed tests, no review column)
        table = sandbox.otter_grade(args.autograder, args.submissions, args.output, jobs=args.jobs,
                                    timeout=args.timeout)
        print(f"graded with otter grade: {table}")
        return 0
    grades = grade_class(args.autograder, args.submissions, args.output, jobs=args.jobs,
                         timeout=args.timeout, test_timeout=args.test_timeout,
                         cell_timeout=args.cell_timeout, given=args.given,
                         solutions=args.solutions and {f"the solutions in {p.name}": p for p in args.solutions},
                         copy_threshold=args.copy_threshold, bounds=bounds)
    failed = [g for g in grades if g.reason]
    print(f"graded {sum(bool(g.scores) for g in grades)} of {len(grades)} submissions in "
          f"{time.monotonic() - start:.0f} s with {args.jobs} at a time: "
          f"{args.output / 'grades.csv'}")
    for g in failed:
        print(f"  {g.student}: {sum(score for score, _ in g.scores.values()):g} ({g.reason})")
    print((args.output / "copies.txt").read_text(), end="")
    for g in grades:
        if g.review and not g.review.startswith(("copy of", "written q")):
            print(f"  {g.student}: review the notebook ({g.review})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
