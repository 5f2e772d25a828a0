"""What one submission may take while it is graded: memory, processes, CPU time and disk.

    python grading/grade.py ... --limits "memory=2G,processes=64,cpu=600,disk=500M"
    make grade ... LIMITS="memory=2G,processes=64,cpu=600,disk=500M"

The defaults (``Limits()``) and why: a course notebook (the solutions, PyTorch's training in
experiment-positions included) peaks below 1 GB of memory, runs about 15 threads and
processes (the kernel's own threads among them), spends well under a minute of CPU and writes
nothing that matters; ``make grade`` runs two submissions at a time on the course's 2-core,
24 GB machine. So each submission gets:

- ``memory`` 2 GB: the address space of each of its processes (``RLIMIT_AS``: an allocation past
  it raises ``MemoryError`` in the notebook, which goes on) and, where a memory cgroup can be
  made, the total of its processes and of the files it writes (past it Linux kills the kernel);
  two at a time stay far below the machine's 24 GB;
- ``processes`` 64: processes and threads together, in a pids cgroup where one can be made (as
  root on this machine), else with ``RLIMIT_NPROC`` (which Linux counts per user across the
  machine: the user's processes already running are added; root is not counted by Linux, so as
  root without a cgroup this limit is not enforced and ``describe`` says so);
- ``cpu`` 600 s: CPU time of each process (``RLIMIT_CPU``, the kernel stops the process with
  SIGXCPU), as much as the submission's wall-clock limit, so that threads cannot multiply it;
- ``disk`` 500 MB: the writable folders of the sandbox (the notebook's folder, ``/tmp`` and the
  home folder) are one tmpfs of that size, and no file may be larger (``RLIMIT_FSIZE``); no core
  files.

A limit stops what crosses it, not the grading: the cell that crossed it fails (the notebook
goes on, its other questions are graded) or, where the kernel was killed, a new kernel runs the
notebook without that cell (or grades the questions after the one whose test crossed it);
either way ``grades.csv``'s reason names the limit ("stopped: memory limit 2 GB ...") and every
other submission of the run is graded as usual.

Run as a script (``python limits.py SPEC CGROUP... -- COMMAND``), this file is the launcher that
``grading/sealed.py`` puts in front of the sandbox's command line: it joins the cgroups, sets the
rlimits and executes COMMAND (bwrap), whose processes inherit both.
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
NAMES = {"memory": "memory", "processes": "process", "cpu": "CPU time", "disk": "disk"}


def _size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", text.lower())
    if not match:
        raise ValueError(f"not a size: {text!r} (expected e.g. 2G, 500M, 1024K or bytes)")
    return int(float(match[1]) * UNITS[match[2]])


def _bytes(n: int) -> str:
    for unit, size in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class Limits:
    """One submission's limits: memory and disk in bytes, processes (threads included), CPU
    time in seconds."""

    memory: int = 2 * 2**30
    processes: int = 64
    cpu: int = 600
    disk: int = 500 * 2**20

    @classmethod
    def parse(cls, text: str | None) -> Limits:
        """Limits from "memory=2G,processes=64,cpu=600,disk=500M" (any of them; the others
        keep their defaults). Raises ValueError naming a wrong item."""
        values = asdict(cls())
        for item in filter(None, (part.strip() for part in (text or "").split(","))):
            name, _, value = item.partition("=")
            name = name.strip().lower()
            if name not in values or not value.strip():
                raise ValueError(f"unknown limit {item!r}: expected memory=, processes=, cpu= or "
                                 "disk= (e.g. memory=2G,processes=64,cpu=600,disk=500M)")
            number = _size(value) if name in ("memory", "disk") else int(float(value))
            if number <= 0:
                raise ValueError(f"limit {item!r} must be positive")
            values[name] = number
        return cls(**values)

    def name(self, limit: str) -> str:
        """'memory limit 2 GB', 'process limit 64', 'CPU time limit 600 s', 'disk limit 500 MB'."""
        value = getattr(self, limit)
        shown = {"memory": _bytes(value), "disk": _bytes(value), "cpu": f"{value} s"}.get(limit, str(value))
        return f"{NAMES[limit]} limit {shown}"

    def describe(self, processes_enforced: bool = True) -> str:
        text = ", ".join(self.name(limit) for limit in NAMES)
        return text + ("" if processes_enforced else " (processes: not enforced: root without a pids cgroup)")

    def rlimits(self, extra_processes: int = 0) -> dict[int, int]:
        """{resource: limit}; RLIMIT_NPROC only where Linux counts it (not for root)."""
        found = {resource.RLIMIT_AS: self.memory, resource.RLIMIT_CPU: self.cpu,
                 resource.RLIMIT_FSIZE: self.disk, resource.RLIMIT_CORE: 0}
        if os.geteuid() != 0:
            found[resource.RLIMIT_NPROC] = self.processes + extra_processes
        return found


# Cgroups: a pids and a memory cgroup per submission, under the grader's own cgroups (v1, one
# hierarchy per controller, or v2, the unified one), where they can be made.

def _own_cgroups() -> dict[str, Path]:
    """{controller: the folder of this process's cgroup} for the pids and memory controllers."""
    found = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in ("pids", "memory"):
            if controllers == "" and controller not in found:  # v2
                folder = Path("/sys/fs/cgroup") / path.lstrip("/")
                if (folder / "cgroup.controllers").is_file() and controller in \
                        (folder / "cgroup.controllers").read_text().split():
                    found[controller] = folder
            elif controller in controllers.split(","):
                found[controller] = Path("/sys/fs/cgroup") / controller / path.lstrip("/")
    return found


def sweep() -> None:
    """Remove the cgroups that a grader which was stopped left (named after its process)."""
    for parent in _own_cgroups().values():
        for stale in parent.glob("posenc-grade-*-*"):
            if not Path(f"/proc/{stale.name.split('-')[2]}").exists():
                try:
                    stale.rmdir()
                except OSError:  # still holds a process that is ending
                    pass


class Cgroups:
    """The submission's cgroups (made by the grader before the kernel starts, removed after the
    sandbox has ended): paths, for the launcher to join; hits(), the limits they enforced."""

    def __init__(self, name: str, limits: Limits):
        self.limits, self.folders = limits, {}
        sweep()
        for controller, parent in _own_cgroups().items():
            folder = parent / name
            try:
                folder.mkdir()
            except OSError:
                continue
            try:
                if controller == "pids":
                    (folder / "pids.max").write_text(str(limits.processes))
                elif (folder / "memory.max").exists():  # v2
                    (folder / "memory.max").write_text(str(limits.memory + limits.disk))
                    (folder / "memory.swap.max").exists() and (folder / "memory.swap.max").write_text("0")
                else:
                    (folder / "memory.limit_in_bytes").write_text(str(limits.memory + limits.disk))
                self.folders[controller] = folder
            except OSError:
                folder.rmdir()

    def widen(self, extra: int) -> None:
        """Raise the process limit by extra (room for the kernel's threads once the notebook's
        cells, which ran into it, have run)."""
        if "pids" in self.folders:
            (self.folders["pids"] / "pids.max").write_text(str(self.limits.processes + extra))

    def paths(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in self.folders.values()]

    def _read(self, controller: str, name: str) -> str:
        try:
            return (self.folders[controller] / name).read_text()
        except (KeyError, OSError):
            return ""

    def hits(self) -> list[str]:
        """The limits these cgroups enforced: 'memory' (a process killed), 'processes' (a fork
        refused)."""
        found = []
        events = self._read("memory", "memory.events") or self._read("memory", "memory.oom_control")
        if re.search(r"^oom_kill [1-9]", events, re.M):
            found.append("memory")
        if re.search(r"^max [1-9]", self._read("pids", "pids.events"), re.M):
            found.append("processes")
        return found

    def remove(self, wait: float = 5.0) -> None:
        """Remove the cgroups, once the processes in them have ended (within wait seconds)."""
        import time
        deadline = time.monotonic() + wait
        for folder in self.folders.values():
            while True:
                try:
                    folder.rmdir()
                    break
                except OSError:  # a process killed with the sandbox is still ending
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)


def processes_enforced() -> bool:
    """Whether the process limit holds here: a pids cgroup can be made, or this user is not root."""
    if os.geteuid() != 0:
        return True
    probe = Cgroups(f"posenc-probe-{os.getpid()}", Limits())
    try:
        return "pids" in probe.folders
    finally:
        probe.remove()


def user_processes() -> int:
    """The tasks (processes and threads) of this user now (what RLIMIT_NPROC counts)."""
    uid, count = os.getuid(), 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        match = re.search(r"^Uid:\s+(\d+)", text, re.M)
        threads = re.search(r"^Threads:\s+(\d+)", text, re.M)
        if match and int(match[1]) == uid:
            count += int(threads[1]) if threads else 1
    return count


def launcher(limits: Limits, cgroups: Cgroups) -> list[str]:
    """The command line to put in front of the sandbox's: this file, run as the launcher."""
    spec = {"limits": asdict(limits), "extra": 0 if os.geteuid() == 0 or "pids" in cgroups.folders
            else user_processes()}
    return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), json.dumps(spec),
            *cgroups.paths(), "--"]


# Reasons: a notebook's cell errors, and how its kernel ended, named by the limit that caused them.
ERRORS = {
    "memory": ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "DefaultCPUAllocator"),
    "processes": ("BlockingIOError", "Resource temporarily unavailable", "can't start new thread"),
    "disk": ("No space left on device", "File too large"),
}


def limit_of(error: str) -> str | None:
    """The limit (memory, processes, disk) a cell's error names, or None."""
    for limit, marks in ERRORS.items():
        if any(mark in error for mark in marks):
            return limit
    return None


def main(argv: list[str]) -> None:
    """Launcher: join the cgroups, set the rlimits, execute the command."""
    split = argv.index("--")
    spec = json.loads(argv[0])
    for procs in argv[1:split]:
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))
    for kind, value in Limits(**spec["limits"]).rlimits(spec["extra"]).items():
        hard = value + 5 if kind == resource.RLIMIT_CPU else value  # SIGXCPU first, then SIGKILL
        resource.setrlimit(kind, (value, hard))
    command = argv[split + 1:]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
