"""Sphinx configuration of the lecture decks (slides/build.py runs `sphinx-build -b revealjs`
with it on the decks' sources, slides/lecture-*.md; see slides/README.md).

The decks are built with their own configuration, not the book's: sphinx-book-theme does not run
under another builder. They keep what the slides need: MyST (with the book's math syntax), the
live figures (book/_ext/posenc_explorer.py) and MathJax served from the deck itself
(sphinx-mathjax-offline), so a deck works offline; reveal.js comes with sphinx-revealjs.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "book" / "_ext"), str(HERE / "_ext")]

project = "Positional Encoding, from Sines to Layers"
author = "The Positional Encoding course authors"
copyright = "2026"
root_doc = "lecture-1"
extensions = ["myst_parser", "sphinx_revealjs", "sphinx-mathjax-offline", "posenc_explorer",
              "chapter_parts", "deck_notes"]
# The sources are this folder's lecture-*.md; the rest of the folder is the builder's.
exclude_patterns = ["README.md", "_ext", "_static", "__pycache__"]
myst_enable_extensions = ["amsmath", "colon_fence", "dollarmath"]
suppress_warnings = ["myst.header"]  # a slide's heading may follow another of any level

# reveal.js: the white theme (its fonts are in the wheel), every slide in one line of keys
# (Space, arrows, Page Down all go to the next slide, fragments included), slide numbers, and
# the speaker notes window (S) and code highlighting plug-ins bundled with sphinx-revealjs.
revealjs_style_theme = "white"
revealjs_static_path = [str(HERE / "_static")]
# posenc-explorer.css: the live figures' styles (book/_ext/posenc_explorer.py copies it into
# _static; it adds it to the pages of the book's HTML builders only).
# deck-kinds.css: the kinds of slides of the edited decks (a figure alone, code, board material,
# live figures at a projector's size), after deck.css.
revealjs_css_files = ["revealjs/plugin/highlight/zenburn.css", "posenc-explorer.css", "deck.css",
                      "deck-kinds.css"]
html_copy_source = False  # no _sources/ folder beside the decks
revealjs_script_conf = {
    "navigationMode": "linear",
    "slideNumber": "c/t",
    "hash": True,
    "center": False,
    "width": 1280,
    "height": 800,
    "showNotes": False,
}
revealjs_script_plugins = [
    {"name": "RevealNotes", "src": "revealjs/plugin/notes/notes.js"},
    {"name": "RevealHighlight", "src": "revealjs/plugin/highlight/highlight.js"},
]
