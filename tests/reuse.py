"""Results that take long to compute, reused across test runs while their inputs are the same.

The way make reuses what is up to date: a result (a submission's grades, the text of the PDF,
what Chromium saw on a page) is kept in _build/test-cache/<kind>/<key>.json, where the key is
a digest of everything that decides it (the graded notebook and the autograder's tests; the
PDF's bytes; the page's HTML and every file it can load, the browser, the script that reads
it). Change any input and the key changes, so the result is computed again; a fresh clone (CI)
computes everything; `rm -rf _build/test-cache` (or `make clean`) forces it. Only results that
are a function of their inputs are kept this way; the tests still check every one of them.

Shared by tests/test_assignments.py, tests/test_pdf.py, tests/test_site.py,
tests/test_explore.py and tests/test_explore_print.py.
"""

import hashlib
import json
import os
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / "_build" / "test-cache"


def digest(*parts):
    """A hex SHA-256 of parts (bytes, or anything else as its str), each delimited by its length."""
    result = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        result.update(len(data).to_bytes(8, "big") + data)
    return result.hexdigest()


def kept(kind, key):
    """The result kept under kind and key, or None."""
    path = CACHE / kind / f"{key}.json"
    return json.loads(path.read_text()) if path.exists() else None


def keep(kind, key, result):
    """Keep result (JSON) under kind and key, and return it. Written whole or not at all."""
    path = CACHE / kind / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.stem}.{os.getpid()}.{id(result)}.tmp")
    temporary.write_text(json.dumps(result))
    temporary.replace(path)
    return result


def reused(kind, key, compute):
    """The result kept under kind and key, else compute()'s, kept."""
    result = kept(kind, key)
    return result if result is not None else keep(kind, key, compute())
