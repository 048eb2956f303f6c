"""Live recomputation on the website (``make live``), and its security.

The real ``make live`` is started (the book on 127.0.0.1, a Jupyter server on a private Unix socket
behind it). The book's own live cell is started from the page in Chromium, one of its sliders moved,
the figure recomputed by the kernel. Then the same-machine attacks are tried, each of which must
fail:

- a page on a *second origin* (another port of 127.0.0.1, served by a logging ``http.server``),
  opened in the same browser after the reader started a session: read the token, start a kernel or
  a terminal, open WebSockets, run code, get a session token, frame the book;
- everything that second server saw (every header of every request, cookies included) replayed
  from Python against kernels, terminals, contents and the channels WebSocket, with and without a
  forged ``Origin`` of the book, and every value it saw tried as a token;
- cookies set by the other port for the whole host (``Path=/``): the book must keep working;
- a launch key used twice, an expired key, a key sent from another origin;
- forged headers for each forwarding rule, framing, and malformed paths (NUL, bad encoding, ``..``).

Then the attacks of *another user of the same machine* (``nobody``, through setpriv, when the tests
run as root): reading the launch key from /proc and the run's files while Chromium opens the launch
page, using a key first, reaching the kernels' sockets, a flood of 1,100 half-open connections against
a 1,024-file limit, duplicate headers, a foreign Host, a 5 GB body, the kernel cap, and a hang-up or
kill of make live, after which no process of the run may be left.

The counts go to the status page (``tests/reliability.py``, figures ``live-attacks`` and
``live-local-attacks``). Nothing may leave 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
from reliability import record

from conftest import ROOT, built_pages
from local_user import attacker as _attacker
from local_user import other_user as _other_user
from local_user import socket_inodes as _socket_inodes
from local_user import tcp_inodes as _tcp_inodes

HERE = os.path.dirname(os.path.abspath(__file__))
FINGERPRINT_JS = open(os.path.join(HERE, "figure_fingerprint.js"), encoding="utf-8").read()
ATTACK_DIR = os.path.join(HERE, "attack")

# Hard imports, not importorskip: a missing Playwright (it is in requirements.txt) or a broken
# tools/browser.py must fail the suite, not turn every browser test into a skip.
import browser as browser_mod  # noqa: E402  (tools/, put on sys.path by conftest.py)
import playwright.sync_api  # noqa: E402, F401
import serve_live  # noqa: E402

#: What the server on the other port sets for the whole host (cookies are not separated by port).
EVIL_COOKIES = {"book_live_session": "forged", "username-127-0-0-1": "forged", "_xsrf": "forged",
                "book-live-token": "forged"}
SECURITY = {"content-security-policy": "frame-ancestors 'self'", "x-frame-options": "SAMEORIGIN"}

# Every test of this module feeds the live-attack figure of the status page: `make status` runs them all.
pytestmark = pytest.mark.reliability

#: attack category -> [tried, refused]; written to the status page when the module ends
ATTACKS: dict[str, list[int]] = {}


def _count(category: str, refused: bool) -> bool:
    c = ATTACKS.setdefault(category, [0, 0])
    c[0] += 1
    c[1] += bool(refused)
    return refused


@pytest.fixture(scope="module", autouse=True)
def _record_attacks():
    ATTACKS.clear()
    MEASURES.clear()
    yield
    local = {k[len(LOCAL):]: v for k, v in ATTACKS.items() if k.startswith(LOCAL)}
    if local:
        record("live-local-attacks",
               title=("Attacks on make live by another user of the same machine (nobody): reading the "
                      "launch key from every command line and file, using a key taken first, reaching "
                      "the kernels' sockets, 1,100 half-open connections against a 1,024-file limit, "
                      "duplicate headers, a foreign Host, a 5 GB body, more kernels than the cap; and "
                      "a hang-up or kill of make live: refused, or nothing left behind"),
               tried=sum(t for t, _ in local.values()), passed=sum(r for _, r in local.values()),
               unit="checks", test="tests/site/test_live.py",
               details={**{k: f"{r} of {t} held" for k, (t, r) in sorted(local.items())}, **MEASURES})
    other = {k: v for k, v in ATTACKS.items() if not k.startswith(LOCAL)}
    if other:
        tried = sum(t for t, _ in other.values())
        refused = sum(r for _, r in other.values())
        record("live-attacks",
               title=("Attacks on make live from another origin of the same machine (a page on "
                      "another port of 127.0.0.1 in the reader's browser, replays of all it saw "
                      "from Python with a forged Origin, reused or expired launch keys, forged "
                      "headers, framing, malformed paths): refused"),
               tried=tried, passed=refused, unit="attacks", test="tests/site/test_live.py",
               details={k: f"{r} of {t} refused" for k, (t, r) in sorted(other.items())})


def _live_pages(html_dir):
    return [n for n in built_pages(html_dir)
            if "tag_live" in open(os.path.join(html_dir, n), encoding="utf-8").read()]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _request(url, *, method="GET", headers=None, data=None, timeout: float = 20):
    """(status, headers, body) of one request, without following redirects or raising on 4xx."""
    opener = urllib.request.build_opener(_NoRedirect)
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def _raw(book: str, request: bytes, timeout: float = 10, head_only: bool = False) -> bytes:
    """Send raw bytes to the book's port; return what comes back until it closes (or times out,
    or, with ``head_only``, until the answer's headers are complete)."""
    parts = urlsplit(book)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
                if head_only and b"\r\n\r\n" in data:
                    break
        except socket.timeout:
            pass
    return data


def _ws_status(book: str, path: str, headers: dict) -> int:
    """The status the book's server answers to a WebSocket handshake for ``path``."""
    host = urlsplit(book).netloc
    lines = [f"GET /{path} HTTP/1.1", f"Host: {headers.get('Host', host)}", "Connection: Upgrade",
             "Upgrade: websocket", "Sec-WebSocket-Version: 13",
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
    lines += [f"{k}: {v}" for k, v in headers.items()
              if k.lower() not in ("host", "connection", "upgrade", "sec-websocket-version",
                                   "sec-websocket-key", "content-length")]
    answer = _raw(book, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), timeout=5, head_only=True)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    return int(m.group(1)) if m else 0


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d))
    return out


def _descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        for c in _children(todo.pop()):
            seen.append(c)
            todo.append(c)
    return seen


class Live:
    """A running ``make live``: its book URL, first launch page (a ``file://`` address), pid, new
    launch pages, and everything it printed (``output``)."""

    def __init__(self, proc: subprocess.Popen, book: str, launch: str, lines: queue.Queue,
                 output: list[str]):
        self.proc, self.book, self.launch, self.pid, self._lines = proc, book, launch, proc.pid, lines
        self.output = output

    @property
    def folder(self) -> str:
        """The private folder of the run (it holds the launch pages)."""
        return os.path.dirname(_launch_path(self.launch))

    def wait_for_output(self, text: str, timeout: float = 30, since: int = 0) -> str:
        """The first line make live printed that contains ``text``, from its ``since``-th line on
        (waiting for it)."""
        t0 = time.time()
        while time.time() - t0 < timeout:
            for line in list(self.output)[since:]:
                if text in line:
                    return line
            time.sleep(0.1)
        raise AssertionError(f"make live printed no line with {text!r}; it printed:\n" + "".join(self.output))

    @property
    def origin(self) -> str:
        return self.book.rstrip("/")

    def new_launch(self) -> str:
        """Press Enter in the terminal of make live: a new launch page (its ``file://`` address)."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        t0, seen = time.time(), []
        while time.time() - t0 < 60:
            try:
                line = self._lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            seen.append(line)
            if line.startswith("LIVE KEY "):
                return line.split()[2]
        raise AssertionError(f"make live (exit code {self.proc.poll()}) printed no new address "
                             "after Enter; it printed:\n" + "".join(seen))

    def new_key(self) -> str:
        return _key_of(self.new_launch())


def _launch_path(launch: str) -> str:
    """The file of a launch page; its address holds no key."""
    assert launch.startswith("file:///") and "live=" not in launch, f"not a launch page: {launch}"
    return urllib.request.url2pathname(urlsplit(launch).path)


def _address_of(launch: str) -> str:
    """The book's address that the launch page ``launch`` sends the browser to (key included)."""
    path = _launch_path(launch)
    mode = os.stat(path).st_mode
    assert stat.S_IMODE(mode) == 0o600 and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) & 0o777 == 0o700
    m = re.search(r'window\.location\.replace\("([^"]+)"\)', open(path, encoding="utf-8").read())
    assert m, f"no address in the launch page {path}"
    return m.group(1)


def _key_of(launch: str) -> str:
    address = _address_of(launch) if launch.startswith("file:") else launch
    assert "#live=" in address and "?" not in address, f"the key must be in the fragment: {address}"
    return address.split("#live=", 1)[1]


@contextlib.contextmanager
def _running_live(html_dir, live_args: str = "", nofile: int | None = None):
    """The real ``make live`` on a free port, its stdin a pipe (Enter: a new launch page), in a
    process group of its own (a terminal's); ``nofile``: its limit of open files."""
    def limits():
        # a terminal's session: SIGHUP ends the run. A test run started under nohup would pass its
        # ignored SIGHUP on, and make live then rightly outlives its terminal (tools/serve_live.py)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    proc = subprocess.Popen(
        ["make", "--no-print-directory", "live", "PORT=0", f"LIVE_HTML={html_dir}", f"LIVE_ARGS={live_args}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=ROOT, start_new_session=True, preexec_fn=limits)
    lines: queue.Queue = queue.Queue()
    seen: list[str] = []
    output: list[str] = []

    def reader():  # read all output, so that a full pipe never blocks the servers
        for line in proc.stdout:
            output.append(line)
            lines.put(line)

    threading.Thread(target=reader, daemon=True).start()
    try:
        t0 = time.time()
        ready = None
        while time.time() - t0 < 120 and ready is None and proc.poll() is None:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            seen.append(line)
            if line.startswith("LIVE READY"):
                ready = line.split()
        if ready is None:
            pytest.fail("make live did not come up:\n" + "".join(seen))
        yield Live(proc, ready[2], ready[3], lines, output)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture(scope="module")
def live_server(html_dir):
    with _running_live(html_dir) as live:
        yield live


def _exchange(book: str, key: str, origin: str | None = None, **extra):
    headers = {serve_live.KEY_HEADER: key, **extra}
    if origin is not None:
        headers["Origin"] = origin
    return _request(book + "live-session", method="POST", headers=headers, data=b"")


@pytest.fixture(scope="module")
def session_token(live_server):
    """A session token, got as the book's page gets one: the launch key for a token, once."""
    status, headers, body = _exchange(live_server.book, _key_of(live_server.launch),
                                      live_server.origin, **{"Sec-Fetch-Site": "same-origin"})
    assert status == 200, (status, body)
    assert "Set-Cookie" not in headers, "make live must set no cookie"
    return json.loads(body)["token"]


def _same_origin(book, token, **extra):
    return {"Origin": book.rstrip("/"), "Sec-Fetch-Site": "same-origin",
            "Authorization": f"token {token}", **extra}


def _kernels(book, token) -> set[str]:
    """The ids of the running kernels, asked through the proxy as the book's own page would."""
    status, _, body = _request(book + "jupyter/api/kernels", headers=_same_origin(book, token))
    assert status == 200, (status, body)
    return {k["id"] for k in json.loads(body)}


def _jupyter_server(make_pid: int) -> int:
    for pid in _descendants(make_pid):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"--jupyter-server" in cmd and any(a.startswith(b"--ServerApp.sock=") for a in cmd):
            return pid
    raise AssertionError("no Jupyter server process under make live")


def _jupyter_sock(pid: int) -> str:
    """The Unix socket the Jupyter server ``pid`` listens on (from its command line)."""
    cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    return next(a for a in cmd if a.startswith(b"--ServerApp.sock=")).split(b"=", 1)[1].decode()


def _jupyter_token(make_pid: int) -> str:
    env = open(f"/proc/{_jupyter_server(make_pid)}/environ", "rb").read().split(b"\0")
    # the environment it was started with (it removes the token from its own at once)
    return dict(e.split(b"=", 1) for e in env if b"=" in e)[b"BOOK_LIVE_TOKEN"].decode()


def _listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if os.path.exists(table):
            for row in open(table).read().splitlines()[1:]:
                f = row.split()
                if f[3] == "0A":  # LISTEN
                    inodes.add(f[9])
    return inodes


def _allow_launch_page(ctx, launch: str) -> None:
    """Let the browser context open this one launch page (a file of the run's private folder);
    every other address outside 127.0.0.1 stays blocked."""
    ctx.route(launch, lambda route: route.continue_())


def _open_session(page, launch):
    """Open the launch page as the reader does: it sends the browser on to the book's start page
    with the key in the fragment; the page removes the key from the address and exchanges it for
    this tab's session token."""
    _allow_launch_page(page.context, launch)
    page.goto(launch, wait_until="load")
    page.wait_for_function("() => document.documentElement.dataset.bookLiveSession", timeout=20000)
    state = page.evaluate("() => document.documentElement.dataset.bookLiveSession")
    assert state == "ready", f"the live session was refused: {state}"
    assert re.search(r"/chapters/intro\.html$", page.url), page.url  # the key is gone from the URL
    token = page.evaluate("() => sessionStorage.getItem('book-live-token')")
    assert token and len(token) >= 32
    return token


@pytest.fixture()
def other_port():
    """A server on another port of 127.0.0.1 (the attack pages): logs every request it gets, with
    all its headers, and sets cookies for the whole host on every answer."""
    log: list[dict] = []

    class Other(browser_mod._QuietHandler):
        protocol_version = "HTTP/1.1"

        def end_headers(self):
            for name, value in EVIL_COOKIES.items():
                self.send_header("Set-Cookie", f"{name}={value}; Path=/")
            super().end_headers()

        def _log(self):
            log.append({"method": self.command, "path": self.path, "headers": list(self.headers.items())})

        def do_GET(self):
            self._log()
            name = urlsplit(self.path).path.lstrip("/")
            if not os.path.isfile(os.path.join(ATTACK_DIR, name)):  # any path (/jupyter/... too):
                # a cookie with a narrower Path of the book's would be sent there
                body = b"<!DOCTYPE html><title>another port</title><p>another port"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def do_HEAD(self):
            self._log()
            super().do_HEAD()

        def do_POST(self):
            self._log()
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

    with browser_mod.serve_directory(ATTACK_DIR, handler=Other) as url:
        yield url, log


def _cookie_pairs(header: str) -> list[tuple[str, str]]:
    """Every (name, value) of a Cookie header, duplicates of a name included."""
    pairs = [p.strip().partition("=") for p in header.split(";") if p.strip()]
    return [(name, value) for name, _, value in pairs]


def _assert_no_credential(log: list[dict], secrets_: list[str]):
    """Nothing the other port received holds a secret of make live, and the only cookies it got
    are its own."""
    assert log, "the browser sent nothing to the other port"
    for entry in log:
        text = entry["path"] + "\n" + "\n".join(f"{k}: {v}" for k, v in entry["headers"])
        for s in secrets_:
            assert s not in text, f"a secret of make live reached the other port: {entry}"
        for k, v in entry["headers"]:
            if k.lower() == "cookie":
                got = _cookie_pairs(v)
                assert set(got) <= set(EVIL_COOKIES.items()), f"a cookie from the book reached the other port: {got}"
            if k.lower() == "authorization":
                raise AssertionError(f"an Authorization header reached the other port: {entry}")


def test_static_site_explains_live_cells(html_dir):
    """Without a kernel, every live cell says how to make it live (checked in the page source:
    the bar is added by book-live.js, so look for the script and the tag)."""
    pages = _live_pages(html_dir)
    assert pages, ("no cell of the book is tagged 'live': tag the cell of one live_explorer "
                   "figure with `:tags: [live, nbval-ignore-output]` (see README, Live figures)")
    for name in pages:
        text = open(os.path.join(html_dir, name), encoding="utf-8").read()
        assert "book-live.js" in text and "book-live-config.js" in text, name


def test_jupyter_server_has_no_port_and_its_token_stays_private(live_server):
    """The Jupyter server listens on a 0600 Unix socket in a 0700 folder and on no TCP port; its
    token is in its environment only (not its command line, which every user can read)."""
    pid = _jupyter_server(live_server.pid)
    cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    sock = _jupyter_sock(pid)
    assert stat.S_ISSOCK(os.stat(sock).st_mode)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) & 0o777 == 0o700
    token = _jupyter_token(live_server.pid).encode()
    assert len(token) >= 32 and token not in b" ".join(cmd)
    fds = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    socket_inodes = {m.group(1) for t in fds if (m := re.match(r"socket:\[(\d+)\]", t))}
    assert socket_inodes, "the Jupyter server holds no socket at all"
    assert not socket_inodes & _listening_tcp_inodes(), "the Jupyter server listens on a TCP port"


def test_jupyter_server_leaves_the_terminal_input_alone(live_server):
    """Enter in the terminal of make live is read by make live alone: the Jupyter server's input is
    /dev/null, and it runs no server extension (JupyterLab and the language servers start Node,
    which switches the input it inherits to non-blocking mode)."""
    pid = _jupyter_server(live_server.pid)
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    sock = _jupyter_sock(pid)
    token = _jupyter_token(live_server.pid)

    def status(path):
        answer = serve_live.unix_request(sock, (
            f"GET {serve_live.PROXY_PREFIX}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: token {token}\r\nConnection: close\r\n\r\n").encode())
        return int(answer.split(b" ", 2)[1])

    assert status("api/status") == 200
    assert status("api/kernelspecs") == 200
    for path in ("lab", "lsp/status", "api/terminals"):
        assert status(path) == 404, f"a server extension answers {path}"
    assert not [c for c in _descendants(pid)
                if b"node" in open(f"/proc/{c}/cmdline", "rb").read().split(b"\0")[0]]


def test_enter_is_read_while_another_process_makes_the_input_non_blocking():
    """Each newline on make live's input counts once, also after another process sharing that
    input has switched it to non-blocking mode; the reader ends at the end of the input."""
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        presses = serve_live.enter_presses(r)
        got = []
        reader = threading.Thread(target=lambda: got.extend(presses), daemon=True)
        reader.start()
        time.sleep(0.3)  # the reader meets an empty non-blocking input first
        os.write(w, b"\n")
        time.sleep(0.3)
        os.write(w, b"\n\nignored text\n")
        os.close(w)
        w = None
        reader.join(10)
        assert not reader.is_alive(), "the reader did not end at the end of its input"
        assert len(got) == 4
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


def test_proxy_refuses_everything_but_the_books_own_pages(live_server, session_token):
    """The rules of tools/serve_live.py, each tried on the real server with forged headers."""
    book = live_server.book
    url = book + "jupyter/api/kernels"
    own = live_server.origin
    port = int(own.rsplit(":", 1)[1])
    auth = f"token {session_token}"
    spent_key = _key_of(live_server.launch)  # exchanged by the session_token fixture
    cases = {
        "no token": {"Origin": own, "Sec-Fetch-Site": "same-origin"},
        "wrong token": {"Origin": own, "Authorization": "token guess"},
        "empty token": {"Origin": own, "Authorization": "token "},
        "the spent launch key as token": {"Origin": own, "Authorization": f"token {spent_key}"},
        "token in a cookie": {"Origin": own, "Cookie": f"book-live-token={session_token}"},
        "other origin": {"Origin": f"http://127.0.0.1:{port + 1}", "Authorization": auth},
        "same site, other port": {"Origin": own, "Sec-Fetch-Site": "same-site", "Authorization": auth},
        "cross site": {"Origin": own, "Sec-Fetch-Site": "cross-site", "Authorization": auth},
        "DNS rebinding": {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}",
                          "Authorization": auth},
        "POST without Origin": {"Authorization": auth},
        "valid header, wrong ?token=": {"Origin": own, "Authorization": auth, "_query": "?token=guess"},
    }
    before = _kernels(book, session_token)
    for name, headers in cases.items():
        query = headers.pop("_query", "")
        status, _, body = _request(url + query, method="POST", headers=headers, data=b"{}")
        assert _count("forged headers", status == 403 and "refused by make live" in body), (name, status, body)
    ws_cases = {
        "WebSocket without Origin": {"Authorization": auth},
        "WebSocket without token": {"Origin": own},
        "WebSocket, wrong ?token=": {"Origin": own, "_query": "?token=guess"},
    }
    for name, headers in ws_cases.items():
        query = headers.pop("_query", "")
        status = _ws_status(book, "jupyter/api/events/subscribe" + query, headers)
        assert _count("forged headers", status == 403), (name, status)
    assert _kernels(book, session_token) <= before
    assert _request(book, method="POST", data=b"x")[0] == 405  # the book itself is read-only
    # the token itself works, as a header and as ?token= (how thebe's WebSockets send it)
    assert _request(book + "jupyter/api/status", headers=_same_origin(book, session_token))[0] == 200
    assert _ws_status(book, f"jupyter/api/events/subscribe?token={quote(session_token)}",
                      {"Origin": own}) == 101


def test_launch_key_works_once_and_only_from_the_books_origin(live_server):
    """A key from the launch address gives one session token, once; sent from another origin, or
    with another Host, it is refused (and not spent); the old ?live= query sets nothing."""
    book, own = live_server.book, live_server.origin
    port = int(own.rsplit(":", 1)[1])
    key = live_server.new_key()
    refusals = {
        "other origin": _exchange(book, key, f"http://127.0.0.1:{port + 1}"),
        "same site": _exchange(book, key, own, **{"Sec-Fetch-Site": "same-site"}),
        "no Origin": _exchange(book, key),
        "DNS rebinding": _exchange(book, key, f"http://attacker.example:{port}",
                                   Host=f"attacker.example:{port}"),
        "unknown key": _exchange(book, key[:-2] + ("aa" if not key.endswith("aa") else "bb"), own),
        "no key": _request(book + "live-session", method="POST", headers={"Origin": own}, data=b""),
    }
    for name, (status, _, body) in refusals.items():
        assert _count("launch-key misuse", status == 403 and "refused by make live" in body), (name, status, body)
    status, headers, body = _exchange(book, key, own)
    assert status == 200, (status, body)  # the refusals above did not spend it
    assert "Set-Cookie" not in headers
    token = json.loads(body)["token"]
    assert _request(book + "jupyter/api/status", headers=_same_origin(book, token))[0] == 200
    status, _, body = _exchange(book, key, own)
    assert _count("launch-key misuse", status == 403 and "already been used" in body), (status, body)
    # presented again, the key revoked the session it had opened
    status, _, body = _request(book + "jupyter/api/status", headers=_same_origin(book, token))
    assert _count("launch-key misuse", status == 403 and "revoked" in body), (status, body)
    # the former launch address, ?live=KEY in the query: the book's start page, and nothing else
    status, headers, _ = _request(f"{book}?live={live_server.new_key()}")
    assert status == 200 and "Set-Cookie" not in headers


@contextlib.contextmanager
def _handler_only(html_dir, **session_args):
    """make live's own server and rules in this process, with no Jupyter server behind them (a
    forwarded request that passes every rule gets 502): for lifetimes too short for a real run."""
    holder = {}

    def handler(*a, **kw):
        return holder["cls"](*a, **kw)

    with serve_live.serve_book(html_dir, handler=handler) as server:
        session = serve_live.LiveSession(urlsplit(server.url).port, "/nonexistent.sock", "x" * 64,
                                         **session_args)
        holder["cls"] = serve_live.make_handler(session)
        yield server.url, session


def _poll(condition, timeout: float, step: float = 0.05):
    """Call ``condition`` until it returns something true (returned) or ``timeout`` seconds pass
    (then its last value)."""
    t0 = time.time()
    while True:
        value = condition()
        if value or time.time() - t0 > timeout:
            return value
        time.sleep(step)


def _figure_once(page, out, condition: str, timeout_ms: int, old: str | None = None) -> str:
    """What the figure in ``out`` shows (:data:`FINGERPRINT_JS`) once the JavaScript expression
    ``condition`` holds of it (``f``: the fingerprint, ``old``: the given one), or when
    ``timeout_ms`` has passed (the caller's assertion then says what was missing). The browser
    checks the condition every 100 ms and returns as soon as it holds: no pause stands in for it."""
    try:
        page.wait_for_function(f"([el, old]) => {{ const f = ({FINGERPRINT_JS})(el); return {condition}; }}",
                               arg=[out.element_handle(), old], timeout=timeout_ms, polling=100)
    except playwright.sync_api.TimeoutError:
        pass
    return out.evaluate(FINGERPRINT_JS)


def test_an_expired_launch_key_is_refused(html_dir):
    """The same handler with a key lifetime of half a second: the key is refused after it."""
    with _handler_only(html_dir, key_ttl=0.5) as (base, session):
        old = session.new_key()
        time.sleep(0.6)  # the key's whole lifetime (the condition is the time itself)
        status, _, body = _exchange(base, old, base.rstrip("/"))
        assert _count("launch-key misuse", status == 403 and "expired" in body), (status, body)
        session.key_ttl = 300
        fresh = session.new_key()
        assert _exchange(base, fresh, base.rstrip("/"))[0] == 200
    with pytest.raises(ValueError, match="key_ttl"):
        serve_live.LiveSession(1, "/x", "y", key_ttl=0)


def test_a_session_token_expires_when_unused(html_dir):
    """A token unused for ``token_idle`` seconds is refused, saying it expired; each use renews it."""
    with _handler_only(html_dir, token_idle=1.0) as (base, session):
        status, _, body = _exchange(base, session.new_key(), base.rstrip("/"))
        assert status == 200, (status, body)
        token = json.loads(body)["token"]
        url, headers = base + "jupyter/api/status", _same_origin(base, token)
        t0 = time.time()
        while time.time() - t0 < 2.0:  # used every 0.2 s for 2 s: longer than its idle lifetime
            status, _, body = _request(url, headers=headers)
            assert status == 502 and "not answering" in body, (status, body)  # the token passed
            time.sleep(0.2)
        last_use = time.time()
        time.sleep(1.3)  # unused for longer than its idle lifetime (any request would be a use)
        status, _, body = _request(url, headers=headers)
        idle = time.time() - last_use
        assert _count("another user: headers, bodies, lifetimes",
                      status == 403 and "expired after" in body and idle >= 1.0), (status, body, idle)
    with pytest.raises(ValueError, match="token_idle"):
        serve_live.LiveSession(1, "/x", "y", token_idle=0)


def test_every_answer_forbids_framing(live_server, session_token):
    """Pages, scripts, refusals, errors and the forwarded Jupyter answers all carry
    frame-ancestors 'self' and X-Frame-Options (and no cookie)."""
    book = live_server.book
    answers = {
        "start page": _request(book + "chapters/intro.html"),
        "live config": _request(book + "_static/book-live-config.js"),
        "missing file": _request(book + "no-such-page.html"),
        "refused": _request(book + "jupyter/api/kernels"),
        "read-only": _request(book, method="POST", data=b"x"),
        "malformed": _request(book + "index.html%00.js"),
        "forwarded": _request(book + "jupyter/api/status", headers=_same_origin(book, session_token)),
    }
    for name, (status, headers, body) in answers.items():
        for k, v in SECURITY.items():
            assert v in (headers.get_all(k) or []), (name, status, k, headers.items())
        assert not headers.get_all("Set-Cookie"), (name, headers.get_all("Set-Cookie"))
    assert answers["forwarded"][0] == 200
    config = json.loads(answers["live config"][2].split("window.BOOK_LIVE = ", 1)[1].rstrip().rstrip(";"))
    assert config == {"baseUrl": "/jupyter/", "exchangeUrl": "/live-session"}, config  # no session state


def test_malformed_paths_get_400(live_server):
    """NUL, other control characters, bad percent-encoding and '..' get 400, on the book and on
    the proxy, and the server keeps serving (no dropped connection, no uncaught exception)."""
    book = live_server.book
    host = urlsplit(book).netloc
    targets = ["/index.html%00.js", "/%00", "/chapters/%zz.html", "/%ff%fe.html", "/%", "/x%0d%0aSet-Cookie:%20a=b",
               "/../../../etc/passwd", "/_static/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/chapters/..%2f..%2fetc",
               "/jupyter/api/kernels%00", "/jupyter/api/kernels?x=%00", "/jupyter/../etc/passwd",
               "/index.html\x01", "/_static/book-live-config.js%00"]
    for target in targets:
        for method in ("GET", "HEAD", "POST"):
            answer = _raw(book, f"{method} {target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n"
                                f"Connection: close\r\n\r\n".encode("latin-1"))
            assert _count("malformed paths", answer.startswith(b"HTTP/1.1 400 ")), (method, target, answer[:200])
    assert _request(book + "chapters/intro.html")[0] == 200


def test_live_figure_recomputes_in_a_kernel(html_dir, live_server, other_port):
    """The reader's own live page, after another port of 127.0.0.1 has set cookies for the whole
    host (``book_live_session=...; Path=/`` among them): the session still works, the figure
    recomputes, and that other port never receives a credential."""
    book, launch = live_server.book, live_server.new_launch()
    other, log = other_port
    pages = _live_pages(html_dir)
    assert pages, "no cell of the book is tagged 'live'"
    name = pages[0]
    errors: list[str] = []
    with browser_mod.chromium() as browser:
        blocked: list[str] = []
        ctx = browser_mod.new_context(browser, blocked=blocked)
        page = ctx.new_page()
        page.on("console", lambda m: m.type == "error" and errors.append(
            f"{m.text} @ {m.location.get('url', '')}"))
        page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
        page.on("response", lambda r: r.status >= 400 and r.url.startswith(book) and errors.append(
            f"{r.url} (HTTP {r.status})"))
        page.goto(book + name, wait_until="load")  # before the launch address: no session yet
        assert "open the launch page" in page.inner_text("div.cell.tag_live .book-live-status")
        assert page.locator("div.cell.tag_live .book-live-run").count() == 0
        token = _open_session(page, launch)  # the reader opens the address make live printed
        assert ctx.cookies() == [], f"make live set cookies: {ctx.cookies()}"
        page.goto(other + "cookies.html", wait_until="load")  # another port: it sets cookies
        assert {c["name"] for c in ctx.cookies()} == set(EVIL_COOKIES)
        page.goto(book + name, wait_until="load")
        kernels_before = _kernels(book, token)
        button = page.locator("div.cell.tag_live .book-live-run").first
        button.wait_for(timeout=20000)
        button.click()
        page.wait_for_function("() => document.documentElement.dataset.bookLive", timeout=120000)
        state = page.evaluate("() => document.documentElement.dataset.bookLive")
        status = page.inner_text(".book-live-status")
        assert state == "ready", f"live mode: {state}: {status}; console: {errors}"
        out = page.locator("div.cell.tag_live .book-live-output").first
        handle = out.locator(".noUi-handle").first
        handle.wait_for(timeout=30000)
        # the kernel's first rendering arrives through the Output widget: wait for its image
        before = _figure_once(page, out, "f.includes('img:')", 30000)
        assert "img:" in before or "text:" in before, "the live figure shows nothing"
        handle.scroll_into_view_if_needed()
        handle.focus()
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        after = _figure_once(page, out, "f !== old && (f.includes('img:') || f.includes('text:'))",
                             60000, old=before)
        assert after != before, "moving the slider did not recompute the figure in the kernel"
        assert "img:" in after or "text:" in after, "the recomputed figure shows nothing"
        own = _kernels(book, token) - kernels_before
        assert len(own) == 1, own  # the page's kernel
        for path in ("cookies.html", "jupyter/api/kernels", "_static/x.js"):  # once more, after
            page.goto(f"{other}{path}?after=live", wait_until="load")
        # leaving the page shut its kernel down (it no longer counts against --max-kernels)
        assert _poll(lambda: not own & _kernels(book, token), 30, 0.2), own
        ctx.close()
    assert not blocked, "requests to outside hosts (blocked):\n" + "\n".join(blocked)
    assert not errors, "console errors:\n" + "\n".join(errors)
    _assert_no_credential(log, [token, _key_of(launch), _jupyter_token(live_server.pid)])


def _replay(live: Live, log: list[dict], kernel: str) -> dict[str, int]:
    """Replay from Python everything the other port received, against the proxy: its headers as
    they were (cookies included), then with a forged Origin of the book, and every value it saw
    (cookie values, query values) as a token. Returns {description: status} of every try."""
    book, own = live.book, live.origin
    seen_headers, values = [], set()
    for entry in log:
        h = {k: v for k, v in entry["headers"] if k.lower() not in ("host", "content-length", "connection")}
        if h not in seen_headers:
            seen_headers.append(h)
        values.update(v for _, v in parse_qsl(urlsplit(entry["path"]).query))
        for k, v in entry["headers"]:
            if k.lower() == "cookie":
                values.update(value for _, value in _cookie_pairs(v))
    def forged(h, **extra):  # h with the book's Origin (and any extra header), case-insensitively
        extra = {"Origin": own, "Sec-Fetch-Site": "same-origin", **extra}
        lower = {k.lower() for k in extra}
        return {**{k: v for k, v in h.items() if k.lower() not in lower}, **extra}

    variants = []
    for i, h in enumerate(seen_headers):
        variants.append((f"request {i} as seen", h, ""))
        variants.append((f"request {i} + forged Origin", forged(h), ""))
    for v in sorted(values):
        variants.append((f"value {v[:20]!r} as token", forged(seen_headers[0], Authorization=f"token {v}"), ""))
        variants.append((f"value {v[:20]!r} as ?token=", forged(seen_headers[0]), f"?token={quote(v)}"))
    http_targets = [("POST", "jupyter/api/kernels", b"{}"), ("POST", "jupyter/api/terminals", b""),
                    ("GET", "jupyter/api/contents", None), ("GET", "jupyter/api/kernels", None),
                    ("POST", "jupyter/api/sessions", json.dumps(
                        {"path": "x.ipynb", "type": "notebook", "kernel": {"name": "python3"}}).encode())]
    ws_targets = [f"jupyter/api/kernels/{kernel}/channels", "jupyter/api/events/subscribe"]
    results = {}
    for name, headers, query in variants:
        for method, path, data in http_targets:
            status, _, body = _request(book + path + query, method=method, headers=headers, data=data)
            results[f"{method} {path} ({name})"] = status if "refused by make live" in body else -status
        for path in ws_targets:
            results[f"WebSocket {path} ({name})"] = _ws_status(book, path + query, headers)
    return results


def test_a_page_on_another_origin_cannot_use_make_live(live_server, session_token, other_port, tmp_path):
    """The same-machine attack in the real Chromium, after the reader has opened a live session in
    the same browser; then everything the attacking server saw, replayed from Python."""
    book = live_server.book
    other, log = other_port
    token = _jupyter_token(live_server.pid)
    # a kernel the attacker would like to use (its id is even handed to the attack page)
    status, _, body = _request(book + "jupyter/api/kernels", method="POST", data=b"{}",
                               headers=_same_origin(book, session_token,
                                                    **{"Content-Type": "application/json"}))
    assert status == 201, (status, body)
    kernel = json.loads(body)["id"]
    before = _kernels(book, session_token)
    marker = tmp_path / f"attack-{uuid.uuid4().hex}.txt"
    launch = live_server.new_launch()
    with browser_mod.chromium() as browser:
        assert other.split(":")[2] != book.split(":")[2]  # another origin: another port
        blocked: list[str] = []
        ctx = browser_mod.new_context(browser, blocked=blocked)
        page = ctx.new_page()
        tab_token = _open_session(page, launch)  # the reader's own live session
        assert ctx.cookies() == []
        refused: list[str] = []

        def to_book(r):
            return r.url.startswith(book) and ("/jupyter/" in r.url or "live-session" in r.url)

        # a response the browser withholds from the page (Cross-Origin-Resource-Policy) is a
        # failed request here; a response it shows must be a refusal
        page.on("response", lambda r: to_book(r.request) and refused.append(f"{r.status} {r.url}"))
        page.on("requestfailed", lambda r: to_book(r) and refused.append(f"failed ({r.failure}) {r.url}"))
        page.goto(f"{other}attack.html?book={book}&kernel={kernel}&marker={marker}", wait_until="load")
        page.wait_for_function("() => window.attackDone === true", timeout=90000)
        result = page.evaluate("() => window.attackResult")
        framed = [f.url for f in page.frames if f.url.startswith(book)]
        ctx.close()
    assert not blocked, blocked
    secrets_ = [token, tab_token, session_token, _key_of(launch)]
    leaked = [k for k, v in result.items() if any(s in str(v) for s in secrets_)]
    assert not leaked, f"a secret reached the other origin through {leaked}"
    checks = {
        "config holds no session state": json.loads(result["config"]) in (
            None, {"baseUrl": "/jupyter/", "exchangeUrl": "/live-session"}),
        "no cookie readable by script": set(result["cookie"].replace(" ", "").split(";"))
        <= {f"{k}={v}" for k, v in EVIL_COOKIES.items()},
        "kernel list not readable": result["list"].startswith("not readable"),
        "session token not readable": result["exchangeKey"].startswith("not readable"),
        "events WebSocket refused": result["events"] in ("error", "closed 1006"),
        "channels WebSocket refused": result["channels"] in ("error", "closed 1006"),
        "book page not framed": not framed and not result["frame"].startswith("readable"),
        "every request to the proxy refused": bool(refused) and all(r.startswith(("403 ", "failed "))
                                                                    for r in refused),
    }
    print("attack page:", json.dumps(result, indent=1), "\nrequests to the book:", *refused, sep="\n")
    for name, ok in checks.items():
        assert _count("browser on another port", ok), (name, result, refused, framed)
    time.sleep(2)  # an execute_request that got through would have written the marker by now
    assert not marker.exists(), "code sent from the other origin ran"
    assert _kernels(book, session_token) <= before, "a kernel was started from the other origin"
    _assert_no_credential(log, secrets_)

    # everything the other port saw, replayed from Python with and without a forged Origin
    replays = _replay(live_server, log, kernel)
    wrong = {k: v for k, v in replays.items() if not _count("replays of what the other port saw", v == 403)}
    assert not wrong, f"{len(wrong)} of {len(replays)} replays were not refused by make live: {wrong}"
    assert not marker.exists()
    assert _kernels(book, session_token) <= before, "a replay started a kernel"
    status, _, body = _request(book + "jupyter/api/terminals", headers=_same_origin(book, session_token))
    assert status == 404 or json.loads(body) == [], (status, body)  # and no terminal exists


# -- another local user ------------------------------------------------------------------------
# Everything above comes from another origin in the reader's browser. What follows comes from
# another user of the same machine (a login node, a shared workstation): run as ``nobody`` where
# this test may switch users (as root, with setpriv), else as another process of this user, which
# then shows only what the permissions of the files would refuse.

LOCAL = "another user: "
#: measured numbers of these attacks, shown with their figure on the status page
MEASURES: dict[str, str] = {}
FLOOD, NOFILE, READER_LIMIT_S = 1100, 1024, 5.0


def _lines_of(proc: subprocess.Popen) -> list[str]:
    """The lines ``proc`` prints, collected by a thread as they come."""
    lines: list[str] = []

    def read():
        for line in proc.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _alive(pid: int) -> bool:
    """Whether ``pid`` is still a running process (an exited, unreaped one is not)."""
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _serve_live_pid(make_pid: int) -> int:
    for pid in _descendants(make_pid):
        with contextlib.suppress(OSError):
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            if any(a.endswith(b"serve_live.py") for a in cmd) and b"--jupyter-server" not in cmd:
                return pid
    raise AssertionError("no tools/serve_live.py process under make live")


def _kernel_pids(jupyter_pid: int) -> list[int]:
    return [p for p in _descendants(jupyter_pid)
            if b"--kernel" in open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")]


def _start_kernel(book: str, token: str) -> str:
    status, _, body = _request(book + "jupyter/api/kernels", method="POST", data=b"{}",
                               headers=_same_origin(book, token, **{"Content-Type": "application/json"}))
    assert status == 201, (status, body)
    return json.loads(body)["id"]


def _new_token(live: Live) -> str:
    status, _, body = _exchange(live.book, live.new_key(), live.origin)
    assert status == 200, (status, body)
    return json.loads(body)["token"]


def _chromium_with_address_on_its_command_line(address: str, profile: str):
    """Start Chromium as a reader does (``chromium ADDRESS``: the address on its command line) and
    connect Playwright to it; returns (process, port of its DevTools)."""
    proc = subprocess.Popen([browser_mod.chromium_path(), "--headless=new", *browser_mod.CHROMIUM_FLAGS,
                             f"--user-data-dir={profile}", "--remote-debugging-port=0", address],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = os.path.join(profile, "DevToolsActivePort")
    port = _poll(lambda: os.path.exists(port_file) and open(port_file).read().split("\n")[0].strip(), 60, 0.1)
    assert port, "Chromium wrote no DevTools port"
    return proc, int(port)


def test_another_user_cannot_take_the_launch_key(live_server, tmp_path):
    """The key never reaches a command line or a file another user can read. While the reader
    starts Chromium the usual way, with the launch page's address on its command line, another user
    reads every command line in /proc over and over, and every file they name, the private folder
    and make live's environment, and exchanges any key it finds at once. A decoy process with a key
    on its command line (the old launch address) shows that the spy does find such keys."""
    book = live_server.book
    launch = live_server.new_launch()
    key, page_file = _key_of(launch), _launch_path(launch)
    _, other = _other_user()
    decoy_key = "decoy" + uuid.uuid4().hex
    decoy = subprocess.Popen(["bash", "-c", f'exec -a "chromium {book}chapters/intro.html#live={decoy_key}" '
                              "sleep 600"])
    # as the reader's own user, the spy may read the reader's files: then command lines alone
    spy = _attacker("local_spy.py", book, *([] if other else ["--command-lines-only"]))
    profile = str(tmp_path / "profile")
    chrome = None
    try:
        chrome, port = _chromium_with_address_on_its_command_line(launch, profile)
        with playwright.sync_api.sync_playwright() as pw:
            browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
            try:
                def book_page():
                    pages = [p for c in browser.contexts for p in c.pages if p.url.startswith(book)]
                    return pages[0] if pages else None

                page = _poll(book_page, 60, 0.2)
                assert page is not None, "the launch page did not open the book"
                page.wait_for_function("() => document.documentElement.dataset.bookLiveSession",
                                       timeout=30000)
                state = page.evaluate("() => document.documentElement.dataset.bookLiveSession")
                address_bar = page.url
            finally:
                browser.close()
        chrome_cmd = open(f"/proc/{chrome.pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
    finally:
        try:
            spy.stdin.close()  # the spy's last scan ran while Chromium was still open
            out, err = spy.stdout.read(), spy.stderr.read()
            spy.wait(60)
        finally:
            if chrome is not None:
                chrome.terminate()
                chrome.wait(20)
            decoy.kill()
            decoy.wait()
    assert spy.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    text = json.dumps(result)
    # the spy works: it read Chromium's command line, and found and tried the decoy's key
    assert page_file in chrome_cmd and key not in chrome_cmd
    assert any(page_file in cmd for cmd in result["seen"].values()), result["seen"]
    assert result["exchanges"].get(decoy_key, [0])[0] == 403, result["exchanges"]
    checks = {
        "the reader's tab got the session": state == "ready",
        "the key left the address bar": "live=" not in address_bar,
        "no key found by the other user": set(result["found"]) == {decoy_key} and key not in text,
        "no session token for the other user": all(s != 200 for s, _ in result["exchanges"].values()),
    }
    if other:  # what the permissions refuse to another user
        checks.update({
            "launch page not readable": result["refused"].get(page_file) == "PermissionError",
            "private folder not listable": result["refused"].get(os.path.dirname(page_file)) == "PermissionError",
            "make live's environment not readable": any(
                p.endswith("/environ") and why == "PermissionError" for p, why in result["refused"].items()),
            "nothing of the run read": not result["read"],
        })
    else:
        checks.update({"launch page private to its owner": stat.S_IMODE(os.stat(page_file).st_mode) == 0o600})
    print(f"spy: {result['scans']} scans of /proc, saw {len(result['seen'])} command lines of the run")
    for name, ok in checks.items():
        assert _count(LOCAL + "the launch key", ok), (name, result)


_THIEF = r"""
import json, sys, urllib.request, urllib.error
book, key = sys.argv[1], sys.argv[2]
def call(path, data, headers):
    req = urllib.request.Request(book + path, method="POST", data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
origin = book.rstrip("/")
status, body = call("live-session", b"", {"X-Book-Live-Key": key, "Origin": origin})
token = json.loads(body)["token"] if status == 200 else ""
kstatus, kbody = call("jupyter/api/kernels", b"{}", {"Origin": origin, "Authorization": "token " + token,
                                                     "Content-Type": "application/json"})
print(json.dumps({"status": status, "token": token, "kernel_status": kstatus,
                  "kernel": json.loads(kbody).get("id") if kstatus == 201 else ""}))
"""


def test_a_key_used_first_by_someone_else_is_revoked_when_the_reader_presents_it(live_server, session_token):
    """Should a key leak all the same, the one who uses it first gets a session and starts a kernel
    (here: another user, given the key). When the reader's tab then presents the same key, the tab is
    told, the thief's token stops working, its kernel is shut down, and make live warns."""
    book = live_server.book
    launch = live_server.new_launch()
    key = _key_of(launch)
    prefix, _ = _other_user()
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    thief = subprocess.run([*prefix, python, "-c", _THIEF, book, key], capture_output=True, text=True,
                           timeout=120, cwd="/")
    assert thief.returncode == 0, thief.stderr
    stolen = json.loads(thief.stdout)
    assert stolen["status"] == 200 and stolen["kernel_status"] == 201, stolen  # the theft worked
    assert stolen["kernel"] in _kernels(book, session_token)
    printed = len(live_server.output)
    with browser_mod.chromium() as browser:
        blocked: list[str] = []
        ctx = browser_mod.new_context(browser, blocked=blocked)
        page = ctx.new_page()
        _allow_launch_page(ctx, launch)
        page.goto(launch, wait_until="load")
        page.wait_for_function("() => document.documentElement.dataset.bookLiveSession", timeout=20000)
        state = page.evaluate("() => document.documentElement.dataset.bookLiveSession")
        ctx.close()
    assert not blocked, blocked
    status, _, body = _request(book + "jupyter/api/status", headers=_same_origin(book, stolen["token"]))
    gone = _poll(lambda: stolen["kernel"] not in _kernels(book, session_token), 30, 0.2)
    warning = live_server.wait_for_output("presented a second time", since=printed)
    checks = {
        "the reader's tab is told": state == "error",
        "the thief's token revoked": status == 403 and "revoked" in body,
        "the thief's kernel shut down": gone,
        "make live warns": "revoked" in warning and "kernel" in warning,
    }
    for name, ok in checks.items():
        assert _count(LOCAL + "a key used first by someone else", ok), (name, status, body, warning)
    assert _request(book + "jupyter/api/status", headers=_same_origin(book, session_token))[0] == 200


@pytest.fixture(scope="module")
def a_kernel(live_server, session_token):
    """A kernel started through make live: (its id, its pid, its connection file)."""
    book = live_server.book
    kernel = _start_kernel(book, session_token)
    jupyter = _jupyter_server(live_server.pid)
    folder = os.path.dirname(_jupyter_sock(jupyter))
    conn = os.path.join(folder, f"kernel-{kernel}.json")

    def kernel_pid():
        for pid in _kernel_pids(jupyter):
            with contextlib.suppress(OSError):
                if conn.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                    return pid
        return None

    pid = _poll(kernel_pid, 60, 0.2)
    assert pid, f"no process for kernel {kernel}"
    yield kernel, pid, conn
    _request(book + f"jupyter/api/kernels/{kernel}", method="DELETE", headers=_same_origin(book, session_token))


def test_another_user_cannot_reach_the_kernels(live_server, a_kernel):
    """The kernels use ZeroMQ's ipc transport, their sockets in the private 0700 folder: neither the
    Jupyter server nor a kernel has any TCP socket, and another user can neither list that folder
    nor connect to any of its sockets (the issue's attacker subscribed to a kernel's iopub TCP port).
    The owner, as a control, reads the kernel's output on the same iopub socket."""
    from jupyter_client import BlockingKernelClient

    kernel, pid, conn = a_kernel
    jupyter = _jupyter_server(live_server.pid)
    folder = os.path.dirname(conn)
    info = json.load(open(conn))
    channels = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
    paths = [f"{info['ip']}-{info[c]}" for c in channels]
    assert _poll(lambda: all(os.path.exists(p) for p in paths), 60, 0.2), paths
    tcp = _tcp_inodes()
    _, other = _other_user()
    spy = _attacker("local_kernels.py", folder, *paths, _jupyter_sock(jupyter))
    out, err = spy.communicate(timeout=60)
    assert spy.returncode == 0, err
    result = json.loads(out)
    checks = {
        "kernel on the ipc transport": info["transport"] == "ipc",
        "its sockets in the private folder": info["ip"].startswith(folder + os.sep)
        and all(stat.S_ISSOCK(os.stat(p).st_mode) for p in paths),
        "private folder 0700": stat.S_IMODE(os.stat(folder).st_mode) & 0o777 == 0o700,
        "no TCP socket in the kernel": not _socket_inodes(pid) & tcp,
        "no TCP socket in the Jupyter server": not _socket_inodes(jupyter) & tcp,
    }
    if other:
        checks["folder not listable"] = result[folder] == "list refused: PermissionError"
        for path in paths + [_jupyter_sock(jupyter)]:
            checks[f"no connection to {os.path.basename(path)}"] = result[path] == "connect refused: PermissionError"
    for name, ok in checks.items():
        assert _count(LOCAL + "kernel traffic", ok), (name, info, result)
    # the control: on the same socket, the owner receives what the kernel prints, also from a
    # forked subprocess (its output reaches the kernel through the pipe moved to ipc)
    marker = f"marker-{uuid.uuid4().hex}"
    code = (f"import os\npid = os.fork()\nif pid == 0:\n    print({marker!r} + '-child', flush=True)\n"
            f"    os._exit(0)\nos.waitpid(pid, 0)\nprint({marker!r} + '-parent')")
    client = BlockingKernelClient(connection_file=conn)
    client.load_connection_file()
    client.start_channels()
    try:
        client.execute(code)
        printed, t0 = "", time.time()
        while time.time() - t0 < 60 and not (f"{marker}-child" in printed and f"{marker}-parent" in printed):
            with contextlib.suppress(queue.Empty):
                msg = client.get_iopub_msg(timeout=1)
                if msg["msg_type"] == "stream":
                    printed += msg["content"]["text"]
    finally:
        client.stop_channels()
    assert f"{marker}-child" in printed and f"{marker}-parent" in printed, printed
    assert not _socket_inodes(pid) & _tcp_inodes(), "the kernel opened a TCP socket for its pipe"


def test_kernels_do_not_inherit_the_jupyter_token(live_server, a_kernel):
    """The Jupyter server removes its token from its environment before any kernel starts."""
    _, pid, _ = a_kernel
    env = open(f"/proc/{pid}/environ", "rb").read()
    token = _jupyter_token(live_server.pid).encode()
    names = {e.split(b"=", 1)[0] for e in env.split(b"\0") if b"=" in e}
    assert _count(LOCAL + "headers, bodies, lifetimes", token not in env and not names & {
        b"JUPYTER_TOKEN", b"BOOK_LIVE_TOKEN"}), sorted(names)


def _raw_status(book: str, request: str) -> tuple[int, str]:
    answer = _raw(book, request.encode("latin-1"), timeout=10)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    return (int(m.group(1)) if m else 0), answer.partition(b"\r\n\r\n")[2].decode(errors="replace")


def test_duplicate_headers_a_foreign_host_and_a_huge_body_are_refused(live_server, session_token):
    """Two Host, Origin, Authorization, Content-Length or key headers get 400 (two parsers could
    read them differently); a Host not the book's gets 403 on the static book too (DNS rebinding);
    a claimed body of 5 GB gets 413 without a byte of it read, and the server does not grow."""
    book, own = live_server.book, live_server.origin
    host = urlsplit(book).netloc
    auth = f"Authorization: token {session_token}"
    end = "Connection: close\r\n\r\n"
    cases = {
        "two Host, book": (f"GET /chapters/intro.html HTTP/1.1\r\nHost: {host}\r\nHost: {host}\r\n{end}", 400),
        "two Host, proxy": (f"GET /jupyter/api/status HTTP/1.1\r\nHost: {host}\r\nHost: attacker.example\r\n"
                            f"{auth}\r\n{end}", 400),
        "two Origin": (f"POST /jupyter/api/kernels HTTP/1.1\r\nHost: {host}\r\nOrigin: {own}\r\n"
                       f"Origin: http://attacker.example\r\n{auth}\r\nContent-Length: 2\r\n{end}{{}}", 400),
        "two Authorization": (f"GET /jupyter/api/status HTTP/1.1\r\nHost: {host}\r\n{auth}\r\n"
                              f"Authorization: token guess\r\n{end}", 400),
        "two Content-Length": (f"POST /jupyter/api/kernels HTTP/1.1\r\nHost: {host}\r\nOrigin: {own}\r\n{auth}\r\n"
                               f"Content-Length: 2\r\nContent-Length: 40\r\n{end}{{}}", 400),
        "two keys": (f"POST /live-session HTTP/1.1\r\nHost: {host}\r\nOrigin: {own}\r\n"
                     f"X-Book-Live-Key: a\r\nX-Book-Live-Key: b\r\n{end}", 400),
        "foreign Host, book page": (f"GET /chapters/intro.html HTTP/1.1\r\nHost: attacker.example:{host.split(':')[1]}"
                                    f"\r\n{end}", 403),
        "foreign Host, config": (f"GET /_static/book-live-config.js HTTP/1.1\r\nHost: attacker.example\r\n{end}", 403),
        "no Host": (f"GET /chapters/intro.html HTTP/1.1\r\n{end}", 403),
    }
    for name, (request, expected) in cases.items():
        status, body = _raw_status(book, request)
        assert _count(LOCAL + "headers, bodies, lifetimes", status == expected), (name, status, body)
    serve_pid = _serve_live_pid(live_server.pid)

    def rss_kb():
        return int(re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{serve_pid}/status").read()).group(1))

    before = rss_kb()
    t0 = time.time()
    status, body = _raw_status(book, f"PUT /jupyter/api/contents/x.txt HTTP/1.1\r\nHost: {host}\r\nOrigin: {own}\r\n"
                                     f"{auth}\r\nContent-Length: 5000000000\r\n\r\n" + "x" * 65536)
    took = time.time() - t0
    grew = rss_kb() - before
    assert _count(LOCAL + "headers, bodies, lifetimes", status == 413 and "too large" in body
                  and took < 5 and grew < 20000), (status, body, took, grew)
    assert not os.path.exists(os.path.join(ROOT, "x.txt"))


def test_a_connection_that_never_ends_its_headers_is_closed(live_server):
    """A connection that sends part of a request and then nothing is closed after HEAD_TIMEOUT."""
    parts = urlsplit(live_server.book)
    with socket.create_connection((parts.hostname, parts.port), timeout=serve_live.HEAD_TIMEOUT + 20) as s:
        s.sendall(f"GET /chapters/intro.html HTTP/1.1\r\nHost: {parts.netloc}\r\nX-Slow: ".encode())
        t0 = time.time()
        try:
            data = s.recv(65536)
        except socket.timeout:
            data = None
        took = time.time() - t0
    assert _count(LOCAL + "connection flood", data == b"" and took < serve_live.HEAD_TIMEOUT + 5), (data, took)
    MEASURES["a connection that never ends its headers"] = f"closed after {took:.1f} s"


@pytest.fixture(scope="module")
def small_live(html_dir):
    """make live with a limit of 1,024 open files (a desktop's usual), two kernels at most, and
    kernels shut down after 20 s idle."""
    with _running_live(html_dir, "--max-kernels 2 --kernel-idle 20", nofile=NOFILE) as live:
        yield live


def test_the_reader_is_answered_under_a_connection_flood(small_live):
    """Another user holds 1,100 half-open connections (requests whose headers never end, each
    opened again as soon as the server closes it) against make live limited to 1,024 open files.
    The reader's page, the live config and a forwarded Jupyter request are each answered within
    5 s, the server never runs out of file descriptors, and it logs no flood of errors."""
    live = small_live
    book = live.book
    token = _new_token(live)
    serve_pid = _serve_live_pid(live.pid)
    limits = open(f"/proc/{serve_pid}/limits").read()
    assert re.search(rf"Max open files\s+{NOFILE}\s", limits), limits
    flood = _attacker("local_flood.py", str(urlsplit(book).port), str(FLOOD))
    lines = _lines_of(flood)
    timings: list[tuple[str, int, float]] = []
    fds: list[int] = []
    try:
        ready = _poll(lambda: [ln for ln in lines if ln.startswith("READY")], 120, 0.1)
        assert ready, f"the flood did not start: {lines} {flood.poll()}"
        cpu0, wall0 = sum(map(int, open(f"/proc/{serve_pid}/stat").read().rsplit(")", 1)[1].split()[11:13])), time.time()
        targets = [("book page", book + "chapters/intro.html", {}),
                   ("live config", book + "_static/book-live-config.js", {}),
                   ("Jupyter API", book + "jupyter/api/status", _same_origin(book, token))]
        for _ in range(5):
            for name, url, headers in targets:
                fds.append(len(os.listdir(f"/proc/{serve_pid}/fd")))
                t0 = time.time()
                try:
                    status = _request(url, headers=headers, timeout=READER_LIMIT_S + 5)[0]
                except OSError:
                    status = 0
                timings.append((name, status, time.time() - t0))
        cpu = (sum(map(int, open(f"/proc/{serve_pid}/stat").read().rsplit(")", 1)[1].split()[11:13]))
               - cpu0) / os.sysconf("SC_CLK_TCK") / (time.time() - wall0)
    finally:
        flood.stdin.close()
        flood.wait(60)
    stats = json.loads(lines[-1])
    notes = [ln for ln in live.output if "no free file descriptor" in ln]
    worst = max(t for _, _, t in timings)
    print(f"flood: {stats}; reader: worst {worst:.2f} s over {len(timings)} requests; server fds max "
          f"{max(fds)}; server CPU {cpu:.0%}; {len(notes)} EMFILE notes")
    assert stats["made"] >= FLOOD and stats["closed_by_server"] > 0, stats  # the flood was real
    for name, status, took in timings:
        assert _count(LOCAL + "connection flood", status == 200 and took < READER_LIMIT_S), (name, status, took)
    assert _count(LOCAL + "connection flood", max(fds) < NOFILE and len(notes) <= 2), (max(fds), notes)
    MEASURES["reader under a flood"] = (
        f"{len(timings)} requests answered in at most {worst:.2f} s (limit {READER_LIMIT_S:g} s) under "
        f"{FLOOD:,} half-open connections with a {NOFILE:,}-file limit; the server held at most "
        f"{max(fds)} file descriptors")


def test_the_server_backs_off_when_it_runs_out_of_file_descriptors(html_dir):
    """With the connection cap set above what its limit of open files allows (256 files, 2,000
    connections), a flood of 400 half-open connections makes accept() fail with EMFILE. The server
    then closes the oldest waiting connection and waits before trying again: it notes this at most
    once in ten seconds (no flood of errors), and the reader is still answered within 5 s."""
    with _running_live(html_dir, "--max-connections 2000", nofile=256) as live:
        book = live.book
        serve_pid = _serve_live_pid(live.pid)
        flood = _attacker("local_flood.py", str(urlsplit(book).port), "400")
        lines = _lines_of(flood)
        timings = []
        try:
            assert _poll(lambda: [ln for ln in lines if ln.startswith("READY")], 120, 0.1), lines
            noted = _poll(lambda: [ln for ln in live.output if "no free file descriptor" in ln], 30, 0.1)
            for _ in range(5):
                t0 = time.time()
                try:
                    status = _request(book + "chapters/intro.html", timeout=READER_LIMIT_S + 5)[0]
                except OSError:
                    status = 0
                timings.append((status, time.time() - t0))
            fds = len(os.listdir(f"/proc/{serve_pid}/fd"))
            notes = [ln for ln in live.output if "no free file descriptor" in ln]
        finally:
            flood.stdin.close()
            flood.wait(60)
    worst = max(t for _, t in timings)
    assert noted, "the server never ran out of file descriptors: the test did not reach EMFILE"
    assert _count(LOCAL + "connection flood", all(s == 200 and t < READER_LIMIT_S for s, t in timings)), timings
    assert _count(LOCAL + "connection flood", len(notes) <= 3 and fds <= 256), (notes, fds)
    MEASURES["reader when the server runs out of file descriptors"] = (
        f"answered in at most {worst:.2f} s under 400 half-open connections with a 256-file limit "
        f"and no cap below it; {len(notes)} note(s) of EMFILE")


def test_kernels_are_capped_and_idle_ones_shut_down(small_live):
    """With --max-kernels 2, a third kernel or session is refused (429, saying why) and an existing
    session is still given; with --kernel-idle 20, kernels no tab is connected to are shut down."""
    live = small_live
    book = live.book
    token = _new_token(live)
    running = _kernels(book, token)
    started = [_start_kernel(book, token) for _ in range(2 - len(running))]
    assert len(_kernels(book, token)) == 2, started
    status, _, body = _request(book + "jupyter/api/kernels", method="POST", data=b"{}",
                               headers=_same_origin(book, token, **{"Content-Type": "application/json"}))
    assert _count(LOCAL + "kernel cap", status == 429 and "--max-kernels 2" in body), (status, body)
    model = {"path": "chapters/intro.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
    status, _, body = _request(book + "jupyter/api/sessions", method="POST", data=json.dumps(model).encode(),
                               headers=_same_origin(book, token, **{"Content-Type": "application/json"}))
    assert _count(LOCAL + "kernel cap", status == 429), (status, body)
    t0 = time.time()
    culled = _poll(lambda: not _kernels(book, token), 120, 1.0)
    took = time.time() - t0
    assert _count(LOCAL + "kernel cap", culled), _kernels(book, token)
    MEASURES["idle kernels (--kernel-idle 20)"] = f"shut down {took:.0f} s after the last start"
    assert _start_kernel(book, token)  # the cap counts running kernels only


def _run_processes(live: Live) -> dict[int, str]:
    """Every process of a make live run (pid -> first words of its command line), once its Jupyter
    server and a kernel run."""
    procs = {}
    for pid in [live.pid, *_descendants(live.pid)]:
        with contextlib.suppress(OSError):
            procs[pid] = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")[:80].decode()
    return procs


ENDINGS = {
    "SIGHUP to the process group": "a closed terminal or a dropped SSH connection",
    "SIGKILL of make alone": "make ends and passes on nothing",
    "SIGKILL of serve_live.py": "no handler runs: the Jupyter server follows by the parent-death signal",
}


@pytest.mark.parametrize("how", list(ENDINGS))
def test_the_end_of_make_live_leaves_no_process_and_no_folder(html_dir, how):
    """However make live ends (see ENDINGS), every process of the run ends with it, the Jupyter
    server and a running kernel included, and its private folder is removed."""
    with _running_live(html_dir) as live:
        token = _new_token(live)
        _start_kernel(live.book, token)
        jupyter = _jupyter_server(live.pid)
        assert _poll(lambda: _kernel_pids(jupyter), 60, 0.2), "no kernel process"
        procs, folder = _run_processes(live), live.folder
        assert len(procs) >= 4, procs  # make, serve_live.py, the Jupyter server, the kernel
        if how == "SIGHUP to the process group":
            os.killpg(live.pid, signal.SIGHUP)
        elif how == "SIGKILL of make alone":
            os.kill(live.pid, signal.SIGKILL)
        else:
            os.kill(_serve_live_pid(live.pid), signal.SIGKILL)
        t0 = time.time()
        done = _poll(lambda: not [p for p in procs if _alive(p)] and not os.path.exists(folder), 60, 0.1)
        took = time.time() - t0
        left = {p: c for p, c in procs.items() if _alive(p)}  # (make, our child, ends unreaped)
        live.proc.wait(10)
    assert _count(LOCAL + "hang-up and kill", done and not left and not os.path.exists(folder)), (how, left)
    MEASURES[f"after {how}"] = (f"{len(left)} of the run's {len(procs)} processes left, folder removed, "
                                f"in {took:.1f} s")
