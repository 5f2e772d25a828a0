"""The GitHub Actions workflow: it parses, builds and deploys the book, and runs the tests.

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


def _runs(job):
    """The shell commands of a job's `run:` steps."""
    return [step["run"] for step in JOBS[job]["steps"] if "run" in step]


def _uses(job):
    """The actions a job uses, without their versions: {"actions/checkout": step, ...}."""
    return {step["uses"].split("@")[0]: step for step in JOBS[job]["steps"] if "uses" in step}


def test_runs_on_every_push():
    triggers = WORKFLOW.get("on", WORKFLOW.get(True))  # YAML 1.1 reads a bare `on` as True
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
    assert "apt-get install -y -q chromium" in CI_RUN
    assert "export POSENC_REQUIRE_BROWSER=1" in CI_RUN
    assert CI_RUN.rstrip().endswith("make test")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_every_make_target_called_exists_in_the_makefile():
    commands = [cmd for job in JOBS for cmd in _runs(job)] + [CI_RUN]
    targets = sorted({t for cmd in commands for t in re.findall(r"\bmake\s+([\w-]+)", cmd)})
    assert targets, "the workflow and .ci/run call no make target"
    for target in targets:
        # --dry-run prints the recipe without running it; an unknown target is an error (2).
        dry = subprocess.run(["make", "--dry-run", "-C", ROOT, target],
                             capture_output=True, text=True)
        assert dry.returncode == 0, f"make {target}: {dry.stderr.strip()}"
