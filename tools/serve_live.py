"""Serve the built book with a live kernel: ``make live``.

Starts a Jupyter server on 127.0.0.1 (root: the book's folder, ``sattn`` importable, a random
token, cross-origin requests allowed only from the book's own address) and serves ``_build/html``
on 127.0.0.1. The book's ``_static/book-live-config.js`` is answered with that server's address and
token, so the cells tagged ``live`` offer *Run live*: thebe (served by the book itself) starts a
kernel and recomputes their figures. Nothing leaves this machine.

    python tools/serve_live.py [--html _build/html] [--port 8000] [--jupyter-port 8890]

Ctrl-C stops both servers. With ``--port 0``/``--jupyter-port 0`` free ports are chosen; the line
``LIVE READY <book url> <jupyter url>`` on stdout says where they are (the browser test reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from browser import _QuietHandler, serve_directory  # noqa: E402

CONFIG_PATH = "/_static/book-live-config.js"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_jupyter(port: int, token: str, origin: str, root: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    cmd = [sys.executable, "-m", "jupyter_server", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.allow_origin={origin}",
           f"--ServerApp.root_dir={root}", "--ServerApp.disable_check_xsrf=False",
           "--ServerApp.log_level=WARN"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return subprocess.Popen(cmd, env=env, cwd=root, start_new_session=True)


def wait_for_jupyter(proc: subprocess.Popen, url: str, token: str, timeout: float = 60) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter server exited with code {proc.returncode}")
        try:
            req = urllib.request.Request(url + "api/status", headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"jupyter server did not answer on {url} within {timeout:.0f} s")


def make_handler(config_js: bytes):
    class LiveHandler(_QuietHandler):
        def do_GET(self):
            if self.path.split("?")[0] == CONFIG_PATH:
                self.send_response(200)
                self.send_header("Content-Type", "text/javascript")
                self.send_header("Content-Length", str(len(config_js)))
                self.end_headers()
                self.wfile.write(config_js)
                return
            if "/@jupyter-widgets/" in self.path:
                # thebe's widget manager asks for the Font Awesome files next to the page, under
                # the AMD module id; they are the ones vendored with the html-manager
                name = self.path.split("?")[0].rsplit("/", 1)[-1]
                self.path = "/_static/widgets/" + name
            super().do_GET()

    return LiveHandler


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", default=os.path.join(ROOT, "_build", "html"), help="built book folder")
    ap.add_argument("--port", type=int, default=8000, help="port of the book (0: any free port)")
    ap.add_argument("--jupyter-port", type=int, default=8890, help="port of the Jupyter server")
    ap.add_argument("--root", default=ROOT, help="Jupyter server root (kernels start in the chapter's folder)")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.html, "index.html")):
        print(f"no built book in {args.html}: run 'make book' first", file=sys.stderr)
        return 2

    port = args.port or free_port()
    jport = args.jupyter_port or free_port()
    token = secrets.token_hex(24)
    origin = f"http://127.0.0.1:{port}"
    jurl = f"http://127.0.0.1:{jport}/"
    config = {"baseUrl": jurl, "token": token}
    config_js = (f"// written by tools/serve_live.py for this session only\n"
                 f"window.BOOK_LIVE = {json.dumps(config)};\n").encode()

    proc = start_jupyter(jport, token, origin, os.path.abspath(args.root))
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        wait_for_jupyter(proc, jurl, token)
        with serve_directory(args.html, port=port, handler=make_handler(config_js)) as base:
            print(f"Book with live kernels: {base}  (Jupyter server {jurl}, token in the page config)")
            print("Open a chapter and press 'Run live' above a live figure. Ctrl-C stops both servers.")
            print(f"LIVE READY {base} {jurl}", flush=True)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
