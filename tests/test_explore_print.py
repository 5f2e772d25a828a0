"""The interactive figures on paper (book/_static/posenc-explorer.js, book/_ext/posenc_explorer.py,
issue 39): each figure's still image (its default setting) is hidden on screen, not downloaded
before the page is loaded and idle, fetched then, and printed when a reader prints the page
from the browser; without JavaScript the image shows on screen instead.

The site is built, served and visited with the fixtures of tests/conftest.py (base_url,
browser); the PDFs are read back with pypdf.
"""

import inspect
import io
import re
from pathlib import PurePosixPath

import numpy as np
import pytest
from PIL import Image

from test_explore import EXPLORE, FIGURE_PAGES, FIGURES, context, figure, page, tab  # noqa: F401 (fixtures)
from reuse import reused
from test_site import HTML, STILLS_LOADED_JS, _prose, page_digest

STILL = re.compile(r"posenc-explorer-(\w+)\.png$")
# The page's load event, and the start of each request for a figure's still image (ms).
TIMING_JS = r"""() => ({
  load: performance.getEntriesByType("navigation")[0].loadEventEnd,
  stills: performance.getEntriesByType("resource").filter(e => /posenc-explorer-\w+\.png$/.test(e.name))
    .map(e => [e.name, e.startTime])})"""


def test_every_figure_is_live_with_its_static_image(page):  # noqa: F811 (the fixture)
    """Each figure is live on screen, with its how-to line; its still image (with alt text) is
    hidden there, and shows in print with the print line, where the live part and the how-to
    line are hidden."""
    for name in FIGURES:
        box = figure(page, name)
        image = box.locator("picture.posenc-explorer-static img")
        assert len(image.get_attribute("alt")) > 80
        assert not image.is_visible() and box.locator(".pe-live").is_visible()
        assert box.locator(".pe-howto").is_visible() and not box.locator(".pe-print-note").is_visible()
        assert "arrow keys" in box.locator(".pe-howto").inner_text()
        assert box.locator(".pe-summary").get_attribute("aria-live") is None
        assert box.locator(".pe-sr-only[aria-live=polite]").count() == 1
    page.emulate_media(media="print")
    for name in FIGURES:
        box = figure(page, name)
        image = box.locator("picture.posenc-explorer-static img")
        image.evaluate("img => img.decode()")
        assert image.evaluate("img => img.currentSrc.endsWith(`posenc-explorer-${img.closest('[data-figure]')"
                              ".dataset.figure}.png`) && img.naturalWidth > 100")
        assert image.is_visible() and box.locator(".pe-print-note").is_visible()
        assert not box.locator(".pe-live").is_visible() and not box.locator(".pe-howto").is_visible()
    page.emulate_media(media="screen")


def _pdf_images(pdf, sizes):
    """{(width, height): [PIL images]} of the images of a PDF (pypdf) whose size is one of
    `sizes`; the others are not decoded."""
    from pypdf import PdfReader

    found, seen = {}, set()

    def walk(resources):
        for ref in (resources or {}).get("/XObject", {}).values():
            if ref.idnum in seen:
                continue
            seen.add(ref.idnum)
            obj = ref.get_object()
            if obj["/Subtype"] == "/Form":
                walk(obj.get("/Resources"))
            elif obj["/Subtype"] == "/Image" and (size := (obj["/Width"], obj["/Height"])) in sizes:
                found.setdefault(size, []).append(obj.decode_as_image())

    for sheet in PdfReader(io.BytesIO(pdf)).pages:
        walk(sheet.get("/Resources"))
    return found


@pytest.mark.parametrize("docname", FIGURE_PAGES)
def test_a_readers_print_shows_every_still_image(browser, base_url, docname):
    """Every page with a figure, loaded on screen as a reader loads it: no still image is
    requested before the page's load event (the screen needs none; the page's own content comes
    first); once the page is idle, every figure's still image has loaded, each requested once;
    printed then (Chromium's print to PDF, as a reader's print), the PDF holds every figure's
    image, pixel for pixel the PNG of the site. (The result is reused while the page, its
    files, the browser and this check are the same: tests/reuse.py.)"""
    key = page_digest(browser, docname, inspect.getsource(_print_problems), inspect.getsource(_pdf_images))
    problems = reused("print", key, lambda: _print_problems(browser, base_url, docname))
    assert not problems, "\n".join(problems)


def _print_problems(browser, base_url, docname):
    """Load docname, wait until its still images have loaded, print it: what is wrong."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    names = set(re.findall(r"```\{posenc-explorer\}\s+(\w+)", _prose(docname)))
    reader = browser.new_context(viewport={"width": 1280, "height": 900})
    fresh = reader.new_page()
    fresh.goto(f"{base_url}{docname}.html", wait_until="load")
    problems = []
    try:
        fresh.wait_for_function(STILLS_LOADED_JS, timeout=10_000)
    except PlaywrightTimeout:
        problems.append("the still images have not loaded 10 s after the page")
    timing = fresh.evaluate(TIMING_JS)
    stills = {name: Image.open(HTML / "_images" / f"posenc-explorer-{name}.png").convert("RGB") for name in names}
    images = _pdf_images(fresh.pdf(format="A4"), {still.size for still in stills.values()})
    reader.close()
    requested = [STILL.search(PurePosixPath(url).name)[1] for url, _ in timing["stills"]]
    if sorted(requested) != sorted(names):
        problems.append(f"still images requested: {sorted(requested)}, figures: {sorted(names)}")
    problems += [f"{PurePosixPath(url).name} requested before the page had loaded"
                 for url, start in timing["stills"] if start < timing["load"]]
    for name, still in stills.items():
        printed = [np.abs(np.asarray(i.convert("RGB"), float) - np.asarray(still, float)).mean()
                   for i in images.get(still.size, [])]
        if not printed or min(printed) >= 1:
            problems.append(f"the print lacks the still image of {name}")
    return problems


def test_without_javascript_the_still_images_show_on_screen_and_in_print(browser, base_url):
    """Without JavaScript the <noscript> image shows on screen, loaded with the page, and in
    print (not the picture's, which would be requested only as the print starts)."""
    reader = browser.new_context(java_script_enabled=False)
    fresh = reader.new_page()
    fresh.goto(f"{base_url}{EXPLORE}.html", wait_until="load")
    images = fresh.locator("img.posenc-explorer-noscript")
    assert images.count() == len(FIGURES) and all(i.is_visible() for i in images.all())
    assert all(i.evaluate("img => img.complete && img.naturalWidth > 100") for i in images.all())
    assert not fresh.locator(".pe-howto").first.is_visible()
    fresh.emulate_media(media="print")
    assert all(i.is_visible() for i in images.all())
    assert not any(p.is_visible() for p in fresh.locator("picture.posenc-explorer-static").all())
    reader.close()
