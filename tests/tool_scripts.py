"""Import a script of tools/ or grading/ (folders of scripts, not packages) as a module, for the
tests that check it."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"      # the book's build scripts
GRADING = ROOT / "grading"  # the grader (grading/README.md)


def load(name: str, folder: Path = TOOLS):
    """The module of ``<folder>/<name>.py`` (``tools/`` unless told), registered in ``sys.modules``
    under ``name`` (dataclasses and pickling look a class's module up there)."""
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
