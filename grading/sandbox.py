"""The sandbox a submission's notebook runs in while ``grading/grade.py`` grades it.

Each submission's Jupyter kernel runs under bubblewrap (``bwrap``, the sandbox of Flatpak; the
Debian and Ubuntu package ``bubblewrap``), which gives it:

- a file system of its own, made of read-only binds of the system (``/usr``), the Python it
  runs (the course's ``.venv`` and the Python that made it) and the assignment's own
  environment (below), plus two writable folders: the submission's private temporary folder
  (its notebook alone: the kernel's working folder) and the folder of the sockets the kernel
  talks to its grader through (ZeroMQ's ``ipc`` transport: files, not the network). Nothing
  else can be read: not the repository (``code/``, where the editable install of ``posenc``
  points, is absent, so posenc's files are too), not the autograder, not the other
  submissions, not the grades, not ``/etc``, not the home folders (but the folder of the
  Python, when it lives in one, e.g. pyenv's). ``/tmp`` and the home folder
  (``/home/student``) are new and empty; ``/proc`` shows the sandbox's own processes only;
- no network (a network namespace of its own, with no interface but its loopback);
- a process namespace of its own (``--unshare-pid``), whose init is bwrap's: when the kernel
  ends, or its grader kills bwrap (``--die-with-parent``), the init ends and Linux ends every
  process of the namespace with it, so a process the notebook starts (in a session of its own,
  detached, ...) cannot outlive its grading; ``grading/sealed.py`` waits for that end before it
  answers;
- a session of its own (``--new-session``) and an environment of a few variables (no
  ``PYTHONPATH`` but the assignment's, no ``JPY_PARENT_PID``).

The assignment's environment (``PROVIDED``): the only part of the course's package ``posenc``
its notebook may import, copied with the package modules it imports: the experiment module for
experiment-positions (its notebook trains with it); for every other assignment none (a stand-in
``posenc`` whose import says "posenc is not available while grading"). attend-by-position's
handed-out cells write the encoding table out in NumPy, and its later questions call the student's
own ``rotation_for_shift``, so that ``posenc.shift_matrix``, question 1's answer, is not there.

Where bubblewrap is missing (or cannot create namespaces), ``make grade`` falls back to Docker
(``otter grade``: Otter-Grader's own containers, built from the autograder zip), and where both
are missing it stops with an error naming what to install.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "code" / "posenc"

# What each assignment's notebook may import of posenc: {module of posenc: names re-exported by
# the package itself}. An assignment not listed gets none of it.
PROVIDED = {
    "experiment-positions": {"experiment": []},
}

INSTALL = ("grading runs each notebook in a sandbox: install bubblewrap (`sudo apt-get install "
           "bubblewrap` on Debian or Ubuntu, `dnf install bubblewrap` on Fedora) or Docker "
           "(https://docs.docker.com/engine/install/, then `make grade` runs `otter grade`)")

BLOCKED = '''raise ImportError(
    "posenc is not available while grading: write the computation yourself "
    "(the course's package may check your work, not do it)")
'''

SUBSET = '''"""posenc as the sandbox gives it to {assignment}: only {modules}."""

{imports}def __getattr__(name):
    raise AttributeError(f"posenc.{{name}} is not available while grading {assignment}")
'''


class SandboxMissing(RuntimeError):
    """Neither bubblewrap nor Docker can run here."""


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    """Whether bwrap is installed and can create the namespaces the sandbox needs here (a
    container that forbids them, or a kernel without unprivileged user namespaces, cannot)."""
    if shutil.which("bwrap") is None:
        return False
    probe = subprocess.run(["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
                           capture_output=True, timeout=60)
    return probe.returncode == 0


def docker_works() -> bool:
    """Whether Docker is installed and its daemon answers."""
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


def choose(wanted: str = "auto") -> str:
    """'bwrap' or 'docker': the one wanted, or (auto) bwrap where it works, else Docker;
    raises SandboxMissing, naming what to install, when the one needed cannot run."""
    if wanted in ("auto", "bwrap") and bwrap_works():
        return "bwrap"
    if wanted in ("auto", "docker") and docker_works():
        return "docker"
    if wanted == "bwrap":
        raise SandboxMissing(f"bubblewrap cannot run here: {INSTALL}")
    if wanted == "docker":
        raise SandboxMissing(f"Docker cannot run here: {INSTALL}")
    raise SandboxMissing(f"no sandbox found: {INSTALL}")


def _imported(path: Path, module: str) -> set[str]:
    """The modules of posenc (dotted, without 'posenc.') that path, the file of module, imports
    with relative imports."""
    found = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            target = [*base, *(node.module.split(".") if node.module else [])]
            found.add(".".join(target))
            found |= {".".join([*target, alias.name]) for alias in node.names}
    return {m for m in found if m and _file(m) is not None}


def _file(module: str) -> Path | None:
    """The source file of posenc's module (dotted, without 'posenc.'), or None."""
    path = PACKAGE.joinpath(*module.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def environment(assignment: str, folder: Path) -> Path:
    """folder/<assignment>, made once: the folder put on the kernel's PYTHONPATH, holding the
    posenc it may import (PROVIDED: the modules listed and those they import; otherwise the
    stand-in whose import fails with a clear message)."""
    target = folder / assignment
    if (target / "posenc" / "__init__.py").exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{assignment}-", dir=folder))  # graders side by side
    (staging / "posenc").mkdir()
    provided = PROVIDED.get(assignment, {})
    if not provided:
        (staging / "posenc" / "__init__.py").write_text(BLOCKED)
    else:
        todo, copied = list(provided), set()
        while todo:
            module = todo.pop()
            if module in copied:
                continue
            copied.add(module)
            source = _file(module)
            destination = staging / "posenc" / source.relative_to(PACKAGE)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
            todo += sorted(_imported(source, module))
        for package in {m.rsplit(".", 1)[0] for m in copied if "." in m}:
            init = staging / "posenc" / package.replace(".", "/") / "__init__.py"
            if not init.exists():
                init.write_text("")
        imports = "".join(f"from .{module} import {', '.join(names)}\n\n\n"  # the others: when imported
                          for module, names in sorted(provided.items()) if names)
        (staging / "posenc" / "__init__.py").write_text(SUBSET.format(
            assignment=assignment, modules=", ".join(f"posenc.{m}" for m in sorted(provided)), imports=imports))
    try:
        staging.rename(target)
    except OSError:  # made meanwhile by another grader
        shutil.rmtree(staging, ignore_errors=True)
    return target


def python() -> tuple[Path, list[Path]]:
    """The Python the kernels run (this virtual environment's, by its real path) and the folders
    it needs to read: the environment and the installation it was made from."""
    prefix = Path(sys.prefix).resolve()
    folders = [prefix, Path(sys.base_prefix).resolve()]
    return prefix / "bin" / "python", [f for f in dict.fromkeys(folders) if not _under(f, Path("/usr"))]


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def bwrap_command(notebook: Path, sockets: Path, environment: Path, threads: str | None = None,
                  disk: int | None = None) -> list[str]:
    """The bwrap command line that runs what follows it (the kernel) in the sandbox, without
    capabilities: notebook (the submission's folder: the files in it now, read-only, in a tmpfs
    of disk bytes, also holding /tmp and the home folder, with the folder that holds it) and
    sockets writable, environment (on PYTHONPATH) read-only."""
    interpreter, folders = python()
    command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
               "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "lib32", "sbin"):
        if Path("/" + link).is_symlink():  # merged /usr: /lib -> usr/lib
            command += ["--symlink", os.readlink("/" + link), "/" + link]
        elif Path("/" + link).is_dir():
            command += ["--ro-bind", "/" + link, "/" + link]
    # One tmpfs of disk bytes for everything the notebook can write: /tmp (where the folders of
    # grading are, by default), or the folder that holds the notebook's, /tmp then a folder in it.
    top = Path("/tmp") if _under(notebook, Path("/tmp")) else notebook.parent
    command += ["--proc", "/proc", "--dev", "/dev", *(["--size", str(disk)] if disk else []),
                "--tmpfs", str(top), "--dir", str(notebook), "--dir", f"{top}/.home", "--dir", "/home",
                "--symlink", f"{top}/.home", "/home/student"]
    if top != Path("/tmp"):
        command += ["--dir", f"{top}/.tmp", "--symlink", f"{top}/.tmp", "/tmp"]
    for path in sorted(notebook.iterdir()):
        command += ["--ro-bind", str(path), str(path)]
    for folder in folders:
        command += ["--ro-bind", str(folder), str(folder)]
    command += ["--ro-bind", str(environment), str(environment),
                "--bind", str(sockets), str(sockets),
                "--chdir", str(notebook)]
    variables = {"PATH": f"{interpreter.parent}:/usr/bin:/bin", "HOME": "/home/student",
                 "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
                 "PYTHONPATH": str(environment), "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg"}
    for name in ("ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "OMP_NUM_THREADS",
                 "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if os.environ.get(name):
            variables[name] = os.environ[name]
    if threads and "OMP_NUM_THREADS" not in os.environ:
        variables["OMP_NUM_THREADS"] = threads
    for name, value in variables.items():
        command += ["--setenv", name, value]
    return [*command, "--", str(interpreter)]


def otter_grade(zip_path: Path, submissions: Path, output: Path, *, jobs: int, timeout: float) -> Path:
    """Grade with Otter's own containers (Docker, no network): its CSV, output/final_grades.csv."""
    output.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "otter", "grade", "-a", str(zip_path), "-o", str(output),
               "--ext", "ipynb", "--containers", str(jobs), "--timeout", str(int(timeout)),
               "--no-network", str(submissions)]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"otter grade failed: {(run.stderr or run.stdout)[-2000:]}")
    return output / "final_grades.csv"


def describe(kind: str) -> str:
    """One line for the instructor: the sandbox used."""
    if kind == "bwrap":
        version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
        return (f"sandbox: {version or 'bubblewrap'} (each notebook: its own folder, the course's "
                "Python and the assignment's part of posenc, read-only; no network; its own "
                "processes, ended with it)")
    return "sandbox: Docker (otter grade: Otter-Grader's containers, no network)"


if __name__ == "__main__":  # python grading/sandbox.py: which sandbox grading would use here
    try:
        print(json.dumps({"sandbox": choose()}))
    except SandboxMissing as error:
        sys.exit(str(error))
