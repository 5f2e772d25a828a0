"""Can the decks be projected? Every slide of every deck of _build/slides/ (`make slides`), as
a hall sees it on a 1280x720 projector, and as it prints (reveal.js's print view, ?print-pdf,
under print media): issue 53's legibility rules, measured in Chromium in screen pixels.

One page load per deck and view, and one script that walks every slide (the deck view: each
slide shown in turn with all its fragments; the print view: every printed page) and records
what the checks below read. Sizes are screen pixels of the 1280x720 projector: reveal.js scales
its 1280x800 slide by 0.864 there, so a 16 px font shows at about 14 px; the print view is
measured at the same scale (what the paper's slide shows when projected or read at that size).

The checks (each lists every failing slide as `deck view slide N (h.v) "heading": what`, N the
number the deck shows in its corner, h.v reveal.js's indices, as in the address's #/h/v):

- raw TeX: no TeX command or delimiter in the visible text outside typeset math and code;
- cut: no equation, code block, table, image, live figure or text block outside the slide's
  box; no code block scrolled (scrollWidth > clientWidth, or taller than it shows);
- elided: no code or output block whose visible text ends in "..." (an elided output);
- figures: a static figure (an image that is not a live figure's still) at least 45% of the
  slide's width, and alone: no code block or table beside it;
- code: at least 18 px on screen, at most 14 lines per block;
- text: no visible text under 14 px on screen, live figures' controls and SVG text included
  (text drawn on a canvas is not measured);
- notes: every slide's speaker notes say something beyond a slot label: at least two sentences
  and 25 words (the deck view; notes print with the slides in the handouts).

The decks that an earlier slides/build.py generated cell by cell from the chapters failed every
one of these checks at the slides issue 53 lists; the decks written as slides
(slides/lecture-N.md) pass them.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SLIDES = ROOT / "_build" / "slides"

VIEWPORT = {"width": 1280, "height": 720}  # the hall's projector
MIN_TEXT = 14  # px on screen
MIN_CODE = 18  # px on screen
MAX_CODE_LINES = 14
MIN_FIGURE = 0.45  # a static figure's width over the slide's
MIN_NOTE_WORDS, MIN_NOTE_SENTENCES = 25, 2
SLACK = 2  # px: rounding of boxes on a scaled slide
# TeX left as text: a command (\frac, \qquad, \text), a delimiter (\[ \( $$), a group (^{ _{).
RAW_TEX = re.compile(r"\\[A-Za-z]+|\\[\[\]()]|\$\$|[\^_]\{")
# A bare slot label that the notes of the generated decks began with ("Slot 1 of 6 (8 min).").
SLOT_LABEL = re.compile(r"^\s*Slot \d+ of \d+ \([^)]*\)\.?")

# Walks the deck (or, in the print view, its pages) and measures every slide. Argument: {scale:
# the projector's (the deck view's Reveal.getScale(), for the print view; null in the deck),
# minText: MIN_TEXT, slack: SLACK, rawTex: RAW_TEX's source}.
MEASURE = r"""async ({scale: deckScale, minText, slack, rawTex}) => {
  await MathJax.startup.promise;
  await document.fonts.ready;
  const print = Reveal.isPrintView();
  const config = Reveal.getConfig();
  const scale = print ? deckScale : Reveal.getScale();
  if (!print) Reveal.configure({transition: "none", backgroundTransition: "none", hash: false,
    history: false, progress: false, controls: false, slideNumber: false});
  const rect = e => { const r = e.getBoundingClientRect();
    return {l: r.left, t: r.top, r: r.right, b: r.bottom, w: r.width, h: r.height}; };
  const shown = e => visible(e)
    && e.getBoundingClientRect().width * e.getBoundingClientRect().height > 4;
  const label = e => (e.className && e.className.baseVal === undefined && e.className
    ? `${e.tagName.toLowerCase()}.${e.className.split(/\s+/)[0]}` : e.tagName.toLowerCase());
  const snippet = (t, n = 60) => t.replace(/\s+/g, " ").trim().slice(0, n);
  const visible = e => e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
  const KINDS = [["equation", "mjx-container"], ["code", "pre"], ["table", "table"],
    ["image", "img"], ["live figure", ".posenc-explorer"],
    ["text", "p, li, h1, h2, h3, h4, blockquote, .poll-answer"]];
  const SKIP = "mjx-container, aside.notes, script, style, noscript, template, .slide-number";

  function measure(slide, frame) {
    const record = {heading: snippet((slide.querySelector("h1, h2, h3") || {}).textContent || ""),
      outside: [], scrolled: [], elided: [], figures: [], code: [], small: [], tex: ""};
    const inFrame = r => r.l >= frame.l - slack && r.t >= frame.t - slack
      && r.r <= frame.r + slack && r.b <= frame.b + slack;
    for (const [kind, selector] of KINDS) {
      for (const e of slide.querySelectorAll(selector)) {
        if (!shown(e) || e.closest("aside.notes")) continue;
        if (kind === "equation" && e.parentElement.closest("mjx-container")) continue;
        // typeset math: the box of what MathJax drew, which may be wider than its container
        const box = rect(kind === "equation" ? (e.querySelector("mjx-math") || e) : e);
        if (inFrame(box)) continue;
        record.outside.push(`${kind} ${Math.round(box.w)}x${Math.round(box.h)} px at `
          + `(${Math.round(box.l - frame.l)}, ${Math.round(box.t - frame.t)})`
          + (kind === "text" || kind === "code" ? ` "${snippet(e.textContent, 30)}"` : ""));
      }
    }
    const blocks = Array.from(slide.querySelectorAll("pre")).filter(shown);
    for (const pre of blocks) {
      const code = pre.querySelector("code") || pre;
      const text = code.textContent.replace(/\n$/, "");
      for (const e of new Set([pre, code])) {
        if (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)
          record.scrolled.push(`${e.scrollWidth}x${e.scrollHeight} px in ${e.clientWidth}x`
            + `${e.clientHeight} ("${snippet(text, 30)}")`);
      }
      if (/(\.\.\.|\u2026)\s*$/.test(text)) record.elided.push(snippet(text.slice(-60)));
      record.code.push({px: parseFloat(getComputedStyle(code).fontSize) * scale,
        lines: text.split("\n").length, text: snippet(text, 30)});
    }
    const tables = Array.from(slide.querySelectorAll("table")).filter(shown);
    for (const img of slide.querySelectorAll("img")) {
      if (!shown(img) || img.closest(".posenc-explorer")) continue;
      // the drawn picture: an image scaled to fit its box (object-fit: contain) may be narrower
      const r = img.getBoundingClientRect(), fit = getComputedStyle(img).objectFit;
      const drawn = fit === "contain" && img.naturalHeight
        ? Math.min(r.width, r.height * img.naturalWidth / img.naturalHeight) : r.width;
      record.figures.push({share: drawn / frame.w, beside: blocks.length + tables.length,
        src: (img.getAttribute("src") || "").split("/").pop()});
    }
    // every visible piece of text: its font size on screen, and what is not typeset math or code
    const prose = [];
    const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const e = node.parentElement;
      if (!node.textContent.trim() || !e || e.closest(SKIP)) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const r = range.getBoundingClientRect();
      if (r.width * r.height <= 4 || !visible(e)) continue;
      let px = parseFloat(getComputedStyle(e).fontSize);
      if (e instanceof SVGElement) { const m = e.getScreenCTM(); px *= Math.hypot(m.a, m.b); }
      else px *= scale;
      const what = `${label(e)} "${snippet(node.textContent, 30)}"`;
      if (px < minText - 0.25) record.small.push([px, what]);
      if (!e.closest("pre, code")) prose.push(node.textContent);
    }
    const fields = "select, button, input:is([type=number], [type=text])";
    for (const e of slide.querySelectorAll(fields)) {
      const px = parseFloat(getComputedStyle(e).fontSize) * scale;
      if (shown(e) && px < minText - 0.25) record.small.push([px, label(e)]);
    }
    const tex = prose.join(" ").match(new RegExp(rawTex, "g"));
    record.tex = tex ? Array.from(new Set(tex)).join(" ") : "";
    return record;
  }

  const records = [];
  if (!print) {
    const frameBox = rect(Reveal.getSlidesElement());
    for (const [n, slide] of Reveal.getSlides().entries()) {
      const at = Reveal.getIndices(slide);
      Reveal.slide(at.h, at.v, slide.querySelectorAll(".fragment").length + 1);
      const record = measure(slide, frameBox);
      record.at = `${n + 1} (${at.h}.${at.v || 0})`;
      record.hidden = slide.querySelectorAll(".fragment:not(.visible)").length;
      record.notes = Array.from(slide.querySelectorAll("aside.notes"), n => n.textContent)
        .join(" ");
      records.push(record);
    }
    return {scale, records};
  }
  // The print view: pages of the slide's size plus its margin; a slide's fragments are shown
  // on copies of its page that follow it (their fragments marked visible).
  const pageHeight = Math.floor(config.height * (1 + config.margin)) + config.pdfPageHeightOffset;
  let ordinal = -1;
  for (const page of document.querySelectorAll(".pdf-page")) {
    const slide = page.querySelector("section");
    if (!slide) continue;
    if (!slide.querySelector(".fragment.visible")) ordinal += 1;
    const p = rect(page), s = rect(slide);
    const frame = {l: s.l, t: p.t, r: s.l + config.width, b: p.t + Math.min(p.h, pageHeight),
      w: config.width};
    const record = measure(slide, frame);
    record.ordinal = ordinal;
    record.pages = Math.round(p.h / pageHeight);
    records.push(record);
  }
  return {scale, records};
}"""


def _load(page, deck, query, deck_scale=None):
    """Open a deck (query "" or "?print-pdf") and measure it: {"scale": ..., "records": [...]}."""
    page.goto(deck.as_uri() + query)
    page.wait_for_function("window.Reveal && Reveal.isReady() && window.MathJax "
                           "&& MathJax.startup && MathJax.startup.promise")
    if query:  # reveal.js lays the pages out once the deck is ready
        page.wait_for_function("document.querySelector('.pdf-page') && Array.from("
                               "document.images).every(i => i.complete)", timeout=30_000)
    return page.evaluate(MEASURE, {"scale": deck_scale, "minText": MIN_TEXT, "slack": SLACK,
                                   "rawTex": RAW_TEX.pattern})


@pytest.fixture(scope="module")
def decks(make, browser):
    """{deck name: {"deck": records, "print": records, "scale": ...}} for every deck that
    `make slides` built; the records of the print view carry their slide's place."""
    run = make("slides")
    if run.returncode:
        pytest.fail(f"make slides failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    paths = sorted(SLIDES.glob("*.html"))
    assert paths, "make slides built no deck"
    page = browser.new_page(viewport=VIEWPORT)
    measured = {}
    try:
        for path in paths:
            page.emulate_media(media="screen")
            deck = _load(page, path, "")
            page.emulate_media(media="print")  # what the paper shows
            printed = _load(page, path, "?print-pdf", deck["scale"])
            for record in printed["records"]:
                shown = deck["records"][min(record["ordinal"], len(deck["records"]) - 1)]
                record["at"] = shown["at"]
            measured[path.stem] = {"deck": deck["records"], "print": printed["records"],
                                   "scale": deck["scale"]}
    finally:
        page.close()
    return measured


def _failures(decks, problems, views=("deck", "print")):
    """Lines `deck view slide N (h.v) "heading": problem` for every record that `problems`
    (record -> problem or None) finds a problem in."""
    lines = []
    for name, measured in decks.items():
        for view in views:
            for record in measured[view]:
                problem = problems(record)
                if problem:
                    lines.append(f'{name} {view} slide {record["at"]} "{record["heading"]}": '
                                 f"{problem}")
    return lines


def _report(lines):
    if lines:
        pytest.fail(f"{len(lines)} slides:\n" + "\n".join(lines), pytrace=False)


def test_decks_are_measured(decks):
    """Every slide of the deck prints (the print view has a page for each, in order), and the
    deck is shown at the projector's scale."""
    for name, measured in decks.items():
        assert measured["scale"] == pytest.approx(0.864, abs=0.01), name
        assert measured["print"][-1]["ordinal"] == len(measured["deck"]) - 1, name
        assert not [r["at"] for r in measured["deck"] if r["hidden"]], f"{name}: fragments hidden"


def test_no_raw_tex(decks):
    _report(_failures(decks, lambda r: r["tex"] and f"raw TeX {r['tex']}"))


def test_nothing_cut_or_overflowing(decks):
    def problem(record):
        found = [f"outside the slide: {', '.join(record['outside'])}"] if record["outside"] else []
        found += [f"code scrolled: {s}" for s in record["scrolled"]]
        if record.get("pages", 1) > 1:
            found.append(f"prints on {record['pages']} pages")
        return "; ".join(found)

    _report(_failures(decks, problem))


def test_no_elided_output(decks):
    _report(_failures(decks, lambda r: r["elided"] and f"ends in '...': {r['elided']}"))


def test_static_figures_are_large_and_alone(decks):
    def problem(record):
        found = [f"{f['src']} {f['share']:.0%} of the slide's width"
                 for f in record["figures"] if f["share"] < MIN_FIGURE]
        found += [f"{f['src']} beside {f['beside']} code blocks or tables"
                  for f in record["figures"] if f["beside"]]
        return "; ".join(found)

    _report(_failures(decks, problem))


def test_code_is_large_and_short(decks):
    def problem(record):
        found = [f"{c['px']:.1f} px" for c in record["code"] if c["px"] < MIN_CODE - 0.25]
        found += [f"{c['lines']} lines" for c in record["code"] if c["lines"] > MAX_CODE_LINES]
        return found and "code " + ", ".join(found)

    _report(_failures(decks, problem))


def test_no_text_too_small(decks):
    def problem(record):
        if record["small"]:
            px, where = min(record["small"])
            return (f"{len(record['small'])} texts under {MIN_TEXT} px, the smallest "
                    f"{px:.1f} px: {where}")
        return None

    _report(_failures(decks, problem))


def test_notes_say_what_to_say(decks):
    def problem(record):
        notes = SLOT_LABEL.sub("", record["notes"]).strip()
        words = len(notes.split())
        sentences = len(re.findall(r"[.!?](?:\s|$)", notes))
        if words < MIN_NOTE_WORDS or sentences < MIN_NOTE_SENTENCES:
            return f"notes of {words} words, {sentences} sentences: {record['notes'][:70]!r}"
        return None

    _report(_failures(decks, problem, views=("deck",)))
