"""The GitHub Actions workflows: book.yml builds and deploys the book and runs the tests;
release.yml, on a version tag, builds and checks the package, builds the PDF, publishes with
trusted publishing and attaches the PDF to the GitHub release.

GitHub only reads the YAML when it runs; these checks catch a broken file, a missing job or
step, and a `make` target that the workflow (or .ci/run, which its test job runs) calls but
the Makefile does not define.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_FILE = ROOT / ".github" / "workflows" / "book.yml"
WORKFLOW = yaml.safe_load(WORKFLOW_FILE.read_text())
JOBS = WORKFLOW["jobs"]
CI_RUN = (ROOT / ".ci" / "run").read_text()
RELEASE = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
RELEASE_JOBS = RELEASE["jobs"]
PDF = "_build/pdf/positional-encoding-course.pdf"


def _runs(job, jobs=JOBS):
    """The shell commands of a job's `run:` steps."""
    return [step["run"] for step in jobs[job]["steps"] if "run" in step]


def _uses(job, jobs=JOBS):
    """The actions a job uses, without their versions: {"actions/checkout": step, ...}."""
    return {step["uses"].split("@")[0]: step for step in jobs[job]["steps"] if "uses" in step}


def _triggers(workflow):
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True


def test_runs_on_every_push():
    triggers = _triggers(WORKFLOW)
    assert "push" in triggers
    assert triggers["push"] is None, "push must not be limited to some branches"


def test_build_job_builds_the_book_with_python_311():
    assert JOBS["build"]["runs-on"] == "ubuntu-latest"
    assert str(_uses("build")["actions/setup-python"]["with"]["python-version"]) == "3.11"
    assert "actions/checkout" in _uses("build")
    assert "make book" in _runs("build")
    assert _uses("build")["actions/upload-pages-artifact"]["with"]["path"] == "_build/html"


def test_deploy_job_publishes_to_pages_from_main_only():
    deploy = JOBS["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["if"] == "github.ref == 'refs/heads/main'"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert _uses("deploy")["actions/deploy-pages"]["id"] == "deployment"


def test_test_job_runs_ci_run_which_requires_the_browser():
    assert "actions/checkout" in _uses("test")
    assert _runs("test") == ["bash .ci/run"]
    # Chromium (and npm, bubblewrap) installed when missing, each on its own
    assert "[ -x /usr/bin/chromium ] || missing+=(chromium)" in CI_RUN
    assert 'apt-get install -y -q "${missing[@]}"' in CI_RUN
    assert "export POSENC_REQUIRE_BROWSER=1" in CI_RUN
    assert CI_RUN.rstrip().endswith("make test")


def test_test_job_can_run_the_grading_sandbox():
    """make grade's bubblewrap needs namespaces, which Docker's defaults forbid in a container."""
    assert JOBS["test"]["container"] == {"image": "python:3.11-bookworm", "options": "--privileged"}
    assert "bubblewrap" in CI_RUN


def _make_commands(text):
    """The `make ...` commands of shell text, in order, without comments."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line.startswith("make ")]


def test_ci_runs_the_readme_quick_start_in_its_order():
    """A new reader runs the Quick start's commands in a fresh clone, in its order; CI does the
    same, so a first command that fails there (as `make book` did without the d3 modules,
    because only `make test` installed them) fails CI too."""
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick_start, re.S).group(1)
    assert _make_commands(block) == ["make book", "make test"]
    assert _make_commands(CI_RUN) == _make_commands(block)


def _database():
    """make's own reading of the Makefile (`make -p`): {target: [prerequisites]}."""
    run = subprocess.run(["make", "-pq", "-C", ROOT, "--no-print-directory", "book"],
                         capture_output=True, text=True)
    rules = {}
    for line in run.stdout.splitlines():
        match = re.match(r"^([^#\s=:][^=:]*?):(?!=)\s*(.*)$", line)
        if match and not line.startswith("\t"):
            rules.setdefault(match.group(1), []).extend(match.group(2).replace("|", " ").split())
    return rules


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_every_target_that_builds_the_site_installs_the_d3_modules_first():
    """The site's extension copies the d3 modules of node_modules into the site: each rule that
    runs jupyter-book needs `npm ci` first, as make reads it (not as the Makefile's text says: a
    variable used in a prerequisite before its definition is silently empty)."""
    rules = _database()
    for target in ("_build/.html-built", "_build/pdf/positional-encoding-course.pdf", "test"):
        assert "node_modules/.installed" in rules[target], f"{target}: {rules[target]}"


def test_variables_of_prerequisites_are_defined_above_their_rule():
    """make expands a rule's prerequisites when it reads the rule: a variable defined further
    down is empty there, without a warning."""
    defined, late = set(), []
    lines = (ROOT / "Makefile").read_text().splitlines()
    for number, line in enumerate(lines, 1):
        assignment = re.match(r"^(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*[:?+]?=", line)
        if assignment:
            defined.add(assignment.group(1))
        elif not line.startswith("\t") and re.match(r"^[^#\s].*?:", line):
            prerequisites = line.split(":", 1)[1]
            late += [f"line {number}: $({name})" for name in
                     re.findall(r"\$\(([A-Z_][A-Z0-9_]*)\)", prerequisites) if name not in defined]
    assert not late, "used in a prerequisite before its definition: " + ", ".join(late)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_every_make_target_called_exists_in_the_makefile():
    commands = [cmd for job in JOBS for cmd in _runs(job)] + [CI_RUN] + [
        cmd for job in RELEASE_JOBS for cmd in _runs(job, RELEASE_JOBS)]
    targets = sorted({t for cmd in commands for t in re.findall(r"\bmake\s+([\w-]+)", cmd)})
    assert targets, "the workflow and .ci/run call no make target"
    for target in targets:
        # --dry-run prints the recipe without running it; an unknown target is an error (2).
        dry = subprocess.run(["make", "--dry-run", "-C", ROOT, target],
                             capture_output=True, text=True)
        assert dry.returncode == 0, f"make {target}: {dry.stderr.strip()}"


# --- release.yml ----------------------------------------------------------------------------


def test_release_runs_on_version_tags_only():
    assert _triggers(RELEASE) == {"push": {"tags": ["v*"]}}
    assert RELEASE["permissions"] == {"contents": "read"}


def test_release_builds_and_checks_the_package_of_the_tagged_version():
    runs = _runs("build", RELEASE_JOBS)
    assert str(_uses("build", RELEASE_JOBS)["actions/setup-python"]["with"]["python-version"]) \
        == "3.11"
    assert any("code/posenc/_version.py" in r and '"$GITHUB_REF_NAME" = "v$version"' in r
               for r in runs), "the tag is not compared with the package's version"
    assert "python -m pip install $(grep -E '^(build|twine)==' requirements.txt)" in runs
    assert "python -m build" in runs
    assert "python -m twine check --strict dist/*" in runs
    assert _uses("build", RELEASE_JOBS)["actions/upload-artifact"]["with"]["path"] == "dist/"


def test_release_builds_the_pdf_with_debian_chromium():
    job = RELEASE_JOBS["pdf"]
    assert job["container"] == "python:3.11-bookworm"
    runs = _runs("pdf", RELEASE_JOBS)
    assert any("apt-get install -y -q chromium" in r for r in runs)
    assert "make pdf" in runs
    assert _uses("pdf", RELEASE_JOBS)["actions/upload-artifact"]["with"]["path"] == PDF


def test_release_publishes_with_trusted_publishing_after_build_and_pdf():
    job = RELEASE_JOBS["publish"]
    assert sorted(job["needs"]) == ["build", "pdf"]
    assert job["permissions"] == {"id-token": "write"}
    assert job["environment"]["name"] == "pypi"
    uses = _uses("publish", RELEASE_JOBS)
    assert "pypa/gh-action-pypi-publish" in uses
    assert "with" not in uses["pypa/gh-action-pypi-publish"], "trusted publishing needs no token"
    assert uses["actions/download-artifact"]["with"] == {"name": "dist", "path": "dist/"}


def test_release_attaches_the_pdf_and_the_distributions():
    job = RELEASE_JOBS["github-release"]
    assert job["needs"] == ["publish"]
    assert job["permissions"] == {"contents": "write"}
    downloads = [s["with"]["name"] for s in job["steps"]
                 if s.get("uses", "").startswith("actions/download-artifact")]
    assert sorted(downloads) == ["dist", "pdf"]
    create = next(r for r in _runs("github-release", RELEASE_JOBS) if "gh release create" in r)
    assert "pdf/positional-encoding-course.pdf" in create and "dist/*" in create
    assert "--notes-file notes.md" in create


def test_package_job_runs_the_numpy_tests_on_every_supported_python():
    makefile = (ROOT / "Makefile").read_text()
    supported = re.search(r"^SUPPORTED_PYTHONS := (.+)$", makefile, re.M).group(1).split()
    matrix = JOBS["package"]["strategy"]["matrix"]
    assert matrix["python"] == supported
    assert "macos-14" in matrix["os"]
    install, tests = _runs("package")
    assert install.startswith("python -m pip install -e . ")
    named = re.findall(r"tests/\S+\.py", tests)
    assert named and all((ROOT / name).exists() for name in named)
    for name in named:  # NumPy only: no framework, browser or notebook tool
        source = (ROOT / name).read_text()
        assert not re.search(r"^\s*(import|from) (torch|tensorflow|keras|jax|matplotlib|nbformat"
                             r"|playwright|otter)\b", source, re.M), name
