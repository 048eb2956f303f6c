// Which display equations, tables, widgets and output images stick out of their column?
// An element is fine when it fits inside every ancestor up to the article, or when an ancestor on
// the way (or the element itself) scrolls horizontally: it then has a scroll bar of its own.
// Returns [{kind, what, width, room}] for every element that overflows without one.
() => {
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  if (!article) return [];
  const scrolls = (el) => {
    const ox = getComputedStyle(el).overflowX;
    return ox === "auto" || ox === "scroll";
  };
  const kinds = [
    ["equation", 'mjx-container[display="true"]'],
    ["table", "table"],
    ["widget", ".jupyter-widgets.widget-container, .widget-subarea > .jupyter-widgets, .widget-subarea"],
    ["image", ".cell_output img"],
    ["code", ".cell_output pre"],
  ];
  const out = [];
  const seen = new Set();
  for (const [kind, sel] of kinds) {
    for (const el of article.querySelectorAll(sel)) {
      if (seen.has(el) || !el.checkVisibility()) continue;
      seen.add(el);
      if (el.closest(".tippy-box")) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0) continue;
      // content wider than the element itself, clipped instead of scrolled
      const ownClip = el.scrollWidth > el.clientWidth + 1 && !scrolls(el) &&
        getComputedStyle(el).overflowX !== "visible";
      let bad = ownClip ? { room: el.clientWidth } : null;
      if (!bad && !scrolls(el)) {
        for (let a = el.parentElement; a && a !== article.parentElement; a = a.parentElement) {
          if (scrolls(a)) break;  // a scroll bar of its own (the element's box)
          const ar = a.getBoundingClientRect();
          if (r.right > ar.right + 1 || r.left < ar.left - 1) {
            bad = { room: Math.round(ar.width), container: a.tagName.toLowerCase() + "." +
                    String(a.className).trim().split(/\s+/).slice(0, 2).join(".") };
            break;
          }
        }
      }
      if (bad) {
        const id = el.closest("[id]");
        out.push({ kind, width: Math.round(Math.max(r.width, el.scrollWidth)), ...bad,
                   what: (id ? "#" + id.id + " " : "") + (el.textContent || el.getAttribute("src") || "")
                           .replace(/\s+/g, " ").trim().slice(0, 60) });
      }
    }
  }
  return out;
}
