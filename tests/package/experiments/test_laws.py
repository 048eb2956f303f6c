"""Competing growth laws of d_min(L): fits, out-of-sample judgement, information criterion."""

import numpy as np
import pytest

from sattn.experiments.laws import LAWS, fit_law, judge_laws

LENGTHS = 2.0 ** np.arange(6, 16)


def _points(law, noise=0.02, targets=3, seed=0):
    """Points of a known law with multiplicative scatter between targets."""
    truth = {"log": lambda L: 20 * np.log(L) - 40, "power": lambda L: 12 * L ** 0.25,
             "log2": lambda L: 1.5 * np.log(L) ** 2 + 10, "sqrt": lambda L: 0.8 * np.sqrt(L) + 20}
    rng = np.random.default_rng(seed)
    L = np.repeat(LENGTHS, targets)
    return L, truth[law](L) * (1 + noise * rng.standard_normal(L.size))


@pytest.mark.parametrize("law", list(LAWS))
def test_each_law_recovers_its_own_parameters_from_exact_points(law):
    L, d = _points(law, noise=0.0)
    fit = fit_law(law, L, d)
    assert fit.wrss < 1e-12
    np.testing.assert_allclose(fit.predict(L), d, rtol=1e-6)


@pytest.mark.parametrize("law", list(LAWS))
def test_judgement_singles_out_the_true_law(law):
    """Trained on L <= 2048 only, the true law predicts 8192..32768 within the scatter, and the
    others, which agree with it over the short range, are found out."""
    L, d = _points(law, seed=1)
    j = judge_laws(L, d)
    assert j.predict_lengths == (8192, 16384, 32768)
    assert max(abs(v) for v in j.z[law]) <= 3
    assert j.supported == (law,), j.message
    assert j.ok and j.best_aic == law
    assert abs(sum(j.akaike_weights.values()) - 1) < 1e-12


def test_judgement_never_fits_the_points_it_judges():
    """Changing the long lengths' data moves the verdict but not the fitted parameters."""
    L, d = _points("log", seed=2)
    j1 = judge_laws(L, d)
    d2 = d.copy()
    d2[L >= 8192] *= 1.5
    j2 = judge_laws(L, d2)
    for law in LAWS:
        assert j1.fits[law].params == j2.fits[law].params
    assert "log" not in j2.supported


def test_rounding_widens_the_uncertainty():
    L, d = _points("log", seed=3)
    j0 = judge_laws(L, d)
    j1 = judge_laws(L, d, rounding=np.full(d.size, 10.0))
    assert all(abs(a) > abs(b) for a, b in zip(j0.z["sqrt"], j1.z["sqrt"]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(fit_max=8192, predict_min=8192), "must exceed fit_max"),
    (dict(fit_max=128), "at least three lengths"),
    (dict(predict_min=65536), "no measured length"),
    (dict(z_max=0), "z_max"),
    (dict(rounding=[1.0, 2.0]), "rounding"),
])
def test_bad_requests_are_refused(kwargs, match):
    L, d = _points("log")
    with pytest.raises((ValueError, TypeError), match=match):
        judge_laws(L, d, **kwargs)


def test_bad_points_are_refused():
    with pytest.raises(ValueError, match="law must be one of"):
        fit_law("cubic", [2, 3, 4], [1, 2, 3])
    with pytest.raises(ValueError, match="two distinct lengths"):
        fit_law("log", [8, 8, 8], [1, 2, 3])
    with pytest.raises(ValueError, match="positive widths"):
        fit_law("log", [8, 16, 32], [1, 0, 3])
    L, d = _points("log", targets=1)
    with pytest.raises(ValueError, match="needs at least two"):
        judge_laws(L, d)


@pytest.mark.parametrize("law", ["log", "power"])
def test_prediction_sd_matches_the_spread_of_refits(law):
    """The extrapolation's standard deviation from the fit's covariance agrees with the spread of
    the predictions over many independent data sets (within 25%)."""
    preds, sds = [], []
    for seed in range(300):
        L, d = _points(law, noise=0.03, seed=100 + seed)
        keep = L <= 2048
        fit = fit_law(law, L[keep], d[keep])
        preds.append(float(fit.predict(32768.0)))
        sds.append(float(fit.predict_sd(32768.0)))
    assert abs(np.std(preds) / np.sqrt(np.mean(np.square(sds))) - 1) < 0.25
