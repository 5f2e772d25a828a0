"""Private variants of the assignments: `make variant SEED=<secret>` runs this script.

The masters in assignments/ are public, with their solutions and hidden tests. A variant
changes what a copied answer gets wrong: the parameters of each question and of its hidden
tests, and the settings of the written questions. For every assignment folder
assignments/<a>/ that has a `variant.py`, this script imports it and calls
`make_variant(master, rng)`: `master` is the public master notebook (read by nbformat), `rng`
a `numpy.random.Generator` seeded from the secret and the assignment's name; it returns the
variant's master notebook, a valid Otter master whose own solutions pass its own tests. An
optional `extra_files(rng) -> {relative path: text}` of variant.py adds files beside it.

Written, for each assignment:

    _build/variants/<secret>/<a>/master/<a>.ipynb          the variant's master (instructor only)
    _build/variants/<secret>/<a>/student/<a>.ipynb         the notebook to hand out
    _build/variants/<secret>/<a>/autograder/<a>-autograder_<timestamp>.zip, <a>.ipynb (solutions)

as `make assignments` writes the public ones (`otter assign`, which runs every test, hidden ones
included, on the variant's solutions and fails when one fails). The same secret gives the same
variant master byte for byte; `make grade ASSIGNMENT=<a> SUBMISSIONS=<dir> VARIANT=<secret>`
grades with the variant's autograder.

    .venv/bin/python grading/variant.py --seed <secret> [--only <a> ...] [--no-assign]
"""

import argparse
import copy
import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ROOT / "assignments"
OUTPUT = ROOT / "_build" / "variants"
# What a master's configuration names beside it (`requirements: ../autograder-requirements.txt`).
SHARED_FILES = ("autograder-requirements.txt",)
SECRET = re.compile(r"[A-Za-z0-9_-]{1,64}")


def generator(secret, name):
    """The generator of one assignment's variant: seeded from (secret, name) by SHA-256, so that
    the assignments of one secret draw independently and no seed is guessable from another."""
    digest = hashlib.sha256(f"{secret}\0{name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


def odds(name):
    """{question: the chance that two secrets' variants of assignment name draw alike every value
    that decides that question's points} (1 / the product of the pools' sizes), from the
    assignment's variant.py DRAWS ({question: pools}; {} where it has none). A friend's answer to
    another secret's variant keeps those points that often."""
    module = variant_module(name)
    return {question: 1 / float(np.prod([len(pool) for pool in pools]))
            for question, pools in getattr(module, "DRAWS", {}).items()}


def rewrite(notebook, exact=(), words=(), name="the master"):
    """A copy of notebook with its text edited for a variant: each (old, new) of exact replaced
    in every cell that holds old (an old found nowhere raises ValueError: the master changed
    under the variant), then each (regular expression, new) of words in every cell. The new
    texts of exact are final: they go in as placeholders, so words never edits them."""
    notebook = copy.deepcopy(notebook)
    for i, (old, _) in enumerate(exact):
        hits = [cell for cell in notebook.cells if old in cell.source]
        if not hits:
            raise ValueError(f"variant of {name}: the master no longer contains {old!r}")
        for cell in hits:
            cell.source = cell.source.replace(old, f"\0{i}\0")
    for cell in notebook.cells:
        for pattern, new in words:
            cell.source = re.sub(pattern, new, cell.source)
        cell.source = re.sub("\0(\\d+)\0", lambda m: exact[int(m.group(1))][1], cell.source)
    return notebook


def variant_module(name):
    """The variant.py of assignments/<name>/, imported under a name of its own (it may import
    this file as `variant`, for rewrite)."""
    if str(Path(__file__).parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).parent))
    path = ASSIGNMENTS / name / "variant.py"
    spec = importlib.util.spec_from_file_location(f"variant_{name.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def names():
    """The assignments that have a master and a variant.py, sorted."""
    return sorted(p.name for p in ASSIGNMENTS.iterdir()
                  if (p / f"{p.name}.ipynb").is_file() and (p / "variant.py").is_file())


def variant_master(secret, name):
    """(the variant master notebook, its extra files) of one assignment, without writing them."""
    module = variant_module(name)
    rng = generator(secret, name)
    master = nbformat.read(ASSIGNMENTS / name / f"{name}.ipynb", as_version=4)
    notebook = module.make_variant(master, rng)
    extra = module.extra_files(rng) if hasattr(module, "extra_files") else {}
    return notebook, extra


def write(secret, name, output=OUTPUT, assign=True, otter=None, made=None):
    """Write one assignment's variant master under output/<secret>/<name>/ and, with assign,
    run `otter assign` into its student/ and autograder/ folders (RuntimeError when the variant's
    solutions fail its tests). made: variant_master(secret, name), when already computed.
    Returns that folder."""
    folder = output / secret / name
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "master").mkdir(parents=True)
    notebook, extra = made or variant_master(secret, name)
    master = folder / "master" / f"{name}.ipynb"
    nbformat.write(notebook, master)
    for relative, text in extra.items():
        path = master.parent / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for shared in SHARED_FILES:
        shutil.copy(ASSIGNMENTS / shared, folder / shared)
    if assign:
        otter = otter or Path(sys.executable).with_name("otter")
        print(f"==> otter assign {master.relative_to(ROOT)} -> {folder.relative_to(ROOT)}", flush=True)
        result = subprocess.run([str(otter), "assign", str(master), str(folder)], cwd=ROOT,
                                capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"otter assign of the variant of {name} failed (its solutions must pass "
                             f"its tests):\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        (folder / ".assigned").touch()
    return folder


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", required=True, help="the secret (letters, digits, - and _)")
    parser.add_argument("--only", nargs="*", default=None, help="these assignments only")
    parser.add_argument("--no-assign", action="store_true", help="write the variant masters only")
    args = parser.parse_args(argv)
    if not SECRET.fullmatch(args.seed):
        parser.error("SEED must be 1 to 64 letters, digits, - or _ (it names a folder)")
    chosen = names() if args.only is None else args.only
    missing = [n for n in chosen if n not in names()]
    if missing:
        parser.error(f"no variant.py for {', '.join(missing)} (assignments with one: {', '.join(names())})")
    for name in chosen:
        try:
            folder = write(args.seed, name, assign=not args.no_assign)
        except RuntimeError as error:
            raise SystemExit(str(error)) from None
        print(f"{name}: {folder.relative_to(ROOT)}/student/{name}.ipynb (hand out), "
              f"{folder.relative_to(ROOT)}/autograder/ (grade with VARIANT={args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
