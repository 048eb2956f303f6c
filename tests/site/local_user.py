"""Another local user, for the attack tests: run a script of ``tests/site/attack/`` as ``nobody``
(when the test runs as root and can), and find the TCP sockets a process holds.

Used by ``test_live.py`` (make live's server and kernels) and ``test_private_kernels.py`` (the
kernels of nbval and make notebooks).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import subprocess
import sys

ATTACK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attack")


def other_user() -> tuple[list[str], bool]:
    """(command prefix, True) that runs a command as ``nobody``, when this test can (root, with
    setpriv); else ([], False): the attacks then run as another process of this user."""
    if os.geteuid() == 0 and shutil.which("setpriv"):
        try:
            pw = pwd.getpwnam("nobody")
        except KeyError:
            return [], False
        return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"], True
    return [], False


def attacker(script: str, *args: str) -> subprocess.Popen:
    """Start ``tests/site/attack/<script>`` as the other user, its input and output pipes. The
    code goes on the command line (it holds no secret), so no file of this test must be readable."""
    prefix, _ = other_user()
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    code = open(os.path.join(ATTACK_DIR, script), encoding="utf-8").read()
    return subprocess.Popen([*prefix, python, "-c", code, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")


def socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process ``pid`` holds."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            m = re.match(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
            if m:
                inodes.add(m.group(1))
    return inodes


def tcp_inodes() -> set[str]:
    """The inodes of every TCP socket of this machine, in any state."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if os.path.exists(table):
            inodes.update(row.split()[9] for row in open(table).read().splitlines()[1:])
    return inodes
