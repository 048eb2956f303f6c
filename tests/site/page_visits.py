"""Every page of the built book loaded once in headless Chromium and checked at both widths.

:func:`visit_all` opens each page at a laptop's width (:data:`VIEWPORT`), runs the page checks
(``browser_checks.js``: console, requests, math, widgets, images, references; ``overflow_check.js``),
checks that its formulas fit their column (``math_fit.js``), narrows the same page to a phone's
width (:data:`NARROW`) for the overflow checks (``overflow_check.js``, ``page_overflow.js``), widens
it back, and moves every control of every interactive figure. MathJax breaks long formulas for the
width it finds when it typesets, and keeps those breaks when the window narrows; so the formulas
and multi-panel figures of a phone are checked on the page loaded at the phone's width, as a phone
loads it (the one second load of a page; without MathJax's speech, :data:`SPEECH_OFF_JS`).
``tests/site/conftest.py`` runs it once per session (the ``visits`` fixture); ``test_browser.py``
and ``test_narrow.py`` assert on what it recorded.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field

from conftest import built_pages

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS_JS = open(os.path.join(HERE, "browser_checks.js"), encoding="utf-8").read()
FINGERPRINT_JS = open(os.path.join(HERE, "figure_fingerprint.js"), encoding="utf-8").read()
OVERFLOW_JS = open(os.path.join(HERE, "overflow_check.js"), encoding="utf-8").read()
PAGE_JS = open(os.path.join(HERE, "page_overflow.js"), encoding="utf-8").read()
MATH_JS = open(os.path.join(HERE, "math_fit.js"), encoding="utf-8").read()
#: Which image each multi-panel figure (sattn.panel_figure: a <picture> with a stacked source for
#: narrow screens) shows: "narrow" (the stacked panels) or "wide" (the row).
PANELS_JS = """() => [...document.querySelectorAll("article picture.book-panels")].map((p) => {
  const img = p.querySelector("img"), src = p.querySelector("source");
  return { id: (p.closest("[id]") || {}).id || "", shown: img.currentSrc === src.srcset ? "narrow" : "wide",
           width: Math.round(img.getBoundingClientRect().width), natural: img.naturalWidth };
})"""
#: Every output image of a page (a cell's image, a widget's image, a multi-panel figure's <picture>)
#: as the reader sees it: its rendered width against the width of the PNG it shows, the PNG's
#: resolution (its pHYs chunk, which matplotlib writes; null when absent), and, for a multi-panel
#: figure, which of its two images is shown. Images not displayed (a hidden frame of an explorer)
#: are left out: they are measured when shown.
IMAGES_JS = """async () => {
  const dpiOf = async (url) => {
    try {
      const b = new Uint8Array(await (await fetch(url)).arrayBuffer());
      for (let i = 8; i + 12 <= b.length; ) {  // PNG chunks: length, type, data, CRC
        const len = ((b[i] << 24) >>> 0) + (b[i + 1] << 16) + (b[i + 2] << 8) + b[i + 3];
        const type = String.fromCharCode(b[i + 4], b[i + 5], b[i + 6], b[i + 7]);
        if (type === "pHYs" && b[i + 16] === 1) {
          const ppm = ((b[i + 8] << 24) >>> 0) + (b[i + 9] << 16) + (b[i + 10] << 8) + b[i + 11];
          return Math.round(ppm * 0.0254);
        }
        if (type === "IDAT" || type === "IEND") break;
        i += 12 + len;
      }
    } catch (e) { /* not a fetchable PNG */ }
    return null;
  };
  const cells = [...document.querySelectorAll("article .cell")];
  const imgs = [...new Set(document.querySelectorAll(
    "article .cell_output img, article picture.book-panels img"))].filter((img) =>
    img.checkVisibility() && img.getBoundingClientRect().width > 0 && img.naturalWidth > 0);
  return Promise.all(imgs.map(async (img) => {
    const p = img.closest("picture.book-panels"), src = p && p.querySelector("source");
    const fig = img.closest("figure[id], .cell[id], section[id]") || {};
    return { where: (fig.id || "") + " (cell " + cells.indexOf(img.closest(".cell")) + ")",
             width: Math.round(img.getBoundingClientRect().width), natural: img.naturalWidth,
             dpi: await dpiOf(img.currentSrc),
             panels: p ? (img.currentSrc === src.srcset ? "narrow" : "wide") : null };
  }));
}"""
#: The window every page is opened in (a laptop); once its checks ran, the same page is narrowed to
#: each of NARROW (a phone) for the overflow checks of tests/site/test_narrow.py, then widened back.
VIEWPORT = (1280, 900)
NARROW = ((390, 844),)
REFRESH = re.compile(r'<meta\s+http-equiv="refresh"\s+content="\d+;\s*url=([^"]+)"', re.I)
#: The phone's load of a page runs MathJax without the spoken and braille forms of its formulas (the
#: reader's menu settings, stored where MathJax's menu keeps them). They change no layout: the fit
#: reports of six math-heavy chapters at the phone's width were identical with and without them,
#: and the load took 12-13 s instead of 27-28 s. The page's own load at VIEWPORT keeps them, so
#: the console is checked with them on every page.
SPEECH_OFF_JS = ('try { localStorage.setItem("MathJax-Menu-Settings", '
                 'JSON.stringify({speech: false, braille: false})); } catch (e) {}')
#: Resolves once the layout after a change of the window has been drawn (two animation frames).
SETTLE_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
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
    narrow: dict = field(default_factory=dict)  # width -> {"column": overflow_check, "page": page_overflow}
    # width (VIEWPORT's and each of NARROW) -> {"math": math_fit, "panels": PANELS_JS,
    # "images": IMAGES_JS}
    fit: dict = field(default_factory=dict)
    seconds: float = 0.0


def move_controls(page, fig: dict) -> list:
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


def visit_all(html_dir: str) -> dict[str, PageVisit]:
    """Open every page once (one browser, one page after the other) and record what happened:
    all checks at :data:`VIEWPORT`, then the overflow checks at each width of :data:`NARROW`, then
    the controls of each figure moved (back at :data:`VIEWPORT`)."""
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
                visit.fit[VIEWPORT[0]] = fit_report(page)
                for width, height in NARROW:  # the same page, loaded once, at a phone's width
                    page.set_viewport_size({"width": width, "height": height})
                    page.evaluate(SETTLE_JS)
                    visit.narrow[width] = {"column": page.evaluate(OVERFLOW_JS),
                                           "page": page.evaluate(PAGE_JS)}
                page.set_viewport_size({"width": VIEWPORT[0], "height": VIEWPORT[1]})
                page.evaluate(SETTLE_JS)
                if 'class="book-run-panel"' in source:  # a chapter: its download and run panel
                    visit.notebook = notebook_offer(page)
            for fig in visit.report["figures"]:
                if fig["live"] or fig["kernelOutput"]:
                    continue  # needs a kernel: see test_live_cells_are_marked and test_live.py
                for control, changed, detail in move_controls(page, fig):
                    visit.figures.append((fig["index"], control, changed, detail))
            page.wait_for_timeout(100)  # let late console messages arrive
            visit.external = list(blocked)
            visit.seconds = time.time() - t0
            page.close()
            out[name] = visit
        ctx.close()
        # MathJax breaks a long formula into lines when it typesets the page, for the width it finds
        # then; a window narrowed afterwards keeps the breaks made for the wide one. So the math of
        # a phone is checked as a phone shows it: each page loaded at the phone's width.
        for width, height in NARROW:
            ctx = browser_mod.new_context(browser, viewport=(width, height))
            ctx.add_init_script(SPEECH_OFF_JS)
            page = ctx.new_page()
            for name, visit in out.items():
                if visit.fit:
                    page.goto(base + name, wait_until="load")
                    page.evaluate(CHECKS_JS)  # waits for MathJax, widgets and images
                    visit.fit[width] = fit_report(page)
            ctx.close()
    total = sum(v.seconds for v in out.values())
    print(f"\nbrowser: {len(out)} pages in {total:.1f} s "
          f"(slowest {max(out.values(), key=lambda v: v.seconds).name})")
    return out


def fit_report(page) -> dict:
    """Formulas wider than their column (math_fit.js), the layout each multi-panel figure shows
    and the scale at which each output image is shown (IMAGES_JS)."""
    return {"math": page.evaluate(MATH_JS), "panels": page.evaluate(PANELS_JS),
            "images": page.evaluate(IMAGES_JS)}


def notebook_offer(page) -> dict:
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
