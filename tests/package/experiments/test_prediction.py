"""The book's predictive model of d_min (sattn.experiments.prediction): real numbers, no mocks."""

from __future__ import annotations


import numpy as np
import pytest

import sattn
from sattn.experiments import prediction as pr
from sattn.experiments.prediction import row_model
from sattn.experiments.protocol import load_figure

SMALL = 1 << 14
DATA = "data"


def _measured(setup, L):
    rows = [r for r in load_figure("fig3", DATA) if r["setup"] == setup and r["L"] == L]
    assert len(rows) == 1
    return rows[0]


def test_block_has_the_exact_moments_of_a_random_projector():
    L, d, k = 300, 40, 3
    P = row_model.projector_block(k, L, d, 1 << 16, 3)
    diag = P[:, 0, 0]
    assert diag.mean() == pytest.approx(d / L, rel=0.01)
    assert diag.var() == pytest.approx(2 * d * (L - d) / (L ** 2 * (L + 2)), rel=0.05)
    assert (P[:, 0, 1] ** 2).mean() == pytest.approx(d * (L - d) / (L * (L - 1) * (L + 2)), rel=0.05)
    ev = np.linalg.eigvalsh(P)
    assert ev.min() > -1e-12 and ev.max() < 1 + 1e-12          # a compression of a projector


def test_error_variances_match_monte_carlo_of_exact_projectors():
    rep = pr.check_error_model(256, 24, [1.5, 2.0], n_draws=20, rng=np.random.default_rng(0))
    v = rep.values
    assert abs(v["var_ratio_off"] - 1) < 0.05 and abs(v["var_ratio_support"] - 1) < 0.05
    assert v["ks_off"] < 0.01
    assert rep.ok, rep.message
    assert str(rep) == rep.message and isinstance(rep.ok, bool)


def test_offsupport_identity_and_tail():
    rep = pr.check_offsupport_max(256, 24, [1.5], n_draws=20, rng=np.random.default_rng(1))
    assert rep.values["norm_identity_error"] == "<= 1e-12"
    assert rep.ok, rep.message


def test_offsupport_pass_table_matches_the_incomplete_beta_and_is_a_cdf():
    c = np.linspace(-0.3, 0.6, 2001)
    for m in (62, 1000, 32760):
        a, b = pr.offsupport_pass(c, m), pr.offsupport_pass(c, m, exact=True)
        assert np.max(np.abs(a - b)) < 1e-5
        assert np.all(np.diff(a) >= -1e-12) and a[0] >= 0 and a[-1] <= 1
    assert pr.offsupport_pass(1.0, 10) == 1.0 and pr.offsupport_pass(-1.0, 10) == 0.0


def test_p_is_increasing_in_d():
    t = pr.sample_target("k2-g2-e7-0.5", 512)
    ps = [pr.draw_success_probability(t, 7.0, 0.5, d, n_samples=SMALL).p for d in range(80, 161, 8)]
    assert all(b >= a for a, b in zip(ps, ps[1:])), ps
    assert ps[0] < 1e-3 and ps[-1] > 0.5


@pytest.mark.parametrize("setup,L", [("k1-g1-e3-0.9", 512), ("k2-g1-e7-0.5", 512),
                                     ("k1-g1-e7-0.25", 1024)])
def test_predicted_dmin_is_near_the_shipped_measurement(setup, L):
    row = _measured(setup, L)
    ws = list(range(row["grid_start"], row["grid_stop"] + 1, row["grid_step"]))
    pred = pr.predict_setup(setup, L, n_draws=row["n_draws"], widths=ws, n_samples=SMALL)
    assert pred.ok, pred.message
    assert abs(pred.median - row["d_min"]) <= max(0.15 * row["d_min"], row["grid_step"]), (
        pred.message, row["d_min"])
    assert pred.q10 <= pred.median <= pred.q90
    assert abs(sum(pred.stop) + pred.p_beyond - 1) < 1e-9


@pytest.mark.slow
def test_predicted_acceptance_matches_the_fast_engine():
    rep = pr.check_success_probability("k1-g1-e3-0.9", 512, [28, 32], n_draws=120, n_samples=SMALL)
    assert rep.ok, rep.message


def test_budget_lowers_the_prediction():
    t = pr.sample_target("k1-g1-e3-0.9", 1024)
    ws = list(range(18, 201, 2))
    small = pr.predict_dmin(t, 3.0, 0.9, ws, 2, n_samples=SMALL)
    large = pr.predict_dmin(t, 3.0, 0.9, ws, 500, n_samples=SMALL)
    assert large.median <= small.median


def test_bad_inputs_raise_named_errors():
    with pytest.raises(ValueError, match="b must"):
        pr.row_pass_probability([-1.0], 256, 20, 3.0, 0.9)
    with pytest.raises(ValueError, match="d must"):
        pr.row_pass_probability([1.0, 2.0], 256, 255, 3.0, 0.9)
    with pytest.raises(ValueError, match="eps2"):
        pr.row_pass_probability([1.0], 256, 20, 3.0, 1.5)
    with pytest.raises(ValueError, match="n_samples"):
        pr.row_pass_probability([1.0], 256, 20, 3.0, 0.9, n_samples=10)
    t = pr.sample_target("k1-g1-e3-0.9", 512)
    with pytest.raises(ValueError, match="strictly increasing"):
        pr.predict_dmin(t, 3.0, 0.9, [30, 30], 10)
    with pytest.raises(ValueError, match="prepared with eps"):
        pr.draw_success_probability(t, 7.0, 0.5, 30)
    with pytest.raises(TypeError, match="n_draws"):
        pr.predict_dmin(t, 3.0, 0.9, [30], 2.5)
    with pytest.raises(ValueError, match="unknown setup"):
        pr.predict_setup("k9-g1-e3-0.9", 512)
    with pytest.raises(ValueError, match="m must"):
        pr.offsupport_pass(0.1, 1)
    with pytest.raises(TypeError, match="rng"):
        pr.check_error_model(256, 24, [1.5], rng=0)
    with pytest.raises(ValueError, match="no row"):
        pr.compare_measured([{"setup": "k1-g1-e3-0.9", "L": 512, "n_draws": 52, "grid_start": 18,
                              "grid_stop": 200, "grid_step": 2, "d_min": None}])


def test_results_follow_the_protocol():
    t = pr.sample_target("k1-g1-e3-0.9", 512)
    for r in (pr.row_pass_probability([1.5], 512, 30, 3.0, 0.9, n_samples=SMALL),
              pr.draw_success_probability(t, 3.0, 0.9, 30, n_samples=SMALL),
              pr.predict_dmin(t, 3.0, 0.9, range(18, 60, 2), 52, n_samples=SMALL)):
        assert isinstance(r, sattn.Result) and isinstance(r.ok, bool)
        assert str(r) == r.message and "\n" not in r.message
        sattn.check(r, "the model's estimate is usable")
