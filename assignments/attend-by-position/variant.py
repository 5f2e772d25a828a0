"""A private variant of attend-by-position (grading/variant.py calls make_variant).

The master states its setting as numbers in its text, its solutions and its tests: d_model 64,
base 10000, 256 positions, a weight of 0.9, shifts up to 200, question 4's hidden setting
(0.99, 50), question 2's factor 32, question 3's statistic (largest minus smallest) and the
shifts of question 6. A variant draws other values and writes them everywhere the master has
them, so that the public solutions (written for 64, 10000, 256, ...) answer other questions:
their matrices have the wrong size, their defaults the wrong setting, their spread the wrong
statistic. Every replacement must apply (an edit of the master that removes one stops the
variant with its name), and grading/variant.py runs `otter assign`, which checks that the
variant's own solutions pass its tests.
"""

import numpy as np

from variant import rewrite  # grading/variant.py

# The pools the parameters are drawn from; none holds the master's value.
D_MODELS = (32, 48, 80, 96, 128)
BASES = (1000, 2000, 5000, 20000, 50000)
SEQ_LENS = (192, 224, 288, 320)
MAX_SHIFTS = (100, 120, 150, 180)
WEIGHTS = (0.8, 0.85, 0.95)
HIDDEN = ((0.97, 30), (0.98, 40), (0.95, 60), (0.99, 70))
SHIFTS_Q6 = (3, 4, 6, 7)
PAIRS_Q6 = ((1, 5), (3, 8), (2, 11), (4, 6))
# Question 3: the statistic of the dot products along each diagonal, with its value on the
# three rows [1, 0], [0, 1], [1, 1] of the public test (diagonals [1, 1, 2], [0, 1], [1]).
STATISTICS = {
    "std": ("the standard deviation (`np.std`, over `p`)", "np.std(diagonal)", "np.std(dots)",
            "[np.sqrt(2) / 3, 0.5, 0.0]", "[0.471, 0.5, 0]"),
    "deviation": ("the largest distance from their mean (`max |x - mean(x)|`, over `p`)",
                  "np.abs(diagonal - diagonal.mean()).max()",
                  "np.abs(np.array(dots) - np.mean(dots)).max()", "[2 / 3, 0.5, 0.0]", "[0.667, 0.5, 0]"),
}

# The draws that decide each question's points where a variant differs from another
# (grading/variant.py's odds(); the setting's filter in _setting is ignored there).
DRAWS = {"q1": (D_MODELS, BASES), "q2": (D_MODELS, BASES, SEQ_LENS), "q3": (D_MODELS, BASES, SEQ_LENS, STATISTICS),
         "q4": (D_MODELS, BASES, SEQ_LENS, WEIGHTS, MAX_SHIFTS, HIDDEN), "q7": (D_MODELS, BASES)}


def _target_weights(d_model, base, seq_len, c):
    """The weight the head W_Q = c I, W_K = M_1^T puts on each target t = p - 1, t = 0 .. seq_len - 2."""
    omega = base ** (-2.0 * np.arange(d_model // 2) / d_model)
    by_distance = np.cos(np.arange(-seq_len, seq_len)[:, None] * omega).sum(axis=1)  # d = -seq_len ..
    distance = np.arange(seq_len)[:, None] - np.arange(seq_len)[None, :] - 1  # p - q - 1
    scores = c * by_distance[distance + seq_len] / np.sqrt(d_model)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return weights[np.arange(1, seq_len), np.arange(0, seq_len - 1)]


def _smallest_factor(d_model, base, seq_len, weight):
    """The smallest c of question 4 (every shift has the least weight of shift 1), to 1e-6."""
    low, high = 0.0, 1.0
    while _target_weights(d_model, base, seq_len, high).min() < weight:
        low, high = high, 2 * high
    while high - low > 1e-6 * high:
        middle = (low + high) / 2
        low, high = (low, middle) if _target_weights(d_model, base, seq_len, middle).min() >= weight else (middle, high)
    return high


def _setting(rng):
    """Draw a setting in which the model answer of question 5 holds: the least weight on the
    targets 2 .. seq_len - 3, equal to six decimals, below the weights of targets 0, 1 and the last."""
    while True:
        d_model, base, seq_len = int(rng.choice(D_MODELS)), int(rng.choice(BASES)), int(rng.choice(SEQ_LENS))
        weight = float(rng.choice(WEIGHTS))
        c = _smallest_factor(d_model, base, seq_len, 0.9)
        on_target = _target_weights(d_model, base, seq_len, c)
        inner = on_target[2:seq_len - 2]
        if inner.max() - inner.min() < 5e-7 and min(on_target[[0, 1, seq_len - 2]]) > inner.max():
            return d_model, base, seq_len, weight


def make_variant(master, rng):
    """The variant of the master notebook (nbformat) for the generator rng."""
    d_model, base, seq_len, weight = _setting(rng)
    max_shift = int(rng.choice(MAX_SHIFTS))
    hidden_weight, hidden_shift = HIDDEN[rng.integers(len(HIDDEN))]
    statistic = STATISTICS[list(STATISTICS)[rng.integers(len(STATISTICS))]]
    k6 = int(rng.choice(SHIFTS_Q6))
    a, b = PAIRS_Q6[rng.integers(len(PAIRS_Q6))]
    factor = float(np.ceil(1.5 * _smallest_factor(d_model, base, seq_len, weight)))
    omega = base ** (-2.0 * np.arange(d_model // 2) / d_model)
    gap = d_model / 2 - np.cos(omega).sum()  # target's score minus its neighbours', before c / sqrt(d)
    root = f"\\sqrt{{{d_model}}}"

    # Exact edits (old text, new text): each must be found in the master; their new text is
    # final (written in the variant's numbers), the whole-word replacements below leave it.
    exact = [
        # question 2's factor, and the target's score d_model / 2
        ("W_Q = 32.0 * np.eye(64)", f"W_Q = {factor} * np.eye({d_model})"),
        ("which is largest (32) when q = p - k", f"which is largest ({d_model // 2}) when q = p - k"),
        ("concentrates: 32 is enough", f"concentrates: {factor:g} is enough"),
        # question 4's hidden setting
        ("((0.9, 200), (0.99, 50))", f"(({weight}, {max_shift}), ({hidden_weight}, {hidden_shift}))"),
        # question 5's model answer: the neighbours' gap and the scale sqrt(d_model)
        ("about 1.08 below the target's 32", f"about {gap:.2f} below the target's {d_model // 2}"),
        ("(32 - \\sum_i \\cos\\omega_i)/8}", f"({d_model // 2} - \\sum_i \\cos\\omega_i)/{root}}}"),
        ("c \\approx 8 \\ln(2w / (1 - w)) / (32 - \\sum_i", f"c \\approx {root} \\ln(2w / (1 - w)) / ({d_model // 2} - \\sum_i"),
        # question 3's statistic
        ("is the largest minus the smallest value of", f"is {statistic[0]} of the values of"),
        ('"""Spread (max - min) of', '"""Spread (' + statistic[1].replace("diagonal", "x") + ") of"),
        ("spread[delta] = diagonal.max() - diagonal.min()", f"spread[delta] = {statistic[1]}"),
        ("np.allclose(spread, [1.0, 1.0, 0.0]), f\"for rows [1, 0], [0, 1], [1, 1] expected [1, 1, 0],",
         f"np.allclose(spread, {statistic[3]}), f\"for rows [1, 0], [0, 1], [1, 1] expected {statistic[4]},"),
        ("expected.append(max(dots) - min(dots))", f"expected.append({statistic[2]})"),
        # question 6: the classmate's shift and the two shifts a, b
        ("with `k = 5` and", f"with `k = {k6}` and"),
        ("not to the token 5 back", f"not to the token {k6} back"),
        ("(7 for $a = 2$, $b = 9$ below)", f"({b - a} for $a = {a}$, $b = {b}$ below)"),
        ("# The classmate's head (a = b = 5) and the head of a = 2, b = 9,",
         f"# The classmate's head (a = b = {k6}) and the head of a = {a}, b = {b},"),
        ("M5 = rotation_for_shift(5)", f"M5 = rotation_for_shift({k6})"),
        ('print("a = b = 5: query 100 puts"', f'print("a = b = {k6}: query 100 puts"'),
        ("same[100, 100 - 5].round(3), \"on position\", 100 - 5)", f"same[100, 100 - {k6}].round(3), \"on position\", 100 - {k6})"),
        ("M2, M9 = rotation_for_shift(2), rotation_for_shift(9)", f"M2, M9 = rotation_for_shift({a}), rotation_for_shift({b})"),
        ('print("a = 2, b = 9: query 100', f'print("a = {a}, b = {b}: query 100'),
    ]
    # Then the setting's numbers, as whole words, in every cell (the Colab cell has none).
    words = [
        (r"\b64\b", str(d_model)), (r"\b256\b", str(seq_len)), (r"\b255\b", str(seq_len - 1)),
        (r"\b254\b", str(seq_len - 2)), (r"\b253\b", str(seq_len - 3)),
        (r"\b10000\b", str(base)), (r"\b200\b", str(max_shift)), (r"(?<![\d.])0\.9\b", str(weight)),
        (r"/ 8\b", f"/ sqrt({d_model})"),
    ]
    notebook = rewrite(master, exact, words, "attend-by-position")
    for cell in notebook.cells:  # the q5 and q6 model answers' c / 8, in the variant's width
        cell.source = cell.source.replace("\\frac{c}{8}", f"\\frac{{c}}{{{root}}}")
    return notebook
