"""Old chapter URLs still work: each one named in ``_config.yml``'s ``book_redirects`` (the file
names before chapters were numbered as displayed) is requested in Chromium, with a fragment, and
must land on its new page at that fragment."""

from __future__ import annotations

import os
import re

import yaml

from conftest import ROOT

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
        ctx.close()
    assert not blocked



ANCHORS = yaml.safe_load(open(os.path.join(ROOT, "_config.yml"), encoding="utf-8"))[
    "sphinx"]["config"]["book_anchor_redirects"]


def test_moved_sections_exist_on_their_new_pages():
    for old, spec in ANCHORS.items():
        new_src = open(os.path.join(ROOT, spec["target"] + ".md"), encoding="utf-8").read()
        old_src = open(os.path.join(ROOT, old + ".md"), encoding="utf-8").read()
        for anchor in spec["anchors"]:
            words = anchor.replace("-", " ")
            assert (f"({anchor})=" in new_src or f"name: {anchor}" in new_src
                    or words in " ".join(re.sub(r"[^a-z0-9]", " ", new_src.lower()).split())), anchor
            assert f"({anchor})=" not in old_src and f"name: {anchor}" not in old_src, anchor


def test_links_to_moved_sections_land_on_the_new_page(html_dir):
    blocked = []
    with browser_mod.serve_directory(html_dir) as base, browser_mod.chromium() as browser:
        ctx = browser_mod.new_context(browser, blocked=blocked)
        page = ctx.new_page()
        for old, spec in ANCHORS.items():
            for anchor in spec["anchors"][:3]:
                response = page.goto(f"{base}{old}.html#{anchor}")
                assert response is not None and response.status == 200, old
                page.wait_for_url(re.compile(re.escape(f"{base}{spec['target']}.html#{anchor}")
                                             + "$"), timeout=10000)
                assert page.evaluate("id => !!document.getElementById(id)", anchor), anchor
            page.goto(f"{base}{old}.html#one-curve")      # a section that stayed
            assert page.url.endswith(f"{old}.html#one-curve")
        ctx.close()
    assert not blocked
