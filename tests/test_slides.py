"""The lecture decks (`make slides`, slides/README.md), opened the way a lecturer opens them:
from the file system, offline, in headless Chromium (tests/browsers.py), and their sources.

`make slides` builds what is out of date (the fixture `make` of conftest.py). Each deck is loaded
once, in one tab, and walked from its first slide to its last in one script (no transitions):
every slide must be the current one when shown, have a heading, its images loaded, no TeX left
outside the typeset formulas, code slides of at most 12 lines, and speaker notes that say what to
say, the transition and the slide's minutes by the time rule of slides/timing.py; a poll's
answer is hidden until the next key press. A live figure is then driven from the keyboard. The
decks' sources are checked without a browser: every lecture fits 85 minutes by the rule, every
check poll comes after the slide it names. A slide of board material reveals as many steps as its
minutes count.
Cost: about 15 s (the two decks walked and printed once; the build when out of date).
"""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SLIDES = ROOT / "_build" / "slides"
sys.path.insert(0, str(ROOT / "slides"))
import plan  # noqa: E402  (slides/plan.py: cells by id, polls)
import timing  # noqa: E402  (slides/timing.py: the decks' sources and the time rule)

SOURCES = {deck.name: deck for deck in timing.decks()}
DECKS = sorted(SOURCES)
NOTE = re.compile(r"Slot (\d+) of (\d+), .*?\(([\d.]+) min\) · this slide ([\d.]+) min \((\w+)\)")
#: TeX that MathJax did not typeset, seen in the visible text outside mjx-container.
RAW_TEX = re.compile(r"\\(qquad|quad|text|underbrace|frac|begin|end|sum|left|right|sqrt|omega"
                     r"|cdot|lVert|operatorname)\b|[_^]\{|\$\$|\\\(|\\\[")
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
      content: slide.querySelectorAll("p, li, pre, img, table, mjx-container, .posenc-explorer").length,
      visible: (() => {
        const copy = slide.cloneNode(true);
        copy.querySelectorAll("mjx-container, aside.notes, script, style, section")
          .forEach(e => e.remove());
        return copy.textContent;
      })(),
      codeLines: Array.from(slide.querySelectorAll(".slide-code pre, pre.slide-code"),
        p => p.textContent.replace(/\\n$/, "").split("\\n").length),
      broken: Array.from(slide.querySelectorAll("img"))
        .filter(i => !i.closest("noscript, picture") && !(i.complete && i.naturalWidth > 0))
        .map(i => i.getAttribute("src")),
      mathErrors: slide.querySelectorAll("mjx-merror").length,
      notes: Array.from(slide.querySelectorAll("aside.notes"), n => n.textContent).join(" "),
      figures: slide.querySelectorAll(".posenc-explorer").length,
      live: slide.querySelectorAll(".posenc-explorer.is-live").length,
      poll: !!answer,
      fragments: slide.querySelectorAll(".fragment").length,
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
    page = browser.new_page(viewport={"width": 1280, "height": 720})
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


def test_make_slides_prints_one_deck_per_source(built):
    assert DECKS, "slides/: no lecture-*.md deck source"
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
    kinds = [slide.kind for slide in SOURCES[deck["name"]].slides()]
    assert len(deck["slides"]) == len(kinds), "the deck's slides are not its source's"
    for s, kind in zip(deck["slides"], kinds):
        where = f"slide {s['h']}.{s['v']} {s['heading']!r}"
        if not (s["current"] and s["width"] > 0 and s["height"] > 0):
            problems.append(f"{where}: not shown")
        if not s["heading"].strip() or not (s["content"] or kind == "title"):
            problems.append(f"{where}: no heading or no content")
        if s["broken"]:
            problems.append(f"{where}: images not loaded: {s['broken']}")
        if RAW_TEX.search(s["visible"]) or s["mathErrors"]:
            found = RAW_TEX.search(s["visible"])
            problems.append(f"{where}: TeX left outside the typeset formulas: "
                            f"{found.group(0) if found else 'a MathJax error'}")
        if s["figures"] != s["live"]:
            problems.append(f"{where}: a live figure did not start")
        if any(n > 12 for n in s["codeLines"]):
            problems.append(f"{where}: code of {s['codeLines']} lines, more than 12")
        if s["scroll"] > SLIDE_HEIGHT:
            problems.append(f"{where}: {s['scroll']} px tall, taller than the slide")
    assert not problems, "\n".join(problems)


def test_board_material_reveals_the_steps_its_minutes_count(deck):
    """A slide of kind step costs its minutes once per step (`:steps: N` in its notes): it must
    reveal N pieces, one per key press, or the plan counts minutes the slide does not take."""
    pairs = enumerate(zip(deck["slides"], SOURCES[deck["name"]].slides()), 1)
    wrong = [f"slide {n} {s['heading']!r}: {s['fragments']} pieces, :steps: "
             f"{slide.options.get('steps')}" for n, (s, slide) in pairs
             if slide.kind == "step" and s["fragments"] != int(slide.options.get("steps", 1))]
    assert not wrong, "\n".join(wrong)


def test_raw_tex_is_recognised():
    """The pattern finds what the issue saw on the slides, and not plain words."""
    assert RAW_TEX.search(r"\end{aligned} \qquad \text{base} = 10000 .")
    assert RAW_TEX.search(r"= \underbrace{") and RAW_TEX.search("}_{M_k^{(i)}}")
    assert not RAW_TEX.search("sum of rows, dog bites man: [-1.1223 -1.7138]")


def test_polls_reveal_their_answer_on_the_next_key(deck):
    polls = [s for s in deck["slides"] if s["poll"]]
    assert len(polls) == sum(1 for s in SOURCES[deck["name"]].slides() if s.poll)
    for s in polls:
        assert s["answerHidden"] and s["answerShown"], f"poll {s['heading']!r}"


def test_a_live_figure_redraws_on_a_key_press(deck):
    if deck["redraw"] is None:
        pytest.skip(f"{deck['name']} has no live figure")
    changed, stayed = deck["redraw"]
    assert changed, "ArrowRight in the figure's first control did not redraw it"
    assert stayed, "ArrowRight in a figure's control moved the deck to another slide"


def test_notes_say_what_to_say_and_give_the_minutes(deck):
    """Every slide's notes: its slot, the slot's and the slide's minutes by the time rule,
    two sentences at least to say, and the transition to the next slide (but the last)."""
    source = SOURCES[deck["name"]]
    problems = []
    for index, (s, slide) in enumerate(zip(deck["slides"], source.slides())):
        where = f"slide {index + 1} {s['heading']!r}"
        found = NOTE.search(s["notes"])
        number, slot, _ = source.where(index)
        if not found:
            problems.append(f"{where}: the notes give no slot and minutes: {s['notes'][:80]!r}")
            continue
        expected = (str(number), str(len(source.slots)), f"{source.slot_minutes(number):g}",
                    f"{slide.minutes:g}", slide.kind)
        if found.groups() != expected:
            problems.append(f"{where}: notes say {found.groups()}, the rule {expected}")
        say = re.search(r"Say: (.*?)(Ask:|If the slot|Out of the|Next:|$)", s["notes"], re.S)
        if not say or len(re.findall(r"[.?!](\s|$)", say.group(1))) < 2:
            problems.append(f"{where}: the notes say less than two sentences")
        if index + 1 < len(deck["slides"]) and "Next:" not in s["notes"]:
            problems.append(f"{where}: no transition (Next:) in the notes")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", DECKS)
def test_each_lecture_fits_85_minutes_by_the_rule(name):
    deck = SOURCES[name]
    assert 40 <= deck.minutes <= timing.LONGEST == 85
    assert deck.minutes == sum(deck.slot_minutes(n) for n in range(1, len(deck.slots) + 1))
    for slot in deck.slots:
        assert slot.options.get("drop") and slot.options.get("moved"), \
            f"{name}, slot {slot.title!r}: say what to drop first and what moves out"


@pytest.mark.parametrize("name", DECKS)
def test_check_polls_come_after_the_slide_they_name(name):
    """A check poll names (:check: LABEL) the slide that teaches its answer: that slide comes
    before it. A predict poll says why it is asked first. Every poll exists in its chapter."""
    slides = SOURCES[name].slides()
    labels = {s.label: n for n, s in enumerate(slides) if s.label}
    polls = [(n, s) for n, s in enumerate(slides) if s.poll]
    assert polls
    for n, slide in polls:
        chapter, number = slide.poll
        poll = plan.polls(chapter)[number]
        assert poll.stem and poll.right in dict(poll.options)
        kind = set(slide.poll_options) & {"predict", "check"}
        assert len(kind) == 1, f"{name}: poll {chapter} {number}: predict or check?"
        if "check" in kind:
            label = slide.poll_options["check"]
            assert label in labels, f"{name}: poll {chapter} {number} names no slide {label!r}"
            assert labels[label] < n, f"{name}: poll {chapter} {number} before its slide"
            assert re.search(r"check poll.*(after|slide)", slide.say, re.I | re.S), \
                f"{name}: the notes of poll {chapter} {number} should name the slide it checks"
        else:
            assert "predict" in slide.say.lower(), f"{name}: the notes must say it is a predict poll"


def test_teaching_includes_the_computed_plan():
    text = (ROOT / "book" / "teaching.md").read_text()
    assert "```{include} ../_build/plan.md" in text
    assert "three to five" not in text
    table = timing.plan_markdown()
    for deck in SOURCES.values():
        assert f"({deck.minutes:g} minutes of the 90" in table


def test_print_view_gives_every_slide_a_page(deck, tab):
    """reveal.js's print view (?print-pdf, slides/README.md) lays the deck out as pages to
    print: a page per slide, and a second one for each poll, with its answer."""
    polls = sum(1 for s in deck["slides"] if s["poll"])
    tab.set_viewport_size({"width": 1280, "height": 720})
    tab.goto((SLIDES / f"{deck['name']}.html").as_uri() + "?print-pdf")
    tab.wait_for_function("window.Reveal && Reveal.isReady() && Reveal.isPrintView()")
    # reveal.js lays the pages out once the deck is ready
    tab.wait_for_function(f"document.querySelectorAll('.pdf-page').length "
                          f">= {len(deck['slides']) + polls}", timeout=15_000)
