"""The exact row model's predicted d_min for every task of an experiment (fig3 or decades).

Usage: PYTHONPATH=. python tools/predict_experiment_dmin.py [DATA_DIR [EXPERIMENT]]

EXPERIMENT is "decades" (default) or "fig3". Writes DATA_DIR/<EXPERIMENT>_model.csv (the columns
of sattn.experiments.prediction.checks.DMIN_FIELDS) and DATA_DIR/<EXPERIMENT>_model_manifest.json
(command, versions, seed, samples, wall time, checksum). Only the tasks' targets, ladders and
budgets are used, never the measured d_min. Resumable: tasks already in the CSV are kept.
"""

from __future__ import annotations

import csv
import hashlib
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy

from sattn.experiments.prediction import checks, row_exact

N_IS = 1 << 16
SEED = 0
# Tasks where, at the predicted width, some row type's failure probability has a relative error
# above RESOLUTION are recomputed with N_REFINE samples (seed SEED_REFINE), as for the points of
# the acceptance curves.
RESOLUTION = 0.25
N_REFINE = 1 << 18
SEED_REFINE = 1


def main(data_dir="data", experiment="decades"):
    if experiment not in checks.STORED_EXPERIMENTS:
        raise SystemExit(f"EXPERIMENT must be one of {checks.STORED_EXPERIMENTS}, "
                         f"got {experiment!r}")
    data = Path(data_dir)
    out = data / f"{experiment}_model.csv"
    done = {}
    if out.exists():
        for r in csv.DictReader(out.open()):
            done[(r["setup"], int(r["L"]), int(r["target"]))] = r
    t0 = time.time()

    def keep(rec):
        done[(rec["setup"], rec["L"], rec["target"])] = {
            k: (repr(float(v)) if isinstance(v, float) else v) for k, v in rec.items()}
        _write(out, done)
        print(f"{rec['setup']} L = {rec['L']} target {rec['target']}: d_min {rec['median']} "
              f"({time.time() - t0:.0f} s)", flush=True)

    checks.dmin_predictions(experiment, n_samples=N_IS, seed=SEED, done=done, progress=keep)
    refine = [k for k, r in done.items()
              if float(r["max_rel_err"]) > RESOLUTION and int(r["n_samples"]) < N_REFINE]
    if refine:
        checks.dmin_predictions(experiment, n_samples=N_REFINE, seed=SEED_REFINE, only=refine,
                                progress=keep)
    _write(out, done)
    man = {"what": "the exact row model's predicted d_min (median of the ladder search) for "
                   f"every task of the {experiment} experiment (no measured d_min read)",
           "command": f"PYTHONPATH=. python tools/predict_experiment_dmin.py data {experiment}",
           "method": "exact: quadrature for one-nonzero rows, importance sampling "
                     f"(sigma = {row_exact.IS_SIGMA}) otherwise",
           "importance_samples": N_IS, "seed": SEED, "tasks": len(done),
           "refined": f"tasks with a row type's relative error above {RESOLUTION} at the "
                      f"predicted width: {N_REFINE} samples, seed {SEED_REFINE}",
           "versions": {"python": platform.python_version(), "numpy": np.__version__,
                        "scipy": scipy.__version__},
           "wall_seconds_last_run": round(time.time() - t0, 1),
           "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}
    (data / f"{experiment}_model_manifest.json").write_text(json.dumps(man, indent=1) + "\n")


def _write(out, done):
    tmp = out.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, checks.DMIN_FIELDS)
        w.writeheader()
        for key in sorted(done, key=lambda k: (k[0], k[1], k[2])):
            w.writerow({k: done[key][k] for k in checks.DMIN_FIELDS})
    tmp.replace(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
