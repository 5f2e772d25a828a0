"""Grade submissions with their code and their grader in two processes: data crosses, code does not.

    python grading/sealed.py < requests (one JSON line each) > answers (one JSON line each)

This process is the *grader*: for each request it reads from its standard input (a notebook and
the autograder's test files: Otter-Grader's exception-based format, ``tests/qN.py`` in the zip,
which ``grade.py`` read from the zip once, before any submission ran), it starts a Jupyter
kernel for that *submission* (``nbclient``) in the sandbox the request gives (the ``bwrap``
command line of ``grading/sandbox.py``: the notebook's folder, the course's Python and the
assignment's part of posenc, no network, its own processes), talking to it over ZeroMQ's ``ipc``
transport (socket files in a folder bound into the sandbox), runs the notebook's code cells
there, and runs the tests here; then it kills the sandbox, waits until every process in it has
ended, answers, and reads the next request, until its input ends. Each submission gets a new kernel; the grader's own imports
(Otter, nbclient, the reference package) are made once for all of them. A test asks for the student's names (``def test_q2(positional_encoding_loop)``)
and receives stand-ins: a value that is data (numbers, strings, NumPy arrays, PyTorch tensors,
lists, tuples and dicts of those) is copied here; a function or any other object (a class, a
module and its methods) stays in the kernel and is called from here, its arguments sent as data
and its return value copied back as data (``np.save`` without pickles, in JSON) or as a stand-in
of another object that stays there. The hidden tests, the reference they compare with (the course's
package ``posenc``, imported here) and the code that decides the score never enter the kernel:
code in the notebook can patch NumPy, Otter or anything else in its own process, and read or
rewrite files, without changing how its returned values are judged.

A check of *how* a function computes (its loops, the lines it runs, what it calls) needs the
function itself: a test sends the source of a helper of its own to the kernel and calls it there
with the function (``run_in_kernel``, the stand-in's method). That check runs in the submission's
process, so code written to deceive it can; the values a function returns cannot.

The rule that keeps the expected values out of the kernel: a test sends the kernel inputs only
and compares here. Whatever the kernel holds while the student's code runs (a helper's source,
its arguments, its locals) the student's code can read, by walking its caller's frames or
otherwise. So a helper run with ``run_in_kernel`` makes objects or observations and returns
them, never a verdict it was told: objects that are not data (classes, modules, functions)
come back as stand-ins, which a test passes to the student's function from here (``check(cls)``,
the call crossing with its handle only) and whose results it compares here. A helper must not
hold an expected value, nor a name or docstring that gives it away.

What the notebook may import of posenc is the assignment's environment (``grading/sandbox.py``):
for build-the-encoding and debug-the-module a stand-in whose import raises "posenc is not
available while grading"; the package's files are not in the sandbox, so no route (``sys.path``,
``importlib``, loading its files by their path, an attribute that keeps it) reaches them.

Time limits: a code cell of the notebook runs at most ``cell_timeout`` seconds (then the
kernel is interrupted and the next cell runs); one call of a student's function from a test at
most ``test_timeout`` seconds (then the test fails with "time limit", and so does every later
call of the same question, at once). A cell or call that goes on when interrupted (a bare
``except:`` around its loop catches the interrupt) gets ``GRACE`` more seconds, then its kernel
is ended and a new one started (``Session``): the notebook's cells run again without that cell,
and the questions after it are graded there. The caller (``grade.py``) stops this whole
process, with the kernel, if a submission takes longer than its own limit, and starts a new
grader for the next one.

Resource limits (``grading/limits.py``): the kernel starts behind the launcher of limits.py
(rlimits, and the submission's pids and memory cgroups where they can be made); a cell that
crosses one fails and the notebook goes on, a kernel killed by one ends the grading of its
notebook; the answer's ``stopped`` names each limit met. The kernel runs without capabilities
and may add no file to the folder of its sockets once it has started (as root).

Results cross in the reply to each request only: the grader sends ``_sealed_.put(...)`` with
the user expression ``_sealed_.take()``, and reads its value from the ``execute_reply`` whose
parent is that request (the shell channel). What the notebook displays meanwhile (IOPub) is
never read, and a second reply to a request (sent with the kernel's own session) fails it.

A request (one line of standard input, JSON): ``{"token": ..., "notebook": path, "tests":
{path: source}, "skip": [cell sources not to run, the handed-out check cells], "sandbox":
[the command line that runs a Python in the sandbox], "sockets": folder of the kernel's ipc
sockets (bound into the sandbox), "test_timeout": s, "cell_timeout": s, "limits": {memory, processes,
cpu, disk}}``. Its answer (one line of standard output): ``{"token": ..., "questions": {name:
{"score", "possible", "output", "public"}}, "errors": [...], "stopped": [limits met]}``
(``output``: every test's result, hidden ones included, for the instructor; ``public``: the
public tests' only; ``errors``: the errors the notebook's own cells raised, at most 20) or ``{"token": ..., "error": "..."}``. The kernel's own output goes nowhere; the token, which
only this process and its caller know (a new one per request), marks the answer as this
process's answer to that request.

The grader runs outside the sandbox and the kernel inside: the kernel cannot see the grader's
process (its own process namespace), its files (only its folder is bound), the tests (sent to
this process only) or where the grades go, and no process it starts outlives it.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat


# Data between the two processes (grading/crossing.py): the same functions run on both sides,
# KERNEL_SIDE sends their source to the kernel.
sys.path.insert(0, str(Path(__file__).resolve().parent))  # grading/'s scripts import each other by name
import crossing  # noqa: E402
_key, encode, decode, kernel_server = crossing._key, crossing.encode, crossing.decode, crossing.kernel_server


# Defines _sealed_ in the kernel, after the notebook's cells ran, from the functions above (in a
# namespace of their own: the notebook's names are left alone).
_SHARED = "\n\n".join(inspect.getsource(f) for f in (_key, encode, decode, kernel_server))
KERNEL_SIDE = f"""
def _sealed_make(code):
    namespace = {{"get_ipython": get_ipython}}
    exec(code, namespace)
    return namespace["kernel_server"]()
_sealed_ = _sealed_make({_SHARED!r})
del _sealed_make
'{{}}'
"""


GRACE = 5.0  # seconds a kernel has to stop once interrupted


class Kernel:
    """The submission's kernel: runs the notebook, then answers the tests' requests."""

    def __init__(self, client, test_timeout: float):
        self.client, self.test_timeout = client, test_timeout
        self.question = ""
        self.timed_out: set[str] = set()  # questions whose calls ran out of time once
        self._msg_ids: list[str] = []  # the requests sent
        self._plain_execute, self._expressions, self.stuck = client.kc.execute, False, False
        client.kc.execute = self._execute

    def run(self, source: str, timeout: float):
        """Run source in the kernel; its result (a JSON string the kernel side returns), parsed.

        The result is read from the reply to this request only: the ``execute_reply`` whose
        parent is this request's message (the shell channel), where the kernel puts the value of
        ``_sealed_.take()`` (a user expression, evaluated after source has run). What the
        notebook's code displays or sends on the way (``get_ipython().displayhook(...)``, any
        output: the IOPub channel) is never read as a result, and a second reply to the same
        request (sent with the kernel's own session) makes the request fail, whichever came
        first."""
        cell = nbformat.v4.new_code_cell(f"_sealed_.put(lambda: {source})" if source != KERNEL_SIDE else source)
        reply = self._execute_cell(cell, 0, timeout, expressions=True)
        if self._extra_replies():
            raise Forged("the notebook sent replies of its own to the grader's request "
                               "(the kernel's session used to forge a result)")
        answer = reply.get("content", {}).get("user_expressions", {}).get("answer", {})
        if answer.get("status") == "ok" and "text/plain" in answer.get("data", {}):
            try:
                return json.loads(ast.literal_eval(answer["data"]["text/plain"]))
            except (ValueError, SyntaxError):
                pass
        errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
        raise RuntimeError("the notebook's kernel gave no answer" + (f" ({errors[0]})" if errors else ""))

    def cell(self, cell, index: int) -> None:
        """Run one of the notebook's cells (within the client's cell time limit)."""
        if self._execute_cell(cell, index, self.client.timeout, store_history=True).get("late"):
            cell.outputs.append(nbformat.v4.new_output("error", ename="TimeoutError", evalue=(
                f"time limit: the cell ran longer than {self.client.timeout:g} s and was interrupted"), traceback=[]))

    def _execute_cell(self, cell, index: int, timeout: float, expressions: bool = False,
                      store_history: bool = False) -> dict:
        """Execute cell; the kernel's reply to it ("late": True when it came after the time
        limit's interrupt). Raises Stuck when no reply came within GRACE seconds of the
        interrupt (the kernel then answers nothing more: self.stuck)."""
        self.client.timeout, self._expressions = timeout, expressions
        replies = []
        self.client.on_cell_executed = lambda cell, cell_index, execute_reply: replies.append(execute_reply)
        try:
            self.client.execute_cell(cell, index, store_history=store_history)
        finally:
            self.client.on_cell_executed = None
        sent = self._msg_ids[-1]
        reply = next((r for r in replies if "header" in r and r["parent_header"].get("msg_id") == sent), None)
        if reply is None:  # nbclient's own error reply after the time limit's interrupt
            reply = self._reply(sent, GRACE)
            if reply is None:
                self.stuck = True
                raise Stuck(f"time limit: this ran longer than {timeout:g} s and went on when interrupted "
                            "(an except: that catches the interrupt?)")
            reply["late"] = True
        return reply

    def _execute(self, code, *args, **kwargs):
        """The kernel client's execute, with the user expression that carries the answer."""
        expressions = {"answer": "_sealed_.take()"} if self._expressions else {}
        msg_id = self._plain_execute(code, *args, user_expressions=expressions, **kwargs)
        self._msg_ids.append(msg_id)
        return msg_id

    def _reply(self, msg_id: str, timeout: float) -> dict | None:
        """The kernel's reply to msg_id, read from the shell channel within timeout s, or None."""
        import time
        from jupyter_core.utils import run_sync
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = run_sync(self.client.kc.shell_channel.get_msg)(timeout=max(deadline - time.monotonic(), 0.001))
            except Exception:  # queue.Empty: nothing came
                return None
            if message.get("parent_header", {}).get("msg_id") == msg_id:
                return message
        return None

    def _extra_replies(self) -> bool:
        """Whether the shell channel holds another reply to a request sent."""
        from jupyter_core.utils import run_sync
        extra = False
        while True:
            try:
                message = run_sync(self.client.kc.shell_channel.get_msg)(timeout=0.001)
            except Exception:  # queue.Empty
                return extra
            extra |= message.get("parent_header", {}).get("msg_id") in self._msg_ids

    def request(self, source: str):
        """Run one request of a test within the time limit; the value, or the error it raised."""
        if self.stuck:
            raise TimeoutError(f"time limit: an earlier call of {self.question} did not stop when interrupted")
        if self.question in self.timed_out:
            raise TimeoutError(f"time limit: an earlier call of {self.question} ran longer than "
                               f"{self.test_timeout:g} s (an infinite loop?)")
        answer = self.run(source, self.test_timeout)
        if "value" in answer:
            return decode(answer["value"], lambda handle, kind: Remote(self, handle, kind))
        name, message = answer.get("raised", "Exception"), answer.get("message", "")
        if name == "KeyboardInterrupt":
            self.timed_out.add(self.question)
            raise TimeoutError(f"time limit: this call ran longer than {self.test_timeout:g} s and "
                               "was stopped (an infinite loop?)")
        error = getattr(builtins, name, None)
        if not (isinstance(error, type) and issubclass(error, Exception)):
            error, message = RuntimeError, f"{name}: {message}"
        raise error(message)

    def names(self) -> set[str]:
        return set(self.run("_sealed_.names()", self.test_timeout))


class Remote:
    """A test's stand-in for a function or any other object of the notebook, which stays in the
    kernel: calling it, or reading one of its attributes, asks the kernel (arguments and results
    cross as data, or as stand-ins of objects that stay there)."""

    def __init__(self, kernel: Kernel, handle: int, kind: str):
        self._kernel, self._handle, self._kind = kernel, handle, kind

    def __repr__(self):
        return f"<{self._kind} of the notebook>"

    def _payload(self, args, kwargs):
        return json.dumps(encode([list(args), kwargs], keep=_handle_of))

    def __call__(self, *args, **kwargs):
        return self._kernel.request(f"_sealed_.call({self._handle}, {self._payload(args, kwargs)!r})")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._kernel.request(f"_sealed_.attribute({self._handle}, {name!r})")

    def run_in_kernel(self, helper, *args, **kwargs):
        """helper(the student's object, *args, **kwargs), run in the kernel from its source
        (a self-contained function: its imports inside); its return value as data, or as
        stand-ins of the objects it made. args and kwargs are inputs, never expected values
        (the student's code can read them): compare what comes back here."""
        source = textwrap.dedent(inspect.getsource(helper))
        return self._kernel.request(f"_sealed_.probe({source!r}, {helper.__name__!r}, {self._handle}, "
                                    f"{self._payload(args, kwargs)!r})")


def _handle_of(value):
    """The kernel's number of the object a stand-in stands for (anything else is not data)."""
    if isinstance(value, Remote):
        return value._handle
    raise TypeError(f"only data can be sent to the notebook, not {type(value).__name__}")


class Environment(dict):
    """The global environment Otter's test cases receive: the notebook's names, as data or as
    stand-ins."""

    def __init__(self, kernel: Kernel):
        super().__init__()
        self.kernel, self.error = kernel, None
        try:
            self.known = kernel.names()
        except (TimeoutError, Forged) as error:  # every test then says what happened
            self.known, self.error = set(), error

    def get(self, name, default=None):
        if self.error is not None:
            raise self.error
        if name not in self.known:
            return default
        try:
            return self.kernel.request(f"_sealed_.get({name!r})")
        except (TimeoutError, Forged):  # named as they are, not as a name that is missing
            raise
        except Exception:  # a name whose value cannot be read: as if it were not there
            return default


def test_files(tests: dict[str, str]):
    """Otter's test files from their sources, held in this process only (linecache gives the
    tests' helpers their source, for run_in_kernel, without a file anyone could rewrite)."""
    import linecache
    from otter.test_files import ExceptionTestFile
    found = []
    for name, source in tests.items():
        path = f"<autograder {name}>"
        linecache.cache[path] = (len(source), None, source.splitlines(keepends=True), path)
        found.append(ExceptionTestFile.from_string(source, path=path))
    return found


def _kernel_manager(command: list[str], sockets: Path):
    """A kernel manager that starts its kernel behind command (the sandbox's bwrap command line,
    ending with the Python to run) and talks to it over ZeroMQ's ipc transport, with socket
    files in sockets (a folder bound into the sandbox: the sandbox has no network)."""
    from jupyter_client.manager import AsyncKernelManager

    class SandboxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            # The kernel spec's command is [python, -m, ipykernel_launcher, -f, connection file].
            return [*command, *super().format_kernel_cmd(extra_arguments)[1:]]

    if len(str(sockets / "k-65535").encode()) > 100:  # a socket's path has at most 107 bytes
        raise RuntimeError(f"the path of the kernel's sockets is too long ({sockets}): set TMPDIR to a shorter folder")
    manager = SandboxedKernelManager(kernel_name="python3", transport="ipc", ip=str(sockets / "k"),
                                     connection_file=str(sockets / "k.json"))
    # Interrupts as messages: the kernel interrupts itself (a signal from here would reach
    # bwrap, not the kernel in its own session).
    manager.kernel_spec.interrupt_mode = "message"
    return manager


class Forged(RuntimeError):
    """A second reply to one of the grader's requests: the notebook's code sent one of its own."""


class Stuck(TimeoutError):
    """A request or cell that ran past its time limit and went on when interrupted (a bare
    ``except:`` in a loop catches the interrupt): its kernel answers nothing more."""


class Session:
    """The notebook's kernel in the sandbox, its cells run; started again (without the cells
    that would not stop, or that a limit killed it in) when a request of the tests would not
    stop or a limit killed it, so that the questions after it are still graded."""

    def __init__(self, nb, notebook: Path, sockets: Path, command: list[str], cell_timeout: float,
                 test_timeout: float, skip: set[str], cgroups):
        self.nb, self.notebook, self.sockets, self.command = nb, notebook, sockets, command
        self.cell_timeout, self.test_timeout, self.skip, self.cgroups = cell_timeout, test_timeout, skip, cgroups
        self.never_stopped: set[int] = set()  # cells left out of a new start
        self.process, self.inits, self.died, self.stack = None, [], False, None
        self.killed: list[str] = []  # the limits that killed a kernel, and where

    def start(self, errors: list[str]) -> Kernel | None:
        """A new kernel, the notebook's cells run in it (their errors added to errors); its
        Kernel, or None if it died."""
        import contextlib
        from nbclient import NotebookClient
        from nbclient.exceptions import DeadKernelError
        manager = _kernel_manager(self.command, self.sockets)
        client = NotebookClient(self.nb, km=manager, timeout=self.cell_timeout, allow_errors=True,
                                interrupt_on_timeout=True, shutdown_kernel="immediate",
                                error_on_timeout={"ename": "TimeoutError", "evalue": "time limit"},
                                resources={"metadata": {"path": str(self.notebook.parent)}})
        if os.geteuid() == 0:  # the kernel (root without capabilities) may add no file once started
            os.chown(self.sockets, 65534, -1)
            self.sockets.chmod(0o777)
        self.stack = contextlib.ExitStack()
        self.stack.enter_context(client.setup_kernel(cwd=str(self.notebook.parent), cleanup_kc=True,
                                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.sockets.chmod(0o755)
        self.process = manager.provisioner.process  # the launcher, then bwrap
        self.inits = _children(self.process.pid)  # the init of the sandbox's processes
        kernel = Kernel(client, self.test_timeout)
        try:
            for index, cell in enumerate(self.nb.cells):
                if cell.cell_type != "code" or cell.source.strip() in self.skip or index in self.never_stopped:
                    continue
                try:
                    kernel.cell(cell, index)
                except Stuck:
                    self.never_stopped.add(index)
                    errors.append(f"cell {index + 1}: time limit: it ran longer than {self.cell_timeout:g} s and "
                                  "went on when interrupted (an except: that catches the interrupt?); "
                                  "graded without it")
                    return self.restart(errors)
                except DeadKernelError:  # killed at a limit: the notebook graded without that cell
                    self.stop()
                    self.died, why = False, self.cause()
                    self.never_stopped.add(index)
                    self.killed.append(f"{why} in cell {index + 1}")
                    errors.append(f"cell {index + 1}: {why}; graded without it")
                    return self.start(errors)
                errors += [f"cell {index + 1}: {o.ename}: {o.evalue}"[:300] for o in cell.outputs
                           if o.output_type == "error"]
            if "processes" in self.cgroups.hits():  # the kernel needs room (threads) to answer the tests
                self.cgroups.widen(32)
            kernel.run(KERNEL_SIDE, self.test_timeout)  # defines _sealed_ in the kernel
            return kernel
        except DeadKernelError:
            self.died = True
            return None

    def cause(self) -> str:
        """What ended the kernel: the limit that killed it, where one did."""
        limits, status, hits = self.cgroups.limits, self.process.returncode, self.cgroups.hits()
        cause = ("cpu" if status in (128 + 24, -24) else "memory" if "memory" in hits else
                 "processes" if "processes" in hits else None)
        return f"{limits.name(cause)}: the kernel was killed" if cause else "the kernel died (it exited, or was killed)"

    def restart(self, errors: list[str]) -> Kernel | None:
        self.stop()
        return self.start(errors)

    def stop(self) -> None:
        """End the kernel and wait until every process of its sandbox has ended."""
        if self.process is not None:
            self.died = self.died or self.process.poll() is not None  # ended before it was ended
            if self.process.poll() is None:
                self.process.kill()
            self.stack.close()
            self.process.wait()
            _wait_ended(self.inits)


def grade(tests: dict[str, str], notebook: Path, *, test_timeout: float, cell_timeout: float,
          sandbox: list[str], sockets: Path, skip: set[str], limits: dict | None = None) -> dict:
    """Run the notebook in a kernel of its own, in the sandbox (sandbox: the command line that
    starts it; sockets: the folder of its ipc sockets) within limits (grading/limits.py: rlimits
    and, where they can be made, cgroups), and the tests here; the results by question, with
    the limits the notebook ran into ("stopped"), once the sandbox and every process in it have
    ended."""
    import limits as limiting
    bounds = limiting.Limits(**limits) if limits else limiting.Limits()
    cgroups = limiting.Cgroups(f"posenc-grade-{os.getpid()}-{sockets.parent.name}", bounds)
    files = test_files(tests)
    session = Session(nbformat.read(notebook, as_version=4), notebook, sockets,
                      [*limiting.launcher(bounds, cgroups), *sandbox], cell_timeout, test_timeout, skip, cgroups)
    questions, errors = {}, []
    try:
        kernel = session.start(errors)
        for test_file in files:
            if kernel is None:
                break
            kernel.question = test_file.name
            test_file.run(Environment(kernel))
            questions[test_file.name] = {
                "score": test_file.score, "possible": test_file.possible,
                "output": test_file.summary(), "public": test_file.summary(public_only=True)}
            if session.process.poll() is not None:  # killed at a limit: the next questions in a new kernel
                session.stop()
                session.died = False
                session.killed.append(f"{session.cause()} in {test_file.name}'s tests")
                kernel = session.start([])
            elif kernel.stuck:  # the next questions in a new kernel
                kernel = session.restart([])
    finally:
        session.stop()
        hits = cgroups.hits()
        cgroups.remove()
    stopped = [f"{bounds.name(limit)} ({error.split(': ', 2)[0]}: {error.split(': ', 2)[1]})" for error in errors
               if (limit := limiting.limit_of(error))]
    stopped += session.killed
    if session.died:
        why = session.cause() if session.process is not None else "the kernel died"
        if not questions:
            raise RuntimeError(f"stopped: {why}")
        stopped.append(why)
    stopped += [bounds.name(limit) + {"memory": " (a process was killed)"}.get(limit, " (a process could not start)")
                for limit in hits if not any(s.startswith(bounds.name(limit)) for s in stopped)]
    return {"questions": questions, "errors": errors[:20], "stopped": list(dict.fromkeys(stopped)),
            "executed": session.nb}  # the notebook as it ran: grading/manual.py's pages


def _children(pid: int) -> list[int]:
    """The processes pid started (from /proc; [] where it cannot tell)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            pass
    return found


def _wait_ended(inits: list[int], timeout: float = 30.0) -> None:
    """Wait until each init of a process namespace has ended (a zombie, or gone): the kernel ends
    an init only after every process of its namespace (bwrap may exit just before)."""
    import time
    deadline = time.monotonic() + timeout
    for pid in inits:
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                break
            if state in ("Z", "X"):
                break
            time.sleep(0.01)
        else:
            raise RuntimeError("the sandbox's processes did not end")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        token = None
        try:
            request = json.loads(line)
            token = request.get("token")
            results = grade(request["tests"], Path(request["notebook"]).resolve(),
                            test_timeout=float(request.get("test_timeout", 30.0)),
                            cell_timeout=float(request.get("cell_timeout", 30.0)),
                            sandbox=[str(a) for a in request["sandbox"]],
                            sockets=Path(request["sockets"]), skip=set(request.get("skip", ())),
                            limits=request.get("limits"))
        except Exception as error:  # reported in the CSV, not as a traceback
            results = {"error": f"{type(error).__name__}: {error}"}
        out.write("\n" + json.dumps({"token": token, **results}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
