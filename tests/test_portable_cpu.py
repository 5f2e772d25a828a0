"""The notebooks' kernels run on portable CPU code paths (conftest.PortableKernels): in a
process started with conftest.portable_cpu_environment(), PyTorch uses its default (portable)
kernels and NumPy none of the optimisations it dispatches to on this CPU."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import conftest

PROBE = """import json, torch
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
print(json.dumps({"torch": torch.backends.cpu.get_cpu_capability(),
                  "numpy": {name: __cpu_features__[name] for name in __cpu_dispatch__}}))"""


def test_a_process_with_the_portable_environment_uses_portable_code_paths():
    environment = {**os.environ, **conftest.portable_cpu_environment()}
    run = subprocess.run([sys.executable, "-W", "error::ImportWarning", "-c", PROBE],
                         capture_output=True, text=True, env=environment, check=True)
    seen = json.loads(run.stdout)
    assert seen["torch"] == "DEFAULT"
    assert seen["numpy"] and not any(seen["numpy"].values()), seen["numpy"]


def test_the_plugin_is_registered_for_every_item(pytestconfig):
    """Registered on the plugin manager, it sees book/'s notebooks, not only tests/."""
    assert isinstance(pytestconfig.pluginmanager.get_plugin("posenc-portable-kernels"),
                      conftest.PortableKernels)


@pytest.mark.parametrize("native", [None, "1"])
def test_only_notebook_items_get_the_environment(monkeypatch, native):
    """A test module's setup leaves the environment alone; a notebook's setup sets it, unless
    POSENC_NATIVE_CPU=1, and restores it afterwards."""
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    monkeypatch.delenv("POSENC_NATIVE_CPU", raising=False)
    if native:
        monkeypatch.setenv("POSENC_NATIVE_CPU", native)
    plugin = conftest.PortableKernels()
    seen = {}
    for name in ("tests/test_x.py", "book/x.ipynb"):
        steps = plugin.pytest_runtest_setup(SimpleNamespace(path=Path(name)))
        next(steps)
        seen[name] = os.environ.get("ATEN_CPU_CAPABILITY")
        with pytest.raises(StopIteration):
            next(steps)
        assert "ATEN_CPU_CAPABILITY" not in os.environ
    assert seen == {"tests/test_x.py": None, "book/x.ipynb": None if native else "default"}
