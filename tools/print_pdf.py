"""Print the single-page HTML of the book to a PDF with headless Chromium (`make pdf`).

`make pdf` first builds the whole book as one HTML page (Jupyter Book's `singlehtml` builder,
in _build/singlehtml), then runs this script, which

1. serves that folder on a loopback port, the book's page at its top (print.html) (MathJax and the figures load as on the website),
2. opens the page in Debian's Chromium, driven by Playwright (the browser the site tests use),
3. waits until MathJax has typeset every formula,
4. opens every drop-down (exercise solutions, hidden cells) with sphinx-togglebutton's own
   "beforeprint" handler and by opening each <details>,
5. adds tools/print.css (no navigation, code that wraps instead of being clipped, each chapter
   on a new page, the static image of each interactive figure in its place) and prints A4
   pages with page numbers to _build/pdf/positional-encoding-course.pdf.

Usage: python tools/print_pdf.py [SINGLEHTML_DIR] [PDF]
Environment: POSENC_CHROMIUM, the browser executable (default /usr/bin/chromium).
"""

import contextlib
import functools
import http.server
import os
import sys
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SINGLEHTML = ROOT / "_build" / "singlehtml"
PDF = ROOT / "_build" / "pdf" / "positional-encoding-course.pdf"
CHROMIUM = os.environ.get("POSENC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update"]

# Resolves once MathJax has typeset the page (and at once on a page without MathJax).
TYPESET_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetPromise) await MathJax.typesetPromise();
  }
  return {
    math: document.querySelectorAll(".math").length,
    typeset: document.querySelectorAll(".math mjx-container").length,
    errors: document.querySelectorAll("mjx-merror").length,
  };
}"""

# Opens what a reader opens by clicking: togglebutton's admonitions and every <details>.
OPEN_JS = """() => {
  window.dispatchEvent(new Event("beforeprint"));
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  return document.querySelectorAll(".admonition.toggle-hidden").length;
}"""

# The interactive figures ({posenc-explorer}): each static image loaded and laid out for print.
# The still images of the interactive figures: a <picture> whose source for the screen is an
# empty inline image, so the PNG is fetched only once the page is in print mode.
STATIC_FIGURES_JS = """async () => {
  const images = Array.from(document.querySelectorAll(".posenc-explorer picture.posenc-explorer-static img"));
  await Promise.all(images.map(img => img.decode().catch(() => null)));
  return {count: images.length, missing: images.filter(img => !(img.complete && img.naturalWidth > 1
    && !img.currentSrc.startsWith("data:") && img.getBoundingClientRect().width > 0))
    .map(img => img.getAttribute("src"))};
}"""

FOOTER = ('<div style="font-size:8px; width:100%; text-align:center; color:#555;">'
          '<span class="title"></span> · <span class="pageNumber"></span> / '
          '<span class="totalPages"></span></div>')


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def served_page(directory, path, viewport, timeout=30_000, media=None):
    """Serve `directory` on a free port of 127.0.0.1 and open `path` (relative to it) in headless
    Chromium with the given viewport {"width": ..., "height": ...}, under CSS media `media`
    ("print" lays the page out as it prints) when given; yield the Playwright page.
    tools/bench_explore.py and tools/print_handouts.py use it too."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=directory)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=viewport)
                if media:
                    page.emulate_media(media=media)
                page.goto(f"http://127.0.0.1:{server.server_address[1]}/{path}",
                          wait_until="networkidle", timeout=timeout)
                yield page
                browser.close()
        finally:
            server.shutdown()


def root_page():
    """The single page's path inside the singlehtml folder: the root document of _toc.yml."""
    return yaml.safe_load((ROOT / "_toc.yml").read_text())["root"] + ".html"


def print_pdf(singlehtml=SINGLEHTML, pdf=PDF):
    """Print the single-page book to pdf; return (pages' formulas, typeset formulas)."""
    singlehtml, pdf = Path(singlehtml), Path(pdf)
    page_file = singlehtml / root_page()
    if not page_file.is_file():
        raise SystemExit(f"{page_file} is missing: build it first (make pdf does)")
    pdf.parent.mkdir(parents=True, exist_ok=True)
    # The singlehtml builder writes the root document (book/intro.html) with links relative to
    # the folder's top (_static/..., _images/...): served from there, they resolve.
    top_page = singlehtml / "print.html"
    top_page.write_bytes(page_file.read_bytes())
    with served_page(singlehtml, top_page.name, {"width": 1000, "height": 1400},
                     timeout=120_000) as page:
        # MathJax loads deferred: wait until it has started, then until it has typeset.
        page.wait_for_function("() => window.MathJax && MathJax.startup"
                               " && MathJax.startup.promise", timeout=60_000)
        maths = page.evaluate(TYPESET_JS)
        if maths["typeset"] < maths["math"] or maths["errors"]:
            raise SystemExit(f"MathJax did not typeset every formula: {maths}")
        closed = page.evaluate(OPEN_JS)
        if closed:
            raise SystemExit(f"{closed} drop-downs could not be opened")
        page.add_style_tag(path=str(Path(__file__).with_name("print.css")))
        page.emulate_media(media="print")
        # In print mode the pictures switch to their PNG: wait until each has loaded.
        page.wait_for_function("""() => Array.from(document.querySelectorAll(
            ".posenc-explorer picture.posenc-explorer-static img")).every(img =>
            !img.currentSrc.startsWith("data:") && img.complete)""", timeout=60_000)
        figures = page.evaluate(STATIC_FIGURES_JS)
        if figures["missing"]:
            raise SystemExit(f"static images of interactive figures not shown: {figures}")
        page.pdf(path=str(pdf), format="A4", print_background=True,
                 display_header_footer=True, header_template="<div></div>",
                 footer_template=FOOTER, prefer_css_page_size=True,
                 outline=True, tagged=True)  # tagged: Chromium builds the bookmarks from it
    return maths


def main(argv):
    singlehtml = Path(argv[1]) if len(argv) > 1 else SINGLEHTML
    pdf = Path(argv[2]) if len(argv) > 2 else PDF
    start = time.perf_counter()
    maths = print_pdf(singlehtml, pdf)
    print(f"{pdf} written ({pdf.stat().st_size / 1e6:.1f} MB, {maths['typeset']} formulas) "
          f"in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
