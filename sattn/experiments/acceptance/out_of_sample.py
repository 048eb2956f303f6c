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

from ..._validate import check_int, check_real, check_rng
from ...results import Result
from ...runs.store import StoreError, sha256_file
from .analysis import (BOOT_SEED, PRIMARY_MIN_L, boxcox_profile, curves_by_setting, pad_curves,
                       validate_estimates)
from .design import acceptance_tasks, load_acceptance, next_widths, read_acceptance_csv
from .robust import (analyse_setting_link, curve_deviance, fit_loglog_family, link_curve,
                     link_quantiles)

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


# ----------------------------------------------------------------------------- the measurement
#: The decision's summaries: the primary (deciding) one first, then the reported secondary ones.
OOS_SUMMARIES = (OOS_METHOD, "probit", "isotonic")


def measured_points(old_rows, new_rows, *, method=OOS_METHOD, setups=OOS_SETUPS,
                    lengths=OOS_LENGTHS) -> dict:
    """The measured ``d_50`` at the new lengths and their variances, as registered.

    Each setting's curves at the lengths already measured (``old_rows``) and at the new ones
    (``new_rows``) go through the registered per-length pooling together
    (:func:`~sattn.experiments.acceptance.robust.analyse_setting_link` with ``method``): the mean
    over the targets of each curve's ``d_50``, and its variance
    ``max(c mean^2, mean bootstrap variance) / T`` with the relative between-target variance
    ``c`` pooled over all the setting's lengths, the new ones included.

    Parameters
    ----------
    old_rows, new_rows : list of dict
        Acceptance rows (``setup, L, target, d, draws, successes``): ``old_rows`` at
        ``L <= 32768`` (the book's curves), ``new_rows`` exactly the settings ``setups`` at the
        lengths ``lengths``, every target that the old rows hold at each.

    Returns
    -------
    dict
        ``points``: ``[(setup, L), ...]`` in the registration's order (setting-major);
        ``d50``, ``var``: arrays over those points; ``per_target``: each point's targets'
        ``d_50`` (a list of lists).

    Raises
    ------
    ValueError
        New rows at another setting or length, a missing curve, old rows above 32,768, or a
        new length at which some target's curve gives no ``d_50`` (the registration has no
        point without one).
    """
    if method not in OOS_SUMMARIES:
        raise ValueError(f"unknown summary {method!r}; valid: {', '.join(OOS_SUMMARIES)}")
    top = max(r["L"] for r in old_rows)
    if top > 32768:
        raise ValueError(f"old_rows hold L = {top}; the curves before the new lengths end at 32768")
    want = {(s, int(L)) for s in setups for L in lengths}
    got = {(r["setup"], int(r["L"])) for r in new_rows}
    if got != want:
        extra, missing = sorted(got - want), sorted(want - got)
        raise ValueError("the new curves must be exactly the registered (setting, L) pairs"
                         + (f"; not registered: {extra}" if extra else "")
                         + (f"; missing: {missing}" if missing else ""))
    old, new = curves_by_setting(old_rows), curves_by_setting(new_rows)
    points, d50, var, per_target = [], [], [], []
    for name in setups:
        if name not in old:
            raise ValueError(f"old_rows hold no curve of {name}")
        targets = sorted(next(iter(old[name].values())))
        for L in lengths:
            if sorted(new[name][L]) != targets:
                raise ValueError(f"{name} at L = {L}: targets {sorted(new[name][L])}, expected "
                                 f"{targets}")
        merged = {**old[name], **new[name]}
        rng = np.random.default_rng(BOOT_SEED)
        Ls, y, v, dropped = analyse_setting_link(merged, method, rng=rng)
        lost = [L for L in lengths if L in dropped]
        if lost:
            raise ValueError(f"{name}: no {method} d_50 for some target at L = {lost}; the "
                             "registered decision needs every new point")
        for L in lengths:
            j = int(np.flatnonzero(Ls == L)[0])
            curves = [new[name][L][t] for t in targets]
            D, N, S = pad_curves(curves)
            # each target's own d_50 (the estimate does not depend on the bootstrap's draws)
            each = link_quantiles(D, N, S, method, n_boot=20, rng=np.random.default_rng(0))["est"]
            points.append((name, int(L)))
            d50.append(float(y[j]))
            var.append(float(v[j]))
            per_target.append([float(x) for x in each])
    return {"points": points, "d50": np.array(d50), "var": np.array(var),
            "per_target": per_target}


def registered_predictions(registration: dict, exact_model: list[dict] | None = None, *,
                           method=OOS_METHOD, setups=OOS_SETUPS) -> dict:
    """The predictions as the registration stores them (``data/registration/out_of_sample.json``,
    already parsed), for one summary, over every (setting, L) point in the registration's order:
    ``{model: {"pred", "cov"}}``; with ``exact_model`` (:func:`exact_model_predictions`) the row
    model is added. Nothing is refitted: the numbers are those committed before the data.

    Raises
    ------
    ValueError
        A summary, setting or length the registration does not hold.
    """
    if method not in registration.get("methods", {}):
        raise ValueError(f"the registration holds no summary {method!r}; it holds "
                         f"{sorted(registration.get('methods', {}))}")
    if list(registration["setups"]) != list(setups):
        raise ValueError(f"the registration's settings are {registration['setups']}, not "
                         f"{list(setups)}")
    rec = registration["methods"][method]
    per = []
    for j, name in enumerate(setups):
        P = {k: {"pred": np.array(p["d50"], float), "cov": np.array(p["cov"], float)}
             for k, p in rec[name]["predictions"].items()}
        if exact_model is not None:
            P.update(exact_model[j])
        per.append(P)
    return concat_predictions(per)


@dataclass
class OutOfSampleResult(Result):
    """The registered decision and what is reported beside it.

    ``points``: the new (setting, L) pairs; ``measured[summary]``: their ``d_50`` and variances
    (:func:`measured_points`); ``decisions``: ``"registered"`` (the primary summary, the three
    fitted laws, every point: the one that decides), ``"with_row_model"`` (addendum 1: the row
    model as a fourth law), ``"k1_only"`` (the first setting's points), and
    ``"<summary>"`` for each secondary summary (three laws, every point); ``shape``: whether
    the new curves keep the log-log shape of the curves the laws were fitted on
    (:func:`shape_check`; reported, not deciding); ``with_registered_curves``: the primary
    summary's points when the pooling runs over the curves as registered
    (:func:`registered_acceptance`) instead of the book's current ones (reported, not deciding;
    filled by :func:`out_of_sample_decision`).
    """

    points: list
    measured: dict
    decisions: dict
    shape: dict = field(default_factory=dict)
    with_registered_curves: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The registered decision names a winner."""
        return self.decisions["registered"].ok

    @property
    def verdict(self) -> str:
        return self.decisions["registered"].verdict

    @property
    def message(self) -> str:
        return "registered out-of-sample decision: " + self.decisions["registered"].message


def decide_measured(old_rows, new_rows, registration: dict, exact_model: list[dict], *,
                    setups=OOS_SETUPS, lengths=OOS_LENGTHS) -> OutOfSampleResult:
    """Measure the new points under every summary and apply the registered rule
    (:func:`decide_out_of_sample`) to the registered predictions; see
    :class:`OutOfSampleResult` for what is decided and what is reported."""
    if list(registration["lengths"]) != [int(L) for L in lengths]:
        raise ValueError(f"the registration's lengths are {registration['lengths']}, not "
                         f"{list(lengths)}")
    measured, decisions = {}, {}
    for method in OOS_SUMMARIES:
        m = measured_points(old_rows, new_rows, method=method, setups=setups, lengths=lengths)
        measured[method] = m
        preds = registered_predictions(registration, method=method, setups=setups)
        if method == OOS_METHOD:
            decisions["registered"] = decide_out_of_sample(preds, m["d50"], m["var"])
            four = registered_predictions(registration, exact_model, method=method,
                                          setups=setups)
            decisions["with_row_model"] = decide_out_of_sample(four, m["d50"], m["var"])
            n1 = len(lengths)
            first = {k: {"pred": p["pred"][:n1], "cov": p["cov"][:n1, :n1]}
                     for k, p in preds.items()}
            decisions["k1_only"] = decide_out_of_sample(first, m["d50"][:n1], m["var"][:n1])
        else:
            decisions[method] = decide_out_of_sample(preds, m["d50"], m["var"])
    return OutOfSampleResult(measured[OOS_METHOD]["points"], measured, decisions,
                             shape_check(new_rows))


def shape_check(rows, links=("loglog", "probit")) -> dict:
    """How well each link fits the curves of ``rows``: the binomial deviance summed over the
    curves (with its degrees of freedom, widths minus 2 per curve) and, for the first link, on
    how many curves it fits better than each other link. The decision assumes the curves at the
    new lengths have the shape of those the laws were fitted on (the log-log link fitted those
    better, 757 against 1,403 on 900 degrees of freedom); its calibration shows that a change of
    shape moves the log-log summary (:func:`calibrate_decision`). Reported beside the decision."""
    curves = [c for by_L in curves_by_setting(rows).values() for by_t in by_L.values()
              for c in by_t.values()]
    D, N, S = pad_curves(curves)
    dev = {}
    for link in links:
        dv, ok = curve_deviance(D, N, S, link)
        dev[link] = np.where(ok, dv, np.nan)
    first = links[0]
    return {"curves": len(curves), "dof": int(sum(len(c[0]) - 2 for c in curves)),
            "deviance": {k: float(np.sum(v)) for k, v in dev.items()},
            "better": {f"{first} over {k}": int(np.sum(dev[first] < dev[k]))
                       for k in links[1:]}}


def out_of_sample_decision(data_dir="data") -> OutOfSampleResult:
    """The registered decision from the committed files: the book's curves
    (``<data_dir>/acceptance.csv``), the new ones (``<data_dir>/out_of_sample/acceptance.csv``,
    written when the run of ``python -m sattn reproduce acceptance --profile out-of-sample``
    ends), and the two registrations under ``<data_dir>/registration/``. Both CSVs are checked
    against their manifests.

    Raises
    ------
    StoreError
        A file is missing (the new curves are written only when the whole run has ended) or
        does not match its manifest.
    """
    data = Path(data_dir)
    reg_path = data / "registration" / "out_of_sample.json"
    exact_path = data / "registration" / "predictions_exact_model.json"
    for p in (reg_path, exact_path):
        if not p.exists():
            raise StoreError(f"{p} is missing; restore it from git (it is part of the registration)")
    registration = json.loads(reg_path.read_text())
    new_rows = load_acceptance(data / "out_of_sample")
    res = decide_measured(load_acceptance(data), new_rows, registration,
                          exact_model_predictions(exact_path))
    res.with_registered_curves = measured_points(registered_acceptance(data), new_rows)
    return res


__all__ += ["OOS_SUMMARIES", "measured_points", "registered_predictions", "OutOfSampleResult",
            "decide_measured", "shape_check", "out_of_sample_decision"]


# ----------------------------------------------------------------------------- calibration
def simulate_new_rows(truth: dict, scale: dict, *, link="loglog", rng=None) -> list[dict]:
    """Synthetic curves at the new lengths, measured as the run measures them: each registered
    curve (``acceptance_tasks("out-of-sample")``: its initial widths, draws per width and
    extension rule) with binomial counts from a known ``p(d)``.

    Parameters
    ----------
    truth : dict
        ``{(setup, L): d_50}`` for every registered point: where ``p(d)`` crosses 1/2 (all targets
        of a point share it).
    scale : dict
        ``{setup: s}``: ``p(d)`` has the slope at ``d_50`` of the probit ``Phi((d - d_50)/s)``
        (:func:`~sattn.experiments.acceptance.robust.link_curve`).
    link : str
        The shape of ``p(d)`` (``"loglog"``, ``"probit"``, ``"logit"``, ``"cloglog"``): another
        link than the summary's is a misspecified one.

    Returns
    -------
    list of dict
        Acceptance rows, as :func:`measured_points` takes them.
    """
    rng = np.random.default_rng(OOS_SEED) if rng is None else check_rng("rng", rng)
    rows = []
    for task in acceptance_tasks("out-of-sample"):
        key = (task.setup.name, int(task.L))
        if key not in truth or task.setup.name not in scale:
            raise ValueError(f"no true d_50 or scale for {key}")
        p = link_curve(link, float(truth[key]), float(scale[task.setup.name]))
        counts = {}
        while True:
            todo = next_widths(list(task.widths), task.L, dict(task.rule), counts)
            if not todo:
                break
            for d in todo:
                counts[d] = (task.draws, int(rng.binomial(task.draws, float(p(d)))))
        rows += [{"setup": task.setup.name, "L": int(task.L), "target": int(task.target),
                  "d": d, "draws": n, "successes": s} for d, (n, s) in sorted(counts.items())]
    return rows


__all__ += ["simulate_new_rows"]


#: The synthetic curves of :func:`calibrate_decision`: ``{name: (link, same_summary)}``. With
#: ``same_summary`` the curve is placed so that the primary summary of its noiseless shape gives
#: the true ``d_50`` (a shape other than the summary's, the same at every length: the old and the
#: new curves misfit alike); without it the curve's own median is the true ``d_50`` (with another
#: link than the summary's: a change of shape beyond the lengths measured so far).
CALIBRATION_SCENARIOS = {
    "loglog": ("loglog", False),
    "probit, same summary": ("probit", True),
    "probit, same median": ("probit", False),
}


def summary_offset(link, scale, *, method=OOS_METHOD) -> float:
    """How far the primary summary's ``d_50`` of a noiseless curve of shape ``link`` (probit
    slope ``1/scale`` at its median, :func:`~sattn.experiments.acceptance.robust.link_curve`)
    lies from the curve's own median: the summary fitted to the expected shares on a grid of
    widths ``median +- 4 scale`` (step ``scale / 8``, equal weights)."""
    check_real("scale", scale, low=0, low_open=True)
    d = np.arange(-32, 33) * (scale / 8)
    p = link_curve(link, 0.0, scale)(d)
    n = np.full(d.shape, 1024.0)
    r = link_quantiles(d[None], n[None], (n * p)[None], method, n_boot=20,
                       rng=np.random.default_rng(0))
    return float(r["est"][0])


def calibrate_decision(old_rows, registration: dict, exact_model: list[dict], scale: dict, *,
                       scenarios=None, reps=200, seed=OOS_SEED, progress=None) -> dict:
    """The registered rule, end to end, on synthetic curves whose truth is known.

    For each scenario of :data:`CALIBRATION_SCENARIOS` and each true law (the three fitted laws
    and the row model), ``reps`` times: a true ``d_50`` at every new point drawn from the law's
    registered prediction and covariance (primary summary), curves simulated as the run
    measures them (:func:`simulate_new_rows`, every target of a point sharing it), the points
    measured and the rule applied (:func:`decide_measured`). Unlike the registration's expected
    outcomes, which drew the measured points from a normal law with the expected variances, this
    runs the fits, the extension rule, the bootstrap and the pooling themselves; a scenario with
    another link than the summary's makes the curves' shape misspecified.

    Returns
    -------
    dict
        ``{scenario: {"link", "same_summary", "summary_offset", "truths": {truth: {...}}}}``
        with ``"verdicts"``: for every decision of :class:`OutOfSampleResult` (the registered
        one, the four-law rule, k = 1 alone, the secondary summaries) the share of each verdict
        (a law's name for a win, ``"undecided"``, ``"none"``);
        ``"true_survives"``: how often the true law survives (under the rule that includes it);
        ``"true_chi2_mean"``: the mean of its chi^2 (4 if the variances are right and the law is
        true); per point, ``"measured_bias"`` and ``"measured_sd"`` of the measured ``d_50``
        about the drawn truth, beside ``"reported_sd"``, the mean standard deviation that the
        registered pooling reported.
    """
    reps = check_int("reps", reps, low=2)
    scenarios = CALIBRATION_SCENARIOS if scenarios is None else scenarios
    models = (*OOS_MODELS, EXACT_MODEL)
    three = registered_predictions(registration)
    four = registered_predictions(registration, exact_model)
    pts = [(s, L) for s in OOS_SETUPS for L in OOS_LENGTHS]
    out = {}
    for i, (name, (link, same_summary)) in enumerate(scenarios.items()):
        shift = np.array([summary_offset(link, scale[s]) if same_summary else 0.0
                          for s, _ in pts])
        out[name] = {"link": link, "same_summary": bool(same_summary),
                     "summary_offset": shift.tolist(), "truths": {}}
        for j, truth in enumerate(models):
            rng = np.random.default_rng([seed, i, j])
            P = four[truth]
            chol = np.linalg.cholesky(np.asarray(P["cov"]) + 1e-12 * np.eye(len(pts)))
            verdicts = {}
            survive, chis, errs, sds = 0, [], [], []
            for _ in range(reps):
                true = P["pred"] + chol @ rng.standard_normal(len(pts))
                rows = simulate_new_rows(dict(zip(pts, true - shift)), scale, link=link, rng=rng)
                res = decide_measured(old_rows, rows, registration, exact_model)
                for k, dec in res.decisions.items():
                    key = dec.winner or ("undecided" if dec.surviving else "none")
                    tally = verdicts.setdefault(k, {})
                    tally[key] = tally.get(key, 0) + 1
                rule = res.decisions["registered" if truth in three else "with_row_model"]
                survive += truth in rule.surviving
                chis.append(rule.chi2[truth])
                m = res.measured[OOS_METHOD]
                errs.append(m["d50"] - true)
                sds.append(np.sqrt(m["var"]))
                if progress is not None:
                    progress()
            out[name]["truths"][truth] = {
                "verdicts": {k: {v: c / reps for v, c in sorted(t.items())}
                             for k, t in verdicts.items()},
                "true_survives": survive / reps,
                "true_chi2_mean": float(np.mean(chis)),
                "measured_bias": np.mean(errs, axis=0).tolist(),
                "measured_sd": np.std(errs, axis=0, ddof=1).tolist(),
                "reported_sd": np.mean(sds, axis=0).tolist()}
    return out


__all__ += ["CALIBRATION_SCENARIOS", "summary_offset", "calibrate_decision"]
