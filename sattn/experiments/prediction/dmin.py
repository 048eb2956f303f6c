"""One target: the acceptance probability ``p(d)`` of a draw and the predicted d_min of the search.

References
----------
The model is the book's own (:ref:`ch-experiments`); the model itself is described in
:mod:`sattn.experiments.prediction`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..._validate import check_int, check_real
from ...patterns.criteria import validate_tolerances
from ..setups import ROOT_SEED, SETUPS, ExperimentError, get_profile, grid_values, make_tasks
from ..target import SparseTarget, prepare_target
from .results import DminPrediction, DrawPrediction
from .row_model import DEFAULT_SAMPLES, projector_block, validate_n_draws, validate_n_samples, validate_model_width, row_stats
from .row_exact import types_failure
from .row_types import RowTypes

_METHODS = ("sampled", "exact")


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    return method


__flat__ = ["draw_success_probability", "predict_dmin", "predict_d50", "sample_target",
            "predict_setup"]
# Module-only: the helpers that the checks of the model (:mod:`.checks`) share.
__all__ = [*__flat__, "as_target", "search_law", "setup_task"]


def as_target(A, eps1, eps2) -> SparseTarget:
    """``A`` as a prepared :class:`~sattn.experiments.target.SparseTarget` (a prepared target or
    :class:`~sattn.experiments.prediction.row_types.RowTypes` passes through, if built with the same
    tolerances; ValueError otherwise)."""
    if isinstance(A, (SparseTarget, RowTypes)):
        eps1, eps2 = validate_tolerances(eps1, eps2)
        if not (math.isclose(A.eps1, eps1) and math.isclose(A.eps2, eps2)):
            how = "prepared" if isinstance(A, SparseTarget) else "built"
            raise ValueError(f"A is a {type(A).__name__} {how} with eps = ({A.eps1}, {A.eps2}), "
                             f"not the given ({eps1}, {eps2})")
        return A
    return prepare_target(A, eps1, eps2)


def _row_types(t: SparseTarget):
    """Distinct rows ``(sorted support logits)`` and how many rows have each."""
    kl = (t.bvals > 0).sum(axis=1)
    srt = -np.sort(-t.bvals, axis=1)                 # descending, padding zeros last
    key = np.column_stack([kl, np.round(srt, 12)])
    uniq, counts = np.unique(key, axis=0, return_counts=True)
    out = []
    for row, cnt in zip(uniq, counts):
        k = int(row[0])
        out.append((srt[np.flatnonzero((key == row).all(axis=1))[0], :k].copy(), int(cnt)))
    return out


class _Same:
    """A target as a cache key: equal only to itself (a SparseTarget holds arrays, so it has no
    hash of its own); the key keeps the target alive while it is cached."""

    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target

    def __hash__(self):
        return id(self.target)

    def __eq__(self, other):
        return isinstance(other, _Same) and other.target is self.target


@functools.lru_cache(maxsize=256)
def _row_types_of(key: _Same):
    return _row_types(key.target)


def _types_cached(t):
    if isinstance(t, RowTypes):
        return [(np.asarray(b, dtype=np.float64), int(c)) for b, c in t.types]
    return _row_types_of(_Same(t))


def draw_success_probability(A, eps1, eps2, d, *, n_samples=DEFAULT_SAMPLES, seed=0,
                             method="sampled") -> DrawPrediction:
    """The model's probability that one draw at width ``d`` is accepted for the target ``A``.

    Rows enter through their support logits only; off-support entries through their count
    ``L - k_l`` (the common scale ``r`` of the row, module docs). No ``L x L`` array is formed;
    rows with equal sorted logits share one estimate, so a target of any ``L`` costs a few
    Monte Carlo averages over ``k x k`` blocks.

    Parameters
    ----------
    A : array_like, scipy.sparse matrix or SparseTarget, shape (L, L)
        The target (a :class:`~sattn.experiments.target.SparseTarget` must have been prepared
        with the same tolerances).
    eps1, eps2 : float
        Tolerances of (6)-(7).
    d : int
        Width, ``k_max <= d <= L - k_max``.
    n_samples : int, default 2**17
        Monte Carlo samples of each block size (assumption A3), or importance samples of the
        block for ``method="exact"``.
    seed : int, default 0
        Seed of the common random numbers.
    method : {"sampled", "exact"}, default "sampled"
        ``"sampled"``: plain Monte Carlo averages over the block (A3), which cannot resolve row
        failures much below ``1 / n_samples``. ``"exact"``: quadrature for rows with one
        nonzero, importance sampling for the others
        (:mod:`~sattn.experiments.prediction.row_exact`); ``se_log_p`` is then the summed
        numerical error of ``log_p`` (errors of all row types added, as if fully correlated).

    Returns
    -------
    DrawPrediction
    """
    t = as_target(A, eps1, eps2)
    if t.L < 4 or t.L < t.k_max + 2:
        raise ValueError(f"the model needs L >= max(4, k + 2), got L = {t.L}, k = {t.k_max}")
    d = check_int("d", d, low=1, high=t.L)
    validate_model_width(t.L, d, t.k_max)
    n_samples = validate_n_samples(n_samples)
    seed = check_int("seed", seed, low=0)
    if _check_method(method) == "exact":
        return _exact_draw(t, d, n_samples, seed)
    log_p, fails, se = 0.0, 0.0, 0.0
    types = []
    P = projector_block(t.k_max, t.L, d, n_samples, seed)
    for b, cnt in _types_cached(t):
        # the leading k_l x k_l block of a k x k block has the law of a k_l x k_l block
        pi, _, _, s = row_stats(P[:, :b.size, :b.size], b, t.L, d, t.eps1, t.eps2)
        types.append((tuple(np.round(b, 6)), cnt, pi))
        fails += cnt * (1.0 - pi)
        if pi <= 0.0:
            log_p = -math.inf
        else:
            log_p += cnt * math.log(pi)
            se += cnt * s / pi
    return DrawPrediction(L=t.L, d=d, p=math.exp(log_p), log_p=log_p, expected_failures=fails,
                          se_log_p=se, types=types, n_samples=n_samples)


def _exact_draw(t, d, n_samples, seed) -> DrawPrediction:
    types_in = _types_cached(t)
    res = types_failure(types_in, t.k_max, t.L, d, t.eps1, t.eps2, n_samples, seed)
    log_p, fails, se, types = 0.0, 0.0, 0.0, []
    for (b, cnt), r in zip(types_in, res):
        types.append((tuple(np.round(b, 6)), cnt, 1.0 - r.fail))
        fails += cnt * r.fail
        if r.fail >= 1.0:
            log_p = -math.inf
        else:
            log_p += cnt * math.log1p(-r.fail)
            se += cnt * r.err / (1.0 - r.fail)
    return DrawPrediction(L=t.L, d=d, p=math.exp(log_p), log_p=log_p, expected_failures=fails,
                          se_log_p=se, types=types, n_samples=n_samples, method="exact",
                          row_failures=res)


def search_law(widths, p, n):
    """Stop probabilities of the ladder search (A4) and their summaries."""
    stop, alive = [], 1.0
    for pi in p:
        fail_all = (1.0 - pi) ** n
        stop.append(alive * (1.0 - fail_all))
        alive *= fail_all
    cum = np.cumsum(stop)

    def quant(q):
        i = np.searchsorted(cum, q - 1e-12)
        return int(widths[i]) if i < len(widths) else None
    tot = float(cum[-1]) if len(cum) else 0.0
    mean = (float(np.dot(widths, stop)) / tot) if tot > 0 else None
    cross = next((int(w) for w, pi in zip(widths, p) if 1.0 - (1.0 - pi) ** n >= 0.5), None)
    return stop, quant(0.5), mean, quant(0.1), quant(0.9), cross, max(0.0, 1.0 - tot)


def predict_dmin(A, eps1, eps2, widths, n_draws, *, n_samples=DEFAULT_SAMPLES, seed=0,
                 tail=1e-6, skip=1e-9, method="sampled") -> DminPrediction:
    """Predicted d_min of the search over ``widths`` with ``n_draws`` draws per width.

    ``p(d)`` (:func:`draw_success_probability`) is evaluated width by width, in ascending order,
    until the probability that the search has not yet stopped falls below ``tail``. The widths
    where ``n_draws p(d) < skip`` are skipped by bisection (``p`` is increasing in ``d``; the
    tests check it), except the last of them, which is kept as the ladder's first entry.

    Parameters
    ----------
    A : array_like, scipy.sparse matrix or SparseTarget
        The target.
    eps1, eps2 : float
        Tolerances.
    widths : sequence of int
        The ladder, strictly increasing, within ``[k_max, L - k_max]`` (larger widths are
        dropped).
    n_draws : int
        Draws per width (``1 <= n_draws <= 10**6``; above, a :class:`sattn.SizeTooLargeError`).
    n_samples, seed, method
        As in :func:`draw_success_probability`.
    tail : float, default 1e-6
        Stop evaluating once the search has stopped with probability ``1 - tail``.
    skip : float, default 1e-9
        Widths with ``n_draws p(d)`` below it are skipped (``0 < skip < 1``).

    Returns
    -------
    DminPrediction
    """
    t = as_target(A, eps1, eps2)
    _check_method(method)
    n_draws = validate_n_draws(n_draws)
    tail = check_real("tail", tail, low=0.0, high=1.0, low_open=True, high_open=True)
    skip = check_real("skip", skip, low=0.0, high=1.0, low_open=True, high_open=True)
    try:
        ws = [check_int(f"widths[{i}]", w, low=1) for i, w in enumerate(widths)]
    except TypeError as exc:
        if "widths[" in str(exc):
            raise
        raise TypeError(f"widths must be a sequence of integers, got {widths!r}") from None
    if not ws:
        raise ValueError("widths must contain at least one width")
    if any(b <= a for a, b in zip(ws, ws[1:])):
        raise ValueError(f"widths must be strictly increasing, got {ws}")
    if ws[0] < t.k_max:
        raise ValueError(f"widths must start at d >= k = {t.k_max}, got {ws[0]}")
    ws = [w for w in ws if w <= t.L - t.k_max]
    if not ws:
        raise ValueError(f"no width of the ladder is <= L - k = {t.L - t.k_max}")
    memo = {}

    def p_at(i):
        if i not in memo:
            memo[i] = draw_success_probability(t, t.eps1, t.eps2, ws[i], n_samples=n_samples,
                                               seed=seed, method=method).p
        return memo[i]
    # skip the widths where the search stops with negligible probability: by bisection (p(d)
    # is increasing in d) the last width with n p < skip; everything below it is dropped
    lo, hi = 0, len(ws) - 1
    if n_draws * p_at(lo) < skip:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if n_draws * p_at(mid) < skip:
                lo = mid
            else:
                hi = mid
    evaluated, ps, alive = [], [], 1.0
    for i in range(lo, len(ws)):
        evaluated.append(ws[i])
        ps.append(p_at(i))
        alive *= (1.0 - ps[-1]) ** n_draws
        if alive < tail:
            break
    stop, med, mean, q10, q90, cross, beyond = search_law(np.array(evaluated), ps, n_draws)
    return DminPrediction(L=t.L, n_draws=n_draws, widths=evaluated, p=ps, stop=stop, median=med,
                          mean=mean, q10=q10, q90=q90, crossing=cross, p_beyond=beyond)


def predict_d50(A, eps1, eps2, *, low=None, high=None, n_samples=DEFAULT_SAMPLES, seed=0,
                method="sampled") -> int:
    """The model's ``d_50``: the smallest width at which one draw passes with probability >= 1/2.

    A bisection on ``[low, high]`` (default ``[k_max, min(L - k_max, 100000)]``) using that
    ``p(d)`` increases with ``d``. ``A`` may be a :class:`~sattn.RowTypes`, so any ``L`` works.

    Parameters
    ----------
    A : array_like, scipy.sparse matrix, SparseTarget or RowTypes
        The target.
    eps1, eps2 : float
        Tolerances.
    low, high : int, optional
        The bracket, ``k_max <= low <= high <= L - k_max``.
    n_samples, seed, method
        As in :func:`draw_success_probability`.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``p(high) < 1/2``, or the bracket lies outside ``[k_max, L - k_max]``.

    References
    ----------
    The book's model (module docs); :ref:`ch-width-bits`.
    """
    t = as_target(A, eps1, eps2)
    n_samples = validate_n_samples(n_samples)
    seed = check_int("seed", seed, low=0)
    _check_method(method)
    if t.L < 4 or t.L < t.k_max + 2:
        raise ValueError(f"the model needs L >= max(4, k + 2), got L = {t.L}, k = {t.k_max} (A)")
    lo = t.k_max if low is None else check_int("low", low, low=t.k_max, high=t.L - t.k_max)
    hi = min(t.L - t.k_max, 100000) if high is None else check_int("high", high, low=lo,
                                                                    high=t.L - t.k_max)

    def p(d):
        return draw_success_probability(t, t.eps1, t.eps2, d, n_samples=n_samples, seed=seed,
                                        method=method).p
    if p(hi) < 0.5:
        raise ValueError(f"high: p(d) < 1/2 at the top of the bracket, d = {hi}")
    if p(lo) >= 0.5:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if p(mid) >= 0.5:
            hi = mid
        else:
            lo = mid
    return hi


def setup_task(setup, L):
    """The Figure 3 task (paper profile) of a named setup at length ``L`` (64 ... 32768); the
    predictions and their checks take their target and grid from it."""
    if not isinstance(setup, str) or setup not in SETUPS:
        raise ExperimentError(f"unknown setup {setup!r}; valid names: {', '.join(SETUPS)}")
    L = check_int("L", L, low=64, high=32768)
    return make_tasks("fig3", get_profile("paper"), setups=[setup], lengths=[L])[0]


def sample_target(setup, L, *, root_seed=ROOT_SEED):
    """The target the experiments use for ``setup`` at length ``L`` (Figure 3's seed key), as a
    :class:`~sattn.experiments.target.SparseTarget`."""
    root_seed = check_int("root_seed", root_seed, low=0)
    task = setup_task(setup, L)
    return prepare_target(task.sample_target(root_seed), task.setup.eps1, task.setup.eps2)


def predict_setup(setup, L, *, n_draws=None, widths=None, root_seed=ROOT_SEED,
                  n_samples=DEFAULT_SAMPLES, seed=0, method="sampled") -> DminPrediction:
    """Predicted d_min for a named setup at length ``L``, on the target the experiments sample.

    Parameters
    ----------
    setup : str
        A name of :data:`~sattn.experiments.setups.SETUPS`.
    L : int
        Length within :data:`~sattn.experiments.setups.L_RANGE`.
    n_draws : int, optional
        Draws per width (default: the paper profile's ``ceil(0.1 L)``), at most ``10**6``.
    widths : sequence of int, optional
        The ladder (default: the paper profile's grid of the setup).
    root_seed : int, default ROOT_SEED
        Root seed of the target (the experiments': the target is
        ``sample_sparse(L, k, gamma, draw_generator(root_seed, (setup_key, L, 0)))``).
    n_samples, seed, method
        As in :func:`draw_success_probability`.

    Returns
    -------
    DminPrediction
    """
    task = setup_task(setup, L)
    n_draws = task.n_draws if n_draws is None else validate_n_draws(n_draws)
    if widths is None:
        widths = grid_values(task.grid)
    t = sample_target(setup, L, root_seed=root_seed)
    return predict_dmin(t, t.eps1, t.eps2, widths, n_draws, n_samples=n_samples, seed=seed,
                        method=method)
