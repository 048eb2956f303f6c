"""Screenshots of three representative pages, light and dark: ``make screenshots``.

Renders the built book (``_build/html``, or the folder given) in the same headless Chromium as the
browser tests and writes ``docs/screenshots/<name>-<light|dark>.png`` (used in the README):

- ``intro``: the start of the book;
- ``figure``: the first interactive (precomputed) figure, with its sliders;
- ``theorem``: the first theorem of the book (or definition, if there is no theorem yet).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import browser as B  # noqa: E402

VIEWPORT = (1200, 820)


def _pages(html_dir):
    pages = glob.glob(os.path.join(html_dir, "chapters", "*.html"))
    return sorted(os.path.relpath(p, html_dir) for p in pages)


def _first(html_dir, needles):
    """(page, needle) of the first chapter page whose HTML contains one of the needles, in order."""
    for needle in needles:
        for p in _pages(html_dir):
            if needle in open(os.path.join(html_dir, p), encoding="utf-8").read():
                return p, needle
    return None, None


def targets(html_dir):
    out = [("intro", "chapters/intro.html", None)]
    page, _ = _first(html_dir, ["application/vnd.jupyter.widget-view+json"])
    if page:
        out.append(("figure", page, "[data-book-shot]"))
    page, needle = _first(html_dir, ['class="proof theorem', 'class="proof proposition',
                                     'class="proof lemma', 'class="proof definition'])
    if page:
        kind = needle.split('"')[1].split()[-1]
        out.append(("theorem", page, f"div.{kind}"))
    return out


def shoot(html_dir: str, out_dir: str) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    written = []
    with B.serve_directory(html_dir) as base, B.chromium() as browser:
        for mode in ("light", "dark"):
            blocked: list[str] = []
            ctx = B.new_context(browser, blocked=blocked, dark=(mode == "dark"), viewport=VIEWPORT)
            ctx.add_init_script(f"localStorage.setItem('mode', '{mode}');"
                                f"localStorage.setItem('theme', '{mode}');")
            for name, page_name, selector in targets(html_dir):
                page = ctx.new_page()
                page.goto(base + page_name, wait_until="load")
                page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
                if name == "figure":
                    page.wait_for_selector(".widget-subarea .noUi-handle", timeout=30000)
                    page.evaluate("""() => { const s = document.querySelector('.widget-subarea .noUi-handle');
                        s.closest('.widget-subarea').setAttribute('data-book-shot', ''); }""")
                if selector:
                    page.locator(selector).first.evaluate(
                        "e => window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 90)")
                page.wait_for_timeout(600)
                path = os.path.join(out_dir, f"{name}-{mode}.png")
                page.screenshot(path=path)
                written.append(path)
                page.close()
            ctx.close()
            if blocked:
                raise RuntimeError(f"pages tried to reach outside hosts: {blocked}")
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html", nargs="?", default=os.environ.get("BOOK_HTML", os.path.join(ROOT, "_build", "html")))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "screenshots"))
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.html, "index.html")):
        print(f"no built book in {args.html}: run 'make book' first", file=sys.stderr)
        return 2
    for path in shoot(args.html, args.out):
        print(f"wrote {os.path.relpath(path, ROOT)} ({os.path.getsize(path) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
