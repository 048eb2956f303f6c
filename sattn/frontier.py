"""The width x bits frontier: every construction of the book measured against the bound.

For a target with exactly ``k`` equal nonzeros per row and column (:func:`sattn.regular_pattern`
with ``structure="random"``, a generic member of the class)
each construction gives an input ``X`` (``L x d_hid``, ``d_hid = 2d`` for the fixed weights
``W_Q = [I; 0]``, ``W_K = [0; I]``). This module measures the fewest bits ``b`` per entry with
which ``X`` still meets criteria (6)-(7), in two formats:

* ``"fixed"``: ``X`` alone is rounded to a two's-complement fixed-point grid of ``b`` bits (sign
  included) on ``[-R, R)``, ``R`` the smallest power of two ``>= max |X|`` (one grid per
  construction and length), the weights stay exact and the logits are computed in float64;
* ``"float"``: the whole forward pass runs in a float format with a ``p``-bit significand
  (:func:`sattn.attention_matrix_in`, as in :ref:`ch-finite-precision`); ``b = 1 + e + (p - 1)``
  counts the sign, ``e`` exponent bits (enough for every binade of the rounded ``X`` plus a code
  for zero) and the stored ``p - 1`` significand bits.

The tolerances depend on ``k`` (``TOLERANCES``: the book's setups with equal nonzeros,
eps1 = 3 for k = 1 and 2, eps1 = 7 for k = 4, always eps2 = 0.9).

The constructions: Algorithm 1 (SVD-free form) at ``d_50``, the width where half the draws pass
(for ``k = 1`` and ``4`` the registered ``d_50`` of :ref:`ch-log-law`, rounded up, where its curves
exist; otherwise a seeded bisection on the fast engine's acceptance rate); the moment curve
(``d = 2k + 1``); the optimizer of :ref:`ch-beyond` at the smallest width it reaches. Where one does
not run (the moment curve fails in float64, a size too costly), its row says why.

``python -m sattn reproduce width-bits`` computes the frontier through the resumable store
(:func:`reproduce_width_bits`). The book explains all of this in :ref:`ch-width-bits`.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sps

from ._validate import as_float_array, as_matrix, check_bool, check_int, check_real
from .experiments.acceptance.analysis import analyse_setting, curves_by_setting
from .experiments.acceptance.design import load_acceptance
from .experiments.engine import ENGINE_VERSION, FastEngine
from .runs.runner import run_in_store
from .runs.store import OutputLock, StoreError, versions, write_csv, write_manifest
from .experiments.target import draw_generator, prepare_target
from .patterns.construction import exact_product_rows
from .patterns.criteria import (ApproximationReport, check_rows, extremes_meet_criteria,
                                merge_reports, validate_tolerances)
from .patterns.optimize import moment_curve_logits, optimize_logits
from .patterns.supports import regular_pattern, target_supports, width_bits_lower_bound
from .precision.formats import FormatArithmetic, exponent_bits
from .precision.forward import softmax_extremes_in
from .rounding import product_error_bound

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["fixed_point_bits", "float_format_bits", "load_width_bits", "round_fixed"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [
    *__flat__,
    "CONSTRUCTIONS", "FLOAT_CHECK", "FRONTIER_COLUMNS", "LOG_LAW_SETUPS", "acceptance_rate",
    "check_input", "estimate_d50", "grid_scale", "log_law_d50", "reproduce_width_bits",
    "FrontierTask", "frontier_tasks", "run_frontier_task",
]

#: The constructions of the frontier, in the order of the CSV.
CONSTRUCTIONS = ("algorithm1", "moment-curve", "optimizer")
#: Columns of ``width_bits.csv``.
FRONTIER_COLUMNS = ("construction", "L", "k", "d", "d_bisection", "d_hid", "format", "bits",
                    "exponent_bits", "bound", "ratio", "seconds", "reason")
#: Tolerances ``(eps1, eps2)`` per ``k``: the book's setups with equal nonzeros (gamma = 1) of
#: :ref:`ch-experiments`, the loosest for each ``k``: k1-g1-e3-0.9, k2-g1-e3-0.9, k4-g1-e7-0.9 (the
#: book has no k = 4 setup with eps1 = 3). The bound does not depend on them (its lemma uses (7)
#: with ``eps2 < 1`` only).
TOLERANCES = {1: (3.0, 0.9), 2: (3.0, 0.9), 4: (7.0, 0.9)}
#: The tolerances of ``k = 1`` (the loosest setup of the experiments, k1-g1-e3-0.9).
EPS1, EPS2 = TOLERANCES[1]
ROOT_SEED = 20260
#: The length limits of a profile, per ``k``: one per construction and one for the float format.
_LIMIT_KEYS = CONSTRUCTIONS + ("float",)


def _limits(per_k):
    """``{k: (algorithm1, moment-curve, optimizer, float)}`` as ``{k: {key: largest L}}``."""
    return {k: dict(zip(_LIMIT_KEYS, v)) for k, v in per_k.items()}


#: Profiles: lengths, and per ``k`` the largest length each construction (and the float format)
#: runs at; larger lengths get a row with the reason. The float format's limit binds Algorithm 1
#: and the moment curve (the optimizer stops earlier).
PROFILES = {
    #                    k: algorithm1, moment-curve, optimizer, float
    "quick": {"lengths": (64, 128, 256), "k": (1, 2, 4),
              "limits": _limits({1: (256, 256, 128, 256), 2: (256, 256, 64, 256),
                                 4: (256, 256, 64, 256)})},
    "paper": {"lengths": tuple(2 ** p for p in range(6, 16)), "k": (1, 2, 4),
              "limits": _limits({1: (16384, 4096, 2048, 16384), 2: (8192, 4096, 512, 8192),
                                 4: (8192, 4096, 512, 8192)})},
}
#: The setups of :ref:`ch-log-law` whose tolerances and weights are those of a ``k`` here: where
#: their acceptance curves exist, Algorithm 1 is measured at their registered ``d_50`` (rounded
#: up); elsewhere (``k = 2``, whose setups there have other tolerances) at the coarse bisection
#: of :func:`estimate_d50`.
LOG_LAW_SETUPS = {1: "k1-g1-e3-0.9", 4: "k4-g1-e7-0.9"}
#: How the float format is decided (in the parameters of every task that measures it): the pass
#: in row blocks, each row decided exactly from its extreme weights.
FLOAT_CHECK = "row blocks, exact verdict per row"

_DESCRIPTION = (
    "Width x bits frontier: for a target with exactly k equal nonzeros in every row and column "
    "(sattn.regular_pattern with structure='random': k random permutations that differ in every "
    "row; for k = 1 a uniformly random permutation), the fewest bits per input entry with which "
    "each construction still meets (6)-(7): Algorithm 1 at d_50 (k = 1 and 4: the registered "
    "d_50 of the acceptance experiment for k1-g1-e3-0.9 and k4-g1-e7-0.9, rounded up, where its "
    "curves exist; k = 2: a bisection on 8 seeded draws per width), the moment curve "
    "(d = 2k + 1), the optimizer at the smallest d <= 2k + 1 it reaches; fixed-point input "
    "(weights exact) and the whole pass in a float format (in row blocks, each row decided "
    "exactly from its extreme weights). L = {lengths}; k = {ks}. Tolerances per k are the "
    "book's gamma = 1 setups: "
    "k = 1 and 2 eps1 = 3, eps2 = 0.9 (k1-g1-e3-0.9, k2-g1-e3-0.9); k = 4 eps1 = 7, eps2 = 0.9 "
    "(k4-g1-e7-0.9, the book's only k = 4 setup with equal nonzeros). The bound log2 N(L, k) / L "
    "does not depend on them. 'limits' gives the largest L each construction (and the float "
    "format) runs at per k; beyond it a row states the reason. d_bisection: for Algorithm 1, the "
    "d_50 of the bisection on 8 seeded draws per width, beside the width d used.")
_REASONS = {
    "algorithm1": "not run: each check costs O(L^2 d) float64 operations (about 1e11 at "
                  "L = 32768) and the bisections need about ten; beyond the profile's budget",
    "moment-curve": "not run: beyond the profile's limit (its fixed-point input already fails at "
                    "smaller L)",
    "optimizer": "not run: L-BFGS over all L^2 constraints is beyond the profile's budget",
    "float": "not run: the pass in a float format costs O(L^2 d) emulated operations per "
             "significand tried (about 1e11 at L = 32768); beyond the profile's budget",
}


# ----------------------------------------------------------------------------- formats
def grid_scale(X) -> float:
    """``R``: the smallest power of two ``>= max |X|`` (the range ``[-R, R)`` of the grid)."""
    X = np.asarray(X, dtype=np.float64)
    m = float(np.abs(X).max()) if X.size else 0.0
    if not math.isfinite(m):
        raise ValueError("X must be finite to put it on a fixed-point grid")
    return 1.0 if m == 0 else 2.0 ** math.ceil(math.log2(m))


def round_fixed(X, bits, scale) -> np.ndarray:
    """``X`` on the ``bits``-bit two's-complement grid of step ``scale / 2**(bits - 1)``.

    Parameters
    ----------
    X : array_like
        Finite reals.
    bits : int
        ``2 <= bits <= 53`` (sign included): ``2**bits`` values ``i * step``,
        ``-2**(bits-1) <= i < 2**(bits-1)``.
    scale : float
        ``R > 0``; values beyond ``[-R, R - step]`` are clipped.

    Returns
    -------
    numpy.ndarray of float64

    References
    ----------
    :ref:`ch-width-bits`.
    """
    bits = check_int("bits", bits, low=2, high=53)
    scale = check_real("scale", scale, low=0.0, low_open=True)
    X = as_float_array("X", X)
    step = scale / 2.0 ** (bits - 1)
    top = 2 ** (bits - 1)
    return np.clip(np.round(X / step), -top, top - 1) * step


# ----------------------------------------------------------------------------- checks
def check_input(X, d, A, eps1, eps2, *, block_rows: int = 512) -> ApproximationReport:
    """Criteria (6)-(7) for the input ``X = [Q, K]`` (logits ``Q K^T``) in row blocks.

    No ``L x L`` array is formed: block ``i`` of the logits is ``Q[rows] K^T``. ``A`` may be a
    scipy.sparse matrix.

    Returns
    -------
    ApproximationReport

    References
    ----------
    Criteria (6)-(7) (:ref:`ch-approximation`); :ref:`ch-width-bits`.
    """
    X = as_matrix("X", X)
    d = check_int("d", d, low=1)
    if X.shape[1] != 2 * d:
        raise ValueError(f"X must have shape (L, 2 d) = (L, {2 * d}) for d = {d}, got {X.shape}")
    if X.shape[0] < 2:
        raise ValueError(f"X must have at least 2 rows (tokens), got {X.shape}")
    L = X.shape[0]
    Q, K = X[:, :d], X[:, d:]
    A = sps.csr_array(A) if sps.issparse(A) else A
    reps = []
    exact = exact_product_rows(Q, K)
    for s in range(0, L, block_rows):
        rows = np.arange(s, min(s + block_rows, L))
        # each decision certified against the product's rounding bound (re-made exactly inside it)
        reps.append(check_rows(Q[rows] @ K.T, rows, A, eps1, eps2,
                               logit_error=product_error_bound(Q[rows], K), exact_logits=exact))
    return merge_reports(reps)


def _bisect_bits(ok, low, high):
    """Smallest ``b`` in ``[low, high]`` with ``ok(b)`` by bisection (``ok(high)`` must hold);
    returns ``(b, checks)``; ``ok(b - 1)`` is false unless ``b = low``."""
    lo, hi, n = low - 1, high, 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        n += 1
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi, n


def fixed_point_bits(X, d, A, eps1, eps2, *, low: int = 2, high: int = 53):
    """Fewest fixed-point bits of ``X`` (weights exact) with which (6)-(7) still hold.

    Bisection over ``b`` (the criteria's margins shrink as the grid coarsens, but not
    monotonically in general: the answer is a ``b`` at which ``X`` passes and ``b - 1`` at which
    it fails).

    Parameters
    ----------
    X : array_like, shape (L, 2d)
        The input ``[Q, K]`` (finite).
    d : int
        Width (``X`` has ``2d`` columns).
    A : array_like or scipy.sparse matrix, shape (L, L)
        The target.
    eps1, eps2 : float
        Tolerances.
    low, high : int
        The range searched, ``2 <= low <= high <= 53``.

    Returns
    -------
    tuple
        ``(bits, scale)``, or ``(None, scale)`` when even ``high`` bits fail.

    References
    ----------
    :ref:`ch-width-bits`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    low = check_int("low", low, low=2, high=53)
    high = check_int("high", high, low=low, high=53)
    X = as_matrix("X", X)
    d = check_int("d", d, low=1)
    check_input(X, d, A, eps1, eps2)          # validates X, d and A before any search
    R = grid_scale(X)

    def ok(b):
        return check_input(round_fixed(X, b, R), d, A, eps1, eps2).ok
    if not ok(high):
        return None, R
    return _bisect_bits(ok, low, high)[0], R


def _float_pass_ok(X, d, cols, p, eps1, eps2, block_rows) -> bool:
    """Whether the whole pass with a ``p``-bit significand meets (6)-(7) in every row, computed
    in row blocks: ``X`` rounded, the logits ``Q K^T`` as products of the format (the book's
    weights select ``Q`` and ``K`` exactly), the softmax of each block
    (:func:`~sattn.precision.forward.softmax_extremes_in`), each row decided exactly from its
    extreme weights (:func:`~sattn.patterns.criteria.extremes_meet_criteria`). Row for row the same
    numbers as :func:`sattn.attention_matrix_in`, without an ``L x L`` array."""
    ar = FormatArithmetic(p)
    Xr = ar.r(X)
    Q, Kt = Xr[:, :d], np.ascontiguousarray(Xr[:, d:].T)
    for s in range(0, X.shape[0], block_rows):
        rows = slice(s, min(s + block_rows, X.shape[0]))
        ext = softmax_extremes_in(ar.matmul(Q[rows], Kt), cols[rows], p)
        if not extremes_meet_criteria(*ext, eps1, eps2).all():
            return False
    return True


def float_format_bits(X, d, A, eps1, eps2, *, high: int = 53, block_rows=None):
    """Fewest bits ``1 + e + (p - 1)`` of a float format in which the whole pass meets (6)-(7).

    The forward pass runs with a ``p``-bit significand, row block by row block (the numbers of
    :func:`sattn.attention_matrix_in`; no ``L x L`` array); each row is decided exactly from its
    extreme weights. ``p`` is found by bisection; ``e`` exponent bits cover the binades of ``X``
    (a named format with fewer exponent bits would flush or overflow some entries).

    Parameters
    ----------
    X, d, A, eps1, eps2
        As in :func:`fixed_point_bits`; ``A`` has ``k`` equal nonzeros in every row (the class of
        the frontier).
    high : int, default 53
        Largest significand searched, ``2 <= high <= 53``.
    block_rows : int, optional
        Rows per block (default: blocks of about 2**22 entries).

    Returns
    -------
    tuple
        ``(bits, p, e)``, or ``(None, None, None)`` if ``p = high`` fails.

    References
    ----------
    :ref:`ch-finite-precision`; :ref:`ch-width-bits`.
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    high = check_int("high", high, low=2, high=53)
    X = as_matrix("X", X)
    d = check_int("d", d, low=1)
    check_input(X, d, A, eps1, eps2)          # validates X, d and A before any search
    L, _, cols = target_supports(A)
    block_rows = (max(1, (1 << 22) // L) if block_rows is None
                  else check_int("block_rows", block_rows, low=1))

    def ok(p):
        return _float_pass_ok(X, d, cols, p, eps1, eps2, block_rows)
    if not ok(high):
        return None, None, None
    p = _bisect_bits(ok, 2, high)[0]
    e = exponent_bits(X)
    return 1 + e + (p - 1), p, e


# ----------------------------------------------------------------------------- Algorithm 1
def acceptance_rate(engine: FastEngine, d, n_draws, key) -> float:
    """Fraction of ``n_draws`` seeded draws of Algorithm 1 at width ``d`` that pass (6)-(7)."""
    n_draws = check_int("n_draws", n_draws, low=1)
    ok = sum(engine.draw(d, draw_generator(ROOT_SEED, tuple(key) + (d, i))).ok
             for i in range(n_draws))
    return ok / n_draws


def estimate_d50(engine: FastEngine, key, *, n_draws: int = 8, low: int = 2, high=None):
    """``d_50``: the smallest width whose acceptance rate (``n_draws`` draws) is at least 1/2.

    A bisection on ``[low, high]`` (default ``high = L // 2``), assuming the rate increases with
    ``d``; returns ``(d_50, {d: rate})``.

    References
    ----------
    :ref:`ch-width-bits`; the fast engine of :ref:`ch-experiments`.
    """
    L = engine.L
    high = L // 2 if high is None else check_int("high", high, low=low, high=L)
    rates = {}

    def ok(d):
        rates[d] = acceptance_rate(engine, d, n_draws, key)
        return rates[d] >= 0.5
    if not ok(high):
        raise ValueError(f"no width up to {high} passes half of {n_draws} draws at L = {L}")
    d, _ = _bisect_bits(ok, low, high)
    return d, rates


def log_law_d50(k, data_dir="data") -> dict:
    """``{L: d_50}`` of :ref:`ch-log-law` for the setup of ``k`` (:data:`LOG_LAW_SETUPS`): the
    registered series (mean over the three targets of each length's probit ``d_50``,
    :func:`~sattn.experiments.acceptance.analysis.analyse_setting`), at the lengths where all
    three curves exist; ``{}`` for a ``k`` without such a setup.

    Raises
    ------
    StoreError
        If ``<data_dir>/acceptance.csv`` or its manifest is missing.
    """
    k = check_int("k", k, low=1)
    if k not in LOG_LAW_SETUPS:
        return {}
    curves = curves_by_setting(load_acceptance(data_dir)).get(LOG_LAW_SETUPS[k], {})
    by_L = {L: c for L, c in curves.items() if len(c) == 3}
    if not by_L:
        return {}
    Ls, y, _ = analyse_setting(by_L, quantile=0.5)[:3]
    return {int(L): float(v) for L, v in zip(Ls, y)}


def _algorithm1_input(A, eps1, eps2, d, key, max_draws=64):
    """An accepted draw of Algorithm 1 at width ``d``, SVD-free form: ``X = sqrt(L/d) [B Y, Y]``
    with ``Y`` the orthonormal factor of the engine's Gaussian draw (so ``Q K^T = (L/d) B Y Y^T``)."""
    t = prepare_target(A, eps1, eps2)
    L = t.L
    rows = np.repeat(np.arange(L), t.k_max)
    B = sps.csr_array((t.bvals.ravel(), (rows, t.cols.ravel())), shape=(L, L))
    eng = FastEngine(A, eps1, eps2)
    for i in range(max_draws):
        out = eng.draw(d, draw_generator(ROOT_SEED, tuple(key) + (d, 10 ** 6 + i)), complete=True)
        if not out.ok:
            continue
        Y = np.linalg.qr(out.Z)[0]
        s = math.sqrt(L / d)
        X = np.hstack([s * (B @ Y), s * Y])
        if check_input(X, d, A, eps1, eps2).ok:
            return X, i + 1
    raise RuntimeError(f"no accepted draw of Algorithm 1 at d = {d}, L = {L} in {max_draws} tries")


# ----------------------------------------------------------------------------- one task
@dataclass(frozen=True)
class FrontierTask:
    """One (construction, L, k) of the frontier: the store's unit of work."""

    construction: str
    L: int
    k: int
    profile: str
    #: Algorithm 1's width: the ceiling of :func:`log_law_d50` where it exists (else ``None``:
    #: the bisection of :func:`estimate_d50`).
    d_log_law: int | None = None

    @property
    def task_id(self) -> str:
        return f"{self.construction}-L{self.L}-k{self.k}"

    @property
    def eps(self) -> tuple:
        """The tolerances ``(eps1, eps2)`` of this ``k`` (``TOLERANCES``)."""
        return TOLERANCES[self.k]

    @property
    def limits(self) -> dict:
        """The profile's largest length per construction (and format) for this ``k``."""
        return PROFILES[self.profile]["limits"][self.k]

    def params(self) -> dict:
        eps1, eps2 = self.eps
        out = {"construction": self.construction, "L": self.L, "k": self.k, "eps1": eps1,
               "eps2": eps2, "root_seed": ROOT_SEED, "limits": self.limits,
               "float_check": FLOAT_CHECK}
        if self.construction == "algorithm1":
            out["d_log_law"] = self.d_log_law
            out["engine"] = ENGINE_VERSION   # its draws come from the fast engine
        return out


def _row(task, d, fmt, bits, e, bound, seconds, reason):
    d_hid = None if d is None else 2 * d
    ratio = None if bits is None else round(d_hid * bits / bound, 4)
    return [task.construction, task.L, task.k, d, d_hid, fmt, bits, e, round(bound, 6), ratio,
            round(seconds, 2), reason.replace(",", ";")]


def run_frontier_task(task: FrontierTask) -> dict:
    """Build the construction's input for ``task`` and measure its bits in both formats."""
    t0 = time.perf_counter()
    lim = task.limits
    L, k = task.L, task.k
    eps1, eps2 = task.eps
    bound = width_bits_lower_bound(L, k)
    key = (CONSTRUCTIONS.index(task.construction), L, k)
    if L > lim[task.construction]:
        return {"params": task.params(), "rows": [
            _row(task, None, f, None, None, bound, 0.0, _REASONS[task.construction])
            for f in ("fixed", "float")], "extra": {}}
    A = regular_pattern(L, k, draw_generator(ROOT_SEED, (L, k)), as_csr=True, structure="random")
    extra: dict = {}
    if task.construction == "algorithm1":
        eng = FastEngine(A, eps1, eps2)
        try:                               # the coarse bisection, also where the chapter's d_50 is
            d, rates = estimate_d50(eng, key, high=min(L // 2, 400))   # used (for comparison)
        except ValueError as exc:
            if task.d_log_law is None:
                return {"params": task.params(), "rows": [
                    _row(task, None, f, None, None, bound, time.perf_counter() - t0, str(exc))
                    for f in ("fixed", "float")], "extra": {}}
            d, rates = None, {}
        extra["rates"] = {str(w): r for w, r in sorted(rates.items())}
        extra["d_bisection"] = d
        if task.d_log_law is not None:
            d = task.d_log_law
        X, extra["draws"] = _algorithm1_input(A, eps1, eps2, d, key)
    else:
        Ad = A.toarray()
        if task.construction == "moment-curve":
            try:
                res = moment_curve_logits(Ad, eps1, eps2)
            except FloatingPointError as exc:
                reason = f"fails in float64: {exc}"
                return {"params": task.params(), "rows": [
                    _row(task, 2 * k + 1, f, None, None, bound, time.perf_counter() - t0, reason)
                    for f in ("fixed", "float")], "extra": {}}
        else:
            res = None
            for dd in range(1, 2 * k + 2):
                res = optimize_logits(Ad, eps1, eps2, dd, rng=draw_generator(ROOT_SEED, key + (dd,)),
                                      restarts=2)
                if res.ok:
                    break
        d, X = res.d, res.X
        if not res.ok:
            r = res.report
            reason = (f"fails (6)-(7) in float64 at d = {d}: margins {r.margin6:.3g} (6), "
                      f"{r.margin7:.3g} (7)")
            return {"params": task.params(), "rows": [
                _row(task, d, f, None, None, bound, time.perf_counter() - t0, reason)
                for f in ("fixed", "float")], "extra": {}}
    # Algorithm 1's X comes from BLAS products whose last bits depend on the CPU and the thread
    # count (relative error ~1e-15): the diagnostic keeps the 10 digits above that
    extra["max_abs_X"] = float(f"{float(np.abs(X).max()):.10g}")
    t1 = time.perf_counter()
    bits, R = fixed_point_bits(X, d, A, eps1, eps2)
    extra["scale"] = R
    rows = [_row(task, d, "fixed", bits, None, bound, time.perf_counter() - t1,
                 "" if bits is not None else "fails with 53 fixed-point bits")]
    t2 = time.perf_counter()
    if L > lim["float"]:
        rows.append(_row(task, d, "float", None, None, bound, 0.0, _REASONS["float"]))
    else:
        fb, p, e = float_format_bits(X, d, A, eps1, eps2)
        extra["significand_bits"] = p
        rows.append(_row(task, d, "float", fb, e, bound, time.perf_counter() - t2,
                         "" if fb is not None else "fails with a 53-bit significand"))
    return {"params": task.params(), "rows": rows, "extra": extra,
            "seconds": round(time.perf_counter() - t0, 2)}


def _task_cost(task: FrontierTask) -> float:
    """A rough relative cost, so that parallel workers start the longest tasks first: the
    optimizer's L-BFGS over ``L**2`` constraints grows like ``L**3``, the checks like
    ``L**2 k``; a task beyond its limit costs nothing."""
    if task.L > task.limits[task.construction]:
        return 0.0
    return float(task.L) ** 3 if task.construction == "optimizer" else float(task.L) ** 2 * task.k


def frontier_tasks(profile: str = "quick", data_dir="data") -> list:
    """The tasks of a profile (``"quick"`` or ``"paper"``), cheapest first; Algorithm 1's widths
    from the acceptance curves in ``data_dir`` (:func:`log_law_d50`)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    prof = PROFILES[profile]
    widths = {k: log_law_d50(k, data_dir) for k in prof["k"]}
    return [FrontierTask(c, L, k, profile,
                         math.ceil(widths[k][L]) if c == "algorithm1" and L in widths[k] else None)
            for k in prof["k"] for L in prof["lengths"] for c in CONSTRUCTIONS]


def reproduce_width_bits(*, profile: str = "quick", out=None, jobs: int = 1, data_dir="data",
                         progress: bool = True) -> dict:
    """Compute (or resume) ``<out>/width_bits.csv`` and its manifest.

    Parameters
    ----------
    profile : {"quick", "paper"}
        ``"paper"``: L = 64 ... 32768 (data/); ``"quick"``: L = 64, 128, 256 (data/quick/);
        both for k = 1, 2 and 4, with the tolerances of ``TOLERANCES``.
    out : path, optional
        Output folder (default ``data`` or ``data/quick``).
    jobs : int, default 1
        Local workers (-1: one per core); the results do not depend on it.
    data_dir : path, default "data"
        Where the acceptance curves of :ref:`ch-log-law` are read (Algorithm 1's widths).
    progress : bool, default True
        Show a progress bar (tasks done, reused ones included).

    Returns
    -------
    dict
        The manifest written.

    References
    ----------
    :ref:`ch-width-bits`.
    """
    check_bool("progress", progress)
    jobs = check_int("jobs", jobs, low=-1)
    tasks = frontier_tasks(profile, data_dir)
    out = Path(out) if out is not None else Path("data" if profile == "paper" else "data/quick")
    t0 = time.perf_counter()
    with OutputLock(out) as lock:
        run = run_in_store(tasks, run_frontier_task, out, "width_bits", lock,
                           desc=f"width-bits ({profile})", jobs=jobs, progress=progress,
                           cost=_task_cost)
        rows, task_seconds = [], 0.0
        for task in tasks:                    # the CSV in task order, however the tasks arrived
            payload = run.payloads[task.task_id]
            # a task that stopped early records its time in its rows only
            task_seconds += float(payload.get("seconds") or max(r[10] for r in payload["rows"]))
            # Algorithm 1: the coarse bisection's d_50 beside the width used
            d_bis = payload["extra"].get("d_bisection")
            rows.extend(r[:4] + [d_bis] + r[4:] for r in payload["rows"])
        computed, reused = run.computed, run.reused
        write_csv(out / "width_bits.csv", FRONTIER_COLUMNS,
                   [["" if v is None else v for v in r] for r in rows])
        man = {"figure": "width-bits", "profile": profile,
               "command": f"python -m sattn reproduce width-bits --profile {profile}",
               "computed": computed, "reused": reused,
               "wall_seconds_this_run": round(time.perf_counter() - t0, 1),
               "task_seconds": round(task_seconds, 1),
               "description": _DESCRIPTION.format(
                   lengths=", ".join(str(L) for L in PROFILES[profile]["lengths"]),
                   ks=", ".join(str(k) for k in PROFILES[profile]["k"])),
               "tolerances": {str(k): list(TOLERANCES[k]) for k in PROFILES[profile]["k"]},
               "limits": {str(k): PROFILES[profile]["limits"][k] for k in PROFILES[profile]["k"]},
               "root_seed": ROOT_SEED, "columns": list(FRONTIER_COLUMNS),
               "log_law_setups": {str(k): s for k, s in LOG_LAW_SETUPS.items()},
               "float_check": FLOAT_CHECK,
               "versions": versions()}
        return write_manifest(out / "width_bits_manifest.json", man)


def load_width_bits(data_dir="data"):
    """The frontier CSV as a list of dicts (numbers parsed; empty cells ``None``).

    Parameters
    ----------
    data_dir : str or os.PathLike, default "data"
        Folder holding ``width_bits.csv`` and its manifest.

    Raises
    ------
    StoreError
        If the CSV or its manifest is missing.
    """
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path (str or os.PathLike), got {type(data_dir).__name__}")
    path = Path(data_dir) / "width_bits.csv"
    if not path.exists() or not (Path(data_dir) / "width_bits_manifest.json").exists():
        raise StoreError(f"{path} or its manifest is missing: run "
                         "python -m sattn reproduce width-bits --profile paper")
    lines = path.read_text().strip().splitlines()
    cols = lines[0].split(",")
    out = []
    for line in lines[1:]:
        vals = line.split(",", len(cols) - 1)
        rec = {}
        for c, v in zip(cols, vals):
            if v == "":
                rec[c] = None
            elif c in ("L", "k", "d", "d_bisection", "d_hid", "bits", "exponent_bits"):
                rec[c] = int(v)
            elif c in ("bound", "ratio", "seconds"):
                rec[c] = float(v)
            else:
                rec[c] = v
        out.append(rec)
    return out
