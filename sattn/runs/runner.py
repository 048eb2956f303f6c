"""One loop for every experiment: load what is stored, compute the rest, store each result.

:func:`run_tasks` is the loop that the d_min figures (:func:`sattn.reproduce`) and the width x
bits frontier (:func:`sattn.frontier.reproduce_width_bits`) share: under the lock of the output
folder (held by the caller), it loads each task's stored result, computes the missing ones in
this process, on joblib workers or on a Dask cluster, and writes each result to the store as it
arrives, from this process only (workers compute, never write; a killed run leaves every
finished result and nothing half-written, and the same command resumes it). The caller writes
its CSV and manifest from the payloads, in its own task order.

References
----------
:ref:`ch-computation`.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from joblib import Parallel, delayed
from tqdm.auto import tqdm

from .cluster import connect, n_workers, run_on_cluster
from .store import OutputLock, TaskStore, exit_with_parent

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "Run", "run_in_store", "run_tasks"]


@dataclass
class Run:
    """What one run of the tasks leaves: every task's payload (by task id), the ids it computed
    (in the order they arrived) and reused (in task order), its wall time and, on a cluster, the
    number of Dask workers."""

    payloads: dict
    computed: list
    reused: list
    wall: float
    cluster_workers: int | None


def _compute_in_worker(compute, task, parent: int):
    """Run on a joblib worker: compute and return; the parent (the lock holder) writes the store.

    The worker also exits as soon as ``parent`` dies (:func:`~sattn.runs.store.exit_with_parent`),
    so a killed run leaves no process computing for nobody.
    """
    exit_with_parent(parent)
    return task, compute(task)


def _task_id(task) -> str:
    return task.task_id


def _stored_as_they_arrive(results, store: TaskStore, lock: OutputLock):
    """``(task id, payload)`` pairs, each written to the store by this process (which holds
    ``lock``) as it arrives; workers never write."""
    try:
        for task, payload in results:
            store.save(task, payload, lock=lock)
            yield task.task_id, payload
    finally:
        close = getattr(results, "close", None)
        if close is not None:       # cancel what is still pending (Dask, joblib)
            close()


def run_tasks(tasks, compute, store: TaskStore, lock: OutputLock, *, desc: str, jobs: int = 1,
              progress: bool = True, scheduler=None, workers=None, cost=None) -> Run:
    """Load the stored results of ``tasks``, compute the missing ones and store each as it arrives.

    Parameters
    ----------
    tasks : list
        Tasks with a ``task_id`` and ``params()`` (what :class:`~sattn.runs.store.TaskStore`
        stores them by).
    compute : callable or None
        ``compute(task) -> payload`` (a JSON-able dict); a module-level function, so that
        workers can import it. None computes nothing: the run returns the stored results only
        (an experiment that publishes what a stopped run has).
    store, lock : TaskStore, OutputLock
        Where results go, and the lock of the output folder, held by the caller.
    desc : str
        The progress bar's label.
    jobs : int
        Local joblib workers (1: in this process).
    progress : bool
        Show a tqdm progress bar.
    scheduler : str, optional
        A Dask scheduler (``"local"`` or an address, :func:`~sattn.runs.cluster.connect`) in
        place of joblib; ``workers`` sizes a local one (default: one per core, at most one per
        task).
    cost : callable, optional
        ``cost(task)``: the missing tasks start most costly first (a better parallel schedule);
        default the given order.

    Returns
    -------
    Run
    """
    payloads = {}
    for t in tasks:
        rec = store.load(t)
        if rec is not None:
            payloads[t.task_id] = rec
    reused = [t.task_id for t in tasks if t.task_id in payloads]
    todo = [t for t in tasks if t.task_id not in payloads] if compute is not None else []
    if cost is not None:
        todo.sort(key=lambda t: -cost(t))
    t0 = time.perf_counter()
    computed = []
    cluster_workers = None
    bar = tqdm(total=len(tasks), desc=desc, unit="task", disable=not progress, dynamic_ncols=True)
    bar.update(len(reused))
    try:
        with contextlib.ExitStack() as stack:
            if not todo:
                results = ()
            elif scheduler is not None:
                # the workers compute; this process writes each result as it arrives
                client = stack.enter_context(connect(
                    scheduler, workers=None if scheduler != "local" else
                    min(workers or os.cpu_count() or 1, len(todo))))
                cluster_workers = n_workers(client)
                results = run_on_cluster(client, compute, todo, key=_task_id,
                                         parent=os.getpid() if scheduler == "local" else None)
            elif jobs == 1:
                results = ((t, compute(t)) for t in todo)
            else:
                # the workers compute; this process writes each result as it arrives
                results = Parallel(n_jobs=jobs, return_as="generator_unordered")(
                    delayed(_compute_in_worker)(compute, t, os.getpid()) for t in todo)
            results = stack.enter_context(contextlib.closing(
                _stored_as_they_arrive(results, store, lock)))
            for tid, payload in results:
                payloads[tid] = payload
                computed.append(tid)
                bar.update(1)
    finally:
        bar.close()
    return Run(payloads, computed, reused, time.perf_counter() - t0, cluster_workers)


def run_in_store(tasks, compute, out, name: str, lock: OutputLock, *, desc: str, jobs: int = 1,
                 progress: bool = True, cost=None) -> Run:
    """:func:`run_tasks` on the task store ``<out>/tasks/<name>``: the store's folder made, and the
    temporary files of an interrupted run removed (under ``lock``, the held lock of ``out``).

    For an experiment whose results are one store of tasks and a CSV assembled from them (the
    width x bits frontier, the codes); the arguments after ``lock`` are those of
    :func:`run_tasks`.
    """
    store = TaskStore(Path(out) / "tasks" / name)
    store.root.mkdir(parents=True, exist_ok=True)
    store.clean_temporaries(lock)
    return run_tasks(tasks, compute, store, lock, desc=desc, jobs=jobs, progress=progress,
                     cost=cost)
