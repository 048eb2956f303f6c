"""Reliability figures for the book's status page, written by the tests that measure them.

A test that measures how the package behaves under bad input, corrupted data, killed runs or
changed worker counts calls :func:`record` with its counts. Each figure becomes one JSON file in
``$BOOK_RELIABILITY_DIR`` (default ``_build/reliability/``), and the next ``make book`` prints the
figures on the status page (``tools/book_reader.py``, directive ``{book-reliability}``). ``make test``
runs the tests before it builds the book, so the site it builds shows the figures of that same run.
"""

from __future__ import annotations

import datetime
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.environ.get("BOOK_RELIABILITY_DIR") or os.path.join(ROOT, "_build", "reliability")


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
            "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return path
