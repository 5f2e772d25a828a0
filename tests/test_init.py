"""The top-level package: what `import posenc` offers and what it does not import."""

import subprocess
import sys

import posenc


def test_public_names():
    assert set(posenc.__all__) == {
        "angular_frequencies", "positional_encoding", "positional_encoding_loop", "shift_matrix",
        "rope", "alibi_slopes", "alibi_bias",
    }
    for name in posenc.__all__:
        assert callable(getattr(posenc, name))
        assert getattr(posenc, name).__doc__


def test_import_posenc_imports_no_framework():
    code = ("import sys, posenc; "
            "print(sorted(m for m in ('torch', 'tensorflow', 'keras', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
