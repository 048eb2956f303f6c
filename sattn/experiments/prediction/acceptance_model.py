"""The exact model at the acceptance experiment's targets: the probability of every measured
point, and the model's d_50 of a setting at any length (the width where one draw is accepted
with probability 1/2, as a real number), each with its numerical error.

The acceptance experiment (:ref:`ch-log-law`) measures ``d_50`` per target as the 50% point of a
probit curve fitted to the accepted shares, and per ``(setting, L)`` the mean over the targets.
The model's counterpart: for each target the exact model's ``p(d)``
(:func:`~sattn.draw_success_probability`, ``method="exact"``) at the integer widths around
``p = 1/2``, the crossing interpolated linearly in the probit ``Phi^{-1}(p)`` between them, and
the mean over the targets.

References
----------
The model is the book's own (:ref:`ch-prediction`).
"""

from __future__ import annotations

import math

import scipy.special as spc

from ..._validate import check_int
from ..setups import SETUPS, ExperimentError
from ..target import prepare_target
from .dmin import draw_success_probability

__flat__: list[str] = []
__all__ = [*__flat__, "acceptance_target", "point_predictions", "target_d50", "setting_d50"]


def acceptance_target(setup, L, target):
    """The target that the acceptance experiment uses for ``(setup, L, target)``, prepared."""
    from ..acceptance.design import AcceptanceTask      # the design imports this package
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
        One per row, in order: the row's keys and ``p``, ``se_log_p``, ``expected_failures``.
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
                    "expected_failures": pr.expected_failures})
        if progress is not None:
            progress(i + 1, len(rows))
    return out
