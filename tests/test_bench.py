"""posenc.bench: the benchmark runs and prints its table (speed itself is not tested)."""

from posenc import bench

TINY = ["--seq-len", "70", "--d-model", "9", "--loop-size", "4", "--batch", "2",
        "--layer-seq-len", "5", "--layer-d-model", "8", "--repeat", "2", "--number", "1"]


def test_prints_one_row_per_comparison(capsys):
    rows = bench.main(TINY)
    names = [name for name, _, _ in rows]
    assert names == ["loops / vectorized", "textbook / posenc", "PyTorch module / bare add",
                     "PyTorch module / bare add", "Keras layer / bare tf.add"]
    assert all(a > 0 and b > 0 and ratio > 0 for _, _, (a, b, ratio) in rows)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split()[:3] == ["comparison", "A", "/"]
    assert len(printed) == 2 + len(rows)
    assert "(2, 5, 8) bfloat16" in printed[5]


def test_numpy_only(capsys):
    rows = bench.main(TINY + ["--frameworks", "none"])
    assert [name for name, _, _ in rows] == ["loops / vectorized", "textbook / posenc"]


def test_compiled_block_row(capsys):
    """The compiled-block row, with the cheap eager back end (inductor's C++ build is what the
    benchmark itself measures; the tests compile with inductor once, in test_export.py)."""
    rows = bench.main(TINY + ["--compiled", "--compile-backend", "eager"])
    assert rows[-1][0] == "compiled block, module / add"
    assert rows[-1][1] == "(2, 5, 8) float32" and rows[-1][2][2] > 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("compiled block, module / add")
