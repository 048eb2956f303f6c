"""Recompute a sample of the shipped tasks and compare them with the stored ones, byte for byte.

Usage::

    python tools/recompute_tasks.py                      # the default sample, a few minutes
    python tools/recompute_tasks.py --per-experiment 6 --max-seconds 30

The data under ``data/tasks/`` were computed on one machine. They are portable if every task
recomputed on another machine (another CPU, BLAS build, kernel set or thread count) gives the
same record. This script picks, for each experiment (fig3, fig4, decades, acceptance, width-bits),
``--per-experiment`` stored tasks spread evenly over their run times (each stored d_min search and
acceptance curve contains the widths next to its threshold, where a decision is closest to a
tie), recomputes them with the checkout's ``sattn``, and compares the canonical JSON of each
record without its run times and peak memory. It prints one line per task and exits 1 on any
difference.

To check portability across BLAS kernel sets, run it by hand once per kernel set, e.g.
``OPENBLAS_CORETYPE=Prescott python tools/recompute_tasks.py`` (the README lists the sets tried);
the tests never set a kernel set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sattn.experiments.acceptance.design import acceptance_tasks, run_acceptance_task  # noqa: E402
from sattn.experiments.protocol import run_task  # noqa: E402
from sattn.experiments.setups import make_tasks  # noqa: E402
from sattn.frontier import frontier_tasks, run_frontier_task  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: Index of the run-time column in a width-bits row (``sattn.frontier.FRONTIER_COLUMNS``).
SECONDS_COLUMN = 10


def _experiments():
    """``name -> (tasks of the shipped profile, the function that computes one)``."""
    return {
        "fig3": (make_tasks("fig3", "paper"), run_task),
        "fig4": (make_tasks("fig4", "paper"), run_task),
        "decades": (make_tasks("decades", "paper"), run_task),
        "acceptance": (acceptance_tasks("paper"), run_acceptance_task),
        "width_bits": (frontier_tasks("paper"), run_frontier_task),
    }


VOLATILE = ("seconds", "cpu_seconds", "parts_without_cpu_seconds", "peak_rss_mib", "engine_audit")


def comparable(payload: dict) -> bytes:
    """The record without what measures the run rather than the result (its run time, an
    acceptance curve's CPU time and peak memory) and without the provenance of a task carried
    over from an older engine version, as canonical JSON."""
    p = {k: v for k, v in payload.items() if k not in VOLATILE}
    if "rows" in p:
        p["rows"] = [r[:SECONDS_COLUMN] + r[SECONDS_COLUMN + 1:] for r in p["rows"]]
    return json.dumps(p, sort_keys=True, separators=(",", ":")).encode()


def sample(tasks, folder: Path, per_experiment: int, max_seconds: float):
    """``per_experiment`` stored tasks spread evenly over the stored run times up to
    ``max_seconds`` (so the sample spans the lengths, from the cheapest task to the dearest one
    allowed)."""
    stored = []
    for task in tasks:
        path = folder / f"{task.task_id}.json"
        if path.is_file():
            payload = json.loads(path.read_bytes())["payload"]
            seconds = payload.get("seconds") or max(r[SECONDS_COLUMN] for r in payload["rows"])
            if seconds <= max_seconds:
                stored.append((seconds, task.task_id, task, payload))
    stored.sort(key=lambda s: (s[0], s[1]))
    if len(stored) <= per_experiment:
        return [(task, payload) for _, _, task, payload in stored]
    ranks = sorted({round(i * (len(stored) - 1) / (per_experiment - 1))
                    for i in range(per_experiment)}) if per_experiment > 1 else [0]
    return [stored[r][2:] for r in ranks]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-experiment", type=int, default=6,
                    help="tasks per experiment (default 6), spread over the stored run times")
    ap.add_argument("--max-seconds", type=float, default=15.0,
                    help="skip tasks whose stored run time exceeds this (default 15)")
    ap.add_argument("--data", default=str(ROOT / "data"), help="the data folder (default data/)")
    args = ap.parse_args(argv)
    if args.per_experiment < 1:
        ap.error(f"--per-experiment must be at least 1, got {args.per_experiment}")
    if args.max_seconds <= 0:
        ap.error(f"--max-seconds must be positive, got {args.max_seconds}")
    data = Path(args.data)
    if not (data / "tasks").is_dir():
        ap.error(f"{data / 'tasks'} is not a folder of stored tasks")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(not set)')} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(not set)')} "
          f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES', '(not set)')}")
    differ = checked = 0
    for name, (tasks, run) in _experiments().items():
        chosen = sample(tasks, data / "tasks" / name, args.per_experiment, args.max_seconds)
        if not chosen:
            print(f"{name}: no stored task within --max-seconds {args.max_seconds:g}")
            differ += 1
            continue
        for task, stored in chosen:
            t0 = time.perf_counter()
            same = comparable(run(task)) == comparable(stored)
            checked += 1
            differ += not same
            print(f"{name:<11} {task.task_id:<48} {'identical' if same else 'DIFFERS'} "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"{checked - differ} of {checked} recomputed tasks identical to the stored ones")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
