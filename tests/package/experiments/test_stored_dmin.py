"""The exact model's predicted d_min per task of an experiment, stored with a checked manifest."""

from __future__ import annotations

import csv
import hashlib
import json
import math

import pytest

import sattn
from sattn.experiments.prediction import checks


def _task(experiment, setup, L):
    return next(t for t in sattn.make_tasks(experiment, "paper", setups=[setup], lengths=[L])
                if t.target == 0)


def test_dmin_predictions_computes_only_the_tasks_asked_for_and_matches_predict_dmin():
    key = ("k1-g1-e3-0.9", 64, 0)
    recs = checks.dmin_predictions("decades", only=[key])
    assert [(r["setup"], r["L"], r["target"]) for r in recs] == [key]
    rec = recs[0]
    assert set(rec) == set(checks.DMIN_FIELDS)
    task, s = _task("decades", *key[:2]), sattn.SETUPS[key[0]]
    est = sattn.predict_dmin(task.sample_target(), s.eps1, s.eps2, list(task.widths()),
                             task.n_draws, method="exact")
    assert rec["median"] == est.median and rec["q10"] == est.q10 and rec["q90"] == est.q90
    # k = 1 is quadrature: the numerical error is at the level of rounding
    assert rec["se_log_p"] < 1e-12 and rec["err_width"] < 1e-9
    assert checks.dmin_predictions("decades", only=[key], done=[key]) == []


def test_width_error_is_the_error_of_ln_p_over_its_slope():
    s = sattn.SETUPS["k2-g1-e7-0.5"]
    t = sattn.sample_target(s.name, 512)
    at = sattn.draw_success_probability(t, s.eps1, s.eps2, 100, n_samples=1 << 12,
                                        method="exact")
    up = sattn.draw_success_probability(t, s.eps1, s.eps2, 104, n_samples=1 << 12,
                                        method="exact")
    got = checks.width_error(t, s.eps1, s.eps2, 100, [96, 100, 104, 108], n_samples=1 << 12)
    want = max(at.se_log_p, up.se_log_p) / ((up.log_p - at.log_p) / 4)
    assert got == pytest.approx(want, rel=1e-12) and 0 < got < math.inf
    with pytest.raises(ValueError, match="no width of the ladder above"):
        checks.width_error(t, s.eps1, s.eps2, 108, [96, 100, 104, 108], n_samples=1 << 12)


def _store(tmp_path, rows, experiment="fig3"):
    path = tmp_path / f"{experiment}_model.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, checks.DMIN_FIELDS)
        w.writeheader()
        w.writerows(rows)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / f"{experiment}_model_manifest.json").write_text(json.dumps({"sha256": sha}))
    return path


def test_load_dmin_predictions_checks_the_manifest(tmp_path):
    row = {"setup": "k1-g1-e3-0.9", "L": 512, "target": 0, "median": 30, "q10": 28, "q90": 32,
           "p_at_median": 0.1, "se_log_p": 0.0, "max_rel_err": 0.0, "err_width": 0.0,
           "n_samples": 65536, "seed": 0}
    path = _store(tmp_path, [row])
    got = checks.load_dmin_predictions("fig3", tmp_path)
    assert got == {("k1-g1-e3-0.9", 512, 0): {**row, "p_at_median": 0.1, "se_log_p": 0.0,
                                              "max_rel_err": 0.0, "err_width": 0.0}}
    path.write_text(path.read_text().replace(",30,", ",31,"))
    with pytest.raises(ValueError, match="differs from the manifest"):
        checks.load_dmin_predictions("fig3", tmp_path)
    with pytest.raises(ValueError, match="are needed"):
        checks.load_dmin_predictions("decades", tmp_path)
    with pytest.raises(ValueError, match="experiment must be one of"):
        checks.load_dmin_predictions("fig4", tmp_path)


def test_the_shipped_predictions_load():
    from pathlib import Path
    data = Path(__file__).resolve().parents[3] / "data"
    for exp, n in (("fig3", 132), ("decades", 180)):
        got = checks.load_dmin_predictions(exp, data)
        assert len(got) == n
        assert all(r["max_rel_err"] < 0.25 or r["n_samples"] > 1 << 16 for r in got.values())
