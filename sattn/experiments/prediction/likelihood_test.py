"""A likelihood test of the row model against measured acceptance counts.

The registered test (the book's registration of the row-model test, :ref:`ch-prediction`):

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

from dataclasses import dataclass, field

import numpy as np
import scipy.special as spc

from ..._validate import check_int, check_real, check_rng
from ...results import Result

__flat__: list[str] = []
__all__ = [*__flat__, "binomial_deviance", "ModelTest", "model_test", "calibrate_model_test",
           "wilson_outside", "expected_outside", "P_FLOOR"]

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
    from ..acceptance.analysis import wilson_interval     # acceptance imports this package
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

