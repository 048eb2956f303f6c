"""The d_min protocol of Likhosherstov et al. (2021), Section 4: Figures 3, 4 and 5.

Protocol (the paper's, :prf:ref:`exp-alg-dmin` in :ref:`ch-experiments`): for a setup
``(k, gamma, eps1, eps2)`` and a length ``L``, sample **one** target ``A`` with the paper's
two-pass sampler; scan an ascending uniform grid of widths ``d``; at each ``d`` make up to
``ceil(Q L)`` Stiefel draws of Algorithm 1; the first ``d`` at which a draw meets criteria (6)-(7)
is the empirical ``d_min``.

This module orchestrates; it holds no numerics of its own. The setups, profiles and tasks are in
:mod:`sattn.experiments.setups`, the draws are decided by the fast engine
(:class:`~sattn.experiments.engine.FastEngine`, tested against
:mod:`sattn.experiments.reference`), finished tasks go to the resumable store
(:mod:`sattn.runs.store`). :func:`reproduce` holds the output folder's lock for the whole
run, runs the missing tasks in parallel with joblib (``jobs``) or on a Dask cluster
(``scheduler``, :mod:`sattn.runs.cluster`), shows tqdm progress, and writes
``<figure>.csv`` plus ``<figure>_manifest.json`` (parameters, grids, seeds, versions, wall time,
checksums).

References
----------
Section 4 and Figures 3-5 of Likhosherstov, Choromanski & Weller (2021); :ref:`ch-experiments`.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import time
from pathlib import Path

import numpy as np

from ..errors import SizeTooLargeError
from .._validate import as_vector, check_bool, check_int
from ..patterns.construction import ConstructionFailed, approximate, theorem1_bound
from ..patterns.sparse import sample_sparse
from ..runs.cluster import validate_scheduler
from ..runs.host import machine, one_blas_thread
from ..runs.runner import Run, run_tasks
from .engine import FastEngine
from .setups import (
    FIGURES,
    ROOT_SEED,
    SETUPS,
    ExperimentError,
    Profile,
    Task,
    validate_grid,
    validate_lengths,
    get_profile,
    grid_values,
    make_tasks,
)
from ..runs.store import (
    command_line,
    OutputLock,
    StoreError,
    TaskStore,
    previous_manifest,
    is_regular_file,
    sha256_bytes,
    sha256_file,
    versions,
    write_csv,
    filesystem_error,
    read_manifest,
    write_manifest,
)
from .target import draw_generator

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["fit_dmin_log", "load_figure", "reproduce", "run_task"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "dmin_search"]


# ----------------------------------------------------------------------------- one task

def dmin_search(engine: FastEngine, grid, n_draws, root_seed, key, *, widths=None, coarse=1):
    """Scan the ascending grid; return ``(d_min or None, list of per-level records)``.

    ``widths`` (an ascending list) replaces the uniform ``grid`` when given (the decades
    experiment's ladder). With ``coarse = c > 1`` the scan first strides over every ``c``-th
    width while each of them is *cold* (every draw rejected in stage 1, from its partial numbers
    alone: far below d_min), then scans every width upwards from the one after the last cold
    stride, as the plain scan would; a success during the strides is treated like a warm width.
    Only widths below a cold width are skipped; the levels visited are decided exactly as in the
    plain scan (the engine keeps no memory between draws, so the draws made at a width depend
    only on their seed keys).
    """
    ws = [d for d in (grid_values(grid) if widths is None else widths) if d <= engine.L]
    coarse = check_int("coarse", coarse, low=1)
    levels, seen = [], {}

    def visit(d):
        if d not in seen:
            r = engine.level(d, n_draws, root_seed, key)
            seen[d] = r
            levels.append([r.d, r.draws, int(r.ok), r.stage1_rejects, r.screen_rejects,
                           r.confirmations])
        return seen[d]

    start = 0
    if coarse > 1:
        for j in range(0, len(ws), coarse):
            r = visit(ws[j])
            if r.ok or r.stage1_rejects < r.draws:      # warm: scan every width from here
                break
            start = j + 1
    for d in ws[start:]:
        if visit(d).ok:
            return d, levels
    return None, levels


def run_task(task: Task) -> dict:
    """Run one task with the fast engine and return its result record (JSON-serialisable)."""
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task (from make_tasks), got {type(task).__name__}")
    t0 = time.perf_counter()
    with one_blas_thread():
        s = task.setup
        A = task.sample_target()
        eng = FastEngine(A, s.eps1, s.eps2)
        nnz = int(A.nnz)
        dmin, levels = dmin_search(eng, task.grid, task.n_draws, task.root_seed, task.draw_key(),
                                   widths=task.widths() if task.ladder else None,
                                   coarse=task.coarse)
    if task.ladder and dmin == task.widths()[0]:
        raise ExperimentError(
            f"{task.task_id}: the first width of the ladder, d = {dmin}, already succeeded, so "
            f"d_min may lie below the grid; lower the profile's start for {s.name} (it must "
            "start below d_min)")
    return {
        "params": task.params(),
        "result": {
            "d_min": dmin,
            "levels": levels,
            "total_draws": int(sum(lv[1] for lv in levels)),
            "bound": int(theorem1_bound(task.L, s.k, s.gamma, s.eps1, s.eps2)),
            "nnz": nnz,
        },
        "seconds": round(time.perf_counter() - t0, 3),
    }


# ----------------------------------------------------------------------------- outputs
FIG34_COLUMNS = ["figure", "setup", "k", "gamma", "eps1", "eps2", "L", "Q", "n_draws",
                 "grid_start", "grid_stop", "grid_step", "d_min", "draws_at_d_min",
                 "levels_tried", "total_draws", "bound"]


def _csv_rows(tasks, payloads):
    rows = []
    for t in tasks:
        res = payloads[t.task_id]["result"]
        dmin = res["d_min"]
        rows.append([t.figure, t.setup.name, t.setup.k, f"{t.setup.gamma:g}", f"{t.setup.eps1:g}",
                     f"{t.setup.eps2:g}", t.L, f"{t.Q:g}", t.n_draws, *t.grid,
                     "" if dmin is None else dmin,
                     res["levels"][-1][1] if res["levels"] else 0,
                     len(res["levels"]), res["total_draws"], res["bound"]])
    return rows


DECADES_COLUMNS = ["figure", "setup", "k", "gamma", "eps1", "eps2", "L", "target", "budget",
                   "ladder", "coarse", "grid_start", "d_min", "d_below", "draws_at_d_min", "levels_tried",
                   "total_draws", "bound"]


def _decades_rows(tasks, payloads):
    rows = []
    for t in tasks:
        res = payloads[t.task_id]["result"]
        dmin, lv = res["d_min"], res["levels"]
        ws = t.widths()
        below = ws[ws.index(dmin) - 1] if dmin is not None and ws.index(dmin) else ""
        rows.append([t.figure, t.setup.name, t.setup.k, f"{t.setup.gamma:g}", f"{t.setup.eps1:g}",
                     f"{t.setup.eps2:g}", t.L, t.target, t.budget, f"{t.ladder:g}", t.coarse,
                     t.grid[0], "" if dmin is None else dmin, below,
                     lv[-1][1] if lv else 0, len(lv), res["total_draws"], res["bound"]])
    return rows


#: The most worker processes of one run (``jobs``, or ``workers`` of a local Dask cluster).
MAX_WORKERS = 256


def reproduce(figure, *, profile="quick", setups=None, lengths=None, jobs=1, out=None,
              progress=True, scheduler=None, workers=None, budget=None) -> dict:
    """Compute (or resume) the data of one figure and write ``<out>/<figure>.csv`` + manifest.

    Parameters
    ----------
    figure : {"fig3", "fig4", "fig5", "decades"}
    profile : {"quick", "paper", "paper-q1"}
        ``"decades"`` (three decades of L, :ref:`ch-log-law`) exists in "paper" and "quick".
    budget : int, optional
        Decades only: draws per width (default: the profile's, 16 for "paper").
    setups, lengths : optional restrictions (see :func:`~sattn.experiments.setups.make_tasks`). Figure 5 has one fixed
        setting and ``L`` (the profile's), so passing either with ``"fig5"`` is an error.
    jobs : int, default 1
        Parallel workers (joblib; ``-1`` for all cores), at most 256 (``MAX_WORKERS``). Results do
        not depend on it.
    scheduler : str, optional
        Run the tasks on a Dask cluster instead of joblib: ``"local"`` starts a
        ``distributed.LocalCluster`` of worker processes on 127.0.0.1 (no dashboard) for this run;
        any other value is a scheduler address such as ``"tcp://10.0.0.5:8786"``. The results come
        back to this process, which writes the store and manifest under ``out``. Not with
        ``jobs`` other than 1, nor with ``"fig5"``. Results do not depend on it.
    workers : int, optional
        Worker processes of ``scheduler="local"`` (default: the number of CPU cores, at most one
        per task), at most 256.
    out : path, optional
        Output folder; default the profile's (``data`` for "paper", ``data/q1`` for "paper-q1",
        ``data/quick`` for "quick").
    progress : bool, default True
        Show a tqdm progress bar.

    Returns
    -------
    dict
        The manifest that was written (with ``computed`` and ``reused`` task ids).

    Raises
    ------
    ExperimentError
        Bad request (figure, setups, lengths, jobs, scheduler, workers; setups, lengths or a
        scheduler given for fig5); no scheduler at the address; a task lost by the cluster.
    StoreError
        A stored result or the manifest is corrupted, or another run holds the lock of ``out``;
        nothing is overwritten. Also a filesystem fault (a read-only or unwritable ``out``, a
        file where a folder belongs or a folder where a file belongs), naming the path.
    SizeTooLargeError
        ``jobs`` or ``workers`` above 256.
    """
    prof = get_profile(profile)
    if figure not in FIGURES:
        raise ExperimentError(f"unknown figure {figure!r}; valid: {', '.join(FIGURES)}")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (str or os.PathLike), got {type(out).__name__}")
    check_bool('progress', progress)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0 or jobs < -1:
        raise ExperimentError(f"jobs must be a positive integer or -1, got {jobs!r}")
    if jobs > MAX_WORKERS:
        raise SizeTooLargeError(f"jobs = {jobs} is too large: at most {MAX_WORKERS} is allowed "
                                "(each job is a worker process; -1 uses every core)")
    validate_scheduler(scheduler, workers)
    if workers is not None and workers > MAX_WORKERS:
        raise SizeTooLargeError(f"workers = {workers} is too large: at most {MAX_WORKERS} is "
                                "allowed (each worker is a process of the local cluster)")
    if scheduler is not None and jobs != 1:
        raise ExperimentError(f"jobs={jobs!r} asks for joblib workers on this machine, but with a "
                              "scheduler the cluster's workers run the tasks (--workers N sizes "
                              "--scheduler local); give one or the other")
    out = Path(out) if out is not None else Path(prof.out)
    if figure == "fig5":
        if setups is not None or lengths is not None or scheduler is not None:
            raise ExperimentError(
                f"fig5 uses the {prof.name} profile's one setting ({prof.fig5['setup']}) and "
                f"L = {prof.fig5['L']}, computed here; --setups, --lengths and --scheduler apply "
                f"to fig3 and fig4 only, got setups={setups!r}, lengths={lengths!r}, "
                f"scheduler={scheduler!r}")
        with _filesystem_faults(), OutputLock(out):
            return _reproduce_fig5(prof, out)
    tasks = make_tasks(figure, prof, setups=setups, lengths=lengths, budget=budget)
    with _filesystem_faults(), OutputLock(out) as lock:
        return _reproduce_tasks(figure, prof, tasks, out, lock, jobs=jobs, progress=progress,
                                scheduler=scheduler, workers=workers)


@contextlib.contextmanager
def _filesystem_faults():
    """A filesystem fault on a named path (read-only folder, a folder where a file belongs, a
    full disk, ...) as a :class:`StoreError` naming the path and the reason."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise
        raise filesystem_error(exc) from exc


def _reproduce_tasks(figure, prof, tasks, out, lock, *, jobs, progress, scheduler, workers):
    """The body of :func:`reproduce` for Figures 3 and 4, under the output folder's lock: run the
    tasks (:func:`_run_tasks`), then write the CSV and the manifest (:func:`_write_outputs`)."""
    store = TaskStore(out / "tasks" / figure)
    previous, missing = previous_manifest(out, figure, store)
    store.clean_temporaries(lock)
    run = _run_tasks(figure, prof, tasks, store, lock, jobs=jobs, progress=progress,
                     scheduler=scheduler, workers=workers)
    return _write_outputs(figure, prof, tasks, out, store, run, previous, missing,
                          jobs=jobs, scheduler=scheduler)


def _run_tasks(figure, prof, tasks, store, lock, *, jobs, progress, scheduler, workers) -> Run:
    """Run the tasks through the experiments' one loop (:func:`~sattn.runs.runner.run_tasks`):
    the missing ones longest first (large L, many draws) for a better parallel schedule."""
    return run_tasks(tasks, run_task, store, lock, desc=f"{figure} ({prof.name})", jobs=jobs,
                     progress=progress, scheduler=scheduler, workers=workers,
                     cost=lambda t: t.L * (t.budget / t.L if t.budget else t.Q) * t.grid[0])


def _figure_protocol(figure, prof, tasks) -> dict:
    """The manifest's description of the figure's protocol, grids and seed keys."""
    if figure == "decades":
        return {
            "description": prof.decades["description"],
            "protocol": ("per (setup, L): independent targets A from sattn.sample_sparse; widths "
                         "on a ladder d_{j+1} = d_j + max(1, floor(ladder d_j)); at each width up "
                         "to `budget` Stiefel draws (fast engine, stops at the first success); "
                         "strides of `coarse` widths while every draw of the width is rejected "
                         "in stage 1 (cold, far below d_min), then every width upwards from the "
                         "one after the last cold stride; d_min = the first success, d_below = "
                         "the ladder's width before it (visited, failed); a success at the first "
                         "width is an error (the ladder must start below d_min)"),
            "budget": sorted({t.budget for t in tasks}),
            "targets": prof.decades["targets"],
            "ladder": prof.decades["ladder"],
            "coarse": prof.decades["coarse"],
            "grid_starts": {f"{t.setup.name}_L{t.L}": t.grid[0] for t in tasks},
            "key_scheme": ("target t of (setup, L): key = (setup_key, L, 2, t); draw i at width "
                           "d: key = (setup_key, L, 3, t, d, i)"),
        }
    return {
        "description": prof.description,
        "protocol": ("one A per (setup, L) from sattn.sample_sparse; ascending uniform d "
                     "grid; at each d up to ceil(Q L) Stiefel draws (fast engine, stops at "
                     "the first success); d_min = first d with a success (empty if none in "
                     "the grid)"),
        "grids": {t.setup.name: list(t.grid) for t in tasks},
        "Q": sorted({t.Q for t in tasks}),
        "key_scheme": ("target A: key = (setup_key, L, 0); draw i at width d: key = "
                       "(setup_key, L, 1, d, i)"),
    }


def _write_outputs(figure, prof, tasks, out, store, run, previous, missing, *, jobs, scheduler):
    """Write the figure's CSV and its manifest (with checksums of the CSV and of every task)."""
    payloads, wall = run.payloads, run.wall
    if figure == "decades":
        csv_bytes = write_csv(out / f"{figure}.csv", DECADES_COLUMNS,
                              _decades_rows(tasks, payloads))
    else:
        csv_bytes = write_csv(out / f"{figure}.csv", FIG34_COLUMNS, _csv_rows(tasks, payloads))
    what = _figure_protocol(figure, prof, tasks)
    manifest = {
        "figure": figure,
        "profile": prof.name,
        "description": what.pop("description"),
        "protocol": what.pop("protocol"),
        "setups": {t.setup.name: t.setup.params() for t in tasks},
        **{k: v for k, v in what.items() if k != "key_scheme"},
        "lengths": sorted({t.L for t in tasks}),
        "seeds": {"root_seed": ROOT_SEED,
                  "scheme": ("numpy SeedSequence(root_seed, spawn_key=key); " + what["key_scheme"]
                             + "; setup_key = first 4 bytes of "
                               "sha256('k=..;gamma=..;eps1=..;eps2=..')"),
                  "setup_keys": {t.setup.name: t.setup.key() for t in tasks}},
        "machine": machine(),
        "versions": versions(),
        "jobs": jobs if scheduler is None else None,
        "scheduler": scheduler,
        "dask_workers": run.cluster_workers,
        "wall_seconds_this_run": round(wall, 3),
        "wall_seconds_all_runs": round(wall + previous.get(
            "wall_seconds_all_runs", previous.get("wall_seconds_this_run", 0.0)), 3),
        "runs": previous.get("runs", 1 if previous else 0) + 1,
        "task_seconds_total": round(sum(payloads[t.task_id]["seconds"] for t in tasks), 3),
        "computed": sorted(run.computed),
        "reused": sorted(run.reused),
        "recovered": sorted(os.path.splitext(n)[0] for n in missing),
        "command": command_line(),
        "checksums": {
            "csv": sha256_bytes(csv_bytes),
            "tasks": {store.path(t).name: sha256_file(store.path(t)) for t in tasks},
        },
    }
    return write_manifest(out / f"{figure}_manifest.json", manifest)


# ----------------------------------------------------------------------------- Figure 5
def _check_fig5_outputs(out: Path):
    """Refuse to overwrite Figure 5 outputs whose manifest is corrupted or whose files do not
    match it (the same policy as for Figures 3 and 4); absent outputs are fine."""
    mpath = out / "fig5_manifest.json"
    if not is_regular_file(mpath, "the manifest"):
        return
    remedy = "delete it (or restore it from git) to recompute Figure 5."
    man = read_manifest(mpath, remedy=remedy)
    try:
        sums = man["checksums"]
        if not all(isinstance(sums[k], str) for k in ("csv", "npz")):
            raise TypeError("checksums of csv and npz must be SHA-256 strings")
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"corrupted manifest {mpath} ({exc}). Nothing was overwritten; {remedy}") \
            from exc
    for name, key in (("fig5.csv", "csv"), ("fig5_maps.npz", "npz")):
        p = out / name
        if is_regular_file(p, "the Figure 5 output") and sha256_file(p) != sums[key]:
            raise StoreError(f"{p} does not match the checksum in {mpath} (edited or corrupted). "
                             "Nothing was overwritten; restore it, or delete it and the manifest "
                             "to recompute Figure 5.")


def _reproduce_fig5(prof: Profile, out: Path) -> dict:
    """Attention maps of a target ``A`` and the constructed ``M`` (Algorithm 1, SVD route)."""
    cfg = prof.fig5
    s = SETUPS[cfg["setup"]]
    L = validate_lengths([cfg["L"]])[0]
    grid = validate_grid(s.name, cfg["d_grid"], (L,))
    _check_fig5_outputs(out)
    t0 = time.perf_counter()
    with one_blas_thread():
        key = (s.key(), L, 5)
        A = sample_sparse(L, s.k, s.gamma, draw_generator(ROOT_SEED, key + (0,)))
        approx, tried = None, []
        for d in grid_values(grid):
            if d > L:
                break
            try:
                approx = approximate(A, s.eps1, s.eps2, d, rng=draw_generator(ROOT_SEED, key + (d,)),
                                     max_draws=max(1, math.ceil(prof.Q * L)), method="svd")
                tried.append(d)
                break
            except ConstructionFailed:
                tried.append(d)
    if approx is None:
        raise ExperimentError(f"fig5: no width in the grid {grid} succeeded for {s.name} at L={L}")
    M = approx.M
    rep = approx.report
    npz = out / "fig5_maps.npz"
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".tmp-fig5-{os.getpid()}.npz"
    np.savez_compressed(tmp, A=A, M=M)
    os.replace(tmp, npz)
    cols = ["setup", "k", "gamma", "eps1", "eps2", "L", "d", "draws", "widths_tried",
            "ratio_spread", "log_gap7", "margin6", "margin7"]
    row = [s.name, s.k, f"{s.gamma:g}", f"{s.eps1:g}", f"{s.eps2:g}", L, approx.d, approx.draws,
           len(tried), f"{rep.ratio_spread:.6f}", f"{rep.log_gap7:.6f}", f"{rep.margin6:.6f}",
           f"{rep.margin7:.6f}"]
    csv_bytes = write_csv(out / "fig5.csv", cols, [row])
    manifest = {
        "figure": "fig5", "profile": prof.name, "setup": s.params() | {"name": s.name},
        "L": L, "d_grid": list(grid), "Q": prof.Q,
        "protocol": "Algorithm 1 with the SVD route (sattn.approximate) on the first "
                    "width of the grid that succeeds within ceil(Q L) draws",
        "seeds": {"root_seed": ROOT_SEED, "target_key": list(key + (0,)),
                  "draw_key": "(setup_key, L, 5, d)"},
        "versions": versions(), "wall_seconds_this_run": round(time.perf_counter() - t0, 3),
        "command": command_line(),
        "checksums": {"csv": sha256_bytes(csv_bytes), "npz": sha256_file(npz)},
    }
    return write_manifest(out / "fig5_manifest.json", manifest)


# ----------------------------------------------------------------------------- loading, fits
def load_figure(figure, data_dir="data", *, verify=True):
    """Read ``<data_dir>/<figure>.csv`` (and for fig5 the maps) after checking the manifest.

    Returns
    -------
    list of dict (fig3, fig4) or dict with ``A``, ``M`` and the row of ``fig5.csv`` (fig5).

    Raises
    ------
    StoreError
        Missing files or a checksum mismatch.
    """
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path (str or os.PathLike), got {type(data_dir).__name__}")
    check_bool('verify', verify)
    data_dir = Path(data_dir)
    if figure not in FIGURES:
        raise ExperimentError(f"unknown figure {figure!r}; valid: {', '.join(FIGURES)}")
    cpath, mpath = data_dir / f"{figure}.csv", data_dir / f"{figure}_manifest.json"
    for p in (cpath, mpath):
        if not is_regular_file(p, "the data file"):
            raise StoreError(f"{p} is missing; run `python -m sattn reproduce {figure}` first")
    man = read_manifest(mpath, remedy=f"restore it (e.g. from git) or run `python -m sattn "
                                      f"reproduce {figure}` to rebuild it.")
    sums = man.get("checksums")
    if not (isinstance(sums, dict) and all(isinstance(sums.get(k), str)
                                           for k in (("csv", "npz") if figure == "fig5" else ("csv",)))):
        raise StoreError(f"corrupted manifest {mpath}: its checksums are missing or not SHA-256 "
                         "strings; restore it (e.g. from git)")
    if verify and sha256_file(cpath) != sums["csv"]:
        raise StoreError(f"{cpath} does not match its manifest checksum")
    with open(cpath, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for c in ("k", "L", "n_draws", "grid_start", "grid_stop", "grid_step", "levels_tried",
                  "total_draws", "bound", "d", "draws", "widths_tried", "draws_at_d_min",
                  "target", "budget", "coarse"):
            if c in r:
                r[c] = int(r[c])
        for c in ("gamma", "eps1", "eps2", "Q", "ratio_spread", "log_gap7", "margin6", "margin7",
                  "ladder"):
            if c in r:
                r[c] = float(r[c])
        for c in ("d_min", "d_below"):
            if c in r:
                r[c] = int(r[c]) if r[c] != "" else None
    if figure == "fig5":
        npz = data_dir / "fig5_maps.npz"
        if verify and sha256_file(npz) != sums["npz"]:
            raise StoreError(f"{npz} does not match its manifest checksum")
        with np.load(npz) as z:
            return {"A": z["A"], "M": z["M"], **rows[0], "manifest": man}
    return rows


def fit_dmin_log(L, d):
    """Least-squares fit of minimal widths ``d ~ a ln L + b``; returns ``(a, b, R^2)``.

    Raises
    ------
    ValueError, TypeError
        ``L`` and ``d`` not 1-D real arrays of equal length ``>= 2``, a length ``L <= 0``, or
        fewer than two distinct lengths (the slope would not be determined).

    References
    ----------
    Figure 3 of Likhosherstov et al. (2021) (the dotted logarithmic curve); :ref:`ch-experiments`.
    """
    L = as_vector("L", L)
    d = as_vector("d", d)
    if (L <= 0).any():
        raise ValueError(f"L must hold positive lengths (ln L is fitted), got {L.tolist()}")
    if L.shape != d.shape or L.ndim != 1 or L.size < 2:
        raise ValueError(f"L and d must be 1-D of equal length >= 2, got {L.shape} and {d.shape}")
    if np.unique(L).size < 2:   # ln L constant: the slope is not determined (as fit_law refuses it)
        raise ValueError(f"L must hold at least two distinct lengths, got {np.unique(L).tolist()}")
    X = np.column_stack([np.log(L), np.ones_like(L)])
    (a, b), *_ = np.linalg.lstsq(X, d, rcond=None)
    resid = d - X @ np.array([a, b])
    ss_tot = float(((d - d.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")
    return float(a), float(b), r2


# The old names of this module's renamed functions warn and resolve for one release
# (sattn/_deprecation.py); imported last so that no line above moves.
from .._deprecation import module_getattr as _old_names  # noqa: E402

__getattr__ = _old_names(__name__)
