"""Headless Chromium for the book's browser tests and screenshots (no browser download).

Playwright for Python drives Debian's ``chromium`` (``/usr/bin/chromium``, or ``$BOOK_CHROMIUM``);
the pages are served from a folder on 127.0.0.1 by a small threaded HTTP server, and every request
that would leave 127.0.0.1 is blocked and recorded. Used by ``tests/site/test_browser.py``,
``tools/screenshots.py`` and ``make live``'s test.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from typing import Iterator
from urllib.parse import urlsplit

CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
]
LOOPBACK = {"127.0.0.1"}


def chromium_path() -> str:
    """The system Chromium (Debian package ``chromium``); raises if it is not installed."""
    path = os.environ.get("BOOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"no Chromium at {path!r}: install Debian's package (apt-get install -y chromium) "
            "or set BOOK_CHROMIUM to the browser binary")
    return path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm",
                      ".ipynb": "application/x-ipynb+json", ".json": "application/json"}

    def log_message(self, *args):  # keep test output clean
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


@contextlib.contextmanager
def serve_directory(directory: str, *, port: int = 0, handler=None) -> Iterator[str]:
    """Serve ``directory`` on http://127.0.0.1:PORT/ in a thread; yields the base URL."""
    directory = os.path.abspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory to serve does not exist: {directory!r}")
    handler = functools.partial(handler or _QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def is_local(url: str) -> bool:
    """True for URLs that stay on this machine's loopback (or never touch the network)."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "javascript", "chrome-error"):
        return True
    return parts.hostname in LOOPBACK


@contextlib.contextmanager
def chromium(*, headless: bool = True) -> Iterator[object]:
    """A Playwright ``Browser`` on the system Chromium; closed on exit.

    Playwright starts Chromium with a new empty profile in a temporary folder each time (it
    refuses a ``--user-data-dir`` flag), so no state carries over between runs.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=headless,
                                     args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def new_context(browser, *, blocked: list[str] | None = None, dark: bool = False,
                viewport=(1200, 900)):
    """A browser context that aborts (and records in ``blocked``) every non-loopback request."""
    ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                              color_scheme="dark" if dark else "light",
                              service_workers="block")

    def guard(route):
        url = route.request.url
        if is_local(url):
            route.continue_()
        else:
            if blocked is not None:
                blocked.append(url)
            route.abort("blockedbyclient")

    ctx.route("**/*", guard)
    return ctx
