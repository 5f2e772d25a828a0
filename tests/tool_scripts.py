"""Import a script of tools/ (not a package) as a module, for the tests that check it."""

import importlib.util
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def load(name: str):
    """The module of ``tools/<name>.py``, registered in ``sys.modules`` under ``name`` (dataclasses
    and pickling look a class's module up there)."""
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
