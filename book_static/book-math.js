// MathJax breaks a long formula into lines for the width of its column when it typesets the page.
// When the window changes width (a phone turned, a window resized), typeset the formulas again for
// the new width, once the resizing has stopped; otherwise a formula broken for a wide column is cut
// off in a narrow one. window.bookMathSettled() returns a promise that resolves when no such
// re-typesetting is waiting or running (tests/site/page_visits.py waits on it).
(function () {
  var width = document.documentElement.clientWidth, timer = null, pending = null, resolve = null;

  function rerender() {
    var mj = window.MathJax;
    if (!mj || !mj.startup || !mj.startup.document) return Promise.resolve();
    var ready = mj.startup.promise || Promise.resolve();
    return ready.then(function () {
      // from the measuring of the containers on (MathJax's METRICS state): the line breaks
      // depend on the width measured there
      var state = mj._ && mj._.core && mj._.core.MathItem && mj._.core.MathItem.STATE;
      var from = state ? state.METRICS : undefined;
      if (typeof mj.rerenderPromise === "function") return mj.rerenderPromise(from);
      return mj.startup.document.rerenderPromise(from);
    });
  }

  function done() {
    var r = resolve;
    pending = resolve = null;
    if (r) r();
  }

  window.addEventListener("resize", function () {
    var w = document.documentElement.clientWidth;
    if (w === width) return;
    width = w;
    if (!pending) pending = new Promise(function (r) { resolve = r; });
    clearTimeout(timer);
    timer = setTimeout(function () {
      rerender().catch(function (e) { console.warn("MathJax could not typeset again", e); })
        .then(done);
    }, 150);
  });

  window.bookMathSettled = function () { return pending || Promise.resolve(); };
})();
