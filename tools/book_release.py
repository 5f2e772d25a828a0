"""Sphinx extension: the book shows its version, and links the PDF when there is one.

- The version is read from the package (code/posenc/_version.py, the one place it is written)
  and becomes Sphinx's ``version``/``release``, the MyST substitution ``{{ posenc_version }}``
  and the ``{version}`` field of the footer (``html: extra_footer:`` in _config.yml).
- ``{source}`` becomes the repository's address at the configured branch (``repository:`` in
  _config.yml) and ``{cite}`` the page "How to cite and reuse" (book/cite.md).
- The ``{pdf}`` field of the footer becomes a link to the PDF of the whole book when
  ``make pdf`` (or ``make book``) has written it (``_build/pdf/positional-encoding-course.pdf``
  beside the HTML output): the file is then copied to the site's root at the end of every build,
  also one that wrote no page (Sphinx then copies no extra file: ``html_extra_path`` would leave
  an older print in the site). Without the PDF the field is empty, so the site never links a file
  it does not have.
"""

import filecmp
import importlib.util
import shutil
from pathlib import Path

PDF_NAME = "positional-encoding-course.pdf"
CITE_PAGE = "book/cite"
ROOT = Path(__file__).resolve().parents[1]


def package_version():
    """``posenc.__version__``, read from its file without importing the package (or NumPy)."""
    spec = importlib.util.spec_from_file_location("_posenc_version",
                                                  ROOT / "code" / "posenc" / "_version.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.__version__


def pdf_path(outdir):
    """Where ``make pdf`` writes the PDF, for a builder writing into ``outdir`` (_build/<name>)."""
    return Path(outdir).parent / "pdf" / PDF_NAME


def _on_config_inited(app, config):
    version = package_version()
    config.version = config.release = version
    config.myst_substitutions = {**config.myst_substitutions, "posenc_version": version}
    # Only the website links the PDF (not the single page the PDF is printed from).
    pdf = pdf_path(app.outdir)
    config.posenc_pdf = PDF_NAME if Path(app.outdir).name == "html" and pdf.is_file() else ""


def _on_build_finished(app, exception):
    """Copy the PDF that the pages link to the site's root, unless the site has it already."""
    if exception is None and app.config.posenc_pdf:
        pdf, copy = pdf_path(app.outdir), Path(app.outdir) / app.config.posenc_pdf
        if not copy.is_file() or not filecmp.cmp(pdf, copy, shallow=False):
            shutil.copyfile(pdf, copy)


def _on_html_page_context(app, pagename, templatename, context, doctree):
    footer = context.get("theme_extra_footer")
    if not footer:
        return
    pdf = ""
    if app.config.posenc_pdf:
        href = context["pathto"](app.config.posenc_pdf, 1)
        pdf = f'<a class="pdf-download" href="{href}" download>PDF of the whole book</a> · '
    options = app.config.html_theme_options
    fields = {
        "version": app.config.version,
        "pdf": pdf,
        "source": f"{options['repository_url'].rstrip('/')}/blob/{options['repository_branch']}",
        "cite": context["pathto"](CITE_PAGE),
    }
    for name, value in fields.items():
        footer = footer.replace("{" + name + "}", value)
    context["theme_extra_footer"] = footer


def _on_env_get_outdated(app, env, added, changed, removed):
    """Read every page again when a bibliography file changed since the last build.

    The citations' anchors are numbered across the whole book (sphinxcontrib-bibtex); an
    incremental build after an entry was added to references.bib wrote the citing pages with a
    new anchor (``references.html#id51``) and left the references page without it."""
    stamps = {name: (Path(app.srcdir) / name).stat().st_mtime_ns
              for name in app.config.bibtex_bibfiles}
    if getattr(env, "posenc_bib_stamps", None) == stamps:
        return []
    env.posenc_bib_stamps = stamps
    return sorted(env.found_docs)


def setup(app):
    # rebuild="html": pages are written again when the PDF appears or disappears.
    app.add_config_value("posenc_pdf", "", "html")
    app.connect("config-inited", _on_config_inited)
    app.connect("html-page-context", _on_html_page_context)
    app.connect("build-finished", _on_build_finished)
    app.connect("env-get-outdated", _on_env_get_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
