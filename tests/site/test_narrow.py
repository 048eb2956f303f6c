"""Every page at a phone's width (390 px): the page itself is no wider than the window
(tests/site/page_overflow.js: the document's scrollWidth against its clientWidth, so nothing at all
makes a reader scroll the whole page sideways -- a long inline literal, a table, a code line), and
no display equation, table, widget, output image or printed output sticks out of its column unless
it has a scroll bar of its own (tests/site/overflow_check.js). Mathematics is held to more
(tests/site/math_fit.js), at a desktop's 1280 x 900 and at a phone's 390 x 844: no display equation
is wider than its column even where it could scroll in its own box (a reader sees half an equation
and no cue that the rest lies beyond the edge), and no inline formula reaches past its paragraph.
The pages are visited by tests/site/page_visits.py (shared with test_browser.py): loaded at
1280 px and narrowed to 390 px for the overflow checks; the formulas of a phone are checked on the
page loaded at 390 px, since MathJax breaks lines for the width it finds when it typesets. Every HTML page of
the build is checked (found anew on each run), except the redirect stubs of moved pages, which hold
nothing but a meta refresh."""

from __future__ import annotations

import os
import re

import pytest

from conftest import built_pages
from page_visits import CHECKS_JS, MATH_JS, NARROW, VIEWPORT

import browser as browser_mod  # noqa: E402  (tools/, put on sys.path by conftest.py)

HERE = os.path.dirname(os.path.abspath(__file__))
OVERFLOW_JS = open(os.path.join(HERE, "overflow_check.js"), encoding="utf-8").read()
PAGE_JS = open(os.path.join(HERE, "page_overflow.js"), encoding="utf-8").read()
WIDTHS = tuple(w for w, _ in NARROW)
#: the windows in which mathematics must fit: a desktop and a phone
MATH_WIDTHS = (VIEWPORT[0], *WIDTHS)
REFRESH = re.compile(r'http-equiv="refresh"', re.I)


def _content_pages(html_dir=None):
    names = built_pages(html_dir) if html_dir else built_pages()
    from conftest import HTML
    return [n for n in names
            if not REFRESH.search(open(os.path.join(html_dir or HTML, n), encoding="utf-8").read())]


PAGES = _content_pages()


def _narrow(visits, width, name) -> dict:
    assert name in visits and width in visits[name].narrow, f"{name} was not checked at {width} px"
    return visits[name].narrow[width]


def _fit(visits, width, name) -> dict:
    assert name in visits and width in visits[name].fit, f"{name}: mathematics not checked at {width} px"
    return visits[name].fit[width]


def test_every_page_is_checked(html_dir):
    """Not a sample: every page of the build but the redirect stubs."""
    everything = built_pages(html_dir)
    stubs = [n for n in everything if REFRESH.search(open(os.path.join(html_dir, n), encoding="utf-8").read())]
    assert sorted(PAGES) == sorted(set(everything) - set(stubs))
    assert len(PAGES) >= 20, PAGES


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_page_no_wider_than_the_window(visits, width, name):
    bad = _narrow(visits, width, name)["page"]
    assert not bad, (f"{name} at {width} px is {bad['width']} px wide ({bad['room']} px of window): "
                     "the reader scrolls the whole page sideways. Reaching beyond the edge:\n  "
                     + "\n  ".join(bad["culprits"]))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_nothing_overflows_its_column(visits, width, name):
    bad = _narrow(visits, width, name)["column"]
    assert not bad, (f"{name} at {width} px: {len(bad)} element(s) wider than their column and "
                     "without a scroll bar of their own:\n"
                     + "\n".join(f"  {b['kind']} {b['width']} px in {b['room']} px "
                                 f"({b.get('container', 'itself')}): {b['what']}" for b in bad))


@pytest.mark.parametrize("width", MATH_WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_math_fits_its_column(visits, width, name):
    bad = _fit(visits, width, name)["math"]
    assert not bad, (f"{name} at {width} px: {len(bad)} formula(s) wider than their column (cut off or "
                     "reachable only by scrolling the formula sideways); write a long display as "
                     "several aligned lines:\n"
                     + "\n".join(f"  {b['kind']} {b['width']} px in {b['room']} px: {b['what']}"
                                 for b in bad))


@pytest.mark.parametrize("width", MATH_WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_multi_panel_figures_stack_on_a_phone(visits, width, name):
    """A figure of several panels side by side shrinks to a third of a phone's width, its tick
    labels unreadable: sattn.panel_figure gives the phone the panels stacked, at full width."""
    want = "narrow" if width <= 600 else "wide"
    panels = _fit(visits, width, name)["panels"]
    bad = [p for p in panels if p["shown"] != want]
    assert not bad, f"{name} at {width} px shows the wrong layout (want {want}): {bad}"
    if want == "narrow":
        small = [p for p in panels if p["width"] < 0.8 * p["natural"]]
        assert not small, f"{name}: stacked panels shrunk below 80% of their size: {small}"


def test_the_math_check_sees_a_wide_formula(html_dir):
    """The check itself: a display equation that cannot break (one long word) and scrolls in
    its own box is reported at a phone's width, and so is inline math pushed past the column."""
    with browser_mod.serve_directory(html_dir) as base, browser_mod.chromium() as browser:
        ctx = browser_mod.new_context(browser, viewport=(390, 844))
        page = ctx.new_page()
        page.goto(base + "chapters/notation.html", wait_until="load")
        page.evaluate(CHECKS_JS)
        assert not page.evaluate(MATH_JS)
        page.evaluate("""async () => {
            const a = document.querySelector("article.bd-article p");
            a.insertAdjacentHTML("afterend", '<div class="math" id="wide-eq">\\\\[\\\\text{' +
                "x".repeat(100) + '}\\\\]</div>' +
                '<p id="wide-inline" style="white-space: nowrap">' + "word ".repeat(30) +
                '\\\\(x_1 x_2 x_3\\\\)</p>');
            await MathJax.typesetPromise([document.getElementById("wide-eq"),
                                          document.getElementById("wide-inline")]);
            document.querySelector("#wide-eq mjx-container").style.overflowX = "auto";
        }""")
        found = page.evaluate(MATH_JS)
        assert any(b["kind"] == "display" and b["what"].startswith("#wide-eq") for b in found), found
        assert any(b["kind"] == "inline" and b["what"].startswith("#wide-inline") for b in found), found
        ctx.close()


def test_the_overflow_check_sees_an_overflow(html_dir):
    """The check itself: a table wider than the column is reported, the same table in a box that
    scrolls is not."""
    with browser_mod.serve_directory(html_dir) as base, browser_mod.chromium() as browser:
        ctx = browser_mod.new_context(browser, viewport=(390, 844))
        page = ctx.new_page()
        page.goto(base + "chapters/intro.html", wait_until="load")
        page.evaluate("""() => { const a = document.querySelector("article.bd-article");
            a.insertAdjacentHTML("beforeend", '<table id="wide"><tr><td style="min-width:900px">x</td></tr></table>'); }""")
        found = page.evaluate(OVERFLOW_JS)
        assert any(b["kind"] == "table" and "#wide" in b["what"] for b in found), found
        page.evaluate("""() => { const t = document.getElementById("wide"), d = document.createElement("div");
            d.style.overflowX = "auto"; t.replaceWith(d); d.appendChild(t); }""")
        assert not page.evaluate(OVERFLOW_JS)
        assert page.evaluate(PAGE_JS) is None
        # a long unbreakable word widens the page itself: the page check sees it
        page.evaluate("""() => document.querySelector("article.bd-article p").insertAdjacentHTML(
            "beforeend", '<span id="long" style="white-space: nowrap">' + "x".repeat(400) + '</span>')""")
        found = page.evaluate(PAGE_JS)
        assert found and found["width"] > 390 and any("#long" in c for c in found["culprits"]), found
        ctx.close()
