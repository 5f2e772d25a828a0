"""Sphinx extension of the decks: speaker notes whose minutes are computed (slides/timing.py).

``{notes} KIND`` (on every slide; KIND is a kind of slides/timing.py's RULE)
    The slide's speaker notes: the directive's text is what to say; ``:ask:`` the question to
    the hall, ``:next:`` the transition to the next slide, ``:steps:`` the steps a ``step``
    slide reveals. The notes open with the slot, the slide's minutes by the rule and the
    minute of the lecture the slide starts at, all computed from the deck's source.
``{slot}`` (on a slot's title slide, a slide of kind ``title``)
    The same, with ``:drop:`` (what to drop first when the slot runs long) and ``:moved:``
    (what stays out of the lecture, and where it goes), both also shown in the plan.

The notes go into ``<aside class="notes">`` (reveal.js's speaker view, S; the print view's
``?print-pdf&showNotes=separate-page``).
"""

from __future__ import annotations

import html
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import timing  # noqa: E402  (slides/timing.py)


class deck_notes(nodes.Element):
    """Speaker notes: the HTML is in node["html"]."""


def visit_deck_notes(self, node):
    self.body.append(f'<aside class="notes">{node["html"]}</aside>')
    raise nodes.SkipNode


class Notes(SphinxDirective):
    optional_arguments = 1
    has_content = True
    option_spec = {"ask": directives.unchanged, "next": directives.unchanged,
                   "steps": directives.positive_int, "drop": directives.unchanged,
                   "moved": directives.unchanged}

    def run(self):
        deck = timing.parse(self.env.doc2path(self.env.docname))
        count = self.env.temp_data.setdefault("deck_notes_count", {})
        index = count.get(self.env.docname, 0)
        count[self.env.docname] = index + 1
        slides = deck.slides()
        if index >= len(slides):
            raise self.error("more notes than slides")
        slide = slides[index]
        number, slot, start = deck.where(index)
        kind = "title" if self.name == "slot" else (self.arguments or [""])[0]
        if kind != slide.kind:
            raise self.error(f"notes {index}: kind {kind!r}, the source parser found "
                             f"{slide.kind!r}")
        say = " ".join(self.content).strip()
        if not say:
            raise self.error(f"slide {slide.headline!r}: the notes say nothing to say")
        when = (f"Slot {number} of {len(deck.slots)}, {slot.title} "
                f"({timing._minutes(deck.slot_minutes(number))} min) · this slide "
                f"{timing._minutes(slide.minutes)} min ({kind}) · minute "
                f"{timing._minutes(start)} to {timing._minutes(start + slide.minutes)} of "
                f"{timing._minutes(deck.minutes)}")
        parts = [f"<p class='notes-when'><strong>{html.escape(when)}</strong></p>",
                 f"<p><strong>Say:</strong> {html.escape(say)}</p>"]
        for key, name in (("ask", "Ask"), ("drop", "If the slot runs long, drop first"),
                          ("moved", "Out of the lecture"), ("next", "Next")):
            if self.options.get(key):
                parts.append(f"<p><strong>{name}:</strong> {html.escape(self.options[key])}</p>")
        return [deck_notes(html="".join(parts))]


def _skip(self, node):
    raise nodes.SkipNode


def setup(app):
    app.add_node(deck_notes, html=(visit_deck_notes, None), revealjs=(visit_deck_notes, None),
                 text=(_skip, None), latex=(_skip, None))
    app.add_directive("notes", Notes)
    app.add_directive("slot", Notes)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
