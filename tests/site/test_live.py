"""Live recomputation on the website (``make live``), and its security.

The real ``make live`` is started (the book on 127.0.0.1, a Jupyter server on a private Unix socket
behind it). The book's own live cell is started from the page in Chromium, one of its sliders moved,
the figure recomputed by the kernel. Then a page on a *second origin* (another port of 127.0.0.1,
served by a plain ``http.server``), opened in the same browser after the reader has started a
session, tries the attack of issue #16: read the token, start a kernel, open WebSockets, run code.
Each step must fail. Nothing may leave 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import pytest

from conftest import ROOT, built_pages

HERE = os.path.dirname(os.path.abspath(__file__))
FINGERPRINT_JS = open(os.path.join(HERE, "figure_fingerprint.js"), encoding="utf-8").read()

# Hard imports, not importorskip: a missing Playwright (it is in requirements.txt) or a broken
# tools/browser.py must fail the suite, not turn every browser test into a skip.
import browser as browser_mod  # noqa: E402  (tools/, put on sys.path by conftest.py)
import playwright.sync_api  # noqa: E402, F401
import serve_live  # noqa: E402


def _live_pages(html_dir):
    return [n for n in built_pages(html_dir)
            if "tag_live" in open(os.path.join(html_dir, n), encoding="utf-8").read()]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _request(url, *, method="GET", headers=None, data=None):
    """(status, headers, body) of one request, without following redirects or raising on 4xx."""
    opener = urllib.request.build_opener(_NoRedirect)
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    try:
        with opener.open(req, timeout=20) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


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


@pytest.fixture(scope="module")
def live_server(html_dir):
    """The real ``make live`` on a free port; yields (book url, one-time address, make's pid)."""
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "live", "PORT=0", f"LIVE_HTML={html_dir}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=True)
    lines = []
    try:
        t0 = time.time()
        while time.time() - t0 < 120:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("LIVE READY"):
                _, _, book, launch = line.split()
                yield book, launch, proc.pid
                break
        if not lines or not lines[-1].startswith("LIVE READY"):
            pytest.fail("make live did not come up:\n" + "".join(lines))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def session_cookie(live_server):
    book, launch, _ = live_server
    status, headers, _ = _request(launch)
    assert status == 303, status
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie, cookie
    return cookie.split(";", 1)[0]


def _same_origin(book, cookie, **extra):
    return {"Origin": book.rstrip("/"), "Sec-Fetch-Site": "same-origin", "Cookie": cookie, **extra}


def _kernels(book, cookie) -> set[str]:
    """The ids of the running kernels, asked through the proxy as the book's own page would."""
    status, _, body = _request(book + "jupyter/api/kernels", headers=_same_origin(book, cookie))
    assert status == 200, (status, body)
    return {k["id"] for k in json.loads(body)}


def _jupyter_server(make_pid: int) -> int:
    for pid in _descendants(make_pid):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"jupyter_server" in cmd and any(a.startswith(b"--ServerApp.sock=") for a in cmd):
            return pid
    raise AssertionError("no Jupyter server process under make live")


def _listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if os.path.exists(table):
            for row in open(table).read().splitlines()[1:]:
                f = row.split()
                if f[3] == "0A":  # LISTEN
                    inodes.add(f[9])
    return inodes


def _open_session(page, launch):
    """Open the one-time address as the reader does: it lands on the book's start page."""
    page.goto(launch, wait_until="load")
    page.wait_for_url(re.compile(r"/chapters/intro\.html$"), timeout=20000)
    page.wait_for_load_state("load")


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
    _, _, make_pid = live_server
    pid = _jupyter_server(make_pid)
    cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    sock = next(a for a in cmd if a.startswith(b"--ServerApp.sock=")).split(b"=", 1)[1].decode()
    assert stat.S_ISSOCK(os.stat(sock).st_mode)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
    token = dict(e.split(b"=", 1) for e in open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
                 if b"=" in e)[b"JUPYTER_TOKEN"]
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


def test_proxy_refuses_everything_but_the_books_own_pages(live_server, session_cookie):
    """The rules of tools/serve_live.py, each tried on the real server with forged headers."""
    book, launch, _ = live_server
    url = book + "jupyter/api/kernels"
    own = book.rstrip("/")
    port = int(own.rsplit(":", 1)[1])
    cases = {
        "no cookie": {"Origin": own, "Sec-Fetch-Site": "same-origin"},
        "other origin": {"Origin": f"http://127.0.0.1:{port + 1}", "Cookie": session_cookie},
        "same site, other port": {"Origin": own, "Sec-Fetch-Site": "same-site", "Cookie": session_cookie},
        "cross site": {"Origin": own, "Sec-Fetch-Site": "cross-site", "Cookie": session_cookie},
        "DNS rebinding": {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}",
                          "Cookie": session_cookie},
        "POST without Origin": {"Cookie": session_cookie},
        "wrong cookie": {"Origin": own, "Cookie": "book_live_session=guess"},
    }
    before = _kernels(book, session_cookie)
    for name, headers in cases.items():
        status, _, body = _request(url, method="POST", headers=headers, data=b"{}")
        assert status == 403 and "refused by make live" in body, (name, status, body)
    status, _, body = _request(book + "jupyter/api/events/subscribe",
                               headers={"Cookie": session_cookie, "Connection": "Upgrade",
                                        "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                                        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert status == 403, ("WebSocket without Origin", status, body)
    assert _kernels(book, session_cookie) == before
    assert _request(launch.replace("live=", "live=x"))[0] == 403
    assert _request(book, method="POST", data=b"x")[0] == 405  # the book itself is read-only


def test_live_figure_recomputes_in_a_kernel(html_dir, live_server):
    book, launch, _ = live_server
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
        page.on("response", lambda r: r.status >= 400 and errors.append(f"{r.url} (HTTP {r.status})"))
        page.goto(book + name, wait_until="load")  # before the one-time address: no session yet
        assert "open the address" in page.inner_text("div.cell.tag_live .book-live-status")
        assert page.locator("div.cell.tag_live .book-live-run").count() == 0
        _open_session(page, launch)  # the reader opens the address make live printed
        page.goto(book + name, wait_until="load")
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
        # the kernel's first rendering arrives through the Output widget
        t0 = time.time()
        before = out.evaluate(FINGERPRINT_JS)
        while "img:" not in before and time.time() - t0 < 30:
            page.wait_for_timeout(200)
            before = out.evaluate(FINGERPRINT_JS)
        assert "img:" in before or "text:" in before, "the live figure shows nothing"
        handle.scroll_into_view_if_needed()
        handle.focus()
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        after, t0 = before, time.time()
        while (after == before or "img:" not in after and "text:" not in after) and time.time() - t0 < 60:
            page.wait_for_timeout(200)
            after = out.evaluate(FINGERPRINT_JS)
        assert after != before, "moving the slider did not recompute the figure in the kernel"
        ctx.close()
    assert not blocked, "requests to outside hosts (blocked):\n" + "\n".join(blocked)
    assert not errors, "console errors:\n" + "\n".join(errors)


def test_a_page_on_another_origin_cannot_use_make_live(live_server, session_cookie, tmp_path):
    """Issue #16's attack in the real Chromium, after the reader has opened a live session in the
    same browser (so the browser holds the session cookie, the worst case)."""
    book, launch, make_pid = live_server
    token = dict(e.split(b"=", 1) for e in open(f"/proc/{_jupyter_server(make_pid)}/environ", "rb")
                 .read().split(b"\0") if b"=" in e)[b"JUPYTER_TOKEN"].decode()
    # a kernel the attacker would like to use (its id is even handed to the attack page)
    status, _, body = _request(book + "jupyter/api/kernels", method="POST", data=b"{}",
                               headers=_same_origin(book, session_cookie,
                                                    **{"Content-Type": "application/json"}))
    assert status == 201, (status, body)
    kernel = json.loads(body)["id"]
    before = _kernels(book, session_cookie)
    marker = tmp_path / f"attack-{uuid.uuid4().hex}.txt"
    attack_dir = os.path.join(HERE, "attack")
    with browser_mod.serve_directory(attack_dir) as evil, browser_mod.chromium() as browser:
        assert evil.split(":")[2] != book.split(":")[2]  # another origin: another port
        blocked: list[str] = []
        ctx = browser_mod.new_context(browser, blocked=blocked)
        page = ctx.new_page()
        _open_session(page, launch)  # the reader's own live session
        assert any(c["name"] == serve_live.COOKIE for c in ctx.cookies())
        refused: list[str] = []
        page.on("response", lambda r: "/jupyter/" in r.url and refused.append(f"{r.status} {r.url}"))
        page.goto(f"{evil}attack.html?book={book}&kernel={kernel}&marker={marker}", wait_until="load")
        page.wait_for_function("() => window.attackDone === true", timeout=60000)
        result = page.evaluate("() => window.attackResult")
        ctx.close()
    assert not blocked, blocked
    leaked = [k for k, v in result.items() if token in str(v)]
    assert not leaked, f"the Jupyter token reached the other origin through {leaked}"
    assert json.loads(result["config"]) == {"baseUrl": "/jupyter/", "session": True}
    assert serve_live.COOKIE not in result["cookie"], "the session cookie is readable by script"
    assert result["list"].startswith("not readable"), result["list"]
    assert result["events"] in ("error", "closed 1006"), result["events"]
    assert result["channels"] in ("error", "closed 1006"), result["channels"]
    time.sleep(2)  # an execute_request that got through would have written the marker by now
    assert not marker.exists(), "code sent from the other origin ran"
    assert _kernels(book, session_cookie) == before, "a kernel was started from the other origin"
    assert refused and all(r.startswith("403 ") for r in refused), refused
