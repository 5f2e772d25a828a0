"""What code imports, and which installed distributions provide it.

Shared by tests/test_packaging.py (the extras name what each module imports),
tests/test_binder.py (Binder installs what the notebooks import, and nothing else) and
tests/test_student_requirements.py (the students' install: what the assignments import).
"""

import ast
import importlib.metadata
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def imported_modules(source):
    """Top-level names of the absolute imports anywhere in Python source, stdlib excluded."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names)


def providers():
    """{top-level module: canonical names of the installed distributions that provide it}."""
    return {module: {canonicalize_name(d) for d in dists}
            for module, dists in importlib.metadata.packages_distributions().items()}


def declared(requirements):
    """Canonical distribution names of requirement strings such as "numpy>=1.24"."""
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def closure(names):
    """The distributions and everything they require, as installed here (no extras)."""
    seen, todo = set(), [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            for line in importlib.metadata.requires(name) or []:
                requirement = Requirement(line)
                if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                    todo.append(canonicalize_name(requirement.name))
    return seen


def requirement_lines(path):
    """The non-empty lines of a requirements file, without comments."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def pinned(path):
    """{canonical name: Requirement} of a requirements file's requirement lines."""
    requirements = [Requirement(line) for line in requirement_lines(path)
                    if not line.startswith(("-", ".")) and " @ " not in line]
    return {canonicalize_name(r.name): r for r in requirements}
