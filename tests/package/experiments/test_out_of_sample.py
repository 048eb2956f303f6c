"""The registered out-of-sample decision end to end: synthetic curves at the new lengths, measured
as the run measures them, summarised and judged by the registered rule against the registered
predictions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sattn.experiments.acceptance import load_acceptance
from sattn.experiments.acceptance import out_of_sample as oos
from sattn.experiments.acceptance.design import ACCEPTANCE_COLUMNS, acceptance_tasks
from sattn.runs.store import StoreError, sha256_file, write_csv, write_manifest

DATA = Path(__file__).resolve().parents[3] / "data"
REG = json.loads((DATA / "registration" / "out_of_sample.json").read_text())
EXACT = oos.exact_model_predictions(DATA / "registration" / "predictions_exact_model.json")
# The probit scale of the curves at L = 32768 (Chapter 16's fits: 4.0-4.6 for k = 1, 14.7-16.4
# for k2-g1-e7-0.5), rounded.
SCALE = {"k1-g1-e3-0.9": 4.3, "k2-g1-e7-0.5": 15.6}


@pytest.fixture(scope="module")
def old_rows():
    return load_acceptance(DATA)


def _truth(model, method="loglog"):
    """The registered prediction of ``model`` at every new point."""
    rec = REG["methods"][method]
    return {(s, L): rec[s]["predictions"][model]["d50"][j]
            for s in oos.OOS_SETUPS for j, L in enumerate(oos.OOS_LENGTHS)}


def test_simulated_curves_follow_the_registered_design():
    rows = oos.simulate_new_rows(_truth("boxcox"), SCALE, rng=np.random.default_rng(5))
    for task in acceptance_tasks("out-of-sample"):
        mine = [r for r in rows if (r["setup"], r["L"], r["target"])
                == (task.setup.name, task.L, task.target)]
        widths = sorted(r["d"] for r in mine)
        assert set(task.widths) <= set(widths)           # the initial widths, then extensions
        assert all(r["draws"] == task.draws for r in mine)
        top = max(mine, key=lambda r: r["d"])
        bottom = min(mine, key=lambda r: r["d"])
        # the extension rule stopped: the top accepts at least 40% (or 4 extensions were made),
        # the bottom at most 10% (or 4 were made)
        above = [w for w in widths if w > max(task.widths)]
        below = [w for w in widths if w < min(task.widths)]
        assert top["successes"] / top["draws"] >= 0.4 or len(above) == 4
        assert bottom["successes"] / bottom["draws"] <= 0.1 or len(below) == 4


@pytest.mark.parametrize("truth, winner", [("log", "log"), ("loglog_family", "loglog_family")])
def test_the_rule_names_the_law_the_curves_were_drawn_from(old_rows, truth, winner):
    rows = oos.simulate_new_rows(_truth(truth), SCALE, rng=np.random.default_rng(11))
    res = oos.decide_measured(old_rows, rows, REG, EXACT)
    assert res.decisions["registered"].winner == winner, res.message
    assert res.ok and res.verdict == f"{winner} wins"
    # the measured points sit near the truth, within a few of their standard deviations
    m = res.measured["loglog"]
    true = np.array([_truth(truth)[p] for p in m["points"]])
    assert np.all(np.abs(m["d50"] - true) < 4 * np.sqrt(m["var"]))


def test_the_log_law_is_rejected_when_the_curves_bend(old_rows):
    rows = oos.simulate_new_rows(_truth("boxcox"), SCALE, rng=np.random.default_rng(2))
    res = oos.decide_measured(old_rows, rows, REG, EXACT)
    assert "log" not in res.decisions["registered"].surviving
    assert "boxcox" in res.decisions["registered"].surviving
    assert set(res.decisions) == {"registered", "with_row_model", "k1_only", "probit", "isotonic"}
    assert res.decisions["with_row_model"].chi2.keys() == {"boxcox", "log", "loglog_family",
                                                           oos.EXACT_MODEL}
    assert res.decisions["k1_only"].n_points == 2


def test_measured_points_pool_the_new_lengths_with_the_old(old_rows):
    rows = oos.simulate_new_rows(_truth("loglog_family"), SCALE, rng=np.random.default_rng(4))
    m = oos.measured_points(old_rows, rows)
    assert m["points"] == [(s, L) for s in oos.OOS_SETUPS for L in oos.OOS_LENGTHS]
    for j, each in enumerate(m["per_target"]):
        assert len(each) == 3
        assert m["d50"][j] == pytest.approx(np.mean(each), abs=1e-12)
        # the registered pooling: never below the between-target variance pooled over lengths'
        # share of this point, never below the mean bootstrap variance / 3; so at least the
        # binomial resolution of a 64-draw curve's median
        assert m["var"][j] > 0
    # the same rows under another summary give other numbers, the same points
    p = oos.measured_points(old_rows, rows, method="probit")
    assert p["points"] == m["points"] and not np.allclose(p["d50"], m["d50"])


def test_registered_predictions_are_the_committed_numbers():
    P = oos.registered_predictions(REG)
    assert set(P) == set(oos.OOS_MODELS)
    rec = REG["methods"]["loglog"]
    assert P["boxcox"]["pred"].tolist() == (rec["k1-g1-e3-0.9"]["predictions"]["boxcox"]["d50"]
                                            + rec["k2-g1-e7-0.5"]["predictions"]["boxcox"]["d50"])
    C = P["log"]["cov"]
    assert C.shape == (4, 4) and np.all(C[:2, 2:] == 0)     # settings are independent fits
    four = oos.registered_predictions(REG, EXACT)
    assert four[oos.EXACT_MODEL]["pred"][0] == pytest.approx(70.76, abs=0.01)
    with pytest.raises(ValueError, match="holds no summary 'cloglog'"):
        oos.registered_predictions(REG, method="cloglog")
    with pytest.raises(ValueError, match="settings are"):
        oos.registered_predictions(REG, setups=("k1-g1-e3-0.9",))


def test_measured_points_refuse_incomplete_or_foreign_curves(old_rows):
    rows = oos.simulate_new_rows(_truth("boxcox"), SCALE, rng=np.random.default_rng(6))
    short = [r for r in rows if not (r["setup"] == "k2-g1-e7-0.5" and r["L"] == 131072)]
    with pytest.raises(ValueError, match=r"missing: \[\('k2-g1-e7-0.5', 131072\)\]"):
        oos.measured_points(old_rows, short)
    extra = rows + [dict(rows[0], L=262144)]
    with pytest.raises(ValueError, match=r"not registered: \[\('k1-g1-e3-0.9', 262144\)\]"):
        oos.measured_points(old_rows, extra)
    no_t2 = [r for r in rows if not (r["L"] == 65536 and r["target"] == 2)]
    with pytest.raises(ValueError, match=r"targets \[0, 1\], expected \[0, 1, 2\]"):
        oos.measured_points(old_rows, no_t2)
    with pytest.raises(ValueError, match="old_rows hold L = 131072; the curves before"):
        oos.measured_points(old_rows + rows, rows)
    with pytest.raises(ValueError, match="unknown summary 'median'"):
        oos.measured_points(old_rows, rows, method="median")
    # a new curve whose widths never reach half acceptance has no d_50: no point, no decision
    flat = [dict(r, successes=0) if r["setup"] == "k1-g1-e3-0.9" and r["L"] == 65536 else r
            for r in rows]
    with pytest.raises(ValueError, match="no loglog d_50 for some target at L = \\[65536\\]"):
        oos.measured_points(old_rows, flat)


def test_the_decision_from_files(tmp_path, old_rows):
    """The committed files' route: the new CSV is required (it is written only when the run
    ends) and checked against its manifest."""
    data = tmp_path / "data"
    (data / "registration").mkdir(parents=True)
    for name in ("acceptance.csv", "acceptance_manifest.json"):
        shutil.copy(DATA / name, data / name)
    for name in ("out_of_sample.json", "predictions_exact_model.json",
                 "acceptance_at_registration.csv"):
        shutil.copy(DATA / "registration" / name, data / "registration" / name)
    with pytest.raises(StoreError, match="out_of_sample/acceptance.csv is missing"):
        oos.out_of_sample_decision(data)
    rows = oos.simulate_new_rows(_truth("log"), SCALE, rng=np.random.default_rng(11))
    (data / "out_of_sample").mkdir()
    csv = data / "out_of_sample" / "acceptance.csv"
    write_csv(csv, ACCEPTANCE_COLUMNS, [[r[c] for c in ACCEPTANCE_COLUMNS] for r in rows])
    write_manifest(data / "out_of_sample" / "acceptance_manifest.json",
                   {"checksums": {"csv": sha256_file(csv)}})
    res = oos.out_of_sample_decision(data)
    again = oos.decide_measured(old_rows, rows, REG, EXACT)
    assert res.decisions["registered"].chi2 == again.decisions["registered"].chi2
    assert res.verdict == "log wins"
    # beside it, the points pooled with the curves as registered: the same points, nearly the
    # same numbers (nine rows of one setting differ)
    alt = res.with_registered_curves
    assert alt["points"] == res.points
    assert np.allclose(alt["d50"], res.measured["loglog"]["d50"], atol=1e-9)
    assert np.allclose(alt["var"], res.measured["loglog"]["var"], rtol=0.2)
    csv.write_text(csv.read_text().replace(",64,", ",63,", 1))
    with pytest.raises(StoreError, match="does not match its manifest checksum"):
        oos.out_of_sample_decision(data)


def test_summary_offset_of_a_shape_against_the_summary():
    # the summary's own shape: no offset; a probit shape: its log-log median lies below its own
    # median (the log-log curve rises more slowly above its median than below), in proportion
    # to the scale
    assert abs(oos.summary_offset("loglog", 4.3)) < 1e-9
    a, b = oos.summary_offset("probit", 4.3), oos.summary_offset("probit", 8.6)
    assert a < -0.5 and b == pytest.approx(2 * a, rel=1e-6)
    with pytest.raises(ValueError):
        oos.summary_offset("probit", 0.0)


@pytest.mark.slow
def test_calibration_runs_the_rule_end_to_end(old_rows):
    ticks = []
    res = oos.calibrate_decision(old_rows, REG, EXACT, SCALE, reps=4,
                                 scenarios={"loglog": ("loglog", False)},
                                 progress=lambda: ticks.append(1))
    assert len(ticks) == 16 and list(res) == ["loglog"]
    truths = res["loglog"]["truths"]
    assert list(truths) == [*oos.OOS_MODELS, oos.EXACT_MODEL]
    for truth, r in truths.items():
        assert set(r["verdicts"]) == {"registered", "with_row_model", "k1_only", "probit",
                                      "isotonic"}
        for shares in r["verdicts"].values():
            assert sum(shares.values()) == pytest.approx(1)
        assert len(r["measured_sd"]) == len(r["reported_sd"]) == 4
        assert r["true_survives"] >= 0.75, (truth, r)
    # the log law is far from the bent laws at k = 2: it wins whenever it is the truth
    assert truths["log"]["verdicts"]["registered"] == {"log": 1.0}
    assert "log" not in truths["boxcox"]["verdicts"]["registered"]


def test_shape_check_tells_the_curves_link(old_rows):
    truth = _truth("loglog_family")
    ll = oos.shape_check(oos.simulate_new_rows(truth, SCALE, link="loglog",
                                               rng=np.random.default_rng(8)))
    pr = oos.shape_check(oos.simulate_new_rows(truth, SCALE, link="probit",
                                               rng=np.random.default_rng(8)))
    assert ll["curves"] == pr["curves"] == 12 and ll["dof"] >= 12 * 5
    assert ll["deviance"]["loglog"] < ll["deviance"]["probit"]
    assert pr["deviance"]["probit"] < pr["deviance"]["loglog"]
    assert ll["better"]["loglog over probit"] > pr["better"]["loglog over probit"]
    res = oos.decide_measured(old_rows, oos.simulate_new_rows(truth, SCALE,
                                                              rng=np.random.default_rng(8)),
                              REG, EXACT)
    assert res.shape == ll
