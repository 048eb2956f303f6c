// Evaluated in every page by tests/site/test_browser.py once the page has loaded: waits for MathJax,
// the widgets and the images, then reports what a reader would see. Returns a plain object.
async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const deadline = Date.now() + 30000;
  const report = { mathErrors: [], rawTex: [], widgetViews: 0, widgetsUnrendered: [],
                   images: 0, brokenImages: [], refs: [], unresolved: [], ids: [],
                   figures: [], mathElements: 0, typeset: 0 };

  // 1. MathJax (loaded with defer) has typeset every math element.
  const maths = Array.from(document.querySelectorAll(".math"));
  report.mathElements = maths.length;
  if (maths.length) {
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() < deadline)
      await sleep(50);
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  }

  // 2. Every widget view script has been replaced by a rendered widget.
  const views = Array.from(document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]'));
  report.widgetViews = views.length;
  const rendered = (v) => {
    const prev = v.previousElementSibling;
    return prev && prev.classList.contains("widget-subarea") && prev.querySelector(".jupyter-widgets");
  };
  while (views.some((v) => !rendered(v)) && Date.now() < deadline) await sleep(100);
  views.forEach((v, i) => { if (!rendered(v)) report.widgetsUnrendered.push(v.textContent.slice(0, 120)); });
  if (views.length && window.MathJax && MathJax.startup && MathJax.startup.promise)
    await MathJax.startup.promise;  // widget labels are typeset too

  maths.forEach((m) => {
    if (m.querySelector("mjx-container")) report.typeset += 1;
    else report.rawTex.push(m.textContent.slice(0, 80));
  });
  document.querySelectorAll("mjx-merror").forEach((e) =>
    report.mathErrors.push((e.getAttribute("data-mjx-error") || e.textContent).slice(0, 120)));

  // Raw TeX left in the visible text (outside code, where it may legitimately appear).
  const skip = "pre, code, script, style, textarea, mjx-container, .highlight, kbd, .cell_input";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const texLike = /\\\(|\\\)|\\\[|\\\]|\$\$|\\(frac|mathbb|mathrm|mathcal|sum|prod|sqrt|alpha|beta|gamma|varepsilon|epsilon|top|left|right|begin|end|exp|log|le|ge|in|cdot|operatorname)\b|\$[^$\s][^$]{0,80}[\\^_{][^$]{0,80}\$/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    if (el.closest("[hidden], .d-none") || !el.checkVisibility()) continue;
    if (texLike.test(n.textContent)) report.rawTex.push(n.textContent.trim().slice(0, 120));
  }

  // 3. Every image loads (lazy images are forced to load first).
  const imgs = Array.from(document.querySelectorAll("img"));
  report.images = imgs.length;
  imgs.forEach((i) => { if (i.loading === "lazy") i.loading = "eager"; });
  await Promise.all(imgs.map((i) => (i.complete ? null : i.decode().catch(() => null))));
  imgs.forEach((i) => {
    if (!(i.complete && i.naturalWidth > 0)) report.brokenImages.push(i.getAttribute("src") || "(no src)");
  });

  // 4. References: every internal link, with its kind; unresolved cross-references.
  report.ids = Array.from(document.querySelectorAll("[id]")).map((e) => e.id);
  document.querySelectorAll("a.reference.internal[href], a.reference[href*='#']").forEach((a) => {
    const href = a.getAttribute("href");
    if (!href || /^[a-z]+:/i.test(href) && !href.startsWith(location.origin)) return;
    const inToc = !!a.closest("nav, .bd-sidebar, .bd-toc, .toctree-wrapper, .prev-next-area, header");
    const url = new URL(href, location.href);
    let kind = "link";
    if (/^#equation-/.test(url.hash)) kind = "equation";
    else if (a.closest(".cite, [role=doc-biblioref]") || /bibliography/.test(url.pathname) && url.hash) kind = "citation";
    else if (/^(Definition|Theorem|Lemma|Proposition|Corollary|Remark|Algorithm|Example|Assumption|Conjecture|Axiom|Criterion|Property|Observation|Exercise)\b/.test(a.textContent.trim())) kind = "theorem";
    report.refs.push({ href: url.href, kind, text: a.textContent.trim().slice(0, 60), nav: inToc });
  });
  document.querySelectorAll(".xref, .std-ref, .prf-ref").forEach((x) => {
    if (x.closest("a")) return;
    // Python-domain references to other libraries (numpy.ndarray, fractions.Fraction, ...) have no
    // target in an offline book; references into the book's own package must resolve.
    const text = x.textContent.trim();
    if (x.classList.contains("py") && !/^~?sattn\b/.test(text)) return;
    report.unresolved.push(text.slice(0, 80));
  });

  // 5. Interactive figures: widgets with controls; tag them for the slider test.
  document.querySelectorAll(".widget-subarea").forEach((root, i) => {
    const handles = root.querySelectorAll(".noUi-handle, input[type=range]");
    const selects = root.querySelectorAll(".widget-dropdown select");
    if (!handles.length && !selects.length) return;
    root.setAttribute("data-book-figure", String(i));
    const cell = root.closest(".cell");
    // controls a reader can still operate (a live cell's static copy switches them off)
    const enabled = [...root.querySelectorAll("select, input")].filter((el) => !el.disabled).length +
      [...root.querySelectorAll(".noUi-handle")].filter((h) => h.getAttribute("aria-disabled") !== "true").length;
    const bar = cell && cell.querySelector(".book-live-bar");
    report.figures.push({ index: i, sliders: handles.length, dropdowns: selects.length,
                          live: !!(cell && cell.classList.contains("tag_live")),
                          kernelOutput: !!root.querySelector(".widget-output"),
                          enabled, liveLabel: bar ? bar.textContent.trim() : "" });
  });
  return report;
}
