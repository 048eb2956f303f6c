// Live-kernel settings. The static book has none; `make live` (tools/serve_live.py) answers this
// file itself with {baseUrl: "/jupyter/", session: <whether this browser opened its one-time
// address>}. It never holds a token or any other secret.
window.BOOK_LIVE = null;
