// Live-kernel settings. The static book has none; `make live` (tools/serve_live.py) serves this
// file with the address and token of its Jupyter server on 127.0.0.1.
window.BOOK_LIVE = null;
