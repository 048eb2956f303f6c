"""The website as readers use it: every built page opened in headless Chromium (Debian's
``chromium`` driven by Playwright; no browser download), served on 127.0.0.1.

For every page: no console errors, no request leaves 127.0.0.1, all math typeset (no raw TeX),
every widget view rendered, every image loaded, every theorem/equation/citation reference
resolved, nothing wider than its column at a laptop's 1280 px and at a phone's 390 px (each page is
loaded once and checked at both widths: tests/site/test_narrow.py has the phone-width tests). For
every interactive figure, moving each of its sliders changes what it displays.
Reader features are checked here too: search, dark mode, .ipynb downloads, the run panel, the
status page. The pages are found anew on every run, so new chapters are covered automatically.
"""

from __future__ import annotations

import glob
import json
import os
import re
from urllib.parse import urldefrag, urlsplit

import pytest

from conftest import HTML, built_pages
from page_visits import CHECKS_JS, VIEWPORT, PageVisit

PAGES = built_pages()


def _visit(visits, name) -> PageVisit:
    assert name in visits, f"{name} was not visited"
    return visits[name]


@pytest.mark.parametrize("name", PAGES)
def test_no_console_errors_or_failed_requests(visits, name):
    v = _visit(visits, name)
    assert not v.console_errors, "console errors:\n" + "\n".join(v.console_errors)
    assert not v.failed, "failed requests:\n" + "\n".join(v.failed)


@pytest.mark.parametrize("name", PAGES)
def test_no_request_leaves_loopback(visits, name):
    v = _visit(visits, name)
    assert not v.external, "requests to outside hosts (blocked):\n" + "\n".join(v.external)


@pytest.mark.parametrize("name", PAGES)
def test_math_is_typeset(visits, name):
    r = _visit(visits, name).report
    assert not r["rawTex"], "raw TeX left in the page:\n" + "\n".join(r["rawTex"][:20])
    assert not r["mathErrors"], "MathJax errors:\n" + "\n".join(r["mathErrors"])
    assert r["typeset"] == r["mathElements"]


@pytest.mark.parametrize("name", PAGES)
def test_widgets_render(visits, name):
    r = _visit(visits, name).report
    assert not r["widgetsUnrendered"], (
        f"{len(r['widgetsUnrendered'])} of {r['widgetViews']} widget views did not render:\n"
        + "\n".join(r["widgetsUnrendered"]))


@pytest.mark.parametrize("name", PAGES)
def test_images_load(visits, name):
    r = _visit(visits, name).report
    assert not r["brokenImages"], "images that did not load:\n" + "\n".join(r["brokenImages"])


@pytest.mark.parametrize("name", PAGES)
def test_references_resolve(visits, name):
    """Every internal link of the page body (theorems, equations, citations, sections) lands on
    an existing element of an existing page, and no cross-reference was left unresolved."""
    v = _visit(visits, name)
    r = v.report
    assert not r["unresolved"], "unresolved cross-references: " + ", ".join(r["unresolved"])
    ids = {n: set(visits[n].report["ids"]) for n in visits}
    base = None
    problems = []
    for ref in r["refs"]:
        url, frag = urldefrag(ref["href"])
        path = urlsplit(url).path.lstrip("/")
        if base is None:
            base = ""
        target = path or name
        if target.endswith("/"):
            target += "index.html"
        if not target.endswith(".html"):
            if not os.path.exists(os.path.join(HTML, target)):
                problems.append(f"{ref['kind']} {ref['text']!r} -> {ref['href']}: no such file")
            continue
        if target not in ids:
            problems.append(f"{ref['kind']} {ref['text']!r} -> {ref['href']}: no such page")
        elif frag and frag not in ids[target]:
            problems.append(f"{ref['kind']} {ref['text']!r} -> {ref['href']}: no #{frag} there")
        if ref["kind"] in ("theorem", "equation") and not re.search(r"\d", ref["text"]):
            problems.append(f"{ref['kind']} reference {ref['text']!r} shows no number")
        if ref["kind"] == "citation" and "???" in ref["text"]:
            problems.append(f"citation {ref['text']!r} did not resolve")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", PAGES)
def test_nothing_overflows_at_1280px(visits, name):
    """No display equation, table, widget or output wider than its column unless it scrolls in a
    box of its own (tests/site/overflow_check.js; the same check at 390 px: test_narrow.py)."""
    bad = _visit(visits, name).overflow
    assert not bad, (f"{len(bad)} element(s) wider than their column at {VIEWPORT[0]} px and "
                     "without a scroll bar of their own:\n"
                     + "\n".join(f"  {b['kind']} {b['width']} px in {b['room']} px "
                                 f"({b.get('container', 'itself')}): {b['what']}" for b in bad))


@pytest.mark.parametrize("name", PAGES)
def test_interactive_figures_respond(visits, name):
    v = _visit(visits, name)
    dead = [f"figure {i}, {control} ({detail}): the displayed output did not change"
            for i, control, changed, detail in v.figures if not changed]
    assert not dead, "\n".join(dead)
    moved = {i for i, *_ in v.figures}
    static = [f for f in v.report["figures"] if not f["live"] and not f["kernelOutput"]]
    assert moved == {f["index"] for f in static}, "some interactive figures have no control to move"


@pytest.mark.parametrize("name", PAGES)
def test_live_cells_are_marked(visits, name):
    """A figure that needs a kernel (an Output widget, e.g. sattn.live_explorer) must be in
    a cell tagged ``live``: the page then says so and ``make live`` recomputes it."""
    figs = _visit(visits, name).report["figures"]
    unmarked = [f for f in figs if f["kernelOutput"] and not f["live"]]
    assert not unmarked, (f"{len(unmarked)} figure(s) recompute only in a kernel but their cell is "
                          "not tagged 'live' (add `:tags: [live, nbval-ignore-output]`)")


@pytest.mark.parametrize("name", PAGES)
def test_static_copies_of_live_figures_are_switched_off(visits, name):
    """On the static website a live figure's controls would move and change nothing: they are
    switched off, and the cell says it is a static copy (book_static/book-live.js)."""
    figs = [f for f in _visit(visits, name).report["figures"] if f["live"]]
    bad = [f"figure {f['index']}: {f['enabled']} control(s) still operable" for f in figs if f["enabled"]]
    bad += [f"figure {f['index']}: not labelled a static copy ({f['liveLabel']!r})"
            for f in figs if "static copy" not in f["liveLabel"]]
    assert not bad, "\n".join(bad)


def test_book_covers_theorems_equations_citations(visits):
    kinds = {ref["kind"] for v in visits.values() for ref in v.report["refs"] if not ref["nav"]}
    assert {"theorem", "equation", "citation"} <= kinds, kinds


def test_the_suite_saw_interactive_figures(visits):
    assert any(v.figures for v in visits.values()), "no interactive figure was exercised"


# ---------------------------------------------------------------------------------------------
# Reader features
# ---------------------------------------------------------------------------------------------

# browser_page: tests/site/conftest.py

@pytest.fixture()
def reader(browser_page):
    """The shared reader page, with its error and blocked-request lists emptied for this test."""
    base, page, errors, blocked = browser_page
    errors.clear()
    blocked.clear()
    return browser_page


def _chapters(html_dir):
    """Pages built from notebooks (they carry the run panel)."""
    out = []
    for name in built_pages(html_dir):
        text = open(os.path.join(html_dir, name), encoding="utf-8").read()
        if 'class="book-run-panel"' in text:
            out.append(name)
    return out


def test_search_finds_chapters(reader):
    base, page, errors, blocked = reader
    page.goto(base + "search.html?q=attention", wait_until="load")
    page.wait_for_selector("#search-results ul.search li", timeout=20000)
    hits = page.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.href)")
    assert any("/chapters/" in h for h in hits), hits
    assert not errors and not blocked, (errors, blocked)


def test_dark_mode_keeps_figures_readable(reader, html_dir):
    base, page, errors, blocked = reader
    target = next((n for n in _chapters(html_dir)
                   if "<img" in open(os.path.join(html_dir, n), encoding="utf-8").read()), None)
    assert target, "no chapter with a figure"
    page.goto(base + target, wait_until="load")
    page.evaluate(CHECKS_JS)
    page.click("button.theme-switch-button")  # auto/light -> next mode; set dark explicitly below
    page.evaluate("() => { document.documentElement.dataset.mode = 'dark';"
                  " document.documentElement.dataset.theme = 'dark'; }")
    page.wait_for_timeout(200)
    info = page.evaluate("""() => {
      const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
      const lum = (c) => { const [r, g, b] = rgb(c).slice(0, 3).map(v => { v /= 255;
          return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
      const bgOf = (el) => { for (let e = el; e; e = e.parentElement) {
          const c = getComputedStyle(e).backgroundColor, a = rgb(c)[3];
          if (a === undefined || a > 0.5) return c; } return "rgb(255, 255, 255)"; };
      const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05); };
      const imgs = Array.from(document.querySelectorAll('.cell_output img')).filter(i => i.checkVisibility());
      const texts = Array.from(document.querySelectorAll(
          '.widget-label, .widget-readout, .widget-html-content, main p')).filter(e => e.checkVisibility() && e.innerText.trim());
      return { body: lum(getComputedStyle(document.body).backgroundColor),
               imgBg: imgs.map(i => getComputedStyle(i).backgroundColor),
               low: texts.map(e => [e.className || e.tagName, contrast(getComputedStyle(e).color, bgOf(e))])
                         .filter(([_, c]) => c < 4.5) };
    }""")
    assert info["body"] < 0.1, f"the page did not turn dark (background luminance {info['body']:.2f})"
    assert info["imgBg"] and all(bg == "rgb(255, 255, 255)" for bg in info["imgBg"]), info["imgBg"]
    assert not info["low"], f"text below WCAG contrast 4.5 in dark mode: {info['low'][:10]}"
    assert not errors and not blocked, (errors, blocked)


def test_each_chapter_offers_its_notebook_and_run_instructions(visits, html_dir):
    chapters = _chapters(html_dir)
    assert chapters, "no chapter page carries the 'Run this chapter yourself' panel"
    for name in chapters:
        offer = _visit(visits, name).notebook
        assert offer, f"{name}: its download and run panel were not read"
        assert offer["link"], f"{name}: no .ipynb download link"
        assert offer["status"] == 200, f"{name}: {offer['link']} -> HTTP {offer['status']}"
        assert offer["nbformat"] == 4 and offer["code_cells"] > 0, (name, offer)
        assert offer["names_lab"], (name, offer["panel"])


def test_status_page_lists_versions_and_execution_times(reader, html_dir):
    import importlib.metadata as md

    base, page, errors, blocked = reader
    page.goto(base + "chapters/status.html", wait_until="load")
    text = page.inner_text("main")
    for pkg in ("numpy", "matplotlib", "jupyter-book"):
        assert re.search(rf"{re.escape(pkg)}\s+{re.escape(md.version(pkg))}", text), pkg
    # the execution table: one row per executed chapter, with a run time in seconds
    rows = page.eval_on_selector_all("table tr", "rs => rs.map(r => r.innerText)")
    # a row of a notebook: its name and a run time in seconds (cells may be split by tabs or lines)
    chapter_rows = [r for r in rows if re.search(r"chapters/\w+", r) and re.search(r"\d+\.\d+", r)]
    assert chapter_rows, "no chapter in the execution table"
    for name in _chapters(html_dir):
        stem = os.path.splitext(os.path.basename(name))[0]
        assert any(stem in r for r in chapter_rows), f"{stem} missing from the execution table"
    assert not errors and not blocked, (errors, blocked)


def test_status_page_shows_the_reliability_figures(reader):
    """Every committed figure (data/reliability/, written by `make status`) is on the status page
    with its counts; the build fails without them, so there is always something to show."""
    import book_reader

    base, page, errors, blocked = reader
    page.goto(base + "chapters/status.html", wait_until="load")
    figures = [json.load(open(p, encoding="utf-8"))
               for p in sorted(glob.glob(os.path.join(book_reader.reliability_dir(), "*.json")))]
    shown = page.eval_on_selector_all(
        "tr[data-reliability]", "rs => rs.map(r => [r.dataset.reliability, +r.dataset.passed, "
        "+r.dataset.tried, r.innerText])")
    assert figures and "live-attacks" in {f["name"] for f in figures}
    assert {s[0] for s in shown} == {f["name"] for f in figures}
    for name, passed, tried, text in shown:
        fig = next(f for f in figures if f["name"] == name)
        assert (passed, tried) == (fig["passed"], fig["tried"]), name
        assert f'{fig["passed"]:,} of {fig["tried"]:,}' in text, (name, text)
    assert not errors and not blocked, (errors, blocked)
