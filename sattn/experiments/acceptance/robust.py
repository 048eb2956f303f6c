"""Beside the registered analysis: other links, a model-free d_50, a Θ(log L) family, calibration.

The registered analysis (:mod:`~sattn.experiments.acceptance.analysis`) summarises each
acceptance curve by a probit ``p(d) = Phi(b0 + b1 d)`` and tests the log law inside the Box-Cox
family. Nothing here changes it; this module asks how much its verdict owes to its choices:

* **links**: the same per-curve fit with a logit, a log-log ``p = exp(-exp(-eta))`` (the shape of
  a product of many rare, independent row failures, ``prod_r (1 - q_r) ~ exp(-sum_r q_r)``) and a
  complementary log-log ``p = 1 - exp(-exp(eta))`` link (:data:`LINKS`, :func:`glm_fit`), their
  deviances, and the registered test run on each link's ``d_50`` (:func:`analyse_setting_link`);
* a **model-free** ``d_50``: the width where the isotonic (monotone) regression of the measured
  shares crosses one half, interpolated linearly, with the same bootstrap
  (:func:`isotonic_quantile`);
* an **alternative Θ(log L) family** ``a ln L + b ln ln L + c`` (:func:`fit_loglog_family`) next
  to Box-Cox, each with its goodness of fit (chi^2 on the independent per-length means);
* **calibration** on synthetic truths with a known law *and* a known link, including links and
  laws that the registered analysis does not assume (:func:`calibrate_robust`).

References
----------
McCullagh & Nelder, *Generalized Linear Models* (1989), ch. 4 (links, deviance); Barlow et al.,
*Statistical Inference under Order Restrictions* (1972) (pool-adjacent-violators); Box & Cox
(1964). :ref:`ch-log-law`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, log_expit, log_ndtr, ndtr, ndtri
from scipy.stats import chi2 as chi2_dist
from scipy.stats import f as f_dist
from scipy.stats import t as t_dist

from ..._validate import check_int, check_real, check_rng
from ...results import Result
from ..setups import validate_lengths
from .analysis import (
    BOOT_SEED,
    N_BOOT,
    NoiseModel,
    PRIMARY_MIN_L,
    law_basis,
    validate_estimates,
    pad_curves,
    boxcox_profile,  # noqa: F401  (used by Chapter 16 as robust.boxcox_profile, beside the other fits)
    decide,
    pooled_series,
    warnings_off,
)
from .design import acceptance_profile, design_widths, measure_curve

__flat__: list[str] = []
__all__ = [
    *__flat__,
    "LINKS", "Link", "glm_fit", "curve_deviance", "link_quantiles", "isotonic_quantile",
    "isotonic_quantiles", "analyse_setting_link", "LogLogFit", "fit_loglog_family",
    "gof_pvalue", "RobustVerdict", "robust_verdict", "link_curve", "true_law",
    "RobustCalibration", "calibrate_robust", "LINK_NAMES", "METHODS",
]


# ----------------------------------------------------------------------------- links
@dataclass(frozen=True)
class Link:
    """A binomial link: ``p = cdf(eta)`` with its log-probabilities, density and inverse."""

    name: str
    cdf: object
    log_cdf: object      # log p
    log_sf: object       # log (1 - p)
    pdf: object          # dp / deta
    ppf: object          # eta at a given p


def _ll_cdf(e):
    return np.exp(-np.exp(-e))


def _ll_log_sf(e):
    return np.log(-np.expm1(-np.exp(-e)))


def _ll_pdf(e):
    return np.exp(-e - np.exp(-e))


def _cll_cdf(e):
    return -np.expm1(-np.exp(e))


def _cll_log_cdf(e):
    return np.log(-np.expm1(-np.exp(e)))


def _cll_pdf(e):
    return np.exp(e - np.exp(e))


#: The links compared. ``loglog``: ``p = exp(-exp(-eta))``, whose upper tail approaches 1 the
#: way a product of many rare independent failures does; ``cloglog``: ``p = 1 - exp(-exp(eta))``,
#: its mirror image.
LINKS = {
    "probit": Link("probit", ndtr, log_ndtr, lambda e: log_ndtr(-e),
                   lambda e: np.exp(-0.5 * e * e) / math.sqrt(2 * math.pi), ndtri),
    "logit": Link("logit", expit, log_expit, lambda e: log_expit(-e),
                  lambda e: expit(e) * expit(-e), lambda p: np.log(p) - np.log1p(-p)),
    "loglog": Link("loglog", _ll_cdf, lambda e: -np.exp(-e), _ll_log_sf, _ll_pdf,
                   lambda p: -np.log(-np.log(p))),
    "cloglog": Link("cloglog", _cll_cdf, _cll_log_cdf, lambda e: -np.exp(e), _cll_pdf,
                    lambda p: np.log(-np.log1p(-p))),
}
LINK_NAMES = tuple(LINKS)
#: The per-curve summaries the robust analysis runs the registered test on.
METHODS = ("probit", "logit", "loglog", "cloglog", "isotonic")


def _link(link) -> Link:
    if isinstance(link, Link):
        return link
    if link not in LINKS:
        raise ValueError(f"unknown link {link!r}; valid: {', '.join(LINKS)}")
    return LINKS[link]


def glm_fit(d, n, s, link="probit", *, iters=80):
    """Binomial maximum likelihood ``p(d) = F(b0 + b1 d)`` for many curves at once, any link.

    The same algorithm as :func:`~sattn.experiments.acceptance.analysis.probit_fit` (Fisher
    scoring on a standardised width, step halving so the likelihood never falls), for the links
    of :data:`LINKS`. With ``link="probit"`` it gives the registered fit.

    Parameters
    ----------
    d, n, s : array_like, shape (..., W)
        Widths, draws and successes (``n = 0`` entries are padding).
    link : str or Link

    Returns
    -------
    b0, b1 : ndarray, shape (...)
    loglik : ndarray, shape (...)
        The maximised binomial log-likelihood (without the binomial coefficients).
    ok : ndarray of bool, shape (...)
        Converged, counts not separated, slope positive and finite.
    """
    F = _link(link)
    d = np.asarray(d, float)
    n = np.asarray(n, float)
    s = np.asarray(s, float)
    if not (d.shape == n.shape == s.shape) or d.ndim < 1:
        raise ValueError(f"d, n and s must have one shape (..., W), got {d.shape}, {n.shape}, "
                         f"{s.shape}")
    if (n < 0).any() or (s < 0).any() or (s > n).any():
        raise ValueError("counts must satisfy 0 <= successes <= draws")
    wsum = n.sum(-1)
    safe = np.where(wsum > 0, wsum, 1.0)
    c = (n * d).sum(-1) / safe
    sc = np.sqrt((n * (d - c[..., None]) ** 2).sum(-1) / safe)
    sc = np.where(sc > 0, sc, 1.0)
    x = (d - c[..., None]) / sc[..., None]
    y = np.where(n > 0, s / np.where(n > 0, n, 1.0), 0.0)

    def loglik(bb):
        eta = np.clip(bb[..., :1] + bb[..., 1:] * x, -40.0, 40.0)
        with np.errstate(divide="ignore", over="ignore"):
            a = np.where(s > 0, s * F.log_cdf(eta), 0.0)
            b = np.where(n - s > 0, (n - s) * F.log_sf(eta), 0.0)
        return (a + b).sum(-1)

    def wls(w, z):
        a00 = w.sum(-1) + 1e-9
        a01 = (w * x).sum(-1)
        a11 = (w * x * x).sum(-1) + 1e-9
        r0 = (w * z).sum(-1)
        r1 = (w * x * z).sum(-1)
        det = a00 * a11 - a01 ** 2
        det = np.where(np.abs(det) > 1e-300, det, 1e-300)
        return np.stack([(a11 * r0 - a01 * r1) / det, (a00 * r1 - a01 * r0) / det], -1)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        b = wls(n, F.ppf(np.clip((s + 0.5) / (n + 1.0), 1e-6, 1 - 1e-6)))
    b[..., 1] = np.maximum(np.nan_to_num(b[..., 1], nan=0.1), 0.1)
    b[..., 0] = np.nan_to_num(b[..., 0])
    ll = loglik(b)
    conv = np.zeros(d.shape[:-1], bool)
    for _ in range(iters):
        eta = np.clip(b[..., :1] + b[..., 1:] * x, -30.0, 30.0)
        mu = np.clip(F.cdf(eta), 1e-15, 1 - 1e-15)
        g = np.maximum(F.pdf(eta), 1e-300)
        w = n * g ** 2 / (mu * (1 - mu))
        z = eta + (y - mu) / g
        step = wls(w, z) - b
        t = np.ones(ll.shape)
        for _h in range(30):
            nb = b + t[..., None] * step
            nll = loglik(nb)
            worse = ~(nll >= ll - 1e-12)
            if not worse.any():
                break
            t = np.where(worse, t / 2, t)
        nb = np.where((nll >= ll - 1e-12)[..., None], nb, b)
        nll = np.maximum(nll, ll)
        conv = (np.abs(nb - b).max(-1) < 1e-9) | (np.abs(nll - ll) < 1e-11)
        b, ll = nb, nll
        if conv.all():
            break
    b0s, b1s = b[..., 0], b[..., 1]
    mixed = ((s > 0) & (s < n)).any(-1)
    ok = conv & mixed & (b1s > 0) & (b1s < 50.0) & (np.abs(b0s) < 50.0) & (wsum > 0)
    b1 = b1s / sc
    return b0s - b1 * c, b1, ll, ok


def curve_deviance(d, n, s, link="probit"):
    """Binomial deviance of each curve's fit (``2 (loglik_saturated - loglik_fit)``), shape (...).
    Summed over curves it has ``sum (W_c - 2)`` degrees of freedom."""
    n = np.asarray(n, float)
    s = np.asarray(s, float)
    _, _, ll, ok = glm_fit(d, n, s, link)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, s / np.where(n > 0, n, 1), 0.0)
        sat = (np.where(s > 0, s * np.log(np.where(p > 0, p, 1)), 0.0)
               + np.where(n - s > 0, (n - s) * np.log(np.where(p < 1, 1 - p, 1)), 0.0)).sum(-1)
    return 2 * (sat - ll), ok


def _quantile(link, b0, b1, q):
    return (_link(link).ppf(q) - b0) / np.where(np.asarray(b1) > 0, b1, np.nan)


# ----------------------------------------------------------------------------- isotonic
def _pava(y, w):
    """Weighted pool-adjacent-violators: the non-decreasing fit to ``y`` (1-D)."""
    if not (y[1:] < y[:-1]).any():        # already non-decreasing: nothing to pool
        return np.array(y, float)
    vals, wts, cnt = [], [], []
    for yi, wi in zip(y.tolist(), w.tolist()):      # Python floats: the same IEEE arithmetic
        vals.append(yi)
        wts.append(wi)
        cnt.append(1)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            wv = wts[-2] + wts[-1]
            v = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / wv
            c = cnt[-2] + cnt[-1]
            vals[-2:], wts[-2:], cnt[-2:] = [v], [wv], [c]
    return np.repeat(vals, cnt)


def isotonic_quantile(d, n, s, q=0.5):
    """The width where the isotonic regression of one curve's shares crosses ``q``.

    The shares ``s/n`` are fitted by the non-decreasing step function of least weighted squares
    (weights ``n``); ``d_q`` is the first crossing of ``q`` by the straight lines joining the
    fitted values at consecutive measured widths. No law of ``p(d)`` is assumed.

    Returns
    -------
    float
        ``d_q``, or NaN when the fitted curve does not reach ``q`` or starts above it (no
        crossing inside the measured widths: nothing is extrapolated).
    """
    d = np.asarray(d, float)
    n = np.asarray(n, float)
    s = np.asarray(s, float)
    if not (d.ndim == 1 and d.shape == n.shape == s.shape):
        raise ValueError(f"d, n and s must be 1-D of one length, got {d.shape}, {n.shape}, "
                         f"{s.shape}")
    q = check_real("q", q, low=0.0, high=1.0, low_open=True, high_open=True)
    return _isotonic_crossing(d, n, s, q)


def _isotonic_crossing(d, n, s, q):
    """:func:`isotonic_quantile` of one curve given as 1-D float arrays of one length and a
    checked ``q``."""
    keep = n > 0
    d, n, s = d[keep], n[keep], s[keep]
    if d.size < 2 or (d[1:] <= d[:-1]).any():
        raise ValueError("a curve needs at least two widths with draws, in increasing order")
    f = _pava(s / n, n)
    if f[0] >= q or f[-1] < q:
        return math.nan
    j = int(np.argmax(f >= q))          # first fitted value at or above q (j >= 1)
    return float(d[j - 1] + (d[j] - d[j - 1]) * (q - f[j - 1]) / (f[j] - f[j - 1]))


def isotonic_quantiles(d, n, s, q=0.5):
    """:func:`isotonic_quantile` for each curve of padded arrays of shape (..., W)."""
    d = np.asarray(d, float)
    n = np.asarray(n, float)
    s = np.asarray(s, float)
    if not (d.ndim >= 1 and d.shape == n.shape == s.shape):
        raise ValueError(f"d, n and s must have one shape (..., W), got {d.shape}, {n.shape}, "
                         f"{s.shape}")
    q = check_real("q", q, low=0.0, high=1.0, low_open=True, high_open=True)
    out = np.empty(d.shape[:-1])
    for idx in np.ndindex(out.shape):
        out[idx] = _isotonic_crossing(d[idx], n[idx], s[idx], q)
    return out


def link_quantiles(d, n, s, method="probit", *, quantile=0.5, n_boot=N_BOOT, rng=None):
    """``d_q`` of each curve under ``method`` (a link of :data:`LINKS` or ``"isotonic"``), with
    the registered bootstrap (draws of each width resampled binomially, ``n_boot`` times).

    Returns ``{"est": (C,), "var": (C,), "ok": (C,)}``; NaN where a curve has no ``d_q``.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    d = np.atleast_2d(np.asarray(d, float))
    n = np.atleast_2d(np.asarray(n, float))
    s = np.atleast_2d(np.asarray(s, float))
    n_boot = check_int("n_boot", n_boot, low=20)
    rng = np.random.default_rng(BOOT_SEED) if rng is None else check_rng("rng", rng)
    p = np.where(n > 0, s / np.where(n > 0, n, 1), 0.0)
    sb = rng.binomial(n.astype(np.int64)[None], p[None], size=(n_boot,) + n.shape)
    if method == "isotonic":
        est = isotonic_quantiles(d, n, s, quantile)
        boot = isotonic_quantiles(np.broadcast_to(d, sb.shape), np.broadcast_to(n, sb.shape),
                                  sb, quantile)
        ok = np.isfinite(est)
    else:
        b0, b1, _, ok = glm_fit(d, n, s, method)
        est = np.where(ok, _quantile(method, b0, b1, quantile), np.nan)
        bb0, bb1, _, bok = glm_fit(np.broadcast_to(d, sb.shape), np.broadcast_to(n, sb.shape),
                                   sb, method)
        boot = np.where(bok, _quantile(method, bb0, bb1, quantile), np.nan)
    with np.errstate(invalid="ignore"), warnings_off():
        var = np.nanvar(boot, axis=0, ddof=1)
    return {"est": est, "var": var, "ok": ok}


def analyse_setting_link(by_L: dict, method="probit", *, quantile=0.5, n_boot=N_BOOT, rng=None):
    """Per-length ``(L, mean d_q, variance, dropped)`` of one setting under ``method``.

    The registered pooling (:func:`~sattn.experiments.acceptance.analysis.pooled_series`) on the
    per-curve ``d_q`` of :func:`link_quantiles`; a length where some target has no ``d_q`` is
    left out and listed in ``dropped``. With ``method="probit"`` this is the registered series.
    """
    rng = np.random.default_rng(BOOT_SEED) if rng is None else check_rng("rng", rng)
    Ls, est, var, dropped = [], [], [], []
    for L in sorted(by_L):
        curves = [by_L[L][t] for t in sorted(by_L[L])]
        D, N, S = pad_curves(curves)
        r = link_quantiles(D, N, S, method, quantile=quantile, n_boot=n_boot, rng=rng)
        if len(curves) < 2 or not (np.isfinite(r["est"]).all() and np.isfinite(r["var"]).all()
                                   and (r["var"] > 0).all()):
            dropped.append(int(L))
            continue
        Ls.append(L)
        est.append(r["est"])
        var.append(r["var"])
    if not Ls:
        return np.array([]), np.array([]), np.array([]), dropped
    m, vm = pooled_series(np.array(est), np.array(var))
    return np.array(Ls, float), m, vm, dropped


# ----------------------------------------------------------------------------- laws
def gof_pvalue(chi2_value, dof, *, df_var=None):
    """Goodness-of-fit p-value of a weighted fit: ``P(chi^2_dof >= chi2_value)``; with
    ``df_var`` (the degrees of freedom of the estimated variances) the F(dof, df_var) version
    of ``chi2_value / dof``."""
    dof = check_int("dof", dof, low=1)
    if df_var is None:
        return float(chi2_dist.sf(chi2_value, dof))
    return float(f_dist.sf(chi2_value / dof, dof, check_int("df_var", df_var, low=1)))


@dataclass
class LogLogFit:
    """``d = a ln L + b ln ln L + c`` fitted by weighted least squares with known variances."""

    coef: np.ndarray          # (a, b, c)
    cov: np.ndarray = field(repr=False)
    chi2: float = 0.0
    n: int = 0

    def predict(self, L):
        return self._X(L) @ self.coef

    def predict_var(self, L):
        X = self._X(L)
        return np.einsum("...i,ij,...j->...", X, self.cov, X)

    @staticmethod
    def _X(L):
        lnL = np.log(np.asarray(L, float))
        return np.stack([lnL, np.log(lnL), np.ones_like(lnL)], -1)

    def b_interval(self, level=0.95, df=None):
        """Interval of the ``ln ln L`` coefficient (normal, or t with ``df``)."""
        z = ndtri(0.5 + level / 2) if df is None else t_dist.ppf(0.5 + level / 2, df)
        se = math.sqrt(self.cov[1, 1])
        return self.coef[1] - z * se, self.coef[1] + z * se


def fit_loglog_family(L, y, v) -> LogLogFit:
    """Fit ``a ln L + b ln ln L + c`` to per-length means ``y`` with known variances ``v``.

    A Θ(ln L) law for ``a > 0`` whatever ``b``: the ``ln ln L`` term bends the curve on a finite
    range of lengths without changing its order of growth.
    """
    L, y, v = validate_estimates(L, y, v)
    if L.size < 4:
        raise ValueError(f"three parameters need at least 4 lengths, got {L.size}")
    X = LogLogFit._X(L)
    w = 1.0 / v
    A = X.T @ (X * w[:, None])
    cov = np.linalg.inv(A)
    coef = cov @ (X.T @ (w * y))
    chi = float((w * (y - X @ coef) ** 2).sum())
    return LogLogFit(coef, cov, chi, int(L.size))


@dataclass
class RobustVerdict(Result):
    """The registered test and the alternative family on one setting's series under one method.

    ``beta``, ``lo``/``hi`` (95%) and ``bon_lo``/``bon_hi`` (Bonferroni): the Box-Cox exponent
    on the primary window; ``boxcox_p``, ``log_p``, ``loglog_p``: goodness-of-fit p-values (chi^2)
    of Box-Cox, the log law and ``a ln L + b ln ln L + c``; ``lnln_b`` and its 95% interval.
    """

    setup: str
    method: str
    lengths: tuple
    beta: float
    lo: float
    hi: float
    bon_lo: float
    bon_hi: float
    chi2_boxcox: float
    chi2_log: float
    chi2_loglog: float
    boxcox_p: float
    log_p: float
    loglog_p: float
    lnln_b: float
    lnln_lo: float
    lnln_hi: float
    fit_loglog: LogLogFit = field(repr=False, default=None)
    fit_boxcox: object = field(repr=False, default=None)

    @property
    def ok(self) -> bool:
        """The log law is consistent (the 95% interval of beta contains 0)."""
        return bool(self.lo <= 0 <= self.hi)

    @property
    def bonferroni_ok(self) -> bool:
        return bool(self.bon_lo <= 0 <= self.bon_hi)

    @property
    def message(self) -> str:
        return (f"{self.setup} [{self.method}]: beta {self.beta:+.3f} [{self.lo:+.3f}, "
                f"{self.hi:+.3f}], Bonferroni [{self.bon_lo:+.3f}, {self.bon_hi:+.3f}]; fit p: "
                f"Box-Cox {self.boxcox_p:.2g}, log {self.log_p:.2g}, log+lnln "
                f"{self.loglog_p:.2g}")


def robust_verdict(setup, L, y, v, *, method="probit", df, primary_min=PRIMARY_MIN_L,
                   n_settings=6) -> RobustVerdict:
    """The registered decision (:func:`~sattn.experiments.acceptance.analysis.decide`) on a
    series, with the goodness of fit of Box-Cox, of the log law and of the ``ln ln L`` family on
    the same primary window (chi^2 with ``n - 3``, ``n - 2`` and ``n - 3`` degrees of freedom)."""
    L, y, v = validate_estimates(L, y, v)
    dec = decide(setup, L, y, v, df=df, primary_min=primary_min, n_settings=n_settings)
    m = L >= primary_min
    ll = fit_loglog_family(L[m], y[m], v[m])
    n = int(m.sum())
    p = dec.profile
    b_lo, b_hi = ll.b_interval()
    return RobustVerdict(
        str(setup), method, tuple(int(x) for x in L[m]), p.p_hat, p.lo, p.hi,
        dec.bonferroni.lo, dec.bonferroni.hi, p.chi2_min, p.chi2_log, ll.chi2,
        gof_pvalue(p.chi2_min, n - 3), gof_pvalue(p.chi2_log, n - 2), gof_pvalue(ll.chi2, n - 3),
        float(ll.coef[1]), float(b_lo), float(b_hi), ll, p.fit)


# ----------------------------------------------------------------------------- calibration
def link_curve(link, d50, scale):
    """``p(d)`` of a synthetic curve: link ``link`` through ``p(d50) = 1/2`` whose slope at
    ``d50`` equals that of the probit ``Phi((d - d50) / scale)``."""
    F = _link(link)
    m = float(F.ppf(0.5))
    c = (1 / math.sqrt(2 * math.pi)) / float(F.pdf(m))

    def p(d):
        return F.cdf(m + c * (np.asarray(d, float) - d50) / scale)
    return p


def true_law(kind, L_fit, y_fit, v_fit, *, p=0.0):
    """A synthetic truth ``D(L)`` fitted (weighted least squares) to a setting's series:
    ``"log"``: ``a ln L + b``; ``"loglog"``: ``a ln L + b ln ln L + c``; ``"boxcox"``: Box-Cox at
    exponent ``p`` (``a`` and ``c`` fitted). Returns a function of ``L``."""
    L_fit, y_fit, v_fit = validate_estimates(L_fit, y_fit, v_fit)
    if kind == "loglog":
        return fit_loglog_family(L_fit, y_fit, v_fit).predict
    if kind in ("log", "boxcox"):
        pp = 0.0 if kind == "log" else float(p)
        x = law_basis("boxcox", L_fit, pp)
        w = 1 / v_fit
        A = np.array([[np.sum(w * x * x), np.sum(w * x)], [np.sum(w * x), np.sum(w)]])
        a, c = np.linalg.solve(A, [np.sum(w * x * y_fit), np.sum(w * y_fit)])
        return lambda L: a * law_basis("boxcox", L, pp) + c
    raise ValueError(f"unknown law {kind!r}; valid: log, loglog, boxcox")


@dataclass
class RobustCalibration(Result):
    """Rejection rates on synthetic data with a known law and link.

    ``rates[(truth, link, method)]`` = share of synthetic data sets in which the method's
    registered test rejects the log law at 95% (``reject``), finds ``beta < 0`` rejected
    (``reject_neg``), and in which the ``ln ln L`` coefficient's 95% interval excludes 0
    (``lnln``), and Box-Cox's goodness-of-fit p is below 0.05 (``boxcox_bad``).
    """

    setup: str
    lengths: tuple
    reps: int
    rates: dict

    @property
    def ok(self) -> bool:
        """Every method rejects a true log law (under every link tried) at most 10%."""
        return all(r["reject"] <= 0.10 for (t, _, _), r in self.rates.items() if t == "log")

    @property
    def message(self) -> str:
        worst = max((r["reject"] for (t, _, _), r in self.rates.items() if t == "log"),
                    default=math.nan)
        return (f"{self.setup}: {self.reps} synthetic data sets per (truth, link); largest "
                f"false rejection of a true log law {100 * worst:.0f}%")


def calibrate_robust(noise: NoiseModel, truths: dict, *, links=("probit", "loglog"),
                     methods=("probit", "loglog", "isotonic"), profile="paper", lengths=None,
                     reps=40, seed=0, n_boot=N_BOOT) -> RobustCalibration:
    """Run the registered design and every method's test on synthetic curves.

    For each truth ``D`` (``{name: callable}``, e.g. from :func:`true_law`) and each true link,
    per replicate: per (L, target) ``d50 = D(L) (1 + tau_rel zeta)``, counts drawn from
    :func:`link_curve` with ``scale = sigma_rel d50`` at the widths the registered design and
    extension rule choose (anchor: the width where the mean curve accepts 4%); then each method's
    series (:func:`analyse_setting_link`) and :func:`robust_verdict` on the primary window.
    """
    cfg = acceptance_profile(profile)
    reps = check_int("reps", reps, low=1)
    Ls = validate_lengths(cfg["lengths"] if lengths is None else lengths)
    rng = np.random.default_rng(seed)
    rule = dict(cfg["extend"])
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown method {m!r}; valid: {', '.join(METHODS)}")
    rates = {}
    for tname, D in truths.items():
        for lk in links:
            tally = {m: np.zeros(4) for m in methods}
            for _ in range(reps):
                by_L = {}
                for L in Ls:
                    DL = float(D(L))
                    anchor_p = link_curve(lk, DL, noise.sigma_rel * DL)
                    grid = np.linspace(0.3 * DL, 1.5 * DL, 2401)
                    m_anchor = float(grid[np.argmax(anchor_p(grid) >= 0.04)])
                    ws = design_widths(m_anchor, L, cfg["factors"])
                    nd = cfg["draws_small"] if L < cfg["draws_switch_L"] else cfg["draws_large"]
                    by_L[L] = {}
                    for t in range(cfg["targets"]):
                        d50 = DL * (1 + noise.tau_rel * rng.standard_normal())
                        pc = link_curve(lk, d50, noise.sigma_rel * d50)

                        def count(d, pc=pc, nd=nd):
                            return (nd, int(rng.binomial(nd, float(pc(d)))))
                        cnt = measure_curve(ws, L, rule, count)
                        dd = np.array(sorted(cnt))
                        by_L[L][t] = (dd, np.array([cnt[x][0] for x in dd]),
                                      np.array([cnt[x][1] for x in dd]))
                for m in methods:
                    Lm, y, v, _ = analyse_setting_link(by_L, m, n_boot=n_boot, rng=rng)
                    if (Lm >= PRIMARY_MIN_L).sum() < 4:
                        continue
                    r = robust_verdict(noise.setup, Lm, y, v, method=m,
                                       df=len(Lm) * (cfg["targets"] - 1))
                    tally[m] += [not r.ok, (not r.ok) and r.hi < 0,
                                 not (r.lnln_lo <= 0 <= r.lnln_hi), r.boxcox_p < 0.05]
            for m in methods:
                rates[(tname, lk, m)] = dict(zip(("reject", "reject_neg", "lnln", "boxcox_bad"),
                                                 (tally[m] / reps).tolist()))
    return RobustCalibration(noise.setup, tuple(Ls), reps, rates)
