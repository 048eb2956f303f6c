"""The row model evaluated exactly (quadrature, importance sampling) and the likelihood test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.special as spc
import scipy.stats as sst

from sattn.experiments import prediction as pr
from sattn.experiments.acceptance import row_model_test as mt
from sattn.experiments.prediction import row_exact as rx
from sattn.experiments.prediction import row_model as rm

B1 = math.log(4.0 / 0.9)          # k1-g1-e3-0.9: the logit of every row


@pytest.mark.parametrize("L,d", [(64, 14), (1024, 40), (32768, 66)])
def test_quadrature_rule_integrates_known_beta_moments(L, d):
    a, b = d / 2, (L - d) / 2
    phi = lambda z: np.exp(-z * z / 2) / math.sqrt(2 * math.pi)          # noqa: E731
    m1, _ = rx._composite(lambda z: phi(z) * rx._beta_from_score(z, a, b), -14, 14, 32)
    m2, _ = rx._composite(lambda z: phi(z) * rx._beta_from_score(z, a, b) ** 2, -14, 14, 32)
    assert m1 == pytest.approx(d / L, rel=1e-11)
    assert m2 == pytest.approx(a * (a + 1) / ((a + b) * (a + b + 1)), rel=1e-11)
    q = 0.8 * d / L                   # a lower-tail probability, the kind a row failure is
    cdf, _ = rx._composite(lambda z: phi(z) * (rx._beta_from_score(z, a, b) <= q), -14, 14, 32)
    assert cdf == pytest.approx(spc.betainc(a, b, q), abs=2e-3)      # step: only 1/panel accuracy


@pytest.mark.parametrize("L,d", [(64, 14), (512, 30), (8192, 55), (32768, 66), (131072, 76)])
def test_k1_quadrature_matches_adaptive_quadrature_in_p(L, d):
    """An independent implementation: scipy's adaptive quad over p with the Beta density."""
    q = rx.k1_failure_quadrature(B1, L, d, 3.0, 0.9)
    a, b, s, t2 = d / 2, (L - d) / 2, L / d, math.log(1 / 0.9)
    p0 = t2 / (s * B1)

    def f(p):
        c = (s * p * B1 - t2) / (s * B1 * math.sqrt(p * (1 - p)))
        return sst.beta.pdf(p, a, b) * float(rx._failure_given_c(np.array([c]), L - 1)[0])
    hi = min(1.0, d / L + 40 * math.sqrt(2 * d) / L)
    ref, abserr = si.quad(f, p0, hi, epsabs=0, epsrel=1e-11, limit=400,
                          points=[d / L] if d / L < hi else None)
    ref += spc.betainc(a, b, p0)
    assert q.err < 1e-9 * q.fail
    assert abs(q.fail - ref) <= 1e-8 * ref + abserr + q.err


@pytest.mark.slow
def test_k1_quadrature_matches_plain_monte_carlo_where_it_resolves():
    """At L = 64 a row fails with probability ~0.06: 2^22 exact Beta draws resolve it to 0.2%."""
    L, d = 64, 14
    q = rx.k1_failure_quadrature(B1, L, d, 3.0, 0.9)
    p = np.random.default_rng(5).beta(d / 2, (L - d) / 2, size=1 << 22)
    s = L / d
    c = (s * p * B1 - math.log(1 / 0.9)) / (s * B1 * np.sqrt(p * (1 - p)))
    h = rx._failure_given_c(c, L - 1)
    se = h.std() / math.sqrt(h.size)
    assert se < 0.005 * q.fail                       # the sample resolves what it estimates
    assert abs(h.mean() - q.fail) < 4 * se


@pytest.mark.parametrize("L,d", [(512, 30), (32768, 60), (32768, 66), (32768, 72)])
def test_importance_sampling_matches_quadrature_at_k1(L, d):
    q = rx.k1_failure_quadrature(B1, L, d, 3.0, 0.9)
    P, w = rx.block_is_samples(1, L, d, 1 << 17, 0)
    f, se = rx._is_failure(P, w, np.array([B1]), L, d, 3.0, 0.9)
    assert se < 0.03 * f                             # resolution finer than the probability
    assert abs(f - q.fail) < 4 * se


def test_plain_monte_carlo_cannot_resolve_the_tail_that_quadrature_gets():
    """The estimator artefact: 4096 block samples put the failure ~1/3 too low at L = 32768."""
    q = rx.k1_failure_quadrature(B1, 32768, 66, 3.0, 0.9)
    mc = rm.row_pass_probability([B1], 32768, 66, 3.0, 0.9, n_samples=4096)
    assert (1 - mc.pi) < 0.75 * q.fail
    t = pr.RowTypes(L=32768, k_max=1, eps1=3.0, eps2=0.9, types=(((B1,), 32768),))
    exact = pr.draw_success_probability(t, 3.0, 0.9, 66, method="exact")
    sampled = pr.draw_success_probability(t, 3.0, 0.9, 66, n_samples=4096)
    assert exact.p == pytest.approx(0.512, abs=0.001) and exact.se_log_p < 1e-9
    assert sampled.p == pytest.approx(0.640, abs=0.001)


@pytest.mark.slow
def test_importance_sampling_matches_plain_monte_carlo_at_k2_where_it_resolves():
    L, d = 128, 40
    b = np.array([math.log(8 / 0.5)] * 2)
    r = rx.row_failure(b, L, d, 7.0, 0.5, n_samples=1 << 17)
    mc = rm.row_pass_probability(b, L, d, 7.0, 0.5, n_samples=1 << 21, seed=3)
    assert r.method == "importance" and r.rel_err < 0.02
    assert abs((1 - mc.pi) - r.fail) < 4 * math.hypot(r.err, mc.se)


def test_importance_sampling_resolves_k2_rows_near_d50_at_long_lengths():
    b = np.array([math.log(8 / 0.5)] * 2)
    for L, d in ((32768, 251), (131072, 290)):
        r = rx.row_failure(b, L, d, 7.0, 0.5)
        assert 0 < r.fail < 1e-3 and r.rel_err < 0.1, (L, d, r)


def test_exact_method_validates_its_argument():
    t = pr.RowTypes(L=64, k_max=1, eps1=3.0, eps2=0.9, types=(((B1,), 64),))
    with pytest.raises(ValueError, match="method"):
        pr.draw_success_probability(t, 3.0, 0.9, 20, method="quadrature")


def test_binomial_deviance_is_the_log_likelihood_ratio():
    y, n, p = np.array([0, 3, 64, 10]), np.array([64, 64, 64, 128]), np.array([0.1, 0.02, 0.9, 0.5])
    ref = 2 * (sst.binom.logpmf(y, n, y / n) - sst.binom.logpmf(y, n, p))
    assert np.allclose(mt.binomial_deviance(y, n, p), ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        mt.binomial_deviance([5], [4], [0.5])


def _design(rng):
    n = np.full(300, 64)
    p = spc.ndtr(rng.normal(0, 1.2, 300))
    se = np.where(np.arange(300) < 150, 0.0, 0.02)
    groups = np.repeat(["a", "b", "c"], 100)
    return n, p, se, groups


@pytest.mark.slow
def test_model_test_holds_its_size_and_detects_a_shift():
    rng = np.random.default_rng(11)
    n, p, se, groups = _design(rng)
    cal = mt.calibrate_model_test(n, p, se, groups, deltas=(0.0, 0.3), reps=100, n_boot=200,
                                  rng=rng)
    assert cal[0.0]["total"] <= 0.12 and cal[0.0]["any_group"] <= 0.12
    assert cal[0.3]["total"] >= 0.9


def test_model_test_rejects_a_wrong_model_and_keeps_a_true_one():
    rng = np.random.default_rng(12)
    n, p, se, groups = _design(rng)
    y_true = rng.binomial(n, p)
    y_wrong = rng.binomial(n, spc.ndtr(spc.ndtri(p) + 0.5))
    ok = mt.model_test(y_true, n, p, se, groups, n_boot=400, rng=rng)
    bad = mt.model_test(y_wrong, n, p, se, groups, n_boot=400, rng=rng)
    assert bad.total_p < 0.01 and len(bad.rejected) == 3 and not bad.ok
    assert ok.total_p > 0.01
    assert "rejected" in bad.message and "\n" not in bad.message
    assert bad.table().count("\n") == 4 and "rejected" in bad.table()
