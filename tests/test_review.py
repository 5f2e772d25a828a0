"""grading/review.py: the review column's constructs, and copies grouped as a TA can act on them.

In-process and on small hand-made notebooks (no grading): about 2 s, most of it copydetect's
import in the subprocess that copies() starts.
"""

import importlib.util
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("review", ROOT / "grading" / "review.py")
review = sys.modules.get("review") or importlib.util.module_from_spec(_spec)
if "review" not in sys.modules:
    sys.modules["review"] = review
    _spec.loader.exec_module(review)


def _notebook(path, *cells, written=""):
    """A notebook of code cells, and a written question q5 answered with written (Otter's layout)."""
    md = nbformat.v4.new_markdown_cell
    body = [nbformat.v4.new_code_cell(c) for c in cells]
    if written:
        body += [md("<!-- BEGIN QUESTION -->\n\n## Question 5 (written)"), md(written), md("<!-- END QUESTION -->")]
    nbformat.write(nbformat.v4.new_notebook(cells=body), path)
    return path


def test_constructs_read_what_can_fool_the_grader_not_what_shows_a_value(tmp_path):
    flagged = _notebook(tmp_path / "a.ipynb", "get_ipython().displayhook(3)", "f = getattr(np, 'sin')",
                        "import posenc")
    assert review.constructs(flagged) == "get_ipython; getattr; posenc"
    plain = _notebook(tmp_path / "b.ipynb", "print(getattr(model, 'weight', None), vars(model))",
                      "import posenc.experiment as ex", "from posenc import experiment")
    assert review.constructs(plain) == ""


GIVEN = 'def encoding(seq_len, base=5000.0):\n    """The table."""\n    ...'
SETUP = "seq_len, d_model = 32, 8"
PUBLIC = """def encoding(seq_len, base=10000.0):
    table = np.zeros((seq_len, 8))
    for pos in range(seq_len):
        for i in range(0, 8, 2):
            table[pos, i] = np.sin(pos / base ** (i / 8))
            table[pos, i + 1] = np.cos(pos / base ** (i / 8))
    return table
"""
VARIANT = PUBLIC.replace("10000.0", "5000.0")
OWN = """def encoding(seq_len, base=5000.0):
    angles = np.arange(seq_len)[:, None] * base ** (-np.arange(0, 8, 2) / 8)
    out = np.empty((seq_len, 8))
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out
"""
MODEL = ("The score depends on the distance from the target only, so every shift has the same "
         "least weight, and the neighbours at distance 1 are the strongest rivals of the target.")
OWN_WORDS = ("I tried shift {} and saw that the first query keeps the most weight because its target has "
             "one neighbour, while targets inside the sequence share theirs with two close rivals.")


def test_copies_are_grouped_and_named_by_their_source(tmp_path):
    solutions = {"the published solutions": _notebook(tmp_path / "public.ipynb", SETUP, PUBLIC,
                                                      written=MODEL + " **Rubric (1 point).** | a | b |"),
                 "this variant's solutions": _notebook(tmp_path / "variant.ipynb", SETUP, VARIANT)}
    given = frozenset([GIVEN, SETUP])
    students = {
        "ann": _notebook(tmp_path / "ann.ipynb", SETUP, PUBLIC),
        "bob": _notebook(tmp_path / "bob.ipynb", SETUP, VARIANT.replace("table", "pe"), written=MODEL),
        "cy": _notebook(tmp_path / "cy.ipynb", SETUP, VARIANT.replace("5000.0", "2000.0")),
        "dee": _notebook(tmp_path / "dee.ipynb", SETUP, OWN, written=OWN_WORDS.format(3)),
        "eve": _notebook(tmp_path / "eve.ipynb", SETUP, OWN.replace("out", "res"), written=OWN_WORDS.format(4)),
        "fay": _notebook(tmp_path / "fay.ipynb", SETUP, OWN.replace("angles", "a")),
        "gil": _notebook(tmp_path / "gil.ipynb", "seq_len, d_model = 48, 8", OWN.replace("5000.0", "20000.0").replace(
            "np.empty", "np.zeros")),
    }
    flags = review.copies(students, solutions, given)
    assert flags["ann"].startswith("copy of the published solutions (100%); numbers of another notebook")
    assert flags["bob"].startswith("copy of the published solutions, with this variant's numbers (100%); "
                                   "written q5: the published model answer (100%)")
    assert flags["cy"].startswith("copy of the published solutions, with other numbers")
    assert "bob" not in flags["ann"] and "ann" not in flags["bob"]  # a common source, not each other
    for student in ("dee", "eve", "fay", "gil"):
        others = {"dee", "eve", "fay", "gil"} - {student}
        assert flags[student].startswith("copy of ") and all(o in flags[student] for o in others), flags[student]
    assert "written q5 as eve's" in flags["dee"]
    assert "numbers of another notebook (public or another variant): a handed-out cell with other numbers (seq_len, d_model = 48, 8)" in flags["gil"]
    assert "encoding(seq_len, base=20000.0) where the notebook hands out encoding(seq_len, base=5000.0)" in flags["gil"]
    listing = flags.listing
    assert "Code copied from the published solutions: 1 student(s) (100% to 100%): ann" in listing
    assert "Code group 1, 4 students: " in listing and "dee ~ gil 89%" in listing and "Written q5, 2 students alike: dee ~ eve" in listing
    assert "Written q5, the published model answer: bob (100% of the answer)" in listing
    assert "tmp" not in listing and "ipynb" not in listing  # students by name, not by path
