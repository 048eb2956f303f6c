"""Serve the built book with a live kernel: ``make live``.

    python tools/serve_live.py [--html _build/html] [--port 8000] [--key-ttl 300]
        [--token-idle 3600] [--kernel-idle 3600] [--max-kernels 4]

What it starts, and who can use it:

* a **private folder** (mode 0700, ``book-live-*`` in the temporary folder, ``$TMPDIR``) that holds
  everything of this run that another user must not reach: the Jupyter server's Unix socket, the
  kernels' sockets and connection files, and the launch pages. It is removed when the run ends.
* a **Jupyter server on a Unix socket** (mode 0600) in that folder: it has no TCP port at all, and its
  kernels talk to it over ZeroMQ's ``ipc`` transport, sockets in the same folder: no kernel has a TCP
  port either (``serve_live.py --kernel`` starts ipykernel with its one other socket, the pipe for
  the output of forked subprocesses, on ipc too). Its token is random and is handed to it in its
  environment, which the server removes from its own environment before any kernel starts (no
  kernel inherits it). The server runs ``tools/serve_live.py --jupyter-server ...`` and dies with
  this process (a parent-death signal and a watchdog), its kernels with it (ipykernel's own parent
  watch).
* the **book on http://127.0.0.1:PORT/**, which also forwards ``/jupyter/...`` (HTTP and
  WebSocket) to that socket, replacing the caller's credential by the Jupyter token itself.

The credential of a page is a **per-tab session token**, obtained like this:

1. This script writes a *launch page*, ``launch-N.html`` (mode 0600) in the private folder, and
   prints its ``file://`` address. That address holds no secret, so it may safely reach a command
   line (``xdg-open``, ``chromium file:///...``), which every user of the machine can read in
   ``/proc``. The page sends the browser on to ``http://127.0.0.1:PORT/<start page>#live=KEY``. The
   key is random, valid for ``--key-ttl`` seconds (5 minutes) and for one use. It travels in the URL
   *fragment*, which a browser never sends to any server (nor in a ``Referer``).
2. The book's script (``book_static/book-live.js``) reads the key from the fragment, removes it from
   the address bar and the history, and sends it once in the header ``X-Book-Live-Key`` of a
   ``POST /live-session``. The answer is a fresh session token, which the script keeps in the
   ``sessionStorage`` of the book's origin (``http://127.0.0.1:PORT``): no page of another origin,
   another port of 127.0.0.1 included, can read it. A key that was already spent and is presented
   again revokes the session it opened (its token stops working, its kernels are shut down, its
   WebSockets closed) and a warning is printed: someone else may have used it first.
3. The page sends the token as ``Authorization: token ...`` on every request to ``/jupyter/`` and
   as ``?token=...`` on its WebSockets (thebe's ``serverSettings.token``). The proxy compares it in
   constant time and never forwards it. A token unused for ``--token-idle`` seconds (an hour;
   traffic on its WebSockets counts as use) expires.

There is **no cookie**: browsers share cookies between all ports of a host, so a cookie would reach
any page served on another port of 127.0.0.1. Cookies that the Jupyter server sets are removed from
its answers, and cookies a browser sends are never forwarded. Pressing Enter in the terminal of
``make live`` writes a new launch page (for another tab, or after the first key expired).

Every request must come with the book's own ``Host`` (``127.0.0.1:PORT`` or ``localhost:PORT``: no
DNS rebinding), and with at most one ``Host``, ``Origin``, ``Sec-Fetch-Site``, ``Authorization``,
``Content-Length``, ``Transfer-Encoding``, ``Upgrade`` and ``X-Book-Live-Key`` header. A forwarded
request also needs ``Sec-Fetch-Site: same-origin`` when the browser sends that header, the book's
``Origin`` when one is sent, and an ``Origin`` on WebSockets and on every method but GET/HEAD. Every
answer carries ``Content-Security-Policy: frame-ancestors 'self'``, ``X-Frame-Options: SAMEORIGIN``
and ``Cross-Origin-Resource-Policy: same-origin``; a malformed path (NUL or another control
character, bad percent-encoding, ``..``) gets 400. A forwarded body is streamed, never buffered, and
refused (413) over 32 MiB. At most ``--max-kernels`` kernels run at once (429 beyond); a kernel idle
for ``--kernel-idle`` seconds with no tab connected is shut down.
``/_static/book-live-config.js`` is the same for everyone: it says only that live mode is on.

Against a flood of connections (another user can connect to 127.0.0.1 too): a connection must send
its request's headers within ``HEAD_TIMEOUT`` seconds and each read or write of an answer may wait
``IO_TIMEOUT`` seconds; open connections are capped below the file-descriptor limit, and a new one
beyond the cap closes the oldest connection that is still waiting for its headers; when the system
refuses a new file descriptor (EMFILE) the server lowers the cap and backs off instead of spinning.

Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a dropped SSH connection) stop both servers and remove
the private folder; so does the end of the process that started this one (make), unless SIGHUP is
ignored (``nohup``). With ``--port 0`` a free port is chosen. The line
``LIVE READY <book url> <launch page address>`` on stdout says where it is, and each new launch page
is printed as ``LIVE KEY <launch page address>`` (the browser tests read both).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import hmac
import html
import http.server
import json
import os
import pathlib
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

CONFIG_PATH = "/_static/book-live-config.js"
PROXY_PREFIX = "/jupyter/"
SESSION_PATH = "/live-session"   # POST with X-Book-Live-Key: the one-time key -> a session token
KEY_HEADER = "X-Book-Live-Key"
LAUNCH_PARAM = "live"            # the launch address ends in #live=KEY
KEY_TTL = 300.0                  # seconds a launch key stays valid
TOKEN_IDLE = 3600.0              # seconds a session token stays valid without being used
KERNEL_IDLE = 3600               # seconds an unconnected idle kernel lives (Jupyter's culler)
MAX_KERNELS = 4                  # kernels running at once
HEAD_TIMEOUT = 15.0              # seconds a connection may take to send a request's headers
IO_TIMEOUT = 30.0                # seconds one read or write of an HTTP exchange may wait
MAX_BODY = 32 * 1024 * 1024      # bytes of a forwarded request body
MAX_SMALL_BODY = 1024 * 1024     # bytes of a body read here (the requests that start kernels)
FD_HEADROOM = 32                 # file descriptors kept free when EMFILE lowers the connection cap
MAX_PRIVATE_PATH = 60            # characters of the private folder's path (Unix sockets: 107 in all)
#: request headers that may appear once at most (two could be read differently by two parsers)
SINGLE_HEADERS = ("Host", "Origin", "Sec-Fetch-Site", "Authorization", "Content-Length",
                  "Transfer-Encoding", "Upgrade", KEY_HEADER)
# request headers never forwarded: hop-by-hop ones, the browser's credentials and origin (checked
# here, then replaced by the proxy's own token), and anything the client says about the upstream
DROP = {"host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
        "upgrade", "cookie", "authorization", "origin", "referer", "x-forwarded-for",
        "x-forwarded-host", "x-forwarded-proto", "forwarded", "expect", "x-xsrftoken",
        "x-xsrf-token", "content-length", KEY_HEADER.lower()}
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
#: the requests that may start a kernel (POST) or replace one (PATCH of a session)
_KERNEL_MAKERS = re.compile(r"^/jupyter/api/(kernels|sessions)/?$")
_SESSION_PATCH = re.compile(r"^/jupyter/api/sessions/[^/]+/?$")


def warn(text: str) -> None:
    """A line on stderr (the terminal of make live); never fails, also after a hang-up."""
    try:
        print(f"make live: {text}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


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


# -- the Jupyter server ------------------------------------------------------------------------

def jupyter_command(sock: str, root: str, *, kernel_idle: int = KERNEL_IDLE) -> list[str]:
    """The command line of the Jupyter server (no secret in it: every user can read it)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--jupyter-server", "--no-browser",
           f"--ServerApp.sock={sock}", "--ServerApp.sock_mode=0600",
           f"--ServerApp.base_url={PROXY_PREFIX}", "--ServerApp.allow_origin=",
           f"--ServerApp.root_dir={root}", "--ServerApp.disable_check_xsrf=False",
           "--ServerApp.terminals_enabled=False",  # the live cells need kernels only
           # kernels on ZeroMQ's ipc transport: their sockets lie next to their connection files,
           # in the runtime folder, which is the private folder (no kernel TCP port)
           "--KernelManager.transport=ipc",
           # kernels that no tab is connected to and that did nothing for kernel_idle seconds
           f"--MappingKernelManager.cull_idle_timeout={kernel_idle}",
           f"--MappingKernelManager.cull_interval={max(1, min(60, kernel_idle // 2))}",
           "--MappingKernelManager.cull_connected=False",
           "--ServerApp.log_level=WARN"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def write_kernel_spec(folder: str) -> str:
    """The kernel spec ``python3`` of make live, in ``folder/kernels/python3`` (found first on
    ``JUPYTER_PATH=folder``): ipykernel started by :func:`run_kernel`. Returns ``folder``."""
    spec = os.path.join(folder, "kernels", "python3")
    os.makedirs(spec, mode=0o700, exist_ok=True)
    with open(os.path.join(spec, "kernel.json"), "w", encoding="utf-8") as f:
        json.dump({"argv": [sys.executable, os.path.abspath(__file__), "--kernel", "-f", "{connection_file}"],
                   "display_name": "Python 3 (make live)", "language": "python",
                   "metadata": {"debugger": False}}, f)
    return folder


def run_kernel(argv: list[str]) -> int:
    """``serve_live.py --kernel -f CONNECTION_FILE``: an ipykernel with no TCP port at all.

    Its five channels follow the connection file (ipc). ipykernel also opens one socket of its own,
    the pipe that carries the output of forked subprocesses, and binds it to a random TCP port of
    127.0.0.1; here it is bound to an ipc socket next to the others, in the private folder.
    """
    if sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
        del sys.path[0]  # the kernel's imports are the reader's, not this folder's
    if "-f" not in argv or argv.index("-f") + 1 >= len(argv):
        print("serve_live.py --kernel needs -f CONNECTION_FILE (it is started by the Jupyter "
              "server of make live)", file=sys.stderr)
        return 2
    import zmq
    from ipykernel import iostream, kernelapp
    from zmq.eventloop.zmqstream import ZMQStream

    endpoint = "ipc://" + os.path.splitext(argv[argv.index("-f") + 1])[0] + "-ipc-pipe"

    def _setup_pipe_in(self):
        self._pipe_uuid = os.urandom(16)  # as ipykernel does: authenticates pipe messages
        pipe_in = self.socket.context.socket(zmq.PULL)
        pipe_in.linger = 0
        pipe_in.bind(endpoint)
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def _setup_pipe_out(self):
        ctx = zmq.Context()  # a new context after a fork
        pipe_out = ctx.socket(zmq.PUSH)
        pipe_out.linger = 3000
        pipe_out.connect(endpoint)
        return ctx, pipe_out

    if not all(hasattr(iostream.IOPubThread, n) for n in ("_setup_pipe_in", "_setup_pipe_out")):
        raise RuntimeError("this ipykernel has no IOPubThread._setup_pipe_in/_setup_pipe_out: "
                           "tools/serve_live.py expects ipykernel 7 (see requirements.txt)")
    iostream.IOPubThread._setup_pipe_in = _setup_pipe_in
    iostream.IOPubThread._setup_pipe_out = _setup_pipe_out
    sys.argv = [sys.argv[0], *argv]
    kernelapp.launch_new_instance()
    return 0


def start_jupyter(sock: str, token: str, root: str, *, kernel_idle: int = KERNEL_IDLE) -> subprocess.Popen:
    """Start the Jupyter server on the Unix socket ``sock`` (0600) with base URL /jupyter/.

    Everything it writes (its socket, its runtime files, the kernels' connection files and ipc
    sockets, any temporary file) goes to the private folder that holds ``sock``.
    """
    private = os.path.dirname(sock)
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_PORT", "JUPYTER_TOKEN")}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               PYDEVD_DISABLE_FILE_VALIDATION="1",
               # read and removed by run_jupyter_server before anything starts: not on a command
               # line (ps), and not inherited by the kernels
               BOOK_LIVE_TOKEN=token, BOOK_LIVE_PARENT=str(os.getpid()), BOOK_LIVE_FOLDER=private,
               # no configuration files, so no server extensions (JupyterLab, language servers,
               # terminals, ...) and no setting from the reader's own Jupyter configuration: the
               # live cells need the kernels API only, and the command line says the rest
               JUPYTER_NO_CONFIG="1",
               # runtime files (connection files, the server's info file) and the kernels' ipc
               # sockets in the private folder, not in ~/.local/share/jupyter/runtime
               JUPYTER_RUNTIME_DIR=private,
               # the kernel spec python3 of make live (run_kernel) before any other
               JUPYTER_PATH=os.pathsep.join(filter(None, [write_kernel_spec(private),
                                                          os.environ.get("JUPYTER_PATH")])),
               # where JUPYTER_NO_CONFIG makes each process an empty configuration folder
               TMPDIR=private)
    # stdin: /dev/null, so that nothing under the Jupyter server reads or changes the terminal's
    # input, which make live reads for Enter. A new session: a Ctrl-C in the terminal reaches make
    # live alone, which then stops the server in order (and the server dies with make live).
    return subprocess.Popen(jupyter_command(sock, root, kernel_idle=kernel_idle), env=env, cwd=root,
                            start_new_session=True, stdin=subprocess.DEVNULL)


def _die_with_parent(parent: int) -> None:
    """End this process (SIGTERM: Jupyter's own orderly stop) when ``parent`` is gone.

    Linux sends the signal itself when the parent dies (``PR_SET_PDEATHSIG``); a watchdog thread,
    checking once a second that the parent is still ``parent``, covers the rest and the moment
    before the signal was armed.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        sys.exit("make live: the process that started this one is gone")

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="parent-watchdog").start()


def run_jupyter_server(argv: list[str]) -> int:
    """``serve_live.py --jupyter-server ARGS``: the Jupyter server of make live (see start_jupyter)."""
    token = os.environ.pop("BOOK_LIVE_TOKEN", "")
    parent = os.environ.pop("BOOK_LIVE_PARENT", "")
    private = os.environ.pop("BOOK_LIVE_FOLDER", "")
    if not token or not parent.isdigit() or not private:
        print("serve_live.py --jupyter-server is started by make live (tools/serve_live.py), which "
              "passes BOOK_LIVE_TOKEN, BOOK_LIVE_PARENT and BOOK_LIVE_FOLDER", file=sys.stderr)
        return 2
    _die_with_parent(int(parent))
    os.umask(0o077)  # every file and socket of the server and its kernels: the owner's alone
    from jupyter_server.serverapp import ServerApp
    from traitlets.config import Config

    config = Config()
    config.IdentityProvider.token = token
    try:
        ServerApp.launch_instance(argv=argv, config=config)
    finally:
        if os.getppid() != int(parent):  # orphaned: make live cannot remove its folder any more
            shutil.rmtree(private, ignore_errors=True)
    return 0


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


def split_answer(answer: bytes) -> tuple[int, bytes]:
    """(status, body) of a whole HTTP/1.1 answer; a chunked body is decoded."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise OSError(f"not an HTTP answer: {answer[:80]!r}") from None
    if any(ln.lower().replace(b" ", b"") == b"transfer-encoding:chunked" for ln in lines[1:]):
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return status, body


def jupyter_api(sock: str, token: str, method: str, path: str, body: bytes | None = None):
    """(status, decoded JSON or None) of one request to the Jupyter server's REST API."""
    data = body or b""
    req = (f"{method} {PROXY_PREFIX}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"Authorization: token {token}\r\nContent-Length: {len(data)}\r\n"
           "Content-Type: application/json\r\nConnection: close\r\n\r\n").encode() + data
    status, payload = split_answer(unix_request(sock, req, timeout=30))
    try:
        return status, json.loads(payload) if payload.strip() else None
    except ValueError:
        return status, None


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


def _pipe(src: socket.socket, dst: socket.socket, on_data=None) -> None:
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
            if on_data is not None:
                on_data()
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


class _Tab:
    """What one session token opened: when it was last used, its kernels, its open WebSockets."""

    def __init__(self, key: str):
        self.key = key
        self.last_used = time.monotonic()
        self.kernels: set[str] = set()
        self.sockets: set[socket.socket] = set()


class LiveSession:
    """The secrets of one ``make live`` run, and the rules a request must pass.

    ``keys`` maps each unused launch key to the time it expires; a key is removed when it is
    exchanged. ``tokens`` maps the session tokens handed out (one per exchanged key, so one per
    tab) to what each opened. Jupyter's own token is only ever sent over the Unix socket.
    """

    def __init__(self, port: int, sock: str, token: str, *, key_ttl: float = KEY_TTL,
                 token_idle: float = TOKEN_IDLE, max_kernels: int = MAX_KERNELS):
        if not key_ttl > 0:
            raise ValueError(f"key_ttl must be a positive number of seconds, got {key_ttl!r}")
        if not token_idle > 0:
            raise ValueError(f"token_idle must be a positive number of seconds, got {token_idle!r}")
        if not (isinstance(max_kernels, int) and max_kernels >= 1):
            raise ValueError(f"max_kernels must be a whole number >= 1, got {max_kernels!r}")
        self.port = port
        self.sock = sock
        self.token = token
        self.key_ttl = key_ttl
        self.token_idle = token_idle
        self.max_kernels = max_kernels
        self.keys: dict[str, float] = {}
        self.spent: dict[str, str] = {}    # keys no longer valid -> "expired" or the token it gave
        self.tokens: dict[str, _Tab] = {}
        self.ended: dict[str, str] = {}    # tokens no longer valid -> why (for a clear refusal)
        self.lock = threading.Lock()
        self.kernel_lock = threading.Lock()  # one kernel start at a time (the cap)
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
        for token, tab in list(self.tokens.items()):
            if now - tab.last_used > self.token_idle:
                del self.tokens[token]
                self.ended[token] = (f"this tab's live session expired after {self.token_idle / 60:g} "
                                     "minutes without use")

    @staticmethod
    def _find(given: str, candidates) -> str | None:
        """The candidate equal to ``given`` (constant-time comparisons, all of them), else None."""
        found = None
        for c in candidates:
            if hmac.compare_digest(given.encode(), c.encode()):
                found = c
        return found

    def exchange(self, key: str) -> tuple[str | None, str]:
        """Spend the launch key ``key``: (session token, "") or (None, why it was refused).

        A key that was already exchanged and is presented again revokes the session it opened:
        either the reader opened the launch page twice, or someone else used the key first. Its
        kernels are shut down and its WebSockets closed; a warning goes to the terminal.
        """
        with self.lock:
            self._expire()
            hit = self._find(key, list(self.keys))
            if hit is None:
                spent = self._find(key, list(self.spent))
                if spent is None:
                    return None, "unknown live-session key"
                if self.spent[spent] == "expired":
                    return None, ("this live-session key has expired: press Enter in the terminal "
                                  "of `make live` for a new launch page")
                tab = self.tokens.pop(self.spent[spent], None)
                self.ended[self.spent[spent]] = ("this live session was revoked: its launch key "
                                                 "was presented a second time")
            else:
                del self.keys[hit]
                token = secrets.token_urlsafe(32)
                self.spent[hit] = token
                self.tokens[token] = _Tab(hit)
                return token, ""
        kernels = self._revoke(tab) if tab is not None else []
        warn("WARNING: a launch key was presented a second time. Either its launch page was opened "
             "twice, or someone else used the key first. The session it opened is revoked"
             + (f" and its {len(kernels)} kernel(s) shut down" if kernels else "")
             + ". Press Enter for a new launch page.")
        return None, ("this live-session key has already been used. If not by you (in another "
                      "tab), someone else used it first: the session it opened is now revoked. "
                      "Press Enter in the terminal of `make live` for a new launch page")

    def _revoke(self, tab: _Tab) -> list[str]:
        """Close the WebSockets of a revoked tab and shut down its kernels; their ids."""
        for s in list(tab.sockets):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        done = []
        for kernel in sorted(tab.kernels):
            with contextlib.suppress(OSError, ValueError):
                status, _ = jupyter_api(self.sock, self.token, "DELETE", f"api/kernels/{quote(kernel)}")
                if status in (204, 404):
                    done.append(kernel)
        return done

    def token_problem(self, given: str | None) -> str | None:
        """Why ``given`` is not a valid session token (None when it is; its use is noted)."""
        if not given:
            return "no live-session token"
        with self.lock:
            self._expire()
            hit = self._find(given, list(self.tokens))
            if hit is not None:
                self.tokens[hit].last_used = time.monotonic()
                return None
            ended = self._find(given, list(self.ended))
            if ended is not None:
                return self.ended[ended]
        return "no valid live-session token"

    def token_ok(self, given: str | None) -> bool:
        return self.token_problem(given) is None

    def tab(self, token: str) -> _Tab | None:
        with self.lock:
            return self.tokens.get(token)

    def touch(self, token: str) -> None:
        """Traffic of this token's WebSockets counts as use."""
        tab = self.tokens.get(token)
        if tab is not None:
            tab.last_used = time.monotonic()

    # -- the rules ----------------------------------------------------------------------------
    def origins(self, host: str) -> set[str]:
        return {f"http://{host}"} if host in self.hosts else set()

    def header_problem(self, headers) -> str | None:
        """Why the headers are not those of a request to this server (None when they are)."""
        for name in SINGLE_HEADERS:
            if len(headers.get_all(name) or []) > 1:
                return f"more than one {name} header (send it once)"
        host = headers.get("Host", "")
        if host not in self.hosts:
            return f"Host {host!r} is not this server (expected {' or '.join(sorted(self.hosts))})"
        return None

    def origin_refusal(self, method: str, headers) -> str | None:
        """Why a request does not come from the book's own pages (None when it may)."""
        why = self.header_problem(headers)
        if why is not None:
            return why
        host = headers.get("Host", "")
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
        if given and len(set(given)) > 1:
            return "two different live-session tokens"
        problem = self.token_problem(given[0] if given else None)
        if problem is not None:
            return (f"{problem}: open the launch page that `make live` printed (its one-time key "
                    "gives this tab a session), or press Enter there for a new one")
        return None

    def kernel_count(self) -> int:
        status, kernels = jupyter_api(self.sock, self.token, "GET", "api/kernels")
        if status != 200 or not isinstance(kernels, list):
            raise OSError(f"the Jupyter server answered {status} to the list of kernels")
        return len(kernels)

    def session_exists(self, path: str) -> bool:
        status, sessions = jupyter_api(self.sock, self.token, "GET", "api/sessions")
        return status == 200 and isinstance(sessions, list) and any(
            s.get("path") == path and s.get("kernel") for s in sessions)


# -- the book's server -------------------------------------------------------------------------

def connection_cap() -> int:
    """Open connections allowed at once: half the file descriptors this process may open (a
    forwarded request holds two), less a reserve for the files it serves; 8 to 1024."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = 1 << 16
    except (ImportError, OSError, ValueError):
        soft = 1024
    return max(8, min(1024, (soft - 64) // 2))


class LiveServer(http.server.ThreadingHTTPServer):
    """A threaded HTTP server on 127.0.0.1 that a flood of idle connections cannot stall.

    Each connection is ``"head"`` (waiting for a request's headers), ``"busy"`` (a request is being
    answered) or ``"ws"`` (a forwarded WebSocket). A connection in ``"head"`` for ``head_timeout``
    seconds is closed. At ``max_connections`` open connections a new one closes the oldest in
    ``"head"`` (or, when every one is busy, gets 503). When ``accept`` finds no free file descriptor
    (EMFILE), the cap is lowered to ``FD_HEADROOM`` below the connections open, waiting ones are
    closed down to it, and the server waits a little, doubling up to a second, rather than trying
    again at once; this is noted once in ten seconds.
    """

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, address, handler, *, max_connections: int | None = None,
                 head_timeout: float = HEAD_TIMEOUT):
        if max_connections is not None and max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections!r}")
        if not head_timeout > 0:
            raise ValueError(f"head_timeout must be a positive number of seconds, got {head_timeout!r}")
        super().__init__(address, handler)
        self.max_connections = max_connections or connection_cap()
        self.head_timeout = head_timeout
        self.conns: dict[socket.socket, list] = {}
        self.conn_lock = threading.Lock()
        self.closed_waiting = 0      # connections closed for waiting too long or for a newer one
        self._backoff = 0.0
        self._noted = 0.0
        self._reaped = 0.0

    # connection states
    def mark(self, sock: socket.socket, state: str) -> None:
        with self.conn_lock:
            if sock in self.conns:
                self.conns[sock] = [state, time.monotonic()]

    def _drop(self, sock: socket.socket) -> None:
        self.conns.pop(sock, None)
        self.closed_waiting += 1
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def _oldest_waiting(self) -> socket.socket | None:
        waiting = [(since, id(s), s) for s, (state, since) in self.conns.items() if state == "head"]
        return min(waiting)[2] if waiting else None

    def get_request(self):
        try:
            request = self.socket.accept()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                with self.conn_lock:
                    # the cap was too high for the file descriptors there are: lower it, leaving
                    # room for the files served and the sockets to the Jupyter server, and close
                    # waiting connections (oldest first) down to it
                    self.max_connections = max(8, min(self.max_connections, len(self.conns) - FD_HEADROOM))
                    while True:
                        victim = self._oldest_waiting()
                        if victim is None:
                            break
                        self._drop(victim)
                        if len(self.conns) < self.max_connections:
                            break
                now = time.monotonic()
                if now - self._noted > 10:
                    self._noted = now
                    warn(f"no free file descriptor for a new connection ({e.strerror}): closing "
                         f"waiting connections, backing off, and allowing {self.max_connections} "
                         "open connections from now on")
                self._backoff = min(1.0, max(0.01, 2 * self._backoff))
                time.sleep(self._backoff)
            raise
        self._backoff = 0.0
        return request

    def verify_request(self, request, client_address) -> bool:
        with self.conn_lock:
            if len(self.conns) >= self.max_connections:
                victim = self._oldest_waiting()
                if victim is None:
                    body = b"make live: too many open connections, try again\n"
                    with contextlib.suppress(OSError):
                        request.send(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                                     b"Content-Type: text/plain\r\nContent-Length: "
                                     + str(len(body)).encode() + b"\r\n\r\n" + body, socket.MSG_DONTWAIT)
                    return False
                self._drop(victim)
            self.conns[request] = ["head", time.monotonic()]
        return True

    def shutdown_request(self, request) -> None:
        with self.conn_lock:
            self.conns.pop(request, None)
        super().shutdown_request(request)

    def service_actions(self) -> None:
        now = time.monotonic()
        if now - self._reaped < 0.25:
            return
        self._reaped = now
        with self.conn_lock:
            for sock, (state, since) in list(self.conns.items()):
                if state == "head" and now - since > self.head_timeout:
                    self._drop(sock)

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], OSError):  # a client that went away, a timeout
            return
        super().handle_error(request, client_address)


@contextlib.contextmanager
def serve_book(directory: str, *, port: int = 0, handler, max_connections: int | None = None,
               head_timeout: float = HEAD_TIMEOUT):
    """Serve ``directory`` with ``handler`` on http://127.0.0.1:PORT/ (a :class:`LiveServer` in a
    thread); yields the server, whose ``url`` is the base URL."""
    directory = os.path.abspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory to serve does not exist: {directory!r}")
    server = LiveServer(("127.0.0.1", port), functools.partial(handler, directory=directory),
                        max_connections=max_connections, head_timeout=head_timeout)
    server.url = f"http://127.0.0.1:{server.server_address[1]}/"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.25}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def make_handler(session: LiveSession):
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from browser import _QuietHandler

    class LiveHandler(_QuietHandler):
        protocol_version = "HTTP/1.1"
        timeout = IO_TIMEOUT  # each read and write of the connection (StreamRequestHandler)

        def _mark(self, state: str):
            mark = getattr(self.server, "mark", None)
            if mark is not None:
                mark(self.connection, state)

        def handle_one_request(self):
            self._mark("head")
            super().handle_one_request()

        def parse_request(self):
            ok = super().parse_request()
            if ok:
                self._mark("busy")
            return ok

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

        def _bad(self) -> bool:
            """Answer a malformed request (400) or one for another Host (403); True when done."""
            why = path_problem(self.path)
            if why is not None:
                self._refuse(400, f"bad request: {why}")
                return True
            for name in SINGLE_HEADERS:
                if len(self.headers.get_all(name) or []) > 1:
                    self._refuse(400, f"bad request: more than one {name} header (send it once)")
                    return True
            why = session.header_problem(self.headers)
            if why is not None:
                self._refuse(403, f"refused by make live: {why}")
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
            if self._bad():
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
            if self._bad():
                return
            if self._is_proxy():
                return self._proxy()
            try:
                super().do_HEAD()
            except ValueError as e:
                self._refuse(400, f"bad request: {e}")

        def do_POST(self):
            if self._bad():
                return
            if self.path == SESSION_PATH:
                return self._session()
            self._other(checked=True)

        def _other(self, checked: bool = False):
            if not checked and self._bad():
                return
            if self._is_proxy():
                return self._proxy()
            self._refuse(405, f"{self.command} is not allowed here: the book is read-only")

        do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _other

        def _read_body(self, n: int) -> bytes | None:
            body = self.rfile.read(n) if n else b""
            return body if len(body) == n else None

        def _proxy(self):
            path, _, query = self.path.partition("?")
            params = parse_qsl(query, keep_blank_values=True)
            query_tokens = [v for k, v in params if k == "token"]
            if len(query_tokens) > 1:
                return self._refuse(403, "refused by make live: more than one token parameter")
            why = session.refusal(self.command, self.headers, query_tokens[0] if query_tokens else None)
            if why is not None:
                return self._refuse(403, f"refused by make live: {why}")
            token = _bearer(self.headers) or query_tokens[0]
            tab = session.tab(token)
            rest = urlencode([(k, v) for k, v in params if k != "token"], quote_via=quote)
            target = path + ("?" + rest if rest else "")
            upgrade = self.headers.get("Upgrade", "").lower() == "websocket"
            if self.headers.get("Transfer-Encoding"):
                return self._refuse(411, "chunked request bodies are not forwarded; send Content-Length")
            length = self.headers.get("Content-Length")
            if length is not None and not re.fullmatch(r"\s*\d{1,19}\s*", length):
                return self._refuse(400, f"bad Content-Length {length!r}: expected a whole number of bytes")
            n = int(length) if length else 0
            if n > MAX_BODY:
                return self._refuse(413, f"request body too large: {n} bytes, at most {MAX_BODY} are "
                                         "forwarded (nothing of it was read)")
            makes_kernel = (self.command == "POST" and _KERNEL_MAKERS.match(path)) or (
                self.command == "PATCH" and _SESSION_PATCH.match(path))
            body = None
            if makes_kernel:
                if n > MAX_SMALL_BODY:
                    return self._refuse(413, f"request body too large: {n} bytes, at most "
                                             f"{MAX_SMALL_BODY} for a kernel or session")
                body = self._read_body(n)
                if body is None:
                    return self._refuse(400, f"the request body ended before its Content-Length ({n})")
            lines = [f"{self.command} {target} HTTP/1.1", "Host: 127.0.0.1",
                     f"Authorization: token {session.token}"]
            lines += [f"{k}: {v}" for k, v in self.headers.items() if k.lower() not in DROP]
            if length is not None:
                lines.append(f"Content-Length: {n}")
            lines += ["Connection: Upgrade", "Upgrade: websocket"] if upgrade else ["Connection: close"]
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            if makes_kernel and self.command == "POST":
                with session.kernel_lock:  # the count and the start, one request at a time
                    why = self._kernel_cap(path, body)
                    if why is not None:
                        return self._refuse(429, f"refused by make live: {why}")
                    return self._forward_whole(head + body, tab)
            if makes_kernel:
                return self._forward_whole(head + body, tab)
            self._forward(head, n, upgrade, token, tab)

        def _kernel_cap(self, path: str, body: bytes) -> str | None:
            try:
                if path.rstrip("/").endswith("sessions"):
                    model = json.loads(body or b"{}")
                    if isinstance(model, dict) and session.session_exists(model.get("path")):
                        return None  # Jupyter gives the existing session: no new kernel
                count = session.kernel_count()
            except (OSError, ValueError) as e:
                return f"could not count the running kernels ({e})"
            if count >= session.max_kernels:
                return (f"{count} kernels are running, the most make live starts (--max-kernels "
                        f"{session.max_kernels}): close another live tab (its kernel is shut down "
                        "once idle) or restart make live")
            return None

        def _forward_whole(self, request: bytes, tab: _Tab | None):
            """Forward a request that starts a kernel, read the whole answer, note the kernel."""
            try:
                answer = unix_request(session.sock, request, timeout=120)
                status, payload = split_answer(answer)
            except OSError as e:
                return self._refuse(502, f"the Jupyter server is not answering: {e}")
            if status in (200, 201) and tab is not None:
                with contextlib.suppress(ValueError, AttributeError, TypeError):
                    model = json.loads(payload)
                    kernel = model.get("kernel", {}).get("id") if "kernel" in model else model.get("id")
                    if kernel:
                        tab.kernels.add(kernel)
            head, _, _ = answer.partition(b"\r\n\r\n")
            lines = [ln for ln in head.split(b"\r\n")
                     if ln.split(b":", 1)[0].strip().lower() not in (b"content-length", b"transfer-encoding",
                                                                     b"connection")]
            lines += [b"Content-Length: " + str(len(payload)).encode(), b"Connection: close"]
            self.close_connection = True
            self.wfile.flush()
            with contextlib.suppress(OSError):
                self.connection.sendall(rewrite_upstream_head(b"\r\n".join(lines))
                                        + (payload if self.command != "HEAD" else b""))

        def _forward(self, head: bytes, n: int, upgrade: bool, token: str, tab: _Tab | None):
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.settimeout(120)
            try:
                upstream.connect(session.sock)
                upstream.sendall(head)
                left = n
                while left:  # the body, streamed: never held here whole
                    chunk = self.rfile.read(min(65536, left))
                    if not chunk:
                        upstream.close()
                        return self._refuse(400, f"the request body ended before its Content-Length ({n})")
                    upstream.sendall(chunk)
                    left -= len(chunk)
                answer_head, rest_bytes = _read_head(upstream)
            except OSError as e:
                upstream.close()
                return self._refuse(502, f"the Jupyter server is not answering: {e}")
            self.close_connection = True
            self.wfile.flush()
            client = self.connection
            try:
                client.sendall(rewrite_upstream_head(answer_head) + rest_bytes)
            except OSError:
                upstream.close()
                return
            if upgrade and answer_head.startswith(b"HTTP/1.1 101"):
                # a WebSocket: no timeouts (it may stay quiet for long), never closed as idle;
                # its traffic keeps the session token alive, and revoking the token closes it
                self._mark("ws")
                client.settimeout(None)
                upstream.settimeout(None)
                if tab is not None:
                    tab.sockets.add(client)
                touch = functools.partial(session.touch, token)
                t = threading.Thread(target=_pipe, args=(client, upstream, touch), daemon=True)
                t.start()
                _pipe(upstream, client, touch)
                t.join(5)
                if tab is not None:
                    tab.sockets.discard(client)
            else:
                _pipe(upstream, client)
            upstream.close()

    return LiveHandler


def start_page(html_dir: str) -> str:
    """The page the book's ``index.html`` redirects to (relative to the root), else ''."""
    try:
        text = open(os.path.join(html_dir, "index.html"), encoding="utf-8").read()
    except OSError:
        return ""
    m = re.search(r"""http-equiv=["']?refresh["']?[^>]*content=["'][^"']*url=([^"'>\s]+)""", text, re.I)
    target = m.group(1) if m else ""
    if not target or "://" in target or target.startswith("/") or path_problem("/" + target):
        return ""
    return target


def write_launch_page(folder: str, number: int, address: str) -> str:
    """Write the launch page ``launch-NUMBER.html`` (mode 0600) that sends the browser on to
    ``address`` (which holds the key); return its ``file://`` address, which holds none."""
    path = os.path.join(folder, f"launch-{number}.html")
    a = html.escape(address, quote=True)
    text = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="referrer" content="no-referrer">\n<title>make live: opening the book</title>\n'
        f'<meta http-equiv="refresh" content="0; url={a}">\n'
        f"<script>window.location.replace({json.dumps(address)});</script></head>\n"
        f'<body><p>Opening <a href="{a}">the book with live figures</a>…</p>\n'
        "<p>This page works once: its key is spent when the book opens. For another tab, press "
        "Enter in the terminal of <code>make live</code> for a new page.</p></body></html>\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return pathlib.Path(path).as_uri()


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


def _offer_new_keys(session: LiveSession, launch_page) -> None:
    """Each Enter in the terminal (a line on stdin) writes a new launch page."""
    for _ in enter_presses(0):
        page = launch_page()
        try:
            print(f"New launch page (its key works once, within {session.key_ttl / 60:g} minutes):"
                  f"\n    {page}")
            print(f"LIVE KEY {page}", flush=True)
        except (OSError, ValueError):
            return


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--jupyter-server"]:
        return run_jupyter_server(argv[1:])
    if argv[:1] == ["--kernel"]:
        return run_kernel(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", default=os.path.join(ROOT, "_build", "html"), help="built book folder")
    ap.add_argument("--port", type=int, default=8000, help="port of the book (0: any free port)")
    ap.add_argument("--root", default=ROOT, help="Jupyter server root (kernels start in the chapter's folder)")
    ap.add_argument("--key-ttl", type=float, default=KEY_TTL,
                    help=f"seconds a one-time launch key stays valid (default {KEY_TTL:g})")
    ap.add_argument("--token-idle", type=float, default=TOKEN_IDLE,
                    help=f"seconds a tab's session token stays valid unused (default {TOKEN_IDLE:g})")
    ap.add_argument("--kernel-idle", type=int, default=KERNEL_IDLE,
                    help=f"seconds an idle kernel that no tab is connected to lives (default {KERNEL_IDLE})")
    ap.add_argument("--max-kernels", type=int, default=MAX_KERNELS,
                    help=f"kernels running at once (default {MAX_KERNELS})")
    ap.add_argument("--max-connections", type=int, default=None,
                    help="open connections at once (default: from the limit of open files, "
                         f"{connection_cap()} here)")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.html, "index.html")):
        print(f"no built book in {args.html}: run 'make book' first", file=sys.stderr)
        return 2
    problems = [f"--port must be 0..65535, got {args.port}" if not 0 <= args.port <= 65535 else "",
                f"--key-ttl must be in (0, 86400] seconds, got {args.key_ttl:g}"
                if not 0 < args.key_ttl <= 86400 else "",
                f"--token-idle must be in (0, 604800] seconds, got {args.token_idle:g}"
                if not 0 < args.token_idle <= 604800 else "",
                f"--kernel-idle must be 1..604800 seconds, got {args.kernel_idle}"
                if not 1 <= args.kernel_idle <= 604800 else "",
                f"--max-kernels must be 1..64, got {args.max_kernels}" if not 1 <= args.max_kernels <= 64 else "",
                f"--max-connections must be 1..65536, got {args.max_connections}"
                if args.max_connections is not None and not 1 <= args.max_connections <= 65536 else ""]
    if any(problems):
        print("\n".join(p for p in problems if p), file=sys.stderr)
        return 2

    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # a closed terminal or a dropped SSH connection: stop in order, as on SIGTERM (unless the run
    # was started to outlive its terminal: nohup sets SIGHUP to be ignored)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, on_signal)
        # and the same when the process that started this one (make) ends without passing on the
        # signal, e.g. `kill` of make alone
        _die_with_parent(os.getppid())

    private = tempfile.mkdtemp(prefix="book-live-")  # mode 0700
    if len(private) > MAX_PRIVATE_PATH:
        shutil.rmtree(private, ignore_errors=True)
        print(f"the private folder {private} is too long a path for the kernels' Unix sockets "
              f"({len(private)} characters, at most {MAX_PRIVATE_PATH}): set TMPDIR to a shorter "
              "folder of yours (e.g. TMPDIR=/tmp)", file=sys.stderr)
        return 2
    sock = os.path.join(private, "jupyter.sock")
    token = secrets.token_hex(32)
    proc = None
    try:
        proc = start_jupyter(sock, token, os.path.abspath(args.root), kernel_idle=args.kernel_idle)
        wait_for_jupyter(proc, sock, token)
        holder = {}

        def handler(*a, **kw):
            return holder["cls"](*a, **kw)

        with serve_book(args.html, port=args.port, handler=handler,
                        max_connections=args.max_connections) as server:
            base = server.url
            port = urlsplit(base).port
            session = LiveSession(port, sock, token, key_ttl=args.key_ttl,
                                  token_idle=args.token_idle, max_kernels=args.max_kernels)
            holder["cls"] = make_handler(session)
            first = start_page(args.html)
            pages = {"n": 0}
            pages_lock = threading.Lock()

            def launch_page() -> str:
                with pages_lock:
                    pages["n"] += 1
                    number = pages["n"]
                return write_launch_page(private, number, f"{base}{first}#{LAUNCH_PARAM}={session.new_key()}")

            launch = launch_page()
            print(f"Book with live kernels on {base} (Jupyter server on a private Unix socket).")
            print(f"Open this page in the browser you read with. Its address holds no secret; the key "
                  f"inside works once, within {args.key_ttl / 60:g} minutes:\n    {launch}")
            print("then press 'Run live' above a live figure. Press Enter here for a new launch page "
                  "(another tab, or an expired key); Ctrl-C stops both servers.")
            print(f"LIVE READY {base} {launch}", flush=True)
            threading.Thread(target=_offer_new_keys, args=(session, launch_page), daemon=True).start()
            while not stop["now"] and proc.poll() is None:
                time.sleep(0.3)
            if proc.poll() is not None and not stop["now"]:
                warn(f"jupyter server exited with code {proc.returncode}")
                return 1
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # Jupyter stops its kernels, then itself
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # its kernels follow (they watch their parent)
                proc.wait(10)
        shutil.rmtree(private, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
