"""The top-level package: what `import posenc` offers and what it does not import."""

import subprocess
import sys

import pytest

import posenc


def test_public_names():
    assert set(posenc.__all__) == {
        "angular_frequencies", "positional_encoding", "positional_encoding_loop", "shift_matrix",
        "rope", "alibi_slopes", "alibi_bias", "positional_encoding_2d", "rope_2d", "rope_frequencies",
        "rope_config",
        "mrope", "mrope_angles", "mrope_cos_sin", "mrope_pair_axes",
    }
    for name in posenc.__all__:
        assert callable(getattr(posenc, name))
        assert getattr(posenc, name).__doc__


@pytest.mark.parametrize("module", ["posenc", "posenc.foils", "posenc.reference"])
def test_import_imports_numpy_and_no_framework(module):
    """posenc, and the modules of the book's comparison forms (naive or wrong versions, correct
    reference forms), import NumPy only; their framework classes import their framework when
    first accessed."""
    code = (f"import sys, {module}; print(sorted(m for m in ('numpy', 'torch', 'tensorflow', "
            "'keras', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['numpy']"
