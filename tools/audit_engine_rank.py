"""Which stored engine tasks drew from a dependent set of stage-1 candidates.

Engine version ``fast-2`` (:class:`~sattn.experiments.engine.FastEngine` with
``span_basis=False``, its default until ``fast-3``) factorizes the vectors of its stage-1
candidates with LAPACK's QR even when they are linearly dependent (two candidates with equal rows
of ``B``, say); the part of the draw that such a factorization leaves free then comes from
rounding noise, and differs between kernel sets. ``span_basis=True``, version ``fast-3`` (the
default now), takes a defined basis of their span instead, and computes exactly what ``fast-2``
computes whenever the candidates are independent.

So a stored ``fast-2`` task is also a ``fast-3`` result when none of its draws met a dependent
candidate set. This tool decides that for every stored ``fast-2`` task of the engine experiments
(``fig3``, ``fig4``, ``decades``, ``acceptance``) by replaying stage 1 of each recorded draw, where
the candidates are chosen: the levels and draw counts come from the task's record, the draws from
its seed keys, and the partial set switches after the first draw that survives stage 1, as in
:meth:`sattn.experiments.engine.FastEngine.level`. Stage 2 (completion and screening, most of the
cost) is not run. The replay's count of stage-1 rejections must equal the recorded one at every
width without a dependent draw, or the task is reported as not replayed faithfully.

Each draw depends only on its own seed key and on whether an earlier draw of the same width
survived stage 1, so the widths without a dependent draw are the same in both versions. For a
task with dependent draws, the widths that hold them are recomputed in full by the current engine
(stage 2 included, with ``span_basis=True``) and compared with the record: when every one is
equal, the whole task is (the search over widths sees the same records), and it too can be
carried over.

Targets with ``k = 1`` put at most one nonzero in each column, so distinct rows of ``B`` have
disjoint supports and are always independent; those tasks are checked from the target alone.

Usage (from the repository root)::

    python tools/audit_engine_rank.py [--jobs N] [--data data] [--only fig3,...]

The output is a JSON-lines file, one record per task, written as tasks finish; a rerun skips the
tasks already recorded (the audit resumes).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sattn.experiments.acceptance.design import count_accepted  # noqa: E402
from sattn.experiments.engine import FastEngine  # noqa: E402
from sattn.experiments.target import draw_generator  # noqa: E402
from sattn.patterns.sparse import sample_sparse  # noqa: E402
from sattn.runs.host import one_blas_thread  # noqa: E402

EXPERIMENTS = ("fig3", "fig4", "decades", "acceptance")


def _target(p):
    return sample_sparse(p["L"], p["k"], p["gamma"], draw_generator(p["root_seed"],
                         tuple(p["target_key"])), as_csr=True)


def audit_task(path: str) -> dict:
    """Replay stage 1 of every recorded draw of one stored task (see the module docs)."""
    t0 = time.perf_counter()
    payload = json.loads(Path(path).read_text())["payload"]
    p, levels = payload["params"], payload["result"]["levels"]
    out = {"task": Path(path).name, "experiment": p["figure"], "k": p["k"], "L": p["L"],
           "engine": p["engine"], "draws": int(sum(lv[1] for lv in levels))}
    A = _target(p)
    if p["k"] == 1:
        cols = A.indices
        out.update(method="target", haar_steps=None, dependent_draws=0,
                   faithful=bool(np.unique(cols).size == cols.size),
                   seconds=round(time.perf_counter() - t0, 3))
        return out
    with one_blas_thread():
        eng = FastEngine(A, p["eps1"], p["eps2"], span_basis=True)
        haar = dep = 0
        mismatched = []
        dependent_at = []
        for lv in levels:
            d, n, s1_stored = lv[0], lv[1], lv[3]
            fraction, s1 = eng.probe_fraction, 0
            for i in range(n):
                rng = draw_generator(p["root_seed"], tuple(p["draw_key"]) + (d, i))
                dr = eng._partial_draw(d, rng, eng._partial(d, fraction))
                fail = eng._stage1(dr, rng)
                haar += dr.rest_checked
                if dr.dependent:
                    dep += 1
                    dependent_at.append([d, i])
                if fail is not None:
                    s1 += 1
                else:
                    fraction = eng.partial_fraction
            if s1 != s1_stored:
                mismatched.append(d)
        recomputed = []
        dep_widths = {d for d, _ in dependent_at}
        faithful = set(mismatched) <= dep_widths     # a width with a dependent draw is
        for d in sorted(dep_widths):                  # recomputed in full below
            (lv,) = [lv for lv in levels if lv[0] == d]
            recomputed.append([lv, _level_record(eng, p, d, lv)])
    out.update(method="replay", haar_steps=haar, dependent_draws=dep,
               dependent_at=dependent_at, stage1_mismatch_at=mismatched,
               faithful=bool(faithful),
               recomputed_levels=recomputed,
               recomputed_equal=all(a == b for a, b in recomputed),
               seconds=round(time.perf_counter() - t0, 3))
    return out


def _level_record(eng, p, d, stored):
    """The record of width ``d`` recomputed in full by the current engine, in the stored form."""
    if p["figure"] == "acceptance":
        succ, s1 = count_accepted(eng, d, stored[1], p["root_seed"], p["draw_key"])
        return [d, stored[1], succ, s1]
    r = eng.level(d, p["n_draws"], p["root_seed"], p["draw_key"])
    return [r.d, r.draws, int(r.ok), r.stage1_rejects, r.screen_rejects, r.confirmations]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--data", default="data",
                    help="the data folder whose tasks/ are audited (data, or data/q1)")
    ap.add_argument("--out", default=None,
                    help="the JSON-lines output (default: <data>/engine_rank_audit.jsonl)")
    ap.add_argument("--only", default=",".join(EXPERIMENTS),
                    help="comma-separated experiments among " + ", ".join(EXPERIMENTS))
    args = ap.parse_args(argv)
    only = args.only.split(",")
    bad = [e for e in only if e not in EXPERIMENTS]
    if bad:
        ap.error(f"unknown experiment(s) {bad}; expected some of {list(EXPERIMENTS)}")
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    data = Path(args.data)
    out = Path(args.out) if args.out else data / "engine_rank_audit.jsonl"
    done = set()
    if out.exists():
        done = {json.loads(line)["task"] for line in out.read_text().splitlines() if line}
    paths = [str(f) for e in only for f in sorted((data / "tasks" / e).glob("*.json"))]
    todo = [f for f in paths if Path(f).name not in done]
    # longest first (by the recorded task time), so that the pool ends together
    todo.sort(key=lambda f: -json.loads(Path(f).read_text())["payload"]["seconds"])
    print(f"{len(paths)} tasks, {len(paths) - len(todo)} already audited, {len(todo)} to go",
          flush=True)
    with out.open("a") as fh, mp.get_context("spawn").Pool(args.jobs) as pool:
        for j, rec in enumerate(pool.imap_unordered(audit_task, todo), 1):
            fh.write(json.dumps(rec, sort_keys=True) + "\n")
            fh.flush()
            print(f"[{j}/{len(todo)}] {rec['task']}: {rec['dependent_draws']} dependent, "
                  f"faithful={rec['faithful']}, {rec['seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
