"""The row model against the measured acceptance curves: its probability at every measured point,
its d_50 at any length, and the registered likelihood test of the model.

**Point predictions and d_50.** The exact model (:func:`~sattn.draw_success_probability`,
``method="exact"``) at the acceptance experiment's targets. The experiment measures ``d_50`` per
target as the 50% point of a curve fitted to the accepted shares, and per ``(setting, L)`` the
mean over the targets; the model's counterpart is, per target, the crossing of ``p = 1/2``
interpolated linearly in the probit ``Phi^{-1}(p)`` between the integer widths around it, and
the mean over the targets.

**The registered test.**

* **Statistic.** For a group of points ``i`` (one setting), the binomial deviance of the
  measured counts ``y_i`` of ``n_i`` draws under the model's probabilities ``p_i``,
  ``G = 2 sum_i [y_i ln(y_i / (n_i p_i)) + (n_i - y_i) ln((n_i - y_i) / (n_i (1 - p_i)))]``.
* **Null distribution.** A parametric bootstrap that simulates whole data sets: first the
  model's numerical error, one standard normal ``zeta`` per group times each point's error of
  ``ln p`` (the errors are treated as fully correlated within a group, since every point of a
  setting uses the same importance samples or the same quadrature rule), giving
  ``p*_i = min(1, p_i exp(zeta se_i))``; then the counts ``y*_i ~ Binomial(n_i, p*_i)``,
  independent given the target (every draw has its own seed). ``G*`` is computed against the
  unperturbed ``p_i``, as ``G`` is.
* **p-value** ``(1 + #{G* >= G}) / (1 + B)``; **decision**: the model is rejected for a group
  when its p-value is below ``level / n_groups`` (Bonferroni), and as a whole when the sum of the
  groups' deviances has a p-value below ``level``.

:func:`calibrate_model_test` runs the whole test on synthetic counts drawn from known truths
(the model itself, and the model shifted by ``delta`` on the probit scale) and reports how often
it rejects.

References
----------
The model is the book's own (:ref:`ch-prediction`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.special as spc

from ..._validate import check_int, check_real, check_rng
from ...results import Result
from ..prediction.dmin import draw_success_probability
from ..setups import SETUPS, ExperimentError
from ..target import prepare_target
from .analysis import wilson_interval
from .design import AcceptanceTask

# Machinery reached as a module (sattn.experiments.acceptance.row_model_test): nothing is flat.
__flat__: list[str] = []
__all__ = [*__flat__, "acceptance_target", "point_predictions", "target_d50", "setting_d50",
           "binomial_deviance", "ModelTest", "model_test", "calibrate_model_test",
           "wilson_outside", "expected_outside", "load_point_predictions", "P_FLOOR"]


def acceptance_target(setup, L, target):
    """The target that the acceptance experiment uses for ``(setup, L, target)``, prepared."""
    if setup not in SETUPS:
        raise ExperimentError(f"unknown setup {setup!r}; valid names: {', '.join(SETUPS)}")
    s = SETUPS[setup]
    L = check_int("L", L, low=64, high=1 << 18)
    target = check_int("target", target, low=0)
    task = AcceptanceTask(s, L, target, (), 1, ())
    return prepare_target(task.target_task().sample_target(), s.eps1, s.eps2)


def target_d50(t, *, n_samples=1 << 17, seed=0, start=None) -> dict:
    """The exact model's ``d_50`` of one prepared target (probit interpolation), with its error.

    Returns
    -------
    dict
        ``d50`` (real), ``d_lo``/``d_hi`` (the integer widths around the crossing), ``p_lo``,
        ``p_hi``, ``se_log_p`` (numerical error of ``ln p`` at both), and ``err_d50``: the width
        shift that moves ``ln p`` by that error (slope of ``ln p`` between ``d_lo`` and ``d_hi``).
    """
    def at(d):
        return draw_success_probability(t, t.eps1, t.eps2, d, n_samples=n_samples, seed=seed,
                                        method="exact")
    lo, hi = t.k_max, t.L - t.k_max
    d = max(lo, min(hi, start if start is not None else lo))
    # bracket by doubling steps from the start, then bisect (p(d) increases in d)
    step = 1
    if at(d).p >= 0.5:
        while d > lo and at(max(lo, d - step)).p >= 0.5:
            d, step = max(lo, d - step), 2 * step
        a, b = max(lo, d - step), d
    else:
        while at(min(hi, d + step)).p < 0.5:
            if d + step >= hi:
                raise ValueError(f"p(d) < 1/2 up to d = L - k = {hi}")
            d, step = d + step, 2 * step
        a, b = d, min(hi, d + step)
    while b - a > 1:
        mid = (a + b) // 2
        if at(mid).p >= 0.5:
            b = mid
        else:
            a = mid
    pa, pb = at(a), at(b)
    if pa.p >= 0.5:                           # the crossing is at the bottom of the range
        return {"d50": float(a), "d_lo": a, "d_hi": a, "p_lo": pa.p, "p_hi": pa.p,
                "se_log_p": pa.se_log_p, "err_d50": 0.0}
    za, zb = float(spc.ndtri(pa.p)), float(spc.ndtri(pb.p))
    d50 = a + (0.0 - za) / (zb - za)
    slope = pb.log_p - pa.log_p               # d ln p / d d between the two widths
    se = max(pa.se_log_p, pb.se_log_p)
    return {"d50": d50, "d_lo": a, "d_hi": b, "p_lo": pa.p, "p_hi": pb.p, "se_log_p": se,
            "err_d50": se / slope if slope > 0 else math.inf}


def setting_d50(setup, L, *, targets=(0, 1, 2), n_samples=1 << 17, seed=0, start=None) -> dict:
    """The exact model's ``d_50`` of a setting at length ``L``: the mean over the acceptance
    experiment's targets of :func:`target_d50`, and its numerical error (the targets' errors
    added, as if fully correlated: they share the importance samples)."""
    per = []
    for tg in targets:
        r = target_d50(acceptance_target(setup, L, tg), n_samples=n_samples, seed=seed,
                       start=start)
        start = r["d_lo"]
        per.append({"target": tg, **r})
    n = len(per)
    return {"setup": setup, "L": L, "d50": sum(r["d50"] for r in per) / n,
            "err_d50": sum(r["err_d50"] for r in per) / n, "per_target": per}


def point_predictions(rows, *, n_samples=1 << 16, seed=0, progress=None) -> list[dict]:
    """The exact model's ``p`` and its error of ``ln p`` at every measured point.

    Parameters
    ----------
    rows : list of dict
        Rows of the acceptance CSV (``setup, L, target, d, draws, successes``).
    n_samples, seed
        Importance samples and their seed (:func:`~sattn.draw_success_probability`,
        ``method="exact"``).
    progress : callable, optional
        Called with ``(done, total)`` after each point.

    Returns
    -------
    list of dict
        One per row, in order: the row's keys and ``p``, ``se_log_p``, ``expected_failures``,
        ``max_rel_err`` (the largest relative numerical error of a row type's failure
        probability: the estimator's resolution against what it estimates).
    """
    targets, out = {}, []
    for i, r in enumerate(rows):
        key = (r["setup"], r["L"], r["target"])
        if key not in targets:
            targets[key] = acceptance_target(*key)
        t = targets[key]
        pr = draw_success_probability(t, t.eps1, t.eps2, int(r["d"]), n_samples=n_samples,
                                      seed=seed, method="exact")
        out.append({**r, "p": pr.p, "se_log_p": pr.se_log_p,
                    "expected_failures": pr.expected_failures,
                    "max_rel_err": max(f.rel_err for f in pr.row_failures)})
        if progress is not None:
            progress(i + 1, len(rows))
    return out

#: Model probabilities are kept in ``[P_FLOOR, 1 - P_FLOOR]`` inside the deviance (a count that a
#: probability of exactly 0 or 1 forbids then costs a large but finite deviance).
P_FLOOR = 1e-12


def binomial_deviance(y, n, p):
    """Per-point binomial deviance ``2 [y ln(y / (n p)) + (n - y) ln((n - y) / (n (1 - p)))]``.

    Arrays broadcast; ``p`` is kept in ``[P_FLOOR, 1 - P_FLOOR]``.
    """
    y = np.asarray(y, float)
    n = np.asarray(n, float)
    p = np.clip(np.asarray(p, float), P_FLOOR, 1.0 - P_FLOOR)
    if (n <= 0).any() or (y < 0).any() or (y > n).any():
        raise ValueError("counts must satisfy 0 <= y <= n and n > 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(y > 0, y * np.log(y / (n * p)), 0.0)
        b = np.where(n - y > 0, (n - y) * np.log((n - y) / (n * (1.0 - p))), 0.0)
    return 2.0 * (a + b)


def _check_inputs(y, n, p, se, groups):
    y, n, p, se = (np.asarray(v, float) for v in (y, n, p, se))
    groups = np.asarray(groups)
    if not (y.shape == n.shape == p.shape == se.shape == groups.shape) or y.ndim != 1:
        raise ValueError("y, n, p, se and groups must be 1-D arrays of one length, got shapes "
                         f"{y.shape}, {n.shape}, {p.shape}, {se.shape}, {groups.shape}")
    if not (np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()):
        raise ValueError("p must hold probabilities in [0, 1]")
    if not (np.isfinite(se).all() and (se >= 0).all()):
        raise ValueError("se must hold finite non-negative errors of ln p")
    binomial_deviance(y, n, 0.5)              # checks the counts
    return y, n, p, se, groups


def _simulate(n, p, se, gidx, n_groups, reps, rng, delta=0.0):
    """``reps`` whole data sets: model error shared within a group, then binomial counts."""
    zeta = rng.standard_normal((reps, n_groups))[:, gidx]
    with np.errstate(divide="ignore"):
        lp = np.log(np.maximum(p, 0.0))
    ps = np.minimum(1.0, np.exp(lp[None, :] + zeta * se[None, :]))
    if delta:
        ps = spc.ndtr(spc.ndtri(np.clip(ps, P_FLOOR, 1 - P_FLOOR)) + delta)
    return rng.binomial(n.astype(np.int64)[None, :], ps)


def _group_sums(dev, gidx, n_groups):
    out = np.zeros(dev.shape[:-1] + (n_groups,))
    for g in range(n_groups):
        out[..., g] = dev[..., gidx == g].sum(axis=-1)
    return out


@dataclass
class ModelTest(Result):
    """The registered likelihood test of the row model (module docs).

    Attributes
    ----------
    groups : list of str
    deviance : numpy.ndarray
        ``G`` per group.
    null_mean : numpy.ndarray
        Mean of ``G*`` per group under the null.
    p_values : numpy.ndarray
        Per group.
    total, total_p : float
        Sum of the groups' deviances and its p-value.
    level : float
    n_boot : int
    n_points : numpy.ndarray
        Points per group.
    """

    groups: list
    deviance: np.ndarray
    null_mean: np.ndarray
    p_values: np.ndarray
    total: float
    total_null_mean: float
    total_p: float
    level: float
    n_boot: int
    n_points: np.ndarray
    rejected: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the model survives: no group and not the whole rejected."""
        return not self.rejected and self.total_p >= self.level

    @property
    def message(self) -> str:
        """One line: the verdict on the whole and the rejected groups."""
        rej = ", ".join(self.rejected) if self.rejected else "none"
        return (f"row model vs {int(self.n_points.sum())} points: total deviance {self.total:.1f} "
                f"(null mean {self.total_null_mean:.1f}, p = {self.total_p:.4f}); groups "
                f"rejected at {self.level:g} / {len(self.groups)}: {rej}")

    def table(self) -> str:
        """Per group: points, deviance, null mean, p-value and decision, one line each."""
        lines = [f"{'group':15s} {'points':>6s} {'deviance':>9s} {'null mean':>9s} "
                 f"{'p-value':>8s}  decision (level {self.level:g} / {len(self.groups)})"]
        for g, m, d, e, pv in zip(self.groups, self.n_points, self.deviance, self.null_mean,
                                  self.p_values):
            verdict = "rejected" if g in self.rejected else "not rejected"
            lines.append(f"{g:15s} {m:6d} {d:9.1f} {e:9.1f} {pv:8.4f}  {verdict}")
        lines.append(f"{'all':15s} {int(self.n_points.sum()):6d} {self.total:9.1f} "
                     f"{self.total_null_mean:9.1f} {self.total_p:8.4f}  "
                     f"{'rejected' if self.total_p < self.level else 'not rejected'}")
        return "\n".join(lines)


def model_test(y, n, p, se, groups, *, n_boot=2000, level=0.05, rng=None) -> ModelTest:
    """The registered likelihood test of model probabilities ``p`` against counts ``y`` of ``n``.

    Parameters
    ----------
    y, n : array_like of int, shape (N,)
        Measured successes and draws.
    p : array_like, shape (N,)
        The model's probabilities.
    se : array_like, shape (N,)
        The model's numerical error of ``ln p`` (one standard error; 0 for exact values).
    groups : array_like, shape (N,)
        Group label of each point (a setting); the model's error is shared within a group.
    n_boot : int, default 2000
        Bootstrap data sets (``>= 99``).
    level : float, default 0.05
    rng : numpy.random.Generator, optional
        Default ``default_rng(20261206)``.

    Returns
    -------
    ModelTest
    """
    y, n, p, se, groups = _check_inputs(y, n, p, se, groups)
    n_boot = check_int("n_boot", n_boot, low=99, high=10 ** 6)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    rng = np.random.default_rng(20261206) if rng is None else check_rng("rng", rng)
    names, gidx = np.unique(groups, return_inverse=True)
    G = len(names)
    obs = _group_sums(binomial_deviance(y, n, p)[None, :], gidx, G)[0]
    null = np.empty((n_boot, G))
    chunk = max(1, 200_000 // max(1, y.size))
    for s0 in range(0, n_boot, chunk):
        m = min(chunk, n_boot - s0)
        ys = _simulate(n, p, se, gidx, G, m, rng)
        null[s0:s0 + m] = _group_sums(binomial_deviance(ys, n[None, :], p[None, :]), gidx, G)
    pv = (1 + (null >= obs[None, :]).sum(axis=0)) / (1 + n_boot)
    tot, tnull = obs.sum(), null.sum(axis=1)
    tp = (1 + (tnull >= tot).sum()) / (1 + n_boot)
    rejected = [str(g) for g, v in zip(names, pv) if v < level / G]
    return ModelTest(groups=[str(g) for g in names], deviance=obs, null_mean=null.mean(axis=0),
                     p_values=pv, total=float(tot), total_null_mean=float(tnull.mean()),
                     total_p=float(tp), level=level, n_boot=n_boot,
                     n_points=np.bincount(gidx, minlength=G), rejected=rejected)


def calibrate_model_test(n, p, se, groups, *, deltas=(0.0, 0.1, 0.2), reps=200, n_boot=500,
                         level=0.05, rng=None) -> dict:
    """Rejection rates of :func:`model_test` on synthetic counts of known truth.

    For each ``delta``: ``reps`` data sets drawn as in the test's null (the model's error, then
    binomial counts) but with the truth shifted by ``delta`` on the probit scale,
    ``Phi(Phi^-1(p*) + delta)`` (``delta = 0``: the model is true). Each data set is tested with
    its own bootstrap of ``n_boot``.

    Returns
    -------
    dict
        ``{delta: {"any_group": rate, "total": rate, "per_group": {name: rate}}}``: how often
        some group, the whole, and each group is rejected.
    """
    _, n, p, se, groups = _check_inputs(np.zeros(len(n)), n, p, se, groups)
    reps = check_int("reps", reps, low=1, high=10 ** 5)
    rng = np.random.default_rng(20261207) if rng is None else check_rng("rng", rng)
    names, gidx = np.unique(groups, return_inverse=True)
    out = {}
    for delta in deltas:
        delta = check_real("delta", delta)
        ys = _simulate(n, p, se, gidx, len(names), reps, rng, delta=delta)
        anyg, tot, per = 0, 0, {str(g): 0 for g in names}
        for yr in ys:
            t = model_test(yr, n, p, se, groups, n_boot=n_boot, level=level, rng=rng)
            anyg += bool(t.rejected)
            tot += t.total_p < level
            for g in t.rejected:
                per[g] += 1
        out[float(delta)] = {"any_group": anyg / reps, "total": tot / reps,
                             "per_group": {g: c / reps for g, c in per.items()}}
    return out


def wilson_outside(y, n, p, level=0.95):
    """Over-/under-prediction flags: ``p`` above / below the Wilson interval of ``y / n``."""
    lo, hi = wilson_interval(y, n, level)
    p = np.asarray(p, float)
    return p > hi, p < lo


def expected_outside(n, p, se, groups, *, reps=2000, rng=None):
    """Mean numbers of over- and under-predicted points (Wilson 95%) when the model is true,
    simulated as in the test's null; returns ``(over, under)`` arrays per point (rates)."""
    _, n, p, se, groups = _check_inputs(np.zeros(len(n)), n, p, se, groups)
    rng = np.random.default_rng(20261208) if rng is None else check_rng("rng", rng)
    names, gidx = np.unique(groups, return_inverse=True)
    ys = _simulate(n, p, se, gidx, len(names), reps, rng)
    ov, un = wilson_outside(ys, n[None, :], p[None, :])
    return ov.mean(axis=0), un.mean(axis=0)



def load_point_predictions(data_dir="data") -> dict:
    """The stored exact-model predictions (``acceptance_model.csv``, written by
    ``tools/predict_acceptance_points.py``) after checking the file against its manifest.

    Returns
    -------
    dict
        ``{(setup, L, target, d): {"p", "se_log_p", "expected_failures", "max_rel_err",
        "n_samples"}}``.

    Raises
    ------
    ValueError
        A missing file or a checksum that differs from the manifest's.
    """
    data = Path(data_dir)
    path, man = data / "acceptance_model.csv", data / "acceptance_model_manifest.json"
    if not path.exists() or not man.exists():
        raise ValueError(f"{path} and {man} are needed (run tools/predict_acceptance_points.py)")
    want = json.loads(man.read_text())["sha256"]
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != want:
        raise ValueError(f"{path}: checksum {got} differs from the manifest's {want}")
    out = {}
    with path.open() as f:
        for r in csv.DictReader(f):
            out[(r["setup"], int(r["L"]), int(r["target"]), int(r["d"]))] = {
                "p": float(r["p"]), "se_log_p": float(r["se_log_p"]),
                "expected_failures": float(r["expected_failures"]),
                "max_rel_err": float(r["max_rel_err"]), "n_samples": int(r["n_samples"])}
    return out
