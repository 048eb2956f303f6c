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
from .store import OutputLock, StoreError, TaskStore, exit_with_parent

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "Run", "run_by_parts", "run_in_store", "run_tasks"]


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


def run_by_parts(tasks, next_parts, compute_part, assemble, out, name: str, lock: OutputLock, *,
                 desc: str, jobs: int = 1, progress: bool = True, cost=None) -> Run:
    """:func:`run_in_store` for tasks made of parts decided one round at a time: each finished
    part is stored at once, so an interrupted run loses at most the parts in progress.

    A task whose next parts depend on the results of its earlier ones (an acceptance curve: its
    initial widths, then each extension width chosen from the counts so far) is run as rounds:
    every unfinished task names the parts it needs next, all of them are computed together (on
    ``jobs`` joblib workers; the parts of one task in parallel too) and stored as they arrive in
    ``<out>/tasks/<name>_parts/<task id>/``, until no task needs another part. A finished task's
    payload is then assembled from its parts and stored in ``<out>/tasks/<name>/``, like any
    task of :func:`run_in_store`, and its part files are removed (they hold nothing the task's
    file does not). A rerun loads what is stored, finished tasks and parts alike, and goes on.

    Parameters
    ----------
    tasks : list
        As in :func:`run_tasks`.
    next_parts : callable
        ``next_parts(task, done) -> list``: the parts ``task`` needs next, given ``done``, the
        payloads of its finished parts in order of completion (an empty list: the task is
        complete). Parts have a ``task_id`` and ``params()``, like tasks; it must be a function
        of ``done``'s results only, so that a resumed run asks for the same parts. A part may
        also have ``stored_as()``: the parts an earlier run, which split the work otherwise, may
        have stored in its place; the first of them that is stored is loaded instead (its
        payload goes to ``done``, so the next parts follow from what it covers).
    compute_part : callable
        ``compute_part(part) -> payload``; a module-level function (workers import it).
    assemble : callable
        ``assemble(task, done) -> payload``: the finished task's payload from its parts'.
    out, name, lock, desc, jobs, progress
        As in :func:`run_in_store`.
    cost : callable, optional
        ``cost(part)``: within a round, the costliest parts start first.

    Returns
    -------
    Run
        Of the tasks (``computed``: the tasks finished by this run, some of whose parts may come
        from an earlier one; ``wall``: this run's time).
    """
    store = TaskStore(Path(out) / "tasks" / name)
    store.root.mkdir(parents=True, exist_ok=True)
    store.clean_temporaries(lock)
    parts_root = Path(out) / "tasks" / f"{name}_parts"

    def part_store(task) -> TaskStore:
        return TaskStore(parts_root / task.task_id)

    t0 = time.perf_counter()
    payloads, reused, computed = {}, [], []
    done: dict = {}
    for t in tasks:
        rec = store.load(t)
        if rec is not None:
            payloads[t.task_id] = rec
            reused.append(t.task_id)
            _remove_parts(part_store(t), lock)      # left by a run killed before it removed them
        else:
            ps = part_store(t)
            if ps.root.is_dir():
                ps.clean_temporaries(lock)
            done[t.task_id] = []
    rounds = 0
    while True:
        wanted = []                                 # (task, part) not yet stored
        for t in tasks:
            if t.task_id not in done:
                continue
            while True:                             # load stored parts round by round
                nxt = next_parts(t, done[t.task_id])
                if not nxt:
                    break
                stored = [_load_part(part_store(t), p) for p in nxt]
                if any(rec is None for rec in stored):
                    done[t.task_id] += [rec for rec in stored if rec is not None]
                    wanted += [(t, p) for p, rec in zip(nxt, stored) if rec is None]
                    break
                done[t.task_id] += stored
        if not wanted:
            break
        rounds += 1
        by_store: dict = {}
        for t, p in wanted:
            by_store.setdefault(t.task_id, (t, []))[1].append(p)
        for t, _ in by_store.values():
            part_store(t).root.mkdir(parents=True, exist_ok=True)
        owner = {p.task_id: t for t, p in wanted}
        run = run_tasks([p for _, p in wanted], compute_part, _PartStores(owner, part_store),
                        lock, desc=f"{desc}, round {rounds}", jobs=jobs, progress=progress,
                        cost=cost)
        for pid in run.computed:
            done[owner[pid].task_id].append(run.payloads[pid])
    for t in tasks:
        if t.task_id in done:
            payload = assemble(t, done[t.task_id])
            store.save(t, payload, lock=lock)
            payloads[t.task_id] = payload
            computed.append(t.task_id)
            _remove_parts(part_store(t), lock)
    with contextlib.suppress(OSError):
        parts_root.rmdir()                          # only when empty
    return Run(payloads, computed, reused, time.perf_counter() - t0, None)


def _load_part(ps: TaskStore, part):
    """The stored record of ``part``, else of the first of ``part.stored_as()`` that is stored;
    None when none is."""
    rec = ps.load(part)
    for alt in (part.stored_as() if rec is None and hasattr(part, "stored_as") else ()):
        rec = ps.load(alt)
        if rec is not None:
            break
    return rec


class _PartStores:
    """The stores of several tasks' parts seen as one (what :func:`run_tasks` saves into):
    each part goes to its own task's folder."""

    def __init__(self, owner: dict, part_store):
        self._owner, self._part_store = owner, part_store

    def load(self, part):
        return self._part_store(self._owner[part.task_id]).load(part)

    def save(self, part, payload, *, lock=None):
        self._part_store(self._owner[part.task_id]).save(part, payload, lock=lock)


def _remove_parts(ps: TaskStore, lock: OutputLock) -> None:
    """Remove the part files of a stored task, and their folder (under ``lock``)."""
    if not ps.root.is_dir():
        return
    if not lock.covers(ps.root):
        raise StoreError(f"removing {ps.root} needs the output folder's lock held by this run")
    for p in ps.root.iterdir():
        if p.is_file() and (p.suffix == ".json" or p.name.startswith(".tmp-")):
            p.unlink()
    with contextlib.suppress(OSError):
        ps.root.rmdir()
