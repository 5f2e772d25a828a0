"""tests/browsers.py finds a browser where readers have one, and conftest.py says loudly when the
browser tests (or the resolution tests) were skipped."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import conftest
from browsers import enable_command, find_chromium


def _find(tmp_path, environ=(), on_path=(), places=(), managed=None):
    """find_chromium with fake surroundings: files in tmp_path stand for browsers."""
    def make(name):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return path

    which = {name: str(make(f"bin/{name}")) for name in on_path}.get
    return find_chromium(environ=dict(environ), which=which,
                         places=[make(p) if p.startswith("+") else tmp_path / p for p in places],
                         managed=lambda: managed and make(managed))


def test_posenc_chromium_comes_first_even_when_missing(tmp_path):
    found, how = _find(tmp_path, {"POSENC_CHROMIUM": "/nowhere/chrome"}, ["chromium"],
                       ["+snap"], "managed")
    assert (found, how) == (Path("/nowhere/chrome"), "POSENC_CHROMIUM")


def test_the_path_comes_before_fixed_places_in_the_order_of_names(tmp_path):
    found, how = _find(tmp_path, on_path=["google-chrome", "chromium-browser"], places=["+snap"])
    assert (found.name, how) == ("chromium-browser", "chromium-browser on the PATH")


def test_fixed_places_that_exist_come_before_playwrights_browser(tmp_path):
    found, how = _find(tmp_path, places=["missing", "+Chromium.app"], managed="managed")
    assert found == tmp_path / "+Chromium.app" and how == str(found)


def test_playwrights_browser_is_the_last_resort(tmp_path):
    assert _find(tmp_path, places=["missing"], managed="managed")[1] == \
        "Playwright's own Chromium"
    assert _find(tmp_path, places=["missing"]) == (None, None)


def test_the_places_include_snap_and_macos_bundles():
    from browsers import PLACES

    names = [str(p) for p in PLACES]
    assert "/snap/bin/chromium" in names
    assert "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" in names
    assert "/Applications/Chromium.app/Contents/MacOS/Chromium" in names


def test_enable_command_installs_playwrights_chromium_with_this_python():
    command = enable_command()
    assert command.endswith("-m playwright install --with-deps chromium"
                            if sys.platform == "linux" else "-m playwright install chromium")
    assert Path(command.split()[0]).resolve() == Path(sys.executable).resolve()


def _summary(*reasons):
    """What conftest's terminal summary writes after a run with these skip reasons."""
    lines = []
    reporter = SimpleNamespace(
        stats={"skipped": [SimpleNamespace(longrepr=("f.py", 1, f"Skipped: {r}"))
                           for r in reasons]},
        write_sep=lambda sep, title, **markup: lines.append(title),
        write_line=lines.append)
    conftest.pytest_terminal_summary(reporter)
    return lines


def test_summary_counts_browser_skips_and_names_the_command():
    lines = _summary(*["browser tests skipped: no Chromium or Chrome found"] * 3,
                     "the PDF cannot be built: no Chromium at /usr/bin/chromium", "other")
    assert lines[0] == "browser tests skipped: 4"
    assert lines[1] == "browser tests skipped: no Chromium or Chrome found"
    assert enable_command() in lines[2] and "POSENC_CHROMIUM" in lines[2]
    assert "POSENC_REQUIRE_BROWSER=1" in lines[2]


def test_summary_counts_resolution_skips():
    lines = _summary("resolution tests skipped: the package index does not answer")
    assert lines[0] == "resolution tests skipped: 1" and "POSENC_REQUIRE_INDEX=1" in lines[2]


def test_summary_is_silent_without_such_skips():
    assert _summary("the value tests did not run") == []


def test_the_browser_found_runs_a_page(browser):
    """The browser the site tests use starts under Playwright and renders a page."""
    page = browser.new_page()
    page.set_content("<p id='p'>positional</p>")
    assert page.inner_text("#p") == "positional"
    page.close()
