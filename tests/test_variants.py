"""Private variants (tools/variant.py, `make variant SEED=<secret>`): what a copy of the public
masters earns there.

For every graded homework with a variant.py (GRADED), against one of two secrets (SEEDS) in turn:

- the variant's master is a valid Otter master: `otter assign` makes its student notebook and
  autograder (tools/variant.py fails when the variant's solutions fail one of its tests);
- the PUBLIC master's solutions, graded against the variant as `make grade VARIANT=` grades
  (sealed, tools/grade.py), score at most 40% of the autograded points;
- the same secret gives the same variant master byte for byte, another secret another one.

Cheap: the grading script and the cache of grades are those of tests/test_assignments.py (a
grade is kept under a digest of the notebook, the variant's tests and everything grades depend
on); the two secrets' variants are generated two at a time, each graded in one process, and
each variant master is drawn once (debug-the-module's draw takes seconds).
"""

import sys
from functools import cache
from pathlib import Path

import nbformat
import pytest

import test_assignments as graded
from reuse import keep, kept

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import variant  # noqa: E402  (tools/variant.py)

SEEDS = ("class-a-2027", "class-b-2027")
# The graded homeworks (book/teaching.md: attend-by-position or debug-the-module), where a
# variant.py exists. build-the-encoding ("not graded, or graded lightly") and experiment-positions
# (the four-lecture plan's alternative; its grading trains models, a minute per notebook) have
# variants too: instructors.md gives what the public solutions score on them.
GRADED = [name for name in ("attend-by-position", "debug-the-module") if name in variant.names()]
OUTPUT = ROOT / "_build" / "test-variants"
SHARE = 0.4  # the most the public solutions may score on a variant


@pytest.fixture(scope="module")
def public(make):
    """The public solution notebooks, from `make assignments`."""
    result = make(f"--jobs={graded.WORKERS}", "assignments")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {name: graded.GENERATED / name / "autograder" / f"{name}.ipynb" for name in GRADED}


@cache
def _drawn(seed, name):
    """variant.variant_master(seed, name), drawn once per session."""
    return variant.variant_master(seed, name)


def _grade(seed, name, public_solution):
    """The scores of the public solutions graded with the variant's autograder (kept while their
    inputs are the same)."""
    folder = OUTPUT / seed / name
    made = _drawn(seed, name)
    key = graded._fingerprint(nbformat.writes(made[0]), public_solution.read_bytes(), *graded.GRADER,
                              (ROOT / "tools" / "variant.py").read_bytes())
    saved = kept("variant-grades", key)
    if saved is not None:
        return saved
    variant.write(seed, name, output=OUTPUT, made=made)
    submission = graded._submission(folder, "public", nbformat.read(public_solution, 4))
    (zip_path,) = (folder / "autograder").glob(f"{name}-autograder_*.zip")
    result = graded._run([sys.executable, "-c", graded.GRADE_SCRIPT, ROOT / "tools", zip_path, submission],
                         cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    scores = graded.json.loads(result.stdout.strip().splitlines()[-1])
    return keep("variant-grades", key, scores[str(submission)])


@pytest.fixture(scope="module")
def grades(public):
    """(seed, name) -> the public solutions' scores, for each case of CASES."""
    results = graded._parallel([lambda s=s, n=n: _grade(s, n, public[n]) for s, n in CASES])
    return dict(zip(CASES, results))


# Each graded homework against one secret, the secrets taking turns: every homework and every
# secret is graded once, at half the cost of every pair (an otter assign and a grading each).
CASES = [(SEEDS[i % len(SEEDS)], name) for i, name in enumerate(GRADED)]


@pytest.mark.parametrize(("seed", "name"), CASES, ids=[f"{n}-{s}" for s, n in CASES])
def test_the_public_solutions_score_at_most_40_percent(grades, seed, name):
    scores = grades[seed, name]
    earned, possible = sum(s[0] for s in scores.values()), sum(s[1] for s in scores.values())
    assert earned <= SHARE * possible, (
        f"the public solutions earn {earned} of {possible} points on variant {seed}: "
        + ", ".join(f"{q} {s[0]}/{s[1]}" for q, s in sorted(scores.items())))


@pytest.mark.parametrize("name", variant.names())
def test_a_secret_gives_one_variant_and_another_secret_another(name):
    first, other = (nbformat.writes(_drawn(seed, name)[0]) for seed in SEEDS)  # drawn once (cached)
    again = nbformat.writes(variant.variant_master(SEEDS[0], name)[0])  # drawn again
    public = nbformat.writes(nbformat.read(ROOT / "assignments" / name / f"{name}.ipynb", 4))
    assert first == again
    assert first != other and first != public and other != public


def test_every_graded_homework_has_a_variant():
    """The homeworks book/teaching.md grades: attend-by-position and debug-the-module."""
    assert "attend-by-position" in GRADED
