"""The acceptance experiment: its registered design, its tasks, their run and their store.

Step 1 of :mod:`sattn.experiments.acceptance`: the widths of each (setting, L) and their
extension rule, the tasks, counting accepted draws with the fast engine, the resumable run
(``python -m sattn reproduce acceptance``) and the committed data it leaves.

References
----------
Algorithm 1 and Section 4 of Likhosherstov, Choromanski & Weller (2021); :ref:`ch-log-law`.
"""

from __future__ import annotations

import csv
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..._validate import check_bool, check_int, check_real
from ..engine import ENGINE_VERSION, FastEngine
from ..setups import (
    DECADES_PAPER,
    ROOT_SEED,
    ExperimentError,
    Setup,
    Task,
    validate_lengths,
    parse_setups,
)
from ...runs.host import machine, one_blas_thread
from ...runs.runner import run_by_parts, run_in_store
from ...runs.store import (
    OutputLock,
    command_line,
    StoreError,
    TaskStore,
    previous_manifest,
    sha256_bytes,
    sha256_file,
    versions,
    write_csv,
    read_manifest,
    write_manifest,
)
from ..target import draw_generator

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [
    *__flat__,
    "DECADES_DMIN_MEAN", "OUT_OF_SAMPLE_ANCHOR", "ACCEPTANCE_PROFILES", "ACCEPTANCE_COLUMNS", "design_widths",
    "extend_widths", "next_widths", "measure_curve", "AcceptanceTask", "AcceptanceLevel",
    "DRAWS_PER_PART", "PART_L", "draws_per_part",
    "acceptance_tasks", "count_accepted", "run_acceptance_task", "run_acceptance_level",
    "reproduce_acceptance", "load_acceptance", "read_acceptance_csv", "acceptance_profile",
]

#: The mean first-success width of the decades experiment (``data/decades.csv``, three targets,
#: 16 draws per width) per (setting, L): the anchor of the acceptance design, frozen here when
#: the design was registered.
DECADES_DMIN_MEAN = {name: dict(zip(tuple(2 ** p for p in range(6, 16)), means)) for name, means in {
    #               L = 64     128    256    512   1024   2048   4096   8192  16384  32768
    "k1-g1-e3-0.9": ( 15.3,  19.0,  24.3,  30.3,  37.0,  40.3,  45.7,  51.7,  55.3,  60.3),
    "k2-g1-e7-0.5": ( 35.7,  54.0,  75.3, 100.3, 124.7, 148.7, 170.0, 191.0, 215.7, 231.7),
    "k2-g2-e7-0.5": ( 36.7,  56.7,  82.0, 110.7, 140.7, 169.0, 196.0, 223.7, 245.0, 271.3),
    "k3-g1-e7-0.9": ( 35.0,  52.3,  73.7,  92.3, 120.7, 140.7, 158.0, 180.0, 197.0, 211.7),
    "k4-g1-e7-0.9": ( 41.7,  65.0,  92.0, 122.7, 159.0, 189.0, 218.3, 243.7, 276.3, 293.0),
    "k4-g2-e7-0.9": ( 43.7,  70.0, 104.7, 153.3, 195.0, 235.7, 283.0, 319.0, 362.7, 400.3),
}.items()}

#: The anchor widths ``m`` of the registered out-of-sample curves (no decades data exist there):
#: the last decades anchor (L = 32768) scaled by the growth that ``a ln L + b ln ln L + c``,
#: fitted to the probit d_50 series on L >= 256, predicts, rounded to 0.1. Frozen with the
#: registration of the out-of-sample decision.
OUT_OF_SAMPLE_ANCHOR = {
    "k1-g1-e3-0.9": {65536: 64.4, 131072: 68.6},
    "k2-g1-e7-0.5": {65536: 250.5, 131072: 267.2},
}

#: The registered design (``docs/registration/acceptance.md``), the registered out-of-sample
#: curves (``docs/registration/out_of_sample.md``) and a quick one for tests.
ACCEPTANCE_PROFILES = {
    "paper": {
        "setups": DECADES_PAPER["setups"],
        "lengths": tuple(2 ** p for p in range(6, 16)),
        "targets": 3,
        "factors": (0.90, 0.95, 1.00, 1.05, 1.10, 1.16, 1.24),
        "draws_small": 128,      # draws per width for L < draws_switch_L
        "draws_large": 64,       # and from it on
        "draws_switch_L": 4096,
        "extend": {"up": 1.08, "down": 1.06, "max": 4, "low_p": 0.10, "high_p": 0.40},
        "out": "data",
        "description": ("Acceptance curves of Algorithm 1: the six decades settings, L = 64 .. "
                        "32768, the decades experiment's three targets, seven widths per "
                        "(setting, L) at fixed multiples of the decades mean first-success width "
                        "(extended by a fixed rule until p <= 10% and p >= 40% are covered), 128 "
                        "draws per width below L = 4096 and 64 from it on."),
    },
    "out-of-sample": {
        "setups": tuple(OUT_OF_SAMPLE_ANCHOR),
        "lengths": (65536, 131072),
        "anchors": OUT_OF_SAMPLE_ANCHOR,
        "targets": 3,
        "factors": (0.90, 0.95, 1.00, 1.05, 1.10, 1.16, 1.24),
        "draws_small": 64,
        "draws_large": 64,
        "draws_switch_L": 4096,
        "extend": {"up": 1.08, "down": 1.06, "max": 4, "low_p": 0.10, "high_p": 0.40},
        "out": "data/out_of_sample",
        "registration": "docs/registration/out_of_sample.md",
        "description": ("Registered out-of-sample acceptance curves: the settings k1-g1-e3-0.9 "
                        "and k2-g1-e7-0.5 at L = 65536 and 131072, three targets each (the "
                        "decades seed keys), the registered widths and extension rule around a "
                        "frozen anchor, 64 draws per width."),
    },
    "quick": {
        "setups": ("k1-g1-e3-0.9", "k2-g2-e7-0.5"),
        "lengths": (64, 128),
        "targets": 2,
        "factors": (0.90, 1.00, 1.10, 1.24),
        "draws_small": 12,
        "draws_large": 12,
        "draws_switch_L": 4096,
        "extend": {"up": 1.08, "down": 1.06, "max": 2, "low_p": 0.10, "high_p": 0.40},
        "out": "data/quick",
        "description": "A small acceptance run for tests: two settings, L = 64, 128, 12 draws.",
    },
}


# ----------------------------------------------------------------------------- design
def design_widths(m, L, factors) -> list[int]:
    """The initial widths of one curve: ``round(m f)`` for each factor ``f`` (ascending, each at
    least one above the previous, at most ``L``).

    Parameters
    ----------
    m : float
        Anchor width (the decades mean first-success width), ``> 0``.
    L : int
        Length (widths above it are dropped).
    factors : sequence of float
        Strictly increasing positive multipliers.

    Raises
    ------
    ValueError
        ``m <= 0``, fewer than two or non-increasing factors, or fewer than two widths left.
    """
    m = check_real("m", m, low=0.0, low_open=True)
    L = check_int("L", L, low=2)
    fs = [check_real(f"factors[{i}]", f, low=0.0, low_open=True) for i, f in enumerate(factors)]
    if len(fs) < 2 or any(b <= a for a, b in zip(fs, fs[1:])):
        raise ValueError(f"factors must be at least two strictly increasing numbers, got {fs}")
    ws = []
    for f in fs:
        w = max(1, int(round(m * f)))
        if ws and w <= ws[-1]:
            w = ws[-1] + 1
        if w > L:
            break
        ws.append(w)
    if len(ws) < 2:
        raise ValueError(f"the anchor m = {m:g} leaves fewer than two widths <= L = {L}")
    return ws


def extend_widths(counts, L, rule, direction) -> int | None:
    """The next width the registered extension rule asks for in ``direction`` ("up" or
    "down"), or None when the curve needs none there.

    ``counts`` maps widths to ``(draws, successes)``. Up: if the top width accepts fewer than
    ``rule["high_p"]`` of its draws, ``max(top + 1, round(top * rule["up"]))`` (while ``top <
    L``). Down: if the bottom width accepts more than ``rule["low_p"]``, ``min(bottom - 1,
    round(bottom / rule["down"]))`` (while ``bottom > 1``).
    """
    ws = sorted(counts)
    if direction == "up":
        top = ws[-1]
        n, s = counts[top]
        if s / n < rule["high_p"] and top < L:
            return min(L, max(top + 1, int(round(top * rule["up"]))))
        return None
    if direction == "down":
        bot = ws[0]
        n, s = counts[bot]
        if s / n > rule["low_p"] and bot > 1:
            return max(1, min(bot - 1, int(round(bot / rule["down"]))))
        return None
    raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")


def next_widths(widths, L, rule, counts) -> list[int]:
    """The widths a curve measures next, given the ``counts`` (``{d: (draws, successes)}``) it has;
    an empty list when the curve is complete.

    First the initial ``widths`` not yet counted; then, one at a time, up to ``rule["max"]``
    widths upwards while the top width accepts fewer than ``rule["high_p"]`` of its draws; then
    up to ``rule["max"]`` downwards while the bottom one accepts more than ``rule["low_p"]``
    (:func:`extend_widths`). A function of the counts alone, so a run that stopped half-way asks
    for the same widths when it resumes.
    """
    missing = [d for d in widths if d not in counts]
    if missing:
        return missing
    lo, hi = min(widths), max(widths)
    if sum(d > hi for d in counts) < rule["max"]:
        nxt = extend_widths(counts, L, rule, "up")
        if nxt is not None:
            return [nxt]
    if sum(d < lo for d in counts) < rule["max"]:
        nxt = extend_widths(counts, L, rule, "down")
        if nxt is not None:
            return [nxt]
    return []


def measure_curve(widths, L, rule, count):
    """Measure one acceptance curve: ``count(d)`` returns ``(draws, successes)`` at width ``d``.

    The widths, in order, are those :func:`next_widths` asks for until it asks for none: the
    initial ``widths``, then the extensions up, then down. Returns ``{d: (draws, successes)}``.
    The real run and the synthetic calibration both use it, so both follow one design.
    """
    counts = {}
    while True:
        ws = next_widths(widths, L, rule, counts)
        if not ws:
            return counts
        for d in ws:
            counts[d] = count(d)


def acceptance_profile(profile) -> dict:
    """The settings of an acceptance profile, by name (a dict passes through); ExperimentError for an
    unknown name."""
    if isinstance(profile, dict):
        return profile
    if not isinstance(profile, str) or profile not in ACCEPTANCE_PROFILES:
        raise ExperimentError(f"unknown acceptance profile {profile!r}; valid: "
                              + ", ".join(ACCEPTANCE_PROFILES))
    return ACCEPTANCE_PROFILES[profile]


@dataclass(frozen=True)
class AcceptanceTask:
    """One acceptance curve: (setting, L, target), its initial widths and draws per width."""

    setup: Setup
    L: int
    target: int
    widths: tuple
    draws: int
    rule: tuple          # the extension rule as sorted (key, value) pairs
    root_seed: int = ROOT_SEED

    @property
    def task_id(self) -> str:
        return f"acceptance_{self.setup.name}_L{self.L}_t{self.target}_n{self.draws}"

    def target_task(self) -> Task:
        """The decades task whose target this curve uses (same seed key, same target)."""
        return Task("decades", self.setup, self.L, 0.0, (1, self.L, 1), root_seed=self.root_seed,
                    target=self.target, budget=16, ladder=DECADES_PAPER["ladder"], coarse=1)

    def draw_key(self) -> tuple:
        """Prefix of the draws' seed keys: draw i at width d is ``draw_key() + (d, i)``."""
        return (self.setup.key(), self.L, 4, self.target)

    def params(self) -> dict:
        return {"figure": "acceptance", "setup": self.setup.name, **self.setup.params(),
                "L": self.L, "target": self.target, "widths": list(self.widths),
                "draws": self.draws, "rule": dict(self.rule), "root_seed": self.root_seed,
                "target_key": list(self.target_task().target_key()),
                "draw_key": list(self.draw_key()), "engine": ENGINE_VERSION}


#: Draws per stored part of a width (:class:`AcceptanceLevel`) up to :data:`PART_L`: at the longest
#: registered lengths one draw takes up to a few minutes, so a whole width (64 draws) could outlast
#: the session that runs it; a part is what an interruption can cost (:func:`draws_per_part`).
DRAWS_PER_PART = 16
#: Beyond this length a part holds fewer draws, in proportion to 1/L.
PART_L = 32768


def draws_per_part(L: int) -> int:
    """Draws per stored part of a width at length ``L``: :data:`DRAWS_PER_PART` up to
    :data:`PART_L`, then ``DRAWS_PER_PART * PART_L // L`` (8 at 65,536, 4 at 131,072), at least
    one. A draw's cost grows at least in proportion to ``L``, so a part never costs less than 16
    draws at 32,768; how the draws of a width are split into parts changes no count (the parts of a
    width carry whether an earlier draw survived stage 1)."""
    L = check_int("L", L, low=1)
    return max(1, min(DRAWS_PER_PART, DRAWS_PER_PART * PART_L // L))


@dataclass(frozen=True)
class AcceptanceLevel:
    """A run of consecutive draws at one width of one acceptance curve: draws ``start`` to
    ``start + count - 1`` at width ``d`` (a part of the curve that the resumable run stores on
    its own, :func:`reproduce_acceptance`). ``warm``: an earlier draw at this width survived
    stage 1, so the partial set starts at its larger size (:func:`count_accepted`)."""

    curve: AcceptanceTask
    d: int
    start: int
    count: int
    warm: bool

    @property
    def task_id(self) -> str:
        """``<curve>_d<d>_i<start>``, and ``_n<count>`` after it when the part is not the size
        parts had before :func:`draws_per_part` (so it never takes the id of a stored older part
        of other parameters)."""
        base = f"{self.curve.task_id}_d{self.d}_i{self.start}"
        return base if self.count == self._sixteen() else f"{base}_n{self.count}"

    def _sixteen(self) -> int:
        """The size of the part at this start under the rule before :func:`draws_per_part`."""
        return min(DRAWS_PER_PART, self.curve.draws - self.start)

    def params(self) -> dict:
        return {"curve": self.curve.params(), "d": self.d, "draws": [self.start, self.count],
                "warm": self.warm}

    def stored_as(self) -> tuple:
        """The parts an earlier run may have stored in place of this one (for
        ``sattn.runs.runner.run_by_parts``): the part of :data:`DRAWS_PER_PART` draws at
        the same start, the only size parts had before they shrank beyond :data:`PART_L`."""
        if self.count == self._sixteen() or self.start % DRAWS_PER_PART:
            return ()
        return (AcceptanceLevel(self.curve, self.d, self.start, self._sixteen(), self.warm),)


def acceptance_tasks(profile="paper", *, setups=None, lengths=None) -> list[AcceptanceTask]:
    """The tasks of the acceptance experiment, ordered by increasing L (cheap lengths first).

    Raises
    ------
    ExperimentError
        Unknown profile or setting, a setting outside the registered six, or a length without a
        registered anchor width.
    """
    cfg = acceptance_profile(profile)
    chosen = parse_setups(cfg["setups"] if setups is None else setups)
    Ls = validate_lengths(cfg["lengths"] if lengths is None else lengths)
    anchors = cfg.get("anchors", DECADES_DMIN_MEAN)
    tasks = []
    for L in Ls:
        for s in chosen:
            if s.name not in anchors or L not in anchors[s.name]:
                where = "; ".join(f"{k} at L = {', '.join(str(x) for x in v)}"
                                  for k, v in anchors.items())
                raise ExperimentError(
                    f"this acceptance design is registered for {where}; got {s.name} at "
                    f"L = {L}")
            ws = tuple(design_widths(anchors[s.name][L], L, cfg["factors"]))
            n = cfg["draws_small"] if L < cfg["draws_switch_L"] else cfg["draws_large"]
            for t in range(cfg["targets"]):
                tasks.append(AcceptanceTask(s, L, t, ws, n, tuple(sorted(cfg["extend"].items()))))
    return tasks


def count_accepted(engine: FastEngine, d, n_draws, root_seed, key, *, start=0,
                   warm=False) -> tuple[int, int]:
    """Decide ``n_draws`` draws at width ``d`` (all of them: no stop at a success); return
    ``(successes, stage-1 rejections)``. Draw ``i`` uses ``draw_generator(root_seed, key + (d,
    i))``; the partial set starts small and grows after the first draw that survives stage 1,
    as in :meth:`~sattn.experiments.engine.FastEngine.level` (this changes the cost, never the
    law of a decision).

    ``start``, ``warm``: the draws ``start, ..., start + n_draws - 1`` of the width, where
    ``warm`` says whether one of the draws before ``start`` survived stage 1. Counting a width in
    consecutive runs this way gives the counts of counting it at once.
    """
    fraction = engine.partial_fraction if warm else engine.probe_fraction
    succ = s1 = 0
    for i in range(start, start + n_draws):
        out = engine.draw(d, draw_generator(root_seed, tuple(key) + (d, i)), fraction=fraction)
        if out.stage == "stage1":
            s1 += 1
        else:
            fraction = engine.partial_fraction
        succ += bool(out.ok)
    return succ, s1


def _curve_engine(task: AcceptanceTask) -> FastEngine:
    """The fast engine of a curve's target (the decades experiment's target ``task.target``)."""
    return FastEngine(task.target_task().sample_target(), task.setup.eps1, task.setup.eps2)


def run_acceptance_task(task: AcceptanceTask) -> dict:
    """Measure one curve with the fast engine, in this process; return its record
    (JSON-serialisable). The same levels as :func:`reproduce_acceptance`, which stores each
    width as it is measured (:func:`run_acceptance_level`)."""
    if not isinstance(task, AcceptanceTask):
        raise TypeError(f"task must be an AcceptanceTask (from acceptance_tasks), got "
                        f"{type(task).__name__}")
    t0, c0 = time.perf_counter(), time.process_time()
    rows = {}
    with one_blas_thread():
        eng = _curve_engine(task)

        def count(d):
            succ, s1 = count_accepted(eng, d, task.draws, task.root_seed, task.draw_key())
            rows[d] = s1
            return (task.draws, succ)
        counts = measure_curve(list(task.widths), task.L, dict(task.rule), count)
    levels = [[d, counts[d][0], counts[d][1], rows[d]] for d in sorted(counts)]
    return {"params": task.params(), "result": {"levels": levels},
            "seconds": round(time.perf_counter() - t0, 3),
            "cpu_seconds": round(time.process_time() - c0, 3), "peak_rss_mib": _peak_rss_mib()}


def run_acceptance_level(level: AcceptanceLevel) -> dict:
    """Decide the draws of one part of one width (:func:`count_accepted`); return its record:
    ``result`` = ``[d, start, count, successes, stage-1 rejections]``."""
    if not isinstance(level, AcceptanceLevel):
        raise TypeError(f"level must be an AcceptanceLevel, got {type(level).__name__}")
    t0, c0 = time.perf_counter(), time.process_time()
    task = level.curve
    with one_blas_thread():
        succ, s1 = count_accepted(_curve_engine(task), level.d, level.count, task.root_seed,
                                  task.draw_key(), start=level.start, warm=level.warm)
    return {"params": level.params(),
            "result": [level.d, level.start, level.count, succ, s1],
            "seconds": round(time.perf_counter() - t0, 3),
            "cpu_seconds": round(time.process_time() - c0, 3), "peak_rss_mib": _peak_rss_mib()}


def _widths_so_far(task: AcceptanceTask, done: list) -> dict:
    """``{d: [draws, successes, stage-1 rejections, warm]}`` from the records of a curve's parts
    (the draws decided so far at each width, which run from 0 without a gap)."""
    by_d: dict = {}
    for rec in sorted((r["result"] for r in done), key=lambda x: (x[0], x[1])):
        d, start, n, succ, s1 = rec
        cur = by_d.setdefault(d, [0, 0, 0, False])
        if start != cur[0]:
            raise StoreError(f"the stored parts of {task.task_id} at width {d} leave a gap: "
                             f"draws from {start} after {cur[0]} draws; delete the folder "
                             f"of its parts to recompute the curve")
        cur[0] += n
        cur[1] += succ
        cur[2] += s1
        cur[3] = cur[3] or s1 < n
    return by_d


def _next_levels(task: AcceptanceTask, done: list) -> list[AcceptanceLevel]:
    """The parts ``task`` measures next, given the records of those it has: the next
    :func:`draws_per_part` draws of each width that :func:`next_widths` asks for."""
    by_d = _widths_so_far(task, done)
    counts = {d: (n, succ) for d, (n, succ, _, _) in by_d.items() if n == task.draws}
    parts = []
    for d in next_widths(list(task.widths), task.L, dict(task.rule), counts):
        n, _, _, warm = by_d.get(d, (0, 0, 0, False))
        parts.append(AcceptanceLevel(task, d, n, min(draws_per_part(task.L), task.draws - n), warm))
    return parts


def _curve_from_levels(task: AcceptanceTask, done: list) -> dict:
    """A curve's record from its parts' records: one level ``[d, draws, successes, stage-1
    rejections]`` per width, its seconds (wall) and CPU seconds the sums of theirs, its peak memory
    the largest. Parts stored before parts recorded their CPU time have none; their number is
    ``parts_without_cpu_seconds`` (absent when every part has it), so the CPU sum is then a lower
    bound of the curve's."""
    by_d = _widths_so_far(task, done)
    peaks = [r.get("peak_rss_mib") for r in done if r.get("peak_rss_mib") is not None]
    cpu = [r["cpu_seconds"] for r in done if r.get("cpu_seconds") is not None]
    rec = {"params": task.params(),
           "result": {"levels": [[d, n, succ, s1] for d, (n, succ, s1, _) in sorted(by_d.items())]},
           "seconds": round(sum(r["seconds"] for r in done), 3),
           "cpu_seconds": round(sum(cpu), 3) if cpu else None,
           "peak_rss_mib": max(peaks) if peaks else None}
    if len(cpu) < len(done):
        rec["parts_without_cpu_seconds"] = len(done) - len(cpu)
    return rec


def _task_cost(payload: dict) -> dict:
    """What a curve's record says it cost: wall seconds, CPU seconds (``None`` for a record
    made before CPU time was recorded), peak memory, and the parts without a CPU time if any."""
    cost = {"seconds": payload["seconds"], "cpu_seconds": payload.get("cpu_seconds"),
            "peak_rss_mib": payload.get("peak_rss_mib")}
    if payload.get("parts_without_cpu_seconds"):
        cost["parts_without_cpu_seconds"] = payload["parts_without_cpu_seconds"]
    return cost


def _cpu_total(payloads) -> dict:
    """The CPU seconds of the curves' records added up, with how many curves and parts had none
    (so the sum is a lower bound unless both are 0)."""
    total, curves_without, parts_without = 0.0, 0, 0
    for p in payloads:
        if p.get("cpu_seconds") is None:
            curves_without += 1
        else:
            total += p["cpu_seconds"]
        parts_without += p.get("parts_without_cpu_seconds", 0)
    return {"seconds": round(total, 3), "curves_without": curves_without,
            "parts_without": parts_without}


def _peak_rss_mib() -> float:
    """The peak resident memory of this process so far, in MiB (an upper bound of one task's
    when a worker ran several)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2 ** 20 if sys.platform == "darwin" else 2 ** 10), 1)


ACCEPTANCE_COLUMNS = ["setup", "L", "target", "d", "draws", "successes"]


def reproduce_acceptance(*, profile="quick", setups=None, lengths=None, jobs=1, out=None,
                         progress=True, compute=True) -> dict:
    """Compute (or resume) the acceptance curves; write ``<out>/acceptance.csv`` + manifest.

    Each curve is measured in parts (``sattn.runs.runner.run_by_parts``), each part
    :func:`draws_per_part` consecutive draws at one width: every finished part is stored at once,
    so an interrupted run loses at most the parts in progress, and rerunning the same command
    resumes; a finished curve is stored whole and its parts' files removed. The widths of all
    unfinished curves run in parallel on ``jobs`` workers (the parts of one width in order).

    Parameters
    ----------
    profile : {"quick", "paper"}
    setups, lengths : optional restrictions (registered settings and lengths only).
    jobs : int, default 1
        Parallel workers (joblib; ``-1`` for all cores). Results do not depend on it.
    out : path, optional
        Output folder (default: ``data`` for "paper", ``data/quick`` for "quick").
    progress : bool, default True
    compute : bool, default True
        False writes the CSV and manifest from the curves already in the store and computes
        nothing; the manifest lists the missing curves under ``missing`` (a run stopped early
        can publish what it has; rerunning with ``compute=True`` completes it).

    Returns
    -------
    dict
        The manifest written.

    Raises
    ------
    ExperimentError
        Unknown profile, setting or length; bad ``jobs``.
    StoreError
        Corrupted stored results or manifest; another run holds the folder's lock.
    """

    cfg = acceptance_profile(profile)
    check_bool("progress", progress)
    check_bool("compute", compute)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0 or jobs < -1:
        raise ExperimentError(f"jobs must be a positive integer or -1, got {jobs!r}")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (str or os.PathLike), got {type(out).__name__}")
    tasks = acceptance_tasks(cfg, setups=setups, lengths=lengths)
    out = Path(out) if out is not None else Path(cfg["out"])
    name = [k for k, v in ACCEPTANCE_PROFILES.items() if v is cfg]
    if not compute and not any((out / "tasks" / "acceptance").glob("*.json")):
        # refused before the folder is touched: there is nothing to publish
        raise ExperimentError(f"no finished curve in {out / 'tasks' / 'acceptance'}: nothing to "
                              "write; run without --no-compute first")
    with OutputLock(out) as lock:
        store = TaskStore(out / "tasks" / "acceptance")
        previous, missing = previous_manifest(out, "acceptance", store)
        if compute:
            run = run_by_parts(tasks, _next_levels, run_acceptance_level, _curve_from_levels,
                               out, "acceptance", lock, desc="acceptance widths", jobs=jobs,
                               progress=progress, cost=lambda lv: lv.curve.L * lv.d)
        else:
            run = run_in_store(tasks, None, out, "acceptance", lock, desc="acceptance",
                               jobs=jobs, progress=progress)
        if not run.payloads:            # only without compute: nothing stored, nothing computed
            raise ExperimentError(f"no finished curve in {store.root}: nothing to write; run "
                                  "without --no-compute first")
        payloads, computed, reused, wall = run.payloads, run.computed, sorted(run.reused), run.wall
        missing_now = [t.task_id for t in tasks if t.task_id not in payloads]
        tasks = [t for t in tasks if t.task_id in payloads]
        rows = []
        for t in tasks:
            for d, n, s, _ in payloads[t.task_id]["result"]["levels"]:
                rows.append([t.setup.name, t.L, t.target, d, n, s])
        csv_bytes = write_csv(out / "acceptance.csv", ACCEPTANCE_COLUMNS, rows)
        manifest = {
            "figure": "acceptance",
            "profile": name[0] if name else "custom",
            "description": cfg["description"],
            "protocol": ("per (setting, L, target): the decades experiment's target; the "
                         "registered widths round(m f) for the factors f (m = the decades mean "
                         "first-success width), then the extension rule; at each width `draws` "
                         "independent Stiefel draws of Algorithm 1 (fast engine), every draw "
                         "decided (no stop at a success); CSV: one row per (setting, L, "
                         "target, width)"),
            "registration": cfg.get("registration", "docs/registration/acceptance.md"),
            "design": {k: v for k, v in cfg.items()
                       if k not in ("out", "description", "registration")},
            "setups": {t.setup.name: t.setup.params() for t in tasks},
            "lengths": sorted({t.L for t in tasks}),
            "seeds": {"root_seed": ROOT_SEED,
                      "scheme": ("numpy SeedSequence(root_seed, spawn_key=key); target t of "
                                 "(setup, L): key = (setup_key, L, 2, t) (the decades targets); "
                                 "draw i at width d: key = (setup_key, L, 4, t, d, i)")},
            "machine": machine(),
            "versions": versions(),
            "jobs": jobs,
            "wall_seconds_this_run": round(wall, 3),
            "wall_seconds_all_runs": round(wall + previous.get("wall_seconds_all_runs", 0.0), 3),
            "runs": previous.get("runs", 0) + 1,
            "task_seconds_total": round(sum(payloads[t.task_id]["seconds"] for t in tasks), 3),
            "task_cpu_seconds_total": _cpu_total(payloads[t.task_id] for t in tasks),
            "per_task": {t.task_id: _task_cost(payloads[t.task_id]) for t in tasks},
            "computed": sorted(computed),
            "reused": reused,
            "recovered": sorted(os.path.splitext(n)[0] for n in missing),
            "missing": sorted(missing_now),
            "command": command_line(),
            "checksums": {
                "csv": sha256_bytes(csv_bytes),
                "tasks": {store.path(t).name: sha256_file(store.path(t)) for t in tasks},
            },
        }
        return write_manifest(out / "acceptance_manifest.json", manifest)


def load_acceptance(data_dir="data", *, verify=True) -> list[dict]:
    """Rows of ``<data_dir>/acceptance.csv`` (``setup, L, target, d, draws, successes``) after
    checking the CSV against its manifest.

    Raises
    ------
    StoreError
        Missing files, a corrupted manifest or a checksum mismatch.
    """
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path, got {type(data_dir).__name__}")
    check_bool("verify", verify)
    cpath = Path(data_dir) / "acceptance.csv"
    mpath = Path(data_dir) / "acceptance_manifest.json"
    for p in (cpath, mpath):
        if not p.exists():
            raise StoreError(f"{p} is missing; run `python -m sattn reproduce acceptance` first")
    man = read_manifest(mpath, remedy="restore it (e.g. from git) or rerun `python -m sattn "
                                      "reproduce acceptance`.")
    if verify and sha256_file(cpath) != man.get("checksums", {}).get("csv"):
        raise StoreError(f"{cpath} does not match its manifest checksum")
    return read_acceptance_csv(cpath)


def read_acceptance_csv(path) -> list[dict]:
    """Rows of an acceptance CSV (the columns of :func:`load_acceptance`), integers parsed; no
    checksum is verified here (the callers that know one do)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for c in ("L", "target", "d", "draws", "successes"):
            r[c] = int(r[c])
    return rows
