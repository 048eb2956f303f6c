"""Serve the built book with a live kernel: ``make live``.

    python tools/serve_live.py [--html _build/html] [--port 8000]

What it starts, and who can use it:

* a **Jupyter server on a Unix socket** (mode 0600, in a private 0700 folder): it has no TCP port at
  all, so no web page and no other user of this machine can reach it. Its token is random, lives
  only in this process and the server's environment, and never leaves them.
* the **book on http://127.0.0.1:PORT/**, which also forwards ``/jupyter/...`` (HTTP and
  WebSocket) to that socket, adding the token itself. The pages therefore need no token.
  A forwarded request must satisfy every one of:

  - its ``Host`` is this server's own address (``127.0.0.1:PORT`` or ``localhost:PORT``), which
    stops DNS-rebinding pages;
  - it comes from the book's own origin: ``Sec-Fetch-Site`` (sent by every current browser), if
    present, is ``same-origin``; ``Origin``, if present, is the book's; a request that changes state
    (any method but GET/HEAD) or opens a WebSocket must carry ``Origin`` (browsers always send it
    there). A page on any other origin -- another port of 127.0.0.1 included -- is refused with 403;
  - it carries the session cookie (``HttpOnly``, ``SameSite=Strict``), which the browser receives
    only by opening the one-time address that this script prints (like Jupyter's own token URL).
    So another user of the machine, who can forge headers with curl, still cannot use the proxy.

  ``/_static/book-live-config.js`` holds no secret: it says whether live mode is on and whether this
  browser already holds the session cookie.

Ctrl-C stops both servers. With ``--port 0`` a free port is chosen. The line
``LIVE READY <book url> <one-time address>`` on stdout says where it is (the browser tests read it).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from browser import _QuietHandler, serve_directory  # noqa: E402

CONFIG_PATH = "/_static/book-live-config.js"
PROXY_PREFIX = "/jupyter/"
COOKIE = "book_live_session"
LAUNCH_PARAM = "live"
# request headers never forwarded: hop-by-hop ones, the browser's credentials and origin (checked
# here, then replaced by the proxy's own token), and anything the client says about the upstream
DROP = {"host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
        "upgrade", "cookie", "authorization", "origin", "referer", "x-forwarded-for",
        "x-forwarded-host", "x-forwarded-proto", "forwarded"}
SAFE_METHODS = {"GET", "HEAD"}


def start_jupyter(sock: str, token: str, root: str) -> subprocess.Popen:
    """Start ``jupyter server`` on the Unix socket ``sock`` (0600) with base URL /jupyter/."""
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_PORT", "JUPYTER_TOKEN")}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               PYDEVD_DISABLE_FILE_VALIDATION="1", JUPYTER_TOKEN=token)  # not on the command line (ps)
    cmd = [sys.executable, "-m", "jupyter_server", "--no-browser",
           f"--ServerApp.sock={sock}", "--ServerApp.sock_mode=0600",
           f"--ServerApp.base_url={PROXY_PREFIX}", "--ServerApp.allow_origin=",
           f"--ServerApp.root_dir={root}", "--ServerApp.disable_check_xsrf=False",
           "--ServerApp.log_level=WARN"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return subprocess.Popen(cmd, env=env, cwd=root, start_new_session=True)


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


class LiveSession:
    """The secrets of one ``make live`` session and the rules a forwarded request must pass."""

    def __init__(self, port: int, sock: str, token: str):
        self.port = port
        self.sock = sock
        self.token = token                       # Jupyter's; only ever sent over the Unix socket
        self.launch = secrets.token_urlsafe(24)  # printed once; opening it sets the cookie
        self.cookie = secrets.token_urlsafe(32)  # HttpOnly: no script of any origin can read it
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    def origins(self, host: str) -> set[str]:
        return {f"http://{host}"} if host in self.hosts else set()

    def refusal(self, method: str, headers) -> str | None:
        """Why a request for /jupyter/ is refused, or None when it may be forwarded."""
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
        jar = SimpleCookie()
        try:
            jar.load(headers.get("Cookie", ""))
        except Exception:  # a malformed Cookie header is a refusal, not a crash
            return "malformed Cookie header"
        got = jar.get(COOKIE)
        if got is None or not secrets.compare_digest(got.value, self.cookie):
            return ("no live-session cookie: open the address that `make live` printed "
                    "(it carries a one-time key)")
        return None

    def has_cookie(self, headers) -> bool:
        jar = SimpleCookie()
        try:
            jar.load(headers.get("Cookie", ""))
        except Exception:
            return False
        got = jar.get(COOKIE)
        return got is not None and secrets.compare_digest(got.value, self.cookie)


def make_handler(session: LiveSession):
    class LiveHandler(_QuietHandler):
        protocol_version = "HTTP/1.1"

        def _refuse(self, code: int, why: str):
            body = (why + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def _is_proxy(self) -> bool:
            return self.path.startswith(PROXY_PREFIX) or self.path.split("?")[0] == PROXY_PREFIX[:-1]

        def _launch(self) -> bool:
            """``?live=<one-time key>``: set the session cookie and redirect to the clean URL."""
            parts = urlsplit(self.path)
            key = parse_qs(parts.query).get(LAUNCH_PARAM)
            if not key:
                return False
            if self.headers.get("Host", "") not in session.hosts or not secrets.compare_digest(
                    key[0], session.launch):
                self._refuse(403, "wrong or expired live-session key")
                return True
            self.send_response(303)
            self.send_header("Location", parts.path or "/")
            self.send_header("Set-Cookie", f"{COOKIE}={session.cookie}; HttpOnly; SameSite=Strict; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True

        def do_GET(self):
            if self._is_proxy():
                return self._proxy()
            if self._launch():
                return
            if self.path.split("?")[0] == CONFIG_PATH:
                config = {"baseUrl": PROXY_PREFIX, "session": session.has_cookie(self.headers)}
                body = (f"// written by tools/serve_live.py: live mode on; no secret in here\n"
                        f"window.BOOK_LIVE = {json.dumps(config)};\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/javascript")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if "/@jupyter-widgets/" in self.path:
                # thebe's widget manager asks for the Font Awesome files next to the page, under
                # the AMD module id; they are the ones vendored with the html-manager
                name = self.path.split("?")[0].rsplit("/", 1)[-1]
                self.path = "/_static/widgets/" + name
            super().do_GET()

        def do_HEAD(self):
            if self._is_proxy():
                return self._proxy()
            super().do_HEAD()

        def _other(self):
            if self._is_proxy():
                return self._proxy()
            self._refuse(405, f"{self.command} is not allowed here: the book is read-only")

        do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _other

        def _proxy(self):
            why = session.refusal(self.command, self.headers)
            if why is not None:
                return self._refuse(403, f"refused by make live: {why}")
            upgrade = self.headers.get("Upgrade", "").lower() == "websocket"
            length = self.headers.get("Content-Length")
            if self.headers.get("Transfer-Encoding"):
                return self._refuse(411, "chunked request bodies are not forwarded; send Content-Length")
            try:
                body = self.rfile.read(int(length)) if length else b""
            except ValueError:
                return self._refuse(400, f"bad Content-Length {length!r}")
            lines = [f"{self.command} {self.path} HTTP/1.1", "Host: 127.0.0.1",
                     f"Authorization: token {session.token}"]
            lines += [f"{k}: {v}" for k, v in self.headers.items() if k.lower() not in DROP]
            lines += ["Connection: Upgrade", "Upgrade: websocket"] if upgrade else ["Connection: close"]
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(session.sock)
                upstream.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            except OSError as e:
                upstream.close()
                return self._refuse(502, f"the Jupyter server is not answering: {e}")
            self.close_connection = True
            self.wfile.flush()
            client = self.connection
            if upgrade:  # both directions until either side closes
                t = threading.Thread(target=_pipe, args=(client, upstream), daemon=True)
                t.start()
                _pipe(upstream, client)
                t.join(5)
            else:
                _pipe(upstream, client)
            upstream.close()

    return LiveHandler


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", default=os.path.join(ROOT, "_build", "html"), help="built book folder")
    ap.add_argument("--port", type=int, default=8000, help="port of the book (0: any free port)")
    ap.add_argument("--root", default=ROOT, help="Jupyter server root (kernels start in the chapter's folder)")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.html, "index.html")):
        print(f"no built book in {args.html}: run 'make book' first", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print(f"--port must be 0..65535, got {args.port}", file=sys.stderr)
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
            session = LiveSession(port, sock, token)
            holder["cls"] = make_handler(session)
            launch = f"{base}?{LAUNCH_PARAM}={session.launch}"
            print(f"Book with live kernels on {base} (Jupyter server on a private Unix socket).")
            print(f"Open this address once, in the browser you read with (it carries a one-time key):\n"
                  f"    {launch}")
            print("then press 'Run live' above a live figure. Ctrl-C stops both servers.")
            print(f"LIVE READY {base} {launch}", flush=True)
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
