"""How fast the interactive figures redraw (book/_static/posenc-explorer.js): a measurement,
not a test.

Serves the built site (_build/html; `make book` first), opens the page "Explore the encoding"
in headless Chromium (the browser of the site tests), sets every figure to its widest setting
(WIDEST: the encoding table at seq_len = 1024, d_model = 512; d_model 512 for the dot product
and the focus figure, d_head 256 for RoPE), then drives every control of every figure from the keyboard (focus, arrow key
forward and back, REPEATS times each) and prints, per figure, the median and 95th percentile of

- redraw: the time the figure's input handler takes to recompute and draw (compute the values,
  filter them into the canvas's pixels, fit the ticks and rebuild the SVG lines and d3 axes,
  update the summary), measured inside the page with performance.now() around the redraw;
- to frame: from the key's input event to the start of the next animation frame, i.e. what the
  reader waits for before the browser paints (includes waiting for the frame clock, up to one
  frame at 60 Hz).

Usage: python tools/bench_explore.py [REPEATS]      (default 30; about a minute)
Environment: POSENC_CHROMIUM, the browser executable (default /usr/bin/chromium).
"""

import os
import statistics
import sys
from pathlib import Path

from print_pdf import served_page  # tools/ is this script's folder

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"

# Record, for every input event, the time to the next animation frame.
FRAME_JS = """() => {
  window.__toFrame = [];
  document.addEventListener("input", event => {
    const start = event.timeStamp;
    requestAnimationFrame(now => window.__toFrame.push(performance.now() - start));
  }, true);
}"""

# The keys that move each kind of control forward and back.
KEYS = {"range": ("ArrowRight", "ArrowLeft"), "number": ("ArrowUp", "ArrowDown"),
        "select-one": ("ArrowDown", "ArrowUp")}

# The widest setting of each figure (the sliders' maxima where they cost most).
WIDEST = {"table": {"seq_len": 1024, "d_model": 512}, "dot": {"d_model": 512},
          "rope": {"d_head": 256}, "focus": {"d_model": 512}}
FIGURES = ("table", "rotation", "dot", "rope", "focus")


def percentile(values, q):
    """The q-th percentile (0..100) by linear interpolation."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def bench(page, name, repeats):
    """Drive every control of figure `name`; return {control: (redraw times, to-frame times)}."""
    figure = page.locator(f'.posenc-explorer[data-figure="{name}"]')
    controls = figure.evaluate("el => Object.keys(el.posencExplorer.controls)")
    results = {}
    for control in controls:
        kind = figure.evaluate("(el, c) => el.posencExplorer.controls[c].input.type", control)
        forward, back = KEYS[kind]
        figure.evaluate("(el, c) => el.posencExplorer.controls[c].input.focus()", control)
        redraws = []
        page.evaluate("window.__toFrame.length = 0")
        for r in range(repeats):
            page.keyboard.press(forward if r % 2 == 0 else back)
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r)))")
            redraws.append(figure.evaluate("el => el.posencExplorer.lastRedrawMs"))
        results[control] = (redraws, page.evaluate("window.__toFrame.slice()"))
    return results


def main(argv):
    repeats = int(argv[1]) if len(argv) > 1 else 30
    if not (HTML / "book" / "explore.html").exists():
        raise SystemExit(f"{HTML}/book/explore.html is missing: run `make book` first")
    with served_page(HTML, "book/explore.html", {"width": 1280, "height": 900}) as page:
        page.wait_for_function(f"document.querySelectorAll('.posenc-explorer.is-live').length === {len(FIGURES)}")
        page.evaluate(FRAME_JS)
        for name, setting in WIDEST.items():
            page.locator(f'.posenc-explorer[data-figure="{name}"]').evaluate("""(el, setting) => {
                for (const [k, v] of Object.entries(setting)) {
                  const input = el.posencExplorer.controls[k].input;
                  input.value = String(v);
                  input.dispatchEvent(new Event("input", {bubbles: true}));
                }}""", setting)
        print(f"{repeats} key presses per control, headless Chromium, {os.cpu_count()} CPUs; "
              f"widest settings {WIDEST} (each press then moves one control)")
        print(f"{'figure':<9} {'control':<9} {'redraw median':>14} {'p95':>7} "
              f"{'to frame median':>16} {'p95':>7}   (ms)")
        everything = {}
        for name in FIGURES:
            for control, (redraws, frames) in bench(page, name, repeats).items():
                everything.setdefault(name, ([], []))
                everything[name][0].extend(redraws)
                everything[name][1].extend(frames)
                print(f"{name:<9} {control:<9} {statistics.median(redraws):14.2f} "
                      f"{percentile(redraws, 95):7.2f} {statistics.median(frames):16.2f} "
                      f"{percentile(frames, 95):7.2f}")
        print("all controls of a figure:")
        for name, (redraws, frames) in everything.items():
            print(f"{name:<9} {'(all)':<9} {statistics.median(redraws):14.2f} "
                  f"{percentile(redraws, 95):7.2f} {statistics.median(frames):16.2f} "
                  f"{percentile(frames, 95):7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
