"""debug-the-module's checks: the helpers its tests carry (observe, agree, values, built, overrides,
verdicts; variant.py copies their source into the test cells, the same text in every copy) and
question 7's modules, with the reference judgement that checks their expected verdicts."""

TOLERANCE = 1e-6  # the same everywhere: outputs, and question 7's comparison with the formula

# The tests' helpers: defined here, copied into the test cells (the same text in every copy).

def observe(cls, base, more=False):
    """What a user of the module class cls sees, as data: {case: observation}. A case builds
    cls(d_model, max_len=..., dropout=...) and calls it as the specification says; an observation
    is (dtype, output) or "raises", for dropout (same output twice in eval mode, share of zeros
    in training, scale of what is kept), and whether the module keeps a buffer. cls=None gives what
    the specification asks for (the formula with this base); more=True adds cases."""
    import numpy as np
    import torch
    cases = {"3 sentences of 5 tokens": (8, 3, 5, 0, 64, "float64"), "offset 9": (8, 2, 4, 9, 64, "float64"),
             "d_model 7": (7, 2, 3, 5, 64, "float64"), "the end of the table": (8, 1, 4, 60, 64, "float64"),
             "positions near 4000": (16, 2, 3, 4090, 5000, "float64"), "a float32 input": (6, 2, 3, 2, 64, "float32")}
    if more:
        cases.update({"d_model 1": (1, 2, 3, 1, 16, "float64"), "d_model 33": (33, 3, 2, 7, 32, "float64"),
                      "positions near 2050": (10, 1, 6, 2047, 2100, "float64"), "one token": (4, 5, 1, 3, 8, "float32")})
    rng = np.random.default_rng(46)
    seen = {}
    for case, (d_model, batch, seq_len, offset, max_len, dtype) in cases.items():
        x = rng.standard_normal((batch, seq_len, d_model))
        if cls is None:
            angles = np.arange(offset, offset + seq_len)[:, None] * base ** (-2 * (np.arange(d_model) // 2) / d_model)
            out = x + np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
            seen[case] = (dtype, out.astype(dtype).astype(np.float64))
            continue
        try:
            module = cls(d_model, max_len=max_len, dropout=0.0)
            module.eval()
            with torch.no_grad():
                out = module(torch.from_numpy(x).to(getattr(torch, dtype)), offset=offset)
            seen[case] = (str(out.dtype).split(".")[-1], out.double().numpy())
        except Exception:
            seen[case] = "raises"
    if cls is None:
        seen["dropout=0.5"], seen["a buffer"] = (True, "half", "1 / (1 - p)", True), True
        return seen
    try:
        x = torch.ones(8, 50, 16, dtype=torch.float64)
        module, plain = cls(16, max_len=64, dropout=0.5), cls(16, max_len=64, dropout=0.0)
        module.eval()
        plain.eval()
        with torch.no_grad():
            same, expected = bool(torch.equal(module(x), module(x))), plain(x)
            module.train()
            out = module(x)
            fresh = not torch.equal(out, module(x))  # two training-mode calls draw different masks
        zeros, kept = float((out == 0).double().mean()), out != 0
        share = "none" if zeros < 0.02 else "half" if 0.35 < zeros < 0.65 else "other"
        scale = ("1 / (1 - p)" if torch.allclose(out[kept], 2 * expected[kept], rtol=0, atol=1e-6) else
                 "1" if torch.allclose(out[kept], expected[kept], rtol=0, atol=1e-6) else "other")
        seen["dropout=0.5"] = (same, share, scale, fresh)
    except Exception:
        seen["dropout=0.5"] = "raises"
    try:
        seen["a buffer"] = any(b is not None and b.numel() > 0 for b in cls(8, max_len=64)._buffers.values())
    except Exception:
        seen["a buffer"] = "raises"
    return seen


def agree(a, b):
    """Whether two observations are the same: the same kind, dtype and shape, values within 1e-6."""
    import numpy as np
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(agree(u, v) for u, v in zip(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 1e-6))
    return type(a) is type(b) and a == b


def values(observation):
    """An observation without the dtype of its output (question parts that look at values only)."""
    if isinstance(observation, tuple) and len(observation) == 2 and isinstance(observation[0], str):
        return observation[1]
    return observation


def built(source, name="PositionalEncoding"):
    """The class that source defines under name (here, in the grader's process)."""
    import math

    import numpy as np
    import torch
    from torch import nn
    namespace = {"math": math, "np": np, "torch": torch, "nn": nn}
    exec(source, namespace)
    return namespace[name]


def overrides(cls):
    """(the name of cls's first base class, the names of what cls defines itself)."""
    parent = cls.__mro__[1].__name__ if len(cls.__mro__) > 1 else ""
    return parent, sorted(n for n, v in vars(cls).items()
                          if callable(v) or isinstance(v, (staticmethod, classmethod, property)))


def verdicts(check, sources):
    """What check returns for each module class that sources define (each defines Module), as
    data; only the classes cross into the check's process, never what it should return."""
    import math

    import numpy as np
    import torch
    from torch import nn
    found = []
    for source in sources:
        namespace = {"math": math, "np": np, "torch": torch, "nn": nn}
        exec(source, namespace)
        try:
            got = check(namespace["Module"])
        except Exception as error:
            got = f"raised {type(error).__name__}: {error}"
        found.append(got if isinstance(got, str) else bool(got) if type(got).__name__ in ("bool", "bool_")
                     else f"returned {type(got).__name__}")
    return found


# Question 7's modules: each source defines Module (neutral names: the classes are sent to the
# student's process, what the check should say stays in the grader).
Q7_PRELUDE = '''BASE = {base!r}


def table(length, d_model, offset=0, base=BASE):
    position = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
    column = torch.arange(d_model, dtype=torch.float64)
    angles = position * base ** (-2 * (column // 2) / d_model)
    return torch.where(column % 2 == 0, torch.sin(angles), torch.cos(angles))


class Table(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.register_buffer("pe", table(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def rows(self, x, offset):
        return self.pe[offset:offset + x.size(1)]

    def forward(self, x, offset=0):
        return self.dropout(x + self.rows(x, offset).to(x.dtype))
'''

Q7_MODULES = {  # description: (follows the specification, the source's end)
    "correct: a float64 table of max_len rows, sliced": (True, "Module = Table"),
    "correct: a float32 table, its rows gathered one at a time": (True, '''
class Module(Table):
    def rows(self, x, offset):
        return torch.stack([self.pe[offset + r].float() for r in range(x.size(1))])'''),
    "correct: no table, the window computed in forward with exp and log": (True, '''
class Module(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.d_model = d_model

    def forward(self, x, offset=0):
        position = torch.arange(offset, offset + x.size(1), dtype=torch.float64)[:, None]
        column = torch.arange(self.d_model, dtype=torch.float64)
        angles = position * torch.exp(-math.log(BASE) * 2 * (column // 2) / self.d_model)
        pe = torch.zeros(x.size(1), self.d_model, dtype=torch.float64)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(angles[:, 0::2]), torch.cos(angles[:, 1::2])
        return x + pe.to(x.dtype)'''),
    "a bug: sentence b gets PE(offset + b) in every row": (False, '''
class Module(Table):
    def forward(self, x, offset=0):
        return x + self.pe[offset:offset + x.size(0)][:, None, :].to(x.dtype)'''),
    "a bug: only the first sentence of the batch gets positions": (False, '''
class Module(Table):
    def forward(self, x, offset=0):
        x = x.clone()
        x[0] = x[0] + self.rows(x, offset).to(x.dtype)
        return x'''),
    "a bug: the offset is ignored": (False, '''
class Module(Table):
    def rows(self, x, offset):
        return self.pe[:x.size(1)]'''),
    "a bug: positions counted from 1": (False, '''
class Module(Table):
    def rows(self, x, offset):
        return self.pe[offset + 1:offset + 1 + x.size(1)]'''),
    "a bug: the rows of the window in reverse order": (False, '''
class Module(Table):
    def rows(self, x, offset):
        return self.pe[offset:offset + x.size(1)].flip(0)'''),
    "a bug: the window's length taken from the batch size": (False, '''
class Module(Table):
    def rows(self, x, offset):
        return self.pe[offset:offset + x.size(0)]'''),
    "a bug: the last column of an odd width holds a cosine": (False, '''
class Module(Table):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__(d_model, max_len, dropout)
        if d_model % 2:
            angles = torch.arange(max_len, dtype=torch.float64) * BASE ** (-(d_model - 1) / d_model)
            self.pe[:, -1] = torch.cos(angles)'''),
    "a bug: x replaced by the encoding instead of added to it": (False, '''
class Module(Table):
    def forward(self, x, offset=0):
        return self.rows(x, offset).to(x.dtype).expand_as(x).clone()'''),
    "a bug: another base": (False, '''
class Module(Table):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__(d_model, max_len, dropout)
        self.pe = table(max_len, d_model, base=1000.0 if BASE != 1000.0 else 10000.0)'''),
}
Q7_PUBLIC = ["correct: a float64 table of max_len rows, sliced"]
ADDS_NOTHING = '''
class Module(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()

    def forward(self, x, offset=0):
        return x'''


def q7_source(end: str, base: float) -> str:
    return Q7_PRELUDE.format(base=base) + "\n" + end.strip("\n") + "\n"


def follows(cls, base: float) -> bool:
    """The reference judgement of question 7 (used here only, to check the expected verdicts)."""
    import torch
    try:
        for d_model in (1, 6, 7, 16):
            module = cls(d_model, max_len=5000, dropout=0.0).eval()
            for batch, seq_len, offset in ((3, 5, 0), (2, 4, 9), (4, 3, 4990)):
                x = torch.arange(batch * seq_len * d_model, dtype=torch.float64).reshape(batch, seq_len, d_model)
                position = torch.arange(offset, offset + seq_len, dtype=torch.float64)[:, None]
                column = torch.arange(d_model, dtype=torch.float64)
                angles = position * base ** (-2 * (column // 2) / d_model)
                pe = torch.where(column % 2 == 0, torch.sin(angles), torch.cos(angles))
                with torch.no_grad():
                    out = module(x, offset=offset)
                if out.shape != x.shape or not torch.allclose(out, x + pe, rtol=0, atol=TOLERANCE):
                    return False
        return True
    except Exception:
        return False
