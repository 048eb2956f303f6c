"""Old chapter URLs and moved sections still work.

Each URL named in ``_config.yml``'s ``book_redirects`` (the file names before chapters were
numbered as displayed) is requested in Chromium, with a fragment, and must land on its new page at
that fragment. Each id named in ``book_anchor_redirects`` (sections that moved to another page,
such as the engine material of Chapter 7 now in the appendix) is requested on its old page and must
land on its new page at that id."""

from __future__ import annotations

import os
import re

import yaml

from conftest import ROOT, without_typesetting

import browser as browser_mod  # noqa: E402  (tools/, put on sys.path by conftest.py)
import redirects  # noqa: E402

with open(os.path.join(ROOT, "_config.yml"), encoding="utf-8") as f:
    REDIRECTS = yaml.safe_load(f)["sphinx"]["config"]["book_redirects"]


def test_every_renamed_chapter_has_a_redirect():
    """The seven files renamed when chapters were numbered as displayed (07b -> 08, 08-13 -> 09-14)."""
    olds = {"07b_beyond", "08_contextual_mappings", "09_hardmax", "10_boltzmann", "11_rank_one",
            "12_memorization", "13_universal_approximation"}
    assert {k.split("/")[-1] for k in REDIRECTS} == olds
    for new in REDIRECTS.values():
        assert os.path.exists(os.path.join(ROOT, new + ".md")), new


def test_old_urls_land_on_the_new_pages(html_dir):
    blocked = []
    with browser_mod.serve_directory(html_dir) as base, browser_mod.chromium() as browser:
        ctx = browser_mod.new_context(browser, blocked=blocked)
        without_typesetting(ctx)
        page = ctx.new_page()
        for old, new in REDIRECTS.items():
            src = open(os.path.join(html_dir, old + ".html"), encoding="utf-8").read()
            assert redirects.is_redirect_page(src), old
            # a fragment that exists on the new page: its first section id
            ids = re.findall(r'<section id="([^"]+)"', open(os.path.join(html_dir, new + ".html"),
                                                             encoding="utf-8").read())
            assert ids, new
            response = page.goto(f"{base}{old}.html#{ids[-1]}")
            assert response is not None and response.status == 200, old
            page.wait_for_url(re.compile(re.escape(f"{base}{new}.html#{ids[-1]}") + "$"), timeout=10000)
            assert page.evaluate("id => !!document.getElementById(id)", ids[-1]), (old, ids[-1])
            # the page was not typeset (without_typesetting is in effect)
            assert not page.evaluate("() => !!(window.MathJax && MathJax.startup)"), new
        ctx.close()
    assert not blocked



with open(os.path.join(ROOT, "_config.yml"), encoding="utf-8") as f:
    ANCHOR_REDIRECTS = yaml.safe_load(f)["sphinx"]["config"]["book_anchor_redirects"]


def page_ids(html_dir: str, docname: str) -> set[str]:
    return redirects.page_ids(os.path.join(html_dir, docname + ".html"))


def test_moved_sections_are_on_their_new_page_only(html_dir):
    """Every moved id is an id of its new page and no longer one of the old page, whose HTML
    carries the script that forwards it."""
    assert "chapters/07_experiments" in ANCHOR_REDIRECTS
    for old, entry in ANCHOR_REDIRECTS.items():
        new_ids, old_ids = page_ids(html_dir, entry["to"]), page_ids(html_dir, old)
        missing = [a for a in entry["anchors"] if a not in new_ids]
        assert not missing, f"{old} -> {entry['to']}: ids not on the new page: {missing}"
        still = [a for a in entry["anchors"] if a in old_ids]
        assert not still, f"{old}: ids still on the old page (they would not redirect): {still}"
        with open(os.path.join(html_dir, old + ".html"), encoding="utf-8") as f:
            assert redirects.anchor_script(old, entry["to"], entry["anchors"]) in f.read(), old


def test_moved_sections_redirect_in_the_browser(html_dir):
    blocked = []
    with browser_mod.serve_directory(html_dir) as base, browser_mod.chromium() as browser:
        ctx = browser_mod.new_context(browser, blocked=blocked)
        without_typesetting(ctx)
        page = ctx.new_page()
        for old, entry in ANCHOR_REDIRECTS.items():
            kept = sorted(page_ids(html_dir, old) & {"summary", "exercises"})
            for anchor in entry["anchors"]:
                # the forwarding script runs in the old page's head: no need to wait for the old
                # page's load (its math, widgets) before the new page's URL is awaited
                page.goto(f"{base}{old}.html#{anchor}", wait_until="commit")
                page.wait_for_url(re.compile(re.escape(f"{base}{entry['to']}.html#{anchor}") + "$"),
                                  timeout=10000, wait_until="commit")
                # the section is on the new page (parsed; its math need not be typeset yet)
                page.wait_for_selector(f"[id='{anchor}']", state="attached", timeout=10000)
                assert page.evaluate("id => !!document.getElementById(id)", anchor), (old, anchor)
            for anchor in kept:                  # an id still on the old page stays there
                page.goto(f"{base}{old}.html#{anchor}")
                # the script marks the page once it has decided to keep the reader on it (a page
                # it forwards never gets the mark, so this wait fails instead of passing late)
                page.wait_for_selector(f"html[data-book-anchor-kept='{anchor}']", state="attached",
                                       timeout=10000)
                assert page.url == f"{base}{old}.html#{anchor}", (old, anchor, page.url)
            # a fragment changed on the old page (a link followed there) is forwarded too
            page.goto(f"{base}{old}.html")
            page.evaluate("id => { location.hash = id; }", entry["anchors"][0])
            page.wait_for_url(re.compile(re.escape(f"{base}{entry['to']}.html#{entry['anchors'][0]}")
                                         + "$"), timeout=10000)
        ctx.close()
    assert not blocked
