"""Reliability figures for the book's status page, written by the tests that measure them.

A test that measures how the package behaves under bad input, corrupted data, killed runs,
changed worker counts or attacks on the live server is marked ``@pytest.mark.reliability`` and
calls :func:`record` with its counts. Each figure becomes one JSON file in ``$BOOK_RELIABILITY_DIR``
(default ``_build/reliability/``, where an ordinary test run leaves them unused).

The status page shows the committed figures in ``data/reliability/``: ``make status`` runs the
marked tests with ``BOOK_RELIABILITY_DIR=data/reliability`` (commit the result). Each figure carries
the fingerprint of the code it measured (:func:`fingerprint`), and
``tests/package/test_status_figures.py`` fails when a committed figure is stale, so the book never
shows figures of code it no longer contains, and never depends on a test run having happened first.
"""

from __future__ import annotations

import datetime
import glob
import hashlib
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.environ.get("BOOK_RELIABILITY_DIR") or os.path.join(ROOT, "_build", "reliability")
#: The code every figure measures, besides the test that records it (paths relative to ROOT).
MEASURED = ("sattn/**/*.py", "tools/serve_live.py", "tools/book_reader.py", "book_static/*.js")


def fingerprint(test: str) -> str:
    """SHA-256 over the measured code and the recording test's file (``test`` is ``path::name``).

    Line endings and file order cannot change it; any edit of a measured file or of the test does.
    """
    paths = sorted({os.path.relpath(p, ROOT) for pattern in MEASURED
                    for p in glob.glob(os.path.join(ROOT, pattern), recursive=True)}
                   | {test.split("::")[0]})
    h = hashlib.sha256()
    for rel in paths:
        with open(os.path.join(ROOT, rel), "rb") as f:
            h.update(rel.encode() + b"\0" + f.read().replace(b"\r\n", b"\n") + b"\0")
    return h.hexdigest()


def record(name: str, *, title: str, tried: int, passed: int, unit: str, test: str,
           details: dict | None = None, failures: list | None = None) -> str:
    """Write one figure: ``passed`` of ``tried`` ``unit`` behaved as required. Returns the path.

    ``name`` is a file-name-safe key; ``title`` says in words what was tried and what was required;
    ``test`` names the test (``path::function``); ``details`` holds any further counts (small, JSON);
    ``failures`` the first few cases that did not behave (for the reader to see, never silenced).
    """
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"record: name must be letters, digits, '-' or '_', got {name!r}")
    if not (isinstance(tried, int) and isinstance(passed, int) and 0 <= passed <= tried):
        raise ValueError(f"record: need integers 0 <= passed <= tried, got passed={passed!r}, tried={tried!r}")
    os.makedirs(DIR, exist_ok=True)
    path = os.path.join(DIR, f"{name}.json")
    data = {"name": name, "title": title, "tried": tried, "passed": passed, "unit": unit, "test": test,
            "details": details or {}, "failures": [str(f)[:300] for f in (failures or [])[:10]],
            "code": fingerprint(test),
            "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return path
