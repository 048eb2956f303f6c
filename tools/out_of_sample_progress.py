"""How far the out-of-sample run has come: draws decided per curve, CPU time spent, a lower bound
of what is left.

Reads what the resumable store holds under ``data/out_of_sample/tasks/`` (whole curves and parts
of curves) and prints, per registered curve, the widths begun, the draws decided out of those the
known widths need (64 each), and the CPU seconds recorded. What is left is estimated from each
width's own CPU seconds per draw so far; widths that the extension rule has not asked for yet
are not counted, so the estimate is a lower bound. Computes nothing. Run from the repository root:

    PYTHONPATH=. python tools/out_of_sample_progress.py [DATA_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sattn.experiments.acceptance.design import acceptance_tasks

ROOT = Path(__file__).resolve().parents[1]


def _payload(path: Path) -> dict:
    return json.loads(path.read_text())["payload"]


def progress(out: Path) -> list[dict]:
    """One record per registered curve: ``curve``, ``complete``, ``widths`` (``{d: [draws,
    accepted, cpu_seconds, draws with CPU time]}``), ``draws``, ``needed``, ``cpu_seconds``,
    ``left`` (CPU seconds, lower bound: each begun width's draws still to decide times its CPU
    seconds per draw so far) and ``untimed`` (draws still to decide at begun widths whose parts
    have no CPU time, not in ``left``)."""
    recs = []
    for task in acceptance_tasks("out-of-sample"):
        whole = out / "tasks" / "acceptance" / f"{task.task_id}.json"
        widths = {}
        if whole.exists():
            p = _payload(whole)
            for d, n, s, _ in p["result"]["levels"]:
                widths[d] = [n, s, None]
            recs.append({"curve": task.task_id, "complete": True, "widths": widths,
                         "draws": sum(w[0] for w in widths.values()),
                         "needed": task.draws * len(widths), "cpu_seconds": p.get("cpu_seconds"),
                         "seconds": p["seconds"], "left": 0.0, "untimed": 0})
            continue
        cpu, missing_cpu = 0.0, False
        for f in sorted((out / "tasks" / "acceptance_parts" / task.task_id).glob("*.json")):
            p = _payload(f)
            d, _, n, s, _ = p["result"]
            w = widths.setdefault(d, [0, 0, 0.0, 0])     # draws, accepted, CPU s, draws timed
            w[0] += n
            w[1] += s
            if p.get("cpu_seconds") is None:
                missing_cpu = True
            else:
                w[3] += n
                w[2] = (w[2] or 0.0) + p["cpu_seconds"]
            cpu += p.get("cpu_seconds") or 0.0
        known = set(task.widths) | set(widths)
        left, untimed = 0.0, 0
        for d in known:
            n, _, c, timed = widths.get(d, [0, 0, 0.0, 0])
            if n == 0:
                continue                      # not begun: no cost measured yet
            if timed == 0:
                untimed += task.draws - n     # only parts without CPU time at this width
                continue
            left += (task.draws - n) * c / timed
        recs.append({"curve": task.task_id, "complete": False, "widths": widths,
                     "draws": sum(w[0] for w in widths.values()),
                     "needed": task.draws * len(known), "cpu_seconds": round(cpu, 1),
                     "cpu_incomplete": missing_cpu, "left": left, "untimed": untimed})
    return recs


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else ROOT / "data" / "out_of_sample"
    recs = progress(out)
    print(f"{'curve':44s} {'state':9s} {'widths':>6s} {'draws':>13s} {'CPU s':>9s} "
          f"{'left (>=)':>14s}")
    for r in recs:
        cpu = "-" if r["cpu_seconds"] is None else f"{r['cpu_seconds']:.0f}"
        if not r["complete"] and r.get("cpu_incomplete"):
            cpu += "+"
        left = f"{r['left']:.0f}" + (f" +{r['untimed']}d" if r["untimed"] else "")
        print(f"{r['curve']:44s} {'complete' if r['complete'] else 'partial':9s} "
              f"{len(r['widths']):6d} {r['draws']:6d}/{r['needed']:<6d} {cpu:>9s} {left:>14s}")
    done = sum(r["draws"] for r in recs)
    need = sum(r["needed"] for r in recs)
    print(f"{sum(r['complete'] for r in recs)} of {len(recs)} curves complete; {done} of {need} "
          "draws of the widths known so far decided")
    print(f"CPU time left, at least: {sum(r['left'] for r in recs):.0f} s, and "
          f"{sum(r['untimed'] for r in recs)} draws at widths whose parts have no CPU time "
          "('+': parts without CPU time are not in a curve's CPU seconds). Widths the extension "
          "rule has not asked for yet are not counted.")


if __name__ == "__main__":
    main(sys.argv[1:])
