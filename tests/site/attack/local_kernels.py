"""Another local user trying to reach make live's kernels (run by tests/site/test_live.py as
``nobody``; standard library only).

    python3 local_kernels.py FOLDER PATH... [--tcp PORT...]

For the private FOLDER: list it and read each connection file. For each PATH (a kernel's or the
Jupyter server's Unix socket): connect, and on success send a ZMTP 3.0 greeting and read the answer.
For each TCP PORT of 127.0.0.1: the same greeting (how the issue's attacker subscribed to a
kernel's iopub port). Prints one JSON object: for each target, what happened.
"""

import json
import os
import socket
import sys

GREETING = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL" + b"\0" * 16 + b"\0" + b"\0" * 31

args = sys.argv[1:]
folder, rest = args[0], args[1:]
paths = rest[:rest.index("--tcp")] if "--tcp" in rest else rest
ports = [int(p) for p in rest[rest.index("--tcp") + 1:]] if "--tcp" in rest else []
out: dict[str, str] = {}


def talk(s: socket.socket, target) -> str:
    s.settimeout(3)
    try:
        s.connect(target)
    except OSError as e:
        return f"connect refused: {type(e).__name__}"
    try:
        s.sendall(GREETING)
        answer = s.recv(64)
    except OSError as e:
        return f"connected, then {type(e).__name__}"
    return f"connected, ZMTP answer {answer[:12].hex()}" if answer else "connected, closed"


try:
    names = os.listdir(folder)
    out[folder] = f"listed: {names}"
except OSError as e:
    out[folder] = f"list refused: {type(e).__name__}"
    names = []
for name in names:
    if name.endswith(".json"):
        try:
            with open(os.path.join(folder, name), "rb") as f:
                out[os.path.join(folder, name)] = "read: " + f.read().decode(errors="replace")
        except OSError as e:
            out[os.path.join(folder, name)] = f"read refused: {type(e).__name__}"
for path in paths:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        out[path] = talk(s, path)
for port in ports:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        out[f"tcp {port}"] = talk(s, ("127.0.0.1", port))
print(json.dumps(out))
