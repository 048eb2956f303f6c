"""Fresh virtual environments for the tests that install the book as a stranger would (the kit in
tests/site/test_kit.py, the wheel in tests/package/test_wheel.py), made fast and without network
surprises.

:func:`wheelhouse` downloads, once per set of requirements, every wheel an install needs into
``_build/wheelhouse/<key>/`` (``pip download``, from whatever index pip is configured with; the key
is a hash of the requirements and the Python version, so changed pins get a new folder).
:func:`pip_env` then points pip at that folder and nowhere else (``PIP_FIND_LINKS``,
``PIP_NO_INDEX``). The install command itself stays the one under test, as its README writes it:
it installs the same files, from a folder instead of the index. (Skipping pip's byte-compilation
as well was measured and gained nothing: 132 s against 137 s for the kit, within the noise.)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEELHOUSES = os.path.join(ROOT, "_build", "wheelhouse")


def wheelhouse(args: list[str], label: str, key_text: str, timeout: int = 900) -> str:
    """The folder holding every wheel that ``pip install <args>`` needs, filled once.

    ``args`` are ``pip download`` arguments (``-r FILE``, a wheel's path); ``key_text`` what
    decides its content (the requirements' text, the declared dependencies). A folder is used
    only when its download finished (a ``.complete`` file); a failed download raises with pip's
    output.
    """
    key = hashlib.sha256(f"{sys.version_info[:2]}\n{key_text}".encode()).hexdigest()[:16]
    folder = os.path.join(WHEELHOUSES, f"{label}-{key}")
    done = os.path.join(folder, ".complete")
    if os.path.exists(done):
        return folder
    os.makedirs(folder, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", folder, *args],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"pip download {' '.join(args)} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    with open(done, "w", encoding="utf-8") as f:
        f.write(key_text)
    return folder


def requires_dist(wheel) -> str:
    """The ``Requires-Dist`` lines of a wheel's metadata (what its install pulls in)."""
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8")
    return "\n".join(line for line in text.splitlines() if line.startswith("Requires-Dist:"))


def pip_env(env: dict, folder: str) -> dict:
    """``env`` with pip installing from ``folder`` only."""
    return dict(env, PIP_FIND_LINKS=folder, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
