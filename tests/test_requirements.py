"""requirements.txt installs everywhere the course is read: its pins resolve, from wheels only,
for every supported platform and Python.

pip evaluates environment markers and wheel tags for the machine it runs on, so the resolution
for the other platforms is done by uv (a test-only pin of requirements.txt):
`uv pip compile --python-platform P --python-version V --only-binary :all:` resolves the file
as pip would on that platform, from PyPI's metadata, without downloading a wheel. The course's
own package (`-e .`) stands in by its dependencies and requires-python, read from
pyproject.toml (building it for each resolution would take uv half a minute each on this
machine). The platforms:

  Linux x86_64 and aarch64   glibc 2.28 or later (manylinux_2_28: torch's Linux wheels)
  macOS 14 or later, Apple Silicon (torch 2.13 has no wheel for older macOS or Intel Macs)
  Windows x86_64             native, or Linux x86_64 under WSL 2

and the Pythons are the Makefile's SUPPORTED_PYTHONS (the versions it accepts).

The resolution needs the package index (PyPI, or UV_DEFAULT_INDEX). When it does not answer,
the tests are skipped, with the reason in pytest's summary; POSENC_REQUIRE_INDEX=1 (set by
.ci/run) turns that skip into a failure. `python tests/test_requirements.py` prints the table
of the README's section "Your machine" (packages and download size per platform and Python).

The twelve resolutions take a minute or more of waiting for the index and almost no CPU, so a
run of the whole suite starts them in the background as it starts (tests/conftest.py calls
start_in_background, which runs `python tests/test_requirements.py --resolve-into FOLDER` and
names FOLDER in POSENC_RESOLUTIONS for the pytest-xdist workers): the other tests use the two
cores meanwhile, and the fixture below reads FOLDER's results, waiting for them if need be.
Without that variable (this file run on its own, say) the fixture resolves them itself.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SUPPORTED = re.search(r"^SUPPORTED_PYTHONS := (.+)$", (ROOT / "Makefile").read_text(),
                      re.M).group(1).split()
# {name: (uv's --python-platform, extra environment, what Python reports there)}
PLATFORMS = {
    "Linux x86_64": ("x86_64-manylinux_2_28", {},
                     {"sys_platform": "linux", "platform_machine": "x86_64"}),
    "Linux aarch64": ("aarch64-manylinux_2_28", {},
                      {"sys_platform": "linux", "platform_machine": "aarch64"}),
    "macOS 14 arm64": ("aarch64-apple-darwin", {"MACOSX_DEPLOYMENT_TARGET": "14.0"},
                       {"sys_platform": "darwin", "platform_machine": "arm64"}),
    "Windows x86_64": ("x86_64-pc-windows-msvc", {},
                       {"sys_platform": "win32", "platform_machine": "AMD64"}),
}
INDEX = os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") \
    or "https://pypi.org/simple"
REQUIRE_INDEX = os.environ.get("POSENC_REQUIRE_INDEX") == "1"
# Distributions that exist only for NVIDIA GPUs.
CUDA = re.compile(r"^(nvidia-.*|triton|cuda-.*)$")


@cache
def _index_unreachable():
    """Why the package index cannot be used, or None when it answers."""
    try:
        urllib.request.urlopen(f"{INDEX.rstrip('/')}/uv/", timeout=15).close()
    except OSError as error:
        return f"the package index {INDEX} does not answer ({error})"
    return None


def _pins():
    """The Requirements of requirements.txt's pinned lines (with their markers)."""
    lines = (line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text().splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith(("-", "."))]


def resolve(platform, python, output):
    """Resolve requirements.txt for a platform and Python into the pylock file `output`.

    Returns the finished process; the resolution is in `output` (PEP 751's pylock.toml, which
    records each wheel's size).
    """
    target, environment, _ = PLATFORMS[platform]
    requirements = Path(output).with_name("requirements.txt")
    requirements.write_text("".join(
        "\n".join(PYPROJECT["project"]["dependencies"]) + "\n" if line.strip() == "-e ." else line
        for line in REQUIREMENTS.read_text().splitlines(keepends=True)))
    command = [sys.executable, "-m", "uv", "pip", "compile", requirements,
               "--python-platform", target, "--python-version", python, "--only-binary", ":all:",
               "--format", "pylock.toml", "--output-file", output, "--no-header", "--quiet"]
    env = {**os.environ, **environment, "UV_NO_PROGRESS": "1"}
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)


def summary(lock):
    """(number of packages, download size in bytes, names) of a pylock file.

    Where several wheels of a package fit the platform (e.g. a cp311 and an abi3 one), the
    largest is counted: the size is an upper bound.
    """
    packages = tomllib.loads(Path(lock).read_text())["packages"]
    size = sum(max((w.get("size", 0) for w in p.get("wheels", [])), default=0) for p in packages)
    return len(packages), size, {canonicalize_name(p["name"]): p.get("version") for p in packages}


RESULTS = "results.json"  # what resolve_into writes, whole, when every resolution is done
WAIT = 900  # seconds the fixture waits for the background resolutions


def resolve_into(folder):
    """Resolve requirements.txt for every platform and Python, side by side (uv spends most of
    a resolution waiting for the index), and write folder/results.json: a list of
    [platform, python, uv's exit status, the end of its error output, {name: version}]."""
    folder = Path(folder)

    def resolve_one(key):
        lock = folder / f"{key[0]}-{key[1]}".replace(" ", "-") / "pylock.toml"
        lock.parent.mkdir(parents=True, exist_ok=True)
        run = resolve(*key, lock)
        return [*key, run.returncode, run.stderr[-3000:],
                summary(lock)[2] if run.returncode == 0 else {}]

    keys = [(platform, python) for platform in PLATFORMS for python in SUPPORTED]
    with ThreadPoolExecutor(len(keys)) as pool:
        results = list(pool.map(resolve_one, keys))
    temporary = folder / f"{RESULTS}.tmp"
    temporary.write_text(json.dumps(results))
    temporary.replace(folder / RESULTS)


def start_in_background(folder):
    """Start resolve_into(folder) in a process of its own (a session of its own, so that
    stop_background ends it and its uv processes together); return the process."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    with (Path(folder) / "stderr").open("w") as stderr:
        return subprocess.Popen([sys.executable, __file__, "--resolve-into", str(folder)],
                                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)


def stop_background(process):
    """End the background resolution and its uv processes, if still running."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()


def _ended(pid):
    """Whether the process pid has ended. It is the child of pytest's main process, which waits
    for it only at the end of the run: until then an ended one is a zombie, which signals still
    reach (so os.kill alone cannot tell; /proc can, where there is one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def _wait_for(folder, pid):
    """The results resolve_into writes in folder, waiting for the process pid to write them."""
    results, deadline = Path(folder) / RESULTS, time.monotonic() + WAIT
    while not results.exists():
        if _ended(pid) and not results.exists():  # ended without results: its error output says why
            stderr = Path(folder) / "stderr"
            pytest.fail("the background resolution ended without results:\n"
                        + (stderr.read_text()[-3000:] if stderr.exists() else ""))
        if time.monotonic() > deadline:
            pytest.fail(f"the background resolution gave no results in {WAIT} s")
        time.sleep(0.5)
    return json.loads(results.read_text())


@pytest.fixture(scope="module")
def resolutions(tmp_path_factory):
    """{(platform, python): (uv's exit status, its error output, {name: version})}: the
    resolutions started in the background with the run (POSENC_RESOLUTIONS names their folder
    and process), or resolved here."""
    missing = _index_unreachable()
    if missing and REQUIRE_INDEX:
        pytest.fail(f"{missing}; POSENC_REQUIRE_INDEX=1 forbids skipping the resolution tests")
    if missing:
        pytest.skip(f"resolution tests skipped: {missing}")
    background = os.environ.get("POSENC_RESOLUTIONS")
    if background:
        pid, folder = background.split(":", 1)
        results = _wait_for(folder, int(pid))
    else:
        folder = tmp_path_factory.mktemp("resolutions")
        resolve_into(folder)
        results = json.loads((folder / RESULTS).read_text())
    return {(platform, python): (status, stderr, versions)
            for platform, python, status, stderr, versions in results}


@pytest.mark.parametrize("python", SUPPORTED)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_requirements_resolve_from_wheels(resolutions, platform, python):
    status, stderr, versions = resolutions[platform, python]
    assert status == 0, f"requirements.txt does not resolve for {platform}, Python {python}:\n{stderr}"
    environment = {**PLATFORMS[platform][2], "extra": ""}
    # Every pin that applies there, at its version: the same versions on every platform.
    for pin in _pins():
        if pin.marker is None or pin.marker.evaluate(environment):
            name = canonicalize_name(pin.name)
            assert name in versions and pin.specifier.contains(versions[name]), (pin, platform)
        else:
            assert canonicalize_name(pin.name) not in versions, (pin, platform)
    cuda = sorted(n for n in versions if CUDA.match(n))
    if platform.startswith(("macOS", "Windows")):
        assert cuda == [], f"{platform} resolves GPU-only packages: {cuda}"


def test_the_supported_pythons_are_three_consecutive_minor_versions():
    assert SUPPORTED == ["3.11", "3.12", "3.13"]


def test_requirements_install_the_package_editable():
    """The line that the resolution replaces by the package's dependencies is there."""
    assert "-e .\n" in REQUIREMENTS.read_text().splitlines(keepends=True)


@pytest.mark.parametrize("python", SUPPORTED)
def test_the_package_accepts_every_supported_python(python):
    assert SpecifierSet(PYPROJECT["project"]["requires-python"]).contains(f"{python}.0")


def test_importing_nbformat_builds_no_iri_parsers():
    """jsonschema 4.25 and later import rfc3987-syntax, whose import builds about 35 Earley
    parsers (2 s of CPU) in every process that imports nbformat: the pytest workers, each grader,
    Sphinx, a student's self-check. requirements.txt pins jsonschema 4.24, which does not: the
    environment, as installed, imports nbformat without it."""
    run = subprocess.run([sys.executable, "-c", "import sys, nbformat\n"
                          "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"],
                         capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", f"importing nbformat imported {run.stdout.strip()}"


def main():
    """Print the resolution table (platform x Python: packages, download size; CUDA share)."""
    import tempfile

    if _index_unreachable():
        sys.exit(_index_unreachable())
    print("| platform | Python | resolves | packages | download | of which CUDA |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for platform in PLATFORMS:
            for python in SUPPORTED:
                lock = Path(folder) / "pylock.toml"
                run = resolve(platform, python, lock)
                if run.returncode:
                    print(f"| {platform} | {python} | no | | | |")
                    continue
                count, size, versions = summary(lock)
                packages = tomllib.loads(lock.read_text())["packages"]
                cuda = sum(max((w.get("size", 0) for w in p.get("wheels", [])), default=0)
                           for p in packages if CUDA.match(p["name"]))
                print(f"| {platform} | {python} | yes | {count} | {size / 1e9:.2f} GB "
                      f"| {cuda / 1e9:.2f} GB |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--resolve-into"]:
        resolve_into(sys.argv[2])
    else:
        main()

