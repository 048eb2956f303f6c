"""Write the machine-readable registration of the out-of-sample decision.

Computes, from the acceptance curves measured at L = 64 ... 32768 only, each fitted law's d_50 at
the registered new lengths with its covariance, under the primary per-curve summary and the two
secondary ones, and how the registered rule would decide if each law were true. Writes
``data/registration/out_of_sample.json``. Run from the repository root:

    PYTHONPATH=. python tools/register_out_of_sample.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sattn.experiments.acceptance import curves_by_setting, load_acceptance
from sattn.experiments.acceptance import out_of_sample as oos
from sattn.experiments.acceptance.design import ACCEPTANCE_PROFILES, OUT_OF_SAMPLE_ANCHOR
from sattn.experiments.acceptance.robust import analyse_setting_link

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    rows = load_acceptance(ROOT / "data")
    if max(r["L"] for r in rows) > 32768:
        raise SystemExit("the acceptance data already hold lengths above 32768: a registration "
                         "must be computed before them")
    curves = curves_by_setting(rows)
    out = {"lengths": list(oos.OOS_LENGTHS), "setups": list(oos.OOS_SETUPS),
           "primary_method": oos.OOS_METHOD, "methods": {}, "models": list(oos.OOS_MODELS),
           "rule": {"alpha": oos.OOS_ALPHA, "margin": oos.OOS_MARGIN,
                    "n_sim": oos.OOS_N_SIM, "seed": oos.OOS_SEED},
           "design": {k: v for k, v in ACCEPTANCE_PROFILES["out-of-sample"].items()
                      if k not in ("anchors", "description")},
           "anchors": {k: {str(L): m for L, m in v.items()} for k, v in
                       OUT_OF_SAMPLE_ANCHOR.items()},
           "fitted_on": "acceptance curves L = 256 ... 32768 (primary window), data/acceptance.csv "
                        "checksum " + json.loads((ROOT / "data/acceptance_manifest.json")
                                                 .read_text())["checksums"]["csv"]}
    for method in ("loglog", "probit", "isotonic"):
        per, vms, rec = [], [], {}
        for name in oos.OOS_SETUPS:
            L, y, v, dropped = analyse_setting_link(curves[name], method)
            P = oos.model_predictions(L, y, v)
            per.append(P)
            rel = float(np.sqrt(v[-1]) / y[-1])
            vms.append((rel * P["boxcox"]["pred"]) ** 2)
            rec[name] = {"measured_32768": round(float(y[-1]), 3),
                         "measured_sd_32768": round(float(np.sqrt(v[-1])), 3),
                         "dropped_lengths": dropped,
                         "predictions": {k: {"d50": [round(float(x), 3) for x in p["pred"]],
                                             "sd": [round(float(x), 3) for x in p["sd"]],
                                             "cov": np.round(p["cov"], 5).tolist()}
                                         for k, p in P.items()}}
        allp = oos.concat_predictions(per)
        vm = np.concatenate(vms)
        rec["expected_measurement_sd"] = [round(float(x), 3) for x in np.sqrt(vm)]
        rec["expected_outcomes_all_points"] = oos.expected_outcomes(allp, vm)
        rec["expected_outcomes_k1_only"] = oos.expected_outcomes(per[0], vms[0])
        out["methods"][method] = rec
    path = ROOT / "data/registration/out_of_sample.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


def add_exact_model() -> None:
    """The second registration: the row model's predictions joined to the fitted laws', and
    what the rule would decide among all four (written to
    ``data/registration/out_of_sample_exact_model.json``)."""
    rows = load_acceptance(ROOT / "data")
    if max(r["L"] for r in rows) > 32768 or (ROOT / "data/out_of_sample/acceptance.csv").exists():
        raise SystemExit("curves above L = 32768 exist already: too late to register")
    curves = curves_by_setting(rows)
    model = oos.exact_model_predictions(ROOT / "data/registration/predictions_exact_model.json")
    out = {"added_to": "data/registration/out_of_sample.json", "model": oos.EXACT_MODEL,
           "source": "data/registration/predictions_exact_model.json", "methods": {}}
    for method in ("loglog", "probit", "isotonic"):
        per, vms = [], []
        for name, extra in zip(oos.OOS_SETUPS, model):
            L, y, v, _ = analyse_setting_link(curves[name], method)
            P = oos.model_predictions(L, y, v)
            P.update(extra)
            per.append(P)
            vms.append((float(np.sqrt(v[-1]) / y[-1]) * P["boxcox"]["pred"]) ** 2)
        allp = oos.concat_predictions(per)
        vm = np.concatenate(vms)
        out["methods"][method] = {
            "expected_outcomes_all_points": oos.expected_outcomes(allp, vm),
            "expected_outcomes_k1_only": oos.expected_outcomes(per[0], vms[0])}
    path = ROOT / "data/registration/out_of_sample_exact_model.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    import sys
    add_exact_model() if sys.argv[1:] == ["--exact-model"] else main()
