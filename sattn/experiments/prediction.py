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

**Growth in L.** The naive Gaussian picture (:func:`naive_dmin`: exact support logits,
independent Gaussian off-support errors of variance ``||b||^2/d``) gives
``-ln p(d) ~ L^2 Phibar(ln(1+eps1) sqrt(d)/||b||)`` and so ``d ~ 4 (||b||/ln(1+eps1))^2 ln L``.
In the model a row fails mostly through an atypically small support block, an event of
probability ``~ exp(-d J)`` for a rate ``J`` of the setup; a draw succeeds once ``L exp(-d J)``
is of order ``ln n``, so ``d_min ~ (ln L - ln ln n)/J``: also logarithmic in ``L``, with a larger
slope (the chapter fits both up to ``L = 32768``). The naive estimate is 23-48% below the
measured d_min of Figure 3; the model is within one grid step.

Functions
---------
:func:`row_pass_probability` (one row), :func:`draw_success_probability` (``p(d)`` for a
target), :func:`predict_dmin` (the ladder search), :func:`sample_target` and
:func:`predict_setup` (the experiments' targets), :func:`compare_measured` (Figure 3),
:func:`naive_dmin` (the naive Gaussian estimate), :func:`offsupport_pass` (``F_m``), and the
checks :func:`check_error_model` (a), :func:`check_offsupport_max` and
:func:`check_row_dependence` (b), :func:`check_success_probability` (c).

References
----------
Theorem 1 and Section 4 of Likhosherstov, Choromanski & Weller (2021) (the construction and the
protocol); the model is the book's own (:ref:`ch-experiments`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sps
import scipy.special as spc
import scipy.stats as sst

from .._validate import MAX_DRAWS, check_int, check_real, check_rng, check_size
from ..results import Result
from ..patterns.criteria import check_tolerances
from .engine import FastEngine
from .setups import ROOT_SEED, SETUPS, ExperimentError, get_profile, grid_values, make_tasks
from .target import SparseTarget, draw_generator, prepare_target

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = [
    "RowTypes", "predict_d50", "regular_row_types", "row_types_from_blocks",
    "stream_regular_blocks", "Comparison", "DminPrediction", "DrawPrediction", "ModelCheck",
    "check_error_model", "check_offsupport_max", "check_row_dependence",
    "check_success_probability", "compare_measured", "draw_success_probability", "naive_dmin",
    "predict_dmin", "predict_setup", "sample_target",
]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "RowPrediction", "offsupport_pass", "row_pass_probability"]

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


#: The most draws of the exact checks (each draws an (L, d) Stiefel matrix and its errors).
MAX_EXACT_DRAWS = 10**4


def _check_n_draws(n_draws, *, low=1, cap=MAX_DRAWS):
    """A budget of draws, ``low <= n_draws <= cap`` (``MAX_DRAWS = 10**6`` by default)."""
    return check_size("n_draws", n_draws, low=low, cap=cap,
                      why="the most random draws one call may make or model")


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
    b = _check_b(b)
    L = check_int("L", L, low=max(4, b.size + 2))
    d = check_int("d", d, low=1, high=L)
    _check_width(L, d, b.size)
    n_samples = _check_samples(n_samples)
    seed = check_int("seed", seed, low=0)
    pi, f6, f7, se = _row_stats(_block(b.size, L, d, n_samples, seed), b, L, d, eps1, eps2)
    return RowPrediction(L=L, d=d, b=b, pi=pi, fail6=f6, fail7=f7, se=se, n_samples=n_samples)


# ----------------------------------------------------------------------------- one target
def _as_target(A, eps1, eps2) -> SparseTarget:
    if isinstance(A, (SparseTarget, RowTypes)):
        eps1, eps2 = check_tolerances(eps1, eps2)
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


def _types_cached(t):
    if isinstance(t, RowTypes):
        return [(np.asarray(b, dtype=np.float64), int(c)) for b, c in t.types]
    key = id(t)
    hit = _TYPES_CACHE.get(key)
    if hit is None or hit[0] is not t:
        if len(_TYPES_CACHE) > 256:
            _TYPES_CACHE.clear()
        hit = _TYPES_CACHE[key] = (t, _row_types(t))
    return hit[1]


_TYPES_CACHE: dict = {}


# ----------------------------------------------------------------------------- row types
@dataclass(frozen=True)
class RowTypes:
    """A target as the model sees it: its length and a histogram of row types.

    The model of this module uses a target only through the sorted support logits ``b`` of each
    row and the number of rows sharing them, so this replaces the ``L x L`` matrix (or its
    CSR form) at any length. Accepted by :func:`draw_success_probability` and
    :func:`predict_dmin` wherever a target is.

    Attributes
    ----------
    L : int
    k_max : int
        Largest support size.
    eps1, eps2 : float
        The tolerances the logits ``b`` were computed with (eq. 8).
    types : tuple of (tuple of float, int)
        ``(b sorted descending, number of rows)``; the counts sum to ``L``.
    """

    L: int
    k_max: int
    eps1: float
    eps2: float
    types: tuple


def _type_logits(n_gamma, k, gamma, delta):
    """Sorted logits of a row with ``k`` nonzeros, ``n_gamma`` of them ``gamma`` (eq. 8)."""
    if n_gamma in (0, k) or gamma == 1.0:
        return (delta,) * k
    return (delta + math.log(gamma),) * n_gamma + (delta,) * (k - n_gamma)


def regular_row_types(L, k, gamma, eps1, eps2, rng) -> RowTypes:
    """Row types of a random target with exactly ``k`` nonzeros in every row, each 1 or ``gamma``
    with probability 1/2 (the values of the experiments' sampler), at any ``L``.

    How many rows hold ``j`` values ``gamma`` is multinomial with the Binomial(k, 1/2)
    probabilities, so the histogram costs ``O(k)`` whatever ``L``; it has the law of
    :func:`row_types_from_blocks` applied to :func:`stream_regular_blocks`.

    Parameters
    ----------
    L : int
        ``4 <= L <= 2**53`` (and ``L >= k + 2``).
    k : int
        ``1 <= k <= 64``.
    gamma : float
        ``gamma >= 1``.
    eps1, eps2 : float
        Tolerances of (6)-(7).
    rng : numpy.random.Generator

    Returns
    -------
    RowTypes

    References
    ----------
    Eq. (8) of Likhosherstov et al. (2021); the model is the book's (:ref:`ch-width-bits`).
    """
    eps1, eps2 = check_tolerances(eps1, eps2)
    k = check_int("k", k, low=1, high=64)
    L = check_int("L", L, low=max(4, k + 2), high=2 ** 53)
    gamma = check_real("gamma", gamma, low=1.0)
    rng = check_rng("rng", rng)
    delta = math.log((1.0 + eps1) / eps2)
    pmf = [math.comb(k, j) / 2.0 ** k for j in range(k + 1)]
    counts = rng.multinomial(L, pmf)
    hist: dict = {}
    for j, c in enumerate(counts.tolist()):
        if c:
            key = _type_logits(j, k, gamma, delta)
            hist[key] = hist.get(key, 0) + int(c)
    return RowTypes(L=L, k_max=k, eps1=eps1, eps2=eps2, types=tuple(sorted(hist.items())))


def stream_regular_blocks(L, k, gamma, rng, *, block_rows: int = 1 << 16):
    """A target with exactly ``k`` nonzeros in every row and column, as CSR row blocks.

    Row ``l`` attends to ``sigma(l + i)``, ``i < k`` (mod ``L``), for the affine permutation
    ``sigma(m) = (a m + c) mod L`` with a random ``a`` coprime to ``L``; values are 1 or
    ``gamma`` with probability 1/2. Memory is ``O(block_rows k)`` whatever ``L``.

    Parameters
    ----------
    L : int
        ``2 <= L <= 2**53``.
    k : int
        ``1 <= k <= min(64, L)``.
    gamma : float
        ``gamma >= 1``.
    rng : numpy.random.Generator
    block_rows : int, default 65536
        Rows per block, ``1 <= block_rows <= 2**24``.

    Yields
    ------
    (int, scipy.sparse.csr_array)
        The first row of the block and the block (``rows x L``, values not normalised).

    References
    ----------
    :ref:`ch-width-bits`.
    """
    L = check_int("L", L, low=2, high=2 ** 53)
    k = check_int("k", k, low=1, high=min(64, L))
    gamma = check_real("gamma", gamma, low=1.0)
    rng = check_rng("rng", rng)
    block_rows = check_int("block_rows", block_rows, low=1, high=1 << 24)
    return _stream_regular(L, k, gamma, rng, block_rows)


def _stream_regular(L, k, gamma, rng, block_rows):
    while True:
        a = int(rng.integers(1, L)) if L > 2 else 1
        if math.gcd(a, L) == 1:
            break
    c = int(rng.integers(0, L))
    offs = np.arange(k, dtype=np.int64)
    for start in range(0, L, block_rows):
        n = min(block_rows, L - start)
        m = (np.arange(start, start + n, dtype=np.int64)[:, None] + offs[None, :]) % L
        cols = ((m.astype(object) * a + c) % L).astype(np.int64) if L > 2 ** 31 else (a * m + c) % L
        vals = np.where(rng.random((n, k)) < 0.5, 1.0, gamma)
        order = np.argsort(cols, axis=1)
        cols = np.take_along_axis(cols, order, axis=1)
        vals = np.take_along_axis(vals, order, axis=1)
        yield start, sps.csr_array((vals.ravel(), cols.ravel(), np.arange(0, n * k + 1, k)),
                                   shape=(n, L))


def row_types_from_blocks(blocks, L, eps1, eps2) -> RowTypes:
    """The :class:`RowTypes` of a target given as CSR row blocks (e.g. from
    :func:`stream_regular_blocks`), one block in memory at a time.

    Parameters
    ----------
    blocks : iterable of (int, scipy.sparse matrix)
        ``(first row, block)``, blocks of ``L`` columns covering rows ``0..L-1`` once.
    L : int
    eps1, eps2 : float

    Returns
    -------
    RowTypes
        The same types (logits rounded to 12 decimals) as the model derives from the full
        matrix.

    Raises
    ------
    ValueError
        A block of the wrong width, an empty row or a negative value, rows not covered once.

    References
    ----------
    Eq. (8) of Likhosherstov et al. (2021); :ref:`ch-width-bits`.
    """
    eps1, eps2 = check_tolerances(eps1, eps2)
    L = check_int("L", L, low=4, high=2 ** 53)
    delta = math.log((1.0 + eps1) / eps2)
    hist: dict = {}
    seen, k_max = 0, 0
    if isinstance(blocks, (str, bytes, dict)) or not hasattr(blocks, "__iter__"):
        raise TypeError(f"blocks must be an iterable of (first row, CSR block) pairs, got "
                        f"{type(blocks).__name__}")
    for item in blocks:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"blocks must yield (first row, CSR block) pairs, got {item!r:.60}")
        start, blk = item
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
            raise TypeError(f"blocks: a block's first row must be an integer, got {start!r:.40}")
        if not sps.issparse(blk) or blk.ndim != 2:
            raise TypeError(f"blocks: each block must be a 2-D scipy.sparse matrix, got "
                            f"{type(blk).__name__}")
        blk = sps.csr_array(blk, dtype=np.float64)
        if not np.all(np.isfinite(blk.data)):
            raise ValueError("blocks: the target must be finite")
        if blk.shape[1] != L:
            raise ValueError(f"blocks: every block must have L = {L} columns, got shape {blk.shape}")
        if start != seen:
            raise ValueError(f"blocks must cover the rows in order: expected row {seen}, got {start}")
        blk.eliminate_zeros()
        if (blk.data < 0).any():
            raise ValueError("blocks: the target must be nonnegative")
        for i in range(blk.shape[0]):
            v = blk.data[blk.indptr[i]:blk.indptr[i + 1]]
            if v.size == 0:
                raise ValueError(f"blocks: row {start + i} has no nonzero entry")
            b = tuple(np.round(np.sort(np.log(v / v.min()) + delta)[::-1], 12).tolist())
            hist[b] = hist.get(b, 0) + 1
            k_max = max(k_max, v.size)
        seen += blk.shape[0]
    if seen != L:
        raise ValueError(f"blocks: they cover {seen} rows, expected L = {L}")
    return RowTypes(L=L, k_max=k_max, eps1=eps1, eps2=eps2, types=tuple(sorted(hist.items())))


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
        Draws per width (``1 <= n_draws <= 10**6``; above, a :class:`sattn.SizeTooLargeError`).
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
    n_draws = _check_n_draws(n_draws)
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


def predict_d50(A, eps1, eps2, *, low=None, high=None, n_samples=_DEFAULT_SAMPLES, seed=0) -> int:
    """The model's ``d_50``: the smallest width at which one draw passes with probability >= 1/2.

    A bisection on ``[low, high]`` (default ``[k_max, min(L - k_max, 100000)]``) using that
    ``p(d)`` increases with ``d``. ``A`` may be a :class:`RowTypes`, so any ``L`` works.

    Parameters
    ----------
    A : array_like, scipy.sparse matrix, SparseTarget or RowTypes
        The target.
    eps1, eps2 : float
        Tolerances.
    low, high : int, optional
        The bracket, ``k_max <= low <= high <= L - k_max``.
    n_samples, seed
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
    t = _as_target(A, eps1, eps2)
    n_samples = _check_samples(n_samples)
    seed = check_int("seed", seed, low=0)
    if t.L < 4 or t.L < t.k_max + 2:
        raise ValueError(f"the model needs L >= max(4, k + 2), got L = {t.L}, k = {t.k_max} (A)")
    lo = t.k_max if low is None else check_int("low", low, low=t.k_max, high=t.L - t.k_max)
    hi = min(t.L - t.k_max, 100000) if high is None else check_int("high", high, low=lo,
                                                                    high=t.L - t.k_max)

    def p(d):
        return draw_success_probability(t, t.eps1, t.eps2, d, n_samples=n_samples, seed=seed).p
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


def _setup_task(setup, L):
    if not isinstance(setup, str) or setup not in SETUPS:
        raise ExperimentError(f"unknown setup {setup!r}; valid names: {', '.join(SETUPS)}")
    L = check_int("L", L, low=64, high=32768)
    return make_tasks("fig3", get_profile("paper"), setups=[setup], lengths=[L])[0]


def sample_target(setup, L, *, root_seed=ROOT_SEED):
    """The target the experiments use for ``setup`` at length ``L`` (Figure 3's seed key), as a
    :class:`~sattn.experiments.target.SparseTarget`."""
    task, A = _sample_csr(setup, L, check_int("root_seed", root_seed, low=0))
    return prepare_target(A, task.setup.eps1, task.setup.eps2)


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
        Draws per width (default: the paper profile's ``ceil(0.1 L)``), at most ``10**6``.
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
    n_draws = task.n_draws if n_draws is None else _check_n_draws(n_draws)
    if widths is None:
        widths = grid_values(task.grid)
    t = sample_target(setup, L, root_seed=root_seed)
    return predict_dmin(t, t.eps1, t.eps2, widths, n_draws, n_samples=n_samples, seed=seed)


# ----------------------------------------------------------------------------- comparison
@dataclass
class Comparison(Result):
    """Predicted vs measured d_min for a list of (setup, L) measurements.

    ``records`` holds one dict per measurement (``setup``, ``L``, ``n_draws``, ``measured``,
    ``predicted`` = the predicted median, ``q10``, ``q90``, ``rel_error`` =
    ``(predicted - measured) / measured``); ``tolerance`` is the largest relative error that
    ``ok`` allows.
    """

    records: list
    tolerance: float

    @property
    def max_abs_rel_error(self) -> float:
        return max(abs(r["rel_error"]) for r in self.records)

    @property
    def mean_rel_error(self) -> float:
        return float(np.mean([r["rel_error"] for r in self.records]))

    def per_setup(self) -> dict:
        """``{setup: (mean relative error, largest absolute relative error, count)}``."""
        out = {}
        for r in self.records:
            out.setdefault(r["setup"], []).append(r["rel_error"])
        return {k: (float(np.mean(v)), float(np.max(np.abs(v))), len(v)) for k, v in out.items()}

    @property
    def ok(self) -> bool:
        return bool(self.max_abs_rel_error <= self.tolerance)

    @property
    def message(self) -> str:
        return (f"{len(self.records)} measurements: predicted d_min within "
                f"{100 * self.max_abs_rel_error:.1f}% of the measured one everywhere (mean "
                f"relative error {100 * self.mean_rel_error:+.1f}%, tolerance "
                f"{100 * self.tolerance:.0f}%)")


def compare_measured(rows, *, tolerance=0.25, n_samples=_DEFAULT_SAMPLES, seed=0,
                     root_seed=ROOT_SEED) -> Comparison:
    """Predict d_min for measured rows of Figure 3 and compare.

    Parameters
    ----------
    rows : list of dict
        Rows as :func:`~sattn.experiments.protocol.load_figure` returns them for ``"fig3"``
        (keys ``setup``, ``L``, ``n_draws``, ``grid_start``, ``grid_stop``, ``grid_step``,
        ``d_min``); rows without a measured ``d_min`` are skipped.
    tolerance : float, default 0.25
        Largest relative error that the verdict allows.
    n_samples, seed, root_seed
        As in :func:`predict_setup`.

    Returns
    -------
    Comparison
    """
    tolerance = check_real("tolerance", tolerance, low=0.0, low_open=True)
    if not isinstance(rows, (list, tuple)) or not rows:
        raise TypeError("rows must be a non-empty list of dicts (load_figure('fig3', ...))")
    recs = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise TypeError(f"rows[{i}] must be a dict, got {type(r).__name__}")
        try:
            setup, L, n = r["setup"], int(r["L"]), int(r["n_draws"])
            ws = list(range(int(r["grid_start"]), int(r["grid_stop"]) + 1, int(r["grid_step"])))
            meas = r["d_min"]
        except KeyError as exc:
            raise ValueError(f"rows[{i}] lacks the key {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"rows[{i}] must hold integer L, n_draws and grid fields "
                             f"(load_figure('fig3', ...)), got {r!r}: {exc}") from None
        if meas is None or meas == "":
            continue
        meas = int(meas)
        pr = predict_setup(setup, L, n_draws=n, widths=ws, root_seed=root_seed,
                           n_samples=n_samples, seed=seed)
        pred = pr.median if pr.median is not None else math.nan
        recs.append(dict(setup=setup, L=L, n_draws=n, measured=meas, predicted=pred,
                         q10=pr.q10, q90=pr.q90, rel_error=(pred - meas) / meas))
    if not recs:
        raise ValueError("no row of rows has a measured d_min")
    return Comparison(records=recs, tolerance=tolerance)


# ----------------------------------------------------------------------------- checks
def _check_b(b):
    if isinstance(b, (str, bytes)):
        raise TypeError("b must be an array of support logits, got a string")
    try:
        b = np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"b must be an array of real support logits, got {b!r}") from None
    if b.ndim != 1 or b.size == 0 or not np.isfinite(b).all() or (b <= 0).any():
        raise ValueError("b must be a non-empty 1-D array of finite positive support logits")
    return b


def _exact_rows(L, d, b, n_draws, rows, rng):
    """Exact Stiefel draws (QR of a Gaussian): for ``rows`` rows with disjoint supports
    ``S_i = {i k, ..., i k + k - 1}`` and logits ``b``, yield per draw the logits
    ``G`` (L x rows, column i = row i), the blocks ``P_SS`` (rows x k x k)."""
    k = b.size
    for _ in range(n_draws):
        Y = np.linalg.qr(rng.standard_normal((L, d)))[0]
        YS = Y[: rows * k].reshape(rows, k, d)                    # (rows, k, d)
        V = np.einsum("k,rkd->dr", b, YS)                         # Y_S^T b per row
        G = (L / d) * (Y @ V)
        yield G, YS @ YS.transpose(0, 2, 1)


def _check_exact_args(L, d, b, n_draws, rows, rng):
    b = _check_b(b)
    L = check_int("L", L, low=8, high=8192)
    d = check_int("d", d, low=1, high=L)
    _check_width(L, d, b.size)
    n_draws = _check_n_draws(n_draws, low=2, cap=MAX_EXACT_DRAWS)
    rows = min(check_int("rows", rows, low=2), L // (2 * b.size))
    rng = check_rng("rng", rng)
    return L, d, b, n_draws, rows, rng


def _moments(L, d, b):
    """Exact second moments of the errors under a uniform projector (module docs)."""
    s = L / d
    Epij2 = d * (L - d) / (L * (L - 1) * (L + 2))
    varpjj = 2 * d * (L - d) / (L ** 2 * (L + 2))
    nb2 = float(b @ b)
    var_off = s * s * nb2 * Epij2
    var_sup = s * s * (b * b * varpjj + (nb2 - b * b) * Epij2)
    return var_off, var_sup


def _ks_normal(x):
    return float(sst.kstest(x, "norm").statistic)


def check_error_model(L, d, b, *, n_draws=40, rows=128, rng) -> ModelCheck:
    """(a) The errors ``e = (L/d) P b - b`` of exact projectors against the models.

    Measures: the ratio of the empirical variance of the off-support and of the support errors
    to the exact second moments (module docs); the Kolmogorov-Smirnov distance of the
    standardised off-support errors to ``N(0, 1)``; for the support errors, the KS distance to
    the Gaussian of the same variance and the two-sample KS distance to the book's model (the
    matrix-beta block); the empirical 0.1% quantile of the standardised support error against
    the Gaussian's (-3.09) and the model's.

    Parameters
    ----------
    L : int
        Length, ``8 <= L <= 8192`` (exact QR draws: keep it moderate).
    d : int
        Width, ``k <= d <= L - k``.
    b : array_like, shape (k,)
        Support logits of the rows (positive).
    n_draws : int, default 40
        Exact draws (``2 <= n_draws <= 10**4``, ``MAX_EXACT_DRAWS``; above, a
        :class:`sattn.SizeTooLargeError`).
    rows : int, default 128
        Rows with disjoint supports per draw (``2 <= rows <= L / (2k)``; larger values are
        reduced to ``L / (2k)``).
    rng : numpy.random.Generator

    Returns
    -------
    ModelCheck
        ``ok``: variance ratios within 5%, off-support KS below 0.01, and the 1% quantile of
        the support errors closer to the model's than to the Gaussian's.
    """
    L, d, b, n_draws, rows, rng = _check_exact_args(L, d, b, n_draws, rows, rng)
    k = b.size
    var_off, var_sup = _moments(L, d, b)
    off, sup = [], []
    mask = np.ones((L, rows), dtype=bool)
    for i in range(rows):
        mask[i * k:(i + 1) * k, i] = False
    for G, _ in _exact_rows(L, d, b, n_draws, rows, rng):
        off.append(G[mask])
        sup.append(np.stack([G[i * k:(i + 1) * k, i] - b for i in range(rows)]))
    off = np.concatenate(off)
    sup = np.concatenate(sup)                                      # (n, k)
    vr_off = float(off.var() / var_off)
    vr_sup = float(sup.var(axis=0).sum() / var_sup.sum())
    sub = off[rng.choice(off.size, size=min(off.size, 200_000), replace=False)]
    ks_off = _ks_normal(sub / math.sqrt(var_off))
    z_sup = (sup / np.sqrt(var_sup)).ravel()
    ks_gauss = _ks_normal(z_sup)
    Pm = _block(k, L, d, 1 << 16, 12345)
    model = ((L / d) * (Pm @ b) - b) / np.sqrt(var_sup)
    ks_model = float(sst.ks_2samp(z_sup, model.ravel()).statistic)
    q = 1e-2
    qe, qg, qm = (float(np.quantile(z_sup, q)), float(sst.norm.ppf(q)),
                  float(np.quantile(model.ravel(), q)))
    vals = dict(L=L, d=d, k=k, var_ratio_off=vr_off, var_ratio_support=vr_sup, ks_off=ks_off,
                ks_support_gauss=ks_gauss, ks_support_model=ks_model,
                q01_support_empirical=qe, q01_support_gauss=qg, q01_support_model=qm)
    ok = bool(abs(vr_off - 1) < 0.05 and abs(vr_sup - 1) < 0.05 and ks_off < 0.01
              and abs(qe - qm) < abs(qe - qg))
    return ModelCheck("error model (a)", vals, ok,
                      "variances match the exact moments within 5%, off-support errors are "
                      "Gaussian (KS < 0.01), the lower tail of the support errors follows the "
                      "block model, not the Gaussian")


def check_offsupport_max(L, d, b, *, n_draws=40, rows=128, rng) -> ModelCheck:
    """(b1) The largest off-support logit of a row against the model (assumption A1).

    For every row of exact draws the probability integral transform
    ``u = F_m(max_j g_j / ((L/d) r))`` (``r`` from the row's own block ``P_SS``) should be
    uniform if A1 holds; the Kolmogorov-Smirnov distance of ``u`` to ``U(0, 1)`` is reported,
    next to that of the naive model (``L - k`` independent Gaussians of the unconditional
    variance, ``u' = Phi(max/sigma)^m``). Also checked: the identity ``||g_R|| = (L/d) r``
    (largest relative error).

    The tail matters for the criteria: ``tail5_model`` is the fraction of rows whose maximum
    exceeds the model's 95% quantile (0.05 if A1 holds), ``tail1_model`` the same at 99%.

    Parameters and returns as in :func:`check_error_model`; ``ok``: the identity holds to 1e-8
    and ``tail5_model`` is within three binomial standard deviations of 0.05.
    """
    L, d, b, n_draws, rows, rng = _check_exact_args(L, d, b, n_draws, rows, rng)
    k = b.size
    m = L - k
    var_off, _ = _moments(L, d, b)
    mask = np.ones((L, rows), dtype=bool)
    for i in range(rows):
        mask[i * k:(i + 1) * k, i] = False
    u, u_naive, ident = [], [], 0.0
    for G, P in _exact_rows(L, d, b, n_draws, rows, rng):
        w = P @ b
        r = np.sqrt(np.maximum(w @ b - np.einsum("rk,rk->r", w, w), 0.0))
        Goff = np.where(mask, G, -np.inf)
        mx = Goff.max(axis=0)
        nrm = np.sqrt(np.where(mask, G, 0.0).__pow__(2).sum(axis=0))
        ident = max(ident, float(np.max(np.abs(nrm / ((L / d) * r) - 1))))
        u.append(offsupport_pass(mx / ((L / d) * r), m))
        u_naive.append(np.exp(m * sst.norm.logcdf(mx / math.sqrt(var_off))))
    u, u_naive = np.concatenate(u), np.concatenate(u_naive)
    ks = float(sst.kstest(u, "uniform").statistic)
    ks_naive = float(sst.kstest(u_naive, "uniform").statistic)
    n = u.size
    t5, t5n = float((u > 0.95).mean()), float((u_naive > 0.95).mean())
    vals = dict(L=L, d=d, k=k, n=n, ks_model=ks, ks_naive=ks_naive,
                crit_1pct=1.63 / math.sqrt(n), tail5_model=t5, tail5_naive=t5n,
                tail1_model=float((u > 0.99).mean()), tail1_naive=float((u_naive > 0.99).mean()),
                norm_identity_error=ident)
    ok = bool(ident < 1e-8 and abs(t5 - 0.05) <= 3 * math.sqrt(0.05 * 0.95 / n))
    return ModelCheck("largest off-support logit (b1)", vals, ok,
                      "||g_R|| = (L/d) r exactly, and the upper 5% tail of the largest "
                      "off-support logit is the model's")


def check_row_dependence(L, d, b, *, n_draws=40, rows=128, rng) -> ModelCheck:
    """(b2) Dependence inside a row and between rows, measured on exact draws.

    Inside a row: the correlation of two off-support errors (the model: ``-1/(m-1)``, nearly 0)
    and of their squares (the model predicts it through the common scale ``r``; its value from
    the block samples is reported beside the measured one). Between rows with disjoint
    supports: the correlation of their smallest support logits, of their largest off-support
    logits, of their (7)-margins ``min g_S - max g_R``, and of their logits in a common
    off-support column; assumption A2 treats all of these as 0.

    Parameters and returns as in :func:`check_error_model`; ``ok``: every between-row
    correlation below 0.1 in absolute value and the model's correlation of squares within 0.02
    of the measured one.
    """
    L, d, b, n_draws, rows, rng = _check_exact_args(L, d, b, n_draws, rows, rng)
    k = b.size
    m = L - k
    c0 = rows * k                    # columns >= c0 are off the support of every row
    pairs_x, pairs_y, mins, maxs, margins, same = [], [], [], [], [], []
    for G, _ in _exact_rows(L, d, b, n_draws, rows, rng):
        off = G[c0:]                                              # (L - c0, rows)
        pairs_x.append(off[0::2][: (L - c0) // 2].ravel())
        pairs_y.append(off[1::2][: (L - c0) // 2].ravel())
        gs = np.stack([G[i * k:(i + 1) * k, i] for i in range(rows)])   # (rows, k)
        mask = np.ones((L, rows), dtype=bool)
        for i in range(rows):
            mask[i * k:(i + 1) * k, i] = False
        mx = np.where(mask, G, -np.inf).max(axis=0)
        mins.append(gs.min(axis=1))
        maxs.append(mx)
        margins.append(gs.min(axis=1) - mx)
        same.append(off[: min(64, L - c0)])
    x, y = np.concatenate(pairs_x), np.concatenate(pairs_y)

    def between(arrs):
        a = np.stack(arrs)                                        # (draws, rows)
        return float(np.corrcoef(a[:, 0::2].ravel(), a[:, 1::2].ravel())[0, 1])
    S = np.concatenate(same, axis=0)                              # (n, rows)
    corr_same = float(np.corrcoef(S[:, 0::2].ravel(), S[:, 1::2].ravel())[0, 1])
    Pm = _block(k, L, d, 1 << 16, 12345)
    w = Pm @ b
    R2 = (L / d) ** 2 * np.maximum(w @ b - np.einsum("nk,nk->n", w, w), 0.0)
    e2, e4 = R2.mean(), (R2 ** 2).mean()
    cov = e4 / (m * (m + 2)) - e2 ** 2 / m ** 2
    var = 3 * e4 / (m * (m + 2)) - e2 ** 2 / m ** 2
    vals = dict(L=L, d=d, k=k, corr_off_pair=float(np.corrcoef(x, y)[0, 1]),
                corr_off_pair_model=-1.0 / (m - 1),
                corr_off_squares=float(np.corrcoef(x * x, y * y)[0, 1]),
                corr_off_squares_model=float(cov / var),
                corr_rows_min_support=between(mins), corr_rows_max_off=between(maxs),
                corr_rows_margin7=between(margins), corr_rows_same_column=corr_same)
    betw = [vals[k_] for k_ in ("corr_rows_min_support", "corr_rows_max_off",
                                "corr_rows_margin7", "corr_rows_same_column")]
    ok = bool(max(abs(v) for v in betw) < 0.1
              and abs(vals["corr_off_squares"] - vals["corr_off_squares_model"]) < 0.02)
    return ModelCheck("dependence (b2)", vals, ok,
                      "rows are nearly uncorrelated (|corr| < 0.1) and the model reproduces the "
                      "within-row correlation of squared errors")


def _sample_csr(setup, L, root_seed):
    task = _setup_task(setup, L)
    return task, task.sample_target(root_seed)


def check_success_probability(setup, L, widths, *, n_draws=200, root_seed=ROOT_SEED,
                              n_samples=_DEFAULT_SAMPLES, seed=0) -> ModelCheck:
    """(c) Predicted vs measured acceptance probability of one draw, with the fast engine.

    The target is the experiments' (:func:`sample_target`); at each width ``n_draws`` draws
    are decided by :class:`~sattn.experiments.engine.FastEngine` with seeds
    ``draw_generator(root_seed, (setup_key, L, 7, d, i))`` (a key the experiments do not use).
    The z-score of each measured frequency against the prediction uses the binomial standard
    deviation at the predicted ``p``.

    Parameters
    ----------
    setup : str
        A setup name.
    L : int
        Length.
    widths : sequence of int
        Widths (``k <= d <= L - k``).
    n_draws : int, default 200
        Engine draws per width (``10 <= n_draws <= 10**6``).
    root_seed, n_samples, seed
        As in :func:`predict_setup`.

    Returns
    -------
    ModelCheck
        ``ok``: every ``|z| <= 3``, or the measured frequency within 0.05 of the prediction.
    """
    task, A = _sample_csr(setup, L, check_int("root_seed", root_seed, low=0))
    n_draws = _check_n_draws(n_draws, low=10)
    s = task.setup
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of integers, got {widths!r}")
    ws = [check_int(f"widths[{i}]", w, low=1) for i, w in enumerate(widths)]
    if not ws:
        raise ValueError("widths must contain at least one width")
    if any(b <= a for a, b in zip(ws, ws[1:])):
        raise ValueError(f"widths must be strictly increasing, got {ws}")
    t = prepare_target(A, s.eps1, s.eps2)
    eng = FastEngine(A, s.eps1, s.eps2)
    meas, pred, z = [], [], []
    for w in ws:
        p = draw_success_probability(t, s.eps1, s.eps2, w, n_samples=n_samples, seed=seed).p
        hits = sum(eng.draw(w, draw_generator(root_seed, (s.key(), task.L, 7, w, i))).ok
                   for i in range(n_draws))
        f = hits / n_draws
        meas.append(f)
        pred.append(p)
        sd = math.sqrt(max(p * (1 - p), 1e-12) / n_draws)
        z.append((f - p) / sd)
    vals = dict(setup=setup, L=task.L, n_draws=n_draws, widths=ws, measured=meas,
                predicted=pred, z=z)
    ok = bool(all(abs(zi) <= 3 or abs(f - p) <= 0.05 for zi, f, p in zip(z, meas, pred)))
    return ModelCheck("acceptance probability (c)", vals, ok,
                      "the measured acceptance frequency matches p(d) (|z| <= 3 or within 0.05)")


def naive_dmin(A, eps1, eps2, widths, n_draws) -> DminPrediction:
    """The naive Gaussian estimate, for comparison: support logits exact, off-support errors
    independent Gaussians of variance ``||b_l||^2 / d``.

    ``p(d) = exp(-sum_l (L - k_l) Phibar(ln(1 + eps1) sqrt(d) / ||b_l||))``: every off-support
    entry of row ``l`` must stay below its smallest support logit ``Delta`` minus
    ``ln(1/eps2)``, which leaves the room ``ln(1 + eps1)``. It ignores the fluctuation of the
    support logits (and criterion (6)) and the common scale of a row; the chapter shows what
    that costs. Same ladder law (A4) as :func:`predict_dmin`, every width evaluated.

    Parameters
    ----------
    A, eps1, eps2, widths, n_draws
        As in :func:`predict_dmin`.

    Returns
    -------
    DminPrediction
    """
    t = _as_target(A, eps1, eps2)
    n_draws = _check_n_draws(n_draws)
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of integers, got {widths!r}")
    ws = [check_int(f"widths[{i}]", w, low=1, high=t.L) for i, w in enumerate(widths)]
    if not ws or any(b <= a for a, b in zip(ws, ws[1:])):
        raise ValueError(f"widths must be non-empty and strictly increasing, got {ws}")
    kl = (t.bvals > 0).sum(axis=1)
    room = math.log1p(t.eps1)
    ps = []
    for w in ws:
        lf = np.sum((t.L - kl) * sst.norm.sf(room * math.sqrt(w) / t.row_norm))
        ps.append(math.exp(-lf))
    stop, med, mean, q10, q90, cross, beyond = _search_law(np.array(ws), ps, n_draws)
    return DminPrediction(L=t.L, n_draws=n_draws, widths=ws, p=ps, stop=stop, median=med,
                          mean=mean, q10=q10, q90=q90, crossing=cross, p_beyond=beyond)
