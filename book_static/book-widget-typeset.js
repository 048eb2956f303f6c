// The ipywidgets HTML manager typesets widget labels with the MathJax 2 API
// (MathJax.Hub.Queue); the book loads MathJax 3. Give every MathJax object that call, whenever the
// page (or MathJax 3 itself, when its deferred script runs) assigns window.MathJax.
(function () {
  function queue(args) {
    var el = Array.isArray(args) ? args[2] : null;
    var mj = window.MathJax;
    if (!el || !mj || !mj.startup) return;
    var run = function () {
      return mj.typesetPromise ? mj.typesetPromise([el]) : null;
    };
    var p = mj.startup.promise ? mj.startup.promise.then(run) : Promise.resolve().then(run);
    p.catch(function (e) { console.warn("MathJax could not typeset a widget label", e); });
  }
  var current = window.MathJax;
  function withHub(obj) {
    if (obj && typeof obj === "object" && !obj.Hub) {
      try { obj.Hub = { Queue: queue }; } catch (e) { /* frozen object: leave it */ }
    }
    return obj;
  }
  Object.defineProperty(window, "MathJax", {
    configurable: true, enumerable: true,
    get: function () { return current; },
    set: function (v) { current = withHub(v); },
  });
  withHub(current);
})();
