"""The row model evaluated to a stated accuracy: quadrature for one nonzero, importance sampling
for larger supports.

Near ``d_50`` a row fails with probability about ``ln 2 / L`` (``~2e-5`` at ``L = 32768``), far
in the tail of the block ``P_SS``. A plain Monte Carlo average over ``n`` samples of the block
(:func:`~sattn.experiments.prediction.row_model.row_pass_probability`, assumption A3) resolves
nothing much below ``1/n`` and under-estimates such failures. This module evaluates the same
model (same A1, same integrand) where the failure probability is that small:

* **one nonzero** (``k_l = 1``): ``P_SS = P_ll ~ Beta(d/2, (L-d)/2)``, criterion (6) always
  holds, and the row's failure probability is the one-dimensional integral

      1 - pi = E[1 - F_m(c(P_ll))] = I_{p0}(d/2, (L-d)/2) + int_{p > p0} f(p) (1 - F_m(c(p))) dp

  (``p0``: where ``c = 0``; below it ``1 - F_m >= 1 - 2^-m``, counted as 1 with that bound as
  error). The second term is integrated over the normal score ``z`` of ``p`` by composite
  Gauss-Legendre rules of two orders; their difference is the stated numerical error.
* **larger supports**: the normal scores of the ``d``-dimensional Wishart factor of the block
  are drawn from the defensive mixture ``(1/2) N(0, I) + (1/2) N(0, sigma^2 I)`` and weighted by
  the likelihood ratio (at most 2), which puts many samples in the small-block tail where rows
  fail. The estimate is unbiased and its standard error is the weighted sample's.

The function :func:`row_failure` returns the failure probability with its error; the draw-level
functions (:func:`~sattn.draw_success_probability`, ``method="exact"``) multiply rows as before
(assumption A2).

References
----------
The model is the book's own (:ref:`ch-prediction`); its derivation is in
:mod:`sattn.experiments.prediction`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import scipy.special as spc

from ..._validate import check_int, check_real
from ...patterns.criteria import validate_tolerances
from .row_model import TAIL_TABLE_S, validate_support_logits, validate_model_width, chi2_quantile, log_tail_table

__flat__: list[str] = []
__all__ = [*__flat__, "RowFailure", "row_failure", "k1_failure_quadrature", "block_is_samples",
           "IS_SIGMA", "IS_SAMPLES", "types_failure"]

#: Scale of the wide component of the importance-sampling mixture.
IS_SIGMA = 2.0
#: Default importance samples per block size (``k >= 2``).
IS_SAMPLES = 1 << 17

_PANEL = 0.25           # width of a Gauss-Legendre panel in the normal score z
_Z_SPAN = 12.0          # the integral runs over z in [z0, max(z0, 0) + _Z_SPAN]


@dataclass(frozen=True)
class RowFailure:
    """The model's failure probability of one row and its numerical error.

    Attributes
    ----------
    fail : float
        ``1 - pi``, the probability that the row breaks (6) or (7).
    err : float
        Numerical error: for ``method == "quadrature"`` a bound-like estimate (difference of two
        rule orders plus the neglected ``2^-m``); for ``"importance"`` one standard error.
    method : str
        ``"quadrature"`` or ``"importance"``.
    n : int
        Quadrature nodes (the finer rule) or importance samples.
    """

    fail: float
    err: float
    method: str
    n: int

    @property
    def rel_err(self) -> float:
        """``err / fail`` (infinite when ``fail == 0`` and ``err > 0``)."""
        if self.fail > 0:
            return self.err / self.fail
        return 0.0 if self.err == 0 else math.inf


def _failure_given_c(c, m):
    """``1 - F_m(c)`` under A1, ``1 - (1 - tau_m(c))^m``, computed without cancellation."""
    cc = np.clip(c, -1.0, 1.0)
    half = 0.5 * spc.betaincc(0.5, 0.5 * (m - 1), cc * cc)
    tau = np.where(cc >= 0, half, 1.0 - half)
    with np.errstate(divide="ignore"):
        out = -np.expm1(m * np.log1p(-np.minimum(tau, 1.0)))
    return np.where(c >= 1.0, 0.0, np.where(c <= -1.0, 1.0, out))


def _failure_given_c_table(c, m):
    """``1 - F_m(c)`` from the row model's table of ``ln tau_m`` against ``c sqrt(m)`` (relative
    error of ``tau`` ~1e-6, far below the importance sample's); used for the many samples."""
    sc = np.clip(c, -1.0, 1.0) * math.sqrt(m)
    lt = np.interp(sc, TAIL_TABLE_S, log_tail_table(m))
    with np.errstate(divide="ignore"):
        out = -np.expm1(m * np.log1p(-np.minimum(np.exp(lt), 1.0)))
    out = np.where(sc > TAIL_TABLE_S[-1], 0.0, out)
    return np.where(c >= 1.0, 0.0, np.where(c <= -1.0, 1.0, out))


def _beta_from_score(z, a, b):
    """The Beta(a, b) quantile at normal score ``z``, accurate in both tails."""
    z = np.asarray(z, dtype=np.float64)
    lo = spc.betaincinv(a, b, spc.ndtr(np.minimum(z, 0.0)))
    hi = spc.betainccinv(a, b, spc.ndtr(-np.maximum(z, 0.0)))
    return np.where(z <= 0, lo, hi)


@functools.lru_cache(maxsize=4)
def _gl(n):
    return np.polynomial.legendre.leggauss(n)


def _composite(fun, lo, hi, order):
    """Composite Gauss-Legendre rule of ``order`` nodes per panel of width ~``_PANEL``."""
    n_panels = max(1, math.ceil((hi - lo) / _PANEL))
    edges = np.linspace(lo, hi, n_panels + 1)
    x, w = _gl(order)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    nodes = (mid[:, None] + half[:, None] * x[None, :]).ravel()
    weights = (half[:, None] * w[None, :]).ravel()
    return float(np.dot(weights, fun(nodes))), nodes.size


def k1_failure_quadrature(beta, L, d, eps1, eps2, *, order=16) -> RowFailure:
    """Failure probability of a row with one nonzero (logit ``beta``) under the model, by quadrature.

    Parameters
    ----------
    beta : float
        The row's logit ``b`` (positive).
    L, d : int
        Length and width, ``1 <= d <= L - 1``.
    eps1, eps2 : float
        Tolerances (for ``k = 1`` only ``eps2`` enters: (6) always holds).
    order : int, default 16
        Nodes per panel of the coarser rule (the finer has ``2 order``).

    Returns
    -------
    RowFailure
        ``method == "quadrature"``; ``err`` is ``|Q_2order - Q_order| + 2^-(L-1) I_{p0}``.

    References
    ----------
    The book's model (:ref:`ch-prediction`).
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    L = check_int("L", L, low=4)
    d = check_int("d", d, low=1, high=L - 1)
    order = check_int("order", order, low=2, high=256)
    m = L - 1
    a, bb = 0.5 * d, 0.5 * (L - d)
    s = L / d
    theta2 = math.log(1.0 / eps2)
    p0 = theta2 / (s * beta)                      # c(p) = 0 here
    if p0 >= 1.0:
        return RowFailure(1.0, 0.0, "quadrature", 0)
    below = float(spc.betainc(a, bb, p0))         # rows with p <= p0 fail but for 2^-m
    z0 = float(spc.ndtri(below)) if below > 0 else -40.0
    z0 = max(z0, -40.0)

    def integrand(z):
        p = _beta_from_score(z, a, bb)
        r = np.sqrt(np.maximum(p * (1.0 - p), 0.0)) * beta
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(r > 0, (s * p * beta - theta2) / (s * r), np.inf)
        return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * _failure_given_c(c, m)

    hi = max(z0, 0.0) + _Z_SPAN
    q1, _ = _composite(integrand, z0, hi, order)
    q2, n2 = _composite(integrand, z0, hi, 2 * order)
    # beyond z = hi the Gaussian weight is below phi(12) ~ 5e-32
    err = abs(q2 - q1) + below * 2.0 ** (-m) + 1e-31
    return RowFailure(below + q2, err, "quadrature", n2)


@functools.lru_cache(maxsize=8)
def _is_scores(k, n, seed, sigma):
    """Normal scores of the block's Bartlett factors and the importance weights (cached).

    The ``k (k+1) / 2`` scores of the ``d``-dimensional factor (diagonal scores, then the
    sub-diagonal normals) come from the mixture ``(1/2) N(0, I) + (1/2) N(0, sigma^2 I)``; those
    of the ``(L - d)``-dimensional factor from ``N(0, I)``. Weight: the ratio of the standard
    normal density to the mixture's, ``1 / (1/2 + (1/2) sigma^-D exp(|z|^2 (1 - sigma^-2) / 2))``.
    """
    rng = np.random.default_rng([seed, k, n, 7])
    D = k * (k + 1) // 2
    wide = rng.random(n) < 0.5
    z1 = rng.standard_normal((n, D))
    z1[wide] *= sigma
    q = np.einsum("ij,ij->i", z1, z1)
    logw = -np.logaddexp(math.log(0.5), math.log(0.5) - D * math.log(sigma)
                         + 0.5 * q * (1.0 - sigma ** -2))
    z2 = rng.standard_normal((n, D))
    return z1, z2, np.exp(logw)


def _chi2_from_score(z, df):
    """Chi-square quantile at normal score ``z``: the interpolated quantile of the row model for
    ``|z| <= 5`` (relative error below ~1e-6), the incomplete gamma inverse of the nearer tail
    beyond (where the table is clipped)."""
    out = chi2_quantile(z, df)
    far = np.abs(z) > 5.0
    if far.any():
        zf = z[far]
        lo = 2.0 * spc.gammaincinv(0.5 * df, spc.ndtr(np.minimum(zf, 0.0)))
        hi = 2.0 * spc.gammainccinv(0.5 * df, spc.ndtr(-np.maximum(zf, 0.0)))
        out[far] = np.where(zf <= 0, lo, hi)
    return out


def _factor(z, df, k):
    """Bartlett factor (n, k, k) from scores: diagonal ``sqrt(chi2_{df - i})``, normals below."""
    n = z.shape[0]
    F = np.zeros((n, k, k))
    for i in range(k):
        F[:, i, i] = np.sqrt(_chi2_from_score(np.ascontiguousarray(z[:, i]), df - i))
    il = np.tril_indices(k, -1)
    if k > 1:
        F[:, il[0], il[1]] = z[:, k:]
    return F


@functools.lru_cache(maxsize=16)
def block_is_samples(k, L, d, n=IS_SAMPLES, seed=0, sigma=IS_SIGMA):
    """Importance samples of the ``k x k`` block ``P_SS`` and their weights.

    Returns
    -------
    P : numpy.ndarray, shape (n, k, k)
    w : numpy.ndarray, shape (n,)
        Likelihood ratios (mean 1, at most 2): ``E[h(P_SS)] = mean(w h(P))``.
    """
    k = check_int("k", k, low=1, high=16)
    L = check_int("L", L, low=4)
    d = check_int("d", d, low=k, high=L - k)
    n = check_int("n", n, low=256, high=1 << 22)
    z1, z2, w = _is_scores(k, n, seed, float(sigma))
    F1, F2 = _factor(z1, d, k), _factor(z2, L - d, k)
    if k == 1:
        a, b = F1[:, 0, 0] ** 2, F2[:, 0, 0] ** 2
        P = (a / (a + b))[:, None, None]
    else:
        C = F1 @ F1.transpose(0, 2, 1) + F2 @ F2.transpose(0, 2, 1)
        M = np.linalg.solve(np.linalg.cholesky(C), F1)
        P = M @ M.transpose(0, 2, 1)
    return P, w


def _is_failure(P, w, b, L, d, eps1, eps2):
    """Weighted failure ``mean(w (1 - 1{(6)} F_m(c)))`` and its standard error."""
    k = b.size
    s = L / d
    wv = P @ b
    g = s * wv
    e = g - b
    ok6 = (e.max(axis=1) - e.min(axis=1)) <= math.log1p(eps1) + 1e-12
    r2 = np.maximum(wv @ b - np.einsum("nk,nk->n", wv, wv), 0.0)
    t = g.min(axis=1) + math.log(eps2)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(r2 > 0, t / (s * np.sqrt(r2)), np.where(t >= 0, np.inf, -np.inf))
    h = np.where(ok6, _failure_given_c_table(c, L - k), 1.0) * w
    n = h.size
    return float(h.mean()), float(h.std() / math.sqrt(n))


def row_failure(b, L, d, eps1, eps2, *, n_samples=IS_SAMPLES, seed=0) -> RowFailure:
    """The model's failure probability ``1 - pi`` of one row, with its numerical error.

    Quadrature (:func:`k1_failure_quadrature`) for a row with one nonzero; importance sampling
    of the block (:func:`block_is_samples`) otherwise.

    Parameters
    ----------
    b : array_like, shape (k,)
        The row's support logits (positive).
    L, d : int
        Length and width, ``k <= d <= L - k``.
    eps1, eps2 : float
        Tolerances.
    n_samples : int, default IS_SAMPLES
        Importance samples (``k >= 2`` only).
    seed : int, default 0
        Seed of the importance samples.

    Returns
    -------
    RowFailure

    References
    ----------
    The book's model (:ref:`ch-prediction`).
    """
    eps1, eps2 = validate_tolerances(eps1, eps2)
    b = validate_support_logits(b)
    L = check_int("L", L, low=max(4, b.size + 2))
    d = check_int("d", d, low=1, high=L)
    validate_model_width(L, d, b.size)
    if b.size == 1:
        return k1_failure_quadrature(float(b[0]), L, d, eps1, eps2)
    n_samples = check_int("n_samples", n_samples, low=256, high=1 << 22)
    seed = check_int("seed", seed, low=0)
    P, w = block_is_samples(b.size, L, d, n_samples, seed)
    f, se = _is_failure(P, w, np.sort(b)[::-1], L, d, eps1, eps2)
    return RowFailure(f, se, "importance", n_samples)


def types_failure(types, k_max, L, d, eps1, eps2, n_samples, seed):
    """Per-type failures for a list of ``(b, count)``, sharing one importance sample of the
    ``k_max`` block (its leading ``k x k`` sub-block has the law of a ``k x k`` block)."""
    out = []
    P = w = None
    for b, cnt in types:
        b = np.asarray(b, dtype=np.float64)
        if b.size == 1:
            out.append(k1_failure_quadrature(float(b[0]), L, d, eps1, eps2))
            continue
        if P is None:
            P, w = block_is_samples(k_max, L, d, n_samples, seed)
        f, se = _is_failure(P[:, :b.size, :b.size], w, b, L, d, eps1, eps2)
        out.append(RowFailure(f, se, "importance", n_samples))
    return out
