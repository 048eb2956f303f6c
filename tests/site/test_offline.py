"""The built website loads nothing from outside: every script, stylesheet, font and image it
references is served by the book itself."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser

EXTERNAL = re.compile(r"^\s*(https?:)?//", re.I)


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("src"):
            self.refs.append(("script", a["src"]))
        elif tag == "link" and a.get("href"):
            rel = (a.get("rel") or "").lower()
            if any(r in rel for r in ("stylesheet", "preload", "icon", "modulepreload", "prefetch")):
                self.refs.append((f"link[{rel}]", a["href"]))
        elif tag in ("img", "iframe", "source", "audio", "video") and a.get("src"):
            self.refs.append((tag, a["src"]))


def test_pages_exist(html_pages):
    names = {os.path.basename(p) for p in html_pages}
    assert "index.html" in names and "bibliography.html" in names


def test_no_external_script_style_or_font(html_pages):
    offenders = []
    for page in html_pages:
        text = open(page, encoding="utf-8").read()
        parser = _Refs()
        parser.feed(text)
        offenders += [f"{os.path.basename(page)}: {kind} {url}" for kind, url in parser.refs
                      if EXTERNAL.match(url)]
        # Widget pages must not be told to fetch widget modules from a CDN.
        if "data-jupyter-widgets-cdn" in text:
            offenders.append(f"{os.path.basename(page)}: data-jupyter-widgets-cdn attribute")
    assert not offenders, "external resources referenced:\n" + "\n".join(offenders)


def test_css_has_no_external_imports_or_fonts(html_dir):
    offenders = []
    for root, _, files in os.walk(os.path.join(html_dir, "_static")):
        for f in files:
            if f.endswith(".css"):
                path = os.path.join(root, f)
                css = open(path, encoding="utf-8", errors="replace").read()
                for m in re.finditer(r"(@import\s+url\(|url\()\s*['\"]?(https?:)?//", css):
                    offenders.append(f"{os.path.relpath(path, html_dir)}: {css[m.start():m.start()+80]}")
    assert not offenders, "stylesheets load from outside:\n" + "\n".join(offenders)


def test_vendored_assets_are_served(html_dir):
    for rel in ("_static/widgets/embed-amd.js", "_static/widgets/require.js",
                "_static/widgets/require-config.js", "_static/mathjax/tex-mml-chtml.js"):
        assert os.path.exists(os.path.join(html_dir, rel)), f"{rel} missing from the built site"


def test_mathjax_is_local_on_math_pages(html_pages):
    seen = False
    for page in html_pages:
        text = open(page, encoding="utf-8").read()
        srcs = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', text, re.I)
        if srcs:
            seen = True
            assert all(not EXTERNAL.match(s) and "_static/mathjax/" in s for s in srcs), (page, srcs)
    assert seen, "no page loads MathJax; the book's math would not render"


def test_no_folder_of_the_build_machine_in_pages(html_pages):
    """Printed outputs and tracebacks name sattn/x.py, not the checkout's folder (tools/book_reader.py
    applies sattn.presentation.lab.portable_text to every output block)."""
    from conftest import ROOT
    bad = [os.path.basename(p) for p in html_pages if ROOT + "/sattn/" in open(p, encoding="utf-8").read()]
    assert not bad, f"pages naming the checkout's folder {ROOT}: {bad}"
