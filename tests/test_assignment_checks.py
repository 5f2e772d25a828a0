"""The rule checks of the assignments' tests (own_code, loop_depth, python_lines, ...), tested
in-process on student code of our own; tests/test_assignments.py grades whole submissions."""

import ast
import importlib.util
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
MASTERS = sorted(p for p in ROOT.glob("assignments/*/*.ipynb") if p.stem == p.parent.name)


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


# debug-the-module: its master is made by assignments/debug-the-module/variant.py from a draw of
# bugs (the public one, PUBLIC), and a private variant from another draw.

def _debug_variant():
    spec = importlib.util.spec_from_file_location(
        "debug_the_module_variant", ROOT / "assignments" / "debug-the-module" / "variant.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_debug_the_module_master_is_the_public_draw():
    """The committed master is what variant.py makes of the public draw (edit variant.py, then run
    it, rather than the notebook): the tool that makes private variants makes the public one."""
    variant = _debug_variant()
    master = nbformat.read(variant.MASTER, 4)
    made = variant.build(master, variant.PUBLIC, variant.PUBLIC_BASE)
    assert [(c.cell_type, c.source) for c in made.cells] == [(c.cell_type, c.source) for c in master.cells], (
        "run python assignments/debug-the-module/variant.py")


def test_debug_the_module_pool_of_bugs():
    """At least ten bugs, each seen by a user when it is the module's only bug, each with a
    symptom of its own; the right method of each slot gives the specification; draws differ by seed
    and are the same for the same seed."""
    import numpy as np

    variant = _debug_variant()
    bugs = [(slot, bug) for slot, pool in variant.POOL.items() for bug in pool]
    assert len(bugs) >= 10 and set(variant.POOL) == set(variant.FIXES)
    specified = variant.observe(None, 100.0)
    correct = variant.observe(variant.built(variant.module_source({}, 100.0)), 100.0)
    assert all(variant.agree(correct[case], specified[case]) for case in specified)
    for slot, bug in bugs:
        seen = variant.observe(variant.built(variant.module_source({slot: bug}, 100.0)), 100.0)
        assert not all(variant.agree(seen[case], specified[case]) for case in specified), bug
    symptoms = [variant.POOL[slot][bug].symptom for slot, bug in bugs]
    assert len(set(symptoms)) >= len(symptoms) - 1  # two float32 bugs share one, never drawn together
    draws = [variant.draw(np.random.default_rng(seed)) for seed in (1, 1, 2)]
    assert draws[0] == draws[1] and draws[0] != draws[2]
    bugs, base, names = draws[2]
    assert sum(variant.PUBLIC.get(slot) == bug for slot, bug in bugs.items()) <= 2 and base != variant.PUBLIC_BASE
    assert not set(names.values()) & set(variant.PUBLIC_NAMES.values())
