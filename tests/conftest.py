"""Shared test settings: hypothesis profiles, the order of the files, and `make` for fixtures.

`make test` runs the tests on pytest-xdist workers with `--dist loadfile`: each file (a test
module, a notebook of book/) runs on one worker, in collection order, so a module's fixtures
are set up once and nbval runs a notebook's cells in order in one kernel. (`--dist loadgroup`
would allow other groupings, but pytest-xdist 3.8 cannot rename the tests of pytest 9.2 by
group, so it spreads a group's tests over the workers.) The slowest files are collected first,
so that they start first.

The resolution of requirements.txt for every platform (tests/test_requirements.py) starts in the
background as the run starts, when the run includes that file (it waits for the package index
and needs no CPU meanwhile).

Skips that leave a part of the project untested say so in the last lines of the run, with the
command that enables them: the browser tests without a browser (tests/browsers.py), the
resolution of requirements.txt without the package index (tests/test_requirements.py).

The fixtures that need something built (the generated assignments, the site, the PDF) ask
`make` for it through the fixture `make`: make rebuilds only what is older than its sources,
and a lock lets one worker at a time run it, so the workers never build the same thing twice
or at the same time.
"""

import fcntl
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
MAKE_LOCK = ROOT / "_build" / ".make.lock"

# CI gets a fixed sequence of examples, so that a run is reproducible; locally,
# hypothesis explores new examples each time.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Files that take longest, started first; the others follow in collection order. Measured in a
# fresh clone (issue 33): grading the assignments' submissions (210 to 240 s on one worker, with
# two grading processes at a time), then the files that load pages in Chromium (about 50 and
# 70 s of CPU since they reuse a tab, waiting half a second for the network to be idle after
# each page: the grading's second process uses the core meanwhile; the figures' print and
# layout, split from test_explore.py in issue 39), then training the chapter's models, the Keras
# backends, printing the PDF and grading a class (about 50, 50, 55 and 40 s). Then the lecture
# decks (issue 53), about 10 s each once built, with Chromium working beside them: building and
# walking the decks (the first pays `make slides`, about 10 s more in a fresh clone), measuring
# every slide in both views, printing and reading back the handouts.
SLOWEST_FIRST = ["tests/test_assignments.py", "tests/test_keras_backends.py", "tests/test_pdf.py",
                 "book/training.ipynb", "book/deeper_long_context_training.ipynb",
                 "tests/test_site.py", "tests/test_explore.py", "tests/test_explore_print.py",
                 "tests/test_explore_layout.py", "tests/test_long_context.py", "tests/test_grade.py", "tests/test_variants.py",
                 "tests/test_slides.py", "tests/test_slides_legibility.py", "tests/test_handouts.py"]


def pytest_collection_modifyitems(items):
    def rank(item):
        path = Path(item.path)
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file is kept


# Skips that leave a whole part untested: {part: (words of the skip reasons, how to enable it)}.
LOUD_SKIPS = {
    "browser tests": (("browser tests skipped", "no Chromium", "playwright is not installed"),
                      "{browser}, or install Chromium or Google Chrome, or set POSENC_CHROMIUM to "
                      "a Chromium-based browser; POSENC_REQUIRE_BROWSER=1 fails instead of "
                      "skipping"),
    "resolution tests": (("resolution tests skipped",),
                         "run `make test` where the package index answers; "
                         "POSENC_REQUIRE_INDEX=1 fails instead of skipping"),
}


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    """After everything else: how many tests of each part were skipped, and how to run them."""
    reasons = [report.longrepr[2] for report in terminalreporter.stats.get("skipped", [])
               if isinstance(report.longrepr, tuple)]
    for part, (words, enable) in LOUD_SKIPS.items():
        skipped = [r for r in reasons if any(w in r for w in words)]
        if skipped:
            from browsers import enable_command

            terminalreporter.write_sep("!", f"{part} skipped: {len(skipped)}", yellow=True)
            terminalreporter.write_line(skipped[0].removeprefix("Skipped: "))
            terminalreporter.write_line("To run them: " + enable.format(
                browser=f"`{enable_command()}` (Playwright's own Chromium)"))


# Notebooks run with portable CPU code paths: every notebook kernel that nbval starts gets
# PyTorch's portable kernels (ATEN_CPU_CAPABILITY=default) and NumPy's baseline code paths
# (NPY_DISABLE_CPU_FEATURES naming every optimisation NumPy dispatches to on this CPU: with
# NumPy 2.4 on x86-64 "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"; the older names AVX2 and FMA3 are
# refused, with an ImportWarning nobody sees, and leave AVX2 on). An output that depends on the
# CPU's arithmetic then differs from the one stored (written on another CPU) on any machine, so
# `make test` catches it in its one nbval run, instead of a second run over every notebook.
# Only the kernels: the package's own tests keep the machine's fast paths, and NumPy, imported
# by then, would not read the variable anyway. POSENC_NATIVE_CPU=1 runs the kernels natively.
def portable_cpu_environment():
    """{variable: value} that selects portable CPU code paths in PyTorch and NumPy."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return {"ATEN_CPU_CAPABILITY": "default",
            "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__)}


class PortableKernels:
    """pytest plugin: start each notebook's kernel (nbval does, at its first cell's setup) with
    portable_cpu_environment(). Registered by pytest_configure, so that it sees the notebooks
    of book/ too (a hook of this conftest would see only the items under tests/)."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        if item.path.suffix != ".ipynb" or os.environ.get("POSENC_NATIVE_CPU") == "1":
            yield
            return
        portable = portable_cpu_environment()
        saved = {name: os.environ.get(name) for name in portable}
        os.environ.update(portable)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def pytest_configure(config):
    config.pluginmanager.register(PortableKernels(), "posenc-portable-kernels")
    _start_resolutions(config)


# The resolution of requirements.txt for every platform (tests/test_requirements.py) waits a
# minute or more for the package index and uses almost no CPU: the main process (pytest's, or
# pytest-xdist's controller, before it starts the workers) starts it in the background when the
# run includes that file, and the workers' fixture reads its results (POSENC_RESOLUTIONS).
RESOLUTIONS = "tests/test_requirements.py"


def _start_resolutions(config):
    if hasattr(config, "workerinput") or "POSENC_RESOLUTIONS" in os.environ:
        return
    wanted = ROOT / RESOLUTIONS
    paths = [(Path(config.invocation_params.dir) / arg.split("::")[0]).resolve()
             for arg in config.args]
    if not any(wanted == path or path in wanted.parents for path in paths):
        return
    import tempfile

    from test_requirements import start_in_background

    (ROOT / "_build").mkdir(exist_ok=True)
    folder = tempfile.mkdtemp(prefix="resolutions-", dir=ROOT / "_build")
    config._posenc_resolutions = start_in_background(folder), folder
    os.environ["POSENC_RESOLUTIONS"] = f"{config._posenc_resolutions[0].pid}:{folder}"


def pytest_unconfigure(config):
    if hasattr(config, "_posenc_resolutions"):
        import shutil

        from test_requirements import stop_background

        process, folder = config._posenc_resolutions
        stop_background(process)
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("POSENC_RESOLUTIONS", None)


def run_make(*arguments):
    """Run `make arguments` in the repository, one caller at a time; return the finished process.

    `-o .venv/.installed`: the tests run in an environment that is already set up, and never
    install anything. `make -q` first, without the lock: when the targets are up to date (after
    `make book`, the usual case) nothing runs and no worker waits for another's `make pdf`. A
    phony target with a recipe (`book`, `pdf`, `slides`) is never up to date for `make -q`: ask
    for its files instead.
    """
    command = ["make", "--no-print-directory", "-C", ROOT, "-o", ".venv/.installed"]
    query = subprocess.run([*command, "-q", *arguments], capture_output=True, text=True)
    if query.returncode == 0:
        return subprocess.CompletedProcess([*command, *arguments], 0, "", "")
    MAKE_LOCK.parent.mkdir(exist_ok=True)
    with MAKE_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run([*command, *arguments], capture_output=True, text=True)


@pytest.fixture(scope="session")
def make():
    """run_make: `make` in the repository, serialised across pytest-xdist workers."""
    return run_make


# The site's fixtures, shared by tests/test_site.py and tests/test_explore.py: a session fixture
# defined (or imported) in each test module would start a second Playwright in the same process,
# which Playwright refuses. Their helpers live in tests/test_site.py, imported when first used.

@pytest.fixture(scope="session")
def base_url(make):
    """Build the book if needed, serve _build/html on 127.0.0.1 and yield its URL.

    In the repository's _build, `make book` builds what is older than its sources (nothing, if
    the book is up to date); the book is built once for all pytest-xdist workers.
    """
    import functools
    import http.server
    import threading

    from test_site import BUILD, HTML, _build_elsewhere, _QuietHandler

    if BUILD == ROOT / "_build":
        build = make("_build/.html-built", "_build/html/slides/.built")  # what `make book` makes
    else:  # the assignment pages link the student notebooks that `make assignments` generates
        build = make("assignments")
        if build.returncode == 0:
            build = _build_elsewhere() or build
    if build.returncode:
        pytest.fail(f"building the book failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}")
    handler = functools.partial(_QuietHandler, directory=HTML)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}/"
        server.shutdown()
        thread.join()


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (tests/browsers.py) driven by Playwright; skip (or fail, in CI) when missing."""
    from test_site import CHROMIUM, CHROMIUM_ARGS, REQUIRE_BROWSER, _browser_missing

    missing = _browser_missing()
    if missing and REQUIRE_BROWSER:
        pytest.fail(f"browser tests cannot run: {missing}; "
                    "POSENC_REQUIRE_BROWSER=1 forbids skipping them")
    if missing:
        pytest.skip(f"browser tests skipped: {missing}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def one_torch_thread():
    """PyTorch on one thread for the test (restored after): tiny models and small graphs run as
    fast on one thread, and far cheaper on a shared 2-core machine (tests/test_hf_rotary.py,
    tests/test_pytorch_compile_growth.py)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
