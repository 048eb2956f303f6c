"""Write the exact row model's d_50 predictions for the out-of-sample lengths (registration).

Usage: PYTHONPATH=. python tools/predict_exact_d50.py [OUT.json]

For each setting and length: the model's d_50 of each acceptance target (probit interpolation of
the exact model's p(d) between integer widths, sattn.experiments.acceptance.row_model_test),
their mean, and the numerical error. Nothing here reads a measurement.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy

import sattn
from sattn.experiments.prediction import row_exact
from sattn.experiments.acceptance.row_model_test import setting_d50

SETTINGS = ["k1-g1-e3-0.9", "k2-g1-e7-0.5", "k2-g2-e7-0.5"]
LENGTHS = [65536, 131072]
N_IS = 1 << 19          # importance samples of the block for rows with k >= 2
SEED = 0


def main(out):
    t0 = time.time()
    preds = []
    for setup in SETTINGS:
        start = None
        for L in LENGTHS:
            t = time.time()
            r = setting_d50(setup, L, n_samples=N_IS, seed=SEED, start=start)
            start = int(r["d50"])
            r["seconds"] = round(time.time() - t, 1)
            print(f"{setup} L = {L}: d50 = {r['d50']:.3f} +- {r['err_d50']:.3f} "
                  f"({r['seconds']} s)", flush=True)
            preds.append(r)
    doc = {
        "what": "the exact row model's d_50 (width where one draw is accepted with probability "
                "1/2; mean over the acceptance experiment's targets 0, 1, 2), registered before "
                "the acceptance curves at these lengths are measured",
        "model": "book's row model (assumptions A1, A2, A4); rows with one nonzero by "
                 "Gauss-Legendre quadrature over the Beta law of the projected diagonal, larger "
                 "supports by importance sampling of the block (defensive normal mixture, "
                 f"sigma = {row_exact.IS_SIGMA})",
        "d50_definition": "per target: probit(p) interpolated linearly between the integer "
                          "widths around p = 1/2; per setting: mean over targets",
        "err_d50": "numerical error of d50: error of ln p (quadrature: rule difference; "
                   "importance sampling: one standard error) divided by the slope of ln p "
                   "between the two widths; targets' errors averaged (fully correlated)",
        "command": "PYTHONPATH=. python tools/predict_exact_d50.py "
                   "data/registration/predictions_exact_model.json",
        "seed": SEED, "importance_samples": N_IS, "quadrature_order": "16 and 32 nodes per panel",
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "scipy": scipy.__version__, "sattn": getattr(sattn, "__version__", "?")},
        "wall_seconds": round(time.time() - t0, 1),
        "predictions": preds,
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/registration/predictions_exact_model.json")
