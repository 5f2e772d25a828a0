"""The Sphinx extension of the interactive figures (book/_ext/posenc_explorer.py), in a one-page
Sphinx project of its own: the HTML the directive writes, the assets it adds (d3, the colour
map, the modules of book/_static, in the order they use each other), its error for an unknown
figure, and the colour map it gives the live heatmaps. The figures on the built site are tested
in tests/test_explore.py, test_explore_layout.py and test_explore_print.py.
"""

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _sphinx_project(tmp_path, figure):
    """A one-page Sphinx project using the directive; returns (exit status, warnings, HTML)."""
    import io

    from sphinx.application import Sphinx

    (tmp_path / "index.md").write_text(f"# Page\n\n```{{posenc-explorer}} {figure}\n```\n")
    (tmp_path / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['myst_parser', 'posenc_explorer']\n")
    warnings = io.StringIO()
    app = Sphinx(tmp_path, tmp_path, tmp_path / "_build", tmp_path / "_build" / ".doctrees", "html",
                 status=None, warning=warnings, freshenv=True)
    app.build()
    html = tmp_path / "_build" / "index.html"
    return app.statuscode, warnings.getvalue(), html.read_text() if html.exists() else ""


def test_directive_writes_container_image_and_assets(tmp_path):
    status, warnings, html = _sphinx_project(tmp_path, "rotation")
    assert status == 0 and warnings == "", warnings
    assert '<div class="posenc-explorer" data-figure="rotation"><p class="pe-howto">' in html
    assert '<p class="pe-print-note">' in html
    assert ('<picture class="posenc-explorer-static"><source media="screen" srcset="data:image/gif'
            in html)
    assert '<img src="_images/posenc-explorer-rotation.png" alt="Unit circle' in html
    assert '<noscript><img class="posenc-explorer-noscript" src="_images/posenc-explorer-rotation.png"' in html
    assert "posenc-explorer.css" in html
    scripts = ("posenc-explorer-d3.js", "posenc-explorer-colormap.js", "posenc-explorer-numerics.js",
               "posenc-explorer-draw.js", "posenc-explorer.js")
    for name in (*scripts, "posenc-explorer.css"):
        assert (tmp_path / "_build" / "_static" / name).is_file()
    at = [html.index(f'src="_static/{name}') for name in scripts]
    assert at == sorted(at), "each script after those it uses"


def test_directive_rejects_an_unknown_figure(tmp_path):
    _, warnings, _ = _sphinx_project(tmp_path, "heatmap")
    assert "posenc-explorer: unknown figure 'heatmap'; expected one of table, rotation, dot, rope, focus" in warnings


def test_colormap_is_posenc_plot_s():
    """The live heatmaps' 256 colours are those of posenc.plot.CMAP, as in the static images."""
    import sys

    import matplotlib

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from posenc_explorer import colormap_script
    from posenc.plot import CMAP

    hex_colours = re.search(r'rgb: "([0-9a-f]+)"', colormap_script())[1]
    rgb = np.array([[int(hex_colours[k + c: k + c + 2], 16) for c in (0, 2, 4)]
                    for k in range(0, len(hex_colours), 6)])
    expected = matplotlib.colormaps[CMAP](np.linspace(0, 1, 256))[:, :3] * 255
    assert rgb.shape == (256, 3) and np.abs(rgb - expected).max() <= 0.5
