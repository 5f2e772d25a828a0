"""The submissions that tests/test_assignments.py grades besides each master's solution and
student notebook: wrong answers (and correct ones written differently) as edits of the solution,
and the pairs of wrong answers graded in one submission."""

import importlib.util
import textwrap
from pathlib import Path


def _debug_variant():
    """assignments/debug-the-module/variant.py: its pool of bugs and the public draw."""
    path = Path(__file__).resolve().parents[1] / "assignments" / "debug-the-module" / "variant.py"
    spec = importlib.util.spec_from_file_location("debug_the_module_variant", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# debug-the-module's handed-out class with every bug fixed in place (as the assignment used to ask).
HANDED_OUT_FIXED = [("class PositionalEncoding(nn.Module):", textwrap.indent(_variant.POOL[slot][bug].code, " " * 8),
                     textwrap.indent(_variant.FIXES[slot], " " * 8))
                    for _variant in [_debug_variant()] for slot, bug in _variant.PUBLIC.items()]


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
        # The course's package in q1: it is absent while the notebook is graded (grading/sealed.py).
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
        # Each answer FixN is the handed-out module with question N's bug fixed and no other: a
        # fix that keeps the symptom, or that fixes more, loses its question (or half of it).
        ("q1: the window sliced by seq_len, still sequence first", "q1", [
            ("class Fix1(", "return self.pe[offset : offset + x.size(1)][None]",
             "return self.pe[offset : offset + x.size(1)][:, None, :]")]),
        ("q2: the angular frequencies still rounded to float32", "q2", [
            ("class Fix2(", "return positions * omega", "return positions * omega.float().to(torch.float64)")]),
        # Question 3's symptom alone: row 0 overwritten, the other positions still from 1.
        ("q3: row 0 overwritten, positions still from 1", "q3", [
            ("class Fix3(", "return torch.arange(max_len, dtype=torch.float64)[:, None]",
             "positions = torch.arange(1, max_len + 1, dtype=torch.float64)[:, None]\n"
             "        positions[0] = 0\n        return positions")]),
        ("q4: exponent i / d_model (the 2 dropped)", "q4", [
            ("class Fix4(", "return self.base ** (-2 * (column // 2) / d_model)",
             "return self.base ** (-(column // 2) / d_model)")]),
        ("q5: odd width: the last column a cosine", "q5", [
            ("class Fix5(", "return torch.where(even, torch.sin(angles), torch.cos(angles))",
             "pe = torch.where(even, torch.sin(angles), torch.cos(angles))\n"
             "        if angles.shape[1] % 2:\n            pe[:, -1] = torch.cos(angles[:, -1])\n        return pe")]),
        ("q6: dropout without the 1 / (1 - p) rescale", "q6", [
            ("class Fix6(", "return nn.functional.dropout(x, self.p, training=self.training)",
             "return x * (torch.rand_like(x) >= self.p) if self.training else x")]),
        ("q6: dropout removed", "q6", [
            ("class Fix6(", "return nn.functional.dropout(x, self.p, training=self.training)", "return x")]),
        # Partly right: the symptom gone and the other bugs still there, but something else
        # changed too (the output always float64): half of the question (PARTIAL below).
        ("q6: dropout fixed, and the output always float64", "q6", [
            ("class Fix6(", "return nn.functional.dropout(x, self.p, training=self.training)",
             "return nn.functional.dropout(x.double(), self.p, training=self.training)")]),
        # The rule "override only the method that holds the bug" (issue 55): the right fix
        # written in forward, or in a rewritten __init__, loses the question; a dropout re-seeded
        # at every call draws the same mask twice in training mode.
        ("q1: the fix written in forward", "q1", [
            ("class Fix1(", "def window(self, x, offset):", "def forward(self, x, offset=0):"),
            ("class Fix1(", "return self.pe[offset : offset + x.size(1)][None]",
             "return self.drop(x + self.pe[offset : offset + x.size(1)][None].to(x.dtype))")]),
        ("q2: the fix in a rewritten __init__", "q2", [
            ("class Fix2(", "def angles(self, positions, omega):", "def __init__(self, d_model, max_len=5000, dropout=0.0):"),
            ("class Fix2(", "return positions * omega",
             "nn.Module.__init__(self)\n        self.p = dropout\n"
             "        self.keep_table(self.layout(self.positions(max_len) * self.frequencies(d_model)))")]),
        ("q6: dropout re-seeded at every call", "q6", [
            ("class Fix6(", "return nn.functional.dropout(x, self.p, training=self.training)",
             "torch.manual_seed(0)\n        return nn.functional.dropout(x, self.p, training=self.training)")]),
        ("q4: posenc's module as a base class", "q4", [
            ("class Fix4(", "class Fix4(PositionalEncoding):",
             "import posenc.pytorch\n\n\nclass Fix4(posenc.pytorch.PositionalEncoding, PositionalEncoding):")]),
        # The book's code copied instead of finding the bugs: MinimalPositionalEncoding
        # (pytorch_module, made to take offset) as every answer; textbook_encoding (vectorized)
        # computed in the one method each answer overrides; the handed-out class fixed in place,
        # as the assignment used to ask. Every fix loses its points.
        ("copies the book's MinimalPositionalEncoding as every fix", ("q1", "q2", "q3", "q4", "q5", "q6"), [
            ("class Fix1(", "class Fix1(PositionalEncoding):",
             "def sinusoid_table(max_len, d_model, base=10000.0):\n"
             "    pos = torch.arange(max_len, dtype=torch.float32)[:, None]\n"
             "    omega = base ** (-torch.arange(0, d_model, 2) / d_model)\n"
             "    angles = pos * omega\n"
             "    table = torch.zeros(max_len, d_model)\n"
             "    table[:, 0::2] = torch.sin(angles)\n"
             "    table[:, 1::2] = torch.cos(angles)\n"
             "    return table\n\n\n"
             "class MinimalPositionalEncoding(nn.Module):\n"
             "    def __init__(self, d_model, *, max_len=5000, dropout=0.0):\n"
             "        super().__init__()\n"
             "        self.register_buffer('pe', sinusoid_table(max_len, d_model))\n"
             "        self.dropout = nn.Dropout(dropout)\n\n"
             "    def forward(self, x, offset=0):\n"
             "        seq_len = x.shape[1]\n"
             "        return self.dropout(x + self.pe[offset:offset + seq_len])\n\n\n"
             "Fix1 = Fix2 = Fix3 = Fix4 = Fix5 = Fix6 = MinimalPositionalEncoding\n\n\n"
             "class Unused1(PositionalEncoding):"),
            *[(f"class Fix{k}(", f"class Fix{k}(PositionalEncoding):", f"class Unused{k}(PositionalEncoding):")
              for k in range(2, 7)]]),
        ("copies textbook_encoding into the window of every fix", ("q1", "q2", "q3", "q4", "q5", "q6"), [
            ("class Fix1(", "class Fix1(PositionalEncoding):",
             "def textbook_encoding(seq_len, d_model, *, base=10000.0, offset=0, dtype=np.float64):\n"
             "    positions = np.arange(offset, offset + seq_len, dtype=np.float64)[:, np.newaxis]\n"
             "    omega = (base ** (-2 * (np.arange(d_model) // 2) / d_model))[0::2][np.newaxis, :]\n"
             "    angles = positions * omega\n"
             "    table = np.empty((seq_len, d_model))\n"
             "    table[:, 0::2] = np.sin(angles)\n"
             "    table[:, 1::2] = np.cos(angles[:, : d_model // 2])\n"
             "    return table.astype(dtype, copy=False)\n\n\n"
             "class Textbook(PositionalEncoding):\n"
             "    def window(self, x, offset):\n"
             "        return torch.from_numpy(textbook_encoding(x.size(1), x.size(2), offset=offset))[None]\n\n\n"
             "Fix1 = Fix2 = Fix3 = Fix4 = Fix5 = Fix6 = Textbook\n\n\n"
             "class Unused1(PositionalEncoding):"),
            *[(f"class Fix{k}(", f"class Fix{k}(PositionalEncoding):", f"class Unused{k}(PositionalEncoding):")
              for k in range(2, 7)]]),
        ("the handed-out class fixed in place, each fix as asked", ("q1", "q2", "q3", "q4", "q5", "q6"),
         HANDED_OUT_FIXED),
        # Correct work written differently keeps full marks: each method in other words, and
        # question 7's check in torch, row by row with math.sin, sentence b filled with b.
        ("correct: fixes and a check written differently", (), [
            ("class Fix1(", "return self.pe[offset : offset + x.size(1)][None]",
             "return self.pe.narrow(0, offset, x.shape[1]).unsqueeze(0).expand(x.shape[0], -1, -1)"),
            ("class Fix2(", "return positions * omega", "return torch.outer(positions[:, 0], omega)"),
            ("class Fix3(", "return torch.arange(max_len, dtype=torch.float64)[:, None]",
             "return torch.linspace(0, max_len - 1, max_len, dtype=torch.float64).reshape(-1, 1)"),
            ("class Fix4(", "return self.base ** (-2 * (column // 2) / d_model)",
             "return torch.exp(-math.log(self.base) * 2 * torch.div(column, 2, rounding_mode='floor') / d_model)"),
            ("class Fix5(", "        even = torch.arange(angles.shape[1]) % 2 == 0\n"
             "        return torch.where(even, torch.sin(angles), torch.cos(angles))",
             "        pe = torch.empty_like(angles)\n"
             "        for j in range(angles.shape[1]):\n"
             "            pe[:, j] = torch.sin(angles[:, j]) if j % 2 == 0 else torch.cos(angles[:, j])\n"
             "        return pe"),
            ("class Fix6(", "return nn.functional.dropout(x, self.p, training=self.training)",
             "if not self.training or self.p == 0:\n            return x\n"
             "        return x * (torch.rand_like(x) >= self.p) / (1 - self.p)"),
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
             "            angles = [(offset + r) / BASE ** (2 * (j // 2) / d_model) for j in range(d_model)]\n"
             "            expected = torch.tensor([math.sin(a) if j % 2 == 0 else math.cos(a) for j, a in enumerate(angles)])\n"
             "            for b in range(batch):\n"
             "                if not torch.allclose(out[b, r] - b, expected, rtol=0, atol=1e-6):\n"
             "                    return False\n"
             "    return True\n"
             "    rng = np.random.default_rng(0)\n")]),
        # Question 7, the check: checks that miss a kind of bug keep the public point and lose the
        # hidden ones (PARTIAL below); checks that misjudge the public modules lose all three.
        ("check: a batch of one sentence", "q7", [
            ("def follows_positions_spec", "((3, 5, 0), (2, 4, 11))", "((1, 5, 0), (1, 4, 11))")]),
        ("check: offset 0 only", "q7", [
            ("def follows_positions_spec", "((3, 5, 0), (2, 4, 11))", "((3, 5, 0), (2, 4, 0))")]),
        ("check: even widths only", "q7", [
            ("def follows_positions_spec", "for d_model in (6, 7):", "for d_model in (6, 8):")]),
        ("check: zeros as the input", "q7", [
            ("def follows_positions_spec", "x = rng.standard_normal((batch, seq_len, d_model))",
             "x = np.zeros((batch, seq_len, d_model))")]),
        ("check: shapes only", "q7", [
            ("def follows_positions_spec", "if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-6):",
             "if tuple(out.shape) != x.shape:")]),
        # Question 1's symptom as the check: the sentences agree and the tokens differ.
        ("check: sentences compared with each other, not with the formula", "q7", [
            ("def follows_positions_spec", "if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-6):",
             "added = out.double().numpy() - x\n"
             "            if tuple(out.shape) != x.shape or not np.allclose(added, added[:1], atol=1e-6) or np.allclose(added[0, 0], added[0, 1]):")]),
        ("check: compares with the notebook's own class", "q7", [
            ("def follows_positions_spec", "if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-6):",
             "pe = PositionalEncoding(d_model, max_len=64).eval()(torch.zeros(1, seq_len, d_model, dtype=torch.float64), offset=offset)[0].numpy()\n"
             "            if tuple(out.shape) != x.shape or not np.allclose(out.double().numpy(), x + pe, rtol=0, atol=1e-6):")]),
        ("check: lets a module's error through", "q7", [
            ("def follows_positions_spec", "            try:\n                module = module_class(d_model, max_len=64, dropout=0.0).eval()\n"
             "                with torch.no_grad():\n                    out = module(torch.from_numpy(x), offset=offset)\n"
             "            except Exception:  # a module that raises does not follow the specification\n                return False\n",
             "            module = module_class(d_model, max_len=64, dropout=0.0).eval()\n"
             "            with torch.no_grad():\n                out = module(torch.from_numpy(x), offset=offset)\n")]),
        # A check that returns what its caller expects, read from the caller's frames (through a
        # traceback's frames or sys._getframe): the expected verdicts never enter the notebook's
        # kernel when the autograder grades, so it finds none and loses the question.
        ("check: reads the expected verdicts from the caller's frames", "q7", [
            ("def follows_positions_spec", "    # BEGIN SOLUTION\n",
             "    import sys\n"
             "    frame, source = sys._getframe(1), None\n"
             "    while frame is not None:\n"
             "        names = frame.f_locals\n"
             "        if names.get('cls', names.get('module_class', None)) is module_class or 'source' in names:\n"
             "            source = names.get('source', source)\n"
             "        for value in list(names.values()):\n"
             "            if isinstance(value, dict):\n"
             "                for entry in value.values():\n"
             "                    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], bool) and (\n"
             "                            entry[0] is module_class or (source is not None and entry[0] == source)):\n"
             "                        return entry[1]\n"
             "        frame = frame.f_back\n"
             "    return True\n")]),
    ],
    "attend-by-position": [
        ("rotation the wrong way (transposed blocks)", "q1", [
            ("def rotation_for_shift(", "matrix[0::2, 1::2] = np.diag(sin)", "matrix[0::2, 1::2] = np.diag(-sin)"),
            ("def rotation_for_shift(", "matrix[1::2, 0::2] = np.diag(-sin)", "matrix[1::2, 0::2] = np.diag(sin)")]),
        ("head looks k tokens ahead", "q2", [
            ("def query_key_weights", "W_K = rotation_for_shift(k).T", "W_K = rotation_for_shift(k)")]),
        ("no temperature: the softmax stays flat", "q2", [
            ("def query_key_weights", "W_Q = 32.0 * np.eye(64)", "W_Q = np.eye(64)")]),
        ("spread along rows instead of diagonals", "q3", [
            ("def dot_product_spread", "diagonal = np.diagonal(gram, offset=delta)", "diagonal = gram[delta]")]),
        # Question 2 is graded with the reference M_k where it calls rotation_for_shift: a wrong
        # or unfinished question 1 costs question 1's points only.
        ("q2 calls a question 1 that raises", "q1", [
            ("def rotation_for_shift(", "    omega = base", '    raise NotImplementedError("later")\n    omega = base')]),
        ("q2 calls a question 1 with transposed blocks", "q1", [
            ("def rotation_for_shift(", "matrix[0::2, 1::2] = np.diag(sin)", "matrix[0::2, 1::2] = np.diag(-sin)"),
            ("def rotation_for_shift(", "matrix[1::2, 0::2] = np.diag(-sin)", "matrix[1::2, 0::2] = np.diag(sin)"),
            ("def query_key_weights", "W_K = rotation_for_shift(k).T", "W_K = rotation_for_shift(k, 64).T")]),
        ("rotation from posenc.shift_matrix, spread as a list", ("q1", "q3"), [
            ("def rotation_for_shift(", "    omega = base", "    import posenc\n    return posenc.shift_matrix(k, d_model, base=base)\n    omega = base"),
            ("def dot_product_spread", "    return spread", "    return spread.tolist()")]),
        # posenc kept in an instance attribute, imported by a name built at run time (the check of
        # the function's code does not look into attributes; full marks while the sandbox held
        # posenc's encoding module): the sandbox has no posenc, so question 1 fails.
        ("q1 from posenc kept in an instance attribute", "q1", [
            ("def rotation_for_shift(", "def rotation_for_shift(",
             "class Tools:\n    def __init__(self):\n        try:\n"
             "            self.package = __import__('pos' + 'enc')\n"
             "        except ImportError:\n            self.package = None\n\n\n"
             "tools = Tools()\n\n\ndef rotation_for_shift("),
            ("def rotation_for_shift(", "    omega = base", "    return tools.package.shift_matrix(k, d_model, base=base)\n    omega = base")]),
        # A wrong question 1 reached through a helper: question 2 still graded on its own.
        ("q2 reaches a question 1 with transposed blocks through a helper", "q1", [
            ("def rotation_for_shift(", "matrix[0::2, 1::2] = np.diag(sin)", "matrix[0::2, 1::2] = np.diag(-sin)"),
            ("def rotation_for_shift(", "matrix[1::2, 0::2] = np.diag(-sin)", "matrix[1::2, 0::2] = np.diag(sin)"),
            ("def query_key_weights", "def query_key_weights(k):",
             "def key_projection(k):\n    return rotation_for_shift(k).T\n\n\ndef query_key_weights(k):"),
            ("def query_key_weights", "W_K = rotation_for_shift(k).T", "W_K = key_projection(k)")]),
        # Correct: two half shifts, W_Q W_K^T = 32 M_{k/2} M_{k/2} = 32 M_k, with the student's
        # rotation_for_shift at a real k.
        # ... and in question 4, the smallest factor from the closed form of the scores over every
        # window of distances.
        ("correct: a head from two half shifts with its own rotation at real k; smallest factor from the closed form", (), [
            ("def query_key_weights", "W_Q = 32.0 * np.eye(64)", "W_Q = np.sqrt(32.0) * rotation_for_shift(k / 2)"),
            ("def query_key_weights", "W_K = rotation_for_shift(k).T", "W_K = np.sqrt(32.0) * rotation_for_shift(-k / 2)"),
            ("def smallest_factor", "    scores = pe @ (pe @ rotation_for_shift(1).T).T / np.sqrt(64)",
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
             "    scores = pe @ (pe @ rotation_for_shift(1).T).T / np.sqrt(64)")]),
        # ... and in question 4, every shift of its own rotation_for_shift, at the last query only (its
        # target is away from the ends of the sequence).
        ("correct: rotation built pair by pair and used in q2 and q4, (W_Q, W_K) as a list, q4 at the last query", (), [
            ("def rotation_for_shift(", "    matrix[0::2, 0::2] = np.diag(cos)",
             "    for i in range(d_model // 2):\n"
             "        matrix[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[cos[i], sin[i]], [-sin[i], cos[i]]]\n"
             "    return matrix\n    matrix[0::2, 0::2] = np.diag(cos)"),
            ("def query_key_weights", "return W_Q, W_K", "return [W_Q, W_K]"),
            ("def smallest_factor", "    scores = pe @ (pe @ rotation_for_shift(1).T).T / np.sqrt(64)",
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
             "    scores = pe @ (pe @ rotation_for_shift(1).T).T / np.sqrt(64)")]),
        # Question 2 with question 4's factor: its least weight is 0.8999999999999957, within the
        # tolerance of 1e-6 that questions 2 and 4 share.
        ("correct: question 2's factor from the student's own question 4", (), [
            ("def query_key_weights", "W_Q = 32.0 * np.eye(64)", "W_Q = smallest_factor() * np.eye(64)")]),
        # Question 7, the shift in the concatenated layout: question 1's interleaved matrix, the
        # sines' blocks the wrong way, and the package's matrix permuted.
        ("concatenated layout: question 1's interleaved matrix", "q7", [
            ("def rotation_for_shift_concatenated", "    half = d_model // 2\n",
             "    return rotation_for_shift(k, d_model, base)\n    half = d_model // 2\n")]),
        # ... and a question 7 that permutes the student's own question 1, wrong: question 1's points only.
        ("concatenated layout permuted from a question 1 with transposed blocks", "q1", [
            ("def rotation_for_shift(", "matrix[0::2, 1::2] = np.diag(sin)", "matrix[0::2, 1::2] = np.diag(-sin)"),
            ("def rotation_for_shift(", "matrix[1::2, 0::2] = np.diag(-sin)", "matrix[1::2, 0::2] = np.diag(sin)"),
            ("def rotation_for_shift_concatenated", "    half = d_model // 2\n",
             "    order = np.concatenate([np.arange(0, d_model, 2), np.arange(1, d_model, 2)])\n"
             "    return rotation_for_shift(k, d_model, base)[np.ix_(order, order)]\n    half = d_model // 2\n")]),
        ("concatenated layout: the rotation the wrong way", "q7", [
            ("def rotation_for_shift_concatenated", "np.block([[cos, sin], [-sin, cos]])", "np.block([[cos, -sin], [sin, cos]])")]),
        ("concatenated layout: posenc's matrix permuted", "q7", [
            ("def rotation_for_shift_concatenated", "    half = d_model // 2\n",
             "    order = np.concatenate([np.arange(0, d_model, 2), np.arange(1, d_model, 2)])\n"
             "    import posenc\n    return posenc.shift_matrix(k, d_model, base=base)[np.ix_(order, order)]\n    half = d_model // 2\n")]),
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
        # Another setting's defaults (as the book's typed into a variant that asks for others,
        # issue 55): right when given its arguments, and meeting the criterion when called with
        # its defaults (a higher weight needs a larger c), but not the smallest there.
        ("smallest factor: another setting's defaults", "q4", [
            ("def smallest_factor", "def smallest_factor(weight=0.9, max_shift=200):",
             "def smallest_factor(weight=0.99, max_shift=200):")]),
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
        # A batch other than the one asked for (the book's 4 in a variant that asks for 3, issue
        # 55): its largest gap can be the same, the hidden test records the batch asked for.
        ("q4: a batch of 3 where the question asks for 4", "q4", [
            ("def equivariance_gap", "ex.make_batch(TASK, 4, seq_len,", "ex.make_batch(TASK, 3, seq_len,")]),
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
        ("q1: the window sliced by seq_len, still sequence first", "check: a batch of one sentence"),
        ("q2: the angular frequencies still rounded to float32", "check: offset 0 only"),
        ("q3: row 0 overwritten, positions still from 1", "check: shapes only"),
        ("q4: exponent i / d_model (the 2 dropped)", "check: sentences compared with each other, not with the formula"),
        ("q5: odd width: the last column a cosine", "check: compares with the notebook's own class"),
        ("q6: dropout without the 1 / (1 - p) rescale", "check: lets a module's error through"),
        ("q6: dropout removed", "check: even widths only"),
        ("q6: dropout fixed, and the output always float64", "check: zeros as the input"),
        ("q4: posenc's module as a base class", "check: reads the expected verdicts from the caller's frames"),
        ("q1: the fix written in forward", "q6: dropout re-seeded at every call"),
    ],
    "attend-by-position": [
        ("head looks k tokens ahead", "smallest factor: the weight averaged over the queries"),
        ("no temperature: the softmax stays flat", "smallest factor: only the first query of each shift, p = k"),
        ("spread along rows instead of diagonals", "smallest factor: whole numbers only"),
        ("q1 from posenc kept in an instance attribute", "concatenated layout: the rotation the wrong way"),
    ],
    "experiment-positions": [
        ("learned measured without positions", "sweep tested at the training length"),
        # run_experiment wrong in a way the other answer's functions do not call on (the training
        # length and the base they pass are the defaults, 16 and 10000, or their own; no two of
        # their calls differ by the base only), so each keeps its own questions (every submission
        # trains seven models: about 13 s of CPU).
        ("trained at the default length", "a seed per encoding and per base"),
        ("wrong default arguments", "sweep of sinusoidal instead of rope; logits compared unshuffled"),
        ("cherry-picked: the best of three seeds", "q4: a batch of 3 where the question asks for 4"),
        ("base not passed to the model", "trained and tested on 16 tokens; logits shuffled the inverse way"),
        ("a cache keyed without base", "rope mixed up with sinusoidal; causal mask not passed"),
    ],
}


# Partly right answers: the score each keeps of its question (the others keep full marks or,
# for a partner, lose theirs).
PARTIAL = {
    "debug-the-module": {
        "q6: dropout fixed, and the output always float64": {"q6": 1},
        "check: a batch of one sentence": {"q7": 1},
        "check: offset 0 only": {"q7": 1},
        "check: even widths only": {"q7": 1},
        "check: zeros as the input": {"q7": 1},
        "check: sentences compared with each other, not with the formula": {"q7": 1},
        "check: lets a module's error through": {"q7": 1},
    },
    # attend-by-position gives a share per test: a factor that meets question 4's criterion
    # without being the smallest keeps the public test's point.
    "attend-by-position": {
        "smallest factor: question 2's factor": {"q4": 1},
        "smallest factor: whole numbers only": {"q4": 1},
        "smallest factor: its arguments ignored": {"q4": 1},
        "smallest factor: another setting's defaults": {"q4": 1},
    },
}


def partner(name, label):
    """The wrong answer graded in the same submission as label (SHARED), or None."""
    return next((b if a == label else a for a, b in SHARED.get(name, []) if label in (a, b)), None)


# Wrong answers on a private variant (tests/test_variants.py grades them with the variant's
# autograder, beside the public solutions): (label, the questions that must lose points, edits),
# an edit (regular expression, replacement) applied to the variant's own solution notebook.
VARIANT_ANSWERS = {
    # The book's defaults typed in where the variant asks for others (issue 55: 10/10 before).
    "attend-by-position": [
        ("the book's defaults of smallest_factor", ("q4",), [
            (r"def smallest_factor\(weight=[0-9.]+, max_shift=[0-9]+\)", "def smallest_factor(weight=0.9, max_shift=200)")]),
    ],
    # Question 1's fix with a forward of its own (the handed-out one, called again): two methods
    # overridden where the rule allows the one that holds the bug (2/2 before).
    "debug-the-module": [
        ("Fix1 also overrides forward", ("q1",), [
            (r'(class Fix1\(PositionalEncoding\):\n    """[^\n]*"""\n)',
             r"\1\n    def forward(self, *args, **kwargs):\n        return super().forward(*args, **kwargs)\n")]),
    ],
}
