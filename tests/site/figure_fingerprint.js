// What an interactive figure currently displays (its visible images and output text, not its
// controls): evaluated on the figure's root element by tests/site/test_browser.py and test_live.py.
(root) => {
  const parts = [];
  const controls = ".widget-slider, .widget-hslider, .widget-dropdown, .widget-readout, .widget-label";
  root.querySelectorAll("img").forEach((i) => {
    if (i.checkVisibility() && !i.closest(controls)) parts.push("img:" + i.src.slice(0, 200) + ":" + i.src.length);
  });
  root.querySelectorAll(".widget-html-content, .jp-OutputArea-output, .jp-RenderedText, .output").forEach((e) => {
    if (e.checkVisibility() && !e.closest(controls)) parts.push("text:" + e.innerText.slice(0, 400));
  });
  return parts.join("\n");
}
