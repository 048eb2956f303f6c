"""The model of one row: the block ``P_SS``, the off-support tail ``F_m``, the pass probability.

References
----------
The model is the book's own (:ref:`ch-experiments`); the model itself is described in
:mod:`sattn.experiments.prediction`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.special as spc
import scipy.stats as sst

from ..._validate import MAX_DRAWS, check_int, check_size
from ...patterns.criteria import validate_tolerances
from .results import RowPrediction

# Machinery of the flat functions: none of its names is flat (the rule: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "offsupport_pass", "row_pass_probability",
           # shared with the predictions and their checks (:mod:`.dmin`, :mod:`.checks`)
           "DEFAULT_SAMPLES", "projector_block", "row_stats", "validate_model_width",
           "validate_n_draws", "validate_n_samples", "validate_support_logits",
           # shared with the exact evaluation (:mod:`.row_exact`)
           "TAIL_TABLE_S", "log_tail_table", "chi2_quantile"]

DEFAULT_SAMPLES = 1 << 17


def validate_model_width(L, d, k):
    """Raise ValueError unless ``k <= d <= L - k``, the widths at which the row model is defined."""
    if not (k <= d <= L - k):
        raise ValueError(f"d must lie in [k, L - k] = [{k}, {L - k}] for the model (the "
                         f"Wishart factors need d >= k and L - d >= k), got d = {d}")


def validate_n_draws(n_draws, *, low=1, cap=MAX_DRAWS):
    """A budget of draws, ``low <= n_draws <= cap`` (``MAX_DRAWS = 10**6`` by default)."""
    return check_size("n_draws", n_draws, low=low, cap=cap,
                      why="the most random draws one call may make or model")


def validate_n_samples(n_samples):
    """The number of projector samples, an integer in ``[256, 2**22]`` (returned)."""
    return check_int("n_samples", n_samples, low=256, high=1 << 22)


def _sphere_log_tail(c, m):
    """``ln P(x_1 > c)`` for one coordinate of a uniform unit vector of ``R^m`` (exact)."""
    cc = np.clip(c, -1.0, 1.0)
    half = 0.5 * spc.betaincc(0.5, 0.5 * (m - 1), cc * cc)
    with np.errstate(divide="ignore"):
        return np.log(np.where(cc >= 0, half, 1.0 - half))


TAIL_TABLE_S = np.linspace(-6.0, 14.0, 8001)


@functools.lru_cache(maxsize=64)
def log_tail_table(m):
    """``ln tau_m`` tabulated against ``s = c sqrt(m)`` on [-6, 14] (cached per ``m``). It is
    smooth in ``s``, so linear interpolation is accurate to ~1e-6 relative; below ``s = -6``
    ``F_m`` is below ``Phibar(6)^m`` and above ``s = 14`` ``1 - F_m`` is below ``m 1e-40``
    (both are clamped)."""
    return _sphere_log_tail(TAIL_TABLE_S / math.sqrt(m), m)


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
        lt = np.interp(sc, TAIL_TABLE_S, log_tail_table(m), right=-np.inf)
        lt = np.where(sc > TAIL_TABLE_S[-1], -np.inf, lt)
    with np.errstate(divide="ignore", over="ignore"):
        out = np.exp(m * np.log1p(-np.minimum(np.exp(lt), 1.0)))
    return np.where(c >= 1.0, 1.0, np.where(c <= -1.0, 0.0, out))


_QZ = np.linspace(-9.0, 9.0, 1441)


@functools.lru_cache(maxsize=16)
def _base_numbers(k, n, seed):
    """The common random numbers of the block samples: normal scores of Latin-hypercube
    uniforms for the two Bartlett diagonals, and the normals below them (cached)."""
    rng = np.random.default_rng([seed, k, n])
    zs = []
    for _ in range(2):
        u = (np.arange(n)[:, None] + rng.random((n, k))) / n
        for j in range(k):
            u[:, j] = u[rng.permutation(n), j]
        zs.append(sst.norm.ppf(u))
    nl = k * (k - 1) // 2
    return zs[0], zs[1], rng.standard_normal((n, nl)), rng.standard_normal((n, nl))


def _wilson_hilferty(z, df):
    a = 2.0 / (9.0 * df)
    return df * np.maximum(1.0 - a + z * np.sqrt(a), 0.0) ** 3


def chi2_quantile(z, df):
    """Chi-square quantile at normal score ``z`` (same shape), ``df`` a positive number: the
    Wilson-Hilferty value times a correction interpolated from the exact quantile
    (``gammaincinv``) on 1441 normal scores in [-9, 9] (relative error below ~1e-6 for ``|z| < 5``)."""
    exact = 2.0 * spc.gammaincinv(0.5 * df, sst.norm.cdf(_QZ))
    wh = _wilson_hilferty(_QZ, df)
    ok = (wh > 0) & (exact > 0)
    zc = np.clip(z, -9.0, 9.0)
    if ok.all():
        return _wilson_hilferty(z, df) * np.interp(zc, _QZ, exact / wh)
    return np.exp(np.interp(zc, _QZ[exact > 0], np.log(exact[exact > 0])))


@functools.lru_cache(maxsize=32)
def projector_block(k, L, d, n, seed):
    """``n`` samples of the ``k x k`` block ``P_SS`` of a uniform rank-``d`` projector of
    ``R^L`` (matrix beta, see module docs). The random numbers depend on ``(k, n, seed)`` only
    (common random numbers for every width and length); cached."""
    z1, z2, n1, n2 = _base_numbers(k, n, seed)
    il = np.tril_indices(k, -1)
    Fs = []
    for z, nn, df in ((z1, n1, d), (z2, n2, L - d)):
        F = np.zeros((n, k, k))
        for i in range(k):
            F[:, i, i] = np.sqrt(chi2_quantile(z[:, i], df - i))
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


def row_stats(P, b, L, d, eps1, eps2):
    """``(pass probability, share failing (6), share failing (7), standard error)`` of one row with
    support logits ``b`` over the projector samples ``P`` (:func:`projector_block`)."""
    ok6, F = _row_pass_samples(P, b, L, d, eps1, eps2)
    v = ok6 * F
    n = v.size
    pi = float(v.mean())
    return pi, float(1.0 - ok6.mean()), float((ok6 * (1.0 - F)).mean()), float(v.std() / math.sqrt(n))


def row_pass_probability(b, L, d, eps1, eps2, *, n_samples=DEFAULT_SAMPLES, seed=0
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
    eps1, eps2 = validate_tolerances(eps1, eps2)
    b = validate_support_logits(b)
    L = check_int("L", L, low=max(4, b.size + 2))
    d = check_int("d", d, low=1, high=L)
    validate_model_width(L, d, b.size)
    n_samples = validate_n_samples(n_samples)
    seed = check_int("seed", seed, low=0)
    pi, f6, f7, se = row_stats(projector_block(b.size, L, d, n_samples, seed), b, L, d, eps1, eps2)
    return RowPrediction(L=L, d=d, b=b, pi=pi, fail6=f6, fail7=f7, se=se, n_samples=n_samples)


def validate_support_logits(b):
    """``b`` as a non-empty 1-D float array of finite positive support logits (TypeError or
    ValueError otherwise)."""
    if isinstance(b, (str, bytes)):
        raise TypeError("b must be an array of support logits, got a string")
    try:
        b = np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"b must be an array of real support logits, got {b!r}") from None
    if b.ndim != 1 or b.size == 0 or not np.isfinite(b).all() or (b <= 0).any():
        raise ValueError("b must be a non-empty 1-D array of finite positive support logits")
    return b
