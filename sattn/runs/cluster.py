"""Running the experiments' tasks on a Dask cluster (``python -m sattn reproduce … --scheduler``).

``"local"`` starts a :class:`distributed.LocalCluster` of worker processes on 127.0.0.1 (one thread
each, no dashboard) and closes it afterwards; any other value is the address of a running scheduler
(``tcp://host:port``). The workers only compute: each result comes back to the client, which writes
it to the store on its own disk (:mod:`sattn.experiments.protocol`), so the workers need ``sattn``
and the same numerical libraries, but no shared filesystem. A task is a pure function of its
:class:`~sattn.experiments.setups.Task` (its seeds are derived from the task), so the number,
order and fate of the workers cannot change a result. A task whose worker dies is rescheduled by
Dask itself; one that keeps killing workers, or that the cluster loses, is reported as an
:class:`~sattn.experiments.setups.ExperimentError` (finished tasks are saved; rerun to resume).

References
----------
:ref:`exp-dask` in :ref:`ch-computation`.
"""

from __future__ import annotations

import contextlib
import os
import uuid

try:  # Dask is an optional extra of the installed package: pip install "sattn[dask]"
    from distributed import CancelledError, Client, KilledWorker, LocalCluster, as_completed, get_worker
except ImportError:  # pragma: no cover - exercised by the wheel test's environment without Dask
    _HAVE_DISTRIBUTED = False
else:
    _HAVE_DISTRIBUTED = True

from ..experiments.setups import ExperimentError
from .store import versions, exit_with_parent

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "connect", "run_on_cluster", "validate_scheduler", "n_workers"]

#: Seconds to wait for the scheduler at an address before giving up.
CONNECT_TIMEOUT = 10
#: Versions that must agree between the client and every worker (results could differ otherwise).
MUST_MATCH = ("numpy", "scipy", "sattn", "engine")


def validate_scheduler(scheduler, workers):
    """Validate ``scheduler`` (None, ``"local"`` or an address) and ``workers``.

    Raises
    ------
    ExperimentError
        A scheduler that is neither ``"local"`` nor an address ``[protocol://]host:port``; a
        ``workers`` count that is not a positive integer, or given without ``"local"``.
    """
    if scheduler is None:
        if workers is not None:
            raise ExperimentError(f"workers applies to scheduler='local' only, got workers={workers!r} "
                                  "without a scheduler")
        return
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ExperimentError(f"scheduler must be 'local' or an address tcp://host:port, got {scheduler!r}")
    if not _HAVE_DISTRIBUTED:
        raise ExperimentError(f"scheduler={scheduler!r} runs the tasks on a Dask cluster, but Dask's "
                              "'distributed' is not installed; install the extra: "
                              "pip install \"sattn[dask]\" (or run without --scheduler)")
    if scheduler != "local":
        if workers is not None:
            raise ExperimentError(f"workers applies to scheduler='local' only; the cluster at {scheduler} "
                                  f"has its own workers (got workers={workers!r})")
        if ":" not in scheduler:
            raise ExperimentError(f"scheduler {scheduler!r} is neither 'local' nor an address "
                                  "tcp://host:port")
    elif workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                  or workers < 1):
        raise ExperimentError(f"workers must be a positive integer, got {workers!r}")


@contextlib.contextmanager
def connect(scheduler: str, *, workers: int | None = None):
    """A :class:`distributed.Client` on a local cluster or at an address (a context manager).

    Parameters
    ----------
    scheduler : str
        ``"local"``: start ``LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
        host="127.0.0.1", dashboard_address=None)`` and close it on exit. Otherwise the address of
        a running scheduler, e.g. ``tcp://10.0.0.5:8786``.
    workers : int, optional
        Worker processes of the local cluster (default: the number of CPU cores).

    Raises
    ------
    ExperimentError
        No scheduler answered at the address within ``CONNECT_TIMEOUT`` seconds (a module constant).
    """
    validate_scheduler(scheduler, workers)
    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, host="127.0.0.1", dashboard_address=None)
        try:
            with Client(cluster, set_as_default=False) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise ExperimentError(f"no Dask scheduler answered at {scheduler!r} within {CONNECT_TIMEOUT} s "
                              f"({type(exc).__name__}: {exc}). Check the address (tcp://host:port, "
                              "as printed by `dask scheduler`), or use --scheduler local.") from exc
    with client:
        yield client


def n_workers(client) -> int:
    """The number of workers connected to the client's scheduler now."""
    return len(client.scheduler_info().get("workers", {}))


def _call(fn, item, parent=None):
    """Run on a worker: the result, the versions that must match, and where it ran. A worker
    process whose parent is ``parent`` (a local cluster's) exits when that process dies."""
    if parent is not None:
        exit_with_parent(parent)
    return fn(item), {k: versions()[k] for k in MUST_MATCH}, get_worker().address


def run_on_cluster(client, fn, items, key, *, parent=None):
    """Submit ``fn(item)`` for every item; yield ``(item, result)`` as the results arrive.

    ``key(item)`` names the item (unique among ``items``); each submission gets a fresh Dask key,
    so runs of several clients on one cluster never share or cancel each other's tasks. On exit
    (also by an exception in the caller's loop) the outstanding tasks are cancelled. ``parent``
    (the client's PID): a worker process that is this process's child (``scheduler="local"``)
    exits as soon as it dies (:func:`~sattn.runs.store.exit_with_parent`); workers of a
    remote cluster are not affected. The workers never write files: the caller writes the results.

    Raises
    ------
    ExperimentError
        A task killed its workers too often (Dask's ``KilledWorker``), was cancelled by the cluster,
        could not import ``sattn`` on a worker, or ran with other library versions than the client.
        Exceptions raised by ``fn`` itself are re-raised unchanged.
    """
    here = {k: versions()[k] for k in MUST_MATCH}
    token = uuid.uuid4().hex[:12]
    pending = {}
    for item in items:
        fut = client.submit(_call, fn, item, parent, key=f"sattn-{key(item)}-{token}", pure=False)
        pending[fut.key] = (fut, item)
    try:
        for fut in as_completed([f for f, _ in pending.values()], loop=client.loop):
            _, item = pending.pop(fut.key)
            name = key(item)
            try:
                result, theirs, where = fut.result()
            except KilledWorker as exc:
                raise ExperimentError(
                    f"task {name}: the Dask workers running it died repeatedly ({exc}). Finished "
                    "tasks are saved; rerun the same command to resume.") from exc
            except CancelledError as exc:
                raise ExperimentError(
                    f"task {name} was cancelled by the Dask cluster (scheduler restarted or "
                    "connection lost). Finished tasks are saved; rerun the same command to "
                    "resume.") from exc
            except ImportError as exc:
                raise ExperimentError(
                    f"task {name}: a Dask worker could not import {exc.name or 'a module'} ({exc}); "
                    "install the same sattn and libraries on every worker (pip install .)") from exc
            fut.release()
            if theirs != here:
                raise ExperimentError(
                    f"task {name} ran on the Dask worker {where} with {theirs}, but this client "
                    f"has {here}; results could differ. Install the same versions on every worker. "
                    "Finished tasks are saved; rerun to resume.")
            yield item, result
    finally:
        if pending:
            client.cancel([f for f, _ in pending.values()])


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)
