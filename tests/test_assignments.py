"""The graded assignments: Otter-Grader masters in assignments/<name>/<name>.ipynb.

What an instructor relies on, checked on every master:

- ``otter assign`` turns it into a student notebook and an autograder zip;
- the student notebook as handed out scores 0 on every autograded question, and the
  master's solutions score full marks;
- the checks discriminate: each realistic wrong answer below (1-based positions, ``j``
  instead of ``2i``, the concatenated layout, a crash on odd widths, float32 angles,
  sequence-first slicing, each planted bug of debug-the-module re-broken, an experiment
  whose seed is ignored, that tests at the training length, measures the wrong encoding or
  drops ``base``, ...) loses the points of its question and only those (or of the later
  questions that measure with a broken ``run_experiment``, when it says so);
- a student function that raises fails its question while the others are still graded;
- a renamed or half-done notebook gets a clear message, not a traceback from inside otter.

Otter runs in subprocesses only: importing it emits a DeprecationWarning (through ipylab)
that this project's ``filterwarnings = error`` would turn into a failure. Grading uses
``tools/grade.py`` as ``make grade`` does (sealed: ``tools/sealed.py``, no Docker). ``make assignments`` generates what is out of date
(as for the book), its output is copied under _build/test-assignments (otter assign cannot find
its own zip when the output folder is outside the repository) and graded there once per session,
and the slow steps (kernels) run two at a time.

Grades are reused when nothing they depend on changed (tests/reuse.py): each graded
submission's scores, and each notebook executed as a student runs it, are kept under a digest of
the submission, the autograder's tests and configuration, the package's sources,
requirements.txt, this Python and the grading script. Editing a master, a wrong answer below or
the package grades again what they touch; a fresh clone (CI) grades everything.
"""

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
import yaml

from reuse import digest, keep, kept, reused

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "_build" / "test-assignments"
GENERATED = ROOT / "_build" / "assignments"  # what `make assignments` generates
MASTERS = sorted(p for p in ROOT.glob("assignments/*/*.ipynb") if p.stem == p.parent.name)
NAMES = [p.stem for p in MASTERS]
WORKERS = 2  # the CI machine has two cores
TIMEOUT = 1200  # seconds for one subprocess: an otter run, or grading one assignment's submissions
GRADE_BATCH = 40  # submissions graded by one subprocess (one grader, tools/grade.py): an assignment
# The assignments whose submissions take longest to grade: experiment-positions trains its
# models in every one (about 10 s of CPU each), debug-the-module imports PyTorch (about 5 s);
# the others take about 3 s.
SLOWEST_GRADED = ["experiment-positions", "debug-the-module"]


# The body of the solution's loops in build-the-encoding, replaced by several answers below.
LOOP_BLOCK = """    for pos in range(seq_len):
        for j in range(d_model):
            i = j // 2  # columns 2i and 2i + 1 share the angular frequency of pair i
            angle = pos / base ** (2 * i / d_model)
            pe[pos, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
"""

# Each wrong answer: (label, the question that must lose its points, or a tuple of them, edits);
# an empty tuple marks correct work written differently, which keeps full marks. An edit
# (marker, old, new) replaces `old` by `new` in the one answer cell of the solution notebook
# that contains `marker`; every edit must apply, so a wrong answer cannot silently vanish.
WRONG_ANSWERS = {
    "build-the-encoding": [
        # q1: a position read back from the fastest pair (right modulo 2 pi only), from the sine
        # alone (arcsin cannot tell an angle from pi minus it), truncated instead of rounded
        # (right on the public test, wrong on some hidden positions).
        ("position from the fastest pair", "q1", [
            ("def position_of", "omega = base ** (-(d_model - 2) / d_model)", "omega = 1.0"),
            ("def position_of", "row[-2], row[-1]", "row[0], row[1]")]),
        ("position from the sine alone", "q1", [
            ("def position_of", "angle = math.atan2(row[-2], row[-1]) % (2 * math.pi)", "angle = math.asin(row[-2])")]),
        ("position truncated, not rounded", "q1", [
            ("def position_of", "return round(angle / omega)", "return int(angle / omega)")]),
        ("loops: 1-based positions", "q2", [
            ("def positional_encoding_loop", "angle = pos / base", "angle = (pos + 1) / base")]),
        ("loops: exponent j instead of 2i", "q2", [
            ("def positional_encoding_loop", "base ** (2 * i / d_model)", "base ** (j / d_model)")]),
        ("vectorized: concatenated [sin | cos] layout", "q3", [
            ("def positional_encoding(", "return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))",
             "return np.concatenate([np.sin(angles[:, 0::2]), np.cos(angles[:, 1::2])], axis=1)")]),
        ("vectorized: crash on odd widths", "q3", [
            ("def positional_encoding(", "return np.where(",
             "pe = np.empty((seq_len, d_model))\n"
             "    pe[:, 0::2] = np.sin(angles[:, 0::2])\n"
             "    pe[:, 1::2] = np.cos(angles[:, 0::2])\n"
             "    return pe\n    return np.where(")]),
        ("vectorized: float32 angles", "q3", [
            ("def positional_encoding(", "dtype=np.float64)[:, np.newaxis]", "dtype=np.float32)[:, np.newaxis]"),
            ("def positional_encoding(", "angles = positions * omega", "angles = positions * omega.astype(np.float32)")]),
        ("vectorized: offset ignored", "q3", [
            ("def positional_encoding(", "np.arange(offset, offset + seq_len,", "np.arange(0, seq_len,")]),
        ("vectorized: the function raises", "q3", [
            ("def positional_encoding(", '"""The encoding as one broadcast computation',
             'raise NotImplementedError("not vectorized yet")\n    """The encoding as one broadcast computation')]),
        ("wavelengths: angular frequency instead of wavelength", "q4", [
            ("def wavelengths", "return 2 * np.pi * base ** (2.0 * pair_index / d_model)",
             "return base ** (-2.0 * pair_index / d_model)")]),
        ("wavelengths: exponent j instead of 2i", "q4", [
            ("def wavelengths", "base ** (2.0 * pair_index / d_model)", "base ** (np.arange(d_model) / d_model)")]),
        # The frequent mistakes get a hint of their own (MESSAGES below).
        ("sine and cosine swapped (loops, vectorized)", ("q2", "q3"), [
            ("def positional_encoding_loop", "math.sin(angle) if j % 2 == 0 else math.cos(angle)",
             "math.cos(angle) if j % 2 == 0 else math.sin(angle)"),
            ("def positional_encoding(", "np.sin(angles), np.cos(angles))", "np.cos(angles), np.sin(angles))")]),
        # The course's own code instead of the student's, and the method a question asks for.
        ("posenc instead of own code (loops, vectorized under another name, wavelengths)", ("q2", "q3", "q4"), [
            ("def positional_encoding_loop", "    pe = np.zeros((seq_len, d_model))\n",
             "    import posenc\n    return posenc.positional_encoding_loop(seq_len, d_model, base=base)\n"
             "    pe = np.zeros((seq_len, d_model))\n"),
            ("def positional_encoding(", "def positional_encoding(seq_len",
             "from posenc import positional_encoding as reference_encoding\n\n\ndef positional_encoding(seq_len"),
            ("def positional_encoding(", "    positions = np.arange(offset",
             "    return reference_encoding(seq_len, d_model, base=base, offset=offset)\n"
             "    positions = np.arange(offset"),
            ("def wavelengths", "    return 2 * np.pi * base ** (2.0 * pair_index / d_model)",
             "    import posenc\n    return 2 * np.pi / posenc.angular_frequencies(d_model, base=base)")]),
        # Indirect routes to the package: a default argument (q2), a dict (q3), functools.partial (q4).
        ("posenc through a default argument, a dict and functools.partial", ("q2", "q3", "q4"), [
            ("def positional_encoding_loop", "def positional_encoding_loop(seq_len, d_model, base=10000.0):",
             "import posenc\n\n\ndef positional_encoding_loop(seq_len, d_model, base=10000.0, _loops=posenc.positional_encoding_loop):\n"
             "    return _loops(seq_len, d_model, base=base)"),
            ("def positional_encoding(", "def positional_encoding(seq_len",
             "import posenc\nMETHODS = {'broadcast': posenc.positional_encoding}\n\n\ndef positional_encoding(seq_len"),
            ("def positional_encoding(", "    positions = np.arange(offset",
             "    return METHODS['broadcast'](seq_len, d_model, base=base, offset=offset)\n    positions = np.arange(offset"),
            ("def wavelengths", "    return 2 * np.pi * base ** (2.0 * pair_index / d_model)",
             "    return 2 * np.pi / frequencies(d_model, base=base)"),
            ("def wavelengths", "def wavelengths(",
             "import functools\nimport posenc\nfrequencies = functools.partial(posenc.angular_frequencies)\n\n\ndef wavelengths(")]),
        # Routes built at run time: eval (q2), importlib with a built name (q3), sys.modules (q4).
        ("posenc through eval, importlib and sys.modules", ("q2", "q3", "q4"), [
            ("def positional_encoding_loop", "    pe = np.zeros((seq_len, d_model))\n",
             "    return eval(\"__import__('pos' + 'enc')\").positional_encoding_loop(seq_len, d_model, base=base)\n"
             "    pe = np.zeros((seq_len, d_model))\n"),
            ("def positional_encoding(", "    positions = np.arange(offset",
             "    import importlib\n"
             "    return importlib.import_module('pos' + 'enc').positional_encoding(seq_len, d_model, base=base, offset=offset)\n"
             "    positions = np.arange(offset"),
            ("def wavelengths", "    return 2 * np.pi * base ** (2.0 * pair_index / d_model)",
             "    import sys\n    import posenc\n"
             "    return 2 * np.pi / sys.modules['pos' + 'enc'].angular_frequencies(d_model, base=base)")]),
        # A table computed with posenc outside the function is not a reference the own-code check
        # sees; the hidden tests' other bases and offsets past the table catch it.
        ("posenc tables computed once into a global, sliced", "q3", [
            ("def positional_encoding(", "def positional_encoding(seq_len",
             "import posenc\nTABLES = {width: posenc.positional_encoding(2048, width) for width in range(1, 130)}\n\n\n"
             "def positional_encoding(seq_len"),
            ("def positional_encoding(", "    positions = np.arange(offset",
             "    return TABLES[d_model][offset:offset + seq_len]\n    positions = np.arange(offset")]),
        ("methods swapped: loops with no loop, vectorized with a loop over positions", ("q2", "q3"), [
            ("def positional_encoding_loop", LOOP_BLOCK,
             "    angles = np.arange(seq_len)[:, None] / base ** (2 * (np.arange(d_model) // 2) / d_model)\n"
             "    pe[:] = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))\n"),
            ("def positional_encoding(", "    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))",
             "    pe = np.empty((seq_len, d_model))\n"
             "    for r in range(seq_len):\n"
             "        pe[r] = np.where(np.arange(d_model) % 2 == 0, np.sin(angles[r]), np.cos(angles[r]))\n"
             "    return pe")]),
        ("one loop only in q2, q3 calls the loop function of q2", ("q2", "q3"), [
            ("def positional_encoding_loop", LOOP_BLOCK,
             "    omega = base ** (-2.0 * (np.arange(d_model) // 2) / d_model)\n"
             "    for pos in range(seq_len):\n"
             "        pe[pos] = np.where(np.arange(d_model) % 2 == 0, np.sin(pos * omega), np.cos(pos * omega))\n"),
            ("def positional_encoding(", "    positions = np.arange(offset",
             "    return positional_encoding_loop(offset + seq_len, d_model, base=base)[offset:]\n"
             "    positions = np.arange(offset")]),
        # Decorative loops: the table computed at once, copied entry by entry in the loops.
        ("loops that copy a vectorized table", "q2", [
            ("def positional_encoding_loop", LOOP_BLOCK,
             "    table = np.where(np.arange(d_model) % 2 == 0, np.sin(np.arange(seq_len)[:, None] * base ** (-2.0 * (np.arange(d_model) // 2) / d_model)),\n"
             "                     np.cos(np.arange(seq_len)[:, None] * base ** (-2.0 * (np.arange(d_model) // 2) / d_model)))\n"
             "    for pos in range(seq_len):\n"
             "        for j in range(d_model):\n"
             "            pe[pos, j] = table[pos, j]\n")]),
        # A loop over positions that runs for odd widths only (the last sine column).
        ("vectorized except a loop over positions for odd widths", "q3", [
            ("def positional_encoding(", "    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))",
             "    pe = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))\n"
             "    if d_model % 2:\n"
             "        for row in range(seq_len):\n"
             "            pe[row, -1] = np.sin(angles[row, -1])\n"
             "    return pe")]),
        # numpy.vectorize (a loop over the entries) under another name.
        ("numpy.vectorize imported under another name", "q3", [
            ("def positional_encoding(", "def positional_encoding(seq_len",
             "from numpy import vectorize as elementwise\n\n\ndef positional_encoding(seq_len"),
            ("def positional_encoding(", "np.sin(angles), np.cos(angles))",
             "elementwise(math.sin)(angles), elementwise(math.cos)(angles))")]),
        # The course's package in q1: it is absent while the notebook is graded (tools/sealed.py).
        ("position from posenc's table", "q1", [
            ("def position_of", "    row = np.asarray(row, dtype=np.float64)\n",
             "    import posenc\n    row = np.asarray(row, dtype=np.float64)\n"
             "    table = posenc.positional_encoding(int(2 * np.pi * base ** ((len(row) - 2) / len(row))) + 1, len(row), base=base)\n"
             "    return int(np.argmin(np.abs(table - row).sum(axis=1)))\n")]),
        # Code that tries to set its own grade: the tests run in another process, on the values the
        # functions return, so each of these wrong answers still loses its question.
        ("patches numpy.allclose (loops from 1-based positions)", "q2", [
            ("def positional_encoding_loop", "angle = pos / base", "angle = (pos + 1) / base"),
            ("def positional_encoding_loop", "def positional_encoding_loop(seq_len",
             "np.allclose = lambda *args, **kwargs: True\nnp.isclose = lambda a, b, *args, **kwargs: np.ones(np.shape(a), bool)\n\n\n"
             "def positional_encoding_loop(seq_len")]),
        ("patches Otter's test runner and reads and rewrites test files (vectorized swapped)", "q3", [
            ("def positional_encoding(", "np.sin(angles), np.cos(angles))", "np.cos(angles), np.sin(angles))"),
            ("def positional_encoding(", "def positional_encoding(seq_len",
             "import os\nfrom pathlib import Path\nfrom otter.test_files import exception_test\n"
             "exception_test.test_case.call_func = lambda self, env: None\n"
             "for _folder in {Path.cwd(), *Path.cwd().parents[:3], Path(os.environ.get('TMPDIR', '/tmp'))}:\n"
             "    for _test in _folder.glob('**/tests/q*.py'):\n"
             "        _test.write_text(_test.read_text().split('@test_case')[0])\n\n\n"
             "def positional_encoding(seq_len")]),
        ("replaces the reference in sys.modules (wavelengths are angular frequencies)", "q4", [
            ("def wavelengths", "return 2 * np.pi * base ** (2.0 * pair_index / d_model)",
             "return base ** (-2.0 * pair_index / d_model)"),
            ("def wavelengths", "def wavelengths(",
             "import sys\nimport types\n"
             "sys.modules['posenc'] = types.SimpleNamespace(\n"
             "    angular_frequencies=lambda d_model, base=10000.0: 2 * np.pi / base ** (-2.0 * (np.arange(d_model) // 2) / d_model))\n\n\n"
             "def wavelengths(")]),
        # Correct work written differently keeps full marks.
        ("correct: a search over every position, nested comprehensions, exp/log and a loop over columns, 2 pi / omega", (), [
            ("def position_of", "    row = np.asarray(row, dtype=np.float64)\n",
             "    d = len(row)\n"
             "    candidates = np.arange(int(np.ceil(2 * np.pi * base ** ((d - 2) / d))))[:, np.newaxis]\n"
             "    omega = base ** (-2 * (np.arange(d) // 2) / d)\n"
             "    table = np.where(np.arange(d) % 2 == 0, np.sin(candidates * omega), np.cos(candidates * omega))\n"
             "    return np.argmin(((table - np.asarray(row)) ** 2).sum(axis=1))\n"
             "    row = np.asarray(row, dtype=np.float64)\n"),
            ("def positional_encoding_loop", "    pe = np.zeros((seq_len, d_model))\n" + LOOP_BLOCK + "    return pe\n",
             "    angle = lambda pos, j: pos / base ** (2 * (j // 2) / d_model)\n"
             "    rows = [[math.sin(angle(pos, j)) if j % 2 == 0 else math.cos(angle(pos, j)) for j in range(d_model)]\n"
             "            for pos in range(seq_len)]\n"
             "    return np.array(rows, dtype=float).reshape(seq_len, d_model)\n"),
            ("def positional_encoding(", "omega = base ** (-2.0 * pair_index / d_model)",
             "omega = np.exp(-np.log(base) * 2.0 * pair_index / d_model)"),
            ("def positional_encoding(", "    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))",
             "    pe = np.empty((seq_len, d_model))\n"
             "    for j in range(d_model):\n"
             "        pe[:, j] = np.sin(angles[:, j]) if j % 2 == 0 else np.cos(angles[:, j])\n"
             "    return pe"),
            ("def wavelengths", "return 2 * np.pi * base ** (2.0 * pair_index / d_model)",
             "return 2 * np.pi / base ** (-2.0 * pair_index / d_model)")]),
        ("correct: loops through a helper for one row, vectorized into even and odd slices", (), [
            ("def positional_encoding_loop", "def positional_encoding_loop(seq_len",
             "def encoding_row(pos, d_model, base):\n"
             "    row = []\n"
             "    for j in range(d_model):\n"
             "        angle = pos / base ** (2 * (j // 2) / d_model)\n"
             "        row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))\n"
             "    return row\n\n\ndef positional_encoding_loop(seq_len"),
            ("def positional_encoding_loop", LOOP_BLOCK,
             "    for pos in range(seq_len):\n        pe[pos] = encoding_row(pos, d_model, base)\n"),
            ("def positional_encoding(", "    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))",
             "    pe = np.empty((seq_len, d_model))\n"
             "    pe[:, 0::2] = np.sin(angles[:, 0::2])\n"
             "    pe[:, 1::2] = np.cos(angles[:, 1::2])\n"
             "    return pe")]),
    ],
    "debug-the-module": [
        # Each planted bug re-broken in the fixed class (the student notebook has all six).
        ("sequence-first slicing re-broken", "q1", [
            ("NO PROMPT", 'pe.unsqueeze(0), persistent=False)', 'pe.unsqueeze(1), persistent=False)'),
            ("NO PROMPT", "self.pe[:, offset : offset + x.size(1)]", "self.pe[offset : offset + x.size(0)]")]),
        ("float32 angles re-broken", "q2", [
            ("NO PROMPT", "torch.arange(0, max_len, dtype=torch.float64)", "torch.arange(0, max_len, dtype=torch.float32)"),
            ("NO PROMPT", "torch.arange(d_model, dtype=torch.float64)", "torch.arange(d_model, dtype=torch.float32)"),
            ("NO PROMPT", "torch.zeros(max_len, d_model, dtype=torch.float64)", "torch.zeros(max_len, d_model)")]),
        ("1-based positions re-broken", "q3", [
            ("NO PROMPT", "torch.arange(0, max_len,", "torch.arange(1, max_len + 1,")]),
        ("exponent j instead of 2i re-broken", "q4", [
            ("NO PROMPT", "10000.0 ** (-2 * (column // 2) / d_model)", "10000.0 ** (-column / d_model)")]),
        ("crash on odd widths re-broken", "q5", [
            ("NO PROMPT", "pe[:, 0::2] = torch.sin(angles[:, 0::2])\n        pe[:, 1::2] = torch.cos(angles[:, 1::2])",
             "for j in range(0, d_model, 2):\n            pe[:, j] = torch.sin(angles[:, j])\n"
             "            pe[:, j + 1] = torch.cos(angles[:, j + 1])")]),
        ("dropout active in eval re-broken", "q6", [
            ("NO PROMPT", "self.dropout = nn.Dropout(dropout)", "self.dropout = dropout"),
            ("NO PROMPT", "return self.dropout(x)", "return nn.functional.dropout(x, self.dropout)")]),
        # Half fixes that keep the symptom.
        ("float32 frequencies with float64 positions (half fix)", "q2", [
            ("NO PROMPT", "column = torch.arange(d_model, dtype=torch.float64)",
             "column = torch.arange(d_model, dtype=torch.float32)")]),
        ("float64 output for a float32 input", "q2", [
            ("NO PROMPT", "self.pe[:, offset : offset + x.size(1)].to(x.dtype)", "self.pe[:, offset : offset + x.size(1)]")]),
        ("odd width: the last column a cosine", "q5", [
            ("NO PROMPT", "pe[:, 1::2] = torch.cos(angles[:, 1::2])\n",
             "pe[:, 1::2] = torch.cos(angles[:, 1::2])\n        if d_model % 2:\n"
             "            pe[:, -1] = torch.cos(angles[:, -1])\n")]),
        # The sines fixed, the cosines still from float32 angles (7e-5 off past position 1,000).
        ("cosine columns from float32 angles", "q2", [
            ("NO PROMPT", "pe[:, 1::2] = torch.cos(angles[:, 1::2])\n",
             "pe[:, 1::2] = torch.cos(angles[:, 1::2].float())\n")]),
        # Dropout that zeroes entries in training but does not rescale what it keeps.
        ("dropout without the 1/(1-p) rescale", "q6", [
            ("NO PROMPT", "return self.dropout(x)",
             "if not self.training:\n            return x\n"
             "        return x * (torch.rand_like(x) >= self.dropout.p).to(x.dtype)")]),
        # The course's module instead of the student's: no question keeps its points.
        ("subclasses posenc's module", ("q1", "q2", "q3", "q4", "q5", "q6"), [
            ("NO PROMPT", "# BEGIN SOLUTION NO PROMPT\nclass PositionalEncoding(nn.Module):",
             "# BEGIN SOLUTION NO PROMPT\nimport posenc.pytorch\n\n\n"
             "class PositionalEncoding(posenc.pytorch.PositionalEncoding):\n"
             "    def __init__(self, d_model, max_len=5000, dropout=0.0):\n"
             "        super().__init__(d_model, max_len=max_len, dropout=dropout)\n\n\n"
             "class Unused(nn.Module):")]),
        ("wraps posenc's module", ("q1", "q2", "q3", "q4", "q5", "q6"), [
            ("NO PROMPT", "self.dropout = nn.Dropout(dropout)",
             "self.dropout = nn.Dropout(dropout)\n        import posenc.pytorch\n"
             "        self.reference = posenc.pytorch.PositionalEncoding(d_model, max_len=max_len, dropout=dropout)"),
            ("NO PROMPT", "return self.dropout(x)", "return self.reference(x - self.pe[:, offset : offset + x.size(1)].to(x.dtype), offset)")]),
        # ... and question 7's check in torch, row by row with math.sin, sentence b filled with b.
        ("correct: exp/log frequencies, stacked pairs, a float32 table; a check row by row in torch", (), [
            ("NO PROMPT", "omega = 10000.0 ** (-2 * (column // 2) / d_model)",
             "omega = torch.exp(-math.log(10000.0) * 2 * (column // 2) / d_model)"),
            ("NO PROMPT", "        pe[:, 0::2] = torch.sin(angles[:, 0::2])\n        pe[:, 1::2] = torch.cos(angles[:, 1::2])\n",
             "        pe = torch.stack([torch.sin(angles[:, 0::2]), torch.cos(angles[:, 0::2])], dim=-1)\n"
             "        pe = pe.flatten(1)[:, :d_model].float()\n"),
            ("def follows_positions_spec", "    rng = np.random.default_rng(0)\n",
             "    for d_model, batch, seq_len, offset in ((4, 2, 3, 0), (5, 4, 6, 17), (8, 3, 2, 0), (8, 3, 2, 1000)):\n"
             "        try:\n"
             "            module = module_class(d_model, dropout=0.0)\n"
             "            module.eval()\n"
             "            x = torch.arange(batch, dtype=torch.float32)[:, None, None].expand(batch, seq_len, d_model)\n"
             "            out = module(x, offset=offset).detach()\n"
             "        except Exception:\n"
             "            return False\n"
             "        if out.shape != (batch, seq_len, d_model):\n"
             "            return False\n"
             "        for r in range(seq_len):\n"
             "            angles = [(offset + r) / 10000 ** (2 * (j // 2) / d_model) for j in range(d_model)]\n"
             "            expected = torch.tensor([math.sin(a) if j % 2 == 0 else math.cos(a) for j, a in enumerate(angles)])\n"
             "            for b in range(batch):\n"
             "                if not torch.allclose(out[b, r] - b, expected, atol=1e-5):\n"
             "                    return False\n"
             "    return True\n"
             "    rng = np.random.default_rng(0)\n")]),
        # Question 7, the check that would have caught question 1's bug: checks that miss a bug
        # (or compare with the notebook's own class) lose it; its other questions keep theirs.
        ("check: a batch of one sentence", "q7", [
            ("def follows_positions_spec", "((3, 5, 0), (2, 4, 11))", "((1, 5, 0), (1, 4, 11))")]),
        ("check: offset 0 only", "q7", [
            ("def follows_positions_spec", "((3, 5, 0), (2, 4, 11))", "((3, 5, 0), (2, 4, 0))")]),
        ("check: shapes only", "q7", [
            ("def follows_positions_spec", "if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-5):",
             "if tuple(out.shape) != x.shape:")]),
        # Question 1's public test as the check: the sentences agree and the tokens differ.
        ("check: sentences compared with each other, not with the formula", "q7", [
            ("def follows_positions_spec", "if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-5):",
             "added = out.double().numpy() - x\n"
             "            if tuple(out.shape) != x.shape or not np.allclose(added, added[:1], atol=1e-5) or np.allclose(added[0, 0], added[0, 1]):")]),
        ("check: compares with the notebook's own class", "q7", [
            ("def follows_positions_spec", "if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-5):",
             "pe = PositionalEncoding(d_model, max_len=64).eval()(torch.zeros(1, seq_len, d_model, dtype=torch.float64), offset=offset)[0].numpy()\n"
             "            if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-5):")]),
        ("check: lets a module's error through", "q7", [
            ("def follows_positions_spec", "            try:\n                module = module_class(d_model, max_len=64, dropout=0.0).eval()\n"
             "                with torch.no_grad():\n                    out = module(torch.from_numpy(x), offset=offset)\n"
             "            except Exception:  # a module that raises does not follow the specification\n                return False\n",
             "            module = module_class(d_model, max_len=64, dropout=0.0).eval()\n"
             "            with torch.no_grad():\n                out = module(torch.from_numpy(x), offset=offset)\n")]),
    ],
    "attend-by-position": [
        ("rotation the wrong way (transposed blocks)", "q1", [
            ("def rotation_for_shift", "matrix[0::2, 1::2] = np.diag(sin)", "matrix[0::2, 1::2] = np.diag(-sin)"),
            ("def rotation_for_shift", "matrix[1::2, 0::2] = np.diag(-sin)", "matrix[1::2, 0::2] = np.diag(sin)")]),
        ("head looks k tokens ahead", "q2", [
            ("def query_key_weights", "W_K = posenc.shift_matrix(k, 64).T", "W_K = posenc.shift_matrix(k, 64)")]),
        ("no temperature: the softmax stays flat", "q2", [
            ("def query_key_weights", "W_Q = 32.0 * np.eye(64)", "W_Q = np.eye(64)")]),
        ("spread along rows instead of diagonals", "q3", [
            ("def dot_product_spread", "diagonal = np.diagonal(gram, offset=delta)", "diagonal = gram[delta]")]),
        # Question 2 is graded with the reference M_k where it calls rotation_for_shift: a wrong
        # or unfinished question 1 costs question 1's points only.
        ("q2 calls a question 1 that raises", "q1", [
            ("def rotation_for_shift", "    omega = base", '    raise NotImplementedError("later")\n    omega = base'),
            ("def query_key_weights", "W_K = posenc.shift_matrix(k, 64).T", "W_K = rotation_for_shift(k).T")]),
        ("q2 calls a question 1 with transposed blocks", "q1", [
            ("def rotation_for_shift", "matrix[0::2, 1::2] = np.diag(sin)", "matrix[0::2, 1::2] = np.diag(-sin)"),
            ("def rotation_for_shift", "matrix[1::2, 0::2] = np.diag(-sin)", "matrix[1::2, 0::2] = np.diag(sin)"),
            ("def query_key_weights", "W_K = posenc.shift_matrix(k, 64).T", "W_K = rotation_for_shift(k, 64).T")]),
        ("rotation from posenc.shift_matrix, spread as a list", ("q1", "q3"), [
            ("def rotation_for_shift", "    omega = base", "    return posenc.shift_matrix(k, d_model, base=base)\n    omega = base"),
            ("def dot_product_spread", "    return spread", "    return spread.tolist()")]),
        # A wrong question 1 reached through a helper: question 2 still graded on its own.
        ("q2 reaches a question 1 with transposed blocks through a helper", "q1", [
            ("def rotation_for_shift", "matrix[0::2, 1::2] = np.diag(sin)", "matrix[0::2, 1::2] = np.diag(-sin)"),
            ("def rotation_for_shift", "matrix[1::2, 0::2] = np.diag(-sin)", "matrix[1::2, 0::2] = np.diag(sin)"),
            ("def query_key_weights", "def query_key_weights(k):",
             "def key_projection(k):\n    return rotation_for_shift(k).T\n\n\ndef query_key_weights(k):"),
            ("def query_key_weights", "W_K = posenc.shift_matrix(k, 64).T", "W_K = key_projection(k)")]),
        # Correct: two half shifts, W_Q W_K^T = 32 M_{k/2} M_{k/2} = 32 M_k, with the student's
        # rotation_for_shift at a real k.
        # ... and in question 4, the smallest factor from the closed form of the scores over every
        # window of distances.
        ("correct: a head from two half shifts with its own rotation at real k; smallest factor from the closed form", (), [
            ("def query_key_weights", "W_Q = 32.0 * np.eye(64)", "W_Q = np.sqrt(32.0) * rotation_for_shift(k / 2)"),
            ("def query_key_weights", "W_K = posenc.shift_matrix(k, 64).T", "W_K = np.sqrt(32.0) * rotation_for_shift(-k / 2)"),
            ("def smallest_factor", "    scores = pe @ (pe @ posenc.shift_matrix(1, 64).T).T / np.sqrt(64)",
             "    omega = 10000.0 ** (-2.0 * np.arange(32) / 64)\n"
             "    score = np.cos(np.outer(np.arange(-255, 256), omega)).sum(axis=1) / 8.0  # by distance -255 .. 255\n"
             "    windows = np.lib.stride_tricks.sliding_window_view(score - score.max(), 256)[:255]  # t = 0 .. 254\n"
             "    def least_weight(c):\n"
             "        return float((1.0 / np.exp(c * windows).sum(axis=1)).min())\n"
             "    c = 1.0\n"
             "    while least_weight(c) < weight:\n"
             "        c *= 2\n"
             "    low, high = c / 2, c\n"
             "    for _ in range(30):\n"
             "        middle = (low + high) / 2\n"
             "        if least_weight(middle) < weight:\n"
             "            low = middle\n"
             "        else:\n"
             "            high = middle\n"
             "    return high\n"
             "    scores = pe @ (pe @ posenc.shift_matrix(1, 64).T).T / np.sqrt(64)")]),
        # ... and in question 4, every shift of its own rotation_for_shift, at the last query only (its
        # target is away from the ends of the sequence).
        ("correct: rotation built pair by pair and used in q2 and q4, (W_Q, W_K) as a list, q4 at the last query", (), [
            ("def rotation_for_shift", "    matrix[0::2, 0::2] = np.diag(cos)",
             "    for i in range(d_model // 2):\n"
             "        matrix[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[cos[i], sin[i]], [-sin[i], cos[i]]]\n"
             "    return matrix\n    matrix[0::2, 0::2] = np.diag(cos)"),
            ("def query_key_weights", "W_K = posenc.shift_matrix(k, 64).T", "W_K = rotation_for_shift(k).T"),
            ("def query_key_weights", "return W_Q, W_K", "return [W_Q, W_K]"),
            ("def smallest_factor", "    scores = pe @ (pe @ posenc.shift_matrix(1, 64).T).T / np.sqrt(64)",
             "    shifts = np.arange(1, max_shift + 1)\n"
             "    last = np.array([pe @ (rotation_for_shift(k).T @ pe[255]) for k in shifts]) / 8.0  # query 255\n"
             "    last -= last.max(axis=1, keepdims=True)\n"
             "    def least_weight(c):\n"
             "        weights = np.exp(c * last)\n"
             "        return (weights[np.arange(len(shifts)), 255 - shifts] / weights.sum(axis=1)).min()\n"
             "    low, high = 1.0, 1000.0\n"
             "    while high / low > 1.0001:\n"
             "        middle = np.sqrt(low * high)\n"
             "        low, high = (middle, high) if least_weight(middle) < weight else (low, middle)\n"
             "    return float(high)\n"
             "    scores = pe @ (pe @ posenc.shift_matrix(1, 64).T).T / np.sqrt(64)")]),
        # Question 4, the smallest factor: c must meet the criterion and c / 1.01 must not.
        ("smallest factor: the weight averaged over the queries", "q4", [
            ("def smallest_factor", "return weights[np.arange(1, 256), np.arange(0, 255)].min()",
             "return weights[np.arange(1, 256), np.arange(0, 255)].mean()")]),
        ("smallest factor: only the first query of each shift, p = k", "q4", [
            ("def smallest_factor", "return weights[np.arange(1, 256), np.arange(0, 255)].min()", "return weights[1, 0]")]),
        ("smallest factor: question 2's factor", "q4", [
            ("def smallest_factor", "    # BEGIN SOLUTION\n", "    return 32.0\n")]),
        ("smallest factor: whole numbers only", "q4", [
            ("def smallest_factor", "    low, high = 0.0, 1.0\n",
             "    return next(float(c) for c in range(1, 1000) if least_weight(c) >= weight)\n    low, high = 0.0, 1.0\n")]),
        # Right at the question's setting, whatever the arguments (as a number typed in would be).
        ("smallest factor: its arguments ignored", "q4", [
            ("def smallest_factor", "    # BEGIN SOLUTION\n", "    weight, max_shift = 0.9, 200\n")]),
    ],
    # A wrong run_experiment (q1) also spoils the measurements of q2 and q3 that use it when
    # the bug touches what they measure: those wrong answers name every question they lose.
    "experiment-positions": [
        # run_experiment ignoring its seed also spoils compare_encodings and sweep_bases, which the
        # hidden tests of q2 and q3 call with a seed of their own.
        ("every run with seed 0", ("q1", "q2", "q3"), [
            ("def run_experiment", "base=base, seed=seed)", "base=base, seed=0)"),
            ("def run_experiment", "seq_len=train_len, seed=seed)", "seq_len=train_len, seed=0)")]),
        ("training batches not seeded by seed", ("q1", "q2", "q3"), [
            ("def run_experiment", "seq_len=train_len, seed=seed)", "seq_len=train_len)")]),
        ("trained at the default length", "q1", [
            ("def run_experiment", "steps=steps, seq_len=train_len,", "steps=steps,")]),
        ("base not passed to the model", ("q1", "q3"), [
            ("def run_experiment", "TASK, base=base, seed=seed)", "TASK, seed=seed)")]),
        ("test accuracy at the training length", ("q1", "q2", "q3"), [
            ("def run_experiment", '"test_acc": ex.evaluate(model, test_len)', '"test_acc": ex.evaluate(model, train_len)')]),
        # The tests pass every argument; the defaults are checked on their own. compare_encodings
        # (q2) relies on the default base, so a wrong one changes its RoPE run too.
        ("wrong default arguments", ("q1", "q2"), [
            ("def run_experiment", "def run_experiment(encoding, *, train_len=16, test_len=32, steps=200, seed=0, base=10000.0):",
             "def run_experiment(encoding, *, train_len=32, test_len=64, steps=100, seed=1, base=100.0):")]),
        # Results kept under a key without base: right for the first base asked, wrong after
        # (the sweep of q3 gets the first base's run for every base).
        ("a cache keyed without base", ("q1", "q3"), [
            ("def run_experiment", "def run_experiment(encoding,", "RUNS = {}\n\n\ndef run_experiment(encoding,"),
            ("def run_experiment", "    model = ex.build_model(",
             "    key = (encoding, train_len, test_len, steps, seed)\n"
             "    if key in RUNS:\n        return dict(RUNS[key])\n"
             "    RUNS[key] = run = _run(encoding, train_len, test_len, steps, seed, base)\n"
             "    return dict(run)\n\n\ndef _run(encoding, train_len, test_len, steps, seed, base):\n"
             "    model = ex.build_model(")]),
        # Each wrong answer of q4 comes with one of q2 or q3 (another function, another question):
        # the logits of the tokens not shuffled (a model without positions then looks order-aware),
        # shuffled the inverse way, or the causal mask not passed to the model.
        ("trained and tested on 16 tokens; logits shuffled the inverse way", ("q2", "q4"), [
            ("def compare_encodings", "test_len=TEST_LEN", "test_len=TRAIN_LEN"),
            ("def equivariance_gap", "model(tokens)[:, shuffle]", "model(tokens)[:, shuffle.argsort()]")]),
        ("learned measured without positions", "q2", [
            ("def compare_encodings", "run_experiment(encoding,", 'run_experiment({"learned": "none"}.get(encoding, encoding),')]),
        ("rope mixed up with sinusoidal; causal mask not passed", ("q2", "q4"), [
            ("def compare_encodings", "run_experiment(encoding,", 'run_experiment({"rope": "sinusoidal"}.get(encoding, encoding),'),
            ("def equivariance_gap", "ex.build_model(encoding, TASK, causal=causal, seed=seed)",
             "ex.build_model(encoding, TASK, seed=seed)")]),
        ("sweep of sinusoidal instead of rope; logits compared unshuffled", ("q3", "q4"), [
            ("def sweep_bases", 'run_experiment("rope",', 'run_experiment("sinusoidal",'),
            ("def equivariance_gap", "model(tokens)[:, shuffle]", "model(tokens)")]),
        ("sweep tested at the training length", "q3", [
            ("def sweep_bases", "test_len=64", "test_len=TRAIN_LEN")]),
        # Uncontrolled comparisons: each arm with a seed of its own (q2), each base (q3).
        ("a seed per encoding and per base", ("q2", "q3"), [
            ("def compare_encodings", "steps=steps, seed=seed)", "steps=steps, seed=seed + number)"),
            ("def compare_encodings", 'for encoding in ("none", "learned", "rope")}',
             'for number, encoding in enumerate(("none", "learned", "rope"))}'),
            ("def sweep_bases", "seed=seed, base=base)", "seed=seed + number, base=base)"),
            ("def sweep_bases", "for base in bases}", "for number, base in enumerate(bases)}")]),
        # The measurements typed in (numbers a correct run gives on some machine), or a function
        # that returns them without running anything: the hidden tests call the functions at a
        # seed of their own.
        ("numbers typed in instead of run", ("q2", "q3"), [
            ("def compare_encodings", "    return {encoding: run_experiment(",
             "    return {'none': {'train_acc': 0.11474609375, 'test_acc': 0.064453125, 'final_loss': 3.5904593467712402},\n"
             "            'learned': {'train_acc': 0.99609375, 'test_acc': 0.5052490234375, 'final_loss': 0.04167056456208229},\n"
             "            'rope': {'train_acc': 0.991455078125, 'test_acc': 0.978515625, 'final_loss': 0.03803139925003052}}\n"
             "    return {encoding: run_experiment("),
            ("def sweep_bases", "    return {base: run_experiment(",
             "    return {base: {10.0: 0.80712890625, 100.0: 0.07989501953125, 10000.0: 0.93695068359375}.get(base, 0.5)\n"
             "            for base in bases}\n"
             "    return {base: run_experiment(")]),
        # The best of several seeds for each encoding (cherry-picking): not the run of the seed
        # asked for, whatever the numbers (the hidden test records every training).
        ("cherry-picked: the best of three seeds", "q2", [
            ("def compare_encodings", "    return {encoding: run_experiment(", "    return {encoding: max((run_experiment("),
            ("def compare_encodings", "steps=steps, seed=seed)",
             "steps=steps, seed=seed + extra) for extra in range(3)), key=lambda run: run['test_acc'])")]),
        # NumPy floats (numpy.float64 is a float, and what np.mean returns): correct, full marks;
        # the sealed grader receives them as they are.
        # (and index_select and NumPy for q4's gap).
        ("NumPy floats where floats are asked for", (), [
            ("def equivariance_gap", "        gap = model(tokens[:, shuffle]) - model(tokens)[:, shuffle]\n",
             "        shuffled_first = model(tokens.index_select(1, shuffle)).numpy()\n"
             "        shuffled_after = model(tokens).index_select(1, shuffle).numpy()\n"),
            ("def equivariance_gap", "    return gap.abs().max().item()",
             "    import numpy as np\n    return float(np.max(np.abs(shuffled_after - shuffled_first)))"),
            ("def run_experiment", "    model = ex.build_model(", "    import numpy as np\n    model = ex.build_model("),
            ("def run_experiment", '"train_acc": ex.evaluate(model, train_len)', '"train_acc": np.float64(ex.evaluate(model, train_len))'),
            ("def run_experiment", '"test_acc": ex.evaluate(model, test_len)', '"test_acc": np.mean([ex.evaluate(model, test_len)])'),
            ("def run_experiment", '"final_loss": losses[-1]}', '"final_loss": np.float64(losses[-1])}')]),
        # 0-d tensors where floats are asked for: in run_experiment (q1 and the results of q2) and
        # in the sweep (q3).
        ("0-d tensors for floats", ("q1", "q2", "q3"), [
            ("def run_experiment", '"final_loss": losses[-1]}', '"final_loss": torch.tensor(losses[-1])}'),
            ("def sweep_bases", 'return {base: run_experiment(', 'return {base: torch.tensor(run_experiment('),
            ("def sweep_bases", '["test_acc"]', '["test_acc"])')]),
    ],
}

# Wrong answers graded together, in one submission with the edits of both: each pair edits
# different functions, checked by different questions that call only their own function (a
# wrong check of debug-the-module q7 and a bug of the class; a q1 of build-the-encoding, which
# stands alone, and another question; ...). test_wrong_answer_loses_its_points_only then asks
# each of the two to lose its own questions, and no question but the two answers' own: as
# strict as two submissions, for one notebook run (a third of the grading's time, where the
# notebook trains its models).
SHARED = {
    "build-the-encoding": [
        ("position from the fastest pair", "loops: 1-based positions"),
        ("position from the sine alone", "vectorized: crash on odd widths"),
        ("position truncated, not rounded", "wavelengths: exponent j instead of 2i"),
        ("position from posenc's table", "vectorized: offset ignored"),
    ],
    "debug-the-module": [
        ("sequence-first slicing re-broken", "check: a batch of one sentence"),
        ("float32 angles re-broken", "check: offset 0 only"),
        ("1-based positions re-broken", "check: shapes only"),
        ("exponent j instead of 2i re-broken", "check: sentences compared with each other, not with the formula"),
        ("crash on odd widths re-broken", "check: compares with the notebook's own class"),
        ("dropout active in eval re-broken", "check: lets a module's error through"),
    ],
    "attend-by-position": [
        ("head looks k tokens ahead", "smallest factor: the weight averaged over the queries"),
        ("no temperature: the softmax stays flat", "smallest factor: only the first query of each shift, p = k"),
        ("spread along rows instead of diagonals", "smallest factor: whole numbers only"),
    ],
    "experiment-positions": [
        ("learned measured without positions", "sweep tested at the training length"),
    ],
}


def _partner(name, label):
    """The wrong answer graded in the same submission as label (SHARED), or None."""
    return next((b if a == label else a for a, b in SHARED.get(name, []) if label in (a, b)), None)


GRADE_SCRIPT = """
import importlib.util, json, sys, tempfile
from pathlib import Path
tools, zip_path, *submissions = sys.argv[1:]
spec = importlib.util.spec_from_file_location("grade", Path(tools) / "grade.py")
grade = sys.modules["grade"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(grade)
name = grade.assignment_name(Path(zip_path))
tests = grade.read_tests(Path(zip_path))
given = grade.given_cells(Path("student") / f"{name}.ipynb")
scores = {}
# Graded as make grade does (tools/sealed.py): one grader for the batch, a kernel per submission.
with tempfile.TemporaryDirectory() as work, grade.Grader(Path(work), threads=1) as grader:
    for path in submissions:
        result = grade.grade_one(path, Path(path), name, tests, Path(work), 600, given=given,
                                 grader=grader)
        assert result.scores, result.reason
        # The instructor's details by question; the errors of the notebook's own cells (a
        # section of their own) are added to every question's.
        sections, question = {}, None
        for line in result.details.splitlines():
            question = (line.split(":")[0] if line.split(":")[0] in result.scores else "cells"
                        ) if line and not line.startswith(" ") else question
            sections[question] = sections.get(question, "") + line + "\\n"
        scores[path] = {q: [s, p, sections.get(q, "") + sections.get("cells", "")]
                        for q, (s, p) in result.scores.items()}
print(json.dumps(scores))
"""


GRADER = [(ROOT / "tools" / name).read_bytes() for name in ("grade.py", "sealed.py")]


def _fingerprint(*parts):
    """The digest of parts and of what every grade depends on besides them: the package's
    sources, the pins, this Python and the grading script."""
    package = sorted((ROOT / "code" / "posenc").rglob("*.py"))
    return digest(*parts, sys.version, GRADE_SCRIPT, (ROOT / "requirements.txt").read_bytes(),
                  *(f"{p.relative_to(ROOT)}\n".encode() + p.read_bytes() for p in package))


def _zip_fingerprint(zip_path):
    """The fingerprint of an autograder zip's files (their contents: the zip's own name and
    timestamps change at every `otter assign`)."""
    with zipfile.ZipFile(zip_path) as archive:
        return digest(*(f"{n}\n".encode() + archive.read(n) for n in sorted(archive.namelist())))


@dataclass
class Assignment:
    """One master and what `otter assign` made of it."""

    name: str
    folder: Path                # WORK / name
    assign: subprocess.CompletedProcess
    variants: dict              # label -> submission notebook path
    scores: dict = None         # label -> {question: (score, possible, summary)}

    @property
    def student(self):
        return self.folder / "student" / f"{self.name}.ipynb"

    @property
    def solution(self):
        return self.folder / "autograder" / f"{self.name}.ipynb"

    @property
    def autograder_zip(self):
        (zip_path,) = (self.folder / "autograder").glob(f"{self.name}-autograder_*.zip")
        return zip_path


def _run(command, **kwargs):
    """Run a command (otter and kernels live in subprocesses) and capture its output."""
    return subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=TIMEOUT, **kwargs)


def _parallel(jobs):
    """Call every function of jobs, two at a time, and return their results in order."""
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(lambda job: job(), jobs))


def _answer_cell(nb, marker):
    """The one code cell of nb whose source contains marker."""
    cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    assert len(cells) == 1, f"{len(cells)} code cells contain {marker!r}"
    return cells[0]


def _wrong_answer(solution, edits):
    """A copy of the solution notebook with the edits of one wrong answer applied."""
    nb = nbformat.read(solution, as_version=4)
    for marker, old, new in edits:
        cell = _answer_cell(nb, marker)
        assert cell.source.count(old) == 1, f"{old!r} is not once in the cell of {marker!r}"
        cell.source = cell.source.replace(old, new)
    return nb


def _submission(folder, label, nb):
    """Write nb as <folder>/<label>/<name>.ipynb (submissions keep the notebook's name)."""
    path = folder / "submissions" / label.replace(" ", "-").replace(":", "") / nb.metadata["otter"]["assignment_name"]
    path = path.with_suffix(".ipynb")
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _execute(notebook):
    """Run a notebook the way a student does (all cells, errors shown) and return it."""
    result = _run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                   "--allow-errors", "--inplace", notebook.name], cwd=notebook.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    return nbformat.read(notebook, as_version=4)


@pytest.fixture(scope="module")
def assignments(make):
    """otter assign on every master, then every submission graded: once per session.

    `make assignments` runs otter assign (with the masters' tests) on the masters that changed,
    or whose package or pins did, since it last did (none, usually); each one's output is then
    copied to WORK, where the submissions are written and graded.
    """
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    made = make("--keep-going", f"--jobs={WORKERS}", "assignments")
    runs = []
    for master in MASTERS:
        # make writes .assigned after otter assign succeeded, and deletes the folder before.
        output = GENERATED / master.stem
        if (output / ".assigned").exists():
            shutil.copytree(output, WORK / master.stem)
            runs.append(subprocess.CompletedProcess(made.args, 0, made.stdout, made.stderr))
        else:
            runs.append(made if made.returncode else subprocess.CompletedProcess(
                made.args, 1, made.stdout, f"make assignments made no {output}\n{made.stderr}"))
    found = {}
    for master, run in zip(MASTERS, runs):
        a = Assignment(master.stem, WORK / master.stem, run, {})
        found[a.name] = a
        if run.returncode:
            continue
        a.variants["student"] = _submission(a.folder, "student", nbformat.read(a.student, 4))
        a.variants["solution"] = _submission(a.folder, "solution", nbformat.read(a.solution, 4))
        answers = {label: edits for label, _, edits in WRONG_ANSWERS.get(a.name, [])}
        for label, edits in answers.items():
            partner = _partner(a.name, label)
            if partner is None:
                a.variants[label] = _submission(a.folder, label, _wrong_answer(a.solution, edits))
            elif partner in a.variants:  # written with its partner
                a.variants[label] = a.variants[partner]
            else:
                a.variants[label] = _submission(a.folder, f"{label} + {partner}",
                                                _wrong_answer(a.solution, edits + answers[partner]))

    def grade(a, paths):
        result = _run([sys.executable, "-c", GRADE_SCRIPT, ROOT / "tools", a.autograder_zip, *paths],
                      cwd=a.folder)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout.strip().splitlines()[-1])

    # The grades kept from an earlier run of the same inputs; the others are graded below.
    keys, by_path = {}, {}
    for a in found.values():
        if a.assign.returncode == 0:
            tests = _zip_fingerprint(a.autograder_zip), *GRADER
            for path in set(a.variants.values()):
                keys[str(path)] = _fingerprint(*tests, path.read_bytes())
                saved = kept("grades", keys[str(path)])
                if saved is not None:
                    by_path[str(path)] = saved
    # Each assignment's other submissions in batches of GRADE_BATCH, so that the two workers
    # share the slow ones; the slowest assignments first (SLOWEST_GRADED), so that the two end
    # together.
    order = sorted(found.values(), key=lambda a: SLOWEST_GRADED.index(a.name)
                   if a.name in SLOWEST_GRADED else len(SLOWEST_GRADED))
    batches = [(a, paths[i:i + GRADE_BATCH]) for a in order if a.assign.returncode == 0
               for paths in [sorted({p for p in a.variants.values() if str(p) not in by_path})]
               for i in range(0, len(paths), GRADE_BATCH)]
    for scores in _parallel([lambda a=a, paths=paths: grade(a, paths) for a, paths in batches]):
        for path, score in scores.items():
            by_path[path] = keep("grades", keys[path], score)
    for a in found.values():
        if a.assign.returncode == 0:
            a.scores = {label: by_path[str(path)] for label, path in a.variants.items()}
    return found


def _autograded(nb):
    """The autograded questions of a generated notebook: the tests stored in its metadata."""
    return sorted(nb.metadata["otter"]["tests"])


@pytest.mark.parametrize("name", NAMES)
def test_otter_assign_succeeds(assignments, name):
    a = assignments[name]
    assert a.assign.returncode == 0, a.assign.stdout[-3000:] + a.assign.stderr[-3000:]
    assert a.student.exists() and a.solution.exists() and a.autograder_zip.exists()


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_scores_zero(assignments, name):
    scores = assignments[name].scores["student"]
    assert scores, "no autograded question"
    assert {q: s[0] for q, s in scores.items()} == {q: 0 for q in scores}


@pytest.mark.parametrize("name", NAMES)
def test_solutions_score_full_marks(assignments, name):
    scores = assignments[name].scores["solution"]
    failed = {q: s[2] for q, s in scores.items() if s[0] != s[1]}
    assert not failed, "\n".join(failed.values())


@pytest.mark.parametrize("name", NAMES)
def test_every_autograded_question_has_public_and_hidden_tests(assignments, name):
    """Public tests in the student notebook; hidden ones only in the autograder."""
    a = assignments[name]
    questions = set(a.scores["solution"])
    student = nbformat.read(a.student, 4)
    assert set(_autograded(student)) == questions, "every autograded question has public tests"
    for question, source in student.metadata["otter"]["tests"].items():
        assert "hidden=False" in source and "hidden=True" not in source, question
    solution = nbformat.read(a.solution, 4)
    for question, source in solution.metadata["otter"]["tests"].items():
        assert "hidden=True" in source, f"{question} has no hidden test"


@pytest.mark.parametrize("name", NAMES)
def test_every_autograded_question_has_a_wrong_answer(name):
    """Every autograded code question is covered by at least one wrong answer below."""
    solution = nbformat.read(MASTERS[NAMES.index(name)], 4)
    questions = {c.source.split("name:")[1].split()[0] for c in solution.cells
                 if c.cell_type == "raw" and c.source.startswith("# BEGIN QUESTION")
                 and "manual: true" not in c.source}
    assert questions == {q for _, lost, _ in WRONG_ANSWERS[name] for q in _questions(lost)}


def _questions(lost):
    """The questions a wrong answer must lose: one name or a tuple of names."""
    return (lost,) if isinstance(lost, str) else lost


def test_shared_answers_edit_different_functions_for_different_questions():
    """Each pair of SHARED: two wrong answers (not correct ones) whose edits touch different
    cells and whose questions differ; no answer in two pairs."""
    for name, pairs in SHARED.items():
        labels = [label for pair in pairs for label in pair]
        assert len(labels) == len(set(labels)), f"{name}: an answer in two pairs"
        answers = {label: (_questions(lost), edits) for label, lost, edits in WRONG_ANSWERS[name]}
        for a, b in pairs:
            (lost_a, edits_a), (lost_b, edits_b) = answers[a], answers[b]
            assert lost_a and lost_b, f"{name}: a correct answer is graded alone ({a!r}, {b!r})"
            assert set(lost_a).isdisjoint(lost_b), f"{name}: {a!r} and {b!r} lose the same question"
            assert {m for m, _, _ in edits_a}.isdisjoint(m for m, _, _ in edits_b), (
                f"{name}: {a!r} and {b!r} edit the same cell")


WRONG = [(name, label, _questions(lost)) for name, answers in WRONG_ANSWERS.items()
         for label, lost, _ in answers]


@pytest.mark.parametrize(("name", "label", "questions"), WRONG,
                         ids=[f"{n}: {label}" for n, label, _ in WRONG])
def test_wrong_answer_loses_its_points_only(assignments, name, label, questions):
    """A wrong answer loses its questions' points and only those; a differently correct one none."""
    scores = assignments[name].scores[label]
    for question in questions:
        assert scores[question][0] == 0, f"{label} kept {scores[question][0]} points of {question}"
    partner = _partner(name, label)  # graded in the same submission: its questions are its own
    theirs = _questions(next(lost for other, lost, _ in WRONG_ANSWERS[name] if other == partner)) if partner else ()
    others = {q: s[2] for q, s in scores.items() if q not in (*questions, *theirs) and s[0] != s[1]}
    assert not others, f"{label} also lost points elsewhere:\n" + "\n".join(others.values())


@pytest.fixture(scope="module")
def executed(assignments):
    """Notebooks run as a student runs them: renamed copies, and a half-done one."""
    paths = {}
    for a in assignments.values():
        # The self-check's set-up is in the first code cells: run only up to those.
        nb = nbformat.read(a.student, 4)
        nb.cells = nb.cells[:3]
        renamed = a.folder / "renamed" / "my-copy.ipynb"
        renamed.parent.mkdir(exist_ok=True)
        nbformat.write(nb, renamed)
        paths[a.name, "renamed"] = renamed
    # build-the-encoding with question 1 answered only.
    a = assignments["build-the-encoding"]
    nb = nbformat.read(a.student, 4)
    _answer_cell(nb, "def position_of").source = _answer_cell(
        nbformat.read(a.solution, 4), "def position_of").source
    half = a.folder / "half-done" / f"{a.name}.ipynb"
    half.parent.mkdir(exist_ok=True)
    nbformat.write(nb, half)
    paths[a.name, "half-done"] = half
    jobs = [lambda p=p: reused("executed", _fingerprint(p.name, p.read_bytes()), lambda: _execute(p))
            for p in paths.values()]
    return {key: nbformat.from_dict(nb) for key, nb in zip(paths, _parallel(jobs))}


def _text(output):
    """What a student reads of one cell output."""
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}\n" + "\n".join(output.traceback)
    return output.get("text", "") + output.get("data", {}).get("text/plain", "")


@pytest.mark.parametrize("name", NAMES)
def test_renamed_notebook_gets_a_clear_message(executed, name):
    nb = executed[name, "renamed"]
    first = next(c for c in nb.cells if c.cell_type == "code" and c.get("id") != "colab-install")
    errors = [o for o in first.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "FileNotFoundError"
    assert f"back its name {name}.ipynb" in errors[0].evalue
    assert "site-packages" not in _text(errors[0]), "a traceback from inside a library"


def test_half_done_notebook_gets_clear_messages(executed):
    nb = executed["build-the-encoding", "half-done"]
    checks = {c.source.split('"')[1]: "".join(_text(o) for o in c.outputs)
              for c in nb.cells if c.cell_type == "code" and c.source.startswith("grader.check(")}
    assert "q1 results: All test cases passed!" in checks["q1"], checks["q1"]
    for question, function in [("q2", "positional_encoding_loop"), ("q3", "positional_encoding"),
                               ("q4", "wavelengths")]:
        assert "finish the function" in checks[question] or "is not defined" in checks[question], checks[question]
        assert function in checks[question]
        assert "Traceback" not in checks[question] and "site-packages" not in checks[question]


def test_wrong_answers_are_graded_with_a_message(assignments):
    """The grader's report names what is wrong, e.g. the function that raised."""
    report = assignments["build-the-encoding"].scores["vectorized: the function raises"]["q3"][2]
    assert "NotImplementedError: not vectorized yet" in report


# The message a student reads for some of the wrong answers above: (question, words it contains).
# Each frequent mistake is told its own cause, and each broken rule is named.
MESSAGES = {
    "build-the-encoding": {
        "position from the fastest pair": ("q1", "modulo 2 pi, the wavelength of pair 0"),
        "position truncated, not rounded": ("q1", "round to the nearest integer instead of cutting the decimals off"),
        "loops: 1-based positions": ("q2", "positions start at 0"),
        "loops: exponent j instead of 2i": ("q2", "must share their angular frequency"),
        "posenc instead of own code (loops, vectorized under another name, wavelengths)": ("q2", "uses the course's package"),
        "methods swapped: loops with no loop, vectorized with a loop over positions": ("q2", "has 0 level(s) of Python loops: question 2 asks for two nested loops"),
        "one loop only in q2, q3 calls the loop function of q2": ("q2", "has 1 level(s) of Python loops"),
        "vectorized: concatenated [sin | cos] layout": ("q3", "concatenated layout"),
        # Absent while grading: the cells that import it fail (tools/sealed.py).
        "posenc through a default argument, a dict and functools.partial": ("q2", "posenc is not available while grading"),
        "position from posenc's table": ("q1", "posenc is not available while grading"),
        "posenc through eval, importlib and sys.modules": ("q2", "runs code or imports modules chosen at run time (eval)"),
        "loops that copy a vectorized table": ("q2", "sines or cosines of single angles for 42 entries"),
        "vectorized except a loop over positions for odd widths": ("q3", "more lines of Python for 64 positions than for 8 (d_model = 7)"),
        "numpy.vectorize imported under another name": ("q3", "calls vectorize, a Python loop in disguise"),
        "wavelengths: angular frequency instead of wavelength": ("q4", "returned the angular frequencies"),
    },
    "debug-the-module": {
        "float32 angles re-broken": ("q2", "compute the positions and the angular frequencies in float64"),
        "float32 frequencies with float64 positions (half fix)": ("q2", "compute the positions and the angular frequencies in float64"),
        "float64 output for a float32 input": ("q2", "the module returns the dtype of its input"),
        "odd width: the last column a cosine": ("q5", "holds a cosine"),
        "cosine columns from float32 angles": ("q2", "(a cosine) at positions 1000 to 5000 is off the formula"),
        "dropout without the 1/(1-p) rescale": ("q6", "are not multiplied by 1 / (1 - p) = 2"),
        "subclasses posenc's module": ("q4", "posenc is not available while grading"),
        "wraps posenc's module": ("q6", "posenc is not available while grading"),
        "check: shapes only": ("q7", "follows_positions_spec(<a module that adds nothing>) returned True, expected False"),
        "check: a batch of one sentence": ("q7", "<a bug: only the first sentence of the batch gets positions>: returned True"),
        "check: compares with the notebook's own class": ("q7", "<correct: a float64 table of max_len rows, sliced>: returned False"),
        "check: lets a module's error through": ("q7", "(an error unless batch == seq_len)>: raised RuntimeError"),
    },
    "attend-by-position": {
        "rotation the wrong way (transposed blocks)": ("q1", "check the sign of the sine terms"),
        "rotation from posenc.shift_matrix, spread as a list": ("q1", "uses the course's package"),
        "smallest factor: the weight averaged over the queries": ("q4", "c is too small"),
        "smallest factor: question 2's factor": ("q4", "is not the smallest factor to 1%"),
        "smallest factor: its arguments ignored": ("q4", "smallest_factor(0.99, 50) = "),
    },
    "experiment-positions": {
        "every run with seed 0": ("q1", "the same run done step by step gives"),
        "a seed per encoding and per base": ("q2", "a controlled comparison trains each of the three encodings once"),
        "cherry-picked: the best of three seeds": ("q2", "trained 9 models"),
        "sweep of sinusoidal instead of rope; logits compared unshuffled": ("q4", "shuffle the model's logits of the tokens along the sequence axis"),
        "rope mixed up with sinusoidal; causal mask not passed": ("q4", "not the gap of that model"),
        "wrong default arguments": ("q1", "has the default 32, the question gives 16"),
        "a cache keyed without base": ("q1", "no result kept from another call"),
        "numbers typed in instead of run": ("q2", "trained 0 models"),
        "0-d tensors for floats": ("q1", "expected a Python float"),
    },
}
# ... and the other questions of the answers that lose several, each for its own reason.
MESSAGES_ALSO = [
    ("build-the-encoding", "sine and cosine swapped (loops, vectorized)", "q2", "sine and cosine are swapped"),
    ("build-the-encoding", "posenc through a default argument, a dict and functools.partial", "q3", "posenc is not available while grading"),
    ("build-the-encoding", "posenc through a default argument, a dict and functools.partial", "q4", "posenc is not available while grading"),
    ("build-the-encoding", "posenc through eval, importlib and sys.modules", "q3", "chosen at run time (import_module)"),
    ("build-the-encoding", "posenc through eval, importlib and sys.modules", "q4", "chosen at run time (modules)"),
    ("build-the-encoding", "sine and cosine swapped (loops, vectorized)", "q3", "sine and cosine are swapped"),
    ("build-the-encoding", "methods swapped: loops with no loop, vectorized with a loop over positions", "q3", "asks for no Python loop over positions"),
    ("build-the-encoding", "one loop only in q2, q3 calls the loop function of q2", "q3", "asks for no Python loop over positions"),
    ("build-the-encoding", "posenc instead of own code (loops, vectorized under another name, wavelengths)", "q3", "posenc is not available while grading"),
    ("build-the-encoding", "posenc instead of own code (loops, vectorized under another name, wavelengths)", "q4", "uses the course's package"),
    ("attend-by-position", "rotation from posenc.shift_matrix, spread as a list", "q3", "returned a list, expected a numpy.ndarray"),
    ("experiment-positions", "a seed per encoding and per base", "q3", "a controlled sweep gives every base the seed and steps it"),
    ("experiment-positions", "numbers typed in instead of run", "q3", "is not RoPE with that base, seed and number of steps"),
    ("experiment-positions", "0-d tensors for floats", "q3", "expected a Python float"),
]
MESSAGE_CASES = [(name, label, *expected) for name, labels in MESSAGES.items()
                 for label, expected in labels.items()] + MESSAGES_ALSO


@pytest.mark.parametrize(("name", "label", "question", "words"), MESSAGE_CASES,
                         ids=[f"{n}: {label}: {q}" for n, label, q, _ in MESSAGE_CASES])
def test_wrong_answer_gets_a_message_naming_its_cause(assignments, name, label, question, words):
    lost = {lost for other, lost, _ in WRONG_ANSWERS[name] if other == label}
    assert lost, f"{label} is not a wrong answer of {name}"
    report = assignments[name].scores[label][question][2]
    assert words in report, report[-3000:]


def _pins(path):
    """The lines of a requirements file, without comments and blank lines."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


@pytest.mark.parametrize("name", NAMES)
def test_autograder_environment_matches_the_course(assignments, name):
    """The zip's environment.yml (Gradescope, `otter grade`): the course's Python, the CPU build of
    its torch, its NumPy and Otter, and posenc at the release tag of this version."""
    with zipfile.ZipFile(assignments[name].autograder_zip) as archive:
        environment = yaml.safe_load(archive.read("environment.yml"))
    dependencies = environment["dependencies"]
    python = (ROOT / "binder" / "runtime.txt").read_text().strip().removeprefix("python-")
    assert f"python={python}" in dependencies, dependencies
    (pip,) = [d["pip"] for d in dependencies if isinstance(d, dict)]
    course = {line.split("==")[0].split("[")[0]: line.split("==")[1]
              for line in _pins(ROOT / "requirements.txt") if "==" in line}
    assert set(_pins(ROOT / "assignments" / "autograder-requirements.txt")) <= set(pip), pip
    assert f"otter-grader[grading,plugins]=={course['otter-grader']}" in pip, pip
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip, pip
    assert f"torch=={course['torch']}+cpu" in pip, "the CPU build of the course's torch"
    assert f"numpy=={course['numpy']}" in pip, pip
    version = {}
    exec((ROOT / "code" / "posenc" / "_version.py").read_text(), version)
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert f"posenc @ git+{url}@v{version['__version__']}" in pip, "posenc pinned to this version's tag"
    assert not [line for line in pip if line.split("==")[0] in ("numpy", "torch") and line not in (
        f"numpy=={course['numpy']}", f"torch=={course['torch']}+cpu")], pip


# The rule checks of the masters' tests, tested here in-process. An Otter test cell can only use
# what it defines (or imports from the student's environment), so each test that needs a helper
# (own_code, loop_depth, ...) carries a copy of it: the copies must stay the same, and one is
# tested below on student code of our own.

def _helpers():
    """{name: {source: [(assignment, test)]}} for every function defined inside a test function
    of the masters' test cells."""
    found = {}
    for master in MASTERS:
        for cell in nbformat.read(master, 4).cells:
            if cell.cell_type != "code" or not cell.source.startswith(("def test_", "# HIDDEN")):
                continue
            for test in ast.parse(cell.source).body:
                if isinstance(test, ast.FunctionDef):
                    for node in test.body:
                        if isinstance(node, ast.FunctionDef):
                            source = textwrap.dedent(ast.get_source_segment(cell.source, node, padded=True))
                            found.setdefault(node.name, {}).setdefault(source, []).append((master.stem, test.name))
    return found


def test_every_copy_of_a_check_is_the_same():
    helpers = _helpers()
    assert {"own_code", "loop_depth", "python_lines", "array_expected", "hint"} <= set(helpers)
    differ = {name: [where for where in copies.values()] for name, copies in helpers.items() if len(copies) > 1}
    assert not differ, f"copies of a check that differ (by where they are): {differ}"


def _check(name):
    """The masters' helper `name`, defined in a namespace of its own."""
    (source,) = _helpers()[name]
    namespace = {}
    exec(source, namespace)
    return namespace[name]


def _student(tmp_path, source):
    """A module made of source, as a student's notebook defines its functions (from a file, so
    that inspect.getsource finds them, as it finds a notebook's cells)."""
    path = tmp_path / f"student_{abs(hash(source))}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OWN_CODE_CAUGHT = {
    "a call of posenc": """
        import posenc
        def answer(n):
            return posenc.angular_frequencies(n)
        """,
    "an import inside the function": """
        def answer(n):
            from posenc import angular_frequencies
            return angular_frequencies(n)
        """,
    "a function imported from posenc under another name": """
        from posenc import angular_frequencies as frequencies
        def answer(n):
            return frequencies(n)
        """,
    "through a helper of the notebook": """
        import posenc
        def helper(n):
            return posenc.angular_frequencies(n)
        def answer(n):
            return 1 / helper(n)
        """,
    "in a closure": """
        import posenc
        def make():
            reference = posenc.angular_frequencies
            def answer(n):
                return reference(n)
            return answer
        answer = make()
        """,
    "in a nested function": """
        def answer(n):
            def inner():
                import posenc
                return posenc.angular_frequencies(n)
            return inner()
        """,
    "a method of a class of the notebook": """
        import posenc
        class Answer:
            def __call__(self, n):
                return posenc.angular_frequencies(n)
        answer = Answer
        """,
    "a default argument": """
        from posenc import angular_frequencies
        def answer(n, implementation=angular_frequencies):
            return implementation(n)
        """,
    "a keyword-only default argument": """
        import posenc
        def answer(n, *, implementation=posenc.angular_frequencies):
            return implementation(n)
        """,
    "a dict of the notebook": """
        import posenc
        METHODS = {"fast": posenc.angular_frequencies}
        def answer(n):
            return METHODS["fast"](n)
        """,
    "functools.partial": """
        import functools
        import posenc
        frequencies = functools.partial(posenc.angular_frequencies, base=10000.0)
        def answer(n):
            return frequencies(n)
        """,
}

# Code or imports built at run time: what they reach cannot be read, so they are refused.
OWN_CODE_BUILT = {
    "eval of a string": """
        def answer(n):
            return eval("__import__('pos' + 'enc').angular_frequencies")(n)
        """,
    "exec of a string": """
        def answer(n):
            scope = {}
            exec("import posenc as p; f = p.angular_frequencies", scope)
            return scope["f"](n)
        """,
    "importlib with a name built at run time": """
        import importlib
        def answer(n):
            return importlib.import_module("pos" + "enc").angular_frequencies(n)
        """,
    "sys.modules": """
        import sys
        def answer(n):
            return sys.modules["pos" + "enc"].angular_frequencies(n)
        """,
}


@pytest.mark.parametrize("source", OWN_CODE_BUILT.values(), ids=OWN_CODE_BUILT)
def test_own_code_refuses_code_built_at_run_time(tmp_path, source):
    with pytest.raises(AssertionError, match=r"answer runs code or imports modules chosen at run time"):
        _check("own_code")(_student(tmp_path, source).answer, "answer")


@pytest.mark.parametrize("source", OWN_CODE_CAUGHT.values(), ids=OWN_CODE_CAUGHT)
def test_own_code_catches_the_course_s_package(tmp_path, source):
    with pytest.raises(AssertionError, match=r"answer uses the course's package \(posenc"):
        _check("own_code")(_student(tmp_path, source).answer, "answer")


def test_own_code_catches_a_subclass_of_the_course_s_class(tmp_path):
    student = _student(tmp_path, """
        class Base:
            pass
        Base.__module__ = "posenc.pytorch"  # as if imported from the course's package
        class Answer(Base):
            pass
        """)
    with pytest.raises(AssertionError, match=r"uses the course's package \(posenc.pytorch\)"):
        _check("own_code")(student.Answer, "Answer")


def test_own_code_passes_the_student_s_own_code(tmp_path):
    student = _student(tmp_path, """
        import math
        import numpy as np
        posenc_like = "posencoding"  # a name that merely starts like the package's
        def helper(n):
            return np.arange(n) // 2
        def answer(n, base=10000.0):
            return [2 * math.pi * base ** (2 * i / n) for i in helper(n)]
        """)
    _check("own_code")(student.answer, "answer")


LOOP_DEPTHS = {
    "two nested for loops": (2, """
        def f(n):
            for a in range(n):
                for b in range(n):
                    pass
        """),
    "a while loop around a for loop": (2, """
        def f(n):
            while n:
                n -= 1
                for b in range(n):
                    pass
        """),
    "a comprehension of two generators": (2, """
        def f(n):
            return [[a * b for b in range(n)] for a in range(n)]
        """),
    "a loop calling the notebook's function with a loop": (2, """
        def row(n):
            return [b for b in range(n)]
        def f(n):
            for a in range(n):
                row(n)
        """),
    "one loop": (1, """
        def f(n):
            total = 0
            for a in range(n):
                total += a
            return total
        """),
    "no loop": (0, """
        import numpy as np
        def f(n):
            return np.arange(n)[:, None] * np.arange(n)
        """),
    "recursion, no loop": (0, """
        def f(n):
            return 0 if n == 0 else f(n - 1)
        """),
}


@pytest.mark.parametrize(("depth", "source"), LOOP_DEPTHS.values(), ids=LOOP_DEPTHS)
def test_loop_depth(tmp_path, depth, source):
    assert _check("loop_depth")(_student(tmp_path, source).f) == depth


def test_python_lines_count_the_notebook_s_lines_only(tmp_path):
    student = _student(tmp_path, """
        import numpy as np
        def vectorized(n):
            return np.sin(np.arange(n)[:, None] * np.ones(4))
        def per_row(n):
            rows = []
            for pos in range(n):
                rows.append(np.sin(pos * np.ones(4)))
            return np.array(rows)
        """)
    python_lines = _check("python_lines")
    assert python_lines(student.vectorized, 64) == python_lines(student.vectorized, 8) == 1
    assert python_lines(student.per_row, 64) - python_lines(student.per_row, 8) == 2 * (64 - 8)


def test_lowest_weight_is_the_least_weight_of_the_head_itself():
    """attend-by-position q4's hidden reference (running sums over one table of encodings) against
    the head itself: W_Q = c I, W_K = M_k^T for every shift k, scores / sqrt(64), softmax."""
    import numpy as np

    import posenc

    lowest_weight = _check("lowest_weight")
    pe = posenc.positional_encoding(256, 64)
    for c, max_shift in ((5.0, 8), (21.0, 12), (40.0, 2)):
        least = {}
        for k in range(1, max_shift + 1):
            scores = (pe @ (c * np.eye(64))) @ (pe @ posenc.shift_matrix(k, 64).T).T / 8.0
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            least.update({(k, p): weights[p, p - k] for p in range(k, 256)})
        weight, k, p = lowest_weight(c, max_shift)
        assert abs(weight - min(least.values())) < 1e-12 and abs(least[k, p] - weight) < 1e-12, (c, max_shift)


@pytest.mark.parametrize(("value", "words"), [
    (None, "returned None: finish the function"), (..., "returned Ellipsis: finish the function"),
    ([[0.0, 1.0]], "returned a list, expected a numpy.ndarray"), ((1.0,), "returned a tuple")])
def test_array_expected_says_what_to_return(value, words):
    import numpy as np

    array_expected = _check("array_expected")
    assert words in array_expected(value, "f(3, 4)")
    assert array_expected(np.zeros(2), "f(3, 4)") == ""


@pytest.mark.parametrize(("rows", "cause"), [
    ([[0.8415, 0.5403, 0.01, 1.0], [0.9093, -0.4161, 0.02, 0.9998]], "positions start at 0"),
    ([[1.0, 0.0, 1.0, 0.0], [0.5403, 0.8415, 1.0, 0.01]], "sine and cosine are swapped"),
    ([[0.0, 0.0, 1.0, 1.0], [0.8415, 0.01, 0.5403, 1.0]], "concatenated layout"),
    ([[0.0, 1.0, 0.0, 1.0], [0.8415, 0.9950, 0.01, 1.0]], "must share their angular frequency"),
    ([[0.0, 1.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]], "rows 0 and 1 are")])
def test_hint_names_the_cause_of_a_wrong_table(rows, cause):
    assert cause in _check("hint")(rows)
