"""debug-the-module, public and private: the pool of bugs, and the notebook made from a draw of it.

The handed-out module is made of small methods (the *slots*: ``positions``, ``frequencies``,
``angles``, ``layout``, ``keep_table``, ``window``, ``drop``), each either right or holding one bug
of POOL: a mistake that tutorials make, with the symptom a user sees. A question gives one
symptom; the student answers with ``FixN(PositionalEncoding)``, a subclass that overrides the one
method to fix (the smallest fix). Its tests run ``observe`` (what a user sees of a module class:
outputs at several widths, offsets and dtypes, dropout, buffers) on the student's class, in the
student's process, and compare that data, in the grader, with the observation of the handed-out
module with that one bug fixed (built here, never sent to the student's process): the symptom
must be gone, and every other bug must still be there, so that a module copied from the book
(which fixes every bug at once) loses the points.

    python assignments/debug-the-module/variant.py      # rewrites the public master (PUBLIC)

``make variant SEED=...`` (grading/variant.py) calls ``make_variant(master, rng)``: another set of
bugs (one per slot, six slots of seven, in another order, at most two of the public ones),
another ``base`` (question 7's modules are written for it), and other names for the module's
methods and attributes, so that the public answers do not drop into a variant unread.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections import namedtuple
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
MASTER = HERE / "debug-the-module.ipynb"


def _checks():
    """checks.py, beside this file (grading/variant.py loads this file by its path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("debug_the_module_checks", HERE / "checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


checks = _checks()
observe, agree, values, built, overrides, verdicts = (checks.observe, checks.agree, checks.values, checks.built,
                                                      checks.overrides, checks.verdicts)
Q7_MODULES, Q7_PUBLIC, ADDS_NOTHING, q7_source, follows = (checks.Q7_MODULES, checks.Q7_PUBLIC, checks.ADDS_NOTHING,
                                                           checks.q7_source, checks.follows)


# A bug: the body of its slot's method, what a user sees (markdown, never the cause), and the
# heading of its question.
Bug = namedtuple("Bug", "code symptom title")


# The right body of each slot's method (self.base is the specification's base).
FIXES = {
    "positions": "return torch.arange(max_len, dtype=torch.float64)[:, None]",
    "frequencies": "column = torch.arange(d_model, dtype=torch.float64)\n"
                   "return self.base ** (-2 * (column // 2) / d_model)",
    "angles": "return positions * omega",
    "layout": "even = torch.arange(angles.shape[1]) % 2 == 0\n"
              "return torch.where(even, torch.sin(angles), torch.cos(angles))",
    "keep_table": 'self.register_buffer("pe", pe, persistent=False)',
    "window": "return self.pe[offset : offset + x.size(1)][None]",
    "drop": "return nn.functional.dropout(x, self.p, training=self.training)",
}

SIGNATURES = {
    "positions": ("positions(self, max_len)", "The positions of the table's rows, a float64 column (max_len, 1)."),
    "frequencies": ("frequencies(self, d_model)", "The angular frequency of every column: float64 (d_model,)."),
    "angles": ("angles(self, positions, omega)", "The angle of every row and column: (max_len, d_model)."),
    "layout": ("layout(self, angles)", "The table: sines and cosines of the angles, (max_len, d_model)."),
    "keep_table": ("keep_table(self, pe)", "Keeps the table in the module, as self.pe."),
    "window": ("window(self, x, offset)", "The rows of the table that x receives, shaped to be added to x."),
    "drop": ("drop(self, x)", "Dropout of the output."),
}
SLOTS = list(SIGNATURES)

SAME_ERROR = ("Far positions are off the formula: by about $10^{{-4}}$ near position 4000, forty times "
              "more than below position 100, growing with the position; a float64 input makes no difference.")

POOL = {
    "positions": {
        "from_one": Bug(
            "return torch.arange(1, max_len + 1, dtype=torch.float64)[:, None]",
            "The docstring counts positions from 0, so with `offset=0` the first token should receive "
            "$PE(0)$, which is `[0, 1, 0, 1, ...]` ($\\sin 0 = 0$, $\\cos 0 = 1$); it receives another "
            "row, and `module(x, offset=k)` gives row `r` the vector that the formula gives position `k + r + 1`.",
            "the first token is not at position 0"),
        "one_short": Bug(
            "return torch.arange(max_len - 1, dtype=torch.float64)[:, None]",
            "A sequence that reaches the end of the table fails: with `max_len=64`, 63 tokens work and "
            "64 tokens raise an error about the sizes of tensors (and so do 4 tokens at `offset=60`), "
            "although `max_len` is documented as the number of positions the module covers.",
            "the last position of the table is missing"),
        "half_positions": Bug(
            "return torch.arange(max_len, dtype=torch.float16).to(torch.float64)[:, None]",
            "Past position 2048, neighbouring positions share one vector: positions 2049 and 2048 "
            "receive the same row, and further on the rows repeat in pairs (in fours past 4096); every "
            "position below 2048 is right.",
            "far positions share their vectors"),
    },
    "frequencies": {
        "exponent_j": Bug(
            "column = torch.arange(d_model, dtype=torch.float64)\n"
            "return self.base ** (-column / d_model)",
            "The two columns of a pair do not share their angular frequency: the cosine column `2i + 1` "
            "oscillates more slowly than the sine column `2i` before it.",
            "sine and cosine of a pair have different frequencies"),
        "exponent_i": Bug(
            "column = torch.arange(d_model, dtype=torch.float64)\n"
            "return self.base ** (-(column // 2) / d_model)",
            "The wavelengths are far too short: for `d_model = 16` the slowest pair repeats about "
            "every {short:.0f} tokens, where the formula's slowest pair takes about {long:.0f} tokens; "
            "the fastest pair (wavelength $2\\pi$) is right.",
            "the slow columns oscillate too fast"),
        "log_float32": Bug(
            "pair = torch.arange(0, d_model, 2, dtype=torch.float32)\n"
            "omega = torch.exp(pair * (-math.log(self.base) / d_model))\n"
            "return omega.repeat_interleave(2)[:d_model].to(torch.float64)",
            SAME_ERROR + " The angles are computed in float64.",
            "far positions are off by 1e-4"),
    },
    "angles": {
        "float32_angles": Bug(
            "return (positions.float() * omega.float()).to(torch.float64)",
            SAME_ERROR,
            "far positions are off by 1e-4"),
    },
    "layout": {
        "odd_crash": Bug(
            "pe = torch.zeros_like(angles)\n"
            "for j in range(0, angles.shape[1], 2):\n"
            "    pe[:, j] = torch.sin(angles[:, j])\n"
            "    pe[:, j + 1] = torch.cos(angles[:, j + 1])\n"
            "return pe",
            "`PositionalEncoding(7)` raises an error. An odd `d_model` is legal: its last column is the "
            "sine of the last pair, without a cosine partner.",
            "odd widths crash"),
        "swapped": Bug(
            "odd = torch.arange(angles.shape[1]) % 2 == 1\n"
            "return torch.where(odd, torch.sin(angles), torch.cos(angles))",
            "The even columns hold cosines and the odd columns sines: at position 0 the row is "
            "`[1, 0, 1, 0, ...]` where the formula gives `[0, 1, 0, 1, ...]`.",
            "sines and cosines trade places"),
        "blocked": Bug(
            "return torch.cat([torch.sin(angles[:, 0::2]), torch.cos(angles[:, 1::2])], dim=1)",
            "The columns are not interleaved: with `d_model = 8` the first four columns hold the sines "
            "of the four frequencies and the last four their cosines, so that position 0 gets "
            "`[0, 0, 0, 0, 1, 1, 1, 1]` instead of `[0, 1, 0, 1, 0, 1, 0, 1]`.",
            "sines first, cosines after"),
    },
    "keep_table": {
        "plain_attribute": Bug(
            "self.pe = pe",
            "The table does not travel with the module: `list(module.buffers())` is empty, so "
            "`module.to(device)` leaves the table on the CPU (on a GPU, the forward pass then raises "
            "\"Expected all tensors to be on the same device\"), and `module.double()` or "
            "`module.half()` leave it as it was.",
            "the table stays behind when the module moves"),
    },
    "window": {
        "seq_first": Bug(
            "return self.pe[offset : offset + x.size(0)][:, None, :]",
            "With a batch of several sentences, every token of sentence `b` receives one and the same "
            "vector, a different one in each sentence. With a batch of one sentence, the output has "
            "the right shape and nothing raises an error: only its values show the bug.",
            "the encoding depends on the sentence, not on the position"),
        "offset_ignored": Bug(
            "return self.pe[: x.size(1)][None]",
            "`module(x, offset=k)` returns the same as `module(x)`: the continuation of a sequence "
            "restarts its positions at 0 instead of at `k`.",
            "continuing a sequence restarts its positions"),
    },
    "drop": {
        "always_on": Bug(
            "return nn.functional.dropout(x, self.p)",
            "After `module.eval()`, calling the module twice on the same input with `dropout=0.5` "
            "gives two different outputs.",
            "outputs change between two calls in eval mode"),
        "never": Bug(
            "return x",
            "In training mode with `dropout=0.5`, no entry of the output is ever zeroed: the module "
            "gives the same output in training and in evaluation mode.",
            "dropout never happens"),
        "no_rescale": Bug(
            "return x * (torch.rand_like(x) >= self.p) if self.training else x",
            "In training mode with `dropout=0.5`, about half of the entries are zeroed, and the kept "
            "ones equal the evaluation-mode output: the output's mean is halved in training.",
            "training outputs are too small"),
    },
}
CONFLICTS = [{"log_float32", "float32_angles"}]  # same symptom: never in one notebook

# The public master's draw: its six bugs, in the order of its questions.
PUBLIC = {"window": "seq_first", "angles": "float32_angles", "positions": "from_one",
          "frequencies": "exponent_j", "layout": "odd_crash", "drop": "always_on"}
PUBLIC_BASE = 10000.0


# The names of the methods and attributes: the public ones first; a variant draws others, so
# that the public answers do not drop into a variant's module unread.
NAMES = {"positions": ["positions", "position_column", "pos_index"],
         "frequencies": ["frequencies", "omegas", "angular_frequencies"],
         "angles": ["angles", "phases", "arguments"], "layout": ["layout", "encode", "sinusoids"],
         "keep_table": ["keep_table", "store", "save_table"], "window": ["window", "rows_for", "slice_for"],
         "drop": ["drop", "regularize", "apply_dropout"], "pe": ["pe", "table", "encoding"],
         "p": ["p", "rate", "dropout_p"]}
PUBLIC_NAMES = {key: names[0] for key, names in NAMES.items()}


def rename(code: str, names: dict) -> str:
    """code with the public names of methods and attributes replaced by names."""
    for key in ("pe", "p", *SLOTS):
        if names[key] != key:
            code = re.sub(rf"(?<=self\.){key}\b", names[key], code)
            code = re.sub(rf'(?<=register_buffer\("){key}(?=")', names[key], code)
            code = re.sub(rf"^(\s*def ){key}\b", rf"\g<1>{names[key]}", code, flags=re.M)
    return code


def module_source(bugs: dict, base: float, names: dict = PUBLIC_NAMES) -> str:
    """The module's source with the bugs {slot: bug name} planted, the other slots right."""
    name = "PositionalEncoding"
    lines = [
        f"class {name}(nn.Module):",
        '    """Adds the sinusoidal positional encoding to a batch of embeddings.',
        "",
        "    PositionalEncoding(d_model, max_len=5000, dropout=0.0); forward(x, offset=0) takes x of",
        "    shape (batch, seq_len, d_model) and returns the same shape and dtype, where row r of",
        "    every sequence has PE(offset + r) added, then dropout (only in training mode).",
        '    """',
        "",
        f"    base = {base!r}",
        "",
        "    def __init__(self, d_model, max_len=5000, dropout=0.0):",
        "        super().__init__()",
        "        self.p = dropout",
        "        angles = self.angles(self.positions(max_len), self.frequencies(d_model))",
        "        self.keep_table(self.layout(angles))",
    ]
    for slot in SLOTS:
        signature, doc = SIGNATURES[slot]
        code = POOL[slot][bugs[slot]].code if slot in bugs else FIXES[slot]
        lines += ["", f"    def {signature}:", f'        """{doc}"""', textwrap.indent(code, " " * 8)]
    lines += ["", "    def forward(self, x, offset=0):",
              "        return self.drop(x + self.window(x, offset).to(x.dtype))"]
    return rename("\n".join(lines) + "\n", names)


def fix_source(slot: str, names: dict = PUBLIC_NAMES) -> str:
    signature, doc = SIGNATURES[slot]
    return rename(f'def {signature}:\n    """{doc}"""\n' + textwrap.indent(FIXES[slot], "    ") + "\n", names)


# The notebook.

def helper(function, indent="    ") -> str:
    return textwrap.indent(inspect.getsource(function), indent)


def own_code_source(master) -> str:
    """The masters' own_code check, as the given master's first test carries it (every copy of a
    check is the same: tests/test_assignment_checks.py)."""
    import ast
    for cell in master.cells:
        if cell.cell_type == "code" and "def own_code(" in cell.source:
            for test in ast.parse(cell.source).body:
                for node in getattr(test, "body", []):
                    if isinstance(node, ast.FunctionDef) and node.name == "own_code":
                        return textwrap.indent(textwrap.dedent(ast.get_source_segment(cell.source, node, padded=True)), "    ")
    raise ValueError("the master has no own_code check")


def raw(text):
    return nbformat.v4.new_raw_cell(text)


def markdown(text):
    return nbformat.v4.new_markdown_cell(text)


def code(text):
    return nbformat.v4.new_code_cell(text)


def symptom_text(slot: str, bug: str, base: float) -> str:
    short, long = 2 * 3.141592653589793 * base ** (7 / 16), 2 * 3.141592653589793 * base ** (14 / 16)
    return POOL[slot][bug].symptom.format(short=short, long=long)


def intro(count: int, base: float) -> str:
    return f"""# Assignment: debug the module

Below is a PyTorch module that adds the sinusoidal positional encoding to a batch of token
embeddings. It runs on the usual examples, and it is wrong: it has **{count} bugs**, each one a
mistake that real tutorials and blog posts make. Each of questions 1 to {count} describes what a
user of the module would observe if that bug were its only one; find the bug behind it.

**The specification** (what the module should do):

- `PositionalEncoding(d_model, max_len=5000, dropout=0.0)`; `forward(x, offset=0)` for `x` of
  shape `(batch, seq_len, d_model)` (batch first) returns the same shape and dtype, where row `r`
  of every sentence gets $PE(\\text{{offset}} + r)$ added, for every `offset + seq_len <= max_len`
  and every `d_model` (odd ones too);
- $PE(pos)$ is the formula of the course with **base {base:g}**: column $2i$ holds
  $\\sin(pos\\,\\omega_i)$ and column $2i + 1$ holds $\\cos(pos\\,\\omega_i)$, with
  $\\omega_i = {base:g}^{{-2i/d_\\text{{model}}}}$, positions counted from 0, every entry within
  $10^{{-6}}$ of the formula for a float64 input;
- in training mode, each entry of the output is zeroed with probability `dropout` and the others
  are multiplied by $1 / (1 - \\text{{dropout}})$; in evaluation mode (`module.eval()`) the output
  is the same at every call;
- the table is a buffer of the module, so that it follows `module.to(...)`.

**How to answer.** Do not edit the module: each answer is a class `FixN(PositionalEncoding)`,
the module as handed out with **that question's bug fixed and nothing else**: it overrides the
one method that holds the bug, and the other bugs stay (the tests check that the other
questions' symptoms are still there, so a correct module written from scratch, or copied, gets
no points for a fix). Question {count + 1} asks for the check that would have caught such bugs.

**Your own code.** You may import the course's package `posenc` to compare, but not in your
answers: when the instructor grades, your notebook runs without `posenc`.

**How to work.** Run the cells in order; after writing `FixN`, run its `grader.check("qN")`
cell (each question's tests look at its own bug only, so you can answer them in any order).
The instructor's autograder adds hidden tests. **Do not rename this notebook**: the checks read
their tests from `debug-the-module.ipynb`.

Run the next cell first."""


def fix_question(number: int, slot: str, bug: str, bugs: dict, base: float, symptom_cases: list,
                 own_code: str, names: dict) -> list:
    name, fix = f"q{number}", f"Fix{number}"
    method_name = re.search(r"def (\w+)\(", fix_source(slot, names))[1]  # the method that holds the bug
    reference = module_source({s: b for s, b in bugs.items() if s != slot}, base, names)
    observe_src, agree_src = helper(observe), helper(agree)
    run = (f'    run = getattr({fix}, "run_in_kernel", None) or (lambda check, *args: check({fix}, *args))\n')
    public = f'''def test_{name}_fix({fix}, PositionalEncoding):
{own_code}
{observe_src}
{agree_src}
{helper(overrides)}
    assert callable({fix}), "{fix} is not defined: run the cell that defines it"
    # Checks that need the class itself run where it is: in the notebook's kernel when the
    # autograder grades (the class stays there), here on a self-check.
{run}    handed_out = getattr(PositionalEncoding, "run_in_kernel", None) or (lambda check, *args: check(PositionalEncoding, *args))
    run(own_code, "{fix}")
    parent, methods = run(overrides)
    assert parent == "PositionalEncoding", (
        f"{fix} derives from {{parent or 'nothing'}}: write it as class {fix}(PositionalEncoding), the module as handed out")
    assert len(methods) == 1 and methods[0] not in ("__init__", "forward"), (
        f"{fix} defines {{methods or 'nothing'}}: the smallest fix overrides one method of the handed-out module, "
        "the one that holds the bug (not __init__ or forward, which are right)")
    base, symptom = {base!r}, {symptom_cases!r}  # where question {number}'s symptom shows
    seen, before, specified = run(observe, base), handed_out(observe, base), observe(None, base)
    same = [case for case in symptom if agree(seen[case], before[case])]
    assert not same, f"{fix} behaves as the handed-out module in: {{', '.join(same)}} (question {number}'s symptom is still there)"
    changed = [case for case in seen if case not in symptom and not agree(seen[case], before[case])]
    assert not changed, (
        f"{fix} also changes: {{', '.join(changed)}}, where question {number}'s bug does not show: fix that bug "
        "only (the other questions' symptoms must stay)")
    assert not all(agree(seen[case], specified[case]) for case in specified), (
        f"{fix} follows the whole specification: it fixed every bug, not question {number}'s only")
test_{name}_fix({fix}, PositionalEncoding)  # IGNORE'''
    hidden_a = f'''# HIDDEN
def test_{name}_symptom_gone({fix}):
{observe_src}
{agree_src}
{helper(built)}
{helper(values)}
    # The module as handed out with question {number}'s bug fixed, built here (never in the notebook's kernel).
    reference = {reference!r}
{helper(overrides)}
{run}    parent, methods = run(overrides)
    assert methods == [{method_name!r}], (
        f"{fix} overrides {{', '.join(methods) or 'nothing'}}: the fix of question {number} belongs in the one "
        "method that holds its bug, and in no other")
    base, symptom = {base!r}, {symptom_cases!r}
    expected, seen = observe(built(reference), base), run(observe, base)
    kept = [case for case in symptom if not agree(values(seen[case]), values(expected[case]))]
    assert not kept, f"{fix} does not remove question {number}'s symptom in: {{', '.join(kept)}}"
    changed = [case for case in expected if case not in symptom and not agree(values(seen[case]), values(expected[case]))]
    assert not changed, (
        f"{fix} also changes: {{', '.join(changed)}}, where question {number}'s bug does not show (the other "
        "questions' symptoms must stay)")
test_{name}_symptom_gone({fix})  # IGNORE'''
    hidden_b = f'''# HIDDEN
def test_{name}_only_that_bug({fix}):
{observe_src}
{agree_src}
{helper(built)}
    # The module as handed out with question {number}'s bug fixed, built here (never in the notebook's kernel).
    reference = {reference!r}
{helper(overrides)}
{run}    parent, methods = run(overrides)
    assert methods == [{method_name!r}], (
        f"{fix} overrides {{', '.join(methods) or 'nothing'}}: the fix of question {number} belongs in the one "
        "method that holds its bug, and in no other")
    base = {base!r}
    expected, seen = observe(built(reference), base, True), run(observe, base, True)
    wrong = [case for case in expected if not agree(seen.get(case), expected[case])]
    assert not wrong, (
        f"{fix} is not the handed-out module with question {number}'s bug fixed and nothing else: it differs in "
        f"{{', '.join(wrong)}}")
test_{name}_only_that_bug({fix})  # IGNORE'''
    method = fix_source(slot, names)
    answer = f'''class {fix}(PositionalEncoding):
    """The module as handed out, with question {number}'s bug fixed and no other."""

    # BEGIN SOLUTION
{textwrap.indent(method, "    ")}    # END SOLUTION'''
    text = (f"## Question {number}: {POOL[slot][bug].title} (2 points)\n\n{symptom_text(slot, bug, base)}\n\n"
            f"Write `{fix}`: the handed-out module with this bug fixed and no other (1 point when the "
            "symptom is gone and the other bugs stay, on the sizes of the public test; 1 more when "
            "nothing else changes, dtypes included, at other sizes too).")
    return [raw(f"# BEGIN QUESTION\nname: {name}\npoints: [0, 1, 1]"), markdown(text), raw("# BEGIN SOLUTION"),
            code(answer), raw("# END SOLUTION"), raw("# BEGIN TESTS"), code(public), code(hidden_a),
            code(hidden_b), raw("# END TESTS"), raw("# END QUESTION")]


CHECK_SOLUTION = '''def follows_positions_spec(module_class):
    """True when module_class(d_model, max_len=..., dropout=0.0), in eval mode, adds PE(offset + r)
    to row r of every sentence of a batch (batch, seq_len, d_model), at offset 0 and at another."""
    # BEGIN SOLUTION
    rng = np.random.default_rng(0)
    for d_model in (6, 7):
        for batch, seq_len, offset in ((3, 5, 0), (2, 4, 11)):
            x = rng.standard_normal((batch, seq_len, d_model))  # every sentence different
            positions = np.arange(offset, offset + seq_len)[:, np.newaxis]
            angles = positions * BASE ** (-2 * (np.arange(d_model) // 2) / d_model)
            pe = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))  # (seq_len, d_model)
            try:
                module = module_class(d_model, max_len=64, dropout=0.0).eval()
                with torch.no_grad():
                    out = module(torch.from_numpy(x), offset=offset)
            except Exception:  # a module that raises does not follow the specification
                return False
            if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-6):
                return False
    return True
    # END SOLUTION'''


def check_question(number: int, bugs: dict, base: float, names: dict) -> list:
    name = f"q{number}"
    handed_out = module_source(bugs, base, names) + "\n\nModule = PositionalEncoding\n"
    public = {"the module as handed out": (handed_out, False),
              "a module that adds nothing": (ADDS_NOTHING.strip("\n") + "\n", False),
              **{d: (q7_source(Q7_MODULES[d][1], base), True) for d in Q7_PUBLIC}}
    hidden = {d: (q7_source(end, base), ok) for d, (ok, end) in Q7_MODULES.items() if d not in Q7_PUBLIC}
    for description, (source, ok) in {**public, **hidden}.items():
        assert follows(built(source, "Module"), base) == ok, description
    run = ('    run = getattr(follows_positions_spec, "run_in_kernel", None) or '
           '(lambda helper, *args: helper(follows_positions_spec, *args))\n')

    def test(title, modules, first):
        return f'''{first}def test_{name}_{title}(follows_positions_spec):
{helper(verdicts)}
    # Only the classes cross into the notebook's kernel when the autograder grades: what the
    # check should return stays here, and is compared here.
    modules = {{
{"".join(f"        {d!r}: ({s!r}, {ok}),{chr(10)}" for d, (s, ok) in modules.items())}    }}
    assert callable(follows_positions_spec), "follows_positions_spec is not defined: run the cell that defines it"
{run}    got = run(verdicts, [source for source, _ in modules.values()])
    wrong = [f"<{{d}}>: {{g if isinstance(g, str) else f'returned {{g}}'}}, expected {{ok}}"
             for (d, (_, ok)), g in zip(modules.items(), got) if g != ok]
    assert not wrong, "follows_positions_spec misjudged " + "; ".join(wrong)
test_{name}_{title}(follows_positions_spec)  # IGNORE'''

    text = f"""## Question {number}: the check that would have caught them (3 points)

These bugs raised no error and kept the shape of the output: they reached users because no check
looked for them. Write the check of the positions part of the specification:
`follows_positions_spec(module_class)` returns `True` when a module class follows it, and
`False` otherwise. That part: a module built as `module_class(d_model, max_len=..., dropout=0.0)`
and put in eval mode, called as `module(x, offset=offset)` on a batch `x` of shape
`(batch, seq_len, d_model)`, adds $PE(\\text{{offset}} + r)$ (base {base:g}) to row `r` of **every**
sentence of the batch, at `offset=0` and at other offsets, for any `d_model` (odd ones too).

- Compute $PE$ from the formula yourself (NumPy or torch) and compare within $10^{{-6}}$ (a module
  whose table is stored in float32 follows the specification). Do not compare with a module:
  `posenc` is absent while grading, and the module above has bugs.
- Return `True` or `False`; a module that raises an error on your batch does not follow the
  specification.
- The tests give your check classes written in other ways, some correct and some with one bug
  each (1 point for the three public ones, 2 for the hidden ones), so it must take well under a
  second."""
    answer = f"BASE = {base!r}  # the base of the specification\n\n\n" + CHECK_SOLUTION
    return [raw(f"# BEGIN QUESTION\nname: {name}\npoints: [1, 2]"), markdown(text), raw("# BEGIN SOLUTION"),
            code(answer), raw("# END SOLUTION"),
            code("# Try it on the module as handed out (False) and on every fix at once (True once all are right).\n"
                 f"class Fixed({', '.join(f'Fix{k}' for k in range(1, number))}):\n"
                 '    """Each method from the fix that overrides it (Python\'s method resolution order)."""\n\n\n'
                 "follows_positions_spec(PositionalEncoding), follows_positions_spec(Fixed)"),
            raw("# BEGIN TESTS"), code(test("judges_three_modules", public, "")),
            code(test("judges_modules_written_otherwise", hidden, "# HIDDEN\n")),
            raw("# END TESTS"), raw("# END QUESTION")]


def symptoms(bugs: dict, base: float, names: dict) -> dict:
    """{slot: the cases of observe where the handed-out module and the one with that slot's bug fixed
    differ}; each must differ somewhere, and no fix alone may give a correct module."""
    handed_out = observe(built(module_source(bugs, base, names)), base)
    specified = observe(None, base)
    found = {}
    for slot in bugs:
        fixed = observe(built(module_source({s: b for s, b in bugs.items() if s != slot}, base, names)), base)
        found[slot] = [case for case in fixed if not agree(fixed[case], handed_out[case])]
        if not found[slot] or all(agree(fixed[case], specified[case]) for case in specified):
            raise ValueError(f"{bugs[slot]} does not show alone, or its fix leaves no bug")
    return found


def build(master, bugs: dict, base: float, names: dict = PUBLIC_NAMES):
    """The master notebook for these bugs ({slot: bug}, in the order of the questions) and base:
    the given master's first cells (Colab, configuration, Otter, imports) and the rest made here."""
    keep = [c for c in master.cells[:5]]
    assert keep[1].source.startswith("# ASSIGNMENT CONFIG") and "otter.Notebook" in keep[3].source
    cases = symptoms(bugs, base, names)
    own_code = own_code_source(master)
    cells = [keep[0], keep[1], markdown(intro(len(bugs), base)), keep[3], keep[4],
             markdown("## The module as handed out\n\nRead it, run it, and do not edit it: every answer "
                      "below is a subclass of it."),
             code(module_source(bugs, base, names)),
             code("# Try it: a batch of 2 sentences of 3 tokens, d_model = 4 (all-zero embeddings show the encoding).\n"
                  "PositionalEncoding(4).eval()(torch.zeros(2, 3, 4))")]
    for number, (slot, bug) in enumerate(bugs.items(), start=1):
        cells += fix_question(number, slot, bug, bugs, base, cases[slot], own_code, names)
    cells += check_question(len(bugs) + 1, bugs, base, names)
    cells += [markdown("## Check everything\n\nThe cell below runs the public tests of every question, the same as the "
                       "`grader.check` cells above. The instructor's autograder runs them too, and hidden tests "
                       "that check more (the module with each bug fixed, compared with yours; more modules for "
                       "your check): passing the public tests is necessary, not sufficient. When all pass, save "
                       "the notebook and hand in `debug-the-module.ipynb` as your instructor asks."),
              code("# Runs the PUBLIC tests of every question (the grader.check cells above); the autograder's\n"
                   "# hidden tests check more.\ngrader.check_all()")]
    for number, cell in enumerate(cells):  # the same ids for the same draw (the same variant, byte for byte)
        if cell not in keep:
            cell["id"] = f"cell-{number:02d}"
    out = nbformat.v4.new_notebook(cells=cells, metadata=master.metadata)
    out.nbformat_minor = master.nbformat_minor
    return out


def draw(rng) -> tuple[dict, float, dict]:
    """A private draw: six slots of seven in a random order, one bug of each (at most two of the
    public notebook's), a base, and other names for the methods and attributes."""
    while True:
        slots = [SLOTS[i] for i in rng.permutation(len(SLOTS))[:6]]
        bugs = {slot: sorted(POOL[slot])[rng.integers(len(POOL[slot]))] for slot in slots}
        public = sum(PUBLIC.get(slot) == bug for slot, bug in bugs.items())
        if public <= 2 and not any(conflict <= set(bugs.values()) for conflict in CONFLICTS):
            break
    base = float(rng.choice([100.0, 500.0, 1000.0, 2000.0, 5000.0, 20000.0, 50000.0]))
    names = {key: choices[1 + rng.integers(len(choices) - 1)] for key, choices in NAMES.items()}
    return bugs, base, names


def make_variant(master, rng):
    """The variant master notebook (see grading/variant.py): another draw of bugs, base and names."""
    while True:
        bugs, base, names = draw(rng)
        try:
            return build(master, bugs, base, names)
        except ValueError:  # a draw where a bug hides behind another: draw again
            continue


if __name__ == "__main__":
    nbformat.write(build(nbformat.read(MASTER, as_version=4), PUBLIC, PUBLIC_BASE), MASTER)
