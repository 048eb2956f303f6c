"""Write the machine-readable registration of the out-of-sample decision.

Computes, from the acceptance curves measured at L = 64 ... 32768 only, each fitted law's d_50 at
the registered new lengths with its covariance, under the primary per-curve summary and the two
secondary ones, and how the registered rule would decide if each law were true. Writes
``data/registration/out_of_sample.json``. Run from the repository root:

    PYTHONPATH=. python tools/register_out_of_sample.py

``--exact-model`` adds the row model's registration; ``--calibration [REPS]`` runs the registered
rule end to end on synthetic curves of known truth (both refuse once the new curves exist).
"""

from __future__ import annotations

import json
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
import scipy

from sattn.experiments.acceptance import curves_by_setting, load_acceptance
from sattn.experiments.acceptance import out_of_sample as oos
from sattn.experiments.acceptance.design import ACCEPTANCE_PROFILES, OUT_OF_SAMPLE_ANCHOR
from sattn.experiments.acceptance.analysis import pad_curves
from sattn.experiments.acceptance.robust import analyse_setting_link, glm_fit

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


def probit_scales(curves, L=32768) -> dict:
    """Each registered setting's probit scale ``1/b1`` at ``L``, the mean over its targets."""
    out = {}
    for name in oos.OOS_SETUPS:
        D, N, S = pad_curves([curves[name][L][t] for t in sorted(curves[name][L])])
        _, b1, _, ok = glm_fit(D, N, S, "probit")
        if not ok.all():
            raise SystemExit(f"the probit fit of {name} at L = {L} failed")
        out[name] = round(float(np.mean(1 / b1)), 3)
    return out


def add_calibration(reps: int = 200) -> None:
    """The registered rule run end to end on synthetic curves of known truth
    (:func:`sattn.experiments.acceptance.out_of_sample.calibrate_decision`), before the new
    curves exist; written to ``data/registration/out_of_sample_calibration.json``."""
    if (ROOT / "data/out_of_sample/acceptance.csv").exists():
        raise SystemExit("the curves at the new lengths exist already: too late to calibrate "
                         "the rule before them")
    rows = load_acceptance(ROOT / "data")
    reg = json.loads((ROOT / "data/registration/out_of_sample.json").read_text())
    exact = oos.exact_model_predictions(ROOT / "data/registration/predictions_exact_model.json")
    scale = probit_scales(curves_by_setting(rows))
    total = reps * len(oos.CALIBRATION_SCENARIOS) * (len(oos.OOS_MODELS) + 1)
    done = [0]

    def tick():
        done[0] += 1
        if done[0] % 50 == 0 or done[0] == total:
            print(f"  {done[0]}/{total} simulated outcomes", flush=True)

    wall, cpu = time.perf_counter(), time.process_time()
    res = oos.calibrate_decision(rows, reg, exact, scale, reps=reps, progress=tick)
    out = {"command": f"PYTHONPATH=. python tools/register_out_of_sample.py --calibration {reps}",
           "reps": reps, "seed": oos.OOS_SEED, "scale": scale,
           "scale_source": "mean probit scale 1/b1 of the setting's three curves at L = 32768",
           "scenarios": {k: {"link": v[0], "same_summary": v[1]}
                         for k, v in oos.CALIBRATION_SCENARIOS.items()},
           "results": res,
           "seconds": round(time.perf_counter() - wall, 1),
           "cpu_seconds": round(time.process_time() - cpu, 1),
           "versions": {"python": platform.python_version(), "numpy": np.__version__,
                        "scipy": scipy.__version__, "sattn_commit": _commit()}}
    path = ROOT / "data/registration/out_of_sample_calibration.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)} ({out['seconds']} s)")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    import sys
    args = sys.argv[1:]
    if args == ["--exact-model"]:
        add_exact_model()
    elif args[:1] == ["--calibration"]:
        add_calibration(*(int(a) for a in args[1:2]))
    elif args:
        raise SystemExit(f"unknown arguments {args}; use none, --exact-model or "
                         "--calibration [REPS]")
    else:
        main()
