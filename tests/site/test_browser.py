"""The website as readers use it: every built page opened in headless Chromium (Debian's
``chromium`` driven by Playwright; no browser download), served on 127.0.0.1.

For every page: no console errors, no request leaves 127.0.0.1, all math typeset (no raw TeX),
every widget view rendered, every image loaded, every theorem/equation/citation reference
resolved. For every interactive figure, moving each of its sliders changes what it displays.
Reader features are checked here too: search, dark mode, .ipynb downloads, the run panel, the
status page. The pages are found anew on every run, so new chapters are covered automatically.
"""

from __future__ import annotations

import glob
import json
import os
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urlsplit

import pytest

from conftest import HTML, built_pages

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS_JS = open(os.path.join(HERE, "browser_checks.js"), encoding="utf-8").read()
FINGERPRINT_JS = open(os.path.join(HERE, "figure_fingerprint.js"), encoding="utf-8").read()
OVERFLOW_JS = open(os.path.join(HERE, "overflow_check.js"), encoding="utf-8").read()
#: The window every page is opened in (a laptop); tests/site/test_narrow.py repeats the overflow
#: check at a phone's 390 px.
VIEWPORT = (1280, 900)
PAGES = built_pages()
REFRESH = re.compile(r'<meta\s+http-equiv="refresh"\s+content="\d+;\s*url=([^"]+)"', re.I)
EMPTY_REPORT = {"mathErrors": [], "rawTex": [], "widgetViews": 0, "widgetsUnrendered": [],
                "images": 0, "brokenImages": [], "refs": [], "unresolved": [], "ids": [],
                "figures": [], "mathElements": 0, "typeset": 0}

# Hard imports, not importorskip: a missing Playwright (it is in requirements.txt) or a broken
# tools/browser.py must fail the suite, not turn every browser test into a skip.
import browser as browser_mod  # noqa: E402  (tools/, put on sys.path by conftest.py)
import playwright.sync_api  # noqa: E402, F401


@dataclass
class PageVisit:
    name: str
    console_errors: list = field(default_factory=list)
    external: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    report: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)  # (figure index, control, changed?, detail)
    overflow: list = field(default_factory=list)  # elements wider than their column (no scroll bar)
    notebook: dict = field(default_factory=dict)  # a chapter's .ipynb download and run panel
    seconds: float = 0.0


def _move_controls(page, fig: dict) -> list:
    """Move every slider (keyboard: ArrowRight, or ArrowLeft at the end) and dropdown of a figure;
    return (control, changed, detail) for each."""
    root = page.locator(f'[data-book-figure="{fig["index"]}"]')
    results = []
    handles = root.locator(".noUi-handle")
    for k in range(handles.count()):
        before = root.evaluate(FINGERPRINT_JS)
        h = handles.nth(k)
        h.scroll_into_view_if_needed()
        at_max = h.get_attribute("aria-valuenow") == h.get_attribute("aria-valuemax")
        h.focus()
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        after, t0 = before, time.time()
        while after == before and time.time() - t0 < 5:
            page.wait_for_timeout(100)
            after = root.evaluate(FINGERPRINT_JS)
        results.append((f"slider {k}", after != before and bool(after),
                        f"value {h.get_attribute('aria-valuenow')}"))
    selects = root.locator(".widget-dropdown select")
    for k in range(selects.count()):
        before = root.evaluate(FINGERPRINT_JS)
        sel = selects.nth(k)
        options = sel.evaluate("s => Array.from(s.options).map(o => o.value)")
        current = sel.input_value()
        other = next((o for o in options if o != current), None)
        if other is None:
            continue
        sel.select_option(other)
        after, t0 = before, time.time()
        while after == before and time.time() - t0 < 5:
            page.wait_for_timeout(100)
            after = root.evaluate(FINGERPRINT_JS)
        results.append((f"dropdown {k}", after != before and bool(after), f"value {other}"))
    return results


@pytest.fixture(scope="module")
def visits(html_dir) -> dict[str, PageVisit]:
    """Open every page once (one browser, one page after the other) and record what happened."""
    out: dict[str, PageVisit] = {}
    with browser_mod.serve_directory(html_dir) as base, browser_mod.chromium() as browser:
        blocked: list[str] = []
        ctx = browser_mod.new_context(browser, blocked=blocked, viewport=VIEWPORT)
        for name in built_pages(html_dir):
            visit = PageVisit(name)
            blocked.clear()
            page = ctx.new_page()
            page.on("console", lambda m, v=visit: m.type == "error" and v.console_errors.append(
                f"{m.text} @ {m.location.get('url', '')}"))
            page.on("pageerror", lambda e, v=visit: v.console_errors.append(f"uncaught: {e}"))
            source = open(os.path.join(html_dir, name), encoding="utf-8").read()
            refresh = REFRESH.search(source)
            # a redirect page's own document may be aborted by its immediate redirect (when the
            # refresh fires before "load"): that is the redirect working, not a failed request
            superseded = base + name if refresh else None
            page.on("requestfailed", lambda r, v=visit, own=superseded: browser_mod.is_local(r.url)
                    and not (r.url == own and "ERR_ABORTED" in (r.failure or ""))
                    and v.failed.append(f"{r.url} ({r.failure})"))
            page.on("response", lambda r, v=visit: r.status >= 400 and v.failed.append(
                f"{r.url} (HTTP {r.status})"))
            t0 = time.time()
            page.goto(base + name, wait_until="load")
            if refresh:  # a redirect page (index.html): it must land on an existing page
                page.wait_for_url(re.compile(re.escape(refresh.group(1)) + "$"), timeout=10000)
                page.wait_for_load_state("load")
                visit.report = dict(EMPTY_REPORT, redirect=page.url)
            else:
                visit.report = page.evaluate(CHECKS_JS)
                visit.overflow = page.evaluate(OVERFLOW_JS)  # before controls move
                if 'class="book-run-panel"' in source:  # a chapter: its download and run panel
                    visit.notebook = _notebook_offer(page)
            for fig in visit.report["figures"]:
                if fig["live"] or fig["kernelOutput"]:
                    continue  # needs a kernel: see test_live_cells_are_marked and test_live.py
                for control, changed, detail in _move_controls(page, fig):
                    visit.figures.append((fig["index"], control, changed, detail))
            page.wait_for_timeout(100)  # let late console messages arrive
            visit.external = list(blocked)
            visit.seconds = time.time() - t0
            page.close()
            out[name] = visit
        ctx.close()
    total = sum(v.seconds for v in out.values())
    print(f"\nbrowser: {len(out)} pages in {total:.1f} s "
          f"(slowest {max(out.values(), key=lambda v: v.seconds).name})")
    return out


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


def _notebook_offer(page) -> dict:
    """What a chapter page offers for running it: its first .ipynb link, fetched as the reader's
    browser would, and the text of its run panel (read during the page's one visit)."""
    links = page.eval_on_selector_all('a[href$=".ipynb"]', "as => as.map(a => a.href)")
    content = page.content()
    offer = {"link": links[0] if links else None, "status": None, "nbformat": None,
             "code_cells": 0, "panel": page.inner_text("details.book-run-panel", timeout=5000),
             "names_lab": "make lab" in content and "JupyterLab" in content}
    if links:
        resp = page.request.get(links[0])
        offer["status"] = resp.status
        if resp.ok:
            nb = json.loads(resp.body())
            offer["nbformat"] = nb["nbformat"]
            offer["code_cells"] = sum(c["cell_type"] == "code" for c in nb["cells"])
    return offer


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
