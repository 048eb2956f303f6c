// Is the page itself wider than the window (a reader would have to scroll the whole page
// sideways)? Returns null when it fits, else the page's width and the deepest elements that reach
// beyond the right edge of the window (what to fix).
() => {
  const doc = document.documentElement, body = document.body;
  const room = doc.clientWidth;
  const width = Math.max(doc.scrollWidth, body ? body.scrollWidth : 0);
  if (width <= room + 1 && (!body || body.scrollWidth <= body.clientWidth + 1)) return null;
  const culprits = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= room + 1 || !el.checkVisibility()) continue;
    // inside a box that scrolls sideways: that box is the one to look at
    let boxed = false;
    for (let a = el.parentElement; a; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === "auto" || ox === "scroll" || ox === "hidden" || ox === "clip") {
        if (a !== doc && a !== body) { boxed = true; break; }
      }
    }
    if (boxed) continue;
    // only the deepest: no child of it reaches beyond the edge too
    if ([...el.children].some(c => c.getBoundingClientRect().right > room + 1)) continue;
    culprits.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}.${String(el.className).trim().split(/\s+/).slice(0, 2).join(".")} ` +
                  `(right edge ${Math.round(r.right)} px): ` + (el.textContent || "").replace(/\s+/g, " ").trim().slice(0, 70));
    if (culprits.length >= 8) break;
  }
  return { width, room, culprits };
}
