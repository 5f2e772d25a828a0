"""A private variant of experiment-positions (grading/variant.py calls make_variant).

The trained numbers' thresholds of the tests were measured at the master's setting (16
training tokens, 200 steps, RoPE at 64 tokens with bases 100 and 10000:
tests/test_experiment_thresholds.py), so a variant keeps those and changes what a copied
answer gets wrong without touching them: the defaults of question 1's `run_experiment` (test
length and seed; question 2 relies on its default base), the smallest base of question 3's
sweep (10 in the master), and question 4's recipe (the default length, the batch size and the
seed of the shuffle). The public solutions then fail questions 1, 3 and 4; question 2 (3 of 10
autograded points), whose function the hidden test runs at a seed drawn at grading time, is
the same.
"""

from variant import rewrite  # grading/variant.py

TEST_LENS = (24, 40, 48)
# run_experiment's default seed: no trained number of the tests uses it (compare_encodings and
# sweep_bases pass their own seed), so its pool can be wide: two secrets draw question 1's
# defaults (test length and seed) alike once in 90, not once in 9 as with three seeds (issue 55).
SEEDS = tuple(range(1, 31))
SMALLEST_BASES = (20.0, 30.0, 50.0)
GAP_LENS = (12, 20, 24)
BATCHES = (3, 5, 6)
SHUFFLE_SEEDS = (2, 3, 7)

# The draws that decide each question's points where a variant differs from another (a friend's
# answer to another secret's variant scores them when they are alike): grading/variant.py's odds().
DRAWS = {"q1": (TEST_LENS, SEEDS), "q3": (SMALLEST_BASES,), "q4": (GAP_LENS, BATCHES, SHUFFLE_SEEDS)}


def make_variant(master, rng):
    """The variant of the master notebook (nbformat) for the generator rng."""
    test_len, seed = int(rng.choice(TEST_LENS)), int(rng.choice(SEEDS))
    small = float(rng.choice(SMALLEST_BASES))
    gap_len, batch, shuffle = int(rng.choice(GAP_LENS)), int(rng.choice(BATCHES)), int(rng.choice(SHUFFLE_SEEDS))
    exact = [
        # question 1's defaults
        ("test_len=32, steps=200, seed=0, base=10000.0)",
         f"test_len={test_len}, steps=200, seed={seed}, base=10000.0)"),
        ('test_len=32, steps=200, seed=0, "\n            "base=10000.0)',
         f'test_len={test_len}, steps=200, seed={seed}, "\n            "base=10000.0)'),
        ('{"train_len": 16, "test_len": 32, "steps": 200, "seed": 0, "base": 10000.0}',
         f'{{"train_len": 16, "test_len": {test_len}, "steps": 200, "seed": {seed}, "base": 10000.0}}'),
        # question 3's smallest base
        ("(10.0, 100.0, 10000.0)", f"({small}, 100.0, 10000.0)"),
        ("{10.0, 100.0, 10000.0}", f"{{{small}, 100.0, 10000.0}}"),
        ("the keys 10.0, 100.0 and 10000.0", f"the keys {small}, 100.0 and 10000.0"),
        ("the bases 10, 100 and 10000", f"the bases {small:g}, 100 and 10000"),
        # question 4's recipe
        ("equivariance_gap(encoding, *, causal=False, seq_len=16, seed=0)",
         f"equivariance_gap(encoding, *, causal=False, seq_len={gap_len}, seed=0)"),
        ("ex.make_batch(TASK, 4, seq_len,", f"ex.make_batch(TASK, {batch}, seq_len,"),
        ('ex.make_batch("shift", 4, seq_len,', f'ex.make_batch("shift", {batch}, seq_len,'),
        ("(a batch of 4 sequences, shape `(4, seq_len)`)", f"(a batch of {batch} sequences, shape `({batch}, seq_len)`)"),
        ("if size != 4]", f"if size != {batch}]"),
        ("the question asks for a batch of 4", f"the question asks for a batch of {batch}"),
        ("manual_seed(seed + 1))", f"manual_seed(seed + {shuffle}))"),
    ]
    return rewrite(master, exact, (), "experiment-positions")
