"""The lecture decks (`make slides`, slides/README.md), opened the way a lecturer opens them:
from the file system, offline, in headless Chromium (tests/browsers.py).

`make slides` builds what is out of date (the fixture `make` of conftest.py). Each deck is loaded
once, in one tab, and walked from its first slide to its last in one script (no transitions):
every slide must be the current one when shown, have a heading and content, its images loaded,
its formulas typeset (no raw TeX, no MathJax error), and speaker notes naming its slot; a poll's
answer is hidden until the next key press. A live figure is then driven from the keyboard. The
tests below read what was recorded; the decks' sources are checked against book/teaching.md.
"""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SLIDES = ROOT / "_build" / "slides"
sys.path.insert(0, str(ROOT / "slides"))
import plan  # noqa: E402  (slides/plan.py: the parser of teaching.md's plan and of the polls)

LECTURES = plan.lectures()
DECKS = [f"lecture-{lecture.number}" for lecture in LECTURES]
NOTE = re.compile(r"Slot (\d+) of (\d+) \((\d+) min")
LONGEST = 90  # minutes of a lecture
SLIDE_HEIGHT = 800  # pixels: revealjs_script_conf's height in slides/conf.py
#: Requests a deck may make: its own files, and what its scripts build in memory.
LOCAL = ("file://", "data:", "blob:", "about:")

WALK = """async () => {
  Reveal.configure({transition: "none", backgroundTransition: "none"});
  await MathJax.startup.promise;
  const seen = [];
  for (const slide of Reveal.getSlides()) {
    const at = Reveal.getIndices(slide);
    Reveal.slide(at.h, at.v, -1);
    const box = slide.getBoundingClientRect();
    const answer = slide.querySelector(".poll-answer");
    const record = {
      h: at.h, v: at.v, current: Reveal.getCurrentSlide() === slide,
      width: box.width, height: box.height, scroll: slide.scrollHeight,
      heading: (slide.querySelector("h1, h2") || {}).textContent || "",
      content: slide.querySelectorAll("p, li, pre, img, mjx-container, .posenc-explorer").length,
      broken: Array.from(slide.querySelectorAll("img"))
        .filter(i => !i.closest("noscript, picture") && !(i.complete && i.naturalWidth > 0))
        .map(i => i.getAttribute("src")),
      rawTex: /\\$\\$|\\\\\\(|\\\\\\[|\\\\begin\\{/.test(slide.innerText),
      mathErrors: slide.querySelectorAll("mjx-merror").length,
      notes: Array.from(slide.querySelectorAll("aside.notes"), n => n.textContent).join(" "),
      figures: slide.querySelectorAll(".posenc-explorer").length,
      live: slide.querySelectorAll(".posenc-explorer.is-live").length,
      poll: !!answer,
    };
    if (answer) {
      record.answerHidden = !answer.classList.contains("visible");
      Reveal.nextFragment();
      const now = Reveal.getIndices();
      record.answerShown = answer.classList.contains("visible")
        && now.h === at.h && now.v === at.v;
    }
    seen.push(record);
  }
  return seen;
}"""

#: What a live figure shows: its canvases' pixels and its SVG drawings (as tests/test_explore.py).
FINGERPRINT = """el => [
    ...Array.from(el.querySelectorAll(".pe-live canvas"), c => c.toDataURL()),
    ...Array.from(el.querySelectorAll(".pe-live svg"), s => s.innerHTML)].join("|")"""


@pytest.fixture(scope="module")
def built(make):
    """`make slides`: the decks' paths it printed."""
    run = make("slides")
    if run.returncode:
        pytest.fail(f"make slides failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return [line.strip() for line in run.stdout.splitlines() if line.strip().endswith(".html")]


@pytest.fixture(scope="module")
def tab(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    yield page
    page.close()


@pytest.fixture(scope="module", params=DECKS)
def deck(request, built, tab):
    """One deck, loaded from the file system and walked: {"slides": [...], "requests": [...],
    "errors": [...], "redraw": ...}."""
    requests, errors = [], []
    on_request = lambda r: requests.append(r.url)  # noqa: E731
    on_console = lambda m: errors.append(m.text) if m.type == "error" else None  # noqa: E731
    on_error = lambda e: errors.append(str(e))  # noqa: E731
    tab.on("request", on_request)
    tab.on("console", on_console)
    tab.on("pageerror", on_error)
    try:
        tab.goto((SLIDES / f"{request.param}.html").as_uri())
        tab.wait_for_function("window.Reveal && Reveal.isReady() && window.MathJax "
                              "&& MathJax.startup && MathJax.startup.promise")
        slides = tab.evaluate(WALK)
        redraw = drive_a_live_figure(tab)
    finally:
        tab.remove_listener("request", on_request)
        tab.remove_listener("console", on_console)
        tab.remove_listener("pageerror", on_error)
    return {"name": request.param, "slides": slides, "requests": requests, "errors": errors,
            "redraw": redraw}


def drive_a_live_figure(tab):
    """On the deck's first slide with a live figure, press ArrowRight in its first control:
    (figure changed, deck stayed on that slide), or None when the deck has no live figure."""
    found = tab.evaluate("""() => {
        const slide = Reveal.getSlides().find(s => s.querySelector(".posenc-explorer.is-live"));
        if (!slide) return false;
        const at = Reveal.getIndices(slide);
        Reveal.slide(at.h, at.v);
        return true;
    }""")
    if not found:
        return None
    figure = tab.locator(".present .posenc-explorer.is-live").first
    before, where = figure.evaluate(FINGERPRINT), tab.evaluate("Reveal.getIndices()")
    figure.locator(".pe-control :is(input, select)").first.focus()
    tab.keyboard.press("ArrowRight")
    tab.wait_for_timeout(100)
    return figure.evaluate(FINGERPRINT) != before, tab.evaluate("Reveal.getIndices()") == where


def test_make_slides_prints_one_deck_per_lecture(built):
    assert LECTURES, "book/teaching.md: no two-lecture plan found"
    assert sorted(Path(p).name for p in built) == sorted(f"{d}.html" for d in DECKS)


def test_no_request_leaves_the_file_system(deck):
    outside = [u for u in deck["requests"] if not u.startswith(LOCAL)]
    assert not outside, f"{deck['name']}: requests outside the deck's own files: {outside}"
    files = [u for u in deck["requests"] if u.startswith("file://")]
    assert any("mathjax" in u for u in files) and any("reveal.js" in u for u in files)


def test_no_console_error(deck):
    assert not deck["errors"], f"{deck['name']}: {deck['errors']}"


def test_every_slide_renders(deck):
    problems = []
    for s in deck["slides"]:
        where = f"slide {s['h']}.{s['v']} {s['heading']!r}"
        if not (s["current"] and s["width"] > 0 and s["height"] > 0):
            problems.append(f"{where}: not shown")
        if not s["heading"].strip() or not s["content"]:
            problems.append(f"{where}: no heading or no content")
        if s["broken"]:
            problems.append(f"{where}: images not loaded: {s['broken']}")
        if s["rawTex"] or s["mathErrors"]:
            problems.append(f"{where}: formula not typeset")
        if s["figures"] != s["live"]:
            problems.append(f"{where}: a live figure did not start")
        if s["scroll"] > SLIDE_HEIGHT:
            problems.append(f"{where}: {s['scroll']} px tall, taller than the slide")
    assert not problems, "\n".join(problems)
    assert len(deck["slides"]) >= 10


def test_polls_reveal_their_answer_on_the_next_key(deck):
    polls = [s for s in deck["slides"] if s["poll"]]
    lecture = LECTURES[DECKS.index(deck["name"])]
    assert len(polls) == sum(len(slot.polls) for slot in lecture.slots)
    for s in polls:
        assert s["answerHidden"] and s["answerShown"], f"poll {s['heading']!r}"


def test_a_live_figure_redraws_on_a_key_press(deck):
    if deck["redraw"] is None:
        pytest.skip(f"{deck['name']} has no live figure")
    changed, stayed = deck["redraw"]
    assert changed, "ArrowRight in the figure's first control did not redraw it"
    assert stayed, "ArrowRight in a figure's control moved the deck to another slide"


def test_notes_give_each_slot_its_minutes(deck):
    """Every slide's speaker notes name its slot; the slots' minutes are those of teaching.md
    and add up to at most 90."""
    lecture = LECTURES[DECKS.index(deck["name"])]
    minutes = {}
    for s in deck["slides"][1:]:
        found = NOTE.findall(s["notes"])
        assert found, f"slide {s['heading']!r} has no notes naming its slot"
        for slot, count, value in found:
            assert int(count) == len(lecture.slots)
            assert minutes.setdefault(int(slot), int(value)) == int(value)
    assert minutes == {n: slot.minutes for n, slot in enumerate(lecture.slots, 1)}
    assert sum(minutes.values()) <= LONGEST


def test_plan_and_polls_parse():
    """The parsers of slides/plan.py find what every slot shows, and the polls it names."""
    for lecture in LECTURES:
        for slot in lecture.slots:
            assert slot.chapters and slot.minutes > 0
            shown, missing = plan.shown_sections(slot)
            assert shown and not missing, f"parts of teaching.md naming no core section: {missing}"
            for ref in slot.polls:
                poll = plan.polls(ref.chapter)[ref.number]
                assert poll.stem and poll.answer
                if poll.options:
                    assert poll.right in dict(poll.options)


def test_print_view_gives_every_slide_a_page(deck, tab):
    """reveal.js's print view (?print-pdf, slides/README.md) lays the deck out as pages to
    print: a page per slide, and a second one for each poll, with its answer."""
    polls = sum(1 for s in deck["slides"] if s["poll"])
    tab.goto((SLIDES / f"{deck['name']}.html").as_uri() + "?print-pdf")
    tab.wait_for_function("window.Reveal && Reveal.isReady() && Reveal.isPrintView()")
    # reveal.js lays the pages out once the deck is ready
    tab.wait_for_function(f"document.querySelectorAll('.pdf-page').length "
                          f">= {len(deck['slides']) + polls}", timeout=15_000)
