"""The review column of grades.csv: what an instructor should read before trusting a grade.

``constructs``: code that can reach what the kernel measures (patched modules, modules reached by
name, code built at run time, files opened, ...), flagged, never scored.

``copies``: the answers of each submission compared, with copydetect (the winnowing
fingerprints of MOSS, Schleimer et al. 2003), to the published solutions and to every other
submission of the class; ``grading/grade.py`` writes the matches in the review column of
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
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

# grading/'s scripts import each other by name (manual, lazily)
sys.path.insert(0, str(Path(__file__).resolve().parent))

THRESHOLD = 0.8       # the share of one answer's code found in the other
NOISE = 25            # copydetect's noise threshold: matches shorter than this are ignored
GUARANTEE = 30        # ... and matches at least this long are always found
SHOWN = 3             # matches named per submission, the closest first
PROSE_WORDS = 5       # written answers match by sequences of this many words ...
PROSE_THRESHOLD = 0.5  # ... when this share of one answer's sequences is in the other


# What code can use to fool what the kernel measures (the checks of how a function computes, the
# stand-in that keeps posenc out) or, under Otter's own runners, its grade: patch a module
# (np.allclose = ...), reach modules or the grader by name, run built strings, open files.
# Flagged for a human to read, never scored.
_REVIEW_NAMES = {"sys.modules", "importlib", "__import__", "eval", "exec", "compile", "open",
                 "builtins", "__builtins__", "gc", "inspect", "otter", "setattr", "globals",
                 "signal", "ctypes", "pickle", "shutil", "os.remove", "os.unlink", "subprocess",
                 "sys.settrace", "sys.setprofile", "sys._getframe", "posenc",
                 "getattr", "vars", "get_ipython", "sys.displayhook"}
_SHOWN_ONLY = {"getattr", "vars"}   # not flagged inside a print(...): they only show a value there
_ALLOWED = ("posenc.experiment",)   # experiment-positions trains with it (grading/sandbox.py's PROVIDED)


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
    printed = {id(inner) for node in nodes if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
               and node.func.id == "print" for inner in ast.walk(node)}
    modules = {alias.asname or alias.name.split(".")[0] for node in nodes
               if isinstance(node, ast.Import) for alias in node.names}
    modules |= {alias.asname or alias.name for node in nodes
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                full = f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
                if any(full == a or full.startswith(a + ".") or getattr(node, "module", None) == a for a in _ALLOWED):
                    continue
                found |= {name for name in _REVIEW_NAMES if full == name or full.startswith(name + ".")
                          or (isinstance(node, ast.ImportFrom) and node.module == name)}
        elif isinstance(node, ast.Name) and node.id in _REVIEW_NAMES:
            if not (node.id in _SHOWN_ONLY and id(node) in printed):
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


class Flags(dict):
    """{student: flag} for the review column, and .listing: the copies of the class grouped, for
    the instructor (``copies.txt``)."""

    listing = ""


def copies(submissions: dict[str, Path], solutions: dict[str, Path], given: frozenset[str],
           threshold: float = THRESHOLD) -> Flags:
    """The copies among submissions and of solutions ({name: notebook}: "the published
    solutions", and "this variant's solutions" when grading a variant), grouped (see _copies).
    Computed in a Python of its own with a fixed hash seed: copydetect hashes its k-grams with
    hash(), which every Python seeds at random, and the same class gets the same flags."""
    request = {"submissions": {k: str(v) for k, v in submissions.items()},
               "solutions": {k: str(v) for k, v in solutions.items()}, "given": sorted(given),
               "threshold": threshold}
    run = subprocess.run([sys.executable, __file__], input=json.dumps(request), capture_output=True,
                         text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    if run.returncode:
        raise RuntimeError(f"grading/review.py failed: {run.stderr[-2000:]}")
    answer = json.loads(run.stdout)
    flags = Flags(answer["flags"])
    flags.listing = answer["listing"]
    return flags


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def numbers_out(text: str) -> str:
    """text with every number written as 0: a copy adapted to other numbers matches its source."""
    return _NUMBER.sub("0", text)


def _notebook_cells(path: Path) -> list:
    try:
        cells = json.loads(path.read_bytes())["cells"]
    except (ValueError, KeyError, TypeError, OSError):
        return []
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []


def written(path: Path) -> dict[str, str]:
    """{question: the markdown a notebook answers it with} (grading/manual.py's blocks), without
    Otter's placeholder and a model answer's rubric."""
    import manual  # grading/manual.py (it imports this file's siblings)
    found = {}
    for question, cells in manual.answer_cells(_notebook_cells(path)).items():
        text = "\n".join("".join(c.get("source") or "") for c in cells if c.get("cell_type") == "markdown")
        text = text.replace(manual.PLACEHOLDER, "").split("**Rubric (")[0]
        if len(text.split()) >= 8:
            found[question] = text
    return found


def _shingles(text: str, size: int = PROSE_WORDS) -> set:
    words = re.findall(r"[a-z0-9]+", numbers_out(text.lower()))
    return {tuple(words[i:i + size]) for i in range(max(len(words) - size + 1, 0))}


def _prose_share(mine: set, theirs: set) -> float:
    return len(mine & theirs) / len(mine) if mine else 0.0


def other_numbers(path: Path, given: frozenset[str]) -> str:
    """Why a notebook looks written for another variant ('' if nothing does): a handed-out cell
    with other numbers, or a function whose defaults differ from the handed-out signature's."""
    handed = {numbers_out(cell): cell for cell in given}
    signatures = {}
    for cell in given:
        try:
            tree = ast.parse(cell)
        except SyntaxError:
            continue
        signatures |= {f.name: ast.unparse(f.args) for f in tree.body if isinstance(f, ast.FunctionDef)}
    found = []
    for cell in _notebook_cells(path):
        source = "".join(cell.get("source") or "").strip()
        if cell.get("cell_type") != "code" or source in given:
            continue
        if numbers_out(source) in handed:
            found.append(f"a handed-out cell with other numbers ({source.splitlines()[0][:60]})")
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for f in tree.body:
            if isinstance(f, ast.FunctionDef) and f.name in signatures and ast.unparse(f.args) != signatures[f.name] \
                    and numbers_out(ast.unparse(f.args)) == numbers_out(signatures[f.name]):
                found.append(f"{f.name}({ast.unparse(f.args)}) where the notebook hands out "
                             f"{f.name}({signatures[f.name]})")
    return "; ".join(found[:2])


def _groups(pairs: dict) -> list[list[str]]:
    """Connected groups of students from {(a, b): share}, largest first."""
    parent = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x
    for a, b in pairs:
        parent[root(a)] = root(b)
    groups = {}
    for x in list(parent):
        groups.setdefault(root(x), []).append(x)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g))


def _named(members: list[str], shown: int = SHOWN) -> str:
    return ", ".join(members[:shown]) + (f" and {len(members) - shown} more" if len(members) > shown else "")


def _copies(submissions: dict[str, Path], solutions: dict[str, Path], given: frozenset[str],
            threshold: float) -> dict:
    """copies(), in this process: {"flags": {student: flag}, "listing": text}.

    Code: copydetect on each submission's answers, against every solution (as it is, and with
    every number written as 0: the published solution adapted to other numbers) and every other
    submission. A match with a solution names it: "the published solutions" when the numbers are
    the same, "the published solutions, with this variant's numbers" when the numbers are those of
    this variant's solutions, "..., with other numbers (the public ones or another variant's)".
    Students who match each other and not a common solution form groups: each student's flag
    names the others of the group. Written answers (the markdown of each manual question):
    sequences of PROSE_WORDS words (numbers as 0) against the published model answers and each
    other (but two copies of the model answer, which it explains), PROSE_THRESHOLD of one found
    in the other. And a notebook made for another variant
    (other_numbers)."""
    import numpy as np
    from copydetect import compare_files
    boilerplate = np.array(sorted(_fingerprint("\n\n".join(sorted(given))).hashes), dtype=np.int64)
    plain_boilerplate = np.array(sorted(_fingerprint(numbers_out("\n\n".join(sorted(given)))).hashes), dtype=np.int64)
    prints, plain = {}, {}
    for label, path in [*solutions.items(), *submissions.items()]:
        code = answers(path, given)
        if code.strip() and label not in prints:
            found = _fingerprint(code, boilerplate)
            if found.hashes:
                prints[label], plain[label] = found, _fingerprint(numbers_out(code), plain_boilerplate)

    def share(a, b, table):
        _, (mine, theirs), _ = compare_files(table[a], table[b])
        return max(mine, theirs)
    variant = next((label for label in solutions if label.startswith("this variant")), None)
    public = [label for label in solutions if label != variant and label in prints]
    flags, sources, pairs = {}, {}, {}
    students = [s for s in submissions if s in prints]
    for student in students:
        for label in public:
            exact, adapted = share(student, label, prints), share(student, label, plain)
            ours = share(student, variant, prints) if variant in prints else 0.0
            if ours > exact and ours >= threshold:
                sources[student] = (f"{label}, with this variant's numbers", adapted)
            elif exact >= threshold and exact >= adapted - 0.005:  # the same numbers too
                sources[student] = (f"{label}", exact)
            elif adapted >= threshold:
                sources[student] = (f"{label}, with other numbers (the public ones or another variant's)", adapted)
            if student in sources:
                break
        else:
            if variant in prints and share(student, variant, prints) >= threshold:
                sources[student] = (variant, share(student, variant, prints))
    for i, a in enumerate(students):
        for b in students[i + 1:]:
            if a in sources and b in sources:
                continue  # both copy a solution: that explains their match
            value = share(a, b, prints)
            if value >= threshold:
                pairs[(a, b)] = value
    lines = []
    by_source = {}
    for student, (label, value) in sources.items():
        flags[student] = f"copy of {label} ({value:.0%})"
        by_source.setdefault(label, []).append((student, value))
    for label, members in sorted(by_source.items()):
        low, high = min(v for _, v in members), max(v for _, v in members)
        lines.append(f"Code copied from {label}: {len(members)} student(s) ({low:.0%} to {high:.0%}): "
                     + ", ".join(s for s, _ in sorted(members)))
    for number, group in enumerate(_groups(pairs), 1):
        inside = {pair: v for pair, v in pairs.items() if pair[0] in group}
        lines.append(f"Code group {number}, {len(group)} students: " + ", ".join(
            f"{a} ~ {b} {v:.0%}" for (a, b), v in sorted(inside.items(), key=lambda x: -x[1])[:8])
            + (f" and {len(inside) - 8} more pairs" if len(inside) > 8 else ""))
        for student in group:
            others = sorted(((v, b if a == student else a) for (a, b), v in inside.items() if student in (a, b)), reverse=True)
            text = "copy of " + ", ".join(f"{o} ({v:.0%})" for v, o in others[:SHOWN])
            if len(group) - 1 > SHOWN:
                text += f" (code group {number} of {len(group)}: copies.txt)"
            flags[student] = "; ".join(f for f in (flags.get(student), text) if f)
    models = {}
    for label in public:
        models |= {q: _shingles(t) for q, t in written(solutions[label]).items()}
    answers_of = {s: {q: _shingles(t) for q, t in written(p).items()} for s, p in submissions.items()}
    for question in sorted({q for found in answers_of.values() for q in found}):
        have = [s for s in submissions if question in answers_of[s]]
        prose_pairs, of_model = {}, set()
        for a in have:
            mine = answers_of[a][question]
            if question in models and _prose_share(mine, models[question]) >= PROSE_THRESHOLD:
                of_model.add(a)
                value = _prose_share(mine, models[question])
                flags[a] = "; ".join(f for f in (flags.get(a), f"written {question}: the published model answer ({value:.0%})") if f)
                lines.append(f"Written {question}, the published model answer: {a} ({value:.0%} of the answer)")
        for i, a in enumerate(have):
            mine = answers_of[a][question]
            for b in have[i + 1:]:
                if a in of_model and b in of_model:
                    continue  # both copy the model answer: that explains their match
                value = max(_prose_share(mine, answers_of[b][question]), _prose_share(answers_of[b][question], mine))
                if value >= PROSE_THRESHOLD:
                    prose_pairs[(a, b)] = value
        for group in _groups(prose_pairs):
            inside = {pair: v for pair, v in prose_pairs.items() if pair[0] in group}
            lines.append(f"Written {question}, {len(group)} students alike: " + ", ".join(
                f"{a} ~ {b} {v:.0%}" for (a, b), v in sorted(inside.items(), key=lambda x: -x[1])[:8]))
            for student in group:
                others = [b if a == student else a for (a, b) in inside if student in (a, b)]
                alike = (f"written {question} as {', '.join(others)}'s" if len(others) <= SHOWN else
                         f"written {question} alike in a group of {len(group)} (copies.txt)")
                flags[student] = "; ".join(f for f in (flags.get(student), alike) if f)
    for student, path in submissions.items():
        why = other_numbers(path, given)
        if why:
            flags[student] = "; ".join(f for f in (flags.get(student), f"numbers of another notebook (public or another variant): {why}") if f)
            lines.append(f"Numbers of another notebook (public or another variant): {student}: {why}")
    head = (f"Copies among {len(submissions)} submissions (code: copydetect, {threshold:.0%} of one answer in the "
            f"other, numbers also compared as 0; written answers: {PROSE_WORDS}-word sequences, "
            f"{PROSE_THRESHOLD:.0%}). A flag asks for a reading, never changes a grade.")
    return {"flags": flags, "listing": "\n".join([head, *(lines or ["No copies found."])]) + "\n"}


if __name__ == "__main__":  # copies() runs this with a fixed hash seed: its request on stdin
    asked = json.load(sys.stdin)
    print(json.dumps(_copies({k: Path(v) for k, v in asked["submissions"].items()},
                             {k: Path(v) for k, v in asked["solutions"].items()},
                             frozenset(asked["given"]), asked["threshold"])))
