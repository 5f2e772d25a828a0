"""Shared test settings: hypothesis profiles, the order of the files, and `make` for fixtures.

`make test` runs the tests on pytest-xdist workers with `--dist loadfile`: each file (a test
module, a notebook of book/) runs on one worker, in collection order, so a module's fixtures
are set up once and nbval runs a notebook's cells in order in one kernel. (`--dist loadgroup`
would allow other groupings, but pytest-xdist 3.8 cannot rename the tests of pytest 9.2 by
group, so it spreads a group's tests over the workers.) The slowest files are collected first,
so that they start first.

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

# Files that take longest, started first (measured: grading the assignments, loading every
# page in Chromium, printing the PDF, training the chapter's models); the others follow in
# collection order.
SLOWEST_FIRST = ["tests/test_assignments.py", "tests/test_site.py", "tests/test_pdf.py",
                 "book/training.ipynb"]


def pytest_collection_modifyitems(items):
    def rank(item):
        path = Path(item.path)
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file is kept


def run_make(*arguments):
    """Run `make arguments` in the repository, one caller at a time; return the finished process.

    `-o .venv/.installed`: the tests run in an environment that is already set up, and never
    install anything.
    """
    MAKE_LOCK.parent.mkdir(exist_ok=True)
    with MAKE_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run(["make", "--no-print-directory", "-C", ROOT, "-o", ".venv/.installed",
                               *arguments], capture_output=True, text=True)


@pytest.fixture(scope="session")
def make():
    """run_make: `make` in the repository, serialised across pytest-xdist workers."""
    return run_make
