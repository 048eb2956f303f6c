"""Competing growth laws for d_min(L), fitted on short sequences and judged on long ones.

The decades experiment (:ref:`ch-log-law`) measures d_min at ten lengths and several independent
targets per length. This module asks which law describes it:

* ``log``: ``a ln L + b`` (the paper's claim, and the form of Theorem 1's bound);
* ``power``: ``c L^p``;
* ``log2``: ``a (ln L)^2 + b``;
* ``sqrt``: ``a sqrt(L) + b``.

Every law has two parameters and is fitted by weighted least squares with weights ``1 / dbar_L^2``
(``dbar_L`` the mean over the targets at ``L``), i.e. on relative errors: the scatter between
targets grows with d_min, and unweighted errors would let the longest lengths decide every fit.

:func:`judge_laws` fits on ``L <= fit_max`` only and predicts the lengths ``L >= predict_min``,
comparing each prediction with the measured mean there, in units of the combined uncertainty of
that mean (target-to-target standard deviation over ``sqrt(n)``, with the rounding of the width
ladder) and of the extrapolation (the fit's parameter covariance); and it compares the laws over the whole range by Akaike's information
criterion (equal parameter counts, so AIC differences are ``n ln(WRSS_a / WRSS_b)``).

References
----------
Figure 3 and Theorem 1 of Likhosherstov, Choromanski & Weller (2021); Akaike (1974).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from .._validate import as_vector, check_int, check_real
from ..results import Result

__flat__ = __all__ = ["LAWS", "LawFit", "LawJudgement", "fit_law", "judge_laws"]

#: The competing laws: name -> (formula, basis function of L for the linear two-parameter laws,
#: or None for the power law, which is fitted by nonlinear least squares).
LAWS = {
    "log": ("a ln L + b", np.log),
    "power": ("c L^p", None),
    "log2": ("a (ln L)^2 + b", lambda L: np.log(L) ** 2),
    "sqrt": ("a sqrt(L) + b", np.sqrt),
}


@dataclass
class LawFit:
    """One law fitted to ``(L, d)`` points: its parameters and a predictor."""

    law: str
    params: tuple
    wrss: float          # weighted residual sum of squares (relative errors squared)
    n: int
    cov: np.ndarray = field(default=None, repr=False)  # of (a, b), or of (ln c, p) for "power"

    def predict(self, L) -> np.ndarray:
        """The law's d_min at lengths ``L``."""
        L = np.asarray(L, dtype=float)
        if self.law == "power":
            c, p = self.params
            return c * L ** p
        a, b = self.params
        return a * LAWS[self.law][1](L) + b

    def _gradient(self, L) -> np.ndarray:
        """Derivatives of the prediction at ``L`` with respect to the fitted parameters."""
        L = np.asarray(L, dtype=float)
        if self.law == "power":
            f = self.predict(L)
            return np.stack([f, f * np.log(L)], axis=-1)             # d/d(ln c), d/dp
        return np.stack([LAWS[self.law][1](L), np.ones_like(L)], axis=-1)

    def predict_sd(self, L) -> np.ndarray:
        """Standard deviation of the prediction at ``L`` that the fit's own uncertainty implies
        (parameter covariance of the weighted least-squares fit, to first order)."""
        g = self._gradient(L)
        return np.sqrt(np.einsum("...i,ij,...j->...", g, self.cov, g))

    @property
    def formula(self) -> str:
        """The law with its fitted numbers, e.g. ``"d = 25.1 ln L - 80.3"``."""
        if self.law == "power":
            return f"d = {self.params[0]:.3g} L^{self.params[1]:.3f}"
        a, b = self.params
        return f"d = {a:.3g} {LAWS[self.law][0][2:-4]} {'-' if b < 0 else '+'} {abs(b):.3g}"


def _check_points(L, d):
    L = as_vector("L", L)
    d = as_vector("d", d)
    if L.shape != d.shape or L.size < 3:
        raise ValueError(f"L and d must be 1-D of equal length >= 3 (two parameters are fitted), "
                         f"got {L.shape} and {d.shape}")
    if (L <= 1).any() or (d <= 0).any():
        raise ValueError("L must hold lengths > 1 and d positive widths, got "
                         f"L in [{L.min()}, {L.max()}], d in [{d.min()}, {d.max()}]")
    if np.unique(L).size < 2:
        raise ValueError(f"L must hold at least two distinct lengths, got {np.unique(L).tolist()}")
    return L, d


def _weights(L, d):
    """``1 / dbar_L^2`` for each point: relative errors against the mean at its length."""
    w = np.empty_like(d)
    for x in np.unique(L):
        sel = L == x
        w[sel] = 1.0 / d[sel].mean() ** 2
    return w


def fit_law(law, L, d) -> LawFit:
    """Fit one of :data:`LAWS` to points ``(L_i, d_i)`` (several targets may share an ``L``).

    Parameters
    ----------
    law : {"log", "power", "log2", "sqrt"}
    L, d : array_like
        Lengths (> 1) and measured d_min (> 0), 1-D of equal length >= 3.

    Returns
    -------
    LawFit

    Raises
    ------
    ValueError
        Unknown law, or points that cannot determine two parameters.
    """
    if not isinstance(law, str) or law not in LAWS:
        raise ValueError(f"law must be one of {list(LAWS)}, got {law!r}")
    L, d = _check_points(L, d)
    w = _weights(L, d)
    sw = np.sqrt(w)
    if law == "power":
        # start from the log-log line, then minimise the same weighted relative errors
        p0, lc0 = np.polyfit(np.log(L), np.log(d), 1)
        res = least_squares(lambda th: sw * (np.exp(th[0]) * L ** th[1] - d), [lc0, p0],
                            x_scale="jac")
        params = (float(np.exp(res.x[0])), float(res.x[1]))
    else:
        X = np.column_stack([LAWS[law][1](L), np.ones_like(L)])
        coef, *_ = np.linalg.lstsq(X * sw[:, None], d * sw, rcond=None)
        params = (float(coef[0]), float(coef[1]))
    fit = LawFit(law, params, 0.0, int(L.size))
    fit.wrss = float((w * (fit.predict(L) - d) ** 2).sum())
    # covariance: sigma^2 (J^T W J)^-1, sigma^2 the weighted residual variance (n - 2 dof)
    J = fit._gradient(L) * sw[:, None]
    sigma2 = fit.wrss / (L.size - 2) if L.size > 2 else 0.0
    fit.cov = sigma2 * np.linalg.pinv(J.T @ J)
    return fit


@dataclass
class LawJudgement(Result):
    """Out-of-sample predictions and information criteria of the competing laws.

    ``z[law]`` holds, for each predicted length, ``(prediction - measured mean) / uncertainty``,
    the uncertainty combining that of the measured mean and that of the prediction (the fit's
    parameter covariance, from the scatter of the fitted points); a law *predicts* the long
    lengths when every ``|z| <= z_max``. ``aic[law]`` is Akaike's
    criterion on all points (fit on the whole range), ``delta_aic`` its excess over the best law,
    ``akaike_weights`` the relative likelihoods ``exp(-delta/2)`` normalised to sum 1.
    ``supported`` lists the laws that predict the long lengths *and* are within ``aic_margin``
    of the best AIC; ``ok`` says whether exactly one law is supported.
    """

    fit_max: int
    predict_lengths: tuple
    z_max: float
    aic_margin: float
    fits: dict = field(repr=False)
    z: dict
    rel_error: dict
    aic: dict
    delta_aic: dict
    akaike_weights: dict
    supported: tuple

    @property
    def ok(self) -> bool:
        return len(self.supported) == 1

    @property
    def best_aic(self) -> str:
        return min(self.aic, key=self.aic.get)

    @property
    def message(self) -> str:
        worst = ", ".join(f"{k} {max(abs(v) for v in self.z[k]):.1f}" for k in self.z)
        verdict = (f"the data support {self.supported[0]} alone" if self.ok else
                   f"supported: {', '.join(self.supported) or 'none'}")
        return (f"fit on L <= {self.fit_max}, predict L = {list(self.predict_lengths)}: largest "
                f"|z| {worst} (limit {self.z_max:g}); best AIC {self.best_aic}; {verdict}")


def judge_laws(L, d, *, fit_max=2048, predict_min=8192, rounding=None, z_max=3.0,
               aic_margin=4.0) -> LawJudgement:
    """Fit every law on ``L <= fit_max``, predict ``L >= predict_min``, and compare by AIC.

    Parameters
    ----------
    L, d : array_like
        All measured points (several targets per length).
    fit_max, predict_min : int
        The fits see only ``L <= fit_max``; predictions are judged at every measured
        ``L >= predict_min`` (``predict_min > fit_max``: never on the fitted points).
    rounding : array_like, optional
        Per point, the ladder step at its d_min (``d_min - d_below``); its uniform-rounding
        variance ``step^2 / 12`` (averaged over the targets, over ``n``) is added to the
        uncertainty of a mean.
    z_max : float, default 3
        A prediction counts as right when ``|z| <= z_max``.
    aic_margin : float, default 4
        Laws within this AIC difference of the best count as supported by the criterion.

    Returns
    -------
    LawJudgement

    Raises
    ------
    ValueError
        Bad points, ``predict_min <= fit_max``, fewer than three fitted lengths, a predicted
        length with fewer than two targets (no scatter to judge against), or bad limits.
    """
    L, d = _check_points(L, d)
    fit_max = check_int("fit_max", fit_max, low=1)
    predict_min = check_int("predict_min", predict_min, low=1)
    z_max = check_real("z_max", z_max, low=0.0, low_open=True)
    aic_margin = check_real("aic_margin", aic_margin, low=0.0)
    if predict_min <= fit_max:
        raise ValueError(f"predict_min ({predict_min}) must exceed fit_max ({fit_max}): a law must "
                         "never be judged on the points it was fitted to")
    step = np.zeros_like(d) if rounding is None else as_vector("rounding", rounding)
    if step.shape != d.shape or (step < 0).any():
        raise ValueError(f"rounding must be nonnegative, one per point ({d.shape}), got "
                         f"{step.shape}")
    train = L <= fit_max
    if np.unique(L[train]).size < 3:
        raise ValueError(f"need at least three lengths <= fit_max = {fit_max} to fit, got "
                         f"{np.unique(L[train]).tolist()}")
    targets = np.unique(L[L >= predict_min])
    if targets.size == 0:
        raise ValueError(f"no measured length >= predict_min = {predict_min}")
    means, unc = [], []
    for x in targets:
        sel = L == x
        if sel.sum() < 2:
            raise ValueError(f"L = {x:g} has {sel.sum()} target(s); the scatter between targets "
                             "needs at least two")
        n = sel.sum()
        means.append(d[sel].mean())
        unc.append(math.sqrt(d[sel].var(ddof=1) / n + (step[sel] ** 2 / 12).mean() / n))
        if unc[-1] == 0:
            raise ValueError(f"the {n} targets at L = {x:g} agree exactly and no rounding was "
                             "given, so there is no uncertainty to judge a prediction against; "
                             "pass rounding (the ladder steps)")
    means, unc = np.array(means), np.array(unc)
    fits, z, rel, aic = {}, {}, {}, {}
    for law in LAWS:
        f = fit_law(law, L[train], d[train])
        pred = f.predict(targets)
        fits[law] = f
        z[law] = tuple(float(v) for v in (pred - means) / np.hypot(unc, f.predict_sd(targets)))
        rel[law] = tuple(float(v) for v in pred / means - 1.0)
        whole = fit_law(law, L, d)
        # (an exact fit would give ln 0: floor the residual at the double-precision scale)
        aic[law] = float(whole.n * math.log(max(whole.wrss, 1e-30) / whole.n) + 2 * 2)
    best = min(aic.values())
    delta = {k: v - best for k, v in aic.items()}
    raw = {k: math.exp(-v / 2) for k, v in delta.items()}
    weights = {k: v / sum(raw.values()) for k, v in raw.items()}
    supported = tuple(k for k in LAWS if max(abs(v) for v in z[k]) <= z_max
                      and delta[k] <= aic_margin)
    return LawJudgement(int(fit_max), tuple(int(x) for x in targets), float(z_max),
                        float(aic_margin), fits, z, rel, aic, delta, weights, supported)
