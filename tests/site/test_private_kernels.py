"""The kernels that execute the chapters (nbval in make test, tools/execute_notebooks.py in make
notebooks) have no TCP port: ZeroMQ's ipc transport, sockets and connection file in a private 0700
folder (tools/private_kernels.py). Another user (``nobody``, when the test runs as root) can
neither list that folder nor connect to a socket in it; the owner, as a control, talks to the
kernel on the same sockets. nbval and the execute script are each run on a notebook whose cell
checks, inside the kernel, that it is such a kernel."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import stat
import subprocess
import sys
import textwrap
import time

import nbformat
import private_kernels  # tools/, on sys.path from conftest.py
from conftest import ROOT
from local_user import attacker, other_user, socket_inodes, tcp_inodes

CHANNELS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")

#: A cell that fails unless the kernel it runs in is one of tools/private_kernels.py.
CHECK_CELL = textwrap.dedent("""\
    import json, os, stat
    from ipykernel import get_connection_file
    conn = get_connection_file()
    info = json.load(open(conn))
    folder = os.path.dirname(conn)
    assert info["transport"] == "ipc", info["transport"]
    assert info["ip"].startswith(folder + os.sep), (info["ip"], folder)
    assert os.path.basename(folder).startswith("sattn-kernels-"), folder
    assert stat.S_IMODE(os.stat(folder).st_mode) & 0o777 == 0o700, oct(os.stat(folder).st_mode)
    print("private ipc kernel")""")


def test_another_user_cannot_reach_a_private_kernel():
    folder = private_kernels.private_folder()
    km = private_kernels.kernel_manager(folder)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        info = json.load(open(km.connection_file))
        paths = [f"{info['ip']}-{info[c]}" for c in CHANNELS]
        # the control, on the same sockets: the owner reads what the kernel prints, also from a
        # forked subprocess (its output reaches the kernel through the pipe on ipc)
        code = ("import os\npid = os.fork()\nif pid == 0:\n    print('from-child', flush=True)\n"
                "    os._exit(0)\nos.waitpid(pid, 0)\nprint('from-parent')")
        kc.execute(code)
        printed, t0 = "", time.time()
        while time.time() - t0 < 60 and not ("from-child" in printed and "from-parent" in printed):
            with contextlib.suppress(queue.Empty):
                msg = kc.get_iopub_msg(timeout=1)
                if msg["msg_type"] == "stream":
                    printed += msg["content"]["text"]
        assert "from-child" in printed and "from-parent" in printed, printed
        spy = attacker("local_kernels.py", folder, *paths)
        out, err = spy.communicate(timeout=60)
        assert spy.returncode == 0, err
        result = json.loads(out)
        pid = km.provisioner.process.pid
        assert info["transport"] == "ipc"
        assert all(p.startswith(folder + os.sep) and stat.S_ISSOCK(os.stat(p).st_mode)
                   for p in paths), paths
        assert stat.S_IMODE(os.stat(folder).st_mode) & 0o777 == 0o700
        assert not socket_inodes(pid) & tcp_inodes(), "the kernel holds a TCP socket"
        if other_user()[1]:
            assert result[folder] == "list refused: PermissionError", result
            for p in paths:
                assert result[p] == "connect refused: PermissionError", (p, result[p])
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CHECK_CELL)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_nbval_runs_its_kernels_on_private_ipc_sockets(tmp_path):
    """make test's nbval options (the Makefile's NBVAL) start a private ipc kernel."""
    nb = _notebook()
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                  text="private ipc kernel\n")]
    nb.cells[0].execution_count = 1
    nbformat.write(nb, tmp_path / "check.ipynb")
    makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    assert "-p tools.private_kernels" in makefile.split("\nNBVAL :=", 1)[1].split("\n", 1)[0]
    r = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
                        "-p", "tools.private_kernels", "-q", "-p", "no:cacheprovider",
                        str(tmp_path / "check.ipynb")], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    assert "running over TCP" not in r.stdout + r.stderr


def test_make_notebooks_runs_its_kernels_on_private_ipc_sockets(tmp_path):
    """tools/execute_notebooks.py (make notebooks) executes a chapter in a private ipc kernel."""
    md = tmp_path / "check.md"
    md.write_text("---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
                  "# A check\n\n```{code-cell} ipython3\n" + CHECK_CELL + "\n```\n")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "execute_notebooks.py"),
                        str(md)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, r.stdout + r.stderr
    out = nbformat.read(tmp_path / "check.ipynb", as_version=4)
    assert out.cells[-1].outputs[0]["text"] == "private ipc kernel\n"
    assert "running over TCP" not in r.stdout + r.stderr
