"""Grade submissions with their code and their grader in two processes: data crosses, code does not.

    python tools/sealed.py < requests (one JSON line each) > answers (one JSON line each)

This process is the *grader*: for each request it reads from its standard input (a notebook and
the autograder's test files: Otter-Grader's exception-based format, ``tests/qN.py`` in the zip,
which ``grade.py`` read from the zip once, before any submission ran), it starts a Jupyter
kernel for that *submission* (``nbclient``) in the sandbox the request gives (the ``bwrap``
command line of ``tools/sandbox.py``: the notebook's folder, the course's Python and the
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

What the notebook may import of posenc is the assignment's environment (``tools/sandbox.py``):
for build-the-encoding and debug-the-module a stand-in whose import raises "posenc is not
available while grading"; the package's files are not in the sandbox, so no route (``sys.path``,
``importlib``, loading its files by their path, an attribute that keeps it) reaches them.

Time limits: a code cell of the notebook runs at most ``cell_timeout`` seconds (then the
kernel is interrupted and the next cell runs); one call of a student's function from a test at
most ``test_timeout`` seconds (then the test fails with "time limit", and so does every later
call of the same question, at once). The caller (``grade.py``) stops this whole process, with
the kernel, if a submission takes longer than its own limit, and starts a new grader for the
next one.

A request (one line of standard input, JSON): ``{"token": ..., "notebook": path, "tests":
{path: source}, "skip": [cell sources not to run, the handed-out check cells], "sandbox":
[the command line that runs a Python in the sandbox], "sockets": folder of the kernel's ipc
sockets (bound into the sandbox), "test_timeout": s, "cell_timeout": s}``. Its answer (one line of standard output):
``{"token": ..., "questions": {name: {"score", "possible", "output", "public"}}, "errors": [...]}``
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

# Data between the two processes: JSON, with arrays as .npy bytes (no pickles) in base64. The
# same functions run on both sides: KERNEL_SIDE sends their source to the kernel.

def _key(value):
    """A dict key from the other side (a list, which is not hashable, becomes a tuple)."""
    return tuple(value) if isinstance(value, list) else value


def encode(value, depth=0, keep=None):
    """value as JSON-able data: numbers, strings, arrays (and PyTorch tensors), lists, tuples and
    dicts of those; any other object as {"handle": keep(value)} (the kernel keeps the object and
    gives its number; the grader gives the number of a stand-in's object)."""
    import base64
    import io
    import numpy
    # NumPy's scalars first: numpy.float64 is also a float (and numpy.str_ a str), and each
    # crosses as the value it is, with its dtype.
    if isinstance(value, (numpy.ndarray, numpy.generic)) and value.dtype != object:
        buffer = io.BytesIO()
        numpy.save(buffer, numpy.asarray(value), allow_pickle=False)
        kind = "ndarray" if isinstance(value, numpy.ndarray) else "scalar"
        return {kind: base64.b64encode(buffer.getvalue()).decode()}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": float.__repr__(value)}  # nan and inf included
    if depth > 50:
        raise ValueError("data nested more than 50 levels")
    if type(value).__name__ == "Tensor" and type(value).__module__.split(".")[0] == "torch":
        dtype = str(value.dtype).split(".")[-1]  # NumPy has no bfloat16: sent as float32
        array = value.detach().cpu().float() if dtype == "bfloat16" else value.detach().cpu()
        return {"tensor": encode(array.numpy())["ndarray"], "dtype": dtype}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [encode(v, depth + 1, keep) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k, depth + 1, keep), encode(v, depth + 1, keep)] for k, v in value.items()]}
    if keep is None:
        raise TypeError(f"only data can cross between the grader and the notebook, not {type(value).__name__}")
    return {"handle": keep(value), "type": type(value).__name__}


def decode(value, find=None):
    """The values encode() made, back (arrays loaded without pickles; tensors need PyTorch); a
    handle becomes find(handle, type name)."""
    import base64
    import io
    import numpy
    if not isinstance(value, dict):
        return value
    kind = next(k for k in value if k not in ("dtype", "type"))
    data = value[kind]
    if kind == "float":
        return float(data)
    if kind in ("ndarray", "scalar", "tensor"):
        array = numpy.load(io.BytesIO(base64.b64decode(data)), allow_pickle=False)
        if kind == "tensor":
            import torch
            return torch.from_numpy(array.copy()).to(getattr(torch, value["dtype"]))
        return array if kind == "ndarray" else array[()]
    if kind in ("list", "tuple"):
        return (list if kind == "list" else tuple)(decode(v, find) for v in data)
    if kind == "dict":
        return {_key(decode(k, find)): decode(v, find) for k, v in data}
    if kind == "handle" and find is not None:
        return find(int(data), str(value.get("type")))
    raise ValueError(f"unknown data: {kind}")


def kernel_server():
    """The kernel's side of the exchange (run in the kernel only): each request's answer is a JSON
    string, {"value": data} or {"raised": the error's type, "message": ...}."""
    import json
    import types
    user = get_ipython().user_ns  # noqa: F821 (the kernel's IPython)
    objects = {}  # the objects the grader holds stand-ins for, by number

    def keep(value):
        objects[id(value)] = value
        return id(value)

    def reply(compute):
        try:
            return json.dumps({"value": encode(compute(), keep=keep)})
        except BaseException as error:  # KeyboardInterrupt: the grader's time limit
            return json.dumps({"raised": type(error).__name__, "message": str(error)[:2000]})

    def arguments(payload):
        return decode(json.loads(payload), lambda handle, _: objects[handle])

    def call(handle, payload):
        args, kwargs = arguments(payload)
        return reply(lambda: objects[handle](*args, **kwargs))

    def attribute(handle, name):
        return reply(lambda: getattr(objects[handle], name))

    def probe(source, helper, handle, payload):
        namespace = {}
        exec(source, namespace)
        args, kwargs = arguments(payload)
        del source, payload  # what the student's code may find in this frame: the inputs only
        return reply(lambda: namespace[helper](objects[handle], *args, **kwargs))

    def names():
        return json.dumps(sorted(n for n in user if not n.startswith("_")))

    return types.SimpleNamespace(get=lambda name: reply(lambda: user[name]), call=call,
                                 attribute=attribute, probe=probe, names=names)


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


class Kernel:
    """The submission's kernel: runs the notebook, then answers the tests' requests."""

    def __init__(self, client, test_timeout: float):
        self.client, self.test_timeout = client, test_timeout
        self.question = ""
        self.timed_out: set[str] = set()  # questions whose calls ran out of time once

    def run(self, source: str, timeout: float):
        """Run source in the kernel; its result (a JSON string the kernel side returns), parsed."""
        from nbclient.exceptions import DeadKernelError
        cell = nbformat.v4.new_code_cell(source)
        self.client.timeout = timeout
        try:
            self.client.execute_cell(cell, 0, store_history=False)
        except DeadKernelError:
            raise RuntimeError("the notebook's kernel died (it ran out of memory, or exited)") from None
        for output in cell.outputs:
            if output.output_type == "execute_result" and "text/plain" in output.data:
                try:
                    return json.loads(ast.literal_eval(output.data["text/plain"]))
                except (ValueError, SyntaxError):
                    break
        errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
        raise RuntimeError("the notebook's kernel gave no answer" + (f" ({errors[0]})" if errors else ""))

    def request(self, source: str):
        """Run one request of a test within the time limit; the value, or the error it raised."""
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
        self.kernel, self.known = kernel, kernel.names()

    def get(self, name, default=None):
        if name not in self.known:
            return default
        try:
            return self.kernel.request(f"_sealed_.get({name!r})")
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


def grade(tests: dict[str, str], notebook: Path, *, test_timeout: float, cell_timeout: float,
          sandbox: list[str], sockets: Path, skip: set[str]) -> dict:
    """Run the notebook in a kernel of its own, in the sandbox (sandbox: the command line that
    starts it; sockets: the folder of its ipc sockets), and the tests here; the results by
    question, once the sandbox and every process in it have ended."""
    from nbclient import NotebookClient
    files = test_files(tests)
    nb = nbformat.read(notebook, as_version=4)
    manager = _kernel_manager(sandbox, sockets)
    client = NotebookClient(nb, km=manager, timeout=cell_timeout, allow_errors=True,
                            interrupt_on_timeout=True, shutdown_kernel="immediate",
                            resources={"metadata": {"path": str(notebook.parent)}})
    process = None
    try:
        with client.setup_kernel(cwd=str(notebook.parent), cleanup_kc=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            process = manager.provisioner.process  # bwrap
            inits = _children(process.pid)  # the init of the sandbox's processes
            errors = []  # the errors the notebook's own cells raised, for the feedback
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "code" and cell.source.strip() not in skip:
                    client.execute_cell(cell, index)
                    errors += [f"cell {index + 1}: {o.ename}: {o.evalue}"[:300]
                               for o in cell.outputs if o.output_type == "error"]
            kernel = Kernel(client, test_timeout)
            kernel.run(KERNEL_SIDE, test_timeout)  # defines _sealed_ in the kernel
            environment = Environment(kernel)
            questions = {}
            for test_file in files:
                kernel.question = test_file.name
                test_file.run(environment)
                questions[test_file.name] = {
                    "score": test_file.score, "possible": test_file.possible,
                    "output": test_file.summary(), "public": test_file.summary(public_only=True)}
    finally:
        if process is not None:  # the sandbox is gone before anything is answered
            if process.poll() is None:
                process.kill()
            process.wait()
            _wait_ended(inits)
    return {"questions": questions, "errors": errors[:20], "executed": nb}  # nb: for tools/manual.py


def _children(pid: int) -> list[int]:
    """The processes pid started (from /proc; [] where it cannot tell)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


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
                            sockets=Path(request["sockets"]), skip=set(request.get("skip", ())))
        except Exception as error:  # reported in the CSV, not as a traceback
            results = {"error": f"{type(error).__name__}: {error}"}
        out.write("\n" + json.dumps({"token": token, **results}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
