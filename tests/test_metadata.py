"""Licenses, citation and version: what a reader needs to reuse, cite and pin the course.

- LICENSE is the MIT License (code), LICENSE-CONTENT the CC BY 4.0 legal code (text and
  figures); pyproject.toml, the README and the book's footer say the same.
- CITATION.cff is valid Citation File Format 1.2.0. The schema is the one shipped by cffconvert
  2.0.0, the format's own validator, kept in tests/data/ (source and license in its README.md)
  so that the tests need no network. cffconvert itself cannot be installed beside Jupyter (it
  requires jsonschema < 4, Jupyter >= 4.18), so the schema is checked with the jsonschema
  Jupyter already uses, as cffconvert does (Draft 7, with format checks).
- The version is written once (code/posenc/_version.py); CITATION.cff and the newest entry of
  CHANGELOG.md name the same one.
"""

import copy
import hashlib
import json
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

import posenc

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPOSITORY = CONFIG["repository"]["url"].rstrip("/")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CITATION = yaml.safe_load((ROOT / "CITATION.cff").read_text())
# cffconvert 2.0.0's cffconvert/schemas/1.2.0/schema.json, unchanged (tests/data/README.md).
CFF_SCHEMA = ROOT / "tests" / "data" / "cff-1.2.0-schema.json"
CFF_SCHEMA_SHA256 = "0b8d22140da702d766df318dcff3a91af2f39521298dcf36d76315fd99cc169b"


@pytest.fixture(scope="session")
def cff_validator():
    """A jsonschema validator for the CFF 1.2.0 schema that cffconvert ships."""
    data = CFF_SCHEMA.read_bytes()
    assert hashlib.sha256(data).hexdigest() == CFF_SCHEMA_SHA256, f"{CFF_SCHEMA} was changed"
    schema = json.loads(data)
    assert schema["$id"] == "https://citation-file-format.github.io/1.2.0/schema.json"
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def test_citation_is_valid_cff_1_2_0(cff_validator):
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}"
              for e in cff_validator.iter_errors(CITATION)]
    assert errors == []


@pytest.mark.parametrize("damage", ["no authors", "unquoted date", "unknown license"])
def test_the_schema_check_rejects_a_broken_citation(cff_validator, damage):
    """The check can fail: typical mistakes in a CITATION.cff are caught."""
    broken = copy.deepcopy(CITATION)
    if damage == "no authors":
        del broken["authors"]
    elif damage == "unquoted date":  # YAML reads 2026-11-23 unquoted as a date, not a string
        broken["date-released"] = yaml.safe_load("2026-11-23")
    else:
        broken["license"] = "CC-BY"
    assert not cff_validator.is_valid(broken)


def test_citation_names_this_version_repository_and_both_licenses():
    assert CITATION["version"] == posenc.__version__
    assert CITATION["repository-code"] == REPOSITORY
    assert sorted(CITATION["license"]) == ["CC-BY-4.0", "MIT"]
    assert CITATION["title"] == CONFIG["title"]
    assert [a["name"] for a in CITATION["authors"]] == [CONFIG["author"]]


def test_version_is_written_once_and_read_by_the_packaging():
    assert re.fullmatch(r"\d+\.\d+\.\d+", posenc.__version__)
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert "version" not in PYPROJECT["project"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "posenc._version.__version__"
    written = [p.relative_to(ROOT) for p in (ROOT / "code").rglob("*.py")
               if re.search(r"^__version__\s*=", p.read_text(), re.MULTILINE)]
    assert written == [Path("code/posenc/_version.py")]


def test_changelog_starts_with_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", changelog, re.MULTILINE)
    assert versions, "CHANGELOG.md has no '## [x.y.z] - YYYY-MM-DD' entry"
    assert versions[0] == (posenc.__version__, CITATION["date-released"])
    assert f"[{posenc.__version__}]: {REPOSITORY}/releases/tag/v{posenc.__version__}" in changelog


def test_license_files_hold_the_official_texts():
    mit = (ROOT / "LICENSE").read_text()
    assert mit.startswith("MIT License\n\nCopyright (c) ")
    assert "Permission is hereby granted, free of charge, to any person obtaining a copy" in mit
    content = (ROOT / "LICENSE-CONTENT").read_text()
    assert "Creative Commons Attribution 4.0 International Public License" in content
    assert "Section 8 – Interpretation." in content  # the legal code is there in full


def test_licenses_are_stated_in_pyproject_readme_and_footer():
    assert PYPROJECT["project"]["license"] == "MIT"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    readme = (ROOT / "README.md").read_text()
    assert "CC BY 4.0" in readme and "MIT" in readme
    footer = CONFIG["html"]["extra_footer"]
    assert "https://creativecommons.org/licenses/by/4.0/" in footer
    assert "{source}/LICENSE" in footer and "{version}" in footer


def test_project_urls_follow_the_configured_repository():
    urls = PYPROJECT["project"]["urls"]
    owner, name = REPOSITORY.split("/")[-2:]
    assert urls["Source"] == REPOSITORY
    assert urls["Issues"] == f"{REPOSITORY}/issues"
    assert urls["Homepage"] == f"https://{owner}.github.io/{name}/"
    assert CITATION["url"] == urls["Homepage"]
