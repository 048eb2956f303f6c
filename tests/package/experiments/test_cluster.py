"""The experiments on a real Dask cluster, and the lock of an output folder.

Nothing here is mocked: the clusters are ``distributed.LocalCluster``s of worker processes on
127.0.0.1, the runs are the command line in subprocesses, and the worker is killed with SIGKILL.

- ``--scheduler local`` writes the same CSV, byte for byte, as ``--jobs 1``.
- A worker process killed in the middle of a run: the run completes, nothing lost, duplicated or
  corrupted, the CSV identical (recorded for the status page as ``worker-death``).
- A worker with other library versions, and a task that kills its workers, are reported (an
  ExperimentError naming the task), not hidden.
- Two runs on one ``--out`` at once: the second is refused with the first's PID and changes
  nothing; after the first is killed with ``kill -9`` its stale lock does not block the next run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster

from reliability import record
from sattn.__main__ import main as cli_main
from sattn.runs import cluster as cluster_mod
from sattn.experiments.protocol import reproduce
from sattn.experiments.setups import ExperimentError, make_tasks
from sattn.runs.store import LOCK_NAME, OutputLock, StoreError, TaskStore

ROOT = Path(__file__).resolve().parents[3]
#: Six tasks of 0.4 to 1.5 s each on one core: long enough to kill something in the middle.
SETUPS, LENGTHS = ["k1-g1-e3-0.5", "k2-g2-e7-0.5"], [192, 256, 320]
RUN = dict(profile="quick", setups=SETUPS, lengths=LENGTHS)
N_TASKS = len(SETUPS) * len(LENGTHS)
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


def _cli(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sattn", "reproduce", "fig3", "--profile", "quick",
            "--setups", *SETUPS, "--lengths", *map(str, LENGTHS), "--no-progress",
            "--out", str(out), *extra]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The ``--jobs 1`` run: its folder and CSV bytes."""
    out = tmp_path_factory.mktemp("jobs1") / "run"
    man = reproduce("fig3", jobs=1, out=out, progress=False, **RUN)
    assert len(man["computed"]) == N_TASKS
    return out, (out / "fig3.csv").read_bytes()


def _check_store(out: Path) -> list[str]:
    """Every task file present once, readable, passing its checksum; no temporary file left."""
    tdir = out / "tasks" / "fig3"
    problems = []
    names = sorted(p.name for p in tdir.iterdir())
    expected = sorted(f"{t.task_id}.json" for t in make_tasks("fig3", **RUN))
    if names != expected:
        problems.append(f"task folder holds {names}, expected {expected}")
    store = TaskStore(tdir)
    for t in make_tasks("fig3", **RUN):
        try:
            if store.load(t) is None:
                problems.append(f"{t.task_id} missing")
        except StoreError as exc:
            problems.append(str(exc))
    return problems


@pytest.mark.slow
def test_local_cluster_writes_the_same_csv_as_jobs_1(reference, tmp_path):
    ref_out, ref_csv = reference
    man = reproduce("fig3", scheduler="local", workers=2, out=tmp_path, progress=False, **RUN)
    assert (tmp_path / "fig3.csv").read_bytes() == ref_csv
    ref_man = json.loads((ref_out / "fig3_manifest.json").read_text())
    assert man["checksums"]["csv"] == ref_man["checksums"]["csv"]
    assert len(man["computed"]) == N_TASKS and not man["reused"]
    assert (man["scheduler"], man["dask_workers"], man["jobs"]) == ("local", 2, None)
    assert not _check_store(tmp_path)
    # the task results themselves are identical (only each task's own wall time differs)
    for t in make_tasks("fig3", **RUN):
        assert TaskStore(tmp_path / "tasks" / "fig3").load(t)["result"] == \
            TaskStore(ref_out / "tasks" / "fig3").load(t)["result"]
    # a rerun finds everything done and starts no cluster
    again = reproduce("fig3", scheduler="local", workers=2, out=tmp_path, progress=False, **RUN)
    assert not again["computed"] and len(again["reused"]) == N_TASKS
    assert again["dask_workers"] is None
    assert (tmp_path / "fig3.csv").read_bytes() == ref_csv


@pytest.mark.reliability
@pytest.mark.slow
def test_a_killed_worker_loses_nothing(reference, tmp_path):
    """SIGKILL to a worker process that is running a task, once a first task has finished: Dask
    reschedules its task, the run completes, and the CSV equals the ``--jobs 1`` CSV."""
    _, ref_csv = reference
    failures, details = [], {"workers": 2, "tasks": N_TASKS}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    try:
        out = tmp_path / "run"
        proc = subprocess.Popen(_cli(out, "--scheduler", cluster.scheduler_address), cwd=ROOT,
                                env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        tdir = out / "tasks" / "fig3"
        deadline = time.time() + 90
        victim = None
        while time.time() < deadline and proc.poll() is None:
            if tdir.is_dir() and any(tdir.glob("*.json")):
                busy = {w: ts for w, ts in client.processing().items() if ts}
                if busy:
                    victim = sorted(busy)[0]
                    details["tasks on the killed worker"] = len(busy[victim])
                    details["finished before the kill"] = len(list(tdir.glob("*.json")))
                    break
            time.sleep(0.02)
        assert victim is not None, "the run finished (or never started) before a worker could be killed"
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
        if proc.returncode != 0:
            failures.append(f"the run failed after the kill: {stderr[-800:]}")
        else:
            man = json.loads((out / "fig3_manifest.json").read_text())
            if sorted(man["computed"]) != sorted(t.task_id for t in make_tasks("fig3", **RUN)):
                failures.append(f"computed {man['computed']}")
            if (out / "fig3.csv").read_bytes() != ref_csv:
                failures.append("the CSV differs from the --jobs 1 CSV")
            failures += _check_store(out)
    finally:
        client.close()
        cluster.close()
    record("worker-death", title=("A Dask worker process killed with SIGKILL while running a task "
                                  "of `python -m sattn reproduce --scheduler ADDRESS`: the run "
                                  "completes, no task lost, duplicated or corrupted, CSV "
                                  "byte-identical to --jobs 1"),
           tried=1, passed=int(not failures), unit="killed workers",
           test="tests/package/experiments/test_cluster.py::test_a_killed_worker_loses_nothing",
           details=details, failures=failures)
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_a_second_run_on_the_same_folder_is_refused_and_a_stale_lock_is_not(reference, tmp_path):
    """Run A (a process) holds the folder; run B (this process) is refused with A's PID and
    changes nothing, not even a temporary file; after ``kill -9`` of A, run C resumes A's work."""
    _, ref_csv = reference
    out = tmp_path / "run"
    tdir = out / "tasks" / "fig3"
    a = subprocess.Popen(_cli(out, "--jobs", "1"), cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 90
    while time.time() < deadline and a.poll() is None and not (tdir.is_dir() and any(tdir.glob("*.json"))):
        time.sleep(0.02)
    assert a.poll() is None, "run A finished before the second run could be started"
    # a temporary file as run A leaves one while it writes (the old runs deleted each other's)
    sentinel = tdir / ".tmp-in-progress-of-A"
    sentinel.write_bytes(b"half a task file")
    before = {p.name: p.read_bytes() for p in tdir.glob("*.json")}
    with pytest.raises(StoreError, match=rf"another run \(PID {a.pid} on .*\) is writing to .*"
                                         r"This run changed nothing"):
        reproduce("fig3", jobs=1, out=out, progress=False, **RUN)
    assert sentinel.read_bytes() == b"half a task file"
    assert all((tdir / n).read_bytes() == b for n, b in before.items())
    assert a.poll() is None, "run A finished before it could be killed"
    os.killpg(a.pid, signal.SIGKILL)
    a.wait()
    finished = {p.name: p.read_bytes() for p in tdir.glob("*.json")}
    assert f"PID {a.pid} " in (out / LOCK_NAME).read_text()       # the stale lock file is there
    man = reproduce("fig3", jobs=1, out=out, progress=False, **RUN)     # ... and blocks nothing
    assert {f"{t}.json" for t in man["reused"]} == set(finished)
    assert len(man["computed"]) + len(finished) == N_TASKS
    assert all((tdir / n).read_bytes() == b for n, b in finished.items())
    assert not sentinel.exists()      # under the lock, leftovers of the killed run are cleaned
    assert (out / "fig3.csv").read_bytes() == ref_csv
    assert not _check_store(out)
    assert f"PID {os.getpid()} " in (out / LOCK_NAME).read_text()


def test_lock_within_one_process_and_clean_temporaries_needs_it(tmp_path):
    with OutputLock(tmp_path) as lock:
        with pytest.raises(StoreError, match="another run .*changed nothing"):
            OutputLock(tmp_path).acquire()
        (tmp_path / "tasks").mkdir()
        (tmp_path / "tasks" / ".tmp-x").write_bytes(b"")
        assert TaskStore(tmp_path / "tasks").clean_temporaries(lock) == 1
    with pytest.raises(StoreError, match="needs the output folder's lock"):
        TaskStore(tmp_path / "tasks").clean_temporaries(lock)           # released
    with OutputLock(tmp_path / "other") as other, pytest.raises(StoreError, match="lock"):
        TaskStore(tmp_path / "tasks").clean_temporaries(other)          # another folder's lock
    OutputLock(tmp_path).acquire().release()                            # free again


@pytest.mark.slow
def test_a_worker_with_other_versions_or_a_task_that_kills_workers_is_reported():
    """The cluster's failures that Dask does not absorb become ExperimentErrors naming the task: a
    worker whose numpy reports another version, and a task that kills every worker it runs on
    (here Dask gives up after the first death: allowed-failures = 0)."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    try:
        assert list(cluster_mod.run_on_cluster(client, abs, [-2], key=str)) == [(-2, 2)]
        client.run(exec, "import numpy; numpy.__version__ = '0.0.0'")    # this worker only
        with pytest.raises(ExperimentError, match=r"task -3 ran on the Dask worker tcp://127.0.0.1:\d+ "
                                                  r"with .*'numpy': '0.0.0'.*results could differ"):
            list(cluster_mod.run_on_cluster(client, abs, [-3], key=str))
        with pytest.raises(ExperimentError, match="task 7: the Dask workers running it died"):
            list(cluster_mod.run_on_cluster(client, os._exit, [7], key=str))
    finally:
        client.close()
        cluster.close()


def test_an_address_without_a_scheduler_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(cluster_mod, "CONNECT_TIMEOUT", 1)
    t0 = time.perf_counter()
    with pytest.raises(ExperimentError, match=r"no Dask scheduler answered at 'tcp://127.0.0.1:9' "
                                              r"within 1 s"):
        reproduce("fig3", scheduler="tcp://127.0.0.1:9", out=tmp_path, progress=False,
                  profile="quick", setups=SETUPS[:1], lengths=[128])
    assert time.perf_counter() - t0 < 30
    assert not (tmp_path / "tasks" / "fig3").exists() or not any((tmp_path / "tasks" / "fig3").iterdir())


@pytest.mark.parametrize("argv,msg", [
    (["fig3", "--scheduler", "local", "--jobs", "2"], "give one or the other"),
    (["fig3", "--workers", "2"], "workers applies to scheduler='local' only"),
    (["fig3", "--scheduler", "tcp://127.0.0.1:9", "--workers", "2"], "has its own workers"),
    (["fig3", "--scheduler", "local", "--workers", "0"], "workers must be a positive integer"),
    (["fig3", "--scheduler", "lcoal"], "neither 'local' nor an address"),
    (["fig5", "--scheduler", "local"], "reproduce fig5 does not use --scheduler"),
])
def test_cli_bad_cluster_options(argv, msg, capsys, tmp_path):
    assert cli_main(["reproduce", *argv, "--out", str(tmp_path)]) == 2
    assert msg in capsys.readouterr().err
    assert not list(tmp_path.iterdir())                 # refused before the folder was touched
