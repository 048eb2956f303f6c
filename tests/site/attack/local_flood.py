"""Another local user flooding make live's port with half-open requests (run by
tests/site/test_live.py as ``nobody``; standard library only).

    python3 local_flood.py PORT COUNT

Opens COUNT connections to 127.0.0.1:PORT, each sending the start of a request whose headers never
end, and keeps COUNT open: each one the server closes is opened again at once. Prints ``READY n``
when the first COUNT connections were made, and, when its input closes, one JSON line: connections
made in all, how many the server closed, and how many connects failed.
"""

import json
import os
import resource
import selectors
import socket
import sys

PORT, COUNT = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft != resource.RLIM_INFINITY and soft < COUNT + 64:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, COUNT + 64) if hard != resource.RLIM_INFINITY
                                                else COUNT + 64, hard))
START = f"GET /chapters/intro.html HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\nX-Slow: ".encode()
sel = selectors.DefaultSelector()
stats = {"made": 0, "closed_by_server": 0, "connect_failed": 0}


def open_one() -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", PORT))
        s.sendall(START)
    except OSError:
        stats["connect_failed"] += 1
        s.close()
        return False
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, "conn")
    stats["made"] += 1
    return True


for _ in range(COUNT):
    open_one()
print(f"READY {len(sel.get_map())}", flush=True)
sel.register(0, selectors.EVENT_READ, "stdin")
done = False
while not done:
    for key, _ in sel.select(timeout=1.0):
        if key.data == "stdin":
            if not os.read(0, 4096):
                done = True
            continue
        s = key.fileobj
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:  # the server closed it: open another at once
            sel.unregister(s)
            s.close()
            stats["closed_by_server"] += 1
            open_one()
    open_now = len(sel.get_map()) - 1
    while not done and open_now < COUNT and open_one():  # failed connects: try again
        open_now += 1
print(json.dumps(stats), flush=True)
