"""Run make targets one after the other and print each one's wall time: what the suite costs.

Usage::

    python tools/suite_times.py                       # the stages of make test, in its order
    python tools/suite_times.py test-fast book        # any targets
    python tools/suite_times.py --out times.json ...  # also write the times as JSON

``make test`` runs its stages through this script, so every run of it ends with the table (also
kept in ``_build/test_times.txt``). The first stage that fails stops the run (exit status 1) after
printing the times so far; the failing stage is marked. Times are wall-clock seconds of the whole
``make <stage>`` command, setup included, on whatever machine and load the run had.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_test_stages(makefile: str = os.path.join(ROOT, "Makefile")) -> list[str]:
    """The ``STAGES :=`` of the Makefile: the stages ``make test`` runs, in order."""
    with open(makefile, encoding="utf-8") as f:
        m = re.search(r"^STAGES\s*:=\s*(.+)$", f.read(), re.M)
    if not m:
        raise SystemExit(f"no 'STAGES :=' line in {makefile}")
    return m.group(1).split()


def run(stages: list[str], make: str = "make", cwd: str = ROOT) -> tuple[list[tuple[str, float, int]], float]:
    """Run ``make <stage>`` for each stage until one fails; return ((stage, seconds, exit status)
    for every stage run, total seconds)."""
    done = []
    start = time.perf_counter()
    for stage in stages:
        t0 = time.perf_counter()
        code = subprocess.call([make, "--no-print-directory", stage], cwd=cwd)
        done.append((stage, time.perf_counter() - t0, code))
        if code != 0:
            break
    return done, time.perf_counter() - start


def table(done: list[tuple[str, float, int]], total: float) -> str:
    width = max(len(s) for s, _, _ in done) if done else 5
    lines = [f"  {stage:<{width}}  {seconds:7.1f} s{'' if code == 0 else f'  FAILED (exit {code})'}"
             for stage, seconds, code in done]
    lines.append(f"  {'total':<{width}}  {total:7.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stages", nargs="*", help="make targets (default: the STAGES of make test)")
    ap.add_argument("--out", help="also write the times here as JSON")
    ap.add_argument("--keep", default=os.path.join(ROOT, "_build", "test_times.txt"),
                    help="where the table is kept (default: _build/test_times.txt)")
    args = ap.parse_args(argv)
    stages = args.stages or make_test_stages()
    unknown = [s for s in stages if not re.fullmatch(r"[\w.-]+", s)]
    if unknown:
        ap.error(f"not make target names: {unknown}")
    done, total = run(stages)
    text = table(done, total)
    print(f"stage times ({os.cpu_count()} CPUs):\n{text}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.keep)), exist_ok=True)
    with open(args.keep, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"stages": [{"stage": s, "seconds": round(t, 1), "exit": c} for s, t, c in done],
                       "total_seconds": round(total, 1), "cpus": os.cpu_count()}, f, indent=1)
            f.write("\n")
    failed = [s for s, _, c in done if c != 0]
    if failed or len(done) < len(stages):
        print(f"stopped at {failed[0]}; not run: {', '.join(stages[len(done):]) or 'none'}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
