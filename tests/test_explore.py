"""The interactive figures (book/_static/posenc-explorer*.js, directive in book/_ext/posenc_explorer.py),
read in headless Chromium on the built site the way a reader uses them: their numbers, controls
and announcements, accessibility. Their layout (labels, one screen, the heatmap's pixels) is
tested in tests/test_explore_layout.py, print in tests/test_explore_print.py, the Sphinx
extension on its own in tests/test_posenc_explorer.py.

The site is built, served and visited with the fixtures of tests/conftest.py (base_url,
browser). The tests drive every control from the keyboard and check that the figure and its
aria-live summary change; compare the numbers the page computed with posenc in float64; run
axe-core (npm package, `npm ci` installs it; make test does) on every page with a figure
(its results reused while the page, its files, the browser and axe are the same: tests/reuse.py);
and check that nothing reaches the console at error level. The redraw time is measured by
tools/bench_explore.py, not here.
"""

import contextlib
import hashlib
import inspect
import re

import numpy as np
import pytest

import posenc
from reuse import reused
# The site tests' helpers; their fixtures base_url and browser come from conftest.py.
from test_site import (INIT_SCRIPT, KEPT_BASE, PAGES, REQUIRE_BROWSER, ROOT, Report, _prose, leave,
                       page_digest, recording)

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
EXPLORE = "book/explore"
FIGURES = ("table", "rotation", "dot", "rope", "focus")
# Pages of the table of contents with a {posenc-explorer} figure.
FIGURE_PAGES = [p for p in PAGES if "{posenc-explorer}" in _prose(p)]
TOLERANCE = 1e-9  # absolute, for positions below 10**4


@pytest.fixture(scope="module")
def context(browser):
    """One desktop browser context for the module."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(INIT_SCRIPT)
    yield context
    context.close()


@pytest.fixture(scope="module")
def tab(context):
    """The module's one tab: each test loads its page anew in it (test_site.leave)."""
    tab = context.new_page()
    yield tab
    tab.close()


def _load_explore(tab, report):
    """Load the Explore page in tab and wait until every figure is live."""
    tab.goto(report.url, wait_until="networkidle")
    tab.wait_for_function(f"document.querySelectorAll('.posenc-explorer.is-live').length === {len(FIGURES)}")


@pytest.fixture
def page(tab, base_url):
    """The Explore page, loaded; fails the test on any console error or failed request."""
    with recording(tab, base_url, Report(f"{base_url}{EXPLORE}.html")) as report:
        _load_explore(tab, report)
        yield tab
    leave(tab)
    assert not report.problems, "\n".join(report.problems)


@pytest.fixture(scope="module")
def _family_loads(context, base_url):
    """load(name): the Explore page loaded once per name, in a tab of its own, with the report of
    what reached the console or failed since (closed at the end of the module). A load costs
    Chromium about 1.7 s of CPU: the tests below share one where none reads what another left."""
    with contextlib.ExitStack() as stack:
        loads = {}

        def load(name):
            if name not in loads:
                tab = context.new_page()
                stack.callback(tab.close)
                report = stack.enter_context(recording(tab, base_url, Report(f"{base_url}{EXPLORE}.html")))
                _load_explore(tab, report)
                loads[name] = tab, report
            return loads[name]

        yield load


@pytest.fixture
def family_page(_family_loads, request):
    """The Explore page loaded once for all the cases of one parametrized test, in a tab of its
    own: each case sets or presses only controls that no other case of its test reads (a figure
    of its own, a control of its own, or the offset set first and checked after). Fails the case
    on any console error or failed request since the load."""
    tab, report = _family_loads(request.function.__name__)
    yield tab
    assert not report.problems, "\n".join(report.problems)


@pytest.fixture
def values_page(_family_loads):
    """The Explore page loaded once for the value tests, which set every control of one figure
    and read the numbers it computed: such a test leaves nothing that a later one reads. Fails the
    test on any console error or failed request since the load."""
    tab, report = _family_loads("values")
    yield tab
    assert not report.problems, "\n".join(report.problems)


def figure(page, name):
    return page.locator(f'.posenc-explorer[data-figure="{name}"]')


def data(page, name, expression="api.data"):
    """Evaluate an expression of the figure's api (its element's posencExplorer property)."""
    return figure(page, name).evaluate(f"el => {{ const api = el.posencExplorer; "
                                       f"const v = {expression}; return JSON.parse(JSON.stringify("
                                       f"v, (k, x) => ArrayBuffer.isView(x) ? Array.from(x) : x)); }}")


def set_controls(page, name, **values):
    """Set controls as a script would (the keyboard test below drives them by keys). A control
    over a list of values (the base) is given the value, and set to its index in the list."""
    figure(page, name).evaluate("""(el, values) => {
        for (const [key, value] of Object.entries(values)) {
          const box = el.posencExplorer.controls[key], input = box.input;
          const index = box.spec.values ? box.spec.values.indexOf(value) : -1;
          if (box.spec.values && index < 0) throw new Error(`${key}: ${value} is not offered`);
          input.value = String(box.spec.values ? index : value);
          input.dispatchEvent(new Event("input", {bubbles: true}));
          input.dispatchEvent(new Event("change", {bubbles: true}));
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


# Per figure, each control with the key that moves it, the input's value expected after it and
# the figure's setting (the base slider moves along 1, 2, 5 times a power of 10).
KEYS = {
    "table": [("d_model", "ArrowRight", "129", "129"), ("base", "ArrowLeft", "8", 5000),
              ("seq_len", "ArrowRight", "129", "129"), ("offset", "ArrowUp", "1", 1),
              ("layout", "ArrowDown", "concatenated", "concatenated"), ("pair", "ArrowRight", "5", "5")],
    "rotation": [("i", "ArrowRight", "3", "3"), ("pos", "ArrowRight", "11", "11"), ("k", "ArrowLeft", "4", "4")],
    "dot": [("d_model", "ArrowLeft", "126", "126"), ("base", "ArrowRight", "10", 20000)],
    "rope": [("d_head", "ArrowRight", "66", "66"), ("base", "ArrowLeft", "8", 5000),
             ("m", "ArrowRight", "1", "1")],
    "focus": [("d_model", "ArrowRight", "66", "66"), ("m", "ArrowLeft", "63", "63")],
}


@pytest.mark.parametrize("name", FIGURES)
def test_keyboard_drives_every_control(family_page, name):
    """Tab from control to control; each key press changes the value, the figure and the summary."""
    page = family_page
    controls = KEYS[name]
    first = figure(page, name).locator(".pe-control :is(input, select)").first
    first.focus()
    for i, (key, press, expected, setting) in enumerate(controls):
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
        assert data(page, name, "api.state")[key] == setting
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
    dict(d_model=7, base=100, seq_len=64, offset=0, layout="interleaved"),
    dict(d_model=33, base=1000000, seq_len=100, offset=10000, layout="concatenated"),
    dict(d_model=1, base=10, seq_len=50, offset=9990, layout="interleaved"),
    dict(d_model=511, base=10000, seq_len=300, offset=9800, layout="concatenated"),
    dict(d_model=512, base=20, seq_len=512, offset=0, layout="interleaved"),
    dict(d_model=64, base=5000, seq_len=64, offset=1000000, layout="interleaved"),
])
def test_table_values_equal_posenc(values_page, setting):
    set_controls(values_page, "table", **setting)
    d = data(values_page, "table")
    assert (d["dModel"], d["seqLen"], d["offset"], d["layout"]) == (
        setting["d_model"], setting["seq_len"], setting["offset"], setting["layout"])
    assert d["base"] == setting["base"]  # the base shown is the base used
    computed = np.array(d["values"]).reshape(d["seqLen"], d["dModel"])
    positions = d["offset"] + np.arange(d["seqLen"])
    LARGEST[f"table {setting}"] = _check_close(computed, _reference_table(d), positions)


def test_cell_readout_follows_keyboard_and_pointer(page):
    """Focus the heatmap, move with the arrow keys, point with the mouse: the readout names
    the cell's pos, j, pair i, frequency, wavelength and value, equal to posenc's."""
    set_controls(page, "table", d_model=9, base=100, seq_len=40, offset=10000, layout="concatenated")
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
    assert "pos = 10,003, j = 6: cos of pair i = 1" in readout.inner_text()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.99, box["y"] + box["height"] * 0.01)
    cell = data(page, "table", "api.data.cell")
    assert (cell["pos"], cell["j"]) == (10000, 8)


@pytest.mark.parametrize("setting", [dict(i=0, pos=0, k=1), dict(i=5, pos=1000, k=-200),
                                     dict(i=63, pos=777, k=200), dict(i=2, pos=30, k=-30)])
def test_rotation_values_equal_posenc(values_page, setting):
    """The point is x = cos(pos w_i) (column 2i + 1), y = sin(pos w_i) (column 2i): the
    standard unit circle, drawn where the SVG puts it."""
    set_controls(values_page, "rotation", **setting)
    d = data(values_page, "rotation")
    i, pos, k = setting["i"], setting["pos"], setting["k"]
    assert (d["i"], d["pos"], d["k"]) == (i, pos, k) and d["columns"] == [2 * i + 1, 2 * i]
    pe = posenc.positional_encoding(pos + max(k, 0) + 1, d["dModel"], base=d["base"])
    omega = posenc.angular_frequencies(d["dModel"], base=d["base"])[2 * i]
    LARGEST[f"rotation {setting}"] = max(
        _check_close(d["at_pos"], pe[pos, [2 * i + 1, 2 * i]], [pos] * 2),
        _check_close(d["at_pos_k"], pe[pos + k, [2 * i + 1, 2 * i]], [pos + k] * 2))
    assert d["angle"] == pytest.approx(k * omega, rel=1e-14)
    # The rotation by k * omega (posenc.shift_matrix's block, acting on (sin, cos)) takes the
    # first point to the second.
    block = posenc.shift_matrix(k, d["dModel"], base=d["base"])[2 * i: 2 * i + 2, 2 * i: 2 * i + 2]
    assert np.allclose(block @ np.array(d["at_pos"][::-1]), d["at_pos_k"][::-1], atol=1e-12)
    # Drawn: the circle's centre is (0, 0) of the SVG, radius 100 units, y up.
    cx, cy = (float(v) for v in figure(values_page, "rotation").evaluate(
        "el => ['cx', 'cy'].map(a => el.querySelector('circle.pe-point').getAttribute(a))"))
    assert (cx, -cy) == pytest.approx((100 * d["at_pos"][0], 100 * d["at_pos"][1]), abs=1e-9)


def test_rotation_starts_at_one_zero_and_turns_anticlockwise(page):
    """At pos = 0 the point is (1, 0); a small step in pos turns it anticlockwise (its angle
    atan2(y, x) grows); the arc from pos to pos + k is drawn anticlockwise for k > 0."""
    set_controls(page, "rotation", i=10, pos=0, k=1)
    d = data(page, "rotation")
    assert d["at_pos"] == [1.0, 0.0]
    angles = []
    for pos in (0, 1, 2):
        set_controls(page, "rotation", pos=pos)
        x, y = data(page, "rotation", "api.data.at_pos")
        angles.append(np.arctan2(y, x))
    assert angles[0] < angles[1] < angles[2] < np.pi
    sweep = figure(page, "rotation").evaluate("el => el.querySelector('.pe-arc').getAttribute('d')").split()
    assert sweep[8] == "0"  # SVG sweep flag 0: anticlockwise on screen (y down)


@pytest.mark.parametrize("setting", [dict(d_model=2, base=100), dict(d_model=128, base=10000),
                                     dict(d_model=512, base=1000000)])
def test_dot_product_values_equal_posenc(values_page, setting):
    set_controls(values_page, "dot", **setting)
    d = data(values_page, "dot")
    n, deltas = d["n"], np.array(d["shifts"])
    pe = posenc.positional_encoding(3 * n, d["dModel"], base=d["base"])
    gram = pe[:n] @ pe[:n].T
    worst = _check_close(np.array(d["gram"]).reshape(n, n), gram, np.arange(n))
    # The curve, from the identity, equals the dot products of actual rows, for several n.
    for start in (n - 1, n, 2 * n - 1):
        worst = max(worst, _check_close(d["curve"], pe[start + deltas] @ pe[start], start + deltas))
    assert np.allclose(d["curve"], d["curve"][::-1], atol=1e-12), "not symmetric in m - n"
    LARGEST[f"dot {setting}"] = worst


@pytest.mark.parametrize("setting", [dict(d_head=2, base=100, m=0), dict(d_head=64, base=10000, m=500),
                                     dict(d_head=256, base=1000000, m=1000)])
def test_rope_values_equal_posenc(values_page, setting):
    set_controls(values_page, "rope", **setting)
    d = data(values_page, "rope")
    m, dh, shifts = d["queryPos"], d["dHead"], np.array(d["shifts"])
    x = np.array(d["content"])
    assert m == setting["m"] and np.allclose(x, np.sqrt(0.5), rtol=0, atol=0)
    pe = posenc.positional_encoding(len(shifts), dh, base=d["base"], offset=m)  # rows m + k
    added = (x + pe[0]) @ (x + pe).T
    rotated = posenc.rope(np.tile(x, (len(shifts), 1)), base=d["base"], offset=m)
    rope = rotated[0] @ rotated.T
    LARGEST[f"rope {setting}"] = max(_check_close(d["added"], added, m + shifts),
                                     _check_close(d["rope"], rope, m + shifts))
    # RoPE's score depends on the shift only: the same curve with the query at position 0.
    at_zero = posenc.rope(np.tile(x, (len(shifts), 1)), base=d["base"])
    assert np.allclose(d["rope"], at_zero[0] @ at_zero.T, atol=1e-9)


@pytest.mark.parametrize("setting", [dict(d_model=2, m=0), dict(d_model=64, m=64),
                                     dict(d_model=512, m=127), dict(d_model=128, m=10)])
def test_focus_weights_equal_posenc(values_page, setting):
    """softmax over n of PE(m)·PE(n)/sqrt(d_model), as posenc.attention.softmax gives it."""
    from posenc.attention import softmax

    set_controls(values_page, "focus", **setting)
    d = data(values_page, "focus")
    dm, m = setting["d_model"], setting["m"]
    assert (d["dModel"], d["m"]) == (dm, m)
    pe = posenc.positional_encoding(d["keys"], dm, base=d["base"])
    scores = pe[m] @ pe.T / np.sqrt(dm)
    LARGEST[f"focus {setting}"] = max(_check_close(d["scores"], scores, np.arange(d["keys"])),
                                      _check_close(d["weights"], softmax(scores), np.arange(d["keys"])))
    n = np.arange(d["keys"])
    assert d["near"] == pytest.approx(softmax(scores)[np.abs(n - m) <= 5].sum(), abs=1e-12)
    assert max(d["weights"]) <= 0.35  # the fixed axis holds every weight


def test_focus_sharpens_with_width(page):
    """The claim of the Explore page: wider encodings put more weight near the query, and the
    score gap at k = 5 is 0.47, 1.06 and 2.93 at d_model = 16, 64 and 512."""
    near = []
    for width in (2, 16, 64, 128, 512):
        set_controls(page, "focus", d_model=width, m=64)
        near.append(data(page, "focus", "api.data.near"))
    assert near == sorted(near) and near[-1] > 3 * near[0]
    for width, gap in [(16, 0.47), (64, 1.06), (512, 2.93)]:
        omega = posenc.angular_frequencies(width)[::2]
        assert round(float(np.sum(1 - np.cos(5 * omega)) / np.sqrt(width)), 2) == gap
    assert "0.47 at\n$d_\\text{model} = 16$, 1.06 at 64 and 2.93 at 512" in _prose(EXPLORE)


def test_pure_functions_equal_posenc(values_page):
    """window.posencExplorer.encodingTable over many settings, both layouts, odd widths."""
    settings = [(n, d, b, o, layout) for n, d, b, o in
                [(5, 1, 10.0, 0), (17, 2, 1e6, 9983), (30, 3, 100.0, 0), (64, 64, 1e4, 1),
                 (40, 255, 1234.5, 5000), (8, 512, 1e6, 9992)]
                for layout in ("interleaved", "concatenated")]
    tables = values_page.evaluate("""settings => settings.map(([n, d, b, o, layout]) =>
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


# --- what a reader types, reads and sees (issue 27) ---------------------------------------------

@pytest.mark.parametrize("typed, message", [
    ("12.7", "12.7 is not a whole number"), ("abc", "The field is empty"),
    ("", "The field is empty"), ("1e309", "That entry is not a number"),
    ("1000001", "1000001 is out of range"), ("--3", "That entry is not a number")])
def test_offset_field_keeps_what_was_typed_and_says_what_is_wrong(family_page, typed, message):
    """The offset is checked when committed (Enter), never rewritten: a wrong entry stays in
    the field, a message next to it says what is accepted, and the figure does not change."""
    page = family_page
    set_controls(page, "table", offset=5)
    field = figure(page, "table").locator("input[type=number]")
    before = fingerprint(page, "table"), data(page, "table", "api.state")["offset"]
    field.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.press("Backspace")
    if typed:
        page.keyboard.type(typed)
    page.keyboard.press("Enter")
    hint = figure(page, "table").locator(".pe-hint")
    text = hint.inner_text()
    assert text.startswith(message) and "enter a whole number from 0 to 1,000,000" in text, text
    assert text.endswith("The figure still shows offset 5.")
    assert field.get_attribute("aria-invalid") == "true"
    assert field.get_attribute("aria-describedby") == hint.get_attribute("id")
    assert (fingerprint(page, "table"), data(page, "table", "api.state")["offset"]) == before
    shown = field.evaluate("f => f.value")
    assert shown == (typed if typed in ("12.7", "1000001") else ""), shown  # not rewritten
    # A right entry is taken, and the message goes back to the rule.
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("127")
    page.keyboard.press("Enter")
    assert data(page, "table", "api.state")["offset"] == 127 and data(page, "table")["offset"] == 127
    assert hint.inner_text() == "A whole number from 0 to 1,000,000." and field.get_attribute("aria-invalid") is None


def test_base_shown_is_base_used(page):
    """Every base the slider offers prints exactly, and the figure uses that number."""
    bases = data(page, "table", "api.controls.base.spec.values")
    assert 10000 in bases and all(float(f"{b:.1g}") == b for b in bases)
    for base in bases:
        set_controls(page, "table", base=base)
        shown = figure(page, "table").locator(".pe-control output").nth(1).inner_text()
        assert shown == f"base = {base:,}" and data(page, "table", "api.data.base") == base


def test_rope_line_stays_put_while_m_moves(page):
    """The RoPE curve does not change with the query's position m; its drawn path does not
    move either (the score axis is fixed), while the added encoding's curve does."""
    set_controls(page, "rope", d_head=64, base=10000, m=0)
    paths = "el => Array.from(el.querySelectorAll('path.pe-line'), p => p.getAttribute('d'))"
    ticks = "el => Array.from(el.querySelectorAll('.pe-axis.pe-y .tick text'), t => t.textContent)"
    added, rope = figure(page, "rope").evaluate(paths)
    y_ticks = figure(page, "rope").evaluate(ticks)
    for m in (1, 37, 500, 1000):
        set_controls(page, "rope", m=m)
        now = figure(page, "rope").evaluate(paths)
        assert now[1] == rope and now[0] != added
        assert figure(page, "rope").evaluate(ticks) == y_ticks


def test_heatmap_cursor_and_role(page):
    """The heatmap is an application (arrow keys reach it in a screen reader's browse mode)
    with a description of how to use it; an arrow key draws the cursor on the cell read."""
    set_controls(page, "table", d_model=16, base=10000, seq_len=20, offset=0)
    canvas = figure(page, "table").locator("canvas.pe-heatmap")
    assert canvas.get_attribute("role") == "application"
    described = page.locator(f"#{canvas.get_attribute('aria-describedby')}").inner_text()
    assert "arrow keys" in described
    canvas.focus()
    cursor = figure(page, "table").locator("rect.pe-cursor")
    for key in ["ArrowRight"] * 3 + ["ArrowDown"] * 2:
        before = cursor.evaluate("r => [r.getAttribute('x'), r.getAttribute('y')].join()")
        page.keyboard.press(key)
        assert cursor.evaluate("r => [r.getAttribute('x'), r.getAttribute('y')].join()") != before
    assert cursor.get_attribute("visibility") == "visible"
    box, frame_box = cursor.bounding_box(), canvas.bounding_box()
    cell_w, cell_h = frame_box["width"] / 16, frame_box["height"] / 20
    # The cursor surrounds cell (row 2, column 3).
    centre = (box["x"] + box["width"] / 2 - frame_box["x"], box["y"] + box["height"] / 2 - frame_box["y"])
    assert centre == pytest.approx((3.5 * cell_w, 2.5 * cell_h), abs=1)
    assert data(page, "table", "api.data.cell")["j"] == 3 and data(page, "table", "api.data.cell")["pos"] == 2


@pytest.mark.parametrize("name, key, press, starts", [
    ("table", "d_model", "ArrowRight", "d_model "), ("table", "base", "ArrowLeft", "base "),
    ("rotation", "k", "ArrowRight", "shift k "), ("dot", "d_model", "ArrowLeft", "d_model "),
    ("rope", "m", "ArrowRight", "m "), ("focus", "d_model", "ArrowRight", "d_model ")])
def test_live_announcement_is_short_and_starts_with_the_change(family_page, name, key, press, starts):
    """Holding a key announces once (debounced), briefly, the changed value first."""
    page = family_page
    box = figure(page, name)
    box.evaluate("(el, k) => el.posencExplorer.controls[k].input.focus()", key)
    for _ in range(5):
        page.keyboard.press(press)
    value = box.evaluate("(el, k) => el.posencExplorer.controls[k].text().replace(/^.* = /, '')", key)
    page.wait_for_function("el => el.posencExplorer.pending === null", arg=box.element_handle())
    region = box.locator(".pe-sr-only[aria-live=polite]").inner_text()
    assert region.startswith(f"{starts}{value}: "), region
    assert len(region) <= 130, f"{len(region)} characters: {region}"
    assert box.locator(".pe-summary").get_attribute("aria-live") is None


def test_heatmap_keys_announce_the_cell_briefly(page):
    canvas = figure(page, "table").locator("canvas.pe-heatmap")
    canvas.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("el => el.posencExplorer.pending === null",
                           arg=figure(page, "table").element_handle())
    region = figure(page, "table").locator(".pe-sr-only[aria-live=polite]").inner_text()
    assert re.fullmatch(r"pos [\d,]+, j \d+: \S+ \((sin|cos) of pair \d+\)", region), region


def test_dot_at_distance_refuses_odd_widths(page):
    """For an odd d_model, PE(n + k)·PE(n) depends on n: the function refuses instead of
    returning a number no pair of vectors has; even widths match the vectors."""
    message = page.evaluate("""() => { try { window.posencExplorer.dotAtDistance(0, 7, 100); return null; }
        catch (e) { return e.name + ": " + e.message; } }""")
    assert message and message.startswith("RangeError") and "got 7" in message
    pe = posenc.positional_encoding(120, 8, base=100.0)
    values = page.evaluate("() => [0, 3, -5].map(k => window.posencExplorer.dotAtDistance(k, 8, 100))")
    for k, value in zip((0, 3, -5), values):
        assert value == pytest.approx(pe[100 + k] @ pe[100], abs=1e-12)


def test_rotation_never_shows_a_negative_position(page):
    set_controls(page, "rotation", pos=0, k=-200)
    d = data(page, "rotation")
    assert d["pos"] + d["k"] >= 0 and d["k"] == 0
    k = figure(page, "rotation").locator(".pe-control input").nth(2)
    assert k.get_attribute("min") == "0"
    set_controls(page, "rotation", pos=150, k=-200)
    assert data(page, "rotation", "api.data.k") == -150
    set_controls(page, "rotation", pos=10, k=5)


def test_d3_is_the_pinned_version(page, base_url):
    """The site carries the d3 modules of package-lock.json (no CDN)."""
    import json

    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    served = page.evaluate("u => fetch(u).then(r => r.text())", f"{base_url}_static/posenc-explorer-d3.js")
    for name in ("d3-scale", "d3-axis", "d3-selection", "d3-format", "d3-array"):
        assert f"https://d3js.org/{name}/ v{lock['node_modules/' + name]['version']} " in served, name
    assert lock["node_modules/d3-scale"]["version"] == json.loads(
        (ROOT / "package.json").read_text())["dependencies"]["d3-scale"]


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
def test_axe_finds_no_violation_in_our_content(browser, tab, base_url, docname, scheme):
    """axe-core (WCAG 2 A/AA rules and best practices) on the page in light and dark mode:
    no violation in the article (the page's own content, figures included). Violations in
    the theme's frame (navigation, header) are printed, not failed."""
    source = _axe_source()
    # The same page, scripts, styles, browser and axe as in an earlier run: its results are reused.
    key = page_digest(browser, docname, scheme, source, INIT_SCRIPT,
                      inspect.getsource(_axe_run), inspect.getsource(recording), inspect.getsource(leave))
    problems, results = reused("axe", key, lambda: _axe_run(tab, base_url, docname, scheme, source))
    ours = [f"{v['id']} ({v['impact']}): {v['help']} at {n['target']}"
            for v in results for n in v["nodes"] if n["ours"]]
    theirs = sorted({f"{v['id']} ({v['impact']})" for v in results for n in v["nodes"] if not n["ours"]})
    if theirs:
        print(f"\n{docname} ({scheme}): axe violations outside the article (theme): {theirs}")
    assert not problems, "\n".join(problems)
    assert ours == [], "accessibility violations in the page's content:\n" + "\n".join(ours)


def _axe_run(tab, base_url, docname, scheme, source):
    """Load docname in scheme, run axe-core (source) on it: (the load's problems, violations)."""
    tab.emulate_media(color_scheme=scheme)
    with recording(tab, base_url, Report(f"{base_url}{docname}.html")) as report:
        tab.goto(report.url, wait_until="networkidle")
        tab.wait_for_function("document.querySelectorAll('.posenc-explorer:not(.is-live)').length === 0")
        tab.wait_for_function("s => document.documentElement.dataset.theme === s", arg=scheme)
        tab.add_script_tag(content=source)
        results = tab.evaluate("""async () => {
            const r = await axe.run(document, {resultTypes: ["violations"]});
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
              nodes: v.nodes.map(n => ({target: n.target.join(" "),
                ours: !!document.querySelector(n.target.join(" "))?.closest("article, .posenc-explorer")}))}));
        }""")
    leave(tab)
    return [p.replace(base_url, KEPT_BASE) for p in report.problems], results


def test_figures_in_sources_are_known():
    """Every {posenc-explorer} in the book names one of the four figures."""
    names = set()
    for docname in FIGURE_PAGES:
        names |= set(re.findall(r"```\{posenc-explorer\}\s+(\S+)", _prose(docname)))
    assert names <= set(FIGURES) and names, names
