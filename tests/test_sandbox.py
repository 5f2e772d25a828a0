"""grading/sandbox.py, the hidden tests' frames and grading/review.py's copies.

The sandbox each notebook's kernel runs in while it is graded (bubblewrap): what each
assignment's environment holds of posenc, what a program in the sandbox can see and whether a
process it starts outlives it (a plain Python in the sandbox, no kernel); the error that names
what to install where no sandbox runs. Then, graded through grading/grade.py with a test file of
its own (one grader, two notebooks): a notebook whose function walks its caller's frames finds
the expected values only where a test puts them into the kernel, never when the kernel gets
inputs only. Last, copydetect's flags. tests/test_grade.py grades the attacks of issue 46 on
build-the-encoding in the sandbox.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

import tool_scripts

ROOT = Path(__file__).resolve().parents[1]
grade = tool_scripts.load("grade", tool_scripts.GRADING)
sandbox = sys.modules["sandbox"]  # grading/sandbox.py and grading/limits.py, which grade.py loads
review = sys.modules["review"]

needs_bwrap = pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap cannot run here")


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.py"))


def test_each_assignment_gets_only_its_part_of_posenc(tmp_path):
    """None of posenc where every question asks for the student's own code (a stand-in whose
    import says so), attend-by-position included (question 1's answer key, posenc.shift_matrix,
    is not there); the experiment module, with what it imports, for experiment-positions."""
    for name in ("build-the-encoding", "debug-the-module", "attend-by-position", "a-new-assignment"):
        folder = sandbox.environment(name, tmp_path)
        assert _files(folder) == ["posenc/__init__.py"]
        assert "posenc is not available while grading" in (folder / "posenc" / "__init__.py").read_text()
    experiment = _files(sandbox.environment("experiment-positions", tmp_path))
    assert {"posenc/experiment.py", "posenc/pytorch/__init__.py", "posenc/encoding.py"} <= set(experiment)
    assert not {"posenc/plot.py", "posenc/foils.py", "posenc/reference.py", "posenc/attention.py",
                "posenc/bench.py", "posenc/shipping.py"} & set(experiment), experiment
    assert sandbox.environment("experiment-positions", tmp_path) == tmp_path / "experiment-positions"  # made once


LOOK = """import json, os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # left-behind-7f3a"],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    import posenc
    posenc_import = "imported"
except ImportError as error:
    posenc_import = str(error)
print(json.dumps({"posenc": posenc_import, "repository": os.path.exists(os.path.join(%r, "code")), "home": os.listdir(os.environ["HOME"]),
                  "experiment": any(os.path.exists(os.path.join(p, "posenc", "experiment.py")) for p in sys.path),
                  "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                  "grader": os.path.exists("/proc/%d"), "written": os.access("/usr", os.W_OK)}))
""" % (str(ROOT), __import__("os").getpid())


@needs_bwrap
@pytest.mark.parametrize("name", ["build-the-encoding", "experiment-positions"])
def test_a_program_in_the_sandbox_sees_its_own_world(tmp_path, name):
    """No posenc but its assignment's, no repository, its own processes only, an empty home, a
    read-only system; and a process it starts in a session of its own ends with it."""
    notebook, sockets = tmp_path / "notebook", tmp_path / "kernel"
    notebook.mkdir()
    sockets.mkdir()
    command = sandbox.bwrap_command(notebook, sockets, sandbox.environment(name, tmp_path / "env"))
    run = subprocess.run([*command, "-c", LOOK], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    if name == "build-the-encoding":
        assert "posenc is not available while grading" in seen["posenc"] and not seen["experiment"]
    else:
        assert seen["posenc"] == "imported" and seen["experiment"]
    assert (seen["repository"], seen["home"], seen["grader"], seen["written"]) == (False, [], False, False), seen
    assert len(seen["processes"]) <= 3, seen  # bwrap's init, this Python, the process it started
    # bwrap may exit a moment before the kernel has ended every process of its namespace (the
    # grader waits for that before it answers: grading/sealed.py); the process would sleep 60 s.
    deadline = time.monotonic() + 10
    while _left_behind() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _left_behind(), "a process started in the sandbox outlived it"


PUSH = """import os, subprocess, sys
found = {}
try:
    block = bytearray(600 * 2**20)
    found["memory"] = "allocated"
except MemoryError:
    found["memory"] = "MemoryError"
children = []
try:
    while len(children) < 100:
        children.append(subprocess.Popen(["sleep", "30"]))
except OSError as error:
    found["processes"] = f"{len(children)}: {type(error).__name__}"
for where in ("fill", "/tmp/fill", os.path.expanduser("~/fill")):  # files of 8 MB (below the file limit)
    written = []
    try:
        while True:
            written.append(f"{where}{len(written)}")
            with open(written[-1], "wb") as handle:
                for _ in range(8):
                    handle.write(bytes(2**20))
    except OSError as error:
        found[where] = f"{error.strerror} after {len(written) - 1} files"
    for path in written:
        os.remove(path)
print(found, flush=True)
while True:
    pass
"""


@needs_bwrap
def test_limits_hold_in_the_sandbox(tmp_path):
    """Behind the launcher of grading/limits.py (as grading/sealed.py starts a kernel): an allocation
    past the memory limit fails, processes stop starting at the process limit, every writable
    folder fills up at the disk limit, and a loop is killed at the CPU limit (SIGXCPU)."""
    limits = sys.modules["limits"]
    bounds = limits.Limits.parse("memory=512M,processes=12,cpu=2,disk=20M")
    notebook, sockets = tmp_path / "notebook", tmp_path / "kernel"
    notebook.mkdir()
    sockets.mkdir()
    cgroups = limits.Cgroups(f"posenc-grade-{__import__('os').getpid()}-test", bounds)
    try:
        command = [*limits.launcher(bounds, cgroups), *sandbox.bwrap_command(
            notebook, sockets, sandbox.environment("build-the-encoding", tmp_path / "env"), disk=bounds.disk)]
        run = subprocess.run([*command, "-c", PUSH], capture_output=True, text=True, timeout=120)
    finally:
        cgroups.remove()
    found = eval(run.stdout.strip().splitlines()[0])
    assert found["memory"] == "MemoryError", found
    if limits.processes_enforced():
        assert found["processes"].endswith("BlockingIOError") and int(found["processes"].split(":")[0]) < 12, found
    for where in ("fill", "/tmp/fill", "/home/student/fill"):  # one tmpfs of 20 MB: two files of 8 MB
        assert found[where] == "No space left on device after 2 files", found
    assert run.returncode == 128 + 24, (run.returncode, run.stderr[-500:])  # SIGXCPU


def _left_behind():
    """The processes of this machine that LOOK started and that still run."""
    left = []
    for path in Path("/proc").glob("[0-9]*"):
        try:
            if "left-behind-7f3a" in (path / "cmdline").read_text() and " Z " not in (path / "stat").read_text():
                left.append(path.name)
        except OSError:
            pass
    return left


def test_grading_without_a_sandbox_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox.bwrap_works.cache_clear()
    try:
        with pytest.raises(sandbox.SandboxMissing, match="install bubblewrap .* or Docker"):
            sandbox.choose()
        with pytest.raises(sandbox.SandboxMissing, match="install bubblewrap"):
            grade.Grader(tmp_path)
    finally:
        sandbox.bwrap_works.cache_clear()


# A question whose hidden tests judge the notebook's `check` on objects made in the kernel, in the
# two ways a test can be written: with the expected verdicts in the kernel (the helper that
# run_in_kernel runs holds them while it calls check: debug-the-module's q7 before issue 46), and
# with inputs only (the helper returns the objects, as stand-ins; the test calls check on each
# from the grader and compares there).
FRAMES_TEST = '''from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=1, hidden=True)
def test_q1_expected_in_the_kernel(check):
    def verdicts(check):
        class First:
            def value(self):
                return 1
        class Second:
            def value(self):
                return 2
        cases = {"first": (First, True), "second": (Second, False)}
        return {name: (expected, check(cls)) for name, (cls, expected) in cases.items()}
    for name, (expected, got) in check.run_in_kernel(verdicts).items():
        assert got == expected, name

@test_case(points=1, hidden=True)
def test_q1_inputs_only(check):
    def modules(check):
        class First:
            def value(self):
                return 1
        class Second:
            def value(self):
                return 2
        return [First, Second]
    first, second = check.run_in_kernel(modules)
    assert check(first) is True and check(second) is False
'''

# check answers from its callers' frames, reached through a traceback: whatever (class,
# verdict) pair holds the class it is given.
FRAME_WALKER = '''def check(cls):
    try:
        raise RuntimeError
    except RuntimeError as error:
        frame = error.__traceback__.tb_frame
    while frame is not None:
        for value in list(frame.f_locals.values()):
            pairs = value.values() if isinstance(value, dict) else [value]
            for pair in pairs:
                if isinstance(pair, tuple) and len(pair) == 2 and pair[0] is cls:
                    return pair[1]
        frame = frame.f_back
    return None
'''

HONEST = "def check(cls):\n    return cls().value() == 1\n"


@pytest.fixture
def short_tmp_path():
    """A folder with a short path: a kernel's socket path has at most 107 bytes, and pytest's
    tmp_path under xdist is longer than the grader allows."""
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        yield Path(folder)


@needs_bwrap
def test_expected_values_never_reach_the_kernel_of_a_test_that_sends_inputs(short_tmp_path):
    """The frame walker reads the verdicts where a helper holds them in the kernel (1 point) and
    finds nothing when the test sends inputs and compares in the grader (0); a right check
    scores both."""
    scores = {}
    tmp_path = short_tmp_path
    with grade.Grader(tmp_path, threads=1) as grader:
        for student, source in (("walker", FRAME_WALKER), ("honest", HONEST)):
            path = tmp_path / f"{student}.ipynb"
            nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), path)
            result = grade.grade_one(student, path, "frames", {"tests/q1.py": FRAMES_TEST}, tmp_path, 120,
                                     grader=grader)
            assert result.scores, result.reason
            scores[student] = result.scores["q1"][0]
            if student == "walker":
                # The first test (expected values in the kernel) passed; the second failed.
                assert result.details.count("Test case passed") == 1, result.details
                assert "assert check(first) is True and check(second) is False" in result.details
    assert scores == {"walker": 1, "honest": 2}


def _notebook(path, *sources):
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), path)
    return path


GIVEN = "def positional_encoding(seq_len, d_model):\n    \"\"\"The (seq_len, d_model) table.\"\"\"\n    ..."
SOLUTION = """def positional_encoding(seq_len, d_model):
    positions = np.arange(seq_len, dtype=np.float64)[:, None]
    frequencies = 10000.0 ** (-2.0 * (np.arange(d_model) // 2) / d_model)
    angles = positions * frequencies
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
"""
RENAMED = """def positional_encoding(seq_len, d_model):
    # my own version
    pos = np.arange(seq_len, dtype=np.float64)[:, None]
    omega = 10000.0 ** (-2.0 * (np.arange(d_model) // 2) / d_model)
    theta = pos * omega
    return np.where(np.arange(d_model) % 2 == 0, np.sin(theta), np.cos(theta))
"""
OTHER = """def positional_encoding(seq_len, d_model):
    table = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            angle = pos / 10000 ** (i / d_model)
            table[pos, i] = math.sin(angle)
            if i + 1 < d_model:
                table[pos, i + 1] = math.cos(angle)
    return table
"""


def test_copies_of_the_solutions_or_of_a_classmate_are_flagged(tmp_path):
    """copydetect finds the published solution with its names changed, and two students with the
    same answer; a different answer and the notebook as handed out are not flagged."""
    given = frozenset([GIVEN, "import numpy as np"])
    solutions = _notebook(tmp_path / "solutions.ipynb", "import numpy as np", SOLUTION)
    submissions = {
        "ann": _notebook(tmp_path / "ann.ipynb", "import numpy as np", RENAMED),
        "bo": _notebook(tmp_path / "bo.ipynb", "import numpy as np\nimport math", OTHER),
        "cy": _notebook(tmp_path / "cy.ipynb", "import math\nimport numpy as np", OTHER.replace("table", "pe")),
        "di": _notebook(tmp_path / "di.ipynb", "import numpy as np", GIVEN),
    }
    flags = review.copies(submissions, {"the published solutions": solutions}, given)
    assert flags["ann"] == "copy of the published solutions (100%)", flags
    assert flags["bo"].startswith("copy of cy (") and flags["cy"].startswith("copy of bo ("), flags
    assert set(flags) == {"ann", "bo", "cy"}, flags
