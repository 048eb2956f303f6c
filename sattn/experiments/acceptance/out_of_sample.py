"""The registered out-of-sample decision: predictions of d_50 at lengths not yet measured.

Three descriptions of the measured ``d_50(L)`` fit ``L = 256 ... 32768`` about equally well in
some settings and disagree about what comes next: Box-Cox ``a (L^beta - 1)/beta + c`` with
``beta < 0`` bends toward a ceiling, ``a ln L + b ln ln L + c`` keeps growing like ``ln L``, and
the log law ``a ln L + b`` grows fastest of the three. This module turns them into numbers at
new lengths, with uncertainties, *before* those lengths are measured, and judges them afterwards
by one fixed rule:

* :func:`model_predictions`: each law fitted (weighted least squares, the registered variances)
  on the primary window of a setting's series, its ``d_50`` at the new lengths, and a joint
  covariance of those predictions from a parametric bootstrap of the series (which carries the
  uncertainty of Box-Cox's exponent too);
* :func:`decide_out_of_sample`: per model, ``chi^2 = r^T (C_pred + C_meas)^-1 r`` over every
  new point (``r`` the prediction error), its p-value, and the rule of the registration.

References
----------
:ref:`ch-log-law`; the registration page of the book.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import chi2 as chi2_dist

from ..._validate import check_int, check_rng
from ...results import Result
from ...runs.store import StoreError, sha256_file
from .analysis import PRIMARY_MIN_L, validate_estimates, boxcox_profile
from .design import read_acceptance_csv
from .robust import fit_loglog_family

__flat__: list[str] = []
__all__ = [
    *__flat__,
    "OOS_LENGTHS", "OOS_SETUPS", "OOS_METHOD", "OOS_MODELS", "OOS_N_SIM", "OOS_SEED",
    "OOS_ALPHA", "OOS_MARGIN", "model_predictions", "OutOfSampleDecision",
    "decide_out_of_sample",
]

#: The new lengths.
OOS_LENGTHS = (65536, 131072)
#: The settings measured there: the k = 1 setting and one k = 2 setting.
OOS_SETUPS = ("k1-g1-e3-0.9", "k2-g1-e7-0.5")
#: The per-curve summary of the decision (the best-fitting link on L <= 32768; the registered
#: probit and the isotonic d_50 are reported beside it).
OOS_METHOD = "loglog"
#: The fitted laws whose predictions are registered (the exact row model is added from its own
#: registered file).
OOS_MODELS = ("boxcox", "log", "loglog_family")
#: Parametric-bootstrap replicates of the predictions' covariance, and their seed.
OOS_N_SIM = 2000
OOS_SEED = 20261206
#: A model whose chi^2 p-value falls below this is rejected by the new points.
OOS_ALPHA = 0.01
#: A surviving model wins when every other model's chi^2 exceeds its own by at least this.
OOS_MARGIN = 4.0


def _fit_predict(model, L, y, v, Lnew):
    if model == "log":
        x = np.log(L)
        w = 1 / v
        A = np.array([[np.sum(w * x * x), np.sum(w * x)], [np.sum(w * x), np.sum(w)]])
        a, b = np.linalg.solve(A, [np.sum(w * x * y), np.sum(w * y)])
        return a * np.log(Lnew) + b
    if model == "loglog_family":
        return fit_loglog_family(L, y, v).predict(Lnew)
    if model == "boxcox":
        return boxcox_profile(L, y, v).fit.predict(Lnew)
    raise ValueError(f"unknown model {model!r}; valid: {', '.join(OOS_MODELS)}")


def model_predictions(L, y, v, *, lengths=OOS_LENGTHS, models=OOS_MODELS,
                      primary_min=PRIMARY_MIN_L, n_sim=OOS_N_SIM, rng=None) -> dict:
    """Each model's ``d_50`` at ``lengths``, fitted on the series' primary window.

    Parameters
    ----------
    L, y, v : array_like
        A setting's per-length means and their registered variances.
    n_sim : int
        Parametric-bootstrap replicates: ``y* ~ N(y, v)``, each model refitted, its predictions
        recomputed; their covariance is the prediction's covariance (it includes the spread of
        Box-Cox's fitted exponent).

    Returns
    -------
    dict
        ``{model: {"pred": (n,), "cov": (n, n), "sd": (n,)}}``.
    """
    L, y, v = validate_estimates(L, y, v)
    n_sim = check_int("n_sim", n_sim, low=100)
    rng = np.random.default_rng(OOS_SEED) if rng is None else check_rng("rng", rng)
    m = L >= primary_min
    L, y, v = L[m], y[m], v[m]
    Lnew = np.asarray(lengths, float)
    ys = y[None] + np.sqrt(v)[None] * rng.standard_normal((n_sim, y.size))
    out = {}
    for model in models:
        pred = np.asarray(_fit_predict(model, L, y, v, Lnew), float)
        sims = np.array([_fit_predict(model, L, yy, v, Lnew) for yy in ys])
        cov = np.atleast_2d(np.cov(sims, rowvar=False))
        out[model] = {"pred": pred, "cov": cov, "sd": np.sqrt(np.diag(cov))}
    return out


@dataclass
class OutOfSampleDecision(Result):
    """The registered decision on the new points.

    ``chi2[model]`` and ``pvalue[model]`` (``chi^2`` with as many degrees of freedom as points);
    ``surviving``: the models with ``p >= alpha``; ``winner``: the surviving model whose chi^2 is
    lower than every other model's by at least ``margin`` (None: undecided, or no model
    survives).
    """

    chi2: dict
    pvalue: dict
    n_points: int
    alpha: float
    margin: float
    surviving: tuple
    winner: str | None
    errors: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """One model wins."""
        return self.winner is not None

    @property
    def verdict(self) -> str:
        if self.winner is not None:
            return f"{self.winner} wins"
        if not self.surviving:
            return "no model predicts the new lengths"
        return "undecided between " + ", ".join(self.surviving)

    @property
    def message(self) -> str:
        cells = ", ".join(f"{k} chi2 {v:.1f} (p {self.pvalue[k]:.2g})" for k, v in
                          self.chi2.items())
        return f"{self.n_points} new points: {cells}: {self.verdict}"


def decide_out_of_sample(predictions: dict, measured, measured_var, *, alpha=OOS_ALPHA,
                         margin=OOS_MARGIN) -> OutOfSampleDecision:
    """The registered rule.

    Parameters
    ----------
    predictions : dict
        ``{model: {"pred": (n,), "cov": (n, n)}}`` over the same ``n`` new points (several
        settings: block-diagonal covariances concatenated by the caller).
    measured, measured_var : array_like, shape (n,)
        The measured ``d_50`` at those points and their variances (the registered pooled
        variance: independent between points).

    The rule: ``chi^2_M = r^T (C_M + diag(measured_var))^-1 r`` with ``r = pred_M - measured``;
    model ``M`` survives iff ``P(chi^2_n >= chi^2_M) >= alpha``; a surviving model wins iff its
    ``chi^2`` is below every other model's by at least ``margin``; otherwise the comparison is
    undecided between the surviving models (or no model predicts the new lengths).
    """
    y = np.asarray(measured, float)
    vm = np.asarray(measured_var, float)
    if y.ndim != 1 or y.shape != vm.shape or (vm <= 0).any() or not np.isfinite(y).all():
        raise ValueError(f"measured and measured_var must be 1-D of one length, variances > 0; "
                         f"got shapes {y.shape} and {vm.shape}")
    if not predictions:
        raise ValueError("predictions must hold at least one model")
    chi, pv, err = {}, {}, {}
    for k, p in predictions.items():
        pr = np.asarray(p["pred"], float)
        C = np.asarray(p["cov"], float)
        if pr.shape != y.shape or C.shape != (y.size, y.size):
            raise ValueError(f"model {k!r}: prediction shape {pr.shape} and covariance "
                             f"{C.shape} do not match {y.size} measured points")
        r = pr - y
        chi[k] = float(r @ np.linalg.solve(C + np.diag(vm), r))
        pv[k] = float(chi2_dist.sf(chi[k], y.size))
        err[k] = r.tolist()
    surv = tuple(k for k in chi if pv[k] >= alpha)
    winner = None
    if surv:
        best = min(surv, key=chi.get)
        if all(chi[o] - chi[best] >= margin for o in chi if o != best):
            winner = best
    return OutOfSampleDecision(chi, pv, y.size, float(alpha), float(margin), surv, winner, err)


def _block_diag(blocks):
    n = sum(b.shape[0] for b in blocks)
    out = np.zeros((n, n))
    i = 0
    for b in blocks:
        out[i:i + b.shape[0], i:i + b.shape[0]] = b
        i += b.shape[0]
    return out


def concat_predictions(per_setting: list[dict]) -> dict:
    """Join per-setting predictions (same models) into one set over all points, block-diagonal
    covariance (fits of different settings are independent)."""
    models = per_setting[0].keys()
    return {k: {"pred": np.concatenate([np.asarray(p[k]["pred"], float) for p in per_setting]),
                "cov": _block_diag([np.atleast_2d(np.asarray(p[k]["cov"], float))
                                    for p in per_setting])}
            for k in models}


__all__.append("concat_predictions")


def expected_outcomes(predictions: dict, measured_var, *, reps=2000, seed=OOS_SEED,
                      alpha=OOS_ALPHA, margin=OOS_MARGIN) -> dict:
    """How the rule would decide if each model were true: measured points drawn from
    ``N(pred_M, C_M + diag(measured_var))`` ``reps`` times, each decided by
    :func:`decide_out_of_sample`. Returns ``{true model: {verdict: share}}`` (verdicts: a
    model's name for a win, ``"undecided"``, ``"none"``)."""
    reps = check_int("reps", reps, low=10)
    rng = np.random.default_rng(seed)
    vm = np.asarray(measured_var, float)
    out = {}
    for truth, p in predictions.items():
        C = np.asarray(p["cov"], float) + np.diag(vm)
        Lc = np.linalg.cholesky(C)
        tally = {}
        for _ in range(reps):
            y = np.asarray(p["pred"], float) + Lc @ rng.standard_normal(vm.size)
            dec = decide_out_of_sample(predictions, y, vm, alpha=alpha, margin=margin)
            key = dec.winner or ("undecided" if dec.surviving else "none")
            tally[key] = tally.get(key, 0) + 1
        out[truth] = {k: v / reps for k, v in sorted(tally.items())}
    return out


__all__.append("expected_outcomes")


#: The name of the book's row model, evaluated exactly, among the registered predictions (added
#: by a second, separately dated registration).
EXACT_MODEL = "row_model"


def exact_model_predictions(path, *, setups=OOS_SETUPS, lengths=OOS_LENGTHS) -> list[dict]:
    """The row model's registered ``d_50`` (a JSON file of registered predictions: entries with
    ``setup``, ``L``, ``d50`` and its numerical error ``err_d50``), one dict per setting in the
    order of ``setups``: ``{EXACT_MODEL: {"pred", "cov", "sd"}}`` over ``lengths``, the
    covariance diagonal (the numerical errors of different lengths are separate computations).

    Raises
    ------
    ValueError
        A (setting, length) without a registered prediction, or a negative error.
    """
    rec = json.loads(Path(path).read_text())
    got = {(p["setup"], int(p["L"])): p for p in rec["predictions"]}
    out = []
    for name in setups:
        pred, err = [], []
        for L in lengths:
            if (name, int(L)) not in got:
                raise ValueError(f"{path}: no registered prediction for {name} at L = {L}; "
                                 f"it holds {sorted(got)}")
            p = got[(name, int(L))]
            if not p["err_d50"] >= 0:
                raise ValueError(f"{path}: negative or missing error for {name} at L = {L}")
            pred.append(float(p["d50"]))
            err.append(float(p["err_d50"]))
        e = np.array(err)
        out.append({EXACT_MODEL: {"pred": np.array(pred), "cov": np.diag(e ** 2), "sd": e}})
    return out


__all__ += ["EXACT_MODEL", "exact_model_predictions"]

#: Under the data folder: the acceptance curves as they were when the predictions were
#: registered, the file whose checksum ``fitted_on`` of ``registration/out_of_sample.json`` names.
REGISTERED_CURVES = "registration/acceptance_at_registration.csv"


def registered_acceptance(data_dir="data") -> list[dict]:
    """The acceptance rows on which the out-of-sample predictions were fitted.

    ``data/acceptance.csv`` changed after the registration: 14 of its 1,260 rows, all of
    ``k = 2`` settings, were recomputed when the fast engine began to draw dependent stage-1
    candidates from a defined basis (engine version ``fast-3``; :ref:`ch-computation`). The
    registered numbers are reproduced from the copy kept under :data:`REGISTERED_CURVES`,
    which must have the checksum that the registration records.

    Raises
    ------
    StoreError
        The copy or the registration is missing, or the copy's checksum is not the registered
        one.
    """
    data = Path(data_dir)
    reg_path = data / "registration" / "out_of_sample.json"
    path = data / REGISTERED_CURVES
    for p in (reg_path, path):
        if not p.exists():
            raise StoreError(f"{p} is missing; restore it from git (it is part of the registration)")
    found = re.search(r"checksum ([0-9a-f]{64})", json.loads(reg_path.read_text())["fitted_on"])
    if found is None:
        raise StoreError(f"{reg_path}: 'fitted_on' names no checksum of the curves")
    if sha256_file(path) != found.group(1):
        raise StoreError(f"{path} is not the file the registration was fitted on: its checksum "
                         f"is not {found.group(1)}")
    return read_acceptance_csv(path)


__all__ += ["REGISTERED_CURVES", "registered_acceptance"]
