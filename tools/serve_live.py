"""Serve the built book with a live kernel: ``make live``.

    python tools/serve_live.py [--html _build/html] [--port 8000] [--key-ttl 300]

What it starts, and who can use it:

* a **Jupyter server on a Unix socket** (mode 0600, in a private 0700 folder): it has no TCP port at
  all, so no web page and no other user of this machine can reach it. Its token is random, lives
  only in this process and the server's environment, and never leaves them.
* the **book on http://127.0.0.1:PORT/**, which also forwards ``/jupyter/...`` (HTTP and
  WebSocket) to that socket, replacing the caller's credential by the Jupyter token itself.

The credential of a page is a **per-tab session token**, obtained like this:

1. This script prints a *launch address*, ``http://127.0.0.1:PORT/<start page>#live=KEY``. The key
   is random, valid for ``--key-ttl`` seconds (5 minutes) and for one use. It travels in the URL
   *fragment*, which a browser never sends to any server (nor in a ``Referer``).
2. The book's script (``book_static/book-live.js``) reads the key from the fragment, removes it from
   the address bar and the history, and sends it once in the header ``X-Book-Live-Key`` of a
   ``POST /live-session``. The answer is a fresh session token, which the script keeps in the
   ``sessionStorage`` of the book's origin (``http://127.0.0.1:PORT``): no page of another origin,
   another port of 127.0.0.1 included, can read it.
3. The page sends the token as ``Authorization: token ...`` on every request to ``/jupyter/`` and
   as ``?token=...`` on its WebSockets (thebe's ``serverSettings.token``). The proxy compares it in
   constant time and never forwards it.

There is **no cookie**: browsers share cookies between all ports of a host, so a cookie would reach
any page served on another port of 127.0.0.1. Cookies that the Jupyter server sets are removed from
its answers, and cookies a browser sends are never forwarded. Pressing Enter in the terminal of
``make live`` prints a new launch address (for another tab, or after the first expired).

Besides the token, a forwarded request must come with the book's own ``Host`` (``127.0.0.1:PORT``
or ``localhost:PORT``: no DNS rebinding), ``Sec-Fetch-Site: same-origin`` when the browser sends
that header, the book's ``Origin`` when one is sent, and an ``Origin`` on WebSockets and on every
method but GET/HEAD. Every answer carries ``Content-Security-Policy: frame-ancestors 'self'``,
``X-Frame-Options: SAMEORIGIN`` and ``Cross-Origin-Resource-Policy: same-origin``; a malformed
path (NUL or another control character, bad percent-encoding, ``..``) gets 400.
``/_static/book-live-config.js`` is the same for everyone: it says only that live mode is on.

Ctrl-C stops both servers. With ``--port 0`` a free port is chosen. The line
``LIVE READY <book url> <launch address>`` on stdout says where it is, and each new address is
printed as ``LIVE KEY <launch address>`` (the browser tests read both).
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from browser import _QuietHandler, serve_directory  # noqa: E402

CONFIG_PATH = "/_static/book-live-config.js"
PROXY_PREFIX = "/jupyter/"
SESSION_PATH = "/live-session"   # POST with X-Book-Live-Key: the one-time key -> a session token
KEY_HEADER = "X-Book-Live-Key"
LAUNCH_PARAM = "live"            # the launch address ends in #live=KEY
KEY_TTL = 300.0                  # seconds a launch key stays valid
# request headers never forwarded: hop-by-hop ones, the browser's credentials and origin (checked
# here, then replaced by the proxy's own token), and anything the client says about the upstream
DROP = {"host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
        "upgrade", "cookie", "authorization", "origin", "referer", "x-forwarded-for",
        "x-forwarded-host", "x-forwarded-proto", "forwarded", "expect", "x-xsrftoken",
        "x-xsrf-token", KEY_HEADER.lower()}
# answer headers of the Jupyter server never passed back: cookies (they would reach every port of
# 127.0.0.1) and any cross-origin permission
DROP_UPSTREAM = {"set-cookie", "set-cookie2", "access-control-allow-origin",
                 "access-control-allow-credentials", "access-control-allow-headers",
                 "access-control-allow-methods", "access-control-expose-headers"}
SAFE_METHODS = {"GET", "HEAD"}
#: Sent with every answer, the book's files, the refusals and the forwarded Jupyter answers alike.
SECURITY_HEADERS = [
    ("Content-Security-Policy", "frame-ancestors 'self'"),
    ("X-Frame-Options", "SAMEORIGIN"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Referrer-Policy", "same-origin"),
    ("X-Content-Type-Options", "nosniff"),
]
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def path_problem(target: str) -> str | None:
    """Why the request target ``target`` is malformed, or None when it is a plain path.

    Refused: a target that is not an absolute path, a ``%`` not followed by two hex digits, a
    percent-encoding that is not UTF-8, a control character (NUL included) in the path or query
    once decoded, and a ``..`` segment.
    """
    if not target.startswith("/"):
        return f"the request target must be a path starting with '/', got {target[:80]!r}"
    if _BAD_PERCENT.search(target):
        return "bad percent-encoding ('%' must be followed by two hex digits)"
    path, _, query = target.partition("?")
    try:
        decoded = unquote(path, errors="strict")
        decoded_query = unquote(query.replace("+", " "), errors="strict")
    except UnicodeDecodeError:
        return "percent-encoded bytes that are not UTF-8"
    if any(ord(c) < 32 or ord(c) == 127 for c in decoded + decoded_query):
        return "a control character (such as NUL, %00) in the path or query"
    if ".." in decoded.split("/"):
        return "a '..' segment in the path"
    return None


def start_jupyter(sock: str, token: str, root: str) -> subprocess.Popen:
    """Start ``jupyter server`` on the Unix socket ``sock`` (0600) with base URL /jupyter/."""
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_PORT", "JUPYTER_TOKEN")}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               PYDEVD_DISABLE_FILE_VALIDATION="1", JUPYTER_TOKEN=token,  # not on the command line (ps)
               # no configuration files, so no server extensions (JupyterLab, language servers,
               # terminals, ...) and no setting from the reader's own Jupyter configuration: the
               # live cells need the kernels API only, and the command line below says the rest
               JUPYTER_NO_CONFIG="1",
               # where that setting makes each process an empty configuration folder: the private
               # folder of this run, removed when it stops
               TMPDIR=os.path.dirname(sock))
    cmd = [sys.executable, "-m", "jupyter_server", "--no-browser",
           f"--ServerApp.sock={sock}", "--ServerApp.sock_mode=0600",
           f"--ServerApp.base_url={PROXY_PREFIX}", "--ServerApp.allow_origin=",
           f"--ServerApp.root_dir={root}", "--ServerApp.disable_check_xsrf=False",
           "--ServerApp.terminals_enabled=False",  # the live cells need kernels only
           "--ServerApp.log_level=WARN"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    # stdin: /dev/null, so that nothing under the Jupyter server reads or changes the terminal's
    # input, which make live reads for Enter
    return subprocess.Popen(cmd, env=env, cwd=root, start_new_session=True, stdin=subprocess.DEVNULL)


def unix_request(sock: str, request: bytes, timeout: float = 5) -> bytes:
    """Send one raw HTTP request over the Unix socket; return the whole response."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(sock)
        s.sendall(request)
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                return b"".join(chunks)
            chunks.append(b)


def wait_for_jupyter(proc: subprocess.Popen, sock: str, token: str, timeout: float = 60) -> None:
    t0 = time.time()
    req = (f"GET {PROXY_PREFIX}api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"Authorization: token {token}\r\nConnection: close\r\n\r\n").encode()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter server exited with code {proc.returncode}")
        try:
            if os.path.exists(sock) and unix_request(sock, req).startswith(b"HTTP/1.1 200"):
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"jupyter server did not answer on {sock} within {timeout:.0f} s")


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _read_head(upstream: socket.socket, limit: int = 65536) -> tuple[bytes, bytes]:
    """Read the status line and headers of the upstream answer: (head, bytes read after it)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = upstream.recv(65536)
        if not b:
            break
        buf += b
        if len(buf) > limit:
            raise OSError(f"the Jupyter server's answer has over {limit} bytes of headers")
    head, sep, rest = buf.partition(b"\r\n\r\n")
    if not sep:
        raise OSError("the Jupyter server closed the connection before its headers ended")
    return head, rest


def rewrite_upstream_head(head: bytes) -> bytes:
    """The Jupyter server's status line and headers, without cookies and with ours added."""
    lines = head.split(b"\r\n")
    keep = [lines[0]] + [ln for ln in lines[1:]
                         if ln.split(b":", 1)[0].strip().lower().decode("latin-1") not in DROP_UPSTREAM]
    keep += [f"{k}: {v}".encode("latin-1") for k, v in SECURITY_HEADERS]
    return b"\r\n".join(keep) + b"\r\n\r\n"


def _bearer(headers) -> str | None:
    """The token of an ``Authorization: token T`` (or ``Bearer T``) header, else None."""
    value = headers.get("Authorization")
    if not value:
        return None
    scheme, _, tok = value.strip().partition(" ")
    return tok.strip() if scheme.lower() in ("token", "bearer") and tok.strip() else ""


class LiveSession:
    """The secrets of one ``make live`` run, and the rules a request must pass.

    ``keys`` maps each unused launch key to the time it expires; a key is removed when it is
    exchanged. ``tokens`` holds the session tokens handed out (one per exchanged key, so one per
    tab). Jupyter's own token is only ever sent over the Unix socket.
    """

    def __init__(self, port: int, sock: str, token: str, *, key_ttl: float = KEY_TTL):
        if not key_ttl > 0:
            raise ValueError(f"key_ttl must be a positive number of seconds, got {key_ttl!r}")
        self.port = port
        self.sock = sock
        self.token = token
        self.key_ttl = key_ttl
        self.keys: dict[str, float] = {}
        self.spent: dict[str, str] = {}   # keys no longer valid -> why (for a clear refusal)
        self.tokens: list[str] = []
        self.lock = threading.Lock()
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    # -- launch keys and session tokens -------------------------------------------------------
    def new_key(self) -> str:
        """A fresh one-time launch key, valid for ``key_ttl`` seconds."""
        key = secrets.token_urlsafe(24)
        with self.lock:
            self.keys[key] = time.monotonic() + self.key_ttl
        return key

    def _expire(self) -> None:
        now = time.monotonic()
        for key, until in list(self.keys.items()):
            if until <= now:
                del self.keys[key]
                self.spent[key] = "expired"

    @staticmethod
    def _find(given: str, candidates) -> str | None:
        """The candidate equal to ``given`` (constant-time comparisons, all of them), else None."""
        found = None
        for c in candidates:
            if hmac.compare_digest(given.encode(), c.encode()):
                found = c
        return found

    def exchange(self, key: str) -> tuple[str | None, str]:
        """Spend the launch key ``key``: (session token, "") or (None, why it was refused)."""
        with self.lock:
            self._expire()
            hit = self._find(key, list(self.keys))
            if hit is None:
                spent = self._find(key, list(self.spent))
                if spent is None:
                    return None, "unknown live-session key"
                state = "already been used" if self.spent[spent] == "used" else "expired"
                return None, (f"this live-session key has {state}: press Enter in the terminal "
                              "of `make live` for a new address")
            del self.keys[hit]
            self.spent[hit] = "used"
            token = secrets.token_urlsafe(32)
            self.tokens.append(token)
            return token, ""

    def token_ok(self, given: str | None) -> bool:
        if not given:
            return False
        with self.lock:
            return self._find(given, self.tokens) is not None

    # -- the rules ----------------------------------------------------------------------------
    def origins(self, host: str) -> set[str]:
        return {f"http://{host}"} if host in self.hosts else set()

    def origin_refusal(self, method: str, headers) -> str | None:
        """Why a request does not come from the book's own pages (None when it may)."""
        host = headers.get("Host", "")
        if host not in self.hosts:
            return f"Host {host!r} is not this server ({' or '.join(sorted(self.hosts))})"
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site != "same-origin":
            return f"request from another origin (Sec-Fetch-Site: {site})"
        origin = headers.get("Origin")
        if origin is not None and origin not in self.origins(host):
            return f"request from another origin (Origin: {origin})"
        upgrade = headers.get("Upgrade", "").lower() == "websocket"
        if origin is None and (upgrade or method not in SAFE_METHODS):
            return "a WebSocket or state-changing request without an Origin header"
        return None

    def refusal(self, method: str, headers, query_token: str | None = None) -> str | None:
        """Why a request for /jupyter/ is refused, or None when it may be forwarded.

        ``query_token`` is the ``token`` parameter of the URL (how WebSockets carry it). Every
        credential that is given must be a valid session token, and at least one must be given.
        """
        why = self.origin_refusal(method, headers)
        if why is not None:
            return why
        given = [t for t in (_bearer(headers), query_token) if t is not None]
        if not given or not all(self.token_ok(t) for t in given):
            return ("no valid live-session token: open the address that `make live` printed "
                    "(its one-time key gives this tab a session)")
        return None


def make_handler(session: LiveSession):
    class LiveHandler(_QuietHandler):
        protocol_version = "HTTP/1.1"

        def end_headers(self):
            for k, v in SECURITY_HEADERS:
                self.send_header(k, v)
            super().end_headers()

        def _answer(self, code: int, body: bytes, ctype: str, close: bool = False):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _refuse(self, code: int, why: str):
            self._answer(code, (why + "\n").encode(), "text/plain; charset=utf-8", close=True)

        def _malformed(self) -> bool:
            why = path_problem(self.path)
            if why is not None:
                self._refuse(400, f"bad request: {why}")
                return True
            return False

        def _is_proxy(self) -> bool:
            return self.path.startswith(PROXY_PREFIX) or self.path.split("?")[0] == PROXY_PREFIX[:-1]

        def _session(self):
            """POST /live-session: the one-time key (header X-Book-Live-Key) for a session token."""
            why = session.origin_refusal("POST", self.headers)
            if why is not None:
                return self._refuse(403, f"refused by make live: {why}")
            key = self.headers.get(KEY_HEADER)
            if not key:
                return self._refuse(403, f"refused by make live: no {KEY_HEADER} header")
            token, why = session.exchange(key.strip())
            if token is None:
                return self._refuse(403, f"refused by make live: {why}")
            # close: a request body, if any was sent, is never read
            self._answer(200, json.dumps({"token": token}).encode(), "application/json", close=True)

        def do_GET(self):
            if self._malformed():
                return
            if self._is_proxy():
                return self._proxy()
            if self.path.split("?")[0] == CONFIG_PATH:
                config = {"baseUrl": PROXY_PREFIX, "exchangeUrl": SESSION_PATH}
                body = (f"// written by tools/serve_live.py: live mode on; the same for every "
                        f"page, and no secret in here\nwindow.BOOK_LIVE = {json.dumps(config)};\n")
                return self._answer(200, body.encode(), "text/javascript")
            if "/@jupyter-widgets/" in self.path:
                # thebe's widget manager asks for the Font Awesome files next to the page, under
                # the AMD module id; they are the ones vendored with the html-manager
                name = self.path.split("?")[0].rsplit("/", 1)[-1]
                self.path = "/_static/widgets/" + name
            try:
                super().do_GET()
            except ValueError as e:  # never a dropped connection; path_problem should catch all
                self._refuse(400, f"bad request: {e}")

        def do_HEAD(self):
            if self._malformed():
                return
            if self._is_proxy():
                return self._proxy()
            try:
                super().do_HEAD()
            except ValueError as e:
                self._refuse(400, f"bad request: {e}")

        def do_POST(self):
            if self._malformed():
                return
            if self.path == SESSION_PATH:
                return self._session()
            self._other()

        def _other(self):
            if self._malformed():
                return
            if self._is_proxy():
                return self._proxy()
            self._refuse(405, f"{self.command} is not allowed here: the book is read-only")

        do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _other

        def _proxy(self):
            path, _, query = self.path.partition("?")
            params = parse_qsl(query, keep_blank_values=True)
            query_tokens = [v for k, v in params if k == "token"]
            if len(query_tokens) > 1:
                return self._refuse(403, "refused by make live: more than one token parameter")
            why = session.refusal(self.command, self.headers, query_tokens[0] if query_tokens else None)
            if why is not None:
                return self._refuse(403, f"refused by make live: {why}")
            rest = urlencode([(k, v) for k, v in params if k != "token"], quote_via=quote)
            target = path + ("?" + rest if rest else "")
            upgrade = self.headers.get("Upgrade", "").lower() == "websocket"
            length = self.headers.get("Content-Length")
            if self.headers.get("Transfer-Encoding"):
                return self._refuse(411, "chunked request bodies are not forwarded; send Content-Length")
            try:
                n = int(length) if length else 0
                if n < 0:
                    raise ValueError
                body = self.rfile.read(n) if n else b""
            except ValueError:
                return self._refuse(400, f"bad Content-Length {length!r}")
            lines = [f"{self.command} {target} HTTP/1.1", "Host: 127.0.0.1",
                     f"Authorization: token {session.token}"]
            lines += [f"{k}: {v}" for k, v in self.headers.items() if k.lower() not in DROP]
            lines += ["Connection: Upgrade", "Upgrade: websocket"] if upgrade else ["Connection: close"]
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(session.sock)
                upstream.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
                head, rest_bytes = _read_head(upstream)
            except OSError as e:
                upstream.close()
                return self._refuse(502, f"the Jupyter server is not answering: {e}")
            self.close_connection = True
            self.wfile.flush()
            client = self.connection
            try:
                client.sendall(rewrite_upstream_head(head) + rest_bytes)
            except OSError:
                upstream.close()
                return
            if upgrade:  # both directions until either side closes
                t = threading.Thread(target=_pipe, args=(client, upstream), daemon=True)
                t.start()
                _pipe(upstream, client)
                t.join(5)
            else:
                _pipe(upstream, client)
            upstream.close()

    return LiveHandler


def start_page(html: str) -> str:
    """The page the book's ``index.html`` redirects to (relative to the root), else ''."""
    try:
        text = open(os.path.join(html, "index.html"), encoding="utf-8").read()
    except OSError:
        return ""
    m = re.search(r"""http-equiv=["']?refresh["']?[^>]*content=["'][^"']*url=([^"'>\s]+)""", text, re.I)
    target = m.group(1) if m else ""
    if not target or "://" in target or target.startswith("/") or path_problem("/" + target):
        return ""
    return target


def enter_presses(fd: int):
    """Yield once for each newline read from the file descriptor ``fd``; stop at its end.

    The terminal's input is one open file shared by every process that inherits it, and a
    program among them may switch it to non-blocking mode for a while (Node does, for example).
    A plain ``for line in sys.stdin`` then meets EAGAIN and ends as if the input had closed, and
    Enter silently stops working. Here a read that would block waits until there is input.
    """
    while True:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            select.select([fd], [], [], 1.0)
            continue
        except OSError:  # no usable input (closed or invalid): no new addresses on Enter
            return
        if not data:
            return
        for _ in range(data.count(b"\n")):
            yield


def _offer_new_keys(session: LiveSession, address) -> None:
    """Each Enter in the terminal (a line on stdin) prints a new launch address."""
    for _ in enter_presses(0):
        url = address(session.new_key())
        print(f"New one-time address (valid {session.key_ttl / 60:g} minutes):\n    {url}")
        print(f"LIVE KEY {url}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", default=os.path.join(ROOT, "_build", "html"), help="built book folder")
    ap.add_argument("--port", type=int, default=8000, help="port of the book (0: any free port)")
    ap.add_argument("--root", default=ROOT, help="Jupyter server root (kernels start in the chapter's folder)")
    ap.add_argument("--key-ttl", type=float, default=KEY_TTL,
                    help=f"seconds a one-time launch key stays valid (default {KEY_TTL:g})")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.html, "index.html")):
        print(f"no built book in {args.html}: run 'make book' first", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print(f"--port must be 0..65535, got {args.port}", file=sys.stderr)
        return 2
    if not 0 < args.key_ttl <= 86400:
        print(f"--key-ttl must be in (0, 86400] seconds, got {args.key_ttl:g}", file=sys.stderr)
        return 2

    private = tempfile.mkdtemp(prefix="book-live-")  # mode 0700
    sock = os.path.join(private, "jupyter.sock")
    token = secrets.token_hex(32)
    proc = start_jupyter(sock, token, os.path.abspath(args.root))
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        wait_for_jupyter(proc, sock, token)
        holder = {}

        def handler(*a, **kw):
            return holder["cls"](*a, **kw)

        with serve_directory(args.html, port=args.port, handler=handler) as base:
            port = urlsplit(base).port
            session = LiveSession(port, sock, token, key_ttl=args.key_ttl)
            holder["cls"] = make_handler(session)
            first = start_page(args.html)

            def address(key: str) -> str:
                return f"{base}{first}#{LAUNCH_PARAM}={key}"

            launch = address(session.new_key())
            print(f"Book with live kernels on {base} (Jupyter server on a private Unix socket).")
            print(f"Open this address in the browser tab you read with; its key works once, within "
                  f"{args.key_ttl / 60:g} minutes:\n    {launch}")
            print("then press 'Run live' above a live figure. Press Enter here for a new address "
                  "(another tab, or an expired key); Ctrl-C stops both servers.")
            print(f"LIVE READY {base} {launch}", flush=True)
            threading.Thread(target=_offer_new_keys, args=(session, address), daemon=True).start()
            while not stop["now"] and proc.poll() is None:
                time.sleep(0.3)
            if proc.poll() is not None and not stop["now"]:
                print(f"jupyter server exited with code {proc.returncode}", file=sys.stderr)
                return 1
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(private, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
