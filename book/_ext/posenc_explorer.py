"""Sphinx extension: the interactive figures of the course, computed in the reader's browser.

In any markdown page or notebook markdown cell of the book::

    ```{posenc-explorer} table
    ```

with one of the figure names of :data:`FIGURES` (``table``, ``rotation``, ``dot``, ``rope``,
``focus``). The directive writes ``<div class="posenc-explorer" data-figure="table">`` holding

- a line saying how to use the controls (shown on screen once the live figure is there),
- a line for print saying that the image shows the figure's default setting,
- the static image of that default setting with alt text, in a ``<picture>`` whose source for
  ``media="screen"`` is an empty inline image: the page does not download the PNG while it
  loads; the module removes that source once the page is idle, so the PNG (hidden on screen)
  is there when a reader prints the page,
- the same image in ``<noscript>`` for readers without JavaScript;

on pages that have one, ``book/_static/posenc-explorer.js`` (our module, with
``posenc-explorer-numerics.js`` and ``posenc-explorer-draw.js``; scales and axes from d3) adds
the live figure and its controls. Print (the reader's, and the PDF of ``tools/print_pdf.py``)
shows the still image.

At build time the extension

- draws the static images from ``posenc`` with matplotlib (``builder-inited``), into
  ``<build>/posenc-explorer/`` (next to the doctrees: never into the sources); Sphinx then
  copies them to ``_images/`` like any figure. A file is rewritten only when its bytes change,
  so an unchanged figure does not make Sphinx reread the pages;
- writes ``_static/posenc-explorer-colormap.js``: the colour map of ``posenc.plot``
  (matplotlib's ``RdBu_r``), 256 colours, so the live heatmaps match the static ones;
  ``_static/posenc-explorer-d3.js``: the d3 modules the figures use, copied from
  ``node_modules`` (``npm ci`` installs them at the versions of ``package-lock.json``; no CDN),
  and copies the modules (:data:`MODULES`) and ``posenc-explorer.css`` there (``build-finished``);
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
        "x = cos(pos w_i) (column 2i+1), y = sin(pos w_i) (column 2i), which starts at (1, 0) "
        "at pos = 0 and turns anticlockwise as pos grows, drawn at pos = 10 and at "
        "pos + k = 15, with the angle k times the angular frequency between them marked as an "
        "arc."
    ),
    "dot": (
        "Dot product PE(m) . PE(m + k) of a 128-wide encoding (base 10000) against the shift "
        "k = n - m from -63 to 63: largest, 64, at k = 0, falling and symmetric on both "
        "sides; beside it the 64 by 64 Gram matrix, constant along each diagonal, in the "
        "red-blue colour map from -64 to 64."
    ),
    "rope": (
        "Attention score of a query at position 0 against keys at shift k = 0 to 256 from it, "
        "both with the same content (every coordinate 1/sqrt(2), d_head = 64, base 10000): "
        "the added encoding's score starts at {added0:.0f} and ends at {added_end:.0f}; the "
        "RoPE score starts at {rope0:.0f} and ends at {rope_end:.0f}, both falling with ripples."
    ),
    "focus": (
        "Attention weights of a query at position 64 over keys at positions 0 to 127 from "
        "position alone, softmax over n of PE(64) . PE(n) / sqrt(d_model), base 10000: with "
        "d_model = 64 the weight on n = 64 is {peak:.3f}, and the keys within 5 positions get "
        "{near:.2f} of the weight; the curve is a peak at n = 64 on a low, rippled floor."
    ),
}

#: The line the directive writes above each live figure (on screen only).
HOWTO = {
    "table": "Move the sliders, or focus one with Tab and use the arrow keys; type an offset and "
             "press Enter. Point at a cell, or focus the heatmap and use the arrow keys, to read "
             "its values.",
    "rotation": "Move the sliders, or focus one with Tab and use the arrow keys: change pos and "
                "watch the arc keep its size; change k or the pair i and watch it grow or shrink.",
    "dot": "Move the sliders, or focus one with Tab and use the arrow keys, to change the width "
           "d_model and the base.",
    "rope": "Move the sliders, or focus one with Tab and use the arrow keys: move the query "
            "position m and watch which curve stays put.",
    "focus": "Move the d_model slider, or focus it with Tab and use the arrow keys, and watch the "
             "peak at the query's own position grow; move m to move the query.",
}
#: The line printed instead (the PDF shows the still image).
PRINT_NOTE = ("The image shows this figure at its default setting; on the course's website the "
              "figure is interactive.")
#: An empty image (1 x 1 transparent GIF): the picture's source on screen, where the PNG is not
#: needed.
EMPTY_IMAGE = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

#: Defaults of the live figures (posenc-explorer.js), drawn in the static images.
TABLE = {"seq_len": 128, "d_model": 128, "base": 10000.0, "pair": 4}
ROTATION = {"d_model": 128, "base": 10000.0, "i": 2, "pos": 10, "k": 5}
DOT = {"d_model": 128, "base": 10000.0, "n": 64}
ROPE = {"d_head": 64, "base": 10000.0, "max_shift": 256}
FOCUS = {"d_model": 64, "base": 10000.0, "m": 64, "keys": 128}
# The Okabe-Ito colours of the live figures' lines (posenc-explorer.css).
BLUE, ORANGE, GREEN = "#0072b2", "#d55e00", "#009e73"
#: Our JavaScript modules (book/_static), each after those it uses: the numbers, the drawing
#: helpers, the figures.
MODULES = ("posenc-explorer-numerics.js", "posenc-explorer-draw.js", "posenc-explorer.js")
STATIC_FILES = ("posenc-explorer-d3.js", "posenc-explorer-colormap.js", *MODULES)
STATIC = Path(__file__).resolve().parents[1] / "_static"  # book/_static
NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"
#: The d3 modules of the figures (package.json) and those they import, in an order where each
#: comes after its imports: their UMD builds, concatenated, define the global ``d3``.
D3_MODULES = ("internmap", "d3-array", "d3-color", "d3-interpolate", "d3-format", "d3-time",
              "d3-time-format", "d3-scale", "d3-selection", "d3-axis")


class posenc_explorer(nodes.General, nodes.Element):
    """The figure's container: ``<div class="posenc-explorer" data-figure=NAME>`` in HTML."""


def visit_html(self, node):
    """The container, the how-to and print lines, the image for print and for no JavaScript."""
    from html import escape
    from posixpath import join
    from urllib.parse import quote

    name = node["figure"]
    image = node.next_node(nodes.image)
    src = join(self.builder.imgpath, quote(self.builder.images[image["uri"]]))
    alt = escape(image["alt"])
    self.body.append(
        f'<div class="posenc-explorer" data-figure="{name}">'
        f'<p class="pe-howto">{escape(HOWTO[name])}</p>'
        f'<p class="pe-print-note">{escape(PRINT_NOTE)}</p>'
        f'<picture class="posenc-explorer-static"><source media="screen" srcset="{EMPTY_IMAGE}">'
        f'<img src="{src}" alt="{alt}"></picture>'
        f'<noscript><img class="posenc-explorer-noscript" src="{src}" alt="{alt}"></noscript>'
        "</div>\n")
    raise nodes.SkipNode


def depart_html(self, node):
    pass


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
    """The RoPE figure's default curves from posenc: (shifts, added, rope), query at 0."""
    import numpy as np

    import posenc

    p = ROPE
    d, m = p["d_head"], p["max_shift"]
    x = np.full((m + 1, d), np.sqrt(0.5))
    pe = posenc.positional_encoding(m + 1, d, base=p["base"])
    added = (x[0] + pe[0]) @ (x + pe).T
    rotated = posenc.rope(x, base=p["base"])
    return np.arange(m + 1), added, rotated[0] @ rotated.T


def _focus_weights():
    """The focus figure's default weights from posenc: (keys n, weights, weight within 5)."""
    import numpy as np

    import posenc
    from posenc.attention import softmax

    p = FOCUS
    pe = posenc.positional_encoding(p["keys"], p["d_model"], base=p["base"])
    weights = softmax(pe[p["m"]] @ pe.T / np.sqrt(p["d_model"]))
    n = np.arange(p["keys"])
    return n, weights, weights[np.abs(n - p["m"]) <= 5].sum()


def alt_text(name):
    """The alt text of a figure's static image (numbers computed with posenc)."""
    if name == "rope":
        _, added, rope = _rope_scores()
        return FIGURES[name].format(added0=added[0], added_end=added[-1], rope0=rope[0],
                                    rope_end=rope[-1])
    if name == "focus":
        _, weights, near = _focus_weights()
        return FIGURES[name].format(peak=weights[FOCUS["m"]], near=near)
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
    ax.plot(np.cos(t), np.sin(t), color="0.5", linewidth=1)
    # The standard picture: x = cos (column 2i + 1), y = sin (column 2i), anticlockwise.
    i = p["i"]
    a, b = pe[p["pos"], [2 * i + 1, 2 * i]], pe[p["pos"] + p["k"], [2 * i + 1, 2 * i]]
    ax.plot([0, a[0]], [0, a[1]], color=BLUE)
    ax.plot([0, b[0]], [0, b[1]], color=ORANGE, linestyle="--")
    ax.plot(*a, "o", color=BLUE, label=f"pos = {p['pos']}")
    ax.plot(*b, "s", color=ORANGE, label=f"pos + k = {p['pos'] + p['k']}")
    arc = np.linspace(p["pos"] * w, (p["pos"] + p["k"]) * w, 50)
    ax.plot(0.45 * np.cos(arc), 0.45 * np.sin(arc), color=GREEN, linewidth=3,
            label=f"k·ω = {p['k'] * w:.3f} rad")
    ax.axhline(0, color="0.7", linewidth=0.8)
    ax.axvline(0, color="0.7", linewidth=0.8)
    ax.set(aspect="equal", xlim=(-1.45, 1.45), ylim=(-1.45, 1.45),
           xlabel="x = PE[pos, 2i+1] = cos(pos·ω_i)", ylabel="y = PE[pos, 2i] = sin(pos·ω_i)",
           title=f"Shift is a rotation: pair i = {p['i']}, d_model = {p['d_model']}")
    ax.legend(loc="lower left", fontsize="small")


def _draw_dot(fig):
    import numpy as np

    import posenc
    from posenc.plot import CMAP

    p = DOT
    n, d = p["n"], p["d_model"]
    pe = posenc.positional_encoding(2 * n, d, base=p["base"])
    shifts = np.arange(-(n - 1), n)
    curve = pe[n - 1 + shifts] @ pe[n - 1]  # PE(m + k) . PE(m), m = n - 1
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    left.plot(shifts, curve, color=BLUE)
    left.set(xlabel="shift k = n − m", ylabel="PE(m)·PE(n)", ylim=(-d / 2, d / 2 * 1.05),
             title=f"Dot product against the shift (d_model = {d})")
    gram = pe[:n] @ pe[:n].T
    image = right.imshow(gram, cmap=CMAP, vmin=-d / 2, vmax=d / 2, interpolation="nearest")
    right.set(xlabel="n", ylabel="m", title="Gram matrix PE(m)·PE(n)")
    fig.colorbar(image, ax=right, shrink=0.8)


def _draw_rope(fig):
    p = ROPE
    shifts, added, rope = _rope_scores()
    ax = fig.subplots()
    ax.plot(shifts, added, color=BLUE, label="added: (x + PE(0))·(x + PE(k))")
    ax.plot(shifts, rope, color=ORANGE, linestyle="--", label="RoPE: R(0)x · R(k)x")
    ax.set(xlabel="shift k (query at m = 0, key at n = k)", ylabel="score q·k",
           title=f"RoPE against the added encoding (d_head = {p['d_head']}, base = {p['base']:g})")
    ax.legend(fontsize="small")


def _draw_focus(fig):
    p = FOCUS
    n, weights, _ = _focus_weights()
    ax = fig.subplots()
    ax.plot(n, weights, color=BLUE, label="softmax over n of PE(m)·PE(n)/√d_model")
    ax.axvline(p["m"], color="0.6", linewidth=1, linestyle=":")
    ax.set(xlabel="key position n", ylabel="attention weight", ylim=(0, 0.35),
           title=f"Position-only attention of a query at m = {p['m']} "
                 f"(d_model = {p['d_model']}, base = {p['base']:g})")
    ax.legend(fontsize="small")


DRAW = {"table": (_draw_table, (8, 6.5)), "rotation": (_draw_rotation, (5.5, 5.5)),
        "dot": (_draw_dot, (9, 4)), "rope": (_draw_rope, (8, 4)), "focus": (_draw_focus, (8, 4))}


def still_png(name: str) -> bytes:
    """The PNG of figure ``name`` at its default setting (also the still image of the notebooks:
    tools/explorer_stills.py)."""
    from matplotlib.figure import Figure

    draw, size = DRAW[name]
    fig = Figure(figsize=size, layout="constrained")
    draw(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def write_static_images(app):
    """Draw each figure's default setting to <build>/posenc-explorer/posenc-explorer-NAME.png."""
    folder = image_dir(app)
    folder.mkdir(parents=True, exist_ok=True)
    for name in DRAW:
        png = still_png(name)
        path = folder / f"posenc-explorer-{name}.png"
        if not path.exists() or path.read_bytes() != png:
            path.write_bytes(png)


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


def _d3_files():
    """The UMD builds of D3_MODULES in node_modules; a clear error when `npm ci` did not run."""
    from sphinx.errors import ExtensionError

    files = [NODE_MODULES / name / "dist" / f"{name}.min.js" for name in D3_MODULES]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ExtensionError("posenc-explorer: the d3 modules of the figures are missing "
                             f"({', '.join(missing)}): run `npm ci` in the repository first")
    return files


def d3_script() -> str:
    """The d3 modules, concatenated (each keeps its licence line)."""
    return "\n".join(f.read_text() for f in _d3_files()) + "\n"


def check_d3(app):
    _d3_files()


def write_assets(app, exception):
    """Write the colour map and d3, and copy the module (also when the project's
    html_static_path does not list book/_static), into the build's _static folder."""
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        (static / "posenc-explorer-d3.js").write_text(d3_script())
        (static / "posenc-explorer-colormap.js").write_text(colormap_script())
        for name in (*MODULES, "posenc-explorer.css"):
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
    files = [Path(__file__), *(STATIC / name for name in MODULES), STATIC / "posenc-explorer.css",
             *_d3_files(), *sorted(Path(posenc.__file__).parent.glob("*.py"))]
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
    app.connect("builder-inited", check_d3)
    app.connect("builder-inited", write_static_images)
    app.connect("env-get-outdated", outdated)
    app.connect("env-purge-doc", purge_doc)
    app.connect("env-merge-info", merge_info)
    app.connect("build-finished", write_assets)
    app.connect("html-page-context", add_assets)
    return {"env_version": 2, "parallel_read_safe": True, "parallel_write_safe": True}
