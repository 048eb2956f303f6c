"""Fixtures for tests of the built website (_build/html); `make book` must have run first."""

from __future__ import annotations

import glob
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HTML = os.path.join(ROOT, "_build", "html")


@pytest.fixture(scope="session")
def html_dir() -> str:
    if not os.path.exists(os.path.join(HTML, "index.html")):
        pytest.fail("no built book in _build/html: run 'make book' before the site tests")
    return HTML


@pytest.fixture(scope="session")
def html_pages(html_dir) -> list[str]:
    pages = sorted(glob.glob(os.path.join(html_dir, "**", "*.html"), recursive=True))
    return [p for p in pages if "/_static/" not in p and "/_sources/" not in p]
