"""The process a run runs in: one BLAS thread per task, and the description of the machine.

Tasks are the unit of parallelism of every experiment (joblib workers, Dask workers), so each task
runs with one BLAS thread (:func:`one_blas_thread`); a manifest records where the run ran
(:func:`machine`).

References
----------
:ref:`ch-computation`.
"""

from __future__ import annotations

import contextlib
import os
import platform

from threadpoolctl import threadpool_limits

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "machine", "one_blas_thread"]


@contextlib.contextmanager
def one_blas_thread():
    """Limit BLAS to one thread while the block runs (tasks are the unit of parallelism;
    oversubscribed OpenBLAS threads spin and slow small GEMMs down by an order of magnitude)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def machine() -> dict:
    """Where a run ran: platform, processor and core count (for the manifest).

    Returns
    -------
    dict
        ``{"platform": ..., "processor": ..., "cpus": ...}``.
    """
    return {"platform": platform.platform(), "processor": platform.processor() or
            platform.machine(), "cpus": os.cpu_count()}
