"""The review column of grades.csv: what an instructor should read before trusting a grade.

``constructs``: code that can reach what the kernel measures (patched modules, modules reached by
name, code built at run time, files opened, ...), flagged, never scored.

``copies``: the answers of each submission compared, with copydetect (the winnowing
fingerprints of MOSS, Schleimer et al. 2003), to the published solutions and to every other
submission of the class; ``tools/grade.py`` writes the matches in the review column of
grades.csv ("copy of the published solutions (96%)", "copy of alice (91%)").

A notebook's answers are its code cells that differ from the notebook as handed out (given:
the handed-out cells, which are also copydetect's boilerplate, removed from every fingerprint),
without Otter's cells and IPython's magics. copydetect compares code once its names and strings
are replaced by placeholders, so renamed variables or reworded comments still match. Two
answers match when at least ``threshold`` of one of them is found in the other (a copy padded
with code of its own still matches); a flag is for an instructor to read, never a score: short
answers written independently can match too.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

THRESHOLD = 0.8       # the share of one answer's code found in the other
NOISE = 25            # copydetect's noise threshold: matches shorter than this are ignored
GUARANTEE = 30        # ... and matches at least this long are always found
SHOWN = 3             # matches named per submission, the closest first


# What code can use to fool what the kernel measures (the checks of how a function computes, the
# stand-in that keeps posenc out) or, under Otter's own runners, its grade: patch a module
# (np.allclose = ...), reach modules or the grader by name, run built strings, open files.
# Flagged for a human to read, never scored.
_REVIEW_NAMES = {"sys.modules", "importlib", "__import__", "eval", "exec", "compile", "open",
                 "builtins", "__builtins__", "gc", "inspect", "otter", "setattr", "globals",
                 "signal", "ctypes", "pickle", "shutil", "os.remove", "os.unlink", "subprocess",
                 "sys.settrace", "sys.setprofile", "sys._getframe", "posenc",
                 "getattr", "vars"}


def constructs(path: Path, given: frozenset[str] = frozenset()) -> str:
    """The constructs in a notebook's code cells that can reach what the kernel measures ('' if none):
    an assignment to an attribute of an imported module (a patch), and the names above; cells
    as handed out (given) are not read."""
    found, trees = set(), []
    try:
        cells = json.loads(path.read_bytes())["cells"]
    except (ValueError, KeyError, TypeError):
        return ""
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        if "".join(cell.get("source", "")).strip() in given:
            continue
        lines = "".join(cell.get("source", "")).splitlines()
        source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            continue
    nodes = [node for tree in trees for node in ast.walk(tree)]
    modules = {alias.asname or alias.name.split(".")[0] for node in nodes
               if isinstance(node, ast.Import) for alias in node.names}
    modules |= {alias.asname or alias.name for node in nodes
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                full = f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
                found |= {name for name in _REVIEW_NAMES if full == name or full.startswith(name + ".")
                          or (isinstance(node, ast.ImportFrom) and node.module == name)}
        elif isinstance(node, ast.Name) and node.id in _REVIEW_NAMES:
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            dotted = ast.unparse(node)
            found |= {name for name in _REVIEW_NAMES if "." in name and dotted == name}
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                root = node
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in modules:
                    found.add(f"patches {dotted}")
    return "; ".join(sorted(found))


def answers(notebook: Path, given: frozenset[str]) -> str:
    """The code a student wrote in notebook ('' when it cannot be read)."""
    try:
        cells = json.loads(notebook.read_bytes())["cells"]
    except (ValueError, KeyError, TypeError, OSError):
        return ""
    code = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", ""))
        if source.strip() in given or "grader.check" in source or "import otter" in source:
            continue
        code.append("\n".join(line for line in source.splitlines()
                              if not line.lstrip().startswith(("%", "!"))))
    return "\n\n".join(code)


def _fingerprint(code: str, boilerplate=None):
    from copydetect import CodeFingerprint
    return CodeFingerprint("answers.py", NOISE, GUARANTEE - NOISE + 1, boilerplate=boilerplate,
                           fp=StringIO(code))


def copies(submissions: dict[str, Path], solutions: dict[str, Path], given: frozenset[str],
         threshold: float = THRESHOLD) -> dict[str, str]:
    """{student: 'copy of ... (NN%), ...'} for every submission whose answers match solutions
    ({name: notebook}, e.g. "the published solutions") or another submission at threshold or
    more; the share named is the larger of the two: how much of one answer is in the other.
    Computed in a Python of its own with a fixed hash seed: copydetect hashes its k-grams with
    hash(), which every Python seeds at random, and the same class gets the same flags."""
    request = {"submissions": {k: str(v) for k, v in submissions.items()},
               "solutions": {k: str(v) for k, v in solutions.items()}, "given": sorted(given),
               "threshold": threshold}
    run = subprocess.run([sys.executable, __file__], input=json.dumps(request), capture_output=True,
                         text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if run.returncode:
        raise RuntimeError(f"tools/review.py failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout)


def _copies(submissions: dict[str, Path], solutions: dict[str, Path], given: frozenset[str],
            threshold: float) -> dict[str, str]:
    """copies(), in this process."""
    import numpy as np
    from copydetect import compare_files
    boilerplate = np.array(sorted(_fingerprint("\n\n".join(sorted(given))).hashes), dtype=np.int64)
    prints = {}
    for label, path in [*solutions.items(), *submissions.items()]:
        code = answers(path, given)
        if code.strip():
            found = _fingerprint(code, boilerplate)
            if found.hashes and label not in prints:
                prints[label] = found
    published = [label for label in prints if label not in submissions]
    flags = {}
    for student in submissions:
        if student not in prints:
            continue
        matches = []
        for other, theirs in prints.items():
            if other == student:
                continue
            _, (mine, their_share), _ = compare_files(prints[student], theirs)
            if max(mine, their_share) >= threshold:
                matches.append((other in published, max(mine, their_share), other))
        matches.sort(key=lambda m: (not m[0], -m[1], m[2]))  # the published solutions first
        if matches:
            flags[student] = "copy of " + ", ".join(f"{name} ({share:.0%})" for _, share, name in matches[:SHOWN])
            if len(matches) > SHOWN:
                flags[student] += f" and {len(matches) - SHOWN} more"
    return flags


if __name__ == "__main__":  # copies() runs this with a fixed hash seed: its request on stdin
    asked = json.load(sys.stdin)
    print(json.dumps(_copies({k: Path(v) for k, v in asked["submissions"].items()},
                             {k: Path(v) for k, v in asked["solutions"].items()},
                             frozenset(asked["given"]), asked["threshold"])))
