"""Internal link check of the built book (no network): every relative ``href``/``src`` of every
page points at an existing file, and every ``#fragment`` at an existing id of its target page.

    python tools/linkcheck.py [_build/html]      (make linkcheck; also run by make test)

External links (http/https/mailto) are listed with a count but not fetched: the book must work
offline, and their targets are not ours to test.
"""

from __future__ import annotations

import glob
import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urlsplit

SKIP_SCHEMES = ("http", "https", "mailto", "data", "javascript", "blob", "tel")


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "link", "script", "img", "iframe", "source"):
                self.links.append((tag, a[key]))


def pages_of(html_dir: str) -> list[str]:
    pages = sorted(glob.glob(os.path.join(html_dir, "**", "*.html"), recursive=True))
    return [p for p in pages if "/_static/" not in p and "/_sources/" not in p]


def check(html_dir: str) -> tuple[list[str], int, int]:
    """Return (problems, number of internal links checked, number of external links seen)."""
    html_dir = os.path.abspath(html_dir)
    parsed: dict[str, _Collector] = {}

    def parse(path):
        if path not in parsed:
            c = _Collector()
            c.feed(open(path, encoding="utf-8").read())
            parsed[path] = c
        return parsed[path]

    problems, internal, external = [], 0, 0
    for page in pages_of(html_dir):
        for tag, link in parse(page).links:
            scheme = urlsplit(link).scheme
            if scheme in SKIP_SCHEMES or link.startswith("//"):
                external += scheme in ("http", "https") or link.startswith("//")
                continue
            url, frag = urldefrag(link)
            path = unquote(urlsplit(url).path)
            target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            internal += 1
            where = f"{os.path.relpath(page, html_dir)}: {tag} {link}"
            if not target.startswith(html_dir + os.sep) and target != html_dir:
                problems.append(f"{where}: points outside the book")
            elif not os.path.exists(target):
                problems.append(f"{where}: no such file")
            elif frag and target.endswith(".html") and frag not in parse(target).ids:
                problems.append(f"{where}: no element with id {frag!r}")
    return problems, internal, external


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    html_dir = argv[0] if argv else os.environ.get("BOOK_HTML", "_build/html")
    if not os.path.exists(os.path.join(html_dir, "index.html")):
        print(f"no built book in {html_dir}: run 'make book' first", file=sys.stderr)
        return 2
    problems, internal, external = check(html_dir)
    for p in problems:
        print(p)
    print(f"linkcheck: {len(pages_of(html_dir))} pages, {internal} internal links checked, "
          f"{len(problems)} broken; {external} external links not fetched")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
