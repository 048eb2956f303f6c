"""The resumable store of the d_min experiments: task files, checksums, manifests.

One JSON file per finished task, written atomically (temporary file, fsync, ``os.replace``) and
carrying its own SHA-256; a rerun after any interruption (even ``kill -9``) recomputes no finished
task, and refuses to continue on a corrupted file or manifest (:ref:`ch-computation`). One run at a
time writes to an output folder: :class:`OutputLock` (an exclusive ``flock`` on
``<out>/.reproduce.lock``) refuses a second run before it touches anything.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import platform
import socket
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import joblib
import numpy as np
import scipy

from .._version import __version__
from ..experiments.engine import ENGINE_VERSION
from ..experiments.setups import Task

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["StoreError", "StoreWarning"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [
    *__flat__,
    "OutputLock", "TaskStore", "validate_output_file", "exit_with_parent", "filesystem_error",
    "read_manifest",
    "write_manifest",
    "versions", "write_csv", "command_line",
    "is_regular_file", "previous_manifest", "sha256_bytes", "sha256_file", "task_record",
]

#: Key of a manifest's own checksum: SHA-256 of the canonical JSON of every other field.
MANIFEST_DIGEST = "manifest_sha256"

#: Name of the lock file of an output folder (see :class:`OutputLock`).
LOCK_NAME = ".reproduce.lock"


class StoreError(RuntimeError):
    """A stored result or manifest is corrupted or inconsistent; nothing was overwritten."""


class StoreWarning(UserWarning):
    """A finished result listed in a manifest was missing and has been recomputed."""


#: What an errno of a filesystem fault means for the reader (the rest use the system's words).
_FS_REASONS = {
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "it is a folder, not a file",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EEXIST: "a file of that name is in the way",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "too many symbolic links",
}


def filesystem_error(exc: OSError, doing: str = "write to") -> StoreError:
    """A :class:`StoreError` for a filesystem fault (read-only folder, a file where a folder
    belongs, a folder where a file belongs, ...), naming the path and the reason.

    ``doing`` says what was attempted (``"write to"``, ``"read"``, ``"create the folder"``).
    """
    path = exc.filename2 if exc.filename2 is not None else exc.filename    # os.replace: the target
    path = "a file" if path is None else path
    reason = _FS_REASONS.get(exc.errno, exc.strerror or str(exc))
    code = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    hint = ("choose a writable --out folder, or fix its permissions"
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT)
            else "move the thing in the way, or choose another --out folder")
    return StoreError(f"cannot {doing} {path}: {reason}{f' ({code})' if code else ''}. "
                      f"The run stopped there; finished results are kept. To go on: {hint}.")


def validate_output_file(path) -> Path:
    """Check, before any work, that a result file can be written at ``path``.

    Creates the missing parent folders and writes (then removes) a probe file beside ``path``, so
    that a read-only or unwritable place fails now rather than after a long run.

    Parameters
    ----------
    path : str or os.PathLike
        The file to be written later.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    StoreError
        ``path`` is a folder, or its folder cannot be created or written to (naming the path and
        the reason).
    """
    path = Path(path)
    if path.is_dir():
        raise StoreError(f"cannot write the results to {path}: it is a folder; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path.parent)
        raise filesystem_error(exc) from exc
    return path


def is_regular_file(path: Path, what: str) -> bool:
    """Whether ``path`` exists (as a regular file); a folder or other non-file is a StoreError."""
    if not os.path.lexists(path):
        return False
    if not path.is_file():
        raise StoreError(f"{what} {path} is not a regular file (a folder or another kind of file is "
                         "in its place). Nothing was overwritten; remove it to recompute.")
    return True


def _read_bytes(path: Path, what: str) -> bytes | None:
    """The bytes of the regular file ``path``, or None if there is none; a filesystem fault is
    the clear error of :func:`filesystem_error`, naming ``what`` was being read."""
    if not is_regular_file(path, what):
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise filesystem_error(exc, f"read {what}") from None


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _loads(data: bytes):
    """``json.loads``, with nesting too deep for the parser (``[[[[...``) as a ValueError."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to be a record") from None


def task_record(payload: dict) -> bytes:
    """The bytes of a task's result file: ``payload`` with the SHA-256 of its canonical JSON
    (what :meth:`TaskStore.load` checks)."""
    rec = {"payload": payload, "sha256": sha256_bytes(_canonical(payload))}
    return json.dumps(rec, sort_keys=True).encode()


def sha256_bytes(b: bytes) -> str:
    """The SHA-256 hex digest of ``b``."""
    return hashlib.sha256(b).hexdigest()


def sha256_file(path) -> str:
    """The SHA-256 hex digest of the file at ``path``, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes):
    """Write ``data`` to ``path`` atomically: temporary file in the same folder, fsync, replace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".tmp-{path.name}-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: Seconds between two checks of a worker's watchdog (:func:`exit_with_parent`).
WATCH_INTERVAL = 0.2
_watched: set = set()
_watch_guard = threading.Lock()


def exit_with_parent(parent: int) -> None:
    """Make this worker process exit (``os._exit``) as soon as its parent ``parent`` dies.

    Called at the start of every task a worker process runs (joblib/loky, a local Dask cluster):
    the first call starts a daemon thread that checks ``os.getppid()`` every
    ``WATCH_INTERVAL`` seconds; when the parent is gone (the process is re-parented), the
    worker ends at once, without running ``atexit`` handlers or finishing its task. If the parent
    is already gone when the task starts, the worker ends here. Workers never write the store
    (the parent, which holds the output folder's :class:`OutputLock`, does), so this only stops
    orphaned computation. Pass only the PID of the process that started this worker (not for
    workers of a remote Dask cluster).
    """
    if os.getppid() != parent:
        os._exit(70)
    with _watch_guard:
        if parent in _watched:
            return
        _watched.add(parent)

    def watch():
        while os.getppid() == parent:
            time.sleep(WATCH_INTERVAL)
        os._exit(70)

    threading.Thread(target=watch, name=f"sattn-exit-with-{parent}", daemon=True).start()
    return True


class OutputLock:
    """Exclusive lock of an output folder for one run: ``flock(LOCK_EX | LOCK_NB)`` on
    ``<folder>/.reproduce.lock``.

    The lock file is created if needed and never deleted; it holds the PID, host and start time of
    the run that last held it (for the message a refused run prints). The kernel releases the lock
    when its holder exits, however it exits (``kill -9`` included), so a stale lock file never
    blocks the next run. Use as a context manager.

    Parameters
    ----------
    folder : path
        The output folder (created if missing).

    Raises
    ------
    StoreError
        On entry, if another run (another process, or another open of the same folder in this
        one) holds the lock; nothing in the folder was changed.
    """

    def __init__(self, folder):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def covers(self, path) -> bool:
        """Whether this lock is held and ``path`` lies in its folder."""
        if not self.held:
            return False
        path, folder = Path(path).resolve(), self.folder.resolve()
        return path == folder or folder in path.parents

    def acquire(self):
        if self.held:
            raise StoreError(f"{self.path} is already held by this run")
        if os.path.lexists(self.folder) and not self.folder.is_dir():
            raise StoreError(f"the output folder {self.folder} is a file, not a folder: choose "
                             "another --out (nothing was changed)")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise filesystem_error(exc, "create the output folder") from None
        if os.path.lexists(self.path) and not self.path.is_file():
            raise StoreError(f"the lock file {self.path} is not a regular file (a folder or another "
                             "kind of file is in its place); remove it and rerun (nothing was "
                             "changed)")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise filesystem_error(exc, "open the lock file") \
                from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 300, 0).decode(errors="replace").strip() or "PID unknown"
            finally:
                os.close(fd)
            raise StoreError(f"another run ({holder}) is writing to {self.folder}: it holds the lock "
                             f"{self.path}. This run changed nothing. Wait for that run to finish "
                             "(or stop it), or use another --out folder.") from None
        except BaseException:
            os.close(fd)
            raise
        started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        info = f"PID {os.getpid()} on {socket.gethostname()}, started {started}\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)
        self._fd = fd
        return self

    def release(self):
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


class TaskStore:
    """One JSON file per finished task, ``<root>/<task_id>.json``, each with its own SHA-256.

    A file appears only when its task is complete (atomic rename), so an interrupted run leaves
    finished tasks intact and unfinished ones absent. Leftover temporary files of a killed
    writer are not results and are removed.
    """

    def __init__(self, root):
        self.root = Path(root)

    def path(self, task: Task) -> Path:
        return self.root / f"{task.task_id}.json"

    def clean_temporaries(self, lock: OutputLock) -> int:
        """Remove the temporary files a killed writer left; return how many.

        Only the run holding ``lock`` (an :class:`OutputLock` of a folder containing the store) may
        do this: a temporary file of a running writer is not a leftover.

        Raises
        ------
        StoreError
            If ``lock`` is not held or does not cover the store.
        """
        if not (isinstance(lock, OutputLock) and lock.covers(self.root)):
            raise StoreError(f"clean_temporaries of {self.root} needs the output folder's lock "
                             "(OutputLock) held by this run")
        n = 0
        if self.root.is_dir():
            for p in self.root.glob(".tmp-*"):
                p.unlink()
                n += 1
        return n

    def load(self, task: Task):
        """The stored record of ``task``, or None if it has not finished.

        Raises
        ------
        StoreError
            If the file is unreadable, fails its checksum, or was computed with other parameters.
        """
        p = self.path(task)
        data = _read_bytes(p, "the result file")
        if data is None:
            return None
        try:
            rec = _loads(data)
            payload, digest = rec["payload"], rec["sha256"]
            if not isinstance(payload, dict):
                raise TypeError(f"payload must be a JSON object, got {type(payload).__name__}")
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"corrupted result file {p}: not a valid task record ({exc}). "
                             "Nothing was overwritten; delete this file to recompute the task, "
                             "or restore it from git.") from exc
        if sha256_bytes(_canonical(payload)) != digest:
            raise StoreError(f"corrupted result file {p}: its SHA-256 does not match its content. "
                             "Nothing was overwritten; delete this file to recompute the task, "
                             "or restore it from git.")
        if payload.get("params") != task.params():
            raise StoreError(f"result file {p} was computed with different parameters "
                             f"({payload.get('params')}) than requested ({task.params()}). "
                             "Use another --out folder, or delete the file to recompute.")
        return payload

    def save(self, task: Task, payload: dict, *, lock: OutputLock | None = None):
        """Write the record of ``task`` atomically.

        ``lock``: the output folder's :class:`OutputLock`; when given it must be held by this
        process and cover the store (:func:`~sattn.experiments.protocol.reproduce` passes it, so
        only the process holding the lock writes results).
        """
        if lock is not None and not (isinstance(lock, OutputLock) and lock.covers(self.root)):
            raise StoreError(f"writing a result to {self.root} needs the output folder's lock "
                             "(OutputLock) held by this process")
        _atomic_write(self.path(task), task_record(payload))


def write_csv(path, columns, rows) -> bytes:
    """Write a CSV file atomically (a header of ``columns``, then ``rows``); return its bytes."""
    lines = [",".join(columns)] + [",".join(str(v) for v in r) for r in rows]
    data = ("\n".join(lines) + "\n").encode()
    _atomic_write(path, data)
    return data


def command_line(argv: list[str] | None = None) -> str:
    """The command that a manifest records, as a reader would retype it, with no machine path.

    ``python -m sattn`` puts the path of ``sattn/__main__.py`` in ``sys.argv[0]``; the manifest
    records ``python -m sattn`` and the arguments instead, so shipped manifests say nothing about the
    folder they were made in.
    """
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    head = Path(argv[0])
    if head.name == "__main__.py" and head.parent.name == "sattn":
        return " ".join(["python -m sattn", *argv[1:]])
    return " ".join([head.name, *argv[1:]])


def versions() -> dict:
    """Versions of Python, the numerical libraries, sattn and the engine (for manifests)."""
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "joblib": joblib.__version__, "sattn": __version__,
            "engine": ENGINE_VERSION, "platform": platform.platform()}


def write_manifest(path, manifest: dict) -> dict:
    """Write ``manifest`` atomically with its own checksum (``manifest_sha256``); return it."""
    body = {k: v for k, v in manifest.items() if k != MANIFEST_DIGEST}
    body[MANIFEST_DIGEST] = sha256_bytes(_canonical({k: v for k, v in body.items()
                                                      if k != MANIFEST_DIGEST}))
    _atomic_write(Path(path), json.dumps(body, indent=1, sort_keys=True).encode())
    return body


def read_manifest(path, *, remedy: str) -> dict:
    """Read a manifest written by :func:`write_manifest`, checking its own checksum.

    Parameters
    ----------
    path : path
        The manifest file.
    remedy : str
        What the reader should do if the manifest is corrupted (added to the error message).

    Raises
    ------
    StoreError
        If the file is not UTF-8 JSON, not an object, has no checksum of its own, or its content
        does not match that checksum (a byte flip that still parses as JSON is caught here).
    """
    path = Path(path)
    data = _read_bytes(path, "the manifest")
    if data is None:
        raise StoreError(f"the manifest {path} is missing; {remedy}")
    try:
        man = _loads(data)
        if not isinstance(man, dict):
            raise TypeError(f"a manifest is a JSON object, got {type(man).__name__}")
        digest = man.get(MANIFEST_DIGEST)
        if not isinstance(digest, str):
            raise KeyError(f"{MANIFEST_DIGEST} (the manifest's own checksum) is missing")
    except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
        raise StoreError(f"corrupted manifest {path} ({exc}). Nothing was overwritten; {remedy}") \
            from exc
    if sha256_bytes(_canonical({k: v for k, v in man.items() if k != MANIFEST_DIGEST})) != digest:
        raise StoreError(f"corrupted manifest {path}: its content does not match its own SHA-256 "
                         f"({MANIFEST_DIGEST}). Nothing was overwritten; {remedy}")
    return man


def previous_manifest(out: Path, figure: str, store: TaskStore):
    """Refuse to resume over a corrupted manifest or over result files that changed; return the
    previous manifest (empty if none) and the names of listed results that are missing (they
    are recomputed, with a :class:`StoreWarning`, and recorded as ``recovered``)."""
    mpath = out / f"{figure}_manifest.json"
    if not is_regular_file(mpath, "the manifest"):
        return {}, []
    remedy = (f"the task results in {store.root} are intact. Delete the manifest to rebuild it.")
    man = read_manifest(mpath, remedy=remedy)
    try:
        files = man["checksums"]["tasks"]
        csv_sum = man["checksums"]["csv"]
        # fields that are used below or carried into the next manifest must have their types
        if not (isinstance(files, dict) and isinstance(csv_sum, str)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
            raise TypeError("checksums must map file names to SHA-256 strings")
        for key in ("runs", "wall_seconds_all_runs", "wall_seconds_this_run"):
            if key in man and (isinstance(man[key], bool)
                               or not isinstance(man[key], (int, float))):
                raise TypeError(f"{key} must be a number, got {man[key]!r}")
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"corrupted manifest {mpath} ({exc}). Nothing was overwritten; {remedy}") \
            from exc
    missing = []
    for name, digest in files.items():
        p = store.root / name
        if not is_regular_file(p, "the result file"):
            missing.append(name)
            continue
        if sha256_file(p) != digest:
            raise StoreError(f"result file {p} does not match the checksum in {mpath}. "
                             "Nothing was overwritten; restore the file or delete it to recompute.")
    cpath = out / f"{figure}.csv"
    if is_regular_file(cpath, "the CSV") and sha256_file(cpath) != csv_sum:
        raise StoreError(f"{cpath} does not match the checksum in {mpath} (edited or corrupted). "
                         "Nothing was overwritten; delete the CSV to regenerate it from the task "
                         "results.")
    if missing:
        warnings.warn(f"{len(missing)} finished result(s) listed in {mpath} are missing and will be "
                      f"recomputed (deterministic: same seeds, same results): {', '.join(missing)}",
                      StoreWarning, stacklevel=3)
    return man, missing
