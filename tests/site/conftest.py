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

import browser as browser_mod  # noqa: E402  (tools/browser.py, on sys.path from the line above)


def built_pages(html_dir: str = HTML) -> list[str]:
    """Every HTML page of the built book, relative to its root (found anew on every run)."""
    pages = sorted(glob.glob(os.path.join(html_dir, "**", "*.html"), recursive=True))
    return [os.path.relpath(p, html_dir) for p in pages
            if "/_static/" not in p and "/_sources/" not in p]


def without_typesetting(ctx) -> None:
    """Serve the book's MathJax as an empty script in ``ctx``: for tests whose subject is not the
    math (where a URL lands), so that a page is not typeset before the next navigation can start.
    Every other script of the page runs; the math itself is checked by ``page_visits.py``."""
    import re

    ctx.route(re.compile(r"/_static/mathjax/tex-mml-chtml\.js(\?.*)?$"),
              lambda route: route.fulfill(status=200, content_type="text/javascript", body=""))


@pytest.fixture(scope="session")
def html_dir() -> str:
    if not os.path.exists(os.path.join(HTML, "index.html")):
        pytest.fail(f"no built book in {HTML}: run 'make book' before the site tests "
                    "(or set BOOK_HTML to a built html folder)")
    return HTML


@pytest.fixture(scope="session")
def html_pages(html_dir) -> list[str]:
    return [os.path.join(html_dir, p) for p in built_pages(html_dir)]


@pytest.fixture(scope="session")
def visits(html_dir):
    """Every page loaded once and checked at both widths (page_visits.py): test_browser.py and
    test_narrow.py read the same visits."""
    import page_visits

    return page_visits.visit_all(html_dir)


@pytest.fixture(scope="module")
def browser_page(html_dir):
    """A page of headless Chromium on the built book served from 127.0.0.1, shared by a module:
    ``(base URL, page, console errors, blocked outside requests)``."""
    with browser_mod.serve_directory(html_dir) as base, browser_mod.chromium() as browser:
        blocked: list[str] = []
        ctx = browser_mod.new_context(browser, blocked=blocked)
        page = ctx.new_page()
        errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield base, page, errors, blocked
        ctx.close()
