"""A predictive estimate of d_min (the book's own model, not a result of the paper).

The construction accepts a draw ``Y`` (uniform on the Stiefel manifold, ``L x d``) when every row
of the logits ``G = (L/d) B P``, ``P = Y Y^T``, meets criteria (6)-(7) (log-domain form). This
module predicts the probability ``p(d)`` that one draw is accepted, and from it the width at
which the experiments' search (ascending ladder of widths, up to ``n`` draws per width) stops.

The model
---------
Fix a row ``l`` with support ``S`` (``k_l`` columns) and logits ``b = B[l, S]``. Write
``m = L - k_l`` for the number of off-support columns.

**Exact reduction of one row (a lemma, no approximation).** The row of logits is
``g = (L/d) P[:, S] b``. Its support part is ``g_S = (L/d) P_SS b`` and depends on the draw only
through the ``k_l x k_l`` block ``P_SS``. Conditionally on the rows ``Y_S`` of ``Y``, the other
rows ``Y_R`` have a law invariant under every rotation of ``R^m`` (the law of ``Y`` is invariant
under ``diag(I, H)``), and ``Y_R^T Y_R = I - Y_S^T Y_S``. Hence the off-support logits are

    g_R = (L/d) r x,     r^2 = b^T (P_SS - P_SS^2) b,     x uniform on the unit sphere of R^m,

with ``x`` independent of ``P_SS``. The block ``P_SS`` is matrix-variate beta: with
independent Wishart matrices ``W_1 ~ W_k(d, I)`` and ``W_2 ~ W_k(L - d, I)`` and the Cholesky
factor ``T T^T = W_1 + W_2``, ``P_SS = T^{-1} W_1 T^{-T}`` in law (``T^{-1} [G_1, G_2]`` is
uniform on the Stiefel manifold of ``k x L`` matrices for a Gaussian ``[G_1, G_2]``, being
right-rotation invariant).

**Row pass probability.** Row ``l`` meets (6) iff the spread ``max - min`` of ``g_S - b`` is at
most ``ln(1 + eps1)`` (``b - ln A`` is constant on the support, so the spread of ``g_S - ln A_S``
equals that of the errors ``e_S = g_S - b``), and (7) iff ``max_j x_j <= c`` with
``c = (min g_S - ln(1/eps2)) / ((L/d) r)``. So

    pi_l(d) = E_{P_SS}[ 1{spread(e_S) <= ln(1+eps1)} F_m(c) ],   F_m(c) = P(max_j x_j <= c).

**Assumptions** (each is measured by a function of this module):

* (A1) ``F_m(c) ~= (1 - tau_m(c))^m`` with ``tau_m`` the exact tail of one coordinate of a
  uniform unit vector (``x_1^2 ~ Beta(1/2, (m-1)/2)``): the coordinates' exceedances are treated
  as independent. :func:`check_offsupport_max` measures it.
* (A2) Rows are independent: ``p(d) = prod_l pi_l(d)``. They are not exactly (they share ``Y``,
  and e.g. the diagonal of ``P`` sums to ``d``); :func:`check_row_dependence` measures the
  correlations and :func:`check_success_probability` compares ``p(d)`` with the fast engine.
* (A3) The expectation over ``P_SS`` is a Monte Carlo average (``n_samples`` draws of the
  ``k x k`` block, the same random numbers for every row type and every width, so that ``p(d)``
  is smooth in ``d``); rows with the same sorted ``b`` (few types: ``k_l`` and how many entries
  equal ``gamma``) share one estimate. The standard error is reported.
* (A4) The widths of the ladder are decided independently (they use different seeds), so the
  search stops at width ``d_i`` with probability ``s_i = (1 - (1-p_i)^n) prod_{j<i} (1-p_j)^n``.
  The prediction is the median of this law (also its mean, and the first width where
  ``1 - (1-p)^n >= 1/2``).

**The Gaussian picture, and why the book does not use it for the support.** For ``d << L`` the
errors are approximately Gaussian: off-support entries with variance
``(L/d)^2 ||b||^2 E[P_ij^2] = ||b||^2 L (L-d) / (d (L-1)(L+2)) ~ ||b||^2 / d``, support entries with
``Var e_j = (L/d)^2 [b_j^2 Var P_jj + (||b||^2 - b_j^2) E P_ij^2]``. The off-support part is
Gaussian to high accuracy, but the support part is not: ``(L/d) P_jj`` is close to
``chi^2_d / d``, whose lower tail (the one that breaks (7)) is much lighter than the Gaussian's,
and a low support logit comes with a small off-support scale ``r``. :func:`check_error_model`
measures both. The exact reduction above keeps this dependence.

**Growth in L.** Near ``d_min`` the per-row failure probability decays like ``exp(-d J)`` for a
rate ``J`` of the setup (a large-deviation rate of the matrix beta block and of the sphere's
maximum), and ``d_min`` is where ``L q(d) ~ ln n``, i.e. ``d_min ~ (ln L + ln m_eff - ln ln n)/J``:
logarithmic in ``L``. The chapter shows it numerically (:func:`predict_setup` at ``L`` up to
32768).

References
----------
Theorem 1 and Section 4 of Likhosherstov, Choromanski & Weller (2021) (the construction and the
protocol); the model is the book's own (:ref:`ch-experiments`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.special as spc
import scipy.stats as sst

from .._validate import check_int, check_real, check_rng
from ..results import Result
from ..patterns.criteria import check_tolerances
from ..patterns.sparse import sample_sparse
from .engine import FastEngine
from .setups import ROOT_SEED, SETUPS, ExperimentError, get_profile, grid_values, make_tasks
from .target import SparseTarget, draw_generator, prepare_target

__all__ = [
    "DminPrediction",
    "DrawPrediction",
    "ModelCheck",
    "RowPrediction",
    "check_error_model",
    "check_offsupport_max",
    "check_row_dependence",
    "check_success_probability",
    "compare_measured",
    "draw_success_probability",
    "offsupport_pass",
    "predict_dmin",
    "predict_setup",
    "row_pass_probability",
]

_DEFAULT_SAMPLES = 1 << 17


# ----------------------------------------------------------------------------- result classes
@dataclass
class RowPrediction(Result):
    """Model of one row: pass probability ``pi`` and its parts (see module docs).

    ``fail6`` is the probability that (6) fails, ``fail7`` that (6) holds and (7) fails;
    ``pi = 1 - fail6 - fail7``; ``se`` is the Monte Carlo standard error of ``pi``.
    """

    L: int
    d: int
    b: np.ndarray
    pi: float
    fail6: float
    fail7: float
    se: float
    n_samples: int

    @property
    def ok(self) -> bool:
        """The estimate is usable: a probability with a finite standard error."""
        return bool(0.0 <= self.pi <= 1.0 and np.isfinite(self.se))

    @property
    def message(self) -> str:
        return (f"row (k = {self.b.size}, L = {self.L}, d = {self.d}): pass probability "
                f"{self.pi:.6g} (fail (6) {self.fail6:.3g}, fail (7) {self.fail7:.3g}, MC se "
                f"{self.se:.2g}, {self.n_samples} samples)")


@dataclass
class DrawPrediction(Result):
    """Predicted probability ``p`` that one draw at width ``d`` is accepted (all rows pass).

    ``log_p = sum_l ln pi_l`` over the rows (assumption A2), ``expected_failures`` the expected
    number of failing rows ``sum_l (1 - pi_l)``, ``se_log_p`` a conservative Monte Carlo
    standard error of ``log_p``; ``types`` lists ``(sorted b, number of rows, pi)`` per row type.
    """

    L: int
    d: int
    p: float
    log_p: float
    expected_failures: float
    se_log_p: float
    types: list = field(repr=False, default_factory=list)
    n_samples: int = 0

    @property
    def ok(self) -> bool:
        """The estimate is a probability (MC error finite)."""
        return bool(0.0 <= self.p <= 1.0 and np.isfinite(self.se_log_p))

    @property
    def message(self) -> str:
        return (f"L = {self.L}, d = {self.d}: predicted acceptance probability of one draw "
                f"{self.p:.4g} (expected failing rows {self.expected_failures:.3g}, "
                f"{len(self.types)} row types, se(ln p) {self.se_log_p:.2g})")


@dataclass
class DminPrediction(Result):
    """Predicted first-success width of the d_min search on a ladder of widths.

    ``widths`` and ``p`` are the widths evaluated (in order) and the predicted acceptance
    probability of one draw at each; ``stop`` the probability that the search stops at each
    width with ``n_draws`` draws per width (assumption A4); ``median`` and ``mean`` summarise
    that law (``mean`` conditional on stopping within the ladder; ``p_beyond`` is the probability
    of not stopping), ``q10``/``q90`` its 10% and 90% quantiles, and ``crossing`` is the first
    width where ``1 - (1 - p)^n >= 1/2``. ``ok`` says whether the ladder reaches the median.
    """

    L: int
    n_draws: int
    widths: list
    p: list
    stop: list
    median: int | None
    mean: float | None
    q10: int | None
    q90: int | None
    crossing: int | None
    p_beyond: float

    @property
    def ok(self) -> bool:
        return self.median is not None

    @property
    def message(self) -> str:
        if self.median is None:
            return (f"L = {self.L}, {self.n_draws} draws per width: the search is predicted to "
                    f"run past the ladder (P = {self.p_beyond:.3g}); no prediction")
        return (f"L = {self.L}, {self.n_draws} draws per width: predicted d_min median "
                f"{self.median} (10%-90%: {self.q10}-{self.q90}, mean {self.mean:.1f}, "
                f"1-(1-p)^n crosses 1/2 at {self.crossing})")


@dataclass
class ModelCheck(Result):
    """A numerical check of one assumption of the model: named numbers and a verdict.

    ``values`` maps names to numbers (floats or lists), ``claim`` says what ``ok`` asserts.
    """

    name: str
    values: dict
    ok: bool
    claim: str

    @property
    def message(self) -> str:
        def fmt(v):
            if isinstance(v, (list, tuple, np.ndarray)):
                return "[" + ", ".join(fmt(x) for x in v) + "]"
            if isinstance(v, (float, np.floating)):
                return f"{float(v):.4g}"
            return str(v)
        body = ", ".join(f"{k} = {fmt(v)}" for k, v in self.values.items())
        return f"{self.name}: {'holds' if self.ok else 'FAILS'} ({self.claim}): {body}"


# ----------------------------------------------------------------------------- the row model
def _check_width(L, d, k):
    if not (k <= d <= L - k):
        raise ValueError(f"d must lie in [k, L - k] = [{k}, {L - k}] for the model (the "
                         f"Wishart factors need d >= k and L - d >= k), got d = {d}")


def _check_samples(n_samples):
    return check_int("n_samples", n_samples, low=256, high=1 << 22)


def _sphere_log_tail(c, m):
    """``ln P(x_1 > c)`` for one coordinate of a uniform unit vector of ``R^m`` (exact)."""
    cc = np.clip(c, -1.0, 1.0)
    half = 0.5 * spc.betaincc(0.5, 0.5 * (m - 1), cc * cc)
    with np.errstate(divide="ignore"):
        return np.log(np.where(cc >= 0, half, 1.0 - half))


_TABLE_CACHE: dict = {}
_TABLE_S = np.linspace(-6.0, 14.0, 8001)


def _log_tail_table(m):
    """``ln tau_m`` tabulated against ``s = c sqrt(m)`` on [-6, 14] (cached per ``m``). It is
    smooth in ``s``, so linear interpolation is accurate to ~1e-6 relative; below ``s = -6``
    ``F_m`` is below ``Phibar(6)^m`` and above ``s = 14`` ``1 - F_m`` is below ``m 1e-40``
    (both are clamped)."""
    tab = _TABLE_CACHE.get(m)
    if tab is None:
        if len(_TABLE_CACHE) > 64:
            _TABLE_CACHE.clear()
        tab = _TABLE_CACHE[m] = _sphere_log_tail(_TABLE_S / math.sqrt(m), m)
    return tab


def offsupport_pass(c, m, *, exact=False):
    """``F_m(c) ~= (1 - tau_m(c))^m``: probability that no coordinate of a uniform unit vector in
    ``R^m`` exceeds ``c`` (assumption A1; ``tau_m`` is the exact tail of one coordinate,
    ``x_1^2 ~ Beta(1/2, (m-1)/2)``).

    Parameters
    ----------
    c : array_like
        Thresholds (any real; ``c >= 1`` gives 1, ``c <= -1`` gives 0).
    m : int
        Dimension, ``m >= 2``.
    exact : bool, default False
        Evaluate ``tau_m`` with the incomplete beta function at every ``c`` instead of
        interpolating a table of ``ln tau_m`` (about 8000 points, relative error ~1e-6).

    Returns
    -------
    numpy.ndarray
        ``F_m(c)`` elementwise.

    Raises
    ------
    ValueError, TypeError
        ``m < 2`` or not an integer, ``c`` with NaN.
    """
    m = check_int("m", m, low=2)
    c = np.asarray(c, dtype=np.float64)
    if np.isnan(c).any():
        raise ValueError("c must not contain NaN")
    cc = np.clip(c, -1.0, 1.0)
    if exact:
        lt = _sphere_log_tail(cc, m)
    else:
        sc = cc * math.sqrt(m)
        lt = np.interp(sc, _TABLE_S, _log_tail_table(m), right=-np.inf)
        lt = np.where(sc > _TABLE_S[-1], -np.inf, lt)
    with np.errstate(divide="ignore", over="ignore"):
        out = np.exp(m * np.log1p(-np.minimum(np.exp(lt), 1.0)))
    return np.where(c >= 1.0, 1.0, np.where(c <= -1.0, 0.0, out))


_BLOCK_CACHE: dict = {}
_BASE_CACHE: dict = {}
_QZ = np.linspace(-9.0, 9.0, 1441)


def _base_numbers(k, n, seed):
    """The common random numbers of the block samples: normal scores of Latin-hypercube
    uniforms for the two Bartlett diagonals, and the normals below them (cached)."""
    key = (k, n, seed)
    hit = _BASE_CACHE.get(key)
    if hit is None:
        rng = np.random.default_rng([seed, k, n])
        zs = []
        for _ in range(2):
            u = (np.arange(n)[:, None] + rng.random((n, k))) / n
            for j in range(k):
                u[:, j] = u[rng.permutation(n), j]
            zs.append(sst.norm.ppf(u))
        nl = k * (k - 1) // 2
        hit = (zs[0], zs[1], rng.standard_normal((n, nl)), rng.standard_normal((n, nl)))
        if len(_BASE_CACHE) > 16:
            _BASE_CACHE.clear()
        _BASE_CACHE[key] = hit
    return hit


def _wilson_hilferty(z, df):
    a = 2.0 / (9.0 * df)
    return df * np.maximum(1.0 - a + z * np.sqrt(a), 0.0) ** 3


def _chi2_quantile(z, df):
    """Chi-square quantile at normal score ``z`` (same shape), ``df`` a positive number: the
    Wilson-Hilferty value times a correction interpolated from the exact quantile
    (``gammaincinv``) on 1441 normal scores in [-9, 9] (relative error below ~1e-6 for |z| < 5)."""
    exact = 2.0 * spc.gammaincinv(0.5 * df, sst.norm.cdf(_QZ))
    wh = _wilson_hilferty(_QZ, df)
    ok = (wh > 0) & (exact > 0)
    zc = np.clip(z, -9.0, 9.0)
    if ok.all():
        return _wilson_hilferty(z, df) * np.interp(zc, _QZ, exact / wh)
    return np.exp(np.interp(zc, _QZ[exact > 0], np.log(exact[exact > 0])))


def _block(k, L, d, n, seed):
    """``n`` samples of the ``k x k`` block ``P_SS`` of a uniform rank-``d`` projector of
    ``R^L`` (matrix beta, see module docs). The random numbers depend on ``(k, n, seed)`` only
    (common random numbers for every width and length); cached."""
    key = (k, L, d, n, seed)
    hit = _BLOCK_CACHE.get(key)
    if hit is not None:
        return hit
    z1, z2, n1, n2 = _base_numbers(k, n, seed)
    il = np.tril_indices(k, -1)
    Fs = []
    for z, nn, df in ((z1, n1, d), (z2, n2, L - d)):
        F = np.zeros((n, k, k))
        for i in range(k):
            F[:, i, i] = np.sqrt(_chi2_quantile(z[:, i], df - i))
        if nn.shape[1]:
            F[:, il[0], il[1]] = nn
        Fs.append(F)
    F1, F2 = Fs
    if k == 1:
        a, b = F1[:, 0, 0] ** 2, F2[:, 0, 0] ** 2
        P = (a / (a + b))[:, None, None]
    else:
        C = F1 @ F1.transpose(0, 2, 1) + F2 @ F2.transpose(0, 2, 1)
        M = np.linalg.solve(np.linalg.cholesky(C), F1)
        P = M @ M.transpose(0, 2, 1)
    if len(_BLOCK_CACHE) > 32:
        _BLOCK_CACHE.clear()
    _BLOCK_CACHE[key] = P
    return P


def _row_pass_samples(P, b, L, d, eps1, eps2):
    """Per-sample ``(1{(6) holds}, F_m(c))`` for one row type from block samples ``P``."""
    k = b.size
    s = L / d
    w = P @ b                                          # P_SS b, (n, k)
    g = s * w
    e = g - b
    ok6 = (e.max(axis=1) - e.min(axis=1)) <= math.log1p(eps1) + 1e-12
    r2 = np.maximum(w @ b - np.einsum("nk,nk->n", w, w), 0.0)
    t = g.min(axis=1) + math.log(eps2)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(r2 > 0, t / (s * np.sqrt(r2)), np.where(t >= 0, np.inf, -np.inf))
    return ok6, offsupport_pass(c, L - k)


def _row_stats(P, b, L, d, eps1, eps2):
    ok6, F = _row_pass_samples(P, b, L, d, eps1, eps2)
    v = ok6 * F
    n = v.size
    pi = float(v.mean())
    return pi, float(1.0 - ok6.mean()), float((ok6 * (1.0 - F)).mean()), float(v.std() / math.sqrt(n))


def row_pass_probability(b, L, d, eps1, eps2, *, n_samples=_DEFAULT_SAMPLES, seed=0
                         ) -> RowPrediction:
    """The model's probability that one row meets (6)-(7) at width ``d`` (module docs).

    Parameters
    ----------
    b : array_like, shape (k,)
        The row's logits on its support, ``B[l, S]`` (all positive: ``b >= Delta > 0``).
    L : int
        Length, ``L >= 4`` and ``L >= k + 2``.
    d : int
        Width, ``k <= d <= L - k``.
    eps1, eps2 : float
        Tolerances (``eps1 > 0``, ``0 < eps2 < 1``).
    n_samples : int, default 2**17
        Monte Carlo samples of the block ``P_SS`` (256 to 2**22).
    seed : int, default 0
        Seed of the common random numbers.

    Returns
    -------
    RowPrediction

    Raises
    ------
    ValueError, TypeError
        Bad sizes, tolerances, ``b`` not a finite positive vector.
    """
    eps1, eps2 = check_tolerances(eps1, eps2)
    b = np.asarray(b, dtype=np.float64) if not isinstance(b, (str, bytes)) else None
    if b is None or b.ndim != 1 or b.size == 0 or not np.isfinite(b).all() or (b <= 0).any():
        raise ValueError("b must be a non-empty 1-D array of finite positive support logits")
    L = check_int("L", L, low=max(4, b.size + 2))
    d = check_int("d", d, low=1, high=L)
    _check_width(L, d, b.size)
    n_samples = _check_samples(n_samples)
    seed = check_int("seed", seed, low=0)
    pi, f6, f7, se = _row_stats(_block(b.size, L, d, n_samples, seed), b, L, d, eps1, eps2)
    return RowPrediction(L=L, d=d, b=b, pi=pi, fail6=f6, fail7=f7, se=se, n_samples=n_samples)


# ----------------------------------------------------------------------------- one target
def _as_target(A, eps1, eps2) -> SparseTarget:
    if isinstance(A, SparseTarget):
        eps1, eps2 = check_tolerances(eps1, eps2)
        if not (math.isclose(A.eps1, eps1) and math.isclose(A.eps2, eps2)):
            raise ValueError(f"A is a SparseTarget prepared with eps = ({A.eps1}, {A.eps2}), "
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


def _types_cached(t):
    key = id(t)
    hit = _TYPES_CACHE.get(key)
    if hit is None or hit[0] is not t:
        if len(_TYPES_CACHE) > 256:
            _TYPES_CACHE.clear()
        hit = _TYPES_CACHE[key] = (t, _row_types(t))
    return hit[1]


_TYPES_CACHE: dict = {}


def draw_success_probability(A, eps1, eps2, d, *, n_samples=_DEFAULT_SAMPLES, seed=0
                             ) -> DrawPrediction:
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
        Monte Carlo samples of each block size (assumption A3).
    seed : int, default 0
        Seed of the common random numbers.

    Returns
    -------
    DrawPrediction
    """
    t = _as_target(A, eps1, eps2)
    if t.L < 4 or t.L < t.k_max + 2:
        raise ValueError(f"the model needs L >= max(4, k + 2), got L = {t.L}, k = {t.k_max}")
    d = check_int("d", d, low=1, high=t.L)
    _check_width(t.L, d, t.k_max)
    n_samples = _check_samples(n_samples)
    seed = check_int("seed", seed, low=0)
    log_p, fails, se = 0.0, 0.0, 0.0
    types = []
    P = _block(t.k_max, t.L, d, n_samples, seed)
    for b, cnt in _types_cached(t):
        # the leading k_l x k_l block of a k x k block has the law of a k_l x k_l block
        pi, _, _, s = _row_stats(P[:, :b.size, :b.size], b, t.L, d, t.eps1, t.eps2)
        types.append((tuple(np.round(b, 6)), cnt, pi))
        fails += cnt * (1.0 - pi)
        if pi <= 0.0:
            log_p = -math.inf
        else:
            log_p += cnt * math.log(pi)
            se += cnt * s / pi
    return DrawPrediction(L=t.L, d=d, p=math.exp(log_p), log_p=log_p, expected_failures=fails,
                          se_log_p=se, types=types, n_samples=n_samples)


def _search_law(widths, p, n):
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


def predict_dmin(A, eps1, eps2, widths, n_draws, *, n_samples=_DEFAULT_SAMPLES, seed=0,
                 tail=1e-6, skip=1e-9) -> DminPrediction:
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
        Draws per width (``>= 1``).
    n_samples, seed
        As in :func:`draw_success_probability`.
    tail : float, default 1e-6
        Stop evaluating once the search has stopped with probability ``1 - tail``.
    skip : float, default 1e-9
        Widths with ``n_draws p(d)`` below it are skipped (``0 < skip < 1``).

    Returns
    -------
    DminPrediction
    """
    t = _as_target(A, eps1, eps2)
    n_draws = check_int("n_draws", n_draws, low=1)
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
                                               seed=seed).p
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
    stop, med, mean, q10, q90, cross, beyond = _search_law(np.array(evaluated), ps, n_draws)
    return DminPrediction(L=t.L, n_draws=n_draws, widths=evaluated, p=ps, stop=stop, median=med,
                          mean=mean, q10=q10, q90=q90, crossing=cross, p_beyond=beyond)


def _setup_task(setup, L):
    if not isinstance(setup, str) or setup not in SETUPS:
        raise ExperimentError(f"unknown setup {setup!r}; valid names: {', '.join(SETUPS)}")
    return make_tasks("fig3", get_profile("paper"), setups=[setup], lengths=[L])[0]


def sample_target(setup, L, *, root_seed=ROOT_SEED):
    """The target the experiments use for ``setup`` at length ``L`` (Figure 3's seed key), as a
    :class:`~sattn.experiments.target.SparseTarget`."""
    task = _setup_task(setup, L)
    root_seed = check_int("root_seed", root_seed, low=0)
    s = task.setup
    A = sample_sparse(task.L, s.k, s.gamma, draw_generator(root_seed, task.target_key()),
                      as_csr=True)
    return prepare_target(A, s.eps1, s.eps2)


def predict_setup(setup, L, *, n_draws=None, widths=None, root_seed=ROOT_SEED,
                  n_samples=_DEFAULT_SAMPLES, seed=0) -> DminPrediction:
    """Predicted d_min for a named setup at length ``L``, on the target the experiments sample.

    Parameters
    ----------
    setup : str
        A name of :data:`~sattn.experiments.setups.SETUPS`.
    L : int
        Length within :data:`~sattn.experiments.setups.L_RANGE`.
    n_draws : int, optional
        Draws per width (default: the paper profile's ``ceil(0.1 L)``).
    widths : sequence of int, optional
        The ladder (default: the paper profile's grid of the setup).
    root_seed : int, default ROOT_SEED
        Root seed of the target (the experiments': the target is
        ``sample_sparse(L, k, gamma, draw_generator(root_seed, (setup_key, L, 0)))``).
    n_samples, seed
        As in :func:`draw_success_probability`.

    Returns
    -------
    DminPrediction
    """
    task = _setup_task(setup, L)
    n_draws = task.n_draws if n_draws is None else check_int("n_draws", n_draws, low=1)
    if widths is None:
        widths = grid_values(task.grid)
    t = sample_target(setup, L, root_seed=root_seed)
    return predict_dmin(t, t.eps1, t.eps2, widths, n_draws, n_samples=n_samples, seed=seed)
