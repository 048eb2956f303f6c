// Does every piece of mathematics fit its column without a scroll bar? A display equation whose
// typeset width exceeds the room its column gives it is reported even when it scrolls inside its
// own box: a reader sees the first half of an equation and no cue that the rest lies beyond the
// edge (a scroll bar may be an overlay). Inline math is reported when it reaches beyond the right
// edge of its paragraph's column. Returns [{kind, what, width, room}] for every piece that does
// not fit.
() => {
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  if (!article) return [];
  const out = [];
  const label = (el) => {
    const id = el.closest("[id]");
    const tex = el.getAttribute("data-tex") || "";
    const text = tex || (el.querySelector("mjx-assistive-mml")?.textContent) ||
                 (el.textContent || "");
    return (id ? "#" + id.id + " " : "") + text.replace(/\s+/g, " ").trim().slice(0, 70);
  };
  // the column: the nearest block ancestor that is not MathJax's own box
  const column = (el) => {
    for (let a = el.parentElement; a; a = a.parentElement) {
      if (a.tagName.toLowerCase().startsWith("mjx-")) continue;
      const d = getComputedStyle(a).display;
      if (d === "inline" || d === "contents") continue;
      return a;
    }
    return article;
  };
  const inner = (c) => {
    const cs = getComputedStyle(c);
    return c.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  };
  for (const el of article.querySelectorAll('mjx-container[jax]')) {
    if (!el.checkVisibility() || el.closest(".tippy-box")) continue;
    const math = el.querySelector(":scope > mjx-math") || el;
    const r = math.getBoundingClientRect();
    if (r.width === 0) continue;
    const display = el.getAttribute("display") === "true";
    const col = column(el);
    const cr = col.getBoundingClientRect();
    const cs = getComputedStyle(col);
    const room = inner(col);
    if (display) {
      // its full typeset width against the room of its own box and of the column it sits in
      const width = Math.max(r.width, el.scrollWidth);
      const box = Math.min(el.clientWidth, room);
      const right = cr.right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth);
      const er = el.getBoundingClientRect();
      if (width > box + 1 || er.right > right + 1) {
        out.push({ kind: "display", width: Math.round(width), room: Math.round(box), what: label(el) });
      }
    } else {
      const right = cr.right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth);
      const left = cr.left + parseFloat(cs.paddingLeft) + parseFloat(cs.borderLeftWidth);
      // a line box that breaks inside the math has several rects: check each
      for (const rect of math.getClientRects()) {
        if (rect.right > right + 1 || rect.left < left - 1) {
          out.push({ kind: "inline", width: Math.round(rect.width), room: Math.round(right - left),
                     what: label(el) });
          break;
        }
      }
    }
  }
  return out;
}
