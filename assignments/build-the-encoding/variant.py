"""A private variant of build-the-encoding (grading/variant.py calls make_variant).

The master's setting is the paper's base, 10000, the default argument of every function and
the base of the public tests (which call the functions with their defaults). A variant draws
another base for the whole assignment, the positions of question 1's public test below the
range that base allows, and new seeds for the hidden tests' random sizes; its hidden tests also
call question 1's and question 4's functions with their defaults. The public solutions,
written for 10000, fail the tests that use the defaults, and every question has one.
"""

import math

from variant import rewrite  # grading/variant.py

BASES = (500, 2000, 5000, 20000, 50000)
# The draws that decide each question's points where a variant differs from another
# (grading/variant.py's odds()): the base, everywhere.
DRAWS = {q: (BASES,) for q in ("q1", "q2", "q3", "q4")}


def make_variant(master, rng):
    """The variant of the master notebook (nbformat) for the generator rng."""
    base = int(rng.choice(BASES))
    seed = int(rng.integers(10**6, 10**9))
    longest = 2 * math.pi * base ** 0.5  # question 1, d_model = 4: positions below 2 pi sqrt(base)
    last = math.ceil(longest) - 1
    positions = sorted({0, 1, 3, 7, round(0.3 * longest), round(0.6 * longest), last})
    default = round(0.7 * longest)  # a position of the default-base checks
    root = base ** 0.5
    exact = [
        ("with `base = 10000` in the paper.",
         f"with `base = 10000` in the paper; this assignment uses `base = {base}`: the default of every\n"
         "function below, and the base of the public tests."),
        ("bases from 10 to 10000", f"bases from 10 to {max(base, 1000)}"),
        ("    for pos in (0, 1, 3, 7, 100, 300, 500, 628):  # d_model = 4, base 10000: pos < 2 pi * 100\n"
         "        check(pos, 4, 10000.0)\n",
         f"    for pos in {tuple(positions)}:  # d_model = 4, base {base}: pos < 2 pi * {root:.4g}\n"
         f"        check(pos, 4, {base}.0)\n"
         f"    got = position_of(encoding_row({default}, 4, {base}.0))  # the default base\n"
         f"    assert got == {default}, (f\"position_of(row) of position {default} with the default base returned {{got!r}}: \"\n"
         f"        \"the question's base is {base}\")\n"),
        ("    rng = np.random.default_rng(20170612)\n    for d_model, base in [",
         f"    got = position_of(encoding_row({default}, 4, {base}.0))  # the default base\n"
         f"    assert got == {default}, f\"position_of(row) with the default base returned {{got!r}}\"\n"
         f"    rng = np.random.default_rng({seed})\n    for d_model, base in ["),
        ("    for _ in range(25):\n        d_model = int(rng.integers(1, 600))\n",
         f"    default = 2 * np.pi * {base}.0 ** (2.0 * (np.arange(10) // 2) / 10)\n"
         "    assert np.allclose(np.asarray(wavelengths(10), dtype=float), default, rtol=1e-12), (\n"
         "        \"wrong wavelengths(10) with the default base\")\n"
         "    for _ in range(25):\n        d_model = int(rng.integers(1, 600))\n"),
        ("expected = [2 * math.pi, 2 * math.pi, 200 * math.pi, 200 * math.pi]",
         f"expected = [2 * math.pi, 2 * math.pi, {2 * root!r} * math.pi, {2 * root!r} * math.pi]"),
        ("np.allclose(lengths, [1.0, 1.0, 0.01, 0.01], rtol=1e-9)",
         f"np.allclose(lengths, [1.0, 1.0, {1 / root!r}, {1 / root!r}], rtol=1e-9)"),
        ("the angular frequencies 1, 1, 0.01, 0.01:", f"the angular frequencies 1, 1, {1 / root:.4g}, {1 / root:.4g}:"),
        ("expected 2 pi, 2 pi, 200 pi, 200 pi", f"expected 2 pi, 2 pi, {2 * root:.6g} pi, {2 * root:.6g} pi"),
    ]
    words = [(r"\b10000(?=\.0\b|\b)", str(base)), (r"\b20170612\b", str(seed))]
    return rewrite(master, exact, words, "build-the-encoding")
