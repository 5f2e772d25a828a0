"""Build the lecture decks: one reveal.js deck per source slides/lecture-N.md.

    python slides/build.py [--quiet] [--work DIR] [OUTPUT]     (default OUTPUT: _build/slides)

The sources are edited slides whose content comes from the chapters by reference (the
directives of slides/_ext/chapter_parts.py) and whose speaker notes carry minutes computed by
the time rule of slides/timing.py (slides/_ext/deck_notes.py). This script checks that every
deck fits its lecture (slides/timing.py's LONGEST), then runs Sphinx's revealjs builder
(sphinx-revealjs) with slides/conf.py on this folder, warnings as errors, into OUTPUT, and
prints the decks' paths (unless --quiet: `make slides` prints them).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import timing  # noqa: E402


def main(argv=None):
    import argparse

    from sphinx.cmd.build import build_main

    parser = argparse.ArgumentParser(description="Build the lecture decks (slides/README.md).")
    parser.add_argument("output", nargs="?", default="_build/slides", type=Path,
                        help="the decks' folder (default: _build/slides)")
    parser.add_argument("--work", type=Path, help="Sphinx's saved state and the figures "
                        "taken from the notebooks (default: .slides beside OUTPUT)")
    parser.add_argument("--quiet", action="store_true", help="do not print the decks' paths")
    args = parser.parse_args(argv)
    output = args.output.resolve()
    work = (args.work or output.parent / ".slides").resolve()
    decks = timing.decks()
    if not decks:
        raise SystemExit("slides/: no lecture-*.md deck source")
    for deck in decks:
        if deck.minutes > timing.LONGEST:
            raise SystemExit(f"slides/{deck.name}.md: {deck.minutes:g} minutes by the time "
                             f"rule of slides/timing.py, more than {timing.LONGEST}")
    status = build_main(["-b", "revealjs", "-c", str(HERE), "-d", str(work / "doctrees"),
                         "-W", "-n", "--keep-going", "-q", str(HERE), str(output)])
    if status == 0 and not args.quiet:
        for deck in decks:
            print(output / f"{deck.name}.html")
    return status


if __name__ == "__main__":
    sys.exit(main())
