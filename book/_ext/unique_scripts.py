"""Sphinx extension: write each inline ``<script>`` of a page only once.

Sphinx 7.4 (Jupyter Book 1 requires Sphinx 7) writes an inline script twice when an
extension adds it after the HTML builder has started: once as added, once again from the
registry (sphinx-doc/sphinx#13402, fixed in Sphinx 8.2). sphinx-thebe, which Jupyter Book
always loads, adds ``const THEBE_JS_URL = ...`` that way, so every page threw
"Identifier 'THEBE_JS_URL' has already been declared" in the browser console.
Remove this extension when the book moves to Sphinx >= 8.2.
"""


def drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    """Keep the first of identical entries in the page's ``script_files``."""
    seen = set()
    unique = []
    for script in context.get("script_files", []):
        # The registry's copy has filename "" where the builder's has None.
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"][:] = unique


def setup(app):
    """Run after the other extensions have added their page scripts."""
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
