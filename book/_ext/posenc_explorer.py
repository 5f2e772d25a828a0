"""Sphinx extension: the interactive figures of the course, computed in the reader's browser.

In any markdown page or notebook markdown cell of the book::

    ```{posenc-explorer} table
    ```

with one of the figure names of :data:`FIGURES` (``table``, ``rotation``, ``dot``, ``rope``).
The directive writes ``<div class="posenc-explorer" data-figure="table">`` holding a static
image of the figure's default setting with alt text; on pages that have one,
``book/_static/posenc-explorer.js`` (our module, no library) adds the live figure and its
controls, and hides the static image on screen. Print (the PDF, ``tools/print_pdf.py``) and
readers without JavaScript get the image.

At build time the extension

- draws the static images from ``posenc`` with matplotlib (``builder-inited``), into
  ``<build>/posenc-explorer/`` (next to the doctrees: never into the sources); Sphinx then
  copies them to ``_images/`` like any figure. A file is rewritten only when its bytes change,
  so an unchanged figure does not make Sphinx reread the pages;
- writes ``_static/posenc-explorer-colormap.js``: the colour map of ``posenc.plot``
  (matplotlib's ``RdBu_r``), 256 colours, so the live heatmaps match the static ones, and
  copies the module ``book/_static/posenc-explorer.{js,css}`` there (``build-finished``);
- adds the module's JavaScript and CSS to the pages that have a figure, and only to them
  (``html-page-context``);
- rereads the pages that have a figure when this file, the module (JavaScript, CSS) or
  ``posenc`` changed since the last build (``env-get-outdated``): Sphinx does not see such
  changes, and a build that finds no page out of date does not even copy ``_static`` again.

Registered in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

#: Each figure: its static image's alt text (which describes the default setting drawn).
FIGURES = {
    "table": (
        "Heatmap of the sinusoidal encoding PE(pos, j) for positions 0 to 127 and 128 columns "
        "(base 10000, interleaved layout): the first columns alternate quickly between -1 and 1 "
        "down the positions, later columns change ever more slowly; below it, columns 8 and 9 "
        "(sine and cosine of pair 4) plotted against pos."
    ),
    "rotation": (
        "Unit circle with pair i = 2 of a 128-wide encoding (base 10000): the point "
        "(sin, cos) at pos = 10 and at pos + k = 15, with the angle k times the angular "
        "frequency between them marked as an arc."
    ),
    "dot": (
        "Dot product PE(m) . PE(n) of a 128-wide encoding (base 10000) against the distance "
        "m - n from -63 to 63: largest, 64, at distance 0, falling and symmetric on both "
        "sides; beside it the 64 by 64 Gram matrix, constant along each diagonal."
    ),
    "rope": (
        "Attention score of a query at distance 0 to 256 after a key at position 0, both with "
        "the same content (every coordinate 1/sqrt(2), d_head = 64, base 10000): the added "
        "encoding's score starts at {added0:.0f} and ends at {added_end:.0f}; the RoPE score "
        "starts at {rope0:.0f} and ends at {rope_end:.0f}, both falling with ripples."
    ),
}

#: Defaults of the live figures (posenc-explorer.js), drawn in the static images.
TABLE = {"seq_len": 128, "d_model": 128, "base": 10000.0, "pair": 4}
ROTATION = {"d_model": 128, "base": 10000.0, "i": 2, "pos": 10, "k": 5}
DOT = {"d_model": 128, "base": 10000.0, "n": 64}
ROPE = {"d_head": 64, "base": 10000.0, "max_distance": 256}
# The Okabe-Ito colours of the live figures' lines (posenc-explorer.css).
BLUE, ORANGE, GREEN = "#0072b2", "#d55e00", "#009e73"
STATIC_FILES = ("posenc-explorer-colormap.js", "posenc-explorer.js")
STATIC = Path(__file__).resolve().parents[1] / "_static"  # book/_static


class posenc_explorer(nodes.General, nodes.Element):
    """The figure's container: ``<div class="posenc-explorer" data-figure=NAME>`` in HTML."""


def visit_html(self, node):
    self.body.append(f'<div class="posenc-explorer" data-figure="{node["figure"]}">')


def depart_html(self, node):
    self.body.append("</div>\n")


def visit_other(self, node):
    """Other builders (LaTeX, text...) show the static image only."""


def depart_other(self, node):
    pass


def image_dir(app) -> Path:
    """Where the static images are written: next to the doctrees, outside the sources."""
    return Path(app.doctreedir).parent / "posenc-explorer"


class PosencExplorer(SphinxDirective):
    """``{posenc-explorer} NAME``: one interactive figure, with a static image for print."""

    required_arguments = 1
    has_content = False
    option_spec = {"alt": directives.unchanged}

    def run(self):
        name = self.arguments[0]
        if name not in FIGURES:
            raise self.error(f"posenc-explorer: unknown figure {name!r}; expected one of "
                             f"{', '.join(FIGURES)}")
        path = image_dir(self.env.app) / f"posenc-explorer-{name}.png"
        # An absolute URI is read by Sphinx relative to the source folder.
        uri = "/" + os.path.relpath(path, self.env.srcdir).replace(os.sep, "/")
        image = nodes.image(uri=uri, alt=self.options.get("alt", alt_text(name)),
                            classes=["posenc-explorer-static"])
        node = posenc_explorer(figure=name)
        node += image
        self.env.posenc_explorer_docs.add(self.env.docname)
        return [node]


# --- the static images -----------------------------------------------------------------------

def _rope_scores():
    """The RoPE figure's default curves from posenc: (distances, added, rope), key at 0."""
    import numpy as np

    import posenc

    p = ROPE
    d, m = p["d_head"], p["max_distance"]
    x = np.full((m + 1, d), np.sqrt(0.5))
    pe = posenc.positional_encoding(m + 1, d, base=p["base"])
    added = (x + pe) @ (x[0] + pe[0])
    rotated = posenc.rope(x, base=p["base"])
    return np.arange(m + 1), added, rotated @ rotated[0]


def alt_text(name):
    """The alt text of a figure's static image (numbers computed with posenc)."""
    if name == "rope":
        _, added, rope = _rope_scores()
        return FIGURES[name].format(added0=added[0], added_end=added[-1], rope0=rope[0],
                                    rope_end=rope[-1])
    return FIGURES[name]


def _draw_table(fig):
    import numpy as np

    import posenc
    from posenc.plot import heatmap

    p = TABLE
    pe = posenc.positional_encoding(p["seq_len"], p["d_model"], base=p["base"])
    top, bottom = fig.subplots(2, 1, height_ratios=[3, 2])
    heatmap(pe, ax=top, title=f"The encoding table PE(pos, j): d_model = {p['d_model']}, "
            f"base = {p['base']:g}, interleaved")
    i = p["pair"]
    pos = np.arange(p["seq_len"])
    bottom.plot(pos, pe[:, 2 * i], color=BLUE, label=f"column j = {2 * i}: sin(pos·ω_{i})")
    bottom.plot(pos, pe[:, 2 * i + 1], color=ORANGE, linestyle="--",
                label=f"column j = {2 * i + 1}: cos(pos·ω_{i})")
    bottom.set(xlabel="position pos", ylabel="PE[pos, j]", ylim=(-1.05, 1.05),
               title=f"Pair i = {i} against pos")
    bottom.legend(loc="lower left", fontsize="small")


def _draw_rotation(fig):
    import numpy as np

    import posenc

    p = ROTATION
    w = posenc.angular_frequencies(p["d_model"], base=p["base"])[2 * p["i"]]
    pe = posenc.positional_encoding(p["pos"] + p["k"] + 1, p["d_model"], base=p["base"])
    ax = fig.subplots()
    t = np.linspace(0, 2 * np.pi, 400)
    ax.plot(np.sin(t), np.cos(t), color="0.5", linewidth=1)
    a, b = pe[p["pos"], 2 * p["i"]: 2 * p["i"] + 2], pe[p["pos"] + p["k"], 2 * p["i"]: 2 * p["i"] + 2]
    ax.plot([0, a[0]], [0, a[1]], color=BLUE)
    ax.plot([0, b[0]], [0, b[1]], color=ORANGE, linestyle="--")
    ax.plot(*a, "o", color=BLUE, label=f"pos = {p['pos']}")
    ax.plot(*b, "s", color=ORANGE, label=f"pos + k = {p['pos'] + p['k']}")
    arc = np.linspace(p["pos"] * w, (p["pos"] + p["k"]) * w, 50)
    ax.plot(0.45 * np.sin(arc), 0.45 * np.cos(arc), color=GREEN, linewidth=3,
            label=f"k·ω = {p['k'] * w:.3f} rad")
    ax.axhline(0, color="0.7", linewidth=0.8)
    ax.axvline(0, color="0.7", linewidth=0.8)
    ax.set(aspect="equal", xlim=(-1.2, 1.2), ylim=(-1.2, 1.2),
           xlabel="PE[pos, 2i] = sin(pos·ω_i)", ylabel="PE[pos, 2i+1] = cos(pos·ω_i)",
           title=f"Shift is a rotation: pair i = {p['i']}, d_model = {p['d_model']}")
    ax.legend(loc="lower left", fontsize="small")


def _draw_dot(fig):
    import numpy as np

    import posenc
    from posenc.plot import CMAP

    p = DOT
    n, d = p["n"], p["d_model"]
    pe = posenc.positional_encoding(2 * n, d, base=p["base"])
    deltas = np.arange(-(n - 1), n)
    curve = pe[n - 1 + deltas] @ pe[n - 1]  # PE(n0 + delta) . PE(n0), n0 = n - 1
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    left.plot(deltas, curve, color=BLUE)
    left.set(xlabel="distance Δ = m − n", ylabel="PE(m)·PE(n)", ylim=(-d / 2, d / 2 * 1.05),
             title=f"Dot product against distance (d_model = {d})")
    gram = pe[:n] @ pe[:n].T
    image = right.imshow(gram, cmap=CMAP, vmin=-d / 2, vmax=d / 2, interpolation="nearest")
    right.set(xlabel="n", ylabel="m", title="Gram matrix PE(m)·PE(n)")
    fig.colorbar(image, ax=right, shrink=0.8)


def _draw_rope(fig):
    p = ROPE
    distances, added, rope = _rope_scores()
    ax = fig.subplots()
    ax.plot(distances, added, color=BLUE, label="added: (x + PE(Δ))·(x + PE(0))")
    ax.plot(distances, rope, color=ORANGE, linestyle="--", label="RoPE: R(Δ)x · R(0)x")
    ax.set(xlabel="distance Δ (query at Δ, key at 0)", ylabel="score q·k",
           title=f"RoPE against the added encoding (d_head = {p['d_head']}, base = {p['base']:g})")
    ax.legend(fontsize="small")


DRAW = {"table": (_draw_table, (8, 6.5)), "rotation": (_draw_rotation, (5.5, 5.5)),
        "dot": (_draw_dot, (9, 4)), "rope": (_draw_rope, (8, 4))}


def write_static_images(app):
    """Draw each figure's default setting to <build>/posenc-explorer/posenc-explorer-NAME.png."""
    from matplotlib.figure import Figure

    folder = image_dir(app)
    folder.mkdir(parents=True, exist_ok=True)
    for name, (draw, size) in DRAW.items():
        fig = Figure(figsize=size, layout="constrained")
        draw(fig)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
        path = folder / f"posenc-explorer-{name}.png"
        if not path.exists() or path.read_bytes() != buffer.getvalue():
            path.write_bytes(buffer.getvalue())


def colormap_script() -> str:
    """The JavaScript that gives posenc-explorer.js the colour map of posenc.plot."""
    import matplotlib
    import numpy as np

    from posenc.plot import CMAP

    rgb = (matplotlib.colormaps[CMAP](np.linspace(0, 1, 256))[:, :3] * 255).round().astype(int)
    hex_colours = "".join(f"{r:02x}{g:02x}{b:02x}" for r, g, b in rgb)
    return ("/* Written by book/_ext/posenc_explorer.py at build time: matplotlib's colour map "
            f"{CMAP} (posenc.plot.CMAP), 256 colours from -limit to +limit. */\n"
            f'window.posencExplorerColormap = {{name: "{CMAP}", rgb: "{hex_colours}"}};\n')


def write_assets(app, exception):
    """Write the colour map, and copy the module (also when the project's html_static_path
    does not list book/_static), into the build's _static folder."""
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        (static / STATIC_FILES[0]).write_text(colormap_script())
        for name in ("posenc-explorer.js", "posenc-explorer.css"):
            shutil.copyfile(STATIC / name, static / name)


def add_assets(app, pagename, templatename, context, doctree):
    """Load the module on the pages (or the single page) that have a figure."""
    if doctree is not None and any(True for _ in doctree.findall(posenc_explorer)):
        for script in STATIC_FILES:
            app.add_js_file(script, loading_method="defer")
        app.add_css_file("posenc-explorer.css")


# --- rebuilding the pages with a figure when their code changes ----------------------------------

def _fingerprint():
    """A hash of what the figures are made of: this file, the module, posenc's sources."""
    import posenc

    digest = hashlib.sha256()
    files = [Path(__file__), STATIC / "posenc-explorer.js", STATIC / "posenc-explorer.css",
             *sorted(Path(posenc.__file__).parent.glob("*.py"))]
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def init_env(app):
    if not hasattr(app.env, "posenc_explorer_docs"):
        app.env.posenc_explorer_docs = set()


def outdated(app, env, added, changed, removed):
    """The pages with a figure, when the fingerprint changed since the last build."""
    fingerprint = _fingerprint()
    if getattr(env, "posenc_explorer_fingerprint", None) == fingerprint:
        return []
    env.posenc_explorer_fingerprint = fingerprint
    return sorted(env.posenc_explorer_docs - set(removed))


def purge_doc(app, env, docname):
    env.posenc_explorer_docs.discard(docname)


def merge_info(app, env, docnames, other):
    env.posenc_explorer_docs |= other.posenc_explorer_docs


def setup(app):
    # Visitors are looked up by builder name: the HTML ones for each HTML builder (singlehtml
    # prints the PDF).
    html = (visit_html, depart_html)
    app.add_node(posenc_explorer, html=html, singlehtml=html, dirhtml=html,
                 latex=(visit_other, depart_other), text=(visit_other, depart_other))
    app.add_directive("posenc-explorer", PosencExplorer)
    app.connect("builder-inited", init_env)
    app.connect("builder-inited", write_static_images)
    app.connect("env-get-outdated", outdated)
    app.connect("env-purge-doc", purge_doc)
    app.connect("env-merge-info", merge_info)
    app.connect("build-finished", write_assets)
    app.connect("html-page-context", add_assets)
    return {"env_version": 1, "parallel_read_safe": True, "parallel_write_safe": True}
