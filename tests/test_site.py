"""The built website, read the way a reader reads it: in a real browser (headless Chromium).

The fixtures `base_url` and `browser` (in conftest.py, shared with tests/test_explore.py: one
Playwright per process) build the book (`make book`) when its HTML is missing or older than its
sources, serve it on a loopback port with Python's http.server, and drive Chromium (wherever it
is: tests/browsers.py) with Playwright; this module holds their helpers. Each page
of _toc.yml is loaded once per viewport and what the browser saw is kept in a report that the
tests below read, so a failure names the page and the check. A page that is byte for byte the
same as in an earlier run, with the same scripts, styles and images, is not loaded again: its
report is reused (tests/reuse.py); a fresh clone loads every page.

Environment variables:
  POSENC_REQUIRE_BROWSER=1  turn "Chromium or Playwright is missing" skips into failures
                            (.ci/run sets it, so CI always runs these tests)
  POSENC_CHROMIUM           the browser executable (default: the first of tests/browsers.py's
                            places that has one)
  POSENC_BOOK_OUTPUT        the folder that holds _build/ (default: the repository root), i.e.
                            jupyter-book's --path-output; screenshots go to its _build/screenshots
"""

import contextlib
import functools
import http.server
import inspect
import json
import os
import posixpath
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
import yaml
from sphinx_external_toc.parsing import parse_toc_yaml

from browsers import DEFAULT, enable_command, find_chromium
from reuse import digest, keep, kept

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("POSENC_BOOK_OUTPUT", ROOT)) / "_build"
HTML = BUILD / "html"
SCREENSHOTS = BUILD / "screenshots"
CHROMIUM, CHROMIUM_FOUND_BY = find_chromium()
CHROMIUM = CHROMIUM or DEFAULT
if CHROMIUM_FOUND_BY:  # for the commands the tests run: `make pdf` (tools/print_pdf.py)
    os.environ["POSENC_CHROMIUM"] = str(CHROMIUM)
REQUIRE_BROWSER = os.environ.get("POSENC_REQUIRE_BROWSER") == "1"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update"]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def _reading_order(site_map, docname):
    """Yield the documents of the table of contents in reading order (depth first)."""
    yield docname
    for child in site_map[docname].child_files():
        yield from _reading_order(site_map, child)


SITE_MAP = parse_toc_yaml(str(ROOT / "_toc.yml"))
PAGES = list(_reading_order(SITE_MAP, SITE_MAP.root.docname))
SCREENSHOT_PAGE = PAGES[1]  # the first chapter after the introduction
# Raw TeX delimiters that must not survive in the visible text once MathJax has run.
RAW_TEX = ("$$", "\\(", "\\)", "\\[", "\\]", "\\begin{")


def _source(docname):
    """The source file of a page: book/<name>.ipynb or book/<name>.md."""
    return next(p for p in (ROOT / f"{docname}{s}" for s in (".ipynb", ".md")) if p.exists())


def _prose(docname):
    """The text a page is written in: a markdown file, or a notebook's markdown cells."""
    source = _source(docname)
    if source.suffix == ".md":
        return source.read_text()
    cells = nbformat.read(source, as_version=4).cells
    return "\n".join(c.source for c in cells if c.cell_type == "markdown")


# --- building and serving ---------------------------------------------------------------------

def _html_is_stale():
    """True when the HTML is missing or older than a source of the book."""
    pages = list(HTML.glob("**/*.html"))
    if not pages:
        return True
    built = max(p.stat().st_mtime for p in pages)
    sources = [ROOT / "_config.yml", ROOT / "_toc.yml", *ROOT.glob("book/**/*"),
               *ROOT.glob("assignments/**/*")]
    return any(p.stat().st_mtime > built for p in sources if p.is_file())


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serve files without logging every request to stderr."""

    def log_message(self, *args):
        pass


def _build_elsewhere():
    """Build the book into POSENC_BOOK_OUTPUT's _build when it is missing or stale."""
    if not _html_is_stale():
        return None
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    built = subprocess.run(
        [jupyter_book, "build", ROOT, "-W", "-n", "--keep-going", "--path-output", BUILD.parent],
        capture_output=True, text=True)
    if built.returncode:
        return built
    # The site carries the lecture decks (book/teaching.md links them), as `make book` copies them.
    return subprocess.run(
        [sys.executable, ROOT / "slides" / "build.py", "--quiet", "--work", BUILD / ".slides",
         HTML / "slides"], capture_output=True, text=True)


def _browser_missing():
    """Why the browser tests cannot run here, or None if they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (pip install -r requirements.txt)"
    if CHROMIUM_FOUND_BY is None:
        return f"no Chromium or Chrome found (run `{enable_command()}`, or set POSENC_CHROMIUM)"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} ({CHROMIUM_FOUND_BY})"
    return None


# --- visiting pages -----------------------------------------------------------------------------

# One evaluation collects everything the tests look at, after MathJax has finished.
COLLECT_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const text = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {acceptNode: n =>
    n.parentElement.closest("pre, code, script, style, mjx-container")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  while (walker.nextNode()) text.push(walker.currentNode.data);
  const group = name => Object.fromEntries(Array.from(
    document.querySelectorAll(`.dropdown-${name}-buttons a`), a => [a.textContent.trim(), a.href]));
  const maths = Array.from(document.querySelectorAll(".math"));
  return {
    text: text.join(" "),
    math: maths.length,
    math_typeset: maths.filter(m => m.querySelector("mjx-container")).length,
    math_errors: document.querySelectorAll("mjx-merror").length,
    images: Array.from(document.images, img => ({
      src: img.getAttribute("src"), alt: (img.getAttribute("alt") || "").trim(),
      loaded: img.complete && img.naturalWidth > 0,
      caption: (img.closest("figure")?.querySelector("figcaption")?.textContent || "").trim(),
      output: img.closest(".cell_output") !== null})),
    links: Array.from(document.querySelectorAll("a[href]"), a => a.href),
    prev: document.querySelector(".prev-next-area a.left-prev")?.href || null,
    next: document.querySelector(".prev-next-area a.right-next")?.href || null,
    launch: group("launch"), source: group("source"), download: group("download"),
    code_blocks: document.querySelectorAll("div.highlight pre").length,
    chapter: document.querySelector("h1 .section-number")?.textContent.trim() || null,
    captions: Array.from(document.querySelectorAll(
      "div.exercise > p.admonition-title, div.solution > p.admonition-title"), e => e.textContent.trim()),
    downloads: Array.from(document.querySelectorAll("a.download[href]"), a => a.href),
    copy_buttons: document.querySelectorAll("div.highlight button.copybtn").length,
    overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    too_wide: document.documentElement.scrollWidth <= document.documentElement.clientWidth ? [] :
      Array.from(document.querySelectorAll("body *"))
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .slice(0, 5).map(e => e.tagName.toLowerCase() + "." + [...e.classList].join(".")),
  };
}"""


@dataclass
class Report:
    """What the browser saw on one page: the load's problems and the collected DOM facts."""

    url: str
    status: int = 0
    errors: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    external: list = field(default_factory=list)
    dom: dict = field(default_factory=dict, repr=False)

    @property
    def problems(self):
        """The load's problems, one line each."""
        return [*self.errors, *(f"failed request: {r}" for r in self.failed),
                *(f"request to another host (the site must work offline): {r}"
                  for r in self.external)]


@contextlib.contextmanager
def recording(tab, base, report):
    """Record in report, while the block runs, the tab's JavaScript errors and its failed or
    off-machine requests."""
    handlers = {
        "console": lambda m: m.type == "error" and report.errors.append(f"console: {m.text}"),
        "pageerror": lambda e: report.errors.append(f"uncaught: {e}"),
        "requestfailed": lambda r: report.failed.append(f"{r.url} ({r.failure})"),
        "response": lambda r: r.status >= 400 and report.failed.append(f"{r.url} ({r.status})"),
        "request": lambda r: (r.url.startswith("http") and not r.url.startswith(base)
                              and report.external.append(r.url)),
    }
    for event, handler in handlers.items():
        tab.on(event, handler)
    try:
        yield report
    finally:
        for event, handler in handlers.items():
            tab.remove_listener(event, handler)


def leave(tab):
    """Unload the tab's page (an empty page, unrecorded: requests that its page still had are
    cancelled there) and undo what a test may have set on the tab: the pointer's place and
    media emulation. The tab is then as good as new for the next page.

    The browser tests reuse one tab from page to page: a new tab costs Chromium about a second
    of CPU, as much as loading the page itself (0.8 s instead of 1.7 s for book/explore), and
    the tests load about 120 pages. Every page still starts from scratch: a new document, with
    the reader's storage emptied by the context's init script (INIT_SCRIPT)."""
    tab.mouse.move(0, 0)
    tab.emulate_media(media="null", color_scheme="null")
    tab.goto("about:blank")


# True once every interactive figure's still image (for print) has loaded its PNG: the figures
# fetch them when the page is idle (book/_static/posenc-explorer.js), which on a busy machine can
# come after the network has been idle for half a second.
STILLS_LOADED_JS = """() => Array.from(document.querySelectorAll('.posenc-explorer picture img')).every(
  img => img.complete && img.naturalWidth > 1 && !img.currentSrc.startsWith('data:'))"""


def visit(tab, base, url, screenshot=None):
    """Load url in tab until the network is idle and the figures' still images have loaded (at
    most 15 s more), and return its Report (then leave the page)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with recording(tab, base, Report(url)) as report:
        response = tab.goto(url, wait_until="networkidle")
        try:
            tab.wait_for_function(STILLS_LOADED_JS, timeout=15_000)
        except PlaywrightTimeout:
            pass  # the images not loaded are reported (test_images_load)
        report.status = response.status if response else 0
        report.dom = tab.evaluate(COLLECT_JS)
        if screenshot:
            tab.screenshot(path=screenshot)
    leave(tab)
    return report


# Files of the built site that no page loads: the pages themselves, the search index (only the
# search page loads it), the sources and the downloads a page merely links.
NOT_LOADED = (".html", ".ipynb", ".pdf", ".zip", ".buildinfo", ".inv", "searchindex.js")


@functools.cache
def site_files():
    """The digest of every file of the built site that a page can load (scripts, styles, fonts,
    images), by path and content."""
    return digest(*(f"{p.relative_to(HTML).as_posix()}\n".encode() + p.read_bytes()
                    for p in sorted(HTML.rglob("*"))
                    if p.is_file() and not p.name.endswith(NOT_LOADED)
                    and p.relative_to(HTML).parts[0] not in ("_sources", "_downloads")))


def page_digest(browser, docname, *settings):
    """The digest of what loading docname's page depends on: its HTML, the files it can load,
    the browser, and the settings and scripts of the visit."""
    from importlib.metadata import version

    return digest(site_files(), (HTML / f"{docname}.html").read_bytes(), browser.version,
                  version("playwright"), *settings)


# Run before a page's own scripts in every tab of the site's contexts: every page is a reader's
# first visit (no colour mode, sidebar state or other stored choice), also in a reused tab.
# The empty page between two pages (leave()) has no storage to clear.
INIT_SCRIPT = """if (location.protocol.startsWith("http")) {
  window.localStorage.clear();
  window.sessionStorage.clear();
}"""

# A report kept for reuse names the local server by this address: its port changes every run.
KEPT_BASE = "http://kept.invalid/"


class _Visits:
    """Each page is loaded once per viewport; the reports are shared by all tests. A page whose
    HTML and loadable files are the same as in an earlier run is not loaded again: its report is
    reused (tests/reuse.py)."""

    def __init__(self, browser, base, viewport, mobile=False):
        self.browser, self.base, self.viewport, self.mobile = browser, base, viewport, mobile
        self.context = browser.new_context(viewport=viewport, is_mobile=mobile, has_touch=mobile)
        # Every page is a reader's first visit: no colour mode or sidebar state stored yet.
        self.context.add_init_script(INIT_SCRIPT)
        self.tab = self.context.new_page()  # one tab for every page (leave())
        self.reports = {}

    def __call__(self, docname):
        if docname not in self.reports:
            key = page_digest(self.browser, docname, self.viewport, self.mobile, INIT_SCRIPT,
                              COLLECT_JS, inspect.getsource(visit), inspect.getsource(recording))
            saved = kept("pages", key)
            if saved is None:
                report = visit(self.tab, self.base, self.url(docname))
                saved = keep("pages", key, json.loads(json.dumps(asdict(report)).replace(self.base, KEPT_BASE)))
            self.reports[docname] = Report(**json.loads(json.dumps(saved).replace(KEPT_BASE, self.base)))
        return self.reports[docname]

    def url(self, docname):
        """The address of a page on the local server."""
        return f"{self.base}{docname}.html"


@pytest.fixture(scope="session")
def desktop(browser, base_url, link_checker, request):
    """Reports of the pages at desktop width (1280 px)."""
    visits = _Visits(browser, base_url, DESKTOP)
    request.config.pluginmanager.register(_Summary(visits, link_checker), "posenc-site-summary")
    yield visits
    visits.context.close()


@pytest.fixture(scope="session")
def phone(browser, base_url):
    """Reports of the pages at phone width (390 px), with mobile emulation."""
    visits = _Visits(browser, base_url, PHONE, mobile=True)
    yield visits
    visits.context.close()


class _LinkChecker:
    """Fetch each internal URL once over HTTP; remember status and the ids of HTML targets."""

    def __init__(self):
        self.fetched = {}  # address -> (status, ids in the page)
        self.links = set()

    def problem(self, url, request_context):
        """None if url resolves (status 200 and, for a #fragment, an element with that id)."""
        self.links.add(url)
        address, _, fragment = url.partition("#")
        if address not in self.fetched:
            response = request_context.get(address, fail_on_status_code=False)
            body = response.text() if response.ok and address.endswith(".html") else ""
            ids = set(re.findall(r'(?<![\w-])id="([^"]+)"', body))
            self.fetched[address] = (response.status, ids)
        status, ids = self.fetched[address]
        if status != 200:
            return f"{url}: HTTP {status}"
        if fragment and address.endswith(".html") and unquote(fragment) not in ids:
            return f"{url}: no element with id {unquote(fragment)!r}"
        return None


@pytest.fixture(scope="session")
def link_checker():
    """The session's shared link cache."""
    return _LinkChecker()


class _Summary:
    """pytest plugin: print the counts checked at the end of the run."""

    def __init__(self, visits, links):
        self.visits, self.links = visits, links

    def pytest_terminal_summary(self, terminalreporter):
        reports = self.visits.reports.values()
        terminalreporter.write_sep("-", "site checked in Chromium")
        terminalreporter.write_line(
            f"{len(reports)} pages, {sum(len(r.dom['images']) for r in reports)} images, "
            f"{sum(r.dom['math_typeset'] for r in reports)} typeset math elements, "
            f"{sum(len(r.dom['links']) for r in reports)} links, of which "
            f"{len(self.links.links)} distinct internal links to {len(self.links.fetched)} files")


# --- the tests ----------------------------------------------------------------------------------

@pytest.mark.parametrize("docname", PAGES)
def test_page_loads_cleanly(desktop, docname):
    """Status 200, nothing in the console at error level, no failed or off-machine request."""
    report = desktop(docname)
    assert report.status == 200
    assert not report.problems, "\n".join(report.problems)


@pytest.mark.parametrize("docname", PAGES)
def test_math_is_typeset(desktop, docname):
    """Every formula is rendered by MathJax, without TeX errors or raw delimiters left over."""
    dom = desktop(docname).dom
    if any(mark in _prose(docname) for mark in ("$", "{math}", "\\begin{")):
        assert dom["math"] > 0, f"{docname} has formulas in its source but none on the page"
    untypeset = dom["math"] - dom["math_typeset"]
    assert untypeset == 0, f"{untypeset} formulas not typeset by MathJax"
    assert dom["math_errors"] == 0, "MathJax reported TeX errors"
    leftovers = [d for d in RAW_TEX if d in dom["text"]]
    assert leftovers == [], f"raw TeX delimiters in the visible text of {docname}"


@pytest.mark.parametrize("docname", PAGES)
def test_images_load(desktop, docname):
    """Every <img> of the page has been loaded and decoded (naturalWidth > 0)."""
    broken = [img["src"] for img in desktop(docname).dom["images"] if not img["loaded"]]
    assert not broken, "images not loaded:\n" + "\n".join(broken)


def _is_described(img):
    """An image is described by a caption, or by alt text that is more than its own file name."""
    file_name = posixpath.basename(img["src"] or "")
    return bool(img["caption"]) or bool(img["alt"]) and posixpath.basename(img["alt"]) != file_name


@pytest.mark.parametrize("docname", PAGES)
def test_figures_have_alt_text_or_caption(desktop, docname):
    """Every <img> (theme icons, markdown images, notebook figures) has alt text or a caption.

    myst-nb gives a notebook's output image its own file path as alt text, which describes
    nothing; a notebook figure gets real alt text or a caption from its cell's metadata,
    {"mystnb": {"image": {"alt": "..."}}} or {"mystnb": {"figure": {"caption": "..."}}}.
    """
    undescribed = [img["src"] for img in desktop(docname).dom["images"] if not _is_described(img)]
    assert undescribed == [], (
        "images without alt text or caption (for a notebook figure, add "
        '{"mystnb": {"image": {"alt": "..."}}} to its cell metadata):\n' + "\n".join(undescribed))


@pytest.mark.parametrize("docname", PAGES)
def test_internal_links_resolve(desktop, link_checker, docname):
    """Every link to the site itself answers 200, and its #fragment names an element there."""
    report = desktop(docname)
    internal = sorted({url for url in report.dom["links"] if url.startswith(desktop.base)})
    problems = [p for url in internal if (p := link_checker.problem(url, desktop.context.request))]
    assert internal, f"no internal links found on {docname}"
    assert not problems, "broken internal links:\n" + "\n".join(problems)


@pytest.mark.parametrize("docname", PAGES)
def test_previous_next_follow_the_table_of_contents(desktop, docname):
    """The previous/next buttons lead to the neighbours in _toc.yml (and resolve, see above)."""
    dom = desktop(docname).dom
    i = PAGES.index(docname)
    expected_prev = desktop.url(PAGES[i - 1]) if i > 0 else None
    expected_next = desktop.url(PAGES[i + 1]) if i + 1 < len(PAGES) else None
    assert (dom["prev"], dom["next"]) == (expected_prev, expected_next)


def _repository_path(docname, suffix):
    """The path of a page's source inside the repository, as _config.yml describes it."""
    return posixpath.join(CONFIG["repository"].get("path_to_book", "").strip("/"), docname + suffix)


@pytest.mark.parametrize("docname", PAGES)
def test_repository_download_and_launch_buttons(desktop, docname):
    """Header buttons: repository, issues, download of this page's source, and on notebook pages
    Binder and Colab opening this notebook on the configured branch; all from _config.yml."""
    dom = desktop(docname).dom
    repo = CONFIG["repository"]["url"].rstrip("/")
    branch = CONFIG["repository"]["branch"]
    source = _source(docname)
    path = _repository_path(docname, source.suffix)
    assert (ROOT / path).exists(), f"{path} is not where _config.yml says the notebook is"

    assert dom["source"]["Repository"] == repo
    assert dom["source"]["Open issue"].startswith(f"{repo}/issues/new?")

    download = dom["download"][source.suffix]
    assert download == f"{desktop.base}_sources/{docname}{source.suffix}"
    same = desktop.context.request.get(download).body() == source.read_bytes()
    assert same, f"the download differs from {source.relative_to(ROOT)} (a stale build?)"

    launch = CONFIG["launch_buttons"]
    if source.suffix == ".ipynb":
        owner_repo = urlsplit(repo).path.strip("/")
        ui = {"classic": "tree", "jupyterlab": "lab/tree"}[launch["notebook_interface"]]
        assert dom["launch"] == {
            "Binder": f"{launch['binderhub_url']}/v2/gh/{owner_repo}/{branch}?urlpath={ui}/{path}",
            "Colab": f"{launch['colab_url']}/github/{owner_repo}/blob/{branch}/{path}",
        }
    else:
        assert dom["launch"] == {}, "launch buttons on a page that is not a notebook"


@pytest.mark.parametrize("docname", PAGES)
def test_code_blocks_have_copy_buttons(desktop, docname):
    """sphinx-copybutton has put a copy button on every code block (cells and outputs)."""
    dom = desktop(docname).dom
    assert dom["copy_buttons"] == dom["code_blocks"]


def test_search_finds_wavelength(desktop):
    """Search button, "wavelength", Enter: the search page lists pages of the book."""
    page = desktop.tab
    with recording(page, desktop.base, Report(desktop.url(PAGES[0]))) as report:
        page.goto(report.url)
        page.get_by_role("button", name="Search").filter(visible=True).first.click()
        search_box = page.locator("input[name=q]").filter(visible=True)
        search_box.fill("wavelength")
        search_box.press("Enter")
        page.locator("#search-results .search-summary").filter(has_text="Search finished").wait_for()
        results = page.locator("#search-results ul.search li a").evaluate_all(
            "links => links.map(a => a.href)")
    leave(page)
    assert not report.problems, "\n".join(report.problems)
    found = {urlsplit(url).path.removeprefix("/").removesuffix(".html") for url in results}
    assert found & set(PAGES), f"no page of the book among the results {results}"


@pytest.mark.parametrize("docname", PAGES)
def test_no_horizontal_overflow_on_a_phone(phone, docname):
    """At 390 px the page does not scroll sideways (wide code and tables scroll in their box)."""
    dom = phone(docname).dom
    assert dom["overflow"] <= 0, f"{dom['overflow']} px too wide, e.g. {dom['too_wide']}"


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_chapter_screenshot(request, viewport):
    """A screenshot of a chapter at desktop and phone width, saved under _build/screenshots/."""
    visits = request.getfixturevalue(viewport)
    width = visits.viewport["width"]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{posixpath.basename(SCREENSHOT_PAGE)}-{width}px.png"
    path.unlink(missing_ok=True)
    report = visit(visits.tab, visits.base, visits.url(SCREENSHOT_PAGE), screenshot=path)
    assert report.status == 200
    png = path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == width


# --- exercises and assignments ------------------------------------------------------------------

CHAPTERS = [p for p in PAGES if (ROOT / f"{p}.ipynb").exists()]
ASSIGNMENTS = [p for p in PAGES if p.startswith("book/assignments/")
               and (ROOT / "assignments" / posixpath.basename(p)).is_dir()]


@pytest.mark.parametrize("docname", CHAPTERS)
def test_exercises_are_numbered_per_chapter(desktop, docname):
    """Exercise and solution captions read "Exercise <chapter>.<n>", n = 1, 2, ... in order."""
    dom = desktop(docname).dom
    captions = dom["captions"]
    if not captions:
        return
    assert dom["chapter"], f"{docname} has exercises but no chapter number in its title"
    chapter = dom["chapter"].rstrip(".")
    numbers = [re.match(rf"(?:Solution to )?Exercise {re.escape(chapter)}\.(\d+)\b", c) for c in captions]
    unnumbered = [c for c, n in zip(captions, numbers) if not n]
    assert not unnumbered, f"captions not numbered {chapter}.<n>: {unnumbered}"
    exercises = [int(n[1]) for c, n in zip(captions, numbers) if not c.startswith("Solution")]
    assert exercises == list(range(1, len(exercises) + 1)), f"exercise numbers {exercises}"


def test_the_book_has_numbered_exercises(desktop):
    """The check above has something to check."""
    assert any(desktop(p).dom["captions"] for p in CHAPTERS)


def _solution_lines(master):
    """Lines that only the solutions of an Otter master contain: its markdown solution cells,
    and in its solution code cells the lines between `# BEGIN SOLUTION` and `# END SOLUTION`
    (the student version keeps the rest of such a cell: signature, docstring, prompts)."""
    in_block, solution, other = False, set(), set()
    for cell in master.cells:
        if cell.cell_type == "raw":
            in_block = {"# BEGIN SOLUTION": True, "# END SOLUTION": False}.get(cell.source.strip(), in_block)
            continue
        hidden = in_block and cell.cell_type == "markdown"
        for line in cell.source.splitlines():
            if line.strip().startswith("# END SOLUTION"):
                hidden = False
            if len(line.strip()) > 12 and "SOLUTION" not in line:
                (solution if hidden or line.rstrip().endswith("# SOLUTION") else other).add(line.strip())
            if in_block and line.strip().startswith("# BEGIN SOLUTION"):
                hidden = True
    return solution - other


def test_every_assignment_has_a_page():
    """Each master in assignments/ has its page in the Assignments part."""
    masters = {p.parent.name for p in ROOT.glob("assignments/*/*.ipynb") if p.stem == p.parent.name}
    assert masters and masters == {posixpath.basename(p) for p in ASSIGNMENTS}


@pytest.mark.parametrize("docname", ASSIGNMENTS)
def test_assignment_download_is_the_student_notebook(desktop, docname):
    """The page's download link gives <name>.ipynb: the student notebook, without solutions."""
    name = posixpath.basename(docname)
    links = [url for url in desktop(docname).dom["downloads"] if url.endswith(".ipynb")]
    assert len(links) == 1, f"expected one notebook download on {docname}, found {links}"
    assert posixpath.basename(urlsplit(links[0]).path) == f"{name}.ipynb", "the download must keep its name"
    response = desktop.context.request.get(links[0])
    assert response.status == 200, links[0]
    student = nbformat.reads(response.text(), as_version=4)
    nbformat.validate(student)
    assert student.metadata["otter"]["assignment_name"] == name
    text = response.text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "hidden=True", "# HIDDEN"):
        assert marker not in text, f"{marker!r} in the downloaded notebook"
    master = nbformat.read(ROOT / "assignments" / name / f"{name}.ipynb", as_version=4)
    secrets = _solution_lines(master)
    assert secrets, "no solution lines found in the master"
    sources = "\n".join(cell.source for cell in student.cells)
    leaked = sorted(line for line in secrets if line in sources)
    assert not leaked, "solution lines in the downloaded notebook:\n" + "\n".join(leaked)
