"""The link-robust analysis and the registered out-of-sample decision: known truths recovered."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sattn.experiments.acceptance import probit_fit
from sattn.experiments.acceptance import out_of_sample as oos
from sattn.experiments.acceptance import robust as rb
from sattn.experiments.acceptance.analysis import NoiseModel
from sattn.experiments.acceptance.design import acceptance_tasks


def _counts(link, b0, b1, d, n, rng):
    p = rb.LINKS[link].cdf(b0 + b1 * d)
    return rng.binomial(n, p)


@pytest.mark.parametrize("link", rb.LINK_NAMES)
def test_glm_fit_recovers_known_parameters_under_each_link(link):
    rng = np.random.default_rng(3)
    d = np.arange(40, 80, 2.0)
    n = np.full(d.shape, 4000)
    b0, b1 = -12.0, 0.2
    s = _counts(link, b0, b1, d, n, rng)
    f0, f1, _, ok = rb.glm_fit(d, n, s, link)
    assert ok
    assert f1 == pytest.approx(b1, rel=0.05)
    assert (rb.LINKS[link].ppf(0.5) - f0) / f1 == pytest.approx(
        (rb.LINKS[link].ppf(0.5) - b0) / b1, abs=0.3)


def test_glm_probit_is_the_registered_probit_fit():
    rng = np.random.default_rng(0)
    d = np.tile(np.arange(10, 20.0), (5, 1))
    n = np.full(d.shape, 64)
    s = _counts("probit", -7.5, 0.5, d, n, rng)
    a0, a1, aok = probit_fit(d, n, s)
    g0, g1, _, gok = rb.glm_fit(d, n, s, "probit")
    np.testing.assert_array_equal(aok, gok)
    np.testing.assert_allclose(g0, a0, rtol=1e-10)
    np.testing.assert_allclose(g1, a1, rtol=1e-10)


def test_deviance_prefers_the_true_link():
    rng = np.random.default_rng(5)
    d = np.arange(30, 70, 2.0)
    n = np.full(d.shape, 2000)
    s = _counts("loglog", -8.0, 0.2, d, n, rng)
    dev = {lk: float(rb.curve_deviance(d, n, s, lk)[0]) for lk in rb.LINK_NAMES}
    assert min(dev, key=dev.get) == "loglog"
    # the true link's deviance is a chi^2 on W - 2 degrees of freedom: far below 5 x that
    assert dev["loglog"] < 5 * (d.size - 2) < dev["probit"]


def test_isotonic_quantile_interpolates_and_refuses_to_extrapolate():
    d = np.array([10, 11, 12, 13.0])
    n = np.array([10, 10, 10, 10])
    assert rb.isotonic_quantile(d, n, np.array([0, 2, 6, 10]), 0.5) == pytest.approx(11.75)
    # a violation is pooled: shares 0.4, 0.2 become 0.3, 0.3
    assert rb.isotonic_quantile(d, n, np.array([4, 2, 8, 9]), 0.5) == pytest.approx(
        11 + (0.5 - 0.3) / (0.8 - 0.3))
    assert math.isnan(rb.isotonic_quantile(d, n, np.array([0, 1, 2, 4]), 0.5))
    assert math.isnan(rb.isotonic_quantile(d, n, np.array([6, 7, 8, 9]), 0.5))
    with pytest.raises(ValueError, match="increasing"):
        rb.isotonic_quantile(d[::-1], n, n, 0.5)


def test_isotonic_bootstrap_interval_covers_a_known_median():
    rng = np.random.default_rng(11)
    d = np.arange(20, 34.0)
    n = np.full(d.shape, 128)
    cover = 0
    for _ in range(40):
        s = rng.binomial(n, rb.LINKS["loglog"].cdf(-5.4 + 0.2 * d))
        r = rb.link_quantiles(d, n, s, "isotonic", n_boot=100, rng=rng)
        true = (rb.LINKS["loglog"].ppf(0.5) + 5.4) / 0.2
        cover += abs(r["est"][0] - true) <= 1.96 * math.sqrt(r["var"][0])
    assert cover >= 32          # nominal 95%: at least 80% of 40


def test_loglog_family_recovers_its_coefficients():
    L = 2.0 ** np.arange(8, 16)
    lnL = np.log(L)
    y = 6.0 * lnL + 15.0 * np.log(lnL) - 20.0
    fit = rb.fit_loglog_family(L, y, np.full(L.shape, 0.01))
    np.testing.assert_allclose(fit.coef, [6.0, 15.0, -20.0], atol=1e-6)
    assert fit.chi2 < 1e-12
    lo, hi = fit.b_interval()
    assert lo < 15.0 < hi


def test_robust_verdict_accepts_a_log_law_and_rejects_a_strong_saturation():
    L = 2.0 ** np.arange(8, 16)
    v = np.full(L.shape, 0.04)
    log = rb.robust_verdict("s", L, 10 * np.log(L) - 20, v, df=20)
    assert log.ok and log.bonferroni_ok and log.log_p > 0.99
    sat = rb.robust_verdict("s", L, 40 * (L ** -0.2 - 1) / -0.2, v, df=20)
    assert not sat.ok and sat.hi < 0 and sat.beta == pytest.approx(-0.2, abs=0.01)


def test_link_curve_has_its_median_and_probit_slope():
    for lk in rb.LINK_NAMES:
        p = rb.link_curve(lk, 50.0, 4.0)
        assert float(p(50.0)) == pytest.approx(0.5)
        slope = (float(p(50.001)) - float(p(49.999))) / 0.002
        assert slope == pytest.approx(1 / (4.0 * math.sqrt(2 * math.pi)), rel=1e-4)


def test_calibration_holds_its_size_on_a_true_log_law_with_a_misspecified_link():
    noise = NoiseModel("k1-g1-e3-0.9", 0.07, 0.01, {})
    L = np.array([256, 512, 1024, 2048, 4096.0])
    truth = rb.true_law("log", L, 5 * np.log(L) - 3, np.ones(L.size))
    cal = rb.calibrate_robust(noise, {"log": truth}, links=("loglog",),
                              methods=("probit", "loglog"), lengths=[256, 512, 1024, 2048,
                                                                     4096], reps=6, seed=2,
                              n_boot=30)
    assert set(cal.rates) == {("log", "loglog", "probit"), ("log", "loglog", "loglog")}
    for r in cal.rates.values():
        assert 0 <= r["reject"] <= 0.5          # 6 data sets: size 5% gives <= 3 rarely
    with pytest.raises(ValueError, match="unknown method"):
        rb.calibrate_robust(noise, {"log": truth}, methods=("bogus",), lengths=[256], reps=1)


def test_out_of_sample_predictions_recover_each_true_law():
    L = 2.0 ** np.arange(8, 16)
    v = np.full(L.shape, 0.01)
    lnL = np.log(L)
    new = np.array(oos.OOS_LENGTHS, float)
    cases = {"log": lambda x: 6 * np.log(x) - 10,
             "loglog_family": lambda x: 6 * np.log(x) + 12 * np.log(np.log(x)) - 30,
             "boxcox": lambda x: 30 * (x ** -0.1 - 1) / -0.1 + 5}
    for model, f in cases.items():
        P = oos.model_predictions(L, f(L), v, n_sim=200, rng=np.random.default_rng(0))
        np.testing.assert_allclose(P[model]["pred"], f(new), rtol=2e-3)
        assert (P[model]["sd"] > 0).all()
    assert lnL.size == 8


def test_out_of_sample_rule_picks_the_true_model_or_says_undecided():
    preds = {"a": {"pred": np.array([10.0, 20.0]), "cov": np.eye(2) * 0.01},
             "b": {"pred": np.array([12.0, 24.0]), "cov": np.eye(2) * 0.01}}
    dec = oos.decide_out_of_sample(preds, [10.1, 19.9], [0.04, 0.04])
    assert dec.winner == "a" and dec.ok and "a wins" in dec.message
    close = {"a": preds["a"], "b": {"pred": np.array([10.2, 20.2]), "cov": np.eye(2) * 0.01}}
    dec = oos.decide_out_of_sample(close, [10.1, 20.1], [0.04, 0.04])
    assert dec.winner is None and set(dec.surviving) == {"a", "b"}
    dec = oos.decide_out_of_sample(preds, [30.0, 40.0], [0.04, 0.04])
    assert dec.surviving == () and "no model" in dec.verdict
    with pytest.raises(ValueError, match="do not match"):
        oos.decide_out_of_sample(preds, [1.0, 2.0, 3.0], [1.0, 1.0, 1.0])


def test_expected_outcomes_find_a_well_separated_truth():
    preds = {"a": {"pred": np.array([10.0, 20.0]), "cov": np.eye(2) * 0.01},
             "b": {"pred": np.array([14.0, 26.0]), "cov": np.eye(2) * 0.01}}
    out = oos.expected_outcomes(preds, np.array([0.04, 0.04]), reps=200)
    assert out["a"].get("a", 0) > 0.9 and out["b"].get("b", 0) > 0.9


def test_out_of_sample_tasks_are_registered_and_bounded():
    tasks = acceptance_tasks("out-of-sample")
    assert {t.L for t in tasks} == set(oos.OOS_LENGTHS)
    assert {t.setup.name for t in tasks} == set(oos.OOS_SETUPS)
    assert all(t.draws == 64 and len(t.widths) == 7 for t in tasks)
    from sattn.experiments.setups import ExperimentError
    with pytest.raises(ExperimentError, match="registered for"):
        acceptance_tasks("out-of-sample", lengths=[32768])


def test_manifest_records_each_curves_time_and_peak_memory(tmp_path):
    from sattn.experiments.acceptance import reproduce_acceptance
    man = reproduce_acceptance(profile="quick", setups=["k1-g1-e3-0.9"], lengths=[64],
                               out=tmp_path, progress=False)
    assert man["per_task"] and len(man["per_task"]) == len(man["computed"])
    for rec in man["per_task"].values():
        assert rec["seconds"] > 0 and rec["peak_rss_mib"] > 10
    assert man["registration"] == "docs/registration/acceptance.md"


def test_exact_model_predictions_are_read_and_checked(tmp_path):
    import json
    recs = [{"setup": s, "L": L, "d50": 10.0 + i, "err_d50": 0.5}
            for i, (s, L) in enumerate((s, L) for s in oos.OOS_SETUPS for L in oos.OOS_LENGTHS)]
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"predictions": recs}))
    out = oos.exact_model_predictions(p)
    assert len(out) == len(oos.OOS_SETUPS)
    np.testing.assert_allclose(out[1][oos.EXACT_MODEL]["pred"], [12.0, 13.0])
    np.testing.assert_allclose(out[0][oos.EXACT_MODEL]["cov"], np.eye(2) * 0.25)
    p.write_text(json.dumps({"predictions": recs[:-1]}))
    with pytest.raises(ValueError, match="no registered prediction"):
        oos.exact_model_predictions(p)


def test_registered_row_model_file_holds_every_registered_point():
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    out = oos.exact_model_predictions(root / "data/registration/predictions_exact_model.json")
    assert all(np.isfinite(o[oos.EXACT_MODEL]["pred"]).all() for o in out)


def test_the_curves_as_registered_are_verified_by_the_registered_checksum(tmp_path):
    """registered_acceptance reads the copy of the curves the predictions were fitted on, and
    refuses a copy whose checksum is not the one the registration records, or a missing one."""
    import shutil
    from pathlib import Path

    from sattn.runs.store import StoreError
    root = Path(__file__).resolve().parents[3]
    rows = oos.registered_acceptance(root / "data")
    assert len(rows) == 1260 and {"setup", "L", "target", "d", "draws", "successes"} <= set(rows[0])
    (tmp_path / "registration").mkdir()
    shutil.copy(root / "data/registration/out_of_sample.json", tmp_path / "registration")
    with pytest.raises(StoreError, match="acceptance_at_registration.csv is missing"):
        oos.registered_acceptance(tmp_path)
    text = (root / "data" / oos.REGISTERED_CURVES).read_text()
    (tmp_path / oos.REGISTERED_CURVES).write_text(text.replace(",128,3\n", ",128,4\n", 1))
    with pytest.raises(StoreError, match="not the file the registration was fitted on"):
        oos.registered_acceptance(tmp_path)
    (tmp_path / oos.REGISTERED_CURVES).write_text(text)
    assert oos.registered_acceptance(tmp_path) == rows
