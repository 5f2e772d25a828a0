"""The interactive figures (book/_static/posenc-explorer.js, directive in book/_ext/posenc_explorer.py),
read in headless Chromium on the built site the way a reader uses them.

The site is built, served and visited with the fixtures of tests/conftest.py (base_url,
browser). The tests drive every control from the keyboard and check that the figure and its
aria-live summary change; compare the numbers the page computed with posenc in float64; run
axe-core (npm package, `npm ci` installs it; make test does) on every page with a figure
(its results reused while the page, its files, the browser and axe are the same: tests/reuse.py);
check the phone width, the static images for print, and that nothing reaches the console at
error level. The redraw time is measured by tools/bench_explore.py, not here.
"""

import hashlib
import inspect
import os
import re
from pathlib import Path

import numpy as np
import pytest

import posenc
from reuse import reused
# The site tests' helpers; their fixtures base_url and browser come from conftest.py.
from test_site import KEPT_BASE, PAGES, PHONE, REQUIRE_BROWSER, ROOT, Report, _prose, _record, page_digest

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
EXPLORE = "book/explore"
FIGURES = ("table", "rotation", "dot", "rope")
# Pages of the table of contents with a {posenc-explorer} figure.
FIGURE_PAGES = [p for p in PAGES if "{posenc-explorer}" in _prose(p)]
TOLERANCE = 1e-9  # absolute, for positions below 10**4


@pytest.fixture(scope="module")
def context(browser):
    """One desktop browser context for the module."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script("window.localStorage.clear()")
    yield context
    context.close()


@pytest.fixture
def page(context, base_url):
    """The Explore page, loaded; fails the test on any console error or failed request."""
    report = Report(f"{base_url}{EXPLORE}.html")
    page = context.new_page()
    _record(page, base_url, report)
    page.goto(report.url, wait_until="networkidle")
    page.wait_for_function("document.querySelectorAll('.posenc-explorer.is-live').length === 4")
    yield page
    page.close()
    assert not report.problems, "\n".join(report.problems)


def figure(page, name):
    return page.locator(f'.posenc-explorer[data-figure="{name}"]')


def data(page, name, expression="api.data"):
    """Evaluate an expression of the figure's api (its element's posencExplorer property)."""
    return figure(page, name).evaluate(f"el => {{ const api = el.posencExplorer; "
                                       f"const v = {expression}; return JSON.parse(JSON.stringify("
                                       f"v, (k, x) => ArrayBuffer.isView(x) ? Array.from(x) : x)); }}")


def set_controls(page, name, **values):
    """Set controls as a script would (the keyboard test below drives them by keys)."""
    figure(page, name).evaluate("""(el, values) => {
        for (const [key, value] of Object.entries(values)) {
          const input = el.posencExplorer.controls[key].input;
          input.value = String(value);
          input.dispatchEvent(new Event("input", {bubbles: true}));
        }}""", values)


def fingerprint(page, name):
    """A hash of what the figure shows: its canvases' pixels and its SVG drawings."""
    drawn = figure(page, name).evaluate("""el => [
        ...Array.from(el.querySelectorAll(".pe-live canvas"), c => c.toDataURL()),
        ...Array.from(el.querySelectorAll(".pe-live svg"), s => s.innerHTML)].join("|")""")
    return hashlib.sha256(drawn.encode()).hexdigest()


def summary(page, name):
    return figure(page, name).locator(".pe-summary").inner_text()


# --- the page and its figures ---------------------------------------------------------------

def test_explore_page_is_in_the_reference_part():
    assert EXPLORE in PAGES and FIGURE_PAGES and EXPLORE in FIGURE_PAGES


def test_every_figure_is_live_with_its_static_image(page):
    """Each figure replaced its static image on screen; the image (with alt text) is there for
    print, where the live part is hidden."""
    for name in FIGURES:
        box = figure(page, name)
        image = box.locator("img.posenc-explorer-static")
        assert len(image.get_attribute("alt")) > 80
        assert image.evaluate("img => img.complete && img.naturalWidth > 0")
        assert not image.is_visible() and box.locator(".pe-live").is_visible()
        assert box.locator(".pe-summary").get_attribute("aria-live") == "polite"
    page.emulate_media(media="print")
    for name in FIGURES:
        assert figure(page, name).locator("img.posenc-explorer-static").is_visible()
        assert not figure(page, name).locator(".pe-live").is_visible()
    page.emulate_media(media="screen")


# Per figure, each control with the key that moves it and the value expected after it.
KEYS = {
    "table": [("d_model", "ArrowRight", "129"), ("base", "ArrowLeft", "3.95"),
              ("seq_len", "ArrowRight", "129"), ("offset", "ArrowUp", "1"),
              ("layout", "ArrowDown", "concatenated"), ("pair", "ArrowRight", "5")],
    "rotation": [("i", "ArrowRight", "3"), ("pos", "ArrowRight", "11"), ("k", "ArrowLeft", "4")],
    "dot": [("d_model", "ArrowLeft", "126"), ("base", "ArrowRight", "4.05")],
    "rope": [("d_head", "ArrowRight", "66"), ("base", "ArrowLeft", "3.95"),
             ("key", "ArrowRight", "1")],
}


@pytest.mark.parametrize("name", FIGURES)
def test_keyboard_drives_every_control(page, name):
    """Tab from control to control; each key press changes the value, the figure and the summary."""
    controls = KEYS[name]
    first = figure(page, name).locator(".pe-control :is(input, select)").first
    first.focus()
    for i, (key, press, expected) in enumerate(controls):
        if i:
            page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement.id")
        label = page.locator(f'label[for="{focused}"]').inner_text()
        assert figure(page, name).evaluate(
            "(el, args) => el.posencExplorer.controls[args[0]].input.id === args[1]", [key, focused]), \
            f"Tab reached {label!r}, expected the control {key!r}"
        before = fingerprint(page, name), summary(page, name)
        page.keyboard.press(press)
        value = figure(page, name).evaluate(
            "(el, key) => el.posencExplorer.controls[key].input.value", key)
        assert value == expected, f"{key}: {press} gave {value}"
        assert data(page, name, "api.state")[key] == expected
        after = fingerprint(page, name), summary(page, name)
        assert after[0] != before[0], f"{key}: the figure did not change"
        assert after[1] != before[1], f"{key}: the summary did not change"


def _reference_table(d):
    """posenc's table for the setting the page reports, in its layout."""
    pe = posenc.positional_encoding(d["seqLen"], d["dModel"], base=d["base"], offset=d["offset"])
    if d["layout"] == "concatenated":
        pe = np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)
    return pe


def _check_close(computed, expected, positions):
    """Max |difference|; at most 1e-9 below position 10**4, and within float64's angle
    accuracy (1e-13 per position) beyond."""
    error = np.abs(np.asarray(computed) - expected)
    bound = np.maximum(TOLERANCE, np.asarray(positions, dtype=float) * 1e-13)
    assert error.shape == bound.shape or error.ndim == 2
    bound = bound.reshape(bound.shape + (1,) * (error.ndim - bound.ndim))
    assert np.all(error <= bound), f"max difference {error.max():.3g}"
    return float(error.max())


LARGEST = {}


@pytest.mark.parametrize("setting", [
    dict(d_model=7, base=2, seq_len=64, offset=0, layout="interleaved"),            # base 100
    dict(d_model=33, base=6, seq_len=100, offset=10000, layout="concatenated"),     # base 1e6
    dict(d_model=1, base=1, seq_len=50, offset=9990, layout="interleaved"),         # base 10
    dict(d_model=511, base=4, seq_len=300, offset=9800, layout="concatenated"),
    dict(d_model=512, base=4, seq_len=512, offset=0, layout="interleaved"),
])
def test_table_values_equal_posenc(page, setting):
    set_controls(page, "table", **setting)
    d = data(page, "table")
    assert (d["dModel"], d["seqLen"], d["offset"], d["layout"]) == (
        setting["d_model"], setting["seq_len"], setting["offset"], setting["layout"])
    assert d["base"] == pytest.approx(10.0 ** setting["base"], rel=1e-15)
    computed = np.array(d["values"]).reshape(d["seqLen"], d["dModel"])
    positions = d["offset"] + np.arange(d["seqLen"])
    LARGEST[f"table {setting}"] = _check_close(computed, _reference_table(d), positions)


def test_cell_readout_follows_keyboard_and_pointer(page):
    """Focus the heatmap, move with the arrow keys, point with the mouse: the readout names
    the cell's pos, j, pair i, frequency, wavelength and value, equal to posenc's."""
    set_controls(page, "table", d_model=9, base=2, seq_len=40, offset=10000, layout="concatenated")
    canvas = figure(page, "table").locator("canvas.pe-heatmap")
    readout = figure(page, "table").locator(".pe-readout")
    canvas.focus()
    for key in ["ArrowRight"] * 6 + ["ArrowDown"] * 3:
        before = readout.inner_text()
        page.keyboard.press(key)
        assert readout.inner_text() != before
    cell = data(page, "table", "api.data.cell")
    assert (cell["pos"], cell["j"], cell["i"], cell["fn"]) == (10003, 6, 1, "cos")  # 5 sines first
    omega = posenc.angular_frequencies(9, base=100.0)[2]
    assert cell["frequency"] == pytest.approx(omega, rel=1e-15)
    assert cell["wavelength"] == pytest.approx(2 * np.pi / omega, rel=1e-15)
    assert abs(cell["value"] - posenc.positional_encoding(1, 9, base=100.0, offset=10003)[0, 3]) < 1e-12
    assert f"pos = 10003, j = 6: cos of pair i = 1" in readout.inner_text()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.99, box["y"] + box["height"] * 0.01)
    cell = data(page, "table", "api.data.cell")
    assert (cell["pos"], cell["j"]) == (10000, 8)


@pytest.mark.parametrize("setting", [dict(i=0, pos=0, k=1), dict(i=5, pos=1000, k=-200),
                                     dict(i=63, pos=777, k=200)])
def test_rotation_values_equal_posenc(page, setting):
    set_controls(page, "rotation", **setting)
    d = data(page, "rotation")
    i, pos, k = setting["i"], setting["pos"], setting["k"]
    pe = posenc.positional_encoding(pos + max(k, 0) + 1, d["dModel"], base=d["base"])
    omega = posenc.angular_frequencies(d["dModel"], base=d["base"])[2 * i]
    LARGEST[f"rotation {setting}"] = max(
        _check_close(d["at_pos"], pe[pos, 2 * i: 2 * i + 2], [pos] * 2),
        _check_close(d["at_pos_k"], pe[pos + k, 2 * i: 2 * i + 2], [pos + k] * 2))
    assert d["angle"] == pytest.approx(k * omega, rel=1e-14)
    # The rotation by k * omega (posenc.shift_matrix's block) takes the first point to the second.
    block = posenc.shift_matrix(k, d["dModel"], base=d["base"])[2 * i: 2 * i + 2, 2 * i: 2 * i + 2]
    assert np.allclose(block @ np.array(d["at_pos"]), d["at_pos_k"], atol=1e-12)


@pytest.mark.parametrize("setting", [dict(d_model=2, base=2), dict(d_model=128, base=4),
                                     dict(d_model=512, base=6)])
def test_dot_product_values_equal_posenc(page, setting):
    set_controls(page, "dot", **setting)
    d = data(page, "dot")
    n, deltas = d["n"], np.array(d["deltas"])
    pe = posenc.positional_encoding(3 * n, d["dModel"], base=d["base"])
    gram = pe[:n] @ pe[:n].T
    worst = _check_close(np.array(d["gram"]).reshape(n, n), gram, np.arange(n))
    # The curve, from the identity, equals the dot products of actual rows, for several n.
    for start in (n - 1, n, 2 * n - 1):
        worst = max(worst, _check_close(d["curve"], pe[start + deltas] @ pe[start], start + deltas))
    assert np.allclose(d["curve"], d["curve"][::-1], atol=1e-12), "not symmetric in m - n"
    LARGEST[f"dot {setting}"] = worst


@pytest.mark.parametrize("setting", [dict(d_head=2, base=2, key=0), dict(d_head=64, base=4, key=500),
                                     dict(d_head=256, base=6, key=1000)])
def test_rope_values_equal_posenc(page, setting):
    set_controls(page, "rope", **setting)
    d = data(page, "rope")
    n, dh, distances = d["keyPos"], d["dHead"], np.array(d["distances"])
    x = np.array(d["content"])
    assert n == setting["key"] and np.allclose(x, np.sqrt(0.5), rtol=0, atol=0)
    pe = posenc.positional_encoding(len(distances), dh, base=d["base"], offset=n)
    added = (x + pe) @ (x + pe[0])
    rotated = posenc.rope(np.tile(x, (len(distances), 1)), base=d["base"], offset=n)
    rope = rotated @ rotated[0]
    LARGEST[f"rope {setting}"] = max(_check_close(d["added"], added, n + distances),
                                     _check_close(d["rope"], rope, n + distances))
    # RoPE's score depends on the distance only: the same curve with the key at position 0.
    at_zero = posenc.rope(np.tile(x, (len(distances), 1)), base=d["base"])
    assert np.allclose(d["rope"], at_zero @ at_zero[0], atol=1e-9)


def test_pure_functions_equal_posenc(page):
    """window.posencExplorer.encodingTable over many settings, both layouts, odd widths."""
    settings = [(n, d, b, o, layout) for n, d, b, o in
                [(5, 1, 10.0, 0), (17, 2, 1e6, 9983), (30, 3, 100.0, 0), (64, 64, 1e4, 1),
                 (40, 255, 1234.5, 5000), (8, 512, 1e6, 9992)]
                for layout in ("interleaved", "concatenated")]
    tables = page.evaluate("""settings => settings.map(([n, d, b, o, layout]) =>
        Array.from(window.posencExplorer.encodingTable(n, d, b, o, layout)))""", settings)
    worst = 0.0
    for (n, d, b, o, layout), values in zip(settings, tables):
        expected = _reference_table(dict(seqLen=n, dModel=d, base=b, offset=o, layout=layout))
        worst = max(worst, _check_close(np.array(values).reshape(n, d), expected, o + np.arange(n)))
    LARGEST["pure encodingTable"] = worst


def test_largest_difference_is_reported(request):
    """Print the largest difference from posenc seen above (run with -s to see it)."""
    if not LARGEST:
        pytest.skip("the value tests did not run")
    key = max(LARGEST, key=LARGEST.get)
    print(f"\nlargest |page - posenc| over {len(LARGEST)} settings: {LARGEST[key]:.3g} ({key})")
    assert LARGEST[key] <= TOLERANCE


# --- accessibility, phone width ---------------------------------------------------------------

def _axe_source():
    if not AXE.exists():
        message = f"{AXE.relative_to(ROOT)} is missing: run `npm ci` (make test does)"
        if REQUIRE_BROWSER:
            pytest.fail(message)
        pytest.skip(message)
    return AXE.read_text()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("docname", FIGURE_PAGES)
def test_axe_finds_no_violation_in_our_content(browser, base_url, docname, scheme):
    """axe-core (WCAG 2 A/AA rules and best practices) on the page in light and dark mode:
    no violation in the article (the page's own content, figures included). Violations in
    the theme's frame (navigation, header) are printed, not failed."""
    source = _axe_source()
    # The same page, scripts, styles, browser and axe as in an earlier run: its results are reused.
    key = page_digest(browser, docname, scheme, source, inspect.getsource(_axe_run), inspect.getsource(_record))
    problems, results = reused("axe", key, lambda: _axe_run(browser, base_url, docname, scheme, source))
    ours = [f"{v['id']} ({v['impact']}): {v['help']} at {n['target']}"
            for v in results for n in v["nodes"] if n["ours"]]
    theirs = sorted({f"{v['id']} ({v['impact']})" for v in results for n in v["nodes"] if not n["ours"]})
    if theirs:
        print(f"\n{docname} ({scheme}): axe violations outside the article (theme): {theirs}")
    assert not problems, "\n".join(problems)
    assert ours == [], "accessibility violations in the page's content:\n" + "\n".join(ours)


def _axe_run(browser, base_url, docname, scheme, source):
    """Load docname in scheme, run axe-core (source) on it: (the load's problems, violations)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    report = Report(f"{base_url}{docname}.html")
    page = context.new_page()
    _record(page, base_url, report)
    page.goto(report.url, wait_until="networkidle")
    page.wait_for_function("document.querySelectorAll('.posenc-explorer:not(.is-live)').length === 0")
    page.wait_for_function("s => document.documentElement.dataset.theme === s", arg=scheme)
    page.add_script_tag(content=source)
    results = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ["violations"]});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
          nodes: v.nodes.map(n => ({target: n.target.join(" "),
            ours: !!document.querySelector(n.target.join(" "))?.closest("article, .posenc-explorer")}))}));
    }""")
    context.close()
    return [p.replace(base_url, KEPT_BASE) for p in report.problems], results


def test_no_horizontal_scroll_on_a_phone(browser, base_url):
    """At 390 px, with the widest settings, the page does not scroll sideways."""
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{base_url}{EXPLORE}.html", wait_until="networkidle")
    page.wait_for_function("document.querySelectorAll('.posenc-explorer.is-live').length === 4")
    set_controls(page, "table", d_model=512, seq_len=1024, offset=1000000, layout="concatenated")
    set_controls(page, "dot", d_model=512, base=6)
    set_controls(page, "rope", d_head=256, key=1000)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    context.close()
    assert overflow <= 0, f"{overflow} px too wide"


def test_figures_in_sources_are_known():
    """Every {posenc-explorer} in the book names one of the four figures."""
    names = set()
    for docname in FIGURE_PAGES:
        names |= set(re.findall(r"```\{posenc-explorer\}\s+(\S+)", _prose(docname)))
    assert names <= set(FIGURES) and names, names


# --- the Sphinx extension (book/_ext/posenc_explorer.py) ----------------------------------------

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
    assert '<div class="posenc-explorer" data-figure="rotation"><img alt="Unit circle' in html
    assert 'src="_images/posenc-explorer-rotation.png"' in html
    assert "posenc-explorer.js" in html and "posenc-explorer.css" in html
    for name in ("posenc-explorer.js", "posenc-explorer.css", "posenc-explorer-colormap.js"):
        assert (tmp_path / "_build" / "_static" / name).is_file()


def test_directive_rejects_an_unknown_figure(tmp_path):
    _, warnings, _ = _sphinx_project(tmp_path, "heatmap")
    assert "posenc-explorer: unknown figure 'heatmap'; expected one of table, rotation, dot, rope" in warnings


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
