"""Fixtures for tests of the built website; `make book` must have run first.

The folder tested is ``$BOOK_HTML`` if set, else ``_build/html``, so that a private build
(``--path-output /tmp/x`` gives ``/tmp/x/_build/html``) can be tested too.
"""

from __future__ import annotations

import glob
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HTML = os.path.abspath(os.environ.get("BOOK_HTML") or os.path.join(ROOT, "_build", "html"))
sys.path.insert(0, os.path.join(ROOT, "tools"))


def built_pages(html_dir: str = HTML) -> list[str]:
    """Every HTML page of the built book, relative to its root (found anew on every run)."""
    pages = sorted(glob.glob(os.path.join(html_dir, "**", "*.html"), recursive=True))
    return [os.path.relpath(p, html_dir) for p in pages
            if "/_static/" not in p and "/_sources/" not in p]


@pytest.fixture(scope="session")
def html_dir() -> str:
    if not os.path.exists(os.path.join(HTML, "index.html")):
        pytest.fail(f"no built book in {HTML}: run 'make book' before the site tests "
                    "(or set BOOK_HTML to a built html folder)")
    return HTML


@pytest.fixture(scope="session")
def html_pages(html_dir) -> list[str]:
    return [os.path.join(html_dir, p) for p in built_pages(html_dir)]
