"""The registered analysis of the acceptance curves: curves, laws, decision, calibration.

Steps 2 to 6 of :mod:`sattn.experiments.acceptance`, and the comparisons the chapters make
beside them: the book's model of ``p(d)`` and the bits an accepted draw needs.

References
----------
Box & Cox (1964); Akaike (1974); Efron & Tibshirani, *An Introduction to the Bootstrap*
(1993). :ref:`ch-log-law`.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri
from scipy.stats import chi2
from scipy.stats import f as f_dist

from ..._validate import check_int, check_real, check_rng
from ...results import Result
from ..engine import FastEngine
from ..prediction import draw_success_probability
from ...runs.host import one_blas_thread
from ..protocol import load_figure
from ..setups import (
    ROOT_SEED,
    SETUPS,
    validate_lengths,
)
from ..target import draw_generator, prepare_target
from .design import AcceptanceTask, acceptance_profile, design_widths, measure_curve

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [
    *__flat__,
    "QUANTILES", "PRIMARY_MIN_L", "WINDOWS", "N_BOOT", "BOOT_SEED", "P_GRID", "SIGMA_REL_PRIOR",
    "probit_fit", "curve_quantiles", "warnings_off", "pooled_series", "LawFitW", "BoxCoxProfile",
    "boxcox_profile", "fit_laws", "window_table", "Decision", "decide", "curves_by_setting",
    "analyse_setting", "NoiseModel", "decades_noise_model", "curves_noise_model",
    "synthetic_laws", "Calibration", "calibrate", "wilson_interval", "compare_model",
    "accepted_draw_bits",
    # shared with the analyses beside the registered one (:mod:`.robust`, :mod:`.out_of_sample`)
    "validate_estimates", "law_basis", "pad_curves",
]

#: The quantiles of p(d) that are estimated (d_05 is a check, d_50 is the statistic of the test).
QUANTILES = (0.05, 0.25, 0.50)
#: The primary fit window of the decision: every measured length from this one on.
PRIMARY_MIN_L = 256
#: The secondary fit windows, reported side by side (fits on them predict every longer length).
WINDOWS = ((64, 2048), (256, 2048), (512, 2048))
#: Bootstrap resamples per curve (draws resampled within each width).
N_BOOT = 100
#: Seed of every bootstrap of the analysis.
BOOT_SEED = 20261202
#: The Box-Cox exponents profiled (the interval is read off this grid, interpolated).
P_GRID = np.round(np.arange(-1.5, 2.0 + 1e-9, 0.005), 6)


# ----------------------------------------------------------------------------- curves
def probit_fit(d, n, s, *, iters=60):
    """Binomial maximum-likelihood probit ``p(d) = Phi(b0 + b1 d)`` for many curves at once.

    Parameters
    ----------
    d, n, s : array_like, shape (..., W)
        Widths, draws and successes of each curve (entries with ``n = 0`` are padding).

    Returns
    -------
    b0, b1 : ndarray, shape (...)
        Intercept and slope (per unit of width).
    ok : ndarray of bool, shape (...)
        Converged with a positive, finite slope (False for a curve without a crossing, e.g.
        all draws accepted or none, or perfectly separated counts).
    """
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
        eta = bb[..., :1] + bb[..., 1:] * x
        return (s * _log_ndtr(eta) + (n - s) * _log_ndtr(-eta)).sum(-1)

    def wls(w, z):
        a00 = w.sum(-1) + 1e-9
        a01 = (w * x).sum(-1)
        a11 = (w * x * x).sum(-1) + 1e-9
        r0 = (w * z).sum(-1)
        r1 = (w * x * z).sum(-1)
        det = a00 * a11 - a01 ** 2
        det = np.where(np.abs(det) > 1e-300, det, 1e-300)
        return np.stack([(a11 * r0 - a01 * r1) / det, (a00 * r1 - a01 * r0) / det], -1)

    # start: weighted LS on the empirical probits of the smoothed proportions
    b = wls(n, ndtri((s + 0.5) / (n + 1.0)))
    b[..., 1] = np.maximum(b[..., 1], 0.1)
    ll = loglik(b)
    conv = np.zeros(d.shape[:-1], bool)
    for _ in range(iters):
        eta = np.clip(b[..., :1] + b[..., 1:] * x, -30.0, 30.0)
        mu = np.clip(ndtr(eta), 1e-15, 1 - 1e-15)
        phi = np.exp(-0.5 * eta ** 2) / math.sqrt(2 * math.pi)
        w = n * phi ** 2 / (mu * (1 - mu))
        z = eta + (y - mu) / np.maximum(phi, 1e-300)
        step = wls(w, z) - b
        t = np.ones(ll.shape)
        for _h in range(30):      # step halving: never lower the likelihood
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
    mixed = ((s > 0) & (s < n)).any(-1)      # without it the counts are separated (no MLE)
    ok = conv & mixed & (b1s > 0) & (b1s < 50.0) & (np.abs(b0s) < 50.0) & (wsum > 0)
    # back to widths: b0 + b1 (d - c)/sc
    b1 = b1s / sc
    b0 = b0s - b1 * c
    return b0, b1, ok


def _log_ndtr(x):
    return log_ndtr(x)


def _quantile_width(b0, b1, q):
    """``d_q`` of probit fits; NaN where a fit has no positive slope (separated counts of a
    bootstrap resample have no maximum-likelihood fit; their slope may be exactly 0)."""
    b1 = np.asarray(b1, float)
    return (ndtri(q) - b0) / np.where(b1 > 0, b1, np.nan)


def curve_quantiles(d, n, s, *, quantiles=QUANTILES, n_boot=N_BOOT, rng=None):
    """``d_q`` of each curve from the probit fit, with bootstrap variances and 95% intervals.

    The bootstrap resamples the draws within each width: ``s* ~ Binomial(n, s/n)``.

    Parameters
    ----------
    d, n, s : array_like, shape (C, W)
        Curves (pad with ``n = 0``).
    quantiles : sequence of float in (0, 1)
    n_boot : int
        Bootstrap resamples (``>= 20``).
    rng : numpy.random.Generator, optional
        Default ``default_rng(BOOT_SEED)``.

    Returns
    -------
    dict
        ``est`` (C, Q), ``var`` (C, Q), ``lo``/``hi`` (C, Q) percentile intervals, ``ok`` (C,)
        (the fit of the data converged), ``boot_ok`` (C,) (share of converged resamples).
    """
    d = np.atleast_2d(np.asarray(d, float))
    n = np.atleast_2d(np.asarray(n, float))
    s = np.atleast_2d(np.asarray(s, float))
    n_boot = check_int("n_boot", n_boot, low=20)
    rng = np.random.default_rng(BOOT_SEED) if rng is None else check_rng("rng", rng)
    qs = [check_real(f"quantiles[{i}]", q, low=0.0, high=1.0, low_open=True, high_open=True)
          for i, q in enumerate(quantiles)]
    b0, b1, ok = probit_fit(d, n, s)
    est = np.stack([_quantile_width(b0, b1, q) for q in qs], -1)
    est[~ok] = np.nan
    p = np.where(n > 0, s / np.where(n > 0, n, 1), 0.0)
    sb = rng.binomial(n.astype(np.int64)[None], p[None], size=(n_boot,) + n.shape)
    bb0, bb1, bok = probit_fit(np.broadcast_to(d, sb.shape), np.broadcast_to(n, sb.shape), sb)
    boot = np.stack([_quantile_width(bb0, bb1, q) for q in qs], -1)
    boot[~bok] = np.nan
    with np.errstate(invalid="ignore"), warnings_off():
        var = np.nanvar(boot, axis=0, ddof=1)
        lo = np.nanpercentile(boot, 2.5, axis=0)
        hi = np.nanpercentile(boot, 97.5, axis=0)
    return {"est": est, "var": var, "lo": lo, "hi": hi, "ok": ok, "boot_ok": bok.mean(0)}


@contextlib.contextmanager
def warnings_off():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def pooled_series(est, var):
    """Per-length means of the targets' ``d_q`` and their replicate variances, one setting.

    Parameters
    ----------
    est, var : array_like, shape (n_L, T)
        Each target's estimate and bootstrap variance at each length (``T >= 2`` targets).

    Returns
    -------
    mean, var_mean : ndarray, shape (n_L,)
        ``mean_L`` is the mean over targets; ``var_mean_L = max(c mean_L^2, mean_t var_t) / T``
        where ``c`` is the relative between-target variance pooled over the setting's lengths,
        ``c = sum_L s_L^2 / mean_L^2 / n_L`` (each ``s_L^2`` the sample variance of the targets at
        ``L``). Pooling gives ``c`` ``n_L (T - 1)`` degrees of freedom instead of ``T - 1``; both
        terms are replicate variances (targets, draws), neither depends on a law's fit.
    """
    est = np.asarray(est, float)
    var = np.asarray(var, float)
    if est.ndim != 2 or est.shape != var.shape or est.shape[1] < 2:
        raise ValueError(f"est and var must have one shape (lengths, targets >= 2), got "
                         f"{est.shape} and {var.shape}")
    if not (np.isfinite(est).all() and np.isfinite(var).all()):
        raise ValueError("est and var must be finite (drop the lengths whose fits failed)")
    T = est.shape[1]
    m = est.mean(1)
    c = float(np.mean(est.var(1, ddof=1) / m ** 2))
    return m, np.maximum(c * m ** 2, var.mean(1)) / T


# ----------------------------------------------------------------------------- laws
def law_basis(law, L, p=None):
    """The regressor x(L) of a law d = a x(L) + c: ``log``, ``log2``, ``sqrt``, or ``boxcox``
    with exponent ``p`` ((L^p - 1)/p, ln L at p = 0); ValueError for any other name."""
    L = np.asarray(L, float)
    if law == "log":
        return np.log(L)
    if law == "log2":
        return np.log(L) ** 2
    if law == "sqrt":
        return np.sqrt(L)
    if law == "boxcox":
        lnL = np.log(L)
        if abs(p) < 1e-12:
            return lnL
        return np.expm1(p * lnL) / p
    raise ValueError(f"unknown law {law!r}; valid: log, log2, sqrt, boxcox")


def _wls(x, y, v):
    """Weighted LS of y on [x, 1] with known variances v: (coef, cov, chi2). Vectorised over
    leading axes of x (y, v broadcast)."""
    w = 1.0 / v
    s0 = w.sum(-1)
    s1 = (w * x).sum(-1)
    s2 = (w * x * x).sum(-1)
    t0 = (w * y).sum(-1)
    t1 = (w * x * y).sum(-1)
    det = s0 * s2 - s1 ** 2
    a = (s0 * t1 - s1 * t0) / det
    b = (s2 * t0 - s1 * t1) / det
    res = y - (a[..., None] * x + b[..., None])
    chi = (w * res ** 2).sum(-1)
    cov = np.stack([np.stack([s0 / det, -s1 / det], -1), np.stack([-s1 / det, s2 / det], -1)],
                   -2)
    return a, b, cov, chi


@dataclass
class LawFitW:
    """One law fitted by weighted least squares with known variances on per-length means."""

    law: str
    a: float
    b: float
    p: float | None
    chi2: float
    n: int
    k: int
    cov: np.ndarray = field(repr=False, default=None)

    @property
    def aic(self) -> float:
        return self.chi2 + 2 * self.k

    def predict(self, L):
        return self.a * law_basis(self.law, L, self.p) + self.b

    def predict_var(self, L):
        """Variance of the prediction from the parameter covariance (known variances; for
        Box-Cox at its fitted ``p``, conditional on ``p``)."""
        g = np.stack([law_basis(self.law, L, self.p), np.ones_like(np.asarray(L, float))], -1)
        return np.einsum("...i,ij,...j->...", g, self.cov, g)


def validate_estimates(L, y, v):
    """Lengths, d_50 estimates and their variances as float arrays of one shape.

    ValueError unless all three are 1-D, finite, of one length >= 3, with L > 1 and v > 0."""
    L = np.asarray(L, float)
    y = np.asarray(y, float)
    v = np.asarray(v, float)
    if L.ndim != 1 or L.shape != y.shape or L.shape != v.shape or L.size < 3:
        raise ValueError(f"L, y and v must be 1-D of one length >= 3, got {L.shape}, {y.shape}, "
                         f"{v.shape}")
    if not (np.isfinite(L).all() and np.isfinite(y).all() and np.isfinite(v).all()):
        raise ValueError("L, y and v must be finite")
    if (L <= 1).any() or (v <= 0).any():
        raise ValueError("L must be > 1 and the variances v > 0")
    return L, y, v


@dataclass
class BoxCoxProfile(Result):
    """The profile of chi^2 over the Box-Cox exponent ``p`` and the interval it gives."""

    p_hat: float
    lo: float
    hi: float
    level: float
    chi2_min: float
    chi2_log: float       # chi^2 of the log law (p = 0)
    lo_open: bool         # the interval reaches the grid's lower end
    hi_open: bool
    fit: LawFitW = field(repr=False, default=None)

    @property
    def ok(self) -> bool:
        """The log law (p = 0) lies inside the interval."""
        return bool(self.lo <= 0.0 <= self.hi)

    @property
    def message(self) -> str:
        lo = "<" + f"{self.lo:.3f}" if self.lo_open else f"{self.lo:.3f}"
        hi = ">" + f"{self.hi:.3f}" if self.hi_open else f"{self.hi:.3f}"
        return (f"Box-Cox beta = {self.p_hat:.3f}, {100 * self.level:g}% interval [{lo}, {hi}]: "
                f"log law {'consistent' if self.ok else 'rejected'}")


def boxcox_profile(L, y, v, *, level=0.95, df=None, grid=P_GRID) -> BoxCoxProfile:
    """Profile-likelihood interval for ``p`` in ``y = a (L^p - 1)/p + c`` (given variances).

    For each ``p`` of ``grid`` the law is linear in ``(a, c)`` and fitted exactly; the interval
    is ``{p : chi2(p) - min chi2 <= t}``, its ends interpolated on the grid, with ``t`` the
    ``level`` quantile of chi^2 with one degree of freedom, or, when the variances were
    estimated with ``df`` degrees of freedom, of the F distribution with (1, df).
    """
    L, y, v = validate_estimates(L, y, v)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    grid = np.asarray(grid, float)
    lnL = np.log(L)
    with np.errstate(over="ignore", invalid="ignore"):
        X = np.where(np.abs(grid)[:, None] < 1e-12, lnL[None],
                     np.expm1(grid[:, None] * lnL[None]) / np.where(grid == 0, 1, grid)[:, None])
    a, b, cov, chi = _wls(X, y[None], v[None])
    chi = np.where(np.isfinite(chi), chi, np.inf)
    i = int(np.argmin(chi))
    if df is None:
        cut = chi[i] + chi2.ppf(level, 1)
    else:
        cut = chi[i] + f_dist.ppf(level, 1, check_int("df", df, low=1))
    inside = chi <= cut
    j0 = i
    while j0 > 0 and inside[j0 - 1]:
        j0 -= 1
    j1 = i
    while j1 < len(grid) - 1 and inside[j1 + 1]:
        j1 += 1

    def interp(ja, jb):   # ja inside, jb outside
        ca, cb = chi[ja] - cut, chi[jb] - cut
        return float(grid[ja] + (grid[jb] - grid[ja]) * ca / (ca - cb))
    lo = float(grid[0]) if j0 == 0 else interp(j0, j0 - 1)
    hi = float(grid[-1]) if j1 == len(grid) - 1 else interp(j1, j1 + 1)
    k0 = int(np.argmin(np.abs(grid)))
    fit = LawFitW("boxcox", float(a[i]), float(b[i]), float(grid[i]), float(chi[i]), L.size, 3,
                  cov[i])
    return BoxCoxProfile(p_hat=float(grid[i]), lo=lo, hi=hi, level=level,
                         chi2_min=float(chi[i]), chi2_log=float(chi[k0]), lo_open=j0 == 0,
                         hi_open=j1 == len(grid) - 1, fit=fit)


def fit_laws(L, y, v) -> dict:
    """The four laws on per-length means ``y`` with known variances ``v``.

    Returns ``{law: LawFitW}`` for ``log``, ``log2``, ``sqrt`` (two parameters) and ``boxcox``
    (three: ``a, c`` and ``p``; chi^2 minimised over ``P_GRID``).
    """
    L, y, v = validate_estimates(L, y, v)
    out = {}
    for law in ("log", "log2", "sqrt"):
        a, b, cov, chi = _wls(law_basis(law, L), y, v)
        out[law] = LawFitW(law, float(a), float(b), None, float(chi), L.size, 2, cov)
    out["boxcox"] = boxcox_profile(L, y, v).fit
    return out


def window_table(L, y, v, *, df, windows=WINDOWS, primary_min=PRIMARY_MIN_L) -> list[dict]:
    """Fits on each window and on the primary window, side by side.

    For each window: the Box-Cox ``p`` and its 95% interval, each law's AIC on the window, and,
    for every measured length above the window, the log law's and Box-Cox law's prediction
    error in units of ``sqrt(v_L + prediction variance)`` (``z``) and in percent.
    """
    L, y, v = validate_estimates(L, y, v)
    rows = []
    wins = list(windows) + [(primary_min, int(L.max()))]
    for lo, hi in wins:
        m = (L >= lo) & (L <= hi)
        if m.sum() < 3:     # three lengths: the two-parameter laws have one degree of freedom
            continue
        fits = fit_laws(L[m], y[m], v[m])
        prof = boxcox_profile(L[m], y[m], v[m], df=df)
        after = L > hi
        rec = {"window": (int(lo), int(hi)), "n": int(m.sum()), "p": prof.p_hat, "p_lo": prof.lo,
               "p_hi": prof.hi, "log_ok": prof.ok,
               "aic": {k: f.aic for k, f in fits.items()},
               "slope_log": fits["log"].a, "predict": []}
        for Lx, yx, vx in zip(L[after], y[after], v[after]):
            e = {"L": int(Lx), "measured": float(yx)}
            for law in ("log", "boxcox"):
                f = fits[law]
                pr = float(f.predict(Lx))
                e[law] = pr
                e[f"z_{law}"] = float((yx - pr) / math.sqrt(vx + float(f.predict_var(Lx))))
                e[f"rel_{law}"] = float((pr - yx) / yx)
            rec["predict"].append(e)
        rows.append(rec)
    return rows


@dataclass
class Decision(Result):
    """The registered decision for one setting: the Box-Cox interval on the primary window."""

    setup: str
    lengths: tuple
    profile: BoxCoxProfile
    bonferroni: BoxCoxProfile

    @property
    def ok(self) -> bool:
        """The log law is consistent with this setting (95% interval contains 0)."""
        return self.profile.ok

    @property
    def message(self) -> str:
        return (f"{self.setup} (L = {min(self.lengths)}..{max(self.lengths)}): "
                f"{self.profile.message}")


def decide(setup, L, y, v, *, df, primary_min=PRIMARY_MIN_L, n_settings=6) -> Decision:
    """The registered decision for one setting on the primary window (every ``L >=
    primary_min``): 95% interval for ``p`` (F(1, df) threshold, ``df`` the degrees of freedom
    of the pooled variance, :func:`pooled_series`) and, for the verdict over all settings, the
    Bonferroni interval at level ``1 - 0.05 / n_settings``."""
    L, y, v = validate_estimates(L, y, v)
    m = L >= primary_min
    if m.sum() < 4:
        raise ValueError(f"the primary window L >= {primary_min} needs at least 4 lengths, got "
                         f"{int(m.sum())}")
    prof = boxcox_profile(L[m], y[m], v[m], df=df)
    bon = boxcox_profile(L[m], y[m], v[m], level=1 - 0.05 / n_settings, df=df)
    return Decision(str(setup), tuple(int(x) for x in L[m]), prof, bon)


def curves_by_setting(rows) -> dict:
    """Group CSV rows into ``{setup: {L: {target: (d, n, s) arrays}}}``."""
    out = {}
    for r in rows:
        out.setdefault(r["setup"], {}).setdefault(r["L"], {}).setdefault(r["target"], []).append(
            (r["d"], r["draws"], r["successes"]))
    for s in out.values():
        for Ld in s.values():
            for t, lst in Ld.items():
                lst.sort()
                Ld[t] = tuple(np.array(c) for c in zip(*lst))
    return out


def pad_curves(curves):
    """Curves ``(widths, n, accepted)`` of unequal lengths as three equal-width arrays; a curve
    shorter than the longest is continued at its last width with no draws (n = 0)."""
    W = max(len(c[0]) for c in curves)
    D = np.ones((len(curves), W))
    N = np.zeros((len(curves), W))
    S = np.zeros((len(curves), W))
    for i, (d, n, s) in enumerate(curves):
        D[i, :len(d)], N[i, :len(d)], S[i, :len(d)] = d, n, s
        D[i, len(d):] = d[-1]
    return D, N, S


def analyse_setting(by_L: dict, *, quantile=0.5, n_boot=N_BOOT, rng=None):
    """Per-length ``(L, mean d_q, variance)`` of one setting (:func:`pooled_series`) and the
    per-curve results. A length where some target's curve has no fitted crossing is left out
    of the series (and reported in ``per``).

    Parameters
    ----------
    by_L : dict
        ``{L: {target: (d, n, s)}}`` (:func:`curves_by_setting`).
    quantile : float
        One of :data:`QUANTILES`.
    """
    if quantile not in QUANTILES:
        raise ValueError(f"quantile must be one of {QUANTILES}, got {quantile!r}")
    qi = QUANTILES.index(quantile)
    rng = np.random.default_rng(BOOT_SEED) if rng is None else check_rng("rng", rng)
    Ls, est, var, per = [], [], [], {}
    for L in sorted(by_L):
        curves = [by_L[L][t] for t in sorted(by_L[L])]
        D, N, S = pad_curves(curves)
        r = curve_quantiles(D, N, S, n_boot=n_boot, rng=rng)
        per[L] = r
        e, v = r["est"][:, qi], r["var"][:, qi]
        if len(curves) < 2 or not (np.isfinite(e).all() and np.isfinite(v).all()):
            continue
        Ls.append(L)
        est.append(e)
        var.append(v)
    if len(Ls) < 1:
        return np.array([]), np.array([]), np.array([]), per
    m, vm = pooled_series(np.array(est), np.array(var))
    return np.array(Ls, float), m, vm, per


# ----------------------------------------------------------------------------- noise model
@dataclass
class NoiseModel:
    """The measured noise of one setting: probit width relative to d_50 (``sigma_rel``: ``p(d)
    = Phi((d - d50) / (sigma_rel d50))``) and the target-to-target spread of d_50 relative to
    its mean (``tau_rel``), from the decades experiment's draws; ``d50`` its per-length d_50."""

    setup: str
    sigma_rel: float
    tau_rel: float
    d50: dict


#: The probit width relative to d_50 assumed before the acceptance data existed: the book's
#: predictive model (:func:`~sattn.draw_success_probability`) gives
#: 0.065 .. 0.12 over the six settings at L = 512 and 32768; the registration uses 0.08.
SIGMA_REL_PRIOR = 0.08


def decades_noise_model(data_dir="data", *, sigma_rel=SIGMA_REL_PRIOR) -> dict:
    """The noise model before the acceptance data: per setting, ``tau_rel`` is the pooled
    standard deviation of ``d_min / mean_t d_min`` over the decades experiment's (L, target)
    (it includes the first-success search's own noise, so it overstates the spread of d_50);
    ``sigma_rel`` is given (:data:`SIGMA_REL_PRIOR`); ``d50`` is the decades mean first-success
    width moved to the median of the curve, ``m / (1 + sigma_rel Phi^-1(0.04))`` (the
    first-success width sits near p = 4% with 16 draws per width).
    """
    sigma_rel = check_real("sigma_rel", sigma_rel, low=0.0, high=1.0, low_open=True)
    rows = load_figure("decades", data_dir)
    by = {}
    for r in rows:
        by.setdefault(r["setup"], {}).setdefault(r["L"], []).append(r["d_min"])
    out = {}
    shift = 1 + sigma_rel * ndtri(0.04)
    for name, per in by.items():
        rel = [x / np.mean(v) - 1 for v in per.values() for x in v]
        T = len(next(iter(per.values())))
        tau = float(np.sqrt(np.sum(np.square(rel)) / (len(rel) - len(per)))) if T > 1 else 0.0
        out[name] = NoiseModel(name, sigma_rel, tau,
                               {L: float(np.mean(v)) / shift for L, v in sorted(per.items())})
    return out


def curves_noise_model(rows) -> dict:
    """The noise model measured on acceptance curves (CSV rows): per setting, ``sigma_rel`` is
    the median over curves of the fitted probit width over d_50, ``tau_rel`` the pooled
    standard deviation of ``d_50,t / mean_t d_50`` (it includes the draws' noise: an upper
    bound of the targets' spread), ``d50`` the per-length mean."""
    out = {}
    for name, by_L in curves_by_setting(rows).items():
        sig, rel, d50, groups = [], [], {}, 0
        for L in sorted(by_L):
            curves = [by_L[L][t] for t in sorted(by_L[L])]
            D, N, S = pad_curves(curves)
            b0, b1, ok = probit_fit(D, N, S)
            if not ok.all():
                continue
            m = -b0 / b1
            sig += list(1 / (b1 * m))
            rel += list(m / m.mean() - 1)
            groups += 1
            d50[L] = float(m.mean())
        tau = float(np.sqrt(np.sum(np.square(rel)) / max(1, len(rel) - groups)))
        out[name] = NoiseModel(name, float(np.median(sig)), tau, d50)
    return out


# ----------------------------------------------------------------------------- calibration
def synthetic_laws(noise: NoiseModel, ps=(0.1, 0.2, 0.3), anchors=(256, 2048)) -> dict:
    """True d_50(L) laws for the calibration: the log law fitted (least squares, L >= 256) to the
    noise model's d_50, and Box-Cox laws with exponents ``ps`` through the log law's values at
    the two ``anchors``. Returns ``{p: (a, c)}`` with p = 0 the log law."""
    Ls = np.array(sorted(noise.d50), float)
    y = np.array([noise.d50[int(L)] for L in Ls])
    m = Ls >= 256
    a0, b0 = np.polyfit(np.log(Ls[m]), y[m], 1)
    laws = {0.0: (float(a0), float(b0))}
    L1, L2 = anchors
    y1, y2 = a0 * math.log(L1) + b0, a0 * math.log(L2) + b0
    for p in ps:
        x1, x2 = law_basis("boxcox", L1, p), law_basis("boxcox", L2, p)
        a = (y2 - y1) / (x2 - x1)
        laws[float(p)] = (float(a), float(y1 - a * x1))
    return laws


@dataclass
class Calibration(Result):
    """Rejection rates of the registered decision on synthetic data from known laws."""

    setup: str
    lengths: tuple
    reps: int
    rates: dict           # p -> share of replicates in which the log law is rejected (95%)

    @property
    def false_rejection(self) -> float:
        return self.rates[0.0]

    @property
    def ok(self) -> bool:
        """A true log law is rejected at most 10% of the time."""
        return self.false_rejection <= 0.10

    def smallest_detected(self, power=0.9):
        ps = sorted(p for p, r in self.rates.items() if p > 0 and r >= power)
        return ps[0] if ps else None

    @property
    def message(self) -> str:
        r = ", ".join(f"beta = {p:g}: {100 * v:.0f}%" for p, v in sorted(self.rates.items()))
        return f"{self.setup}: log law rejected in {r} of {self.reps} synthetic data sets"


def calibrate(noise: NoiseModel, *, profile="paper", lengths=None, reps=100, ps=(0.1, 0.2, 0.3),
              seed=0, n_boot=N_BOOT) -> Calibration:
    """Run the registered design and decision on synthetic acceptance data.

    For each true law (:func:`synthetic_laws`) and replicate: per (L, target) a d_50 drawn as
    ``D(L) (1 + tau_rel zeta)``; the design's anchor ``m`` is the width where the mean curve
    accepts 4% of draws (where the decades first-success width sits); the curve is measured with
    :func:`~sattn.experiments.acceptance.design.measure_curve` (same initial widths, draws and extension rule as the real run) from
    binomial counts of ``Phi((d - d50) / (sigma_rel d50))``; then the same pooling and decision.
    """
    cfg = acceptance_profile(profile)
    reps = check_int("reps", reps, low=1)
    Ls = validate_lengths(cfg["lengths"] if lengths is None else lengths)
    rng = np.random.default_rng(seed)
    laws = synthetic_laws(noise, ps)
    rule = dict(cfg["extend"])
    rates = {}
    for p, (a, c) in laws.items():
        rej = 0
        for _ in range(reps):
            ys = []
            for L in Ls:
                D = a * law_basis("boxcox", L, p) + c
                m = D * (1 + noise.sigma_rel * ndtri(0.04))
                ws = design_widths(m, L, cfg["factors"])
                n = cfg["draws_small"] if L < cfg["draws_switch_L"] else cfg["draws_large"]
                curves = []
                for _t in range(cfg["targets"]):
                    d50 = D * (1 + noise.tau_rel * rng.standard_normal())
                    sd = noise.sigma_rel * d50

                    def count(d, d50=d50, sd=sd):
                        return (n, int(rng.binomial(n, ndtr((d - d50) / sd))))
                    cnt = measure_curve(ws, L, rule, count)
                    dd = np.array(sorted(cnt))
                    curves.append((dd, np.array([cnt[x][0] for x in dd]),
                                   np.array([cnt[x][1] for x in dd])))
                Dm, N, S = pad_curves(curves)
                r = curve_quantiles(Dm, N, S, quantiles=(0.5,), n_boot=n_boot, rng=rng)
                e, v = r["est"][:, 0], r["var"][:, 0]
                if np.isfinite(e).all() and np.isfinite(v).all():
                    ys.append((L, e, v))
            mm, vv = pooled_series(np.array([x[1] for x in ys]), np.array([x[2] for x in ys]))
            dec = decide(noise.setup, np.array([x[0] for x in ys], float), mm, vv,
                         df=len(ys) * (cfg["targets"] - 1))
            rej += not dec.ok
        rates[p] = rej / reps
    return Calibration(noise.setup, tuple(Ls), reps, rates)


# ----------------------------------------------------------------------------- the model
def wilson_interval(s, n, level=0.95):
    """Wilson score interval of a binomial share ``s / n`` (arrays broadcast)."""
    s = np.asarray(s, float)
    n = np.asarray(n, float)
    if (n <= 0).any() or (s < 0).any() or (s > n).any():
        raise ValueError("counts must satisfy 0 <= successes <= draws and draws > 0")
    z = ndtri(0.5 + level / 2)
    ph = s / n
    den = 1 + z ** 2 / n
    c = (ph + z ** 2 / (2 * n)) / den
    h = z * np.sqrt(ph * (1 - ph) / n + z ** 2 / (4 * n ** 2)) / den
    return np.clip(c - h, 0, 1), np.clip(c + h, 0, 1)


def compare_model(rows, *, n_samples=2 ** 14, seed=0) -> list[dict]:
    """The book's predictive model against every measured point of the acceptance curves.

    For each CSV row: the model's ``p(d)`` for that target
    (:func:`~sattn.draw_success_probability`, assumption A2: rows
    independent), the measured share and its 95% Wilson interval, and ``over`` / ``under``:
    the prediction lies above / below the interval.
    """
    out, targets = [], {}
    for r in rows:
        key = (r["setup"], r["L"], r["target"])
        s = SETUPS[r["setup"]]
        if key not in targets:
            task = AcceptanceTask(s, r["L"], r["target"], (), 1, ())
            targets[key] = prepare_target(task.target_task().sample_target(), s.eps1, s.eps2)
        t = targets[key]
        if not t.k_max <= r["d"] <= t.L - t.k_max:
            continue
        p = draw_success_probability(t, s.eps1, s.eps2, r["d"], n_samples=n_samples,
                                     seed=seed).p
        lo, hi = wilson_interval(r["successes"], r["draws"])
        out.append({**r, "measured": r["successes"] / r["draws"], "lo": float(lo),
                    "hi": float(hi), "predicted": float(p), "over": bool(p > hi),
                    "under": bool(p < lo)})
    return out


# ----------------------------------------------------------------------------- precision
def accepted_draw_bits(A, eps1, eps2, d, *, root_seed=ROOT_SEED, key=(0,), max_draws=64,
                       block=256) -> dict:
    """The first accepted draw of Algorithm 1 at width ``d`` and the significand bits it needs.

    Draws ``i = 0, 1, ...`` (seed keys ``key + (d, i)``) are decided by the fast engine until one
    is accepted; its Gaussian matrix ``Z`` gives ``Y = qr(Z)`` and the logits
    ``G = (L/d) (B Y) Y^T``, computed in blocks of rows (no ``L x L`` array). Returned: the
    smallest row margin ``m = min(margin (6), margin (7))`` over all rows (float64), a bound of
    the condition number ``kappa = max_lj sum_i |q_li y_ji|`` with ``q = (L/d) B Y`` (Cauchy-Schwarz:
    ``max_l ||q_l|| max_j ||y_j||``, which spares a second ``L x L`` product), ``max|G|``, and
    the estimate of :prf:ref:`fp-rem-estimates`, ``log2(2 (2 kappa + 2 max|G| + 3) / m)``, on the
    safe side by the bound.

    Raises
    ------
    ValueError
        ``d`` out of range, or no draw accepted within ``max_draws``.
    """
    eng = FastEngine(A, eps1, eps2)
    L = eng.L
    d = check_int("d", d, low=1, high=L)
    max_draws = check_int("max_draws", max_draws, low=1)
    block = check_int("block", block, low=1)
    with one_blas_thread():
        for i in range(max_draws):
            out = eng.draw(d, draw_generator(root_seed, tuple(key) + (d, i)), complete=True)
            if out.ok:
                break
        else:
            raise ValueError(f"no draw accepted at d = {d} within {max_draws} draws (L = {L}); "
                             "choose a larger width or more draws")
        Y, _ = np.linalg.qr(out.Z)
        t = eng.target
        BY = np.einsum("rk,rkd->rd", t.bvals, Y[t.cols]) * (L / d)
        kappa = float(np.sqrt(np.einsum("ij,ij->i", BY, BY).max())
                      * np.sqrt(np.einsum("ij,ij->i", Y, Y).max()))
        colpos = np.arange(L)
        mins, gmax = math.inf, 0.0
        for s0 in range(0, L, block):
            rows = np.arange(s0, min(L, s0 + block))
            G = BY[rows] @ Y.T
            gmax = max(gmax, float(np.abs(G).max()))
            mins = min(mins, float(eng._margins(rows, G, colpos).min()))
    return {"L": L, "d": d, "draw": i, "margin": mins, "kappa": kappa, "gmax": gmax,
            "bits": math.log2(2 * (2 * kappa + 2 * gmax + 3) / mins) if mins > 0 else math.inf}
