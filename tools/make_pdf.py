"""Print the one-page build of the book (``_build/singlehtml``) to a PDF with the test browser.

``make pdf`` builds ``_build/singlehtml`` (Sphinx's ``singlehtml`` builder: every chapter in one
page, with the same numbering and bibliography as the website), then runs this script: Debian's
Chromium (Playwright, no browser download) opens the page from 127.0.0.1, waits until MathJax has
typeset every formula and every widget has rendered in its default view, opens the solutions and
prints with the book's print styles (``@media print`` in ``book_static/book.css``). Every request
that would leave 127.0.0.1 is blocked and makes the script fail.

    python tools/make_pdf.py [--html _build/singlehtml] [--out _build/pdf/sattn-book.pdf]

Next to the PDF it writes ``sattn-book.json``: pages, size, formulas, widgets, timings, version
(what the README points to instead of quoting numbers).
"""

from __future__ import annotations

import argparse
import html
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import book_version  # noqa: E402
import browser as browser_mod  # noqa: E402

ROOT = os.path.dirname(HERE)
CHECKS_JS = os.path.join(ROOT, "tests", "site", "browser_checks.js")

#: Resolves once MathJax has typeset the page (its startup promise: typesetting and speech).
TYPESET_JS = """async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const deadline = Date.now() + 600000;
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() < deadline) await sleep(100);
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
}"""

WAIT_JS = """async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const deadline = Date.now() + 120000;
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() < deadline) await sleep(100);
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  const done = (v) => { const p = v.previousElementSibling;
    return p && p.classList.contains("widget-subarea") && p.querySelector(".jupyter-widgets"); };
  while (views.some((v) => !done(v)) && Date.now() < deadline) await sleep(200);
  if (window.MathJax && MathJax.typesetPromise) await MathJax.typesetPromise();
  const imgs = Array.from(document.querySelectorAll("img"));
  imgs.forEach((i) => { if (i.loading === "lazy") i.loading = "eager"; });
  await Promise.all(imgs.map((i) => (i.complete ? null : i.decode().catch(() => null))));
  return { math: document.querySelectorAll(".math").length,
           typeset: document.querySelectorAll(".math mjx-container").length,
           widgets: views.length, rendered: views.filter(done).length,
           broken: imgs.filter((i) => !(i.complete && i.naturalWidth > 0)).length };
}"""


#: The book's headings, in order, for the PDF's outline: each document of the one page (a chapter,
#: the notation, the back matter) at level 0 with its sections at level 1; the introduction (the
#: page's own h1) at level 0 with its sections. Math in a title is given by its plain text
#: (MathJax's assistive MathML), the "#" of header links is left out.
HEADINGS_JS = """() => {
  const text = (h) => { const c = h.cloneNode(true);
    c.querySelectorAll('a.headerlink').forEach((e) => e.remove());
    c.querySelectorAll('mjx-container').forEach((m) => {
      const a = m.querySelector('mjx-assistive-mml');
      m.replaceWith(document.createTextNode(a ? a.textContent : ''));
    });
    return c.textContent.replace(/\\s+/g, ' ').trim(); };
  const out = [];
  const h1 = document.querySelector('article.bd-article h1');
  if (h1) {
    out.push({level: 0, title: text(h1)});
    const intro = h1.closest('section');
    if (intro) intro.querySelectorAll(':scope > section > h2').forEach((h) => out.push({level: 1, title: text(h)}));
  }
  document.querySelectorAll('span[id^="document-"] + section').forEach((sec) => {
    const h = sec.querySelector(':scope > h2');
    if (!h) return;
    out.push({level: 0, title: text(h)});
    sec.querySelectorAll(':scope > section > h3').forEach((s) => out.push({level: 1, title: text(s)}));
  });
  return out;
}"""

_FOOTER_LINE = "The Expressive Power of Self-Attention · version"


def _squeeze(text: str) -> str:
    import unicodedata
    return "".join(unicodedata.normalize("NFKC", text).split())


def add_outline(pdf_path: str, headings: list[dict]) -> int:
    """Replace the PDF's outline by one bookmark per heading, on the page where its title is
    printed (found in the text layer, in reading order); return the number of bookmarks.

    Chromium's own outline (built from the tagged headings) repeats a heading's text when the
    heading starts a page ("7. 7. Experiments: how wide mustExperiments: ...") and drops the spaces
    at line breaks; this one uses the headings' own text."""
    import pypdf

    reader = pypdf.PdfReader(pdf_path)
    pages = []
    for p in reader.pages:
        lines = [ln for ln in (p.extract_text() or "").splitlines() if _FOOTER_LINE not in ln]
        pages.append(_squeeze("\n".join(lines)))
    writer = pypdf.PdfWriter(clone_from=reader)
    writer._root_object.pop("/Outlines", None)  # Chromium's outline
    at, parent, n = 0, None, 0
    for h in headings:
        key = _squeeze(h["title"])
        # the first page from the previous heading on that prints the title; a title whose math
        # reads differently in the text layer: its first words, within the next few pages; else
        # the previous heading's page
        # (a document -- chapter, notation, back matter -- starts a new page, after the previous
        # heading's page: the introduction has a section "Notation" too)
        start = at + 1 if h["level"] == 0 and n else at
        found = next((i for i in range(start, len(pages)) if key and pages[i].startswith(key)), None) \
            if h["level"] == 0 else None
        found = found if found is not None else next(
            (i for i in range(start, len(pages)) if key and key in pages[i]), None)
        if found is None:
            words = [w for w in h["title"].split() if w.isalpha() and len(w) > 3]
            found = next((i for i in range(at, min(at + 12, len(pages)))
                          if words and all(w in pages[i] for w in words[:3])), at)
        at = found
        item = writer.add_outline_item(title=h["title"], page_number=found,
                                       parent=None if h["level"] == 0 else parent)
        if h["level"] == 0:
            parent = item
        n += 1
    tmp = pdf_path + ".part"
    with open(tmp, "wb") as f:
        writer.write(f)
    os.replace(tmp, pdf_path)
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", default=os.path.join(ROOT, "_build", "singlehtml"))
    ap.add_argument("--out", default=os.path.join(ROOT, "_build", "pdf", "sattn-book.pdf"))
    ap.add_argument("--page", default="chapters/intro.html", help="the one page, relative to --html")
    args = ap.parse_args(argv)
    src = os.path.join(args.html, args.page)
    if not os.path.exists(src):
        raise SystemExit(f"no one-page build at {src}: run make pdf")
    # singlehtml writes the root document (chapters/intro) with links relative to the build's root
    # (_static/, _images/): open a copy that sits at the root.
    with open(src, encoding="utf-8") as f, open(os.path.join(args.html, "book.html"), "w",
                                                 encoding="utf-8") as g:
        g.write(f.read())
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    info = book_version.info()
    footer = (f'<div style="font-size:7pt;width:100%;text-align:center;color:#555">'
              f'The Expressive Power of Self-Attention · version {html.escape(info["version"])} · '
              f'commit {html.escape(info["commit"])} · built {info["date"]} · page '
              '<span class="pageNumber"></span> of <span class="totalPages"></span></div>')
    t0 = time.time()
    blocked: list[str] = []
    errors: list[str] = []
    with browser_mod.serve_directory(args.html) as base, browser_mod.chromium() as browser:
        ctx = browser_mod.new_context(browser, blocked=blocked, viewport=(1100, 1400))
        page = ctx.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_default_timeout(300000)
        page.goto(base + "book.html", wait_until="load", timeout=300000)
        # While MathJax typesets the one page and then attaches a spoken and a braille form to
        # each of its ~4,000 formulas, another tab is in front. In front, Chromium redraws the
        # whole page after each of those updates, and the last phase alone took about 330 s; with
        # the page behind, it is ready in about a minute. The page is the same either way (the
        # same MathJax work, awaited to its end, and layout computed whenever it is read); it is
        # brought to the front for the checks and the printing.
        front = ctx.new_page()
        front.bring_to_front()
        page.evaluate(TYPESET_JS)
        page.bring_to_front()
        front.close()
        state = page.evaluate(WAIT_JS)
        problems = []
        if state["typeset"] < state["math"]:
            problems.append(f"{state['math'] - state['typeset']} formulas not typeset")
        if state["rendered"] < state["widgets"]:
            problems.append(f"{state['widgets'] - state['rendered']} widgets not rendered")
        if state["broken"]:
            problems.append(f"{state['broken']} images did not load")
        if blocked:
            problems.append("requests outside 127.0.0.1: " + ", ".join(sorted(set(blocked))[:5]))
        if errors:
            problems.append("page errors: " + "; ".join(errors[:5]))
        if problems:
            raise SystemExit("make pdf: " + "; ".join(problems))
        page.evaluate("() => { document.documentElement.dataset.mode = 'light';"
                      " document.documentElement.dataset.theme = 'light';"
                      " window.dispatchEvent(new Event('beforeprint')); }")
        page.emulate_media(media="print", color_scheme="light")
        loaded = time.time() - t0
        headings = page.evaluate(HEADINGS_JS)
        page.pdf(path=args.out, format="A4", print_background=True, display_header_footer=True,
                 header_template="<span></span>", footer_template=footer, outline=False,
                 tagged=True, margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
        ctx.close()
    import json

    import pypdf

    bookmarks = add_outline(args.out, headings)

    size = os.path.getsize(args.out)
    facts = {"pdf": os.path.basename(args.out), "pages": len(pypdf.PdfReader(args.out).pages),
             "bytes": size, "megabytes": round(size / 1e6, 1), "formulas": state["typeset"],
             "widgets": state["widgets"], "bookmarks": bookmarks, "seconds_page_ready": round(loaded),
             "seconds_total": round(time.time() - t0), "version": info["version"],
             "commit": info["commit"], "built": info["date"]}
    with open(os.path.splitext(args.out)[0] + ".json", "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1)
        f.write("\n")
    print(f"make pdf: {os.path.relpath(args.out, ROOT)} ({facts['pages']} pages, "
          f"{facts['megabytes']:.1f} MB; {state['typeset']} formulas, {state['widgets']} widgets; "
          f"page ready in {loaded:.0f} s, total {facts['seconds_total']} s; facts in "
          f"{os.path.relpath(os.path.splitext(args.out)[0] + '.json', ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
