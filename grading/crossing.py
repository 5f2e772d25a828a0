"""The data that crosses between a graded notebook's kernel and its grader (``grading/sealed.py``):
JSON, with arrays as .npy bytes (no pickles) in base64, and any other object as a handle that
the kernel keeps. The same functions run on both sides: ``sealed.KERNEL_SIDE`` sends their
source to the kernel, where ``kernel_server`` answers the grader's requests.
"""

from __future__ import annotations


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

    answers = []  # the answer of the request running, for the reply's user expression

    def put(compute):
        answers[:] = [compute()]

    def take():
        return answers.pop() if answers else json.dumps({"raised": "RuntimeError", "message": "no answer"})

    return types.SimpleNamespace(get=lambda name: reply(lambda: user[name]), call=call,
                                 attribute=attribute, probe=probe, names=names, put=put, take=take)


