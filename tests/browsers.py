"""Which Chromium the browser tests drive (tests/test_site.py, test_explore.py, test_pdf.py).

Looked for in this order, the first found is used:

1. POSENC_CHROMIUM, the browser executable, when set (if it does not exist, the tests say so);
2. on the PATH: chromium, chromium-browser, google-chrome, google-chrome-stable;
3. the usual places outside the PATH: /usr/bin/chromium (Debian), /snap/bin/chromium (Ubuntu's
   snap), and on macOS the application bundles of Chromium and Google Chrome, in /Applications
   or ~/Applications;
4. Playwright's own Chromium, once `python -m playwright install chromium` has downloaded it
   (PLAYWRIGHT_BROWSERS_PATH is honoured: Playwright itself says where it is).

conftest.py passes the one found to the commands the tests run (`make pdf`) as POSENC_CHROMIUM.
When none is found the browser tests are skipped, and the end of the run says how many and the
command that enables them; POSENC_REQUIRE_BROWSER=1 (set by .ci/run) fails them instead.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BUNDLES = ("Chromium.app/Contents/MacOS/Chromium", "Google Chrome.app/Contents/MacOS/Google Chrome")
PLACES = (Path("/usr/bin/chromium"), Path("/snap/bin/chromium"),
          *(folder / bundle for folder in (Path("/Applications"), Path.home() / "Applications")
            for bundle in BUNDLES))
# Where none is found: the default named in messages.
DEFAULT = Path("/usr/bin/chromium")
# Prints where Playwright's managed Chromium is (or would be), without starting it.
PLAYWRIGHT_PATH = ("from playwright.sync_api import sync_playwright\n"
                   "with sync_playwright() as p: print(p.chromium.executable_path)")


def playwright_chromium():
    """The path of Playwright's downloaded Chromium, or None when it is not there."""
    try:
        run = subprocess.run([sys.executable, "-c", PLAYWRIGHT_PATH], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = Path(run.stdout.strip())
    return path if run.returncode == 0 and run.stdout.strip() and path.is_file() else None


def find_chromium(environ=os.environ, which=shutil.which, places=PLACES,
                  managed=playwright_chromium):
    """(path of the browser, how it was found), or (None, None) when there is none.

    The arguments are the places looked at (tests replace them to check the order).
    """
    if environ.get("POSENC_CHROMIUM"):
        return Path(environ["POSENC_CHROMIUM"]), "POSENC_CHROMIUM"
    for name in NAMES:
        if found := which(name):
            return Path(found), f"{name} on the PATH"
    for place in places:
        if place.is_file():
            return place, str(place)
    if found := managed():
        return found, "Playwright's own Chromium"
    return None, None


def enable_command():
    """The one command that gives the browser tests a browser on this system."""
    with_deps = " --with-deps" if sys.platform == "linux" else ""  # its system libraries, via apt
    python = os.path.relpath(sys.executable) if Path(sys.prefix).name == ".venv" else sys.executable
    return f"{python} -m playwright install{with_deps} chromium"
