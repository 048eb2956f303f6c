// Live-kernel settings. The static book has none; `make live` (tools/serve_live.py) answers this
// file itself with {baseUrl: "/jupyter/", exchangeUrl: "/live-session"}, the same for every page
// and every origin. It never holds a token, a key or any other secret, nor whether a tab has a
// session (that token lives in the tab's sessionStorage, see book-live.js).
window.BOOK_LIVE = null;
