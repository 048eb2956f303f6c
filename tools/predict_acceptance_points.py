"""The exact row model's probability at every measured point of the acceptance curves.

Usage: PYTHONPATH=. python tools/predict_acceptance_points.py [DATA_DIR]

Writes DATA_DIR/acceptance_model.csv (setup, L, target, d, p, se_log_p, expected_failures,
max_rel_err, n_samples) and
DATA_DIR/acceptance_model_manifest.json (command, versions, seed, samples, wall time, checksum).
Only the points' coordinates are read from acceptance.csv, never the counts. Resumable: points
already in the CSV are kept.
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

from sattn.experiments.acceptance import load_acceptance
from sattn.experiments.prediction import row_exact
from sattn.experiments.acceptance.row_model_test import point_predictions

N_IS = 1 << 16
SEED = 0
# Points where some row type's failure probability has a relative error above RESOLUTION are
# recomputed with N_REFINE samples (seed SEED_REFINE): the registration's resolution requirement
# decides the sample size, not the other way round.
RESOLUTION = 0.25
N_REFINE = 1 << 20
SEED_REFINE = 1
FIELDS = ["setup", "L", "target", "d", "p", "se_log_p", "expected_failures", "max_rel_err",
          "n_samples"]


def main(data_dir="data"):
    data = Path(data_dir)
    out = data / "acceptance_model.csv"
    done = {}
    if out.exists():
        for r in csv.DictReader(out.open()):
            done[(r["setup"], int(r["L"]), int(r["target"]), int(r["d"]))] = r
    rows = [{k: r[k] for k in ("setup", "L", "target", "d")} for r in load_acceptance(data)]
    t0 = time.time()
    todo = [r for r in rows if (r["setup"], r["L"], r["target"], r["d"]) not in done]
    # by setting and length, so that the importance samples of a width are reused
    for (setup, L) in sorted({(r["setup"], r["L"]) for r in todo}, key=lambda x: (x[1], x[0])):
        part = [r for r in todo if (r["setup"], r["L"]) == (setup, L)]
        for p in point_predictions(part, n_samples=N_IS, seed=SEED):
            done[(p["setup"], p["L"], p["target"], p["d"])] = _record(p, N_IS)
        _write(out, rows, done)
        print(f"{setup} L = {L}: {len(part)} points ({time.time() - t0:.0f} s)", flush=True)
    _write(out, rows, done)
    refine = [r for r in rows
              if float(done[(r["setup"], r["L"], r["target"], r["d"])]["max_rel_err"]) > RESOLUTION
              and int(done[(r["setup"], r["L"], r["target"], r["d"])].get("n_samples") or N_IS) < N_REFINE]
    for p in point_predictions(refine, n_samples=N_REFINE, seed=SEED_REFINE):
        done[(p["setup"], p["L"], p["target"], p["d"])] = _record(p, N_REFINE)
        _write(out, rows, done)
        print(f"refined {p['setup']} L = {p['L']} t = {p['target']} d = {p['d']}: relative "
              f"error {p['max_rel_err']:.3f} ({time.time() - t0:.0f} s)", flush=True)
    man = {"what": "the exact row model's p(d) at every point of acceptance.csv (no counts read)",
           "command": "PYTHONPATH=. python tools/predict_acceptance_points.py data",
           "method": "exact: quadrature for one-nonzero rows, importance sampling "
                     f"(sigma = {row_exact.IS_SIGMA}) otherwise",
           "importance_samples": N_IS, "seed": SEED,
           "refined": f"points with a row type's relative error above {RESOLUTION}: "
                      f"{N_REFINE} samples, seed {SEED_REFINE}",
           "versions": {"python": platform.python_version(), "numpy": np.__version__,
                        "scipy": scipy.__version__},
           "wall_seconds_last_run": round(time.time() - t0, 1),
           "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}
    (data / "acceptance_model_manifest.json").write_text(json.dumps(man, indent=1) + "\n")


def _record(p, n):
    return {"setup": p["setup"], "L": p["L"], "target": p["target"], "d": p["d"],
            "p": repr(float(p["p"])), "se_log_p": repr(float(p["se_log_p"])),
            "expected_failures": repr(float(p["expected_failures"])),
            "max_rel_err": repr(float(p["max_rel_err"])), "n_samples": n}


def _write(out, rows, done):
    tmp = out.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in rows:
            key = (r["setup"], r["L"], r["target"], r["d"])
            if key in done:
                w.writerow({k: done[key][k] for k in FIELDS})
    tmp.replace(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
