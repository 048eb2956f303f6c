// Before printing (the browser's print, or tools/make_pdf.py), open every solution and dropdown so
// that it is printed expanded; code cells hidden on the page stay hidden. Restored after printing.
(function () {
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) {
      if (d.classList.contains("hide") || d.classList.contains("book-run-panel")) return;
      d.open = true; opened.push(d);
    });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; }); opened = [];
  });
})();
