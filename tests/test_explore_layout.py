"""The interactive figures' layout (book/_static/posenc-explorer.js, issue 39): on a phone and
in a small window, at the default and the widest settings, no label is drawn into another and
none leaves its figure; nothing is cut sideways; each figure's controls and picture fit on one
screen; the heatmap shows no false pattern at 1,024 positions.

Overlaps are measured on the rendered glyphs, not on text boxes (which include the line
height): each character's ink box is the one the browser's own font reports (canvas
measureText's actualBoundingBox, in the text's computed font) at the position where the SVG
laid that character out (getStartPositionOfChar), taken to the screen by the text's transform
(getScreenCTM: rotated titles included). The site is built, served and visited with the fixtures
of tests/conftest.py (base_url, browser); one page load measures every figure of a page at
both settings.
"""

import base64
import io
import re
from itertools import combinations

import numpy as np
import pytest
from PIL import Image

import posenc
from test_explore import EXPLORE, FIGURES, context, data, figure, page, set_controls, tab  # noqa: F401 (fixtures)
from test_site import ROOT

SIZES = [(375, 740), (1024, 768)]
# The settings whose labels are longest or closest: the sliders' maxima, offset 1,000,000, a
# rotation with both points (and labels) at one place.
WIDEST = {"table": dict(d_model=512, base=1000000, seq_len=1024, offset=1000000, layout="concatenated"),
          "rotation": dict(i=0, pos=0, k=0),
          "dot": dict(d_model=512, base=1000000),
          "rope": dict(d_head=256, base=1000000, m=1000),
          "focus": dict(d_model=512, m=127)}
# Settings of the rotation figure that put its two point labels close together or near the
# frame, tried at each size: pos and pos + k at one place, one step apart, half a turn apart.
ROTATIONS = [dict(i=0, pos=0, k=0), dict(i=0, pos=0, k=1), dict(i=10, pos=3, k=-3),
             dict(i=0, pos=2, k=0), dict(i=0, pos=5, k=0), dict(i=1, pos=30, k=1),
             dict(i=0, pos=1000, k=-200), dict(i=63, pos=1000, k=200), dict(i=5, pos=40, k=2)]

# Per figure of the element el: every SVG text's glyph boxes, the rotation figure's point
# markers, and each SVG's box, in screen pixels.
GLYPHS_JS = """el => {
  const ctx = document.createElement("canvas").getContext("2d"), out = [];
  el.querySelectorAll(".pe-live svg").forEach((svg, s) => {
    for (const t of svg.querySelectorAll("text")) {
      const style = getComputedStyle(t);
      if (style.visibility === "hidden" || style.display === "none" || !t.textContent.trim()) continue;
      ctx.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const m = t.getScreenCTM(), text = t.textContent, boxes = [];
      for (let i = 0; i < t.getNumberOfChars(); i++) {
        if (!text[i].trim()) continue;
        const p = t.getStartPositionOfChar(i), g = ctx.measureText(text[i]);
        const x0 = p.x - g.actualBoundingBoxLeft, x1 = p.x + g.actualBoundingBoxRight;
        const y0 = p.y - g.actualBoundingBoxAscent, y1 = p.y + g.actualBoundingBoxDescent;
        const corners = [[x0, y0], [x1, y0], [x0, y1], [x1, y1]].map(
          ([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
        const xs = corners.map(c => c[0]), ys = corners.map(c => c[1]);
        boxes.push([Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)]);
      }
      out.push({svg: s, label: text, boxes});
    }
    for (const p of svg.querySelectorAll(".pe-point")) {
      const b = p.getBoundingClientRect();
      out.push({svg: s, label: `point ${p.tagName}`, boxes: [[b.left, b.top, b.right, b.bottom]], point: true});
    }
    const r = svg.getBoundingClientRect();
    out.push({svg: s, frame: [r.left, r.top, r.right, r.bottom]});
  });
  return out;
}"""


def _hit(a, b):
    """Whether two boxes [x0, y0, x1, y1] share some area."""
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def label_problems(items):
    """(pairs of labels drawn into each other, labels outside their SVG) of GLYPHS_JS's items."""
    frames = {i["svg"]: i["frame"] for i in items if "frame" in i}
    texts = [i for i in items if "boxes" in i]
    pairs = [(a["label"], b["label"]) for a, b in combinations(texts, 2)
             if a["svg"] == b["svg"] and not (a.get("point") and b.get("point"))
             and any(_hit(p, q) for p in a["boxes"] for q in b["boxes"])]
    outside = [t["label"] for t in texts if not t.get("point") and any(
        g[0] < f[0] - 0.5 or g[1] < f[1] - 0.5 or g[2] > f[2] + 0.5 or g[3] > f[3] + 0.5
        for f in [frames[t["svg"]]] for g in t["boxes"])]
    return pairs, outside


def measure(page, names, where):
    """{case: (colliding pairs, labels outside)} of the figures `names` on the page; `where`
    names the size and setting."""
    found = {}
    for name in names:
        items = figure(page, name).first.evaluate(GLYPHS_JS)
        assert sum(1 for i in items if "boxes" in i and not i.get("point")) >= 4, (where, name)
        found[f"{where} {name}"] = label_problems(items)
    return found


@pytest.mark.parametrize("width, height", SIZES)
def test_labels_never_collide_and_each_figure_fits_one_screen(browser, base_url, width, height):
    """The Explore page (all five figures; the chapters show the same figures in the same
    column, drawn in the same SVG units) on a phone (375 x 740) and in a small window
    (1024 x 768):

    - at the default and the widest settings, and at settings that bring the rotation figure's
      point labels together: no two labels (tick labels, axis titles, point labels; the
      rotation figure's point markers too) share a pixel of ink, and every label lies inside
      its figure's SVG;
    - nothing is cut sideways (page, controls, the layout list's text), also at the widest
      settings, and each figure's controls and its pictures fit in one screen below the
      theme's header."""
    phone = width < 576
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.goto(f"{base_url}{EXPLORE}.html", wait_until="load")
    page.wait_for_function(f"document.querySelectorAll('.posenc-explorer.is-live').length === {len(FIGURES)}")
    overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    assert page.evaluate(overflow) <= 0
    select = figure(page, "table").locator("select")
    needed = select.evaluate("""s => { const c = document.createElement('canvas').getContext('2d');
        c.font = getComputedStyle(s).font;
        return Math.max(...Array.from(s.options, o => c.measureText(o.text).width)); }""")
    assert needed + 24 <= select.bounding_box()["width"], "the layout list's text is cut"
    header = page.evaluate("document.querySelector('.bd-header')?.getBoundingClientRect().height || 0")
    for name in FIGURES:
        box = figure(page, name)
        for control in box.locator(".pe-control").all():
            assert control.evaluate("c => c.scrollWidth <= c.clientWidth + 1"), control.inner_text()
        span = box.evaluate("""el => {
            const parts = [el.querySelector('.pe-controls'),
              ...el.querySelectorAll('.pe-area svg, .pe-area canvas.pe-heatmap')];
            const rects = parts.map(p => p.getBoundingClientRect());
            return Math.max(...rects.map(r => r.bottom)) - Math.min(...rects.map(r => r.top)); }""")
        assert span <= height - header, f"{name}: controls and picture span {span:.0f} px"
    found = measure(page, FIGURES, "default")
    for name in FIGURES:
        set_controls(page, name, **WIDEST[name])
    found.update(measure(page, FIGURES, "widest"))
    assert page.evaluate(overflow) <= 0, "the page scrolls sideways at the widest settings"
    for setting in ROTATIONS:
        set_controls(page, "rotation", **setting)
        found.update(measure(page, ["rotation"], str(setting)))
    context.close()
    problems = {case: f"{len(pairs)} colliding pairs {pairs}, outside: {outside}"
                for case, (pairs, outside) in found.items() if pairs or outside}
    assert not problems, "\n".join(f"{case}: {text}" for case, text in problems.items())


# --- ticks and pixels on the desktop page (the fixture page of tests/test_explore.py) ------------

def _tick_labels(page, name, selector):
    return figure(page, name).evaluate(f"""el => Array.from(el.querySelectorAll('{selector} .tick'), t =>
        [t.__data__, t.querySelector('text').textContent, t.getAttribute('transform')])""")


SI = {"k": 10**3, "M": 10**6, "G": 10**9}


def _read_tick(text):
    """The number an integer tick label prints: 1,000,200 or 1.0002M (d3's SI prefixes)."""
    text = text.replace("\u2212", "-")
    if text[-1] in SI:
        return round(float(text[:-1]) * SI[text[-1]])
    return int(text.replace(",", ""))


@pytest.mark.parametrize("offset, seq_len", [(12345, 300), (1000000, 1024), (0, 1), (7, 5)])
def test_axes_have_exact_integer_ticks(page, offset, seq_len):
    """The line plot and the heatmap label positions and columns with d3's nice integer ticks,
    each printed exactly, in full (1,000,200) or with d3's SI prefix (1.0002M), and drawn where
    its scale puts it."""
    set_controls(page, "table", d_model=128, seq_len=seq_len, offset=offset)
    for selector in (".pe-chart .pe-axis.pe-x", ".pe-heatmap-axes .pe-axis.pe-y",
                     ".pe-heatmap-axes .pe-axis.pe-x"):
        ticks = _tick_labels(page, "table", selector)
        columns = selector.endswith(".pe-heatmap-axes .pe-axis.pe-x")
        assert len(ticks) >= (1 if seq_len == 1 and not columns else 2), (selector, ticks)
        for value, text, transform in ticks:
            assert value == int(value) and _read_tick(text) == value, (selector, value, text)
            assert text == f"{int(value):,}" or re.fullmatch(r"\d+(\.\d+)?[kMG]", text), text
        values = [v for v, _, _ in ticks]
        if "pe-y" in selector or ".pe-chart" in selector:
            assert all(offset <= v <= offset + seq_len - 1 for v in values), (selector, values)
    # The y axis of the line plot: -1 to 1 in steps of d3's choosing, all printed.
    y = [t for _, t, _ in _tick_labels(page, "table", ".pe-chart .pe-axis.pe-y")]
    assert y[0] == "\u22121.0" and y[-1] == "1.0" and len(y) >= 5


def row_filter(pixels, cells):
    """What each of `pixels` pixel rows shows of `cells` rows (fewer pixels than rows): the
    Gaussian low-pass of posenc-explorer.js (rowFilter), written from its description:
    sigma = 0.8 rows per pixel row, centred on the pixel row's centre, rows within 3 sigma,
    weights summing to 1. A (pixels, cells) matrix."""
    rho = cells / pixels
    distance = np.arange(cells)[None, :] - ((np.arange(pixels) + 0.5) * rho - 0.5)[:, None]
    weights = np.exp(-distance**2 / (2 * (0.8 * rho) ** 2)) * (np.abs(distance) <= 3 * 0.8 * rho)
    return weights / weights.sum(axis=1, keepdims=True)


def test_heatmap_rows_are_low_passed_without_false_stripes(page):
    """1,024 positions in a few hundred pixel rows: each pixel shows posenc's table through
    the low-pass filter (row_filter), pixel by pixel through the colour map; the columns whose
    wavelength is shorter than two pixel rows, which a plain mean of each pixel's rows turned
    into false stripes of a longer period, fade to their mean; those longer than four pixel
    rows keep their pattern (at least 0.3 either side)."""
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from posenc_explorer import colormap_script

    set_controls(page, "table", d_model=64, base=10000, seq_len=1024, offset=0, layout="interleaved")
    size = data(page, "table", "api.data.pixels")
    width, height = size["width"], size["height"]
    assert 64 <= width and height < 1024 / 3
    png = figure(page, "table").evaluate("el => el.querySelector('canvas.pe-heatmap').toDataURL()")
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(png.split(",", 1)[1]))).convert("RGB"), dtype=float)
    assert pixels.shape == (height, width, 3)
    pe = posenc.positional_encoding(1024, 64)
    filtered = row_filter(height, 1024) @ pe
    column = np.floor(np.arange(width) * 64 / width).astype(int)  # each pixel shows one column
    hex_colours = re.search(r'rgb: "([0-9a-f]+)"', colormap_script())[1]
    lut = np.array([[int(hex_colours[k + c: k + c + 2], 16) for c in (0, 2, 4)]
                    for k in range(0, len(hex_colours), 6)], dtype=float)
    index = np.clip(np.floor((filtered[:, column] + 1) * 127.5 + 0.5), 0, 255).astype(int)
    # A value on a rounding boundary may land one colour over: compare with the neighbours too.
    close = np.min([np.abs(pixels - lut[np.clip(index + s, 0, 255)]).max(axis=-1) for s in (-1, 0, 1)], axis=0)
    assert close.max() <= 0.5, f"{(close > 0.5).sum()} pixels differ"
    # The values drawn, read back through the colour map at the middle pixel of each column.
    middle = [int(np.searchsorted(column, j) + np.searchsorted(column, j, side="right") - 1) // 2 for j in range(64)]
    drawn = np.argmin(((pixels[:, middle, None, :] - lut) ** 2).sum(axis=-1), axis=-1) / 127.5 - 1
    rows_per_pixel = 1024 / height
    wavelength = np.repeat(2 * np.pi / posenc.angular_frequencies(64)[::2], 2)
    # Long: over four pixel rows, and two whole periods or more within the 1,024 positions.
    short, long = wavelength < 2 * rows_per_pixel, (wavelength > 4 * rows_per_pixel) & (wavelength < 512)
    assert short.sum() >= 2 and long.sum() >= 2
    # Away from the ends, where the filter sees rows on one side only (within 3 sigma, 2.4 pixel rows).
    inner = slice(3, height - 3)
    assert np.abs(drawn[inner][:, short] - pe[:, short].mean(axis=0)).max() <= 0.06
    assert (drawn[:, long].max(axis=0) - drawn[:, long].min(axis=0)).min() > 0.6
