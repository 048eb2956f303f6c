"""A killed run leaves no worker writing: ``kill -9`` of ``python -m sattn reproduce`` (issue 21).

Real processes only: the command line in a subprocess with ``--jobs 2`` (joblib/loky workers) or
``--scheduler local`` (a real ``distributed.LocalCluster``), SIGKILL of that one process (by its
PID) while tasks are running, then

- every worker process it had started is gone within :data:`EXIT_WITHIN` seconds (each one
  watches its parent, :func:`sattn.runs.store.exit_with_parent`);
- no file under ``--out`` changes (name, size, mtime, SHA-256) between the kill and the moment
  the last of those workers is gone (workers only compute; the process holding the lock writes
  the results): once no process of the run is left, nothing can write any more;
- the same command resumes the run and writes the same CSV as an uninterrupted run.

The tasks (one setup at L = 512 ... 1024) take about 1.5 to 5 s each, so several are in flight
when the parent dies: a worker that wrote its own result would be caught here. No timing is
assumed: the run is frozen (SIGSTOP) as soon as its first result appears, its processes are listed
and frozen too while nothing can start a new one, the run's own process is killed and the output
snapshotted, and only then do the workers continue, to find their parent gone.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from sattn.experiments.protocol import reproduce
from sattn.experiments.setups import make_tasks
from sattn.runs.store import StoreError, TaskStore

ROOT = Path(__file__).resolve().parents[3]
SETUPS, LENGTHS = ["k1-g1-e3-0.5"], [512, 640, 768, 896, 1024]
RUN = dict(profile="quick", setups=SETUPS, lengths=LENGTHS)
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
#: Seconds within which every worker of the killed run must have exited.
EXIT_WITHIN = 10


def _cli(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sattn", "reproduce", "fig3", "--profile", "quick",
            "--setups", *SETUPS, "--lengths", *map(str, LENGTHS), "--no-progress",
            "--out", str(out), *extra]


def _snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (the lock file and temporaries too): size, mtime, SHA-256."""
    snap = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            snap[p.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns,
                                                      hashlib.sha256(p.read_bytes()).hexdigest())
    return snap


def _descendants(pid: int, known=()) -> list[psutil.Process]:
    """Every living descendant of ``pid``, and of each process in ``known``, by PID."""
    found = {p.pid: p for p in known if p.is_running()}
    for root in [psutil.Process(pid), *found.values()]:
        try:
            found.update((c.pid, c) for c in root.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    return list(found.values())


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    man = reproduce("fig3", jobs=2, out=out, progress=False, **RUN)
    assert len(man["computed"]) == len(LENGTHS)
    return (out / "fig3.csv").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("how", [("--jobs", "2"), ("--scheduler", "local", "--workers", "2")],
                         ids=["jobs2", "scheduler-local"])
def test_no_worker_writes_after_its_run_is_killed(how, reference, tmp_path):
    out = tmp_path / "run"
    tdir = out / "tasks" / "fig3"
    proc = subprocess.Popen(_cli(out, *how), cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    workers = []
    try:
        deadline = time.time() + 180
        while time.time() < deadline and proc.poll() is None:
            if tdir.is_dir() and any(tdir.glob("*.json")):
                break
            time.sleep(0.01)                       # polling the condition: the first result
        os.kill(proc.pid, signal.SIGSTOP)          # frozen: it can start no process, write nothing
        assert proc.poll() is None, "the run ended before it could be killed"
        assert any(tdir.glob("*.json")), "no task finished within 180 s"
        workers = _descendants(proc.pid)
        assert workers, "the run started no worker process"
        for p in workers:                          # frozen too, until the snapshot is taken
            p.send_signal(signal.SIGSTOP)
        workers = _descendants(proc.pid, workers)  # (none can have appeared: all are frozen)
        os.kill(proc.pid, signal.SIGKILL)          # the run's own process, by its PID
        proc.wait()
        before = _snapshot(out)
        finished = sorted(n for n in before if n.startswith("tasks/") and n.endswith(".json"))
        assert 1 <= len(finished) < len(LENGTHS), finished
        for p in workers:
            p.send_signal(signal.SIGCONT)
        _, alive = psutil.wait_procs(workers, timeout=EXIT_WITHIN)
        assert not alive, (f"{len(alive)} worker process(es) of the killed run still alive after "
                           f"{EXIT_WITHIN} s: {[p.pid for p in alive]}")
        assert _snapshot(out) == before, "a file under --out changed after the run was killed"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in workers:                             # only if the test failed: by PID
            if p.is_running():
                p.kill()
    # the same command resumes: reuses every finished task, computes the rest, same CSV
    rerun = subprocess.run(_cli(out, *how), cwd=ROOT, env=ENV, capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "fig3.csv").read_bytes() == reference
    store = TaskStore(tdir)
    for t in make_tasks("fig3", **RUN):
        try:
            assert store.load(t) is not None, t.task_id
        except StoreError as exc:  # pragma: no cover - reported as a failure
            pytest.fail(str(exc))
    assert not list(tdir.glob(".tmp-*"))
