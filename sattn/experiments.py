"""The d_min experiments of Likhosherstov et al. (2021), Section 4 (Figures 3, 4 and 5).

Protocol (the paper's, Chapter 7 of the book): for a setup ``(k, gamma, eps1, eps2)`` and a length
``L``, sample **one** target ``A`` with the paper's two-pass sampler; scan an ascending uniform
grid of widths ``d``; at each ``d`` make up to ``ceil(Q L)`` Stiefel draws of Algorithm 1; the
first ``d`` at which a draw meets criteria (6)-(7) is the empirical ``d_min``.

This module holds

* the twelve setups and their ``d`` grids (the paper's own are not recoverable, see
  :data:`SETUPS`), and two profiles, ``quick`` (tests, minutes) and ``paper`` (the shipped data);
* tasks (one per figure, setup, ``L`` and ``Q``) with seeds derived from the task's identity by
  one :class:`numpy.random.SeedSequence`, so results do not depend on ``--jobs`` or on which tasks
  were already done;
* a resumable store: one JSON file per finished task, written atomically (temporary file, fsync,
  ``os.replace``) and carrying its own SHA-256; a rerun after any interruption (even ``kill -9``)
  recomputes no finished task, and refuses to continue on a corrupted file;
* :func:`reproduce`, which runs the missing tasks in parallel with joblib (any joblib backend,
  e.g. Dask's, through ``joblib.parallel_config``), shows tqdm progress, and writes
  ``<figure>.csv`` plus ``<figure>_manifest.json`` (parameters, grids, seeds, versions, wall time,
  checksums);
* two engines with one semantics: :func:`reference_level` follows the paper literally (SVD,
  full attention matrix, explicit ratios), :class:`sattn.engine.FastEngine` is the fast one.

References
----------
Section 4 and Figures 3-5 of Likhosherstov, Choromanski & Weller (2021); Chapter 7 of the book.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._validate import check_int, check_real, check_rng
from .engine import FastEngine, draw_generator

__all__ = [
    "ENGINE_VERSION",
    "FIGURES",
    "L_RANGE",
    "PROFILES",
    "SETUPS",
    "ExperimentError",
    "Profile",
    "Setup",
    "StoreError",
    "Task",
    "TaskStore",
    "dmin_search",
    "explicit_ratio_check",
    "fit_log",
    "load_figure",
    "make_tasks",
    "reference_level",
    "reproduce",
    "run_task",
    "support_index",
]

#: Identifies how the fast engine turns a seed into a draw; part of every task's parameters, so
#: results of another engine version are refused on resume instead of being mixed in.
ENGINE_VERSION = "fast-2"
FIGURES = ("fig3", "fig4", "fig5")
#: Supported sequence lengths of the experiments (inclusive).
L_RANGE = (64, 32768)
ROOT_SEED = 20210607  # arXiv v1 date of the paper; the one root of every random number here


class ExperimentError(ValueError):
    """Bad experiment request (unknown figure or setup, bad grid, L out of range)."""


class StoreError(RuntimeError):
    """A stored result or manifest is corrupted or inconsistent; nothing was overwritten."""


# ----------------------------------------------------------------------------- setups
@dataclass(frozen=True)
class Setup:
    """One panel of Figure 3: the pattern class ``(k, gamma)`` and tolerances ``(eps1, eps2)``."""

    name: str
    k: int
    gamma: float
    eps1: float
    eps2: float

    def params(self) -> dict:
        return {"k": self.k, "gamma": self.gamma, "eps1": self.eps1, "eps2": self.eps2}

    def key(self) -> int:
        """An integer naming the setup's parameters (not its name or position)."""
        s = f"k={self.k};gamma={self.gamma!r};eps1={self.eps1!r};eps2={self.eps2!r}"
        return int.from_bytes(hashlib.sha256(s.encode()).digest()[:4], "big")


def _setup(k, gamma, eps1, eps2) -> Setup:
    return Setup(f"k{k}-g{gamma:g}-e{eps1:g}-{eps2:g}", k, float(gamma), float(eps1), float(eps2))


#: The book's twelve setups (the paper's are not recoverable; see Chapter 7). They span
#: k in {1, 2, 3, 4}, gamma in {1, 2} (gamma plays no role when k = 1: a row with one nonzero has
#: no ratios) and five tolerance pairs, all loose enough that d_min stays well below L on
#: 512..3072 (tight tolerances push d_min towards L; spec of the book, 8.8).
SETUPS: dict[str, Setup] = {s.name: s for s in [
    _setup(1, 1, 3.0, 0.9),
    _setup(1, 1, 7.0, 0.5),
    _setup(1, 1, 3.0, 0.5),
    _setup(1, 1, 7.0, 0.25),
    _setup(2, 1, 3.0, 0.9),
    _setup(2, 2, 3.0, 0.9),
    _setup(2, 1, 7.0, 0.5),
    _setup(2, 2, 7.0, 0.5),
    _setup(3, 1, 7.0, 0.9),
    _setup(3, 2, 7.0, 0.9),
    _setup(4, 1, 7.0, 0.9),
    _setup(4, 2, 7.0, 0.9),
]}


@dataclass(frozen=True)
class Profile:
    """Lengths, ``d`` grids and budgets of one run of the experiments."""

    name: str
    lengths: tuple
    grids: dict            # setup name -> (start, stop, step), inclusive stop
    Q: float
    fig4_setups: tuple
    fig4_Q: tuple
    fig4_lengths: tuple
    fig5: dict
    description: str

    def grid(self, setup: str) -> tuple:
        return self.grids[setup]


def _grid_values(grid) -> list[int]:
    start, stop, step = grid
    return list(range(start, stop + 1, step))


#: d grids of the paper profile: start about 0.65 x a pilot estimate of d_min at L = 512 (levels
#: far below d_min are rejected cheaply by the partial draws), step about 8% of that estimate
#: (2 to 12), generous stop (never reached).
_PAPER_GRIDS = {
    "k1-g1-e3-0.9": (18, 200, 2),
    "k1-g1-e7-0.5": (32, 300, 4),
    "k1-g1-e3-0.5": (40, 300, 4),
    "k1-g1-e7-0.25": (54, 400, 6),
    "k2-g1-e3-0.9": (42, 400, 6),
    "k2-g2-e3-0.9": (54, 400, 6),
    "k2-g1-e7-0.5": (64, 400, 8),
    "k2-g2-e7-0.5": (72, 400, 8),
    "k3-g1-e7-0.9": (64, 480, 8),
    "k3-g2-e7-0.9": (72, 480, 8),
    "k4-g1-e7-0.9": (80, 480, 10),
    "k4-g2-e7-0.9": (96, 480, 12),
}

_QUICK_GRIDS = {
    "k1-g1-e3-0.9": (12, 128, 4),
    "k1-g1-e7-0.5": (20, 128, 4),
    "k1-g1-e3-0.5": (24, 128, 4),
    "k1-g1-e7-0.25": (24, 128, 4),
    "k2-g1-e3-0.9": (24, 128, 4),
    "k2-g2-e3-0.9": (28, 128, 4),
    "k2-g1-e7-0.5": (32, 128, 4),
    "k2-g2-e7-0.5": (32, 128, 4),
    "k3-g1-e7-0.9": (36, 128, 4),
    "k3-g2-e7-0.9": (36, 128, 4),
    "k4-g1-e7-0.9": (36, 128, 4),
    "k4-g2-e7-0.9": (40, 128, 4),
}

PROFILES: dict[str, Profile] = {
    "paper": Profile(
        name="paper",
        lengths=tuple(range(512, 3072 + 1, 256)),
        grids=_PAPER_GRIDS,
        Q=0.1,
        fig4_setups=("k1-g1-e3-0.9", "k2-g1-e3-0.9"),
        fig4_Q=(0.1, 0.25, 0.5, 1.0, 2.0, 5.0),
        fig4_lengths=(512, 1024, 1536),
        fig5={"setup": "k2-g2-e7-0.5", "L": 128, "d_grid": (4, 128, 4)},
        description=("The data the book ships: the paper's L grid 512..3072 step 256 and twelve "
                     "setups of the book; Figure 3 uses ceil(L/10) draws per width (Q = 0.1, "
                     "reduced from the paper's Q = 1 to fit two shared CPU cores; Figure 4 "
                     "measures the effect of Q from 0.1 to 5 on two setups, L = 512..1536)."),
    ),
    "quick": Profile(
        name="quick",
        lengths=(128, 192, 256),
        grids=_QUICK_GRIDS,
        Q=0.5,
        fig4_setups=("k1-g1-e3-0.9", "k2-g1-e3-0.9"),
        fig4_Q=(0.1, 0.5, 1.0),
        fig4_lengths=(128, 256),
        fig5={"setup": "k2-g2-e7-0.5", "L": 64, "d_grid": (4, 64, 4)},
        description="A small run for tests and a first look (minutes on 2 cores); not the paper's L.",
    ),
}


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One (figure, setup, L, Q) measurement of d_min."""

    figure: str
    setup: Setup
    L: int
    Q: float
    grid: tuple
    root_seed: int = ROOT_SEED

    @property
    def task_id(self) -> str:
        return f"{self.figure}_{self.setup.name}_L{self.L}_Q{self.Q:g}"

    @property
    def n_draws(self) -> int:
        return max(1, math.ceil(self.Q * self.L))

    def target_key(self) -> tuple:
        """Seed key of the target A: the setup's parameters and L (shared by Figures 3 and 4)."""
        return (self.setup.key(), self.L, 0)

    def draw_key(self) -> tuple:
        """Prefix of the draws' seed keys; draw i at width d uses ``draw_key() + (d, i)``.

        It does not contain Q or the figure: the first ``ceil(Q L)`` draws at each width are the
        same for every Q, so d_min is pathwise non-increasing in Q (Figure 4).
        """
        return (self.setup.key(), self.L, 1)

    def params(self) -> dict:
        return {"figure": self.figure, "setup": self.setup.name, **self.setup.params(),
                "L": self.L, "Q": self.Q, "n_draws": self.n_draws, "grid": list(self.grid),
                "root_seed": self.root_seed, "target_key": list(self.target_key()),
                "draw_key": list(self.draw_key()), "engine": ENGINE_VERSION}


def _parse_setups(setups) -> list[Setup]:
    if setups is None:
        return list(SETUPS.values())
    if isinstance(setups, str):
        setups = [setups]
    names = []
    for item in setups:
        names += [s for s in str(item).replace(",", " ").split() if s]
    if not names:
        raise ExperimentError("setups must name at least one setup; valid names: "
                              + ", ".join(SETUPS))
    bad = [n for n in names if n not in SETUPS]
    if bad:
        raise ExperimentError(f"unknown setup name(s) {bad}; valid names: " + ", ".join(SETUPS))
    if len(set(names)) != len(names):
        raise ExperimentError(f"setups must not repeat a name, got {names}")
    return [SETUPS[n] for n in names]


def _check_lengths(lengths) -> tuple:
    try:
        lengths = [int(x) for x in lengths]
    except (TypeError, ValueError) as exc:
        raise ExperimentError(f"lengths must be integers, got {lengths!r}") from exc
    if not lengths:
        raise ExperimentError("lengths must contain at least one L, got an empty list")
    for L in lengths:
        if not (L_RANGE[0] <= L <= L_RANGE[1]):
            raise ExperimentError(f"L = {L} is outside the supported range "
                                  f"[{L_RANGE[0]}, {L_RANGE[1]}]")
    if any(b <= a for a, b in zip(lengths, lengths[1:])):
        raise ExperimentError(f"lengths must be strictly increasing, got {lengths}")
    return tuple(lengths)


def _check_grid(name, grid, lengths):
    try:
        start, stop, step = (int(x) for x in grid)
    except (TypeError, ValueError) as exc:
        raise ExperimentError(f"grid of {name} must be (start, stop, step), got {grid!r}") from exc
    if step <= 0 or start < 1 or stop < start:
        raise ExperimentError(f"grid of {name} must be ascending with start >= 1 and step > 0, "
                              f"got start={start}, stop={stop}, step={step} (empty or "
                              "non-increasing)")
    if start > min(lengths):
        raise ExperimentError(f"grid of {name} starts at d = {start} > L = {min(lengths)}; "
                              "widths must satisfy d <= L")
    return (start, stop, step)


def make_tasks(figure, profile="quick", *, setups=None, lengths=None) -> list[Task]:
    """The tasks of one figure under a profile, optionally restricted.

    Parameters
    ----------
    figure : {"fig3", "fig4"}
    profile : str or Profile
    setups : list of str, optional
        Setup names (default: all twelve for Figure 3, the profile's two for Figure 4).
    lengths : list of int, optional
        Strictly increasing lengths within :data:`L_RANGE` (default: the profile's).

    Raises
    ------
    ExperimentError
        Unknown figure, profile or setup; empty or non-increasing lengths; L out of range.
    """
    prof = _profile(profile)
    if figure not in ("fig3", "fig4"):
        raise ExperimentError(f"figure must be one of {FIGURES} (tasks exist for fig3, fig4), "
                              f"got {figure!r}")
    if figure == "fig3":
        chosen = _parse_setups(setups)
        Ls = _check_lengths(prof.lengths if lengths is None else lengths)
        Qs = (prof.Q,)
    else:
        chosen = _parse_setups(prof.fig4_setups if setups is None else setups)
        Ls = _check_lengths(prof.fig4_lengths if lengths is None else lengths)
        Qs = prof.fig4_Q
    tasks = []
    for s in chosen:
        grid = _check_grid(s.name, prof.grid(s.name), Ls)
        for Q in Qs:
            for L in Ls:
                tasks.append(Task(figure, s, L, float(Q), grid))
    return tasks


def _profile(profile) -> Profile:
    if isinstance(profile, Profile):
        return profile
    if profile not in PROFILES:
        raise ExperimentError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    return PROFILES[profile]


# ----------------------------------------------------------------------------- one task
def dmin_search(engine: FastEngine, grid, n_draws, root_seed, key):
    """Scan the ascending grid; return ``(d_min or None, list of per-level records)``.

    The engine keeps no memory between draws, so the draws made at a width depend only on their
    seed keys.
    """
    levels = []
    for d in _grid_values(grid):
        if d > engine.L:
            break
        r = engine.level(d, n_draws, root_seed, key)
        levels.append([r.d, r.draws, int(r.success), r.stage1_rejects, r.screen_rejects,
                       r.confirmations])
        if r.success:
            return d, levels
    return None, levels


def run_task(task: Task) -> dict:
    """Run one task with the fast engine and return its result record (JSON-serialisable)."""
    from .construction import theorem1_bound
    from .sparse import sample_sparse

    t0 = time.perf_counter()
    with _one_blas_thread():
        s = task.setup
        A = sample_sparse(task.L, s.k, s.gamma, draw_generator(task.root_seed, task.target_key()),
                          as_csr=True)
        eng = FastEngine(A, s.eps1, s.eps2)
        nnz = int(A.nnz)
        dmin, levels = dmin_search(eng, task.grid, task.n_draws, task.root_seed, task.draw_key())
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


@contextlib.contextmanager
def _one_blas_thread():
    """Limit BLAS to one thread (tasks are the unit of parallelism; oversubscribed OpenBLAS
    threads spin and slow small GEMMs down by an order of magnitude)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


# ----------------------------------------------------------------------------- the store
def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _sha256_file(path) -> str:
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
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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

    def clean_temporaries(self) -> int:
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
        if not p.exists():
            return None
        try:
            rec = json.loads(p.read_bytes())
            payload, digest = rec["payload"], rec["sha256"]
            if not isinstance(payload, dict):
                raise TypeError(f"payload must be a JSON object, got {type(payload).__name__}")
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"corrupted result file {p}: not a valid task record ({exc}). "
                             "Nothing was overwritten; delete this file to recompute the task, "
                             "or restore it from git.") from exc
        if _sha256_bytes(_canonical(payload)) != digest:
            raise StoreError(f"corrupted result file {p}: its SHA-256 does not match its content. "
                             "Nothing was overwritten; delete this file to recompute the task, "
                             "or restore it from git.")
        if payload.get("params") != task.params():
            raise StoreError(f"result file {p} was computed with different parameters "
                             f"({payload.get('params')}) than requested ({task.params()}). "
                             "Use another --out folder, or delete the file to recompute.")
        return payload

    def save(self, task: Task, payload: dict):
        rec = {"payload": payload, "sha256": _sha256_bytes(_canonical(payload))}
        _atomic_write(self.path(task), json.dumps(rec, sort_keys=True).encode())


def _run_and_store(task: Task, root: str) -> tuple[str, dict]:
    payload = run_task(task)
    TaskStore(root).save(task, payload)
    return task.task_id, payload


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


def _write_csv(path, columns, rows) -> bytes:
    lines = [",".join(columns)] + [",".join(str(v) for v in r) for r in rows]
    data = ("\n".join(lines) + "\n").encode()
    _atomic_write(path, data)
    return data


def _versions() -> dict:
    import joblib
    import scipy

    from . import __version__
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "joblib": joblib.__version__, "sattn": __version__,
            "engine": ENGINE_VERSION, "platform": platform.platform()}


def _check_existing_manifest(out: Path, figure: str, store: TaskStore):
    """Refuse to resume over a corrupted manifest or over result files that changed; return the
    previous manifest (empty if none)."""
    mpath = out / f"{figure}_manifest.json"
    if not mpath.exists():
        return {}
    try:
        man = json.loads(mpath.read_bytes())
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
        raise StoreError(f"corrupted manifest {mpath} ({exc}). Nothing was overwritten; the task "
                         f"results in {store.root} are intact. Delete the manifest to rebuild it.") \
            from exc
    for name, digest in files.items():
        p = store.root / name
        if not p.exists():
            raise StoreError(f"manifest {mpath} lists the finished result {p}, which is missing. "
                             "Restore it (e.g. from git) or delete the manifest to accept the loss.")
        if _sha256_file(p) != digest:
            raise StoreError(f"result file {p} does not match the checksum in {mpath}. "
                             "Nothing was overwritten; restore the file or delete it to recompute.")
    cpath = out / f"{figure}.csv"
    if cpath.exists() and _sha256_file(cpath) != csv_sum:
        raise StoreError(f"{cpath} does not match the checksum in {mpath} (edited or corrupted). "
                         "Delete the CSV to regenerate it from the task results.")
    return man


def _check_fig5_outputs(out: Path):
    """Refuse to overwrite Figure 5 outputs whose manifest is corrupted or whose files do not
    match it (the same policy as for Figures 3 and 4); absent outputs are fine."""
    mpath = out / "fig5_manifest.json"
    if not mpath.exists():
        return
    try:
        sums = json.loads(mpath.read_bytes())["checksums"]
        if not all(isinstance(sums[k], str) for k in ("csv", "npz")):
            raise TypeError("checksums of csv and npz must be SHA-256 strings")
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"corrupted manifest {mpath} ({exc}). Nothing was overwritten; delete "
                         "it (or restore it from git) to recompute Figure 5.") from exc
    for name, key in (("fig5.csv", "csv"), ("fig5_maps.npz", "npz")):
        p = out / name
        if p.exists() and _sha256_file(p) != sums[key]:
            raise StoreError(f"{p} does not match the checksum in {mpath} (edited or corrupted). "
                             "Nothing was overwritten; restore it, or delete it and the manifest "
                             "to recompute Figure 5.")


def _progress(total, desc, enabled):
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, unit="task", disable=not enabled, dynamic_ncols=True)


def reproduce(figure, *, profile="quick", setups=None, lengths=None, jobs=1, out=None,
              progress=True) -> dict:
    """Compute (or resume) the data of one figure and write ``<out>/<figure>.csv`` + manifest.

    Parameters
    ----------
    figure : {"fig3", "fig4", "fig5"}
    profile : {"quick", "paper"}
    setups, lengths : optional restrictions (see :func:`make_tasks`). Figure 5 has one fixed
        setting and ``L`` (the profile's), so passing either with ``"fig5"`` is an error.
    jobs : int, default 1
        Parallel workers (joblib; ``-1`` for all cores). Results do not depend on it.
    out : path, optional
        Output folder; default ``data`` for the paper profile, ``data/quick`` otherwise.
    progress : bool, default True
        Show a tqdm progress bar.

    Returns
    -------
    dict
        The manifest that was written (with ``computed`` and ``reused`` task ids).

    Raises
    ------
    ExperimentError
        Bad request (figure, setups, lengths, jobs; setups or lengths given for fig5).
    StoreError
        A stored result or the manifest is corrupted; nothing is overwritten.
    """
    prof = _profile(profile)
    if figure not in FIGURES:
        raise ExperimentError(f"unknown figure {figure!r}; valid: {', '.join(FIGURES)}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0 or jobs < -1:
        raise ExperimentError(f"jobs must be a positive integer or -1, got {jobs!r}")
    out = Path(out) if out is not None else Path("data" if prof.name == "paper" else "data/quick")
    if figure == "fig5":
        if setups is not None or lengths is not None:
            raise ExperimentError(
                f"fig5 uses the {prof.name} profile's one setting ({prof.fig5['setup']}) and "
                f"L = {prof.fig5['L']}; --setups and --lengths apply to fig3 and fig4 only, "
                f"got setups={setups!r}, lengths={lengths!r}")
        return _reproduce_fig5(prof, out)
    tasks = make_tasks(figure, prof, setups=setups, lengths=lengths)
    store = TaskStore(out / "tasks" / figure)
    previous = _check_existing_manifest(out, figure, store)
    store.clean_temporaries()
    payloads = {}
    for t in tasks:
        rec = store.load(t)
        if rec is not None:
            payloads[t.task_id] = rec
    reused = [t.task_id for t in tasks if t.task_id in payloads]
    todo = [t for t in tasks if t.task_id not in payloads]
    # Longest tasks first (large L, many draws) for a better parallel schedule.
    todo.sort(key=lambda t: -t.L * t.Q * t.grid[0])
    t0 = time.perf_counter()
    computed = []
    bar = _progress(len(tasks), f"{figure} ({prof.name})", progress)
    bar.update(len(reused))
    try:
        if todo:
            if jobs == 1:
                results = (_run_and_store(t, str(store.root)) for t in todo)
            else:
                from joblib import Parallel, delayed
                results = Parallel(n_jobs=jobs, return_as="generator_unordered")(
                    delayed(_run_and_store)(t, str(store.root)) for t in todo)
            for tid, payload in results:
                payloads[tid] = payload
                computed.append(tid)
                bar.update(1)
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    rows = _csv_rows(tasks, payloads)
    csv_bytes = _write_csv(out / f"{figure}.csv", FIG34_COLUMNS, rows)
    manifest = {
        "figure": figure,
        "profile": prof.name,
        "description": prof.description,
        "protocol": ("one A per (setup, L) from sattn.sparse.sample_sparse; ascending uniform d "
                     "grid; at each d up to ceil(Q L) Stiefel draws (fast engine, stops at the "
                     "first success); d_min = first d with a success (empty if none in the grid)"),
        "setups": {t.setup.name: t.setup.params() for t in tasks},
        "grids": {t.setup.name: list(t.grid) for t in tasks},
        "lengths": sorted({t.L for t in tasks}),
        "Q": sorted({t.Q for t in tasks}),
        "seeds": {"root_seed": ROOT_SEED,
                  "scheme": ("numpy SeedSequence(root_seed, spawn_key=key); target A: key = "
                             "(setup_key, L, 0); draw i at width d: key = (setup_key, L, 1, d, i); "
                             "setup_key = first 4 bytes of sha256('k=..;gamma=..;eps1=..;eps2=..')"),
                  "setup_keys": {t.setup.name: t.setup.key() for t in tasks}},
        "versions": _versions(),
        "jobs": jobs,
        "wall_seconds_this_run": round(wall, 3),
        "wall_seconds_all_runs": round(wall + previous.get(
            "wall_seconds_all_runs", previous.get("wall_seconds_this_run", 0.0)), 3),
        "runs": previous.get("runs", 1 if previous else 0) + 1,
        "task_seconds_total": round(sum(payloads[t.task_id]["seconds"] for t in tasks), 3),
        "computed": sorted(computed),
        "reused": sorted(reused),
        "command": " ".join(sys.argv) if sys.argv else "",
        "checksums": {
            "csv": _sha256_bytes(csv_bytes),
            "tasks": {store.path(t).name: _sha256_file(store.path(t)) for t in tasks},
        },
    }
    _atomic_write(out / f"{figure}_manifest.json",
                  json.dumps(manifest, indent=1, sort_keys=True).encode())
    return manifest


# ----------------------------------------------------------------------------- Figure 5
def _reproduce_fig5(prof: Profile, out: Path) -> dict:
    """Attention maps of a target ``A`` and the constructed ``M`` (Algorithm 1, SVD route)."""
    from .construction import ConstructionFailed, approximate
    from .sparse import sample_sparse

    cfg = prof.fig5
    s = SETUPS[cfg["setup"]]
    L = _check_lengths([cfg["L"]])[0]
    grid = _check_grid(s.name, cfg["d_grid"], (L,))
    _check_fig5_outputs(out)
    t0 = time.perf_counter()
    with _one_blas_thread():
        key = (s.key(), L, 5)
        A = sample_sparse(L, s.k, s.gamma, draw_generator(ROOT_SEED, key + (0,)))
        approx, tried = None, []
        for d in _grid_values(grid):
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
    csv_bytes = _write_csv(out / "fig5.csv", cols, [row])
    manifest = {
        "figure": "fig5", "profile": prof.name, "setup": s.params() | {"name": s.name},
        "L": L, "d_grid": list(grid), "Q": prof.Q,
        "protocol": "Algorithm 1 with the SVD route (sattn.construction.approximate) on the first "
                    "width of the grid that succeeds within ceil(Q L) draws",
        "seeds": {"root_seed": ROOT_SEED, "target_key": list(key + (0,)),
                  "draw_key": "(setup_key, L, 5, d)"},
        "versions": _versions(), "wall_seconds_this_run": round(time.perf_counter() - t0, 3),
        "command": " ".join(sys.argv) if sys.argv else "",
        "checksums": {"csv": _sha256_bytes(csv_bytes), "npz": _sha256_file(npz)},
    }
    _atomic_write(out / "fig5_manifest.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
    return manifest


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
    import csv

    data_dir = Path(data_dir)
    if figure not in FIGURES:
        raise ExperimentError(f"unknown figure {figure!r}; valid: {', '.join(FIGURES)}")
    cpath, mpath = data_dir / f"{figure}.csv", data_dir / f"{figure}_manifest.json"
    for p in (cpath, mpath):
        if not p.exists():
            raise StoreError(f"{p} is missing; run `python -m sattn reproduce {figure}` first")
    man = json.loads(mpath.read_bytes())
    if verify and _sha256_file(cpath) != man["checksums"]["csv"]:
        raise StoreError(f"{cpath} does not match its manifest checksum")
    with open(cpath, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for c in ("k", "L", "n_draws", "grid_start", "grid_stop", "grid_step", "levels_tried",
                  "total_draws", "bound", "d", "draws", "widths_tried", "draws_at_d_min"):
            if c in r:
                r[c] = int(r[c])
        for c in ("gamma", "eps1", "eps2", "Q", "ratio_spread", "log_gap7", "margin6", "margin7"):
            if c in r:
                r[c] = float(r[c])
        if "d_min" in r:
            r["d_min"] = int(r["d_min"]) if r["d_min"] != "" else None
    if figure == "fig5":
        npz = data_dir / "fig5_maps.npz"
        if verify and _sha256_file(npz) != man["checksums"]["npz"]:
            raise StoreError(f"{npz} does not match its manifest checksum")
        with np.load(npz) as z:
            return {"A": z["A"], "M": z["M"], **rows[0], "manifest": man}
    return rows


def fit_log(L, d):
    """Least-squares fit ``d ~ a ln L + b``; returns ``(a, b, R^2)``.

    References
    ----------
    Figure 3 of Likhosherstov et al. (2021) (the dotted logarithmic curve); Chapter 7.
    """
    L = np.asarray(L, dtype=float)
    d = np.asarray(d, dtype=float)
    if L.shape != d.shape or L.ndim != 1 or L.size < 2:
        raise ValueError(f"L and d must be 1-D of equal length >= 2, got {L.shape} and {d.shape}")
    X = np.column_stack([np.log(L), np.ones_like(L)])
    (a, b), *_ = np.linalg.lstsq(X, d, rcond=None)
    resid = d - X @ np.array([a, b])
    ss_tot = float(((d - d.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")
    return float(a), float(b), r2


# ----------------------------------------------------------------------------- reference engine
def explicit_ratio_check(M, A, eps1, eps2, *, support=None) -> bool:
    """Criteria (6)-(7) by explicit ratios of entries of a full attention matrix ``M``.

    Vectorized literal form: for every row, every ordered pair of support entries must satisfy
    ``(1 - eps1) A1/A2 <= M1/M2 <= (1 + eps1) A1/A2``, and every zero position ``j0`` and support
    position ``j`` must satisfy ``M[l, j0] / M[l, j] <= eps2`` (checked through the largest
    off-support entry and the smallest support entry of the row, which is the binding pair).
    Agrees with :func:`sattn.criteria.check_approximation_explicit` (tests), without its Python
    loops. ``support`` (from :func:`support_index`) may be passed to reuse the per-target set-up.

    References
    ----------
    Criteria (6)-(7) of Likhosherstov et al. (2021); Chapter 3 of the book.
    """
    S, idx, valid, As = support_index(A) if support is None else support
    Ms = np.take_along_axis(M, idx, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (Ms[:, :, None] / Ms[:, None, :]) / (As[:, :, None] / As[:, None, :])
    pair = valid[:, :, None] & valid[:, None, :]
    ok6 = bool(np.all(~pair | (((1 - eps1) <= ratio) & (ratio <= (1 + eps1)))))
    off_max = np.where(S, -np.inf, M).max(axis=1)
    on_min = np.where(S, M, np.inf).min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok7 = bool(np.all((off_max == -np.inf) | (off_max / on_min <= eps2)))
    return ok6 and ok7


def support_index(A):
    """Per-target set-up of :func:`explicit_ratio_check`: support mask, support columns first."""
    S = A > 0
    k = int(S.sum(axis=1).max())
    idx = np.argsort(~S, axis=1, kind="stable")[:, :k]
    return S, idx, np.take_along_axis(S, idx, axis=1), np.take_along_axis(A, idx, axis=1)


def reference_level(A, eps1, eps2, d, n_draws, rng, *, method="svd", factors=None):
    """The paper's literal route at one width: up to ``n_draws`` draws, first success wins.

    SVD factorization of ``B`` (eq. 8, :func:`sattn.construction.logit_target` and
    :func:`~sattn.construction.factorize`), a QR-based Stiefel draw
    (:func:`~sattn.construction.sample_stiefel`), the input ``X`` (eqs. 13, 15), the full
    attention matrix ``M = SAM(X)`` with the fixed weights (eqs. 16-17), and explicit ratio checks
    (:func:`explicit_ratio_check`).

    Parameters
    ----------
    A : array_like, shape (L, L)
    eps1, eps2 : float
    d : int
    n_draws : int
    rng : numpy.random.Generator
    method : {"svd", "direct"}
    factors : tuple (D, V), optional
        Precomputed factorization (the per-A set-up), to time draws separately.

    Returns
    -------
    (success, draws) : (bool, int)
    """
    from .attention import sam
    from .construction import draw_input, factorize, fixed_weights, logit_target

    A = np.asarray(A, dtype=float)
    rng = check_rng("rng", rng)
    n_draws = check_int("n_draws", n_draws, low=1)
    eps1 = check_real("eps1", eps1, low=0.0, low_open=True)
    if factors is None:
        factors = factorize(logit_target(A, eps1, eps2), method)
    D, V = factors
    W_Q, W_K = fixed_weights(d)
    support = support_index(A)
    for i in range(n_draws):
        X = draw_input(D, V, d, rng)
        M = sam(X, W_Q, W_K)
        if explicit_ratio_check(M, A, eps1, eps2, support=support):
            return True, i + 1
    return False, n_draws


def _as_dict(obj):  # small helper for dataclass payloads in notebooks
    return dataclasses.asdict(obj)
