"""Put the Colab install cell first in every notebook of the course (idempotent).

On Colab a notebook opened from the book has none of the repository around it, so its first
``import posenc`` would fail. Every notebook (the chapters book/*.ipynb and the assignment
masters assignments/*/*.ipynb) therefore starts with one code cell that installs the package
from the repository, and only when it runs on Colab; locally, under nbval and on Binder it does
nothing and prints nothing. The cell is tagged ``remove-cell``, so the book does not show it.

The address comes from ``repository: url`` and ``branch`` in _config.yml, the one place that
names the repository. Run this script after changing them, or after adding a notebook:

    .venv/bin/python tools/colab_cell.py           # insert or update the cell, report changes
    .venv/bin/python tools/colab_cell.py --check   # change nothing; exit 1 if a cell is missing
                                                   # or out of date (`make colab-cells` runs the
                                                   # first form)

Only the first cell of a notebook is touched; a notebook already up to date is not rewritten.
The assignment masters' cell also installs Otter-Grader (the student versions' first cell
imports it for ``grader.check``), at the version pinned in requirements.txt, and installs posenc
at the release tag the autograder installs (the posenc line of
assignments/autograder-requirements.txt), not at the branch: a student's self-check then runs
against the version of the package that grades the notebook.
"""

import argparse
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
CELL_ID = "colab-install"
TAGS = ["remove-cell"]
NOTEBOOK_GLOBS = ("book/*.ipynb", "assignments/*/*.ipynb")


def repository(config_file=ROOT / "_config.yml"):
    """(url, branch) of the repository named in _config.yml."""
    config = yaml.safe_load(Path(config_file).read_text())["repository"]
    return config["url"].rstrip("/"), config["branch"]


def requirement(url, branch):
    """The pip requirement that installs posenc from the repository at a branch or tag."""
    return f"posenc @ git+{url}@{branch}"


def otter_requirement(requirements_file=ROOT / "requirements.txt"):
    """Otter-Grader at the version requirements.txt pins (without the instructors' extras)."""
    match = re.search(r"^otter-grader(?:\[[^\]]*\])?==(\S+)", Path(requirements_file).read_text(),
                      flags=re.M)
    if match is None:
        raise ValueError(f"{requirements_file} pins no otter-grader version")
    return f"otter-grader=={match.group(1)}"


def autograder_ref(url, requirements_file=ROOT / "assignments" / "autograder-requirements.txt"):
    """The tag (or branch) at which the autograder installs posenc from the repository url."""
    match = re.search(r"^posenc @ git\+(\S+)@(\S+)", Path(requirements_file).read_text(), flags=re.M)
    if match is None or match.group(1).rstrip("/") != url:
        raise ValueError(f"{requirements_file} installs no posenc from {url}")
    return match.group(2)


def ref_for(path, url, branch):
    """What a notebook's cell installs posenc at: the autograder's tag for assignment masters,
    the book's branch otherwise."""
    return autograder_ref(url) if "assignments" in Path(path).parts else branch


def extras_for(path):
    """What a notebook's cell installs besides posenc: Otter-Grader for assignment masters."""
    return (otter_requirement(),) if "assignments" in Path(path).parts else ()


def cell_source(url, branch, extras=()):
    """The source of the install cell (``extras``: more pip requirements, e.g. Otter-Grader)."""
    packages = " ".join(f'"{r}"' for r in (requirement(url, branch), *extras))
    return (
        "# On Colab only: install the course's package posenc (elsewhere this cell does nothing).\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f"    %pip install --quiet {packages}"
    )


def new_cell(url, branch, extras=()):
    """The install cell as a notebook cell: no outputs, tagged remove-cell."""
    cell = nbformat.v4.new_code_cell(cell_source(url, branch, extras), id=CELL_ID)
    cell.metadata["tags"] = list(TAGS)
    return cell


def notebooks(root=ROOT):
    """Every notebook of the course, sorted."""
    return sorted(p for pattern in NOTEBOOK_GLOBS for p in Path(root).glob(pattern)
                  if ".ipynb_checkpoints" not in p.parts)


def is_install_cell(cell):
    """True for an install cell this script wrote (of any address)."""
    return cell.get("id") == CELL_ID


def is_current(cell, url, branch, extras=()):
    """True for the install cell of this address: its source and tag, and no output.

    The execution count is not compared: re-executing a notebook sets it.
    """
    return (is_install_cell(cell) and cell.cell_type == "code"
            and cell.source == cell_source(url, branch, extras)
            and cell.metadata.get("tags") == TAGS and not cell.get("outputs"))


def update(notebook, url, branch, extras=()):
    """Make the install cell the notebook's first and only one; True if anything changed."""
    cells = notebook.cells
    if (cells and is_current(cells[0], url, branch, extras)
            and not any(map(is_install_cell, cells[1:]))):
        return False
    cells[:] = [new_cell(url, branch, extras), *(c for c in cells if not is_install_cell(c))]
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a notebook is not up to date")
    args = parser.parse_args(argv)
    url, branch = repository()
    stale = []
    for path in notebooks():
        notebook = nbformat.read(path, as_version=4)
        if update(notebook, url, ref_for(path, url, branch), extras_for(path)):
            stale.append(path.relative_to(ROOT))
            if not args.check:
                nbformat.write(notebook, path)
    verb = "out of date" if args.check else "updated"
    for path in stale:
        print(f"{verb}: {path}")
    print(f"{len(stale)} of {len(notebooks())} notebooks {verb}; "
          f"install cell for {requirement(url, branch)} (assignments: {requirement(url, autograder_ref(url))})")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
