"""Committed notebooks carry no volatile metadata.

The notebooks in book/ and assignments/ are committed with their outputs. What changes on every
execution without changing anything visible (execution timestamps, interpreter versions, editor
ids) must not be committed: `make strip`, or the pre-commit hook, removes it
with nbstripout. These tests run nbstripout with the hook's options in `--verify` mode, which
fails when it would change a file.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted([*ROOT.glob("book/*.ipynb"), *ROOT.glob("assignments/*/*.ipynb")])


def hook_args():
    """The nbstripout options of the pre-commit hook in .pre-commit-config.yaml."""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    (hook,) = [hook for repo in config["repos"] for hook in repo["hooks"]
               if hook["id"] == "nbstripout"]
    return hook["args"]


def would_strip(*paths):
    """The notebooks among ``paths`` that nbstripout, with the hook's options, would change."""
    result = subprocess.run([sys.executable, "-m", "nbstripout", "--verify", *hook_args(),
                             *map(str, paths)], capture_output=True, text=True, cwd=ROOT)
    changed = set(re.findall(r"^Dry run: would have stripped (.+)$", result.stdout, re.MULTILINE))
    assert (result.returncode != 0) == bool(changed), result.stdout + result.stderr
    return {Path(name).resolve() for name in changed}


@pytest.fixture(scope="module")
def stripped_notebooks():
    """One nbstripout run over all committed notebooks (each run takes seconds)."""
    return would_strip(*NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_committed_notebook_has_no_volatile_metadata(path, stripped_notebooks):
    assert path not in stripped_notebooks, (
        f"{path.relative_to(ROOT)} carries volatile metadata (execution timestamps, interpreter "
        "versions or ids): run `make strip` and commit the result")


def test_volatile_metadata_is_detected(tmp_path):
    """The check fails on a notebook with an execution timestamp and an interpreter version, and
    passes once nbstripout has removed them (outputs, execution count and cell id kept)."""
    notebook = {
        "cells": [{"cell_type": "code", "id": "a1", "execution_count": 3,
                   "metadata": {"execution": {"iopub.execute_input": "2026-01-01T00:00:00Z"}},
                   "outputs": [{"name": "stdout", "output_type": "stream", "text": "1\n"}],
                   "source": "print(1)"}],
        "metadata": {"language_info": {"name": "python", "version": "3.11.7"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path = tmp_path / "volatile.ipynb"
    path.write_text(json.dumps(notebook))
    assert would_strip(path)

    subprocess.run([sys.executable, "-m", "nbstripout", *hook_args(), str(path)], check=True)
    stripped = json.loads(path.read_text())
    cell = stripped["cells"][0]
    assert (cell["metadata"], cell["execution_count"], cell["id"]) == ({}, 3, "a1")
    assert "".join(cell["outputs"][0]["text"]) == "1\n"
    assert stripped["metadata"]["language_info"] == {"name": "python"}
    assert not would_strip(path)


def test_make_strip_uses_the_hook_options():
    makefile = (ROOT / "Makefile").read_text()
    (value,) = re.findall(r"^NBSTRIPOUT_ARGS\s*:=\s*(.*)$", makefile, flags=re.MULTILINE)
    assert shlex.split(value) == hook_args()
