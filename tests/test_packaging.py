"""The package on its own: `python -m build` gives a wheel and an sdist holding posenc only.

The session fixture builds both (into a temporary folder, with build's isolated environment as
a release does), then the tests look inside them, run `twine check`, install the wheel into a
fresh virtual environment with nothing but its declared dependencies and check that the extras
name what each module imports.

No network: what the fresh environments install (setuptools for build's isolated environment,
NumPy for the wheel) comes from the wheelhouse that `make test`'s setup downloads once into
.venv/wheelhouse (`make wheelhouse`; POSENC_WHEELHOUSE names another folder), with pip's
--no-index.
"""

import functools
import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import posenc
from dependencies import closure, declared, imported_modules, providers

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "code" / "posenc"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: The package's files, as paths inside it: "encoding.py", "pytorch/sinusoidal.py", ...
MODULES = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))
VERSION = posenc.__version__
FRAMEWORKS = ("torch", "tensorflow", "keras", "jax", "matplotlib")
WHEELHOUSE = Path(os.environ.get("POSENC_WHEELHOUSE", Path(sys.prefix) / "wheelhouse"))
# The extras each module needs beyond the base dependencies; a module not listed needs none.
# bench.py times the PyTorch and Keras layers when they are installed and skips them otherwise.
# Every module of the subpackage posenc.pytorch needs the extra [torch], every module of
# posenc.tensorflow the extra [tensorflow].
MODULE_EXTRAS = {**{m: {"torch"} for m in MODULES if m.startswith("pytorch/")},
                 **{m: {"tensorflow"} for m in MODULES if m.startswith("tensorflow/")},
                 "plot.py": {"plot"},
                 "bench.py": {"torch", "tensorflow"}, "experiment.py": {"torch"}, "long_context.py": {"torch"},
                 "shipping.py": {"torch"},
                 "foils.py": {"torch", "tensorflow"}, "reference.py": {"torch"}}


def _offline_pip():
    """The environment for a subprocess whose pip installs from the wheelhouse only."""
    if not (WHEELHOUSE / ".complete").exists():
        pytest.fail(f"no wheelhouse at {WHEELHOUSE}: run `make wheelhouse` (part of `make test`)")
    return {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE)}


@pytest.fixture(scope="session")
def dist(tmp_path_factory):
    """Build the sdist, and the wheel from it, into a fresh folder: {"wheel": path, "sdist": path}."""
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run([sys.executable, "-m", "build", "--outdir", out, ROOT],
                           capture_output=True, text=True, env=_offline_pip())
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return {"wheel": next(out.glob("posenc-*.whl")), "sdist": next(out.glob("posenc-*.tar.gz"))}


def test_wheel_holds_the_package_only(dist):
    assert dist["wheel"].name == f"posenc-{VERSION}-py3-none-any.whl"
    names = zipfile.ZipFile(dist["wheel"]).namelist()
    info = f"posenc-{VERSION}.dist-info"
    assert sorted(n for n in names if not n.startswith(info)) == [f"posenc/{m}" for m in MODULES]
    assert f"{info}/licenses/LICENSE" in names


def test_sdist_holds_the_package_and_its_metadata_only(dist):
    top = f"posenc-{VERSION}"
    with tarfile.open(dist["sdist"]) as sdist:
        files = sorted(m.name.removeprefix(top + "/") for m in sdist.getmembers() if m.isfile())
    course = [f for f in files if f.split("/")[0] in ("book", "tests", "assignments", "tools",
                                                     "grading", "binder", ".github", ".ci")
              or f.endswith((".ipynb", ".md")) and f != "README.md"]
    assert course == []
    sources = [f for f in files if f.startswith("code/posenc/")]
    assert sources == [f"code/posenc/{m}" for m in MODULES]
    others = {f for f in files if not f.startswith(("code/posenc/", "code/posenc.egg-info/"))}
    assert others == {"LICENSE", "MANIFEST.in", "PKG-INFO", "README.md", "pyproject.toml",
                      "setup.cfg"}


def test_twine_check_passes(dist):
    check = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                            dist["wheel"], dist["sdist"]], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_wheel_metadata(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        metadata = wheel.read(f"posenc-{VERSION}.dist-info/METADATA").decode()
    headers = [line.partition(": ") for line in metadata.split("\n\n")[0].splitlines()]
    fields = {}
    for name, _, value in headers:
        fields.setdefault(name, []).append(value)
    assert fields["Version"] == [VERSION]
    assert fields["License-Expression"] == ["MIT"]
    assert fields["License-File"] == ["LICENSE"]
    assert fields["Provides-Extra"] == ["torch", "tensorflow", "plot"]
    assert fields["Requires-Dist"][0] == "numpy>=1.24"


def test_wheel_installs_alone_and_imports_numpy_only(dist, tmp_path):
    """A fresh virtual environment, the wheel and its dependencies: `import posenc` works."""
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    environ = {k: v for k, v in _offline_pip().items()
               if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    # Run from the temporary folder, so that nothing of the repository can be imported.
    run = functools.partial(subprocess.run, capture_output=True, text=True, cwd=tmp_path,
                            env=environ)
    dists = "import json, importlib.metadata as m; print(json.dumps(sorted(" \
            "d.metadata['Name'] for d in m.distributions())))"
    fresh = json.loads(run([python, "-c", dists], check=True).stdout)  # pip (and setuptools)
    install = run([python, "-m", "pip", "install", "--quiet", dist["wheel"]])
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    probe = ("import json, sys, posenc; print(json.dumps({'file': posenc.__file__, "
             "'version': posenc.__version__, 'modules': sorted(sys.modules)}))")
    seen = json.loads(run([python, "-c", probe], check=True).stdout)
    installed = json.loads(run([python, "-c", dists], check=True).stdout)
    assert Path(seen["file"]).is_relative_to(env_dir)
    assert seen["version"] == VERSION
    imported = {name.split(".")[0] for name in seen["modules"]}
    assert "numpy" in imported
    assert imported.isdisjoint(FRAMEWORKS)
    base = declared(PYPROJECT["project"]["dependencies"])
    added = {canonicalize_name(d) for d in installed} - {canonicalize_name(d) for d in fresh}
    assert added == base | {"posenc"}


def _here(requirements):
    """The requirement strings whose environment marker holds on this machine."""
    return [r for r in requirements
            if Requirement(r).marker is None or Requirement(r).marker.evaluate({"extra": ""})]


def _imports(module):
    """Third-party modules a module of the package imports (functions included)."""
    return imported_modules((PACKAGE / module).read_text()) - {"posenc"}


@pytest.mark.parametrize("module", MODULES)
def test_extras_provide_what_each_module_imports(module):
    """What a module imports comes from the base dependencies or from the extras it belongs to."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    wanted = MODULE_EXTRAS.get(module, set())
    requirements = [*PYPROJECT["project"]["dependencies"], *(r for e in wanted for r in extras[e])]
    provided = closure(declared(_here(requirements)))
    owners = providers()
    missing = {name: owners.get(name) for name in _imports(module)
               if not owners.get(name, set()) & provided}
    assert missing == {}, f"{module} imports what neither the base nor {sorted(wanted)} provide"


def test_every_extra_is_imported_by_its_module():
    """No extra installs something its module does not import."""
    owners = providers()
    for extra, requirements in PYPROJECT["project"]["optional-dependencies"].items():
        modules = [m for m, wanted in MODULE_EXTRAS.items() if extra in wanted]
        assert modules, f"no module uses the extra [{extra}]"
        imported = {d for m in modules for name in _imports(m) for d in owners.get(name, ())}
        assert declared(_here(requirements)) <= imported, f"[{extra}] installs what no module imports"


# One machine of each platform the course supports (tests/test_requirements.py resolves the
# pins for each): sys_platform and platform_machine as Python reports them there.
PLATFORMS = {"Linux x86_64": {"sys_platform": "linux", "platform_machine": "x86_64"},
             "Linux aarch64": {"sys_platform": "linux", "platform_machine": "aarch64"},
             "macOS arm64": {"sys_platform": "darwin", "platform_machine": "arm64"},
             "Windows x86_64": {"sys_platform": "win32", "platform_machine": "AMD64"}}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensorflow_extra_installs_one_tensorflow_as_requirements_txt_does(platform):
    """The [tensorflow] extra picks the distribution requirements.txt picks, on each platform."""
    def chosen(requirements):
        environment = {**PLATFORMS[platform], "extra": ""}
        return {canonicalize_name(r.name) for r in map(Requirement, requirements)
                if r.name.startswith("tensorflow") and (r.marker is None
                                                         or r.marker.evaluate(environment))}

    pins = [line.split("#")[0] for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.startswith("tensorflow")]
    extra = chosen(PYPROJECT["project"]["optional-dependencies"]["tensorflow"])
    assert len(extra) == 1
    assert extra == chosen(pins)


def test_requires_python_is_the_makefiles_oldest_supported_python():
    """requires-python starts where the Makefile's SUPPORTED_PYTHONS start (no upper bound)."""
    makefile = (ROOT / "Makefile").read_text()
    supported = re.search(r"^SUPPORTED_PYTHONS := (.+)$", makefile, re.M).group(1).split()
    assert PYPROJECT["project"]["requires-python"] == f">={supported[0]}"
    classifiers = {c.rsplit(" :: ", 1)[1] for c in PYPROJECT["project"]["classifiers"]
                   if c.startswith("Programming Language :: Python :: 3.")}
    assert classifiers == set(supported)
