"""Live recomputation on the website (``make live``): the book served next to a Jupyter server on
127.0.0.1, a live cell started from the page, one of its sliders moved, the figure recomputed by the
kernel. Nothing may leave 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import ROOT, built_pages

HERE = os.path.dirname(os.path.abspath(__file__))
FINGERPRINT_JS = open(os.path.join(HERE, "figure_fingerprint.js"), encoding="utf-8").read()

# Hard imports, not importorskip: a missing Playwright (it is in requirements.txt) or a broken
# tools/browser.py must fail the suite, not turn every browser test into a skip.
import browser as browser_mod  # noqa: E402  (tools/, put on sys.path by conftest.py)
import playwright.sync_api  # noqa: E402, F401


def _live_pages(html_dir):
    return [n for n in built_pages(html_dir)
            if "tag_live" in open(os.path.join(html_dir, n), encoding="utf-8").read()]


@pytest.fixture(scope="module")
def live_server(html_dir):
    proc = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tools", "serve_live.py"), "--html", html_dir,
         "--port", "0", "--jupyter-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    lines = []
    try:
        t0 = time.time()
        while time.time() - t0 < 90:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("LIVE READY"):
                _, _, book, jupyter = line.split()
                yield book, jupyter
                break
        else:
            pytest.fail("make live did not come up:\n" + "".join(lines))
        if not lines or not lines[-1].startswith("LIVE READY"):
            pytest.fail("make live did not come up:\n" + "".join(lines))
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_static_site_explains_live_cells(html_dir):
    """Without a kernel, every live cell says how to make it live (checked in the page source:
    the bar is added by book-live.js, so look for the script and the tag)."""
    pages = _live_pages(html_dir)
    assert pages, ("no cell of the book is tagged 'live': tag the cell of one live_explorer "
                   "figure with `:tags: [live, nbval-ignore-output]` (see README, Live figures)")
    for name in pages:
        text = open(os.path.join(html_dir, name), encoding="utf-8").read()
        assert "book-live.js" in text and "book-live-config.js" in text, name


def test_live_figure_recomputes_in_a_kernel(html_dir, live_server):
    book, jupyter = live_server
    pages = _live_pages(html_dir)
    assert pages, "no cell of the book is tagged 'live'"
    name = pages[0]
    errors: list[str] = []
    with browser_mod.chromium() as browser:
        blocked: list[str] = []
        ctx = browser_mod.new_context(browser, blocked=blocked)
        page = ctx.new_page()
        page.on("console", lambda m: m.type == "error" and errors.append(
            f"{m.text} @ {m.location.get('url', '')}"))
        page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
        page.on("response", lambda r: r.status >= 400 and errors.append(f"{r.url} (HTTP {r.status})"))
        page.goto(book + name, wait_until="load")
        button = page.locator("div.cell.tag_live .book-live-run").first
        button.wait_for(timeout=20000)
        button.click()
        page.wait_for_function("() => document.documentElement.dataset.bookLive", timeout=120000)
        state = page.evaluate("() => document.documentElement.dataset.bookLive")
        status = page.inner_text(".book-live-status")
        assert state == "ready", f"live mode: {state}: {status}; console: {errors}"
        out = page.locator("div.cell.tag_live .book-live-output").first
        handle = out.locator(".noUi-handle").first
        handle.wait_for(timeout=30000)
        # the kernel's first rendering arrives through the Output widget
        t0 = time.time()
        before = out.evaluate(FINGERPRINT_JS)
        while "img:" not in before and time.time() - t0 < 30:
            page.wait_for_timeout(200)
            before = out.evaluate(FINGERPRINT_JS)
        assert "img:" in before or "text:" in before, "the live figure shows nothing"
        handle.scroll_into_view_if_needed()
        handle.focus()
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        after, t0 = before, time.time()
        while (after == before or "img:" not in after and "text:" not in after) and time.time() - t0 < 60:
            page.wait_for_timeout(200)
            after = out.evaluate(FINGERPRINT_JS)
        assert after != before, "moving the slider did not recompute the figure in the kernel"
        ctx.close()
    assert not blocked, "requests to outside hosts (blocked):\n" + "\n".join(blocked)
    assert not errors, "console errors:\n" + "\n".join(errors)
