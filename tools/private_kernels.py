"""Kernels with no TCP port for the tools that execute the chapters: ``make notebooks`` and nbval.

A kernel on ZeroMQ's default TCP transport listens on five ports of 127.0.0.1, which every user of
the machine can connect to; its messages are signed with the key of its connection file, not
encrypted, so anyone who subscribes to its iopub port reads every output of the chapter it runs.
The kernels these tools start use the ipc transport instead:

* their connection files and sockets lie in a **private folder** (mode 0700, ``sattn-kernels-*``
  in the temporary folder, removed when the process ends), which no other user can list or enter;
* the kernel is ``tools/serve_live.py --kernel`` (the kernel of ``make live``): ipykernel with its
  one other socket, the pipe that carries the output of forked subprocesses, on ipc too.

Used through :func:`kernel_manager_class` (``tools/execute_notebooks.py`` gives it to nbclient) and as
a pytest plugin, ``pytest -p tools.private_kernels``, which makes nbval start its kernels so (the
Makefile's ``NBVAL`` options). ``tests/site/test_private_kernels.py`` tries both as another user.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import uuid

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager

HERE = os.path.dirname(os.path.abspath(__file__))
SERVE_LIVE = os.path.join(HERE, "serve_live.py")


class IpcKernelSpecs(KernelSpecManager):
    """The one kernel these tools run, whatever Python kernel a notebook names: this Python's
    ipykernel, started by ``serve_live.py --kernel`` (no TCP socket)."""

    def get_kernel_spec(self, kernel_name):
        return KernelSpec(argv=[sys.executable, SERVE_LIVE, "--kernel", "-f", "{connection_file}"],
                          display_name="Python 3 (ipc)", language="python",
                          metadata={"debugger": False}, resource_dir=HERE)


def private_folder() -> str:
    """A new folder of mode 0700 for connection files and sockets, removed when this process
    ends."""
    folder = tempfile.mkdtemp(prefix="sattn-kernels-")   # mkdtemp: mode 0700, a fresh name
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _connection_file(folder: str) -> str:
    # short: a Unix socket path (the connection file's name + "-ipc-<port>") has about 107 bytes
    return os.path.join(folder, f"kernel-{uuid.uuid4().hex[:12]}.json")


def kernel_manager(folder: str, **kwargs) -> KernelManager:
    """A kernel manager whose kernel uses the ipc transport, with its connection file and
    sockets in ``folder``."""
    return kernel_manager_class(folder)(**kwargs)


def kernel_manager_class(folder: str, base=KernelManager):
    """A subclass of ``base`` (jupyter_client's ``KernelManager`` or ``AsyncKernelManager``) whose
    instances run their kernel so, in ``folder``: for a tool that makes its own managers
    (nbclient's ``kernel_manager_class``, which then also shuts each kernel down)."""

    class PrivateKernelManager(base):
        def __init__(self, **kwargs):
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("connection_file", _connection_file(folder))
            kwargs.setdefault("kernel_spec_manager", IpcKernelSpecs())
            kwargs.setdefault("kernel_name", "python3")
            super().__init__(**kwargs)

    return PrivateKernelManager


def pytest_configure(config):
    """Make nbval start every kernel through :func:`kernel_manager`, in one private folder per
    pytest process (each xdist worker has its own)."""
    import nbval.kernel

    folder = private_folder()

    def start_new_kernel(startup_timeout=60, kernel_name="python", **kwargs):
        km = kernel_manager(folder)
        km.start_kernel(**kwargs)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=startup_timeout)
        except RuntimeError:
            kc.stop_channels()
            km.shutdown_kernel()
            raise
        return km, kc

    nbval.kernel.start_new_kernel = start_new_kernel
