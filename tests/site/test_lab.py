"""JupyterLab leaves the chapters as they are: `make lab PORT=... LAB_ARGS=--no-browser` starts, and
opening and saving a chapter (its .md as a notebook through jupytext, and its .ipynb) through the
server's contents API, as JupyterLab's Save does, rewrites no byte of the tracked files (the
kernelspec and front matter are pinned by tools/execute_notebooks.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import ROOT

TOKEN = "book-lab-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab():
    port = _free_port()
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"PORT={port}",
         f"LAB_ARGS=--no-browser --ServerApp.token={TOKEN} --ServerApp.open_browser=False"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() - t0 > 90:
                os.killpg(proc.pid, signal.SIGTERM)
                pytest.fail("make lab did not start:\n" + proc.stdout.read().decode()[-3000:])
            time.sleep(0.5)
    yield base
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def _api(base, path, method="GET", body=None):
    req = urllib.request.Request(f"{base}/api/contents/{path}?token={TOKEN}"
                                 + ("&type=notebook&content=1" if method == "GET" else ""),
                                 method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


@pytest.mark.parametrize("name", ["07_experiments.md", "07_experiments.ipynb", "02_sparse_patterns.md"])
def test_open_and_save_changes_nothing(lab, name):
    stem = name.rsplit(".", 1)[0]
    files = [os.path.join(ROOT, "chapters", stem + ext) for ext in (".md", ".ipynb")]
    before = {f: open(f, "rb").read() for f in files}
    model = _api(lab, name)
    assert model["type"] == "notebook" and model["content"]["cells"]
    # what JupyterLab sends on Save: the notebook, with the metadata of the kernel it runs on
    model["content"]["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)",
                                                  "language": "python", "name": "python3"}
    _api(lab, name, "PUT", {"type": "notebook", "format": "json", "content": model["content"]})
    after = {f: open(f, "rb").read() for f in files}
    changed = [os.path.relpath(f, ROOT) for f in files if before[f] != after[f]]
    for f in files:  # leave the checkout as it was, whatever happened
        open(f, "wb").write(before[f])
    assert not changed, f"saving {name} in JupyterLab rewrote {changed}"
