// Live recomputation of the cells tagged "live" (see README, "Live figures").
// On the static website (window.BOOK_LIVE is null) each live cell only says how to make it live.
// Under `make live`, book-live-config.js says that the book's own server forwards /jupyter/ to a
// private Jupyter server, and where to exchange a launch key. The launch page `make live` writes (a
// file in its private folder) sends the browser to the book with #live=KEY: a fragment, which the
// browser never sends to a server. This script removes it from the
// address bar at once and exchanges the key (single use, short-lived) for a session token, kept in
// this tab's sessionStorage of the book's origin, which no other origin (another port included) can
// read. "Run live" then loads thebe (served by the book, from npm) with that token: thebe sends it
// as "Authorization: token ..." on every request and as ?token= on its WebSockets. It starts a
// kernel, runs the page's earlier code cells as setup, and runs the live cells in it, so their
// widgets recompute on every change.
(function () {
  "use strict";
  var state = { started: null };
  var TOKEN_KEY = "book-live-token";
  var cfg = window.BOOK_LIVE;

  function storedToken() {
    try { return window.sessionStorage.getItem(TOKEN_KEY); } catch (e) { return null; }
  }

  function setSessionState(s) { document.documentElement.dataset.bookLiveSession = s; }

  // The one-time key of the launch page's address, removed from the address bar and the history.
  function takeLaunchKey() {
    var m = /^#live=([A-Za-z0-9_-]+)$/.exec(window.location.hash);
    if (!m) return null;
    window.history.replaceState(window.history.state, "",
                                window.location.pathname + window.location.search);
    return m[1];
  }

  async function exchange(key) {
    var res = await fetch(new URL(cfg.exchangeUrl, window.location.origin).href, {
      method: "POST", headers: { "X-Book-Live-Key": key }, credentials: "omit", cache: "no-store",
    });
    if (!res.ok) throw new Error((await res.text()).trim() || "HTTP " + res.status);
    var token = (await res.json()).token;
    window.sessionStorage.setItem(TOKEN_KEY, token);
    return token;
  }

  // A promise of this tab's session token, or null when the tab has none.
  var session = null;
  if (cfg) {
    var key = takeLaunchKey();
    if (key) session = exchange(key);
    else if (storedToken()) session = Promise.resolve(storedToken());
    if (session) {
      session.then(function () { setSessionState("ready"); },
                   function (err) {
                     console.warn("live session refused:", err.message);
                     setSessionState("error");
                   });
    } else {
      setSessionState("none");
    }
  }

  function root() {
    var r = document.documentElement.dataset.content_root || "./";
    return new URL(r, window.location.href).href;
  }

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src; s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  function loadCss(href) {
    var l = document.createElement("link");
    l.rel = "stylesheet"; l.href = href; document.head.appendChild(l);
  }

  function codeOf(cell) {
    var pre = cell.querySelector(".cell_input pre");
    return pre ? pre.textContent : "";
  }

  function setStatus(text) {
    document.querySelectorAll(".book-live-status").forEach(function (s) { s.textContent = text; });
  }

  function notebookPath() {
    var rel = window.location.href.split("#")[0].split("?")[0].substring(root().length);
    return decodeURIComponent(rel).replace(/\.html$/, ".ipynb");
  }

  function runSilently(kernel, code) {
    return new Promise(function (resolve, reject) {
      var future = kernel.requestExecute({ code: code, store_history: false, stop_on_error: true });
      var error = null;
      future.onIOPub = function (msg) {
        if (msg.header.msg_type === "error") error = msg.content.ename + ": " + msg.content.evalue;
      };
      future.done.then(function (reply) {
        if (reply.content.status === "ok") resolve(); else reject(new Error(error || reply.content.status));
      }, reject);
    });
  }

  async function start() {
    var base = root();
    var server = new URL(cfg.baseUrl, window.location.origin).href;
    var token = await session;
    // one plain request first, so that a refused token gets the server's own explanation
    var check = await fetch(server + "api/status", {
      headers: { Authorization: "token " + token }, credentials: "omit", cache: "no-store",
    });
    if (check.status === 403) {
      window.sessionStorage.removeItem(TOKEN_KEY);
      throw new Error((await check.text()).trim());
    }
    var liveCells = Array.from(document.querySelectorAll("div.cell.tag_live"));
    var allCells = Array.from(document.querySelectorAll("div.cell"));
    var last = allCells.indexOf(liveCells[liveCells.length - 1]);
    var setup = allCells.slice(0, last).filter(function (c) {
      return !c.classList.contains("tag_live") && !c.classList.contains("tag_raises-exception") &&
        c.querySelector(".cell_input pre");
    });
    document.querySelectorAll(".book-live-bar button").forEach(function (b) { b.disabled = true; });
    setStatus("starting a kernel on " + server + " …");
    liveCells.forEach(function (cell) {
      var pre = cell.querySelector(".cell_input pre");
      pre.setAttribute("data-book-live", "");
      var out = document.createElement("div");
      out.className = "book-live-output";
      out.setAttribute("data-book-live-output", "");
      cell.appendChild(out);
    });
    window.BOOK_REQUIREJS_URL = base + "_static/widgets/require.js";
    loadCss(base + "_static/thebe/thebe.css");
    await loadScript(base + "_static/thebe/index.js");
    var res = await window.thebe.bootstrap({
      useBinder: false, useJupyterLite: false, requestKernel: true,
      mountActivateWidget: false, mountStatusWidget: false,
      mountRunAllButton: false, mountRestartAllButton: false,
      selector: "[data-book-live]", outputSelector: "[data-book-live-output]",
      serverSettings: { baseUrl: server, token: token, appendToken: true },
      kernelOptions: { kernelName: "python3", path: notebookPath() },
      mathjaxUrl: base + "_static/mathjax/tex-mml-chtml.js",
    });
    if (!res.session) throw new Error("the Jupyter server gave no kernel session");
    var kernel = res.session.kernel;
    // leaving the page shuts its kernel down, so that it does not count against the kernels
    // make live allows at once (--max-kernels) until it would be culled as idle
    var sessionUrl = server + "api/sessions/" + encodeURIComponent(res.session.id);
    window.addEventListener("pagehide", function () {
      fetch(sessionUrl, { method: "DELETE", keepalive: true, credentials: "omit",
                          headers: { Authorization: "token " + token } }).catch(function () {});
    });
    for (var i = 0; i < setup.length; i++) {
      setStatus("kernel ready; running setup cell " + (i + 1) + " of " + setup.length + " …");
      await runSilently(kernel, codeOf(setup[i]));
    }
    setStatus("running the live cells …");
    var results = await res.notebook.executeAll(true);
    liveCells.forEach(function (cell) {
      var stat = cell.querySelector(":scope > .cell_output");
      if (stat) stat.style.display = "none";
      cell.classList.add("book-live-running");
    });
    var failed = (results || []).some(function (r) { return r == null || r.error; });
    setStatus(failed ? "a live cell raised an error (see its output)"
                     : "live: the controls below recompute in the kernel");
    document.documentElement.dataset.bookLive = failed ? "error" : "ready";
  }

  function onClick() {
    if (!state.started) {
      state.started = start().catch(function (err) {
        console.warn("live mode failed:", err);
        setStatus("live mode failed: " + err.message);
        document.documentElement.dataset.bookLive = "error";
      });
    }
    return state.started;
  }

  // On the static website a live cell's controls would move and change nothing: switch them off
  // (greyed, out of the tab order) as the widget manager renders them.
  function inert(cell) {
    cell.classList.add("book-live-static");
    var off = function () {
      cell.querySelectorAll("select, input, button, textarea").forEach(function (el) {
        el.disabled = true;
      });
      cell.querySelectorAll(".noUi-handle, .noUi-target, [tabindex]").forEach(function (el) {
        el.setAttribute("tabindex", "-1");
        el.setAttribute("aria-disabled", "true");
      });
    };
    off();
    new MutationObserver(off).observe(cell, { childList: true, subtree: true });
  }

  function decorate() {
    var cells = document.querySelectorAll("div.cell.tag_live");
    cells.forEach(function (cell) {
      var bar = document.createElement("div");
      bar.className = "book-live-bar";
      var badge = document.createElement("span");
      badge.className = "book-live-badge"; badge.textContent = "live figure";
      bar.appendChild(badge);
      var status = document.createElement("span");
      status.className = "book-live-status";
      if (cfg && !session) {
        status.textContent = "live mode is on, but this tab has no live session: open the " +
          "launch page that `make live` printed (its key works once; press Enter in the " +
          "terminal of `make live` for a new one)";
      } else if (cfg) {
        var b = document.createElement("button");
        b.type = "button"; b.className = "book-live-run"; b.textContent = "Run live";
        b.title = "start a kernel on the local Jupyter server and recompute this figure";
        b.addEventListener("click", onClick);
        bar.appendChild(b);
        status.textContent = "computed when the book was built; press Run live to recompute";
        session.catch(function (err) {
          b.disabled = true;
          status.textContent = "live session refused: " + err.message;
        });
      } else {
        badge.textContent = "static copy";
        status.textContent = "computed when the book was built: its controls are switched off " +
          "here and recompute only in a kernel (run `make live`, or open the chapter in JupyterLab)";
        inert(cell);
      }
      bar.appendChild(status);
      cell.insertBefore(bar, cell.firstChild);
    });
    window.bookLiveStart = onClick;  // for tests and the console
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", decorate);
  else decorate();
})();
