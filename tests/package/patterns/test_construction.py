"""Tests of sattn.patterns.construction: B, the factorizations, Stiefel draws, Algorithm 1, the bound."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ks_2samp

from sattn import (
    ConstructionFailed,
    approximate,
    attention_logits,
    band_pattern,
    check_approximation,
    check_approximation_explicit,
    default_max_draws,
    draw_input,
    factorize,
    fixed_weights,
    logit_target,
    sam,
    sample_sparse,
    sample_stiefel,
    theorem1_bound,
    theorem1_constants,
)


# --------------------------------------------------------------------------- B and its properties
@settings(max_examples=50, deadline=None)
@given(L=st.integers(1, 12), k=st.integers(1, 4), gamma=st.sampled_from([1.0, 2.0, 4.0]),
       eps1=st.floats(0.01, 3), eps2=st.floats(1e-6, 0.99), seed=st.integers(0, 10**6))
def test_logit_target(L, k, gamma, eps1, eps2, seed):
    A = sample_sparse(L, min(k, L), gamma, np.random.default_rng(seed))
    B = logit_target(A, eps1, eps2)
    Delta = math.log((1 + eps1) / eps2)
    np.testing.assert_array_equal(B != 0, A > 0)
    assert B[A > 0].min() == pytest.approx(Delta) and B.max() <= Delta + math.log(gamma) + 1e-12
    # eq. (10): exp(B) on the support is A rescaled row by row
    ratio = np.where(A > 0, np.exp(B) / np.where(A > 0, A, 1.0), np.nan)
    rowwise = np.nanmax(ratio, axis=1) / np.nanmin(ratio, axis=1)
    np.testing.assert_allclose(rowwise, 1.0, rtol=1e-12)
    rep = check_approximation(B, A, eps1, eps2)
    assert rep.ok and rep.ratio_spread < 1e-12
    if rep.worst_row7 is not None:  # (7) holds with room ln(1+eps1)
        assert rep.margin7 == pytest.approx(math.log1p(eps1))


def test_fixed_weights_and_packing():
    W_Q, W_K = fixed_weights(3)
    assert W_Q.shape == W_K.shape == (6, 3)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 6))
    np.testing.assert_allclose(attention_logits(X, W_Q, W_K), X[:, :3] @ X[:, 3:].T, rtol=1e-14)


@pytest.mark.parametrize("L, d", [(1, 1), (7, 3), (50, 50)])
def test_stiefel(L, d):
    Y = sample_stiefel(L, d, np.random.default_rng(1))
    np.testing.assert_allclose(Y.T @ Y, np.eye(d), atol=1e-12)


def test_stiefel_first_moment():
    """E[Y Y^T] = (d/L) I: Monte Carlo over 3000 draws."""
    rng = np.random.default_rng(2)
    L, d = 6, 2
    P = sum(Y @ Y.T for Y in (sample_stiefel(L, d, rng) for _ in range(3000))) / 3000
    np.testing.assert_allclose(P, d / L * np.eye(L), atol=0.02)


def test_factorizations():
    A = sample_sparse(20, 3, 2.0, np.random.default_rng(3))
    B = logit_target(A, 0.5, 0.1)
    for method in ("svd", "direct"):
        D, V = factorize(B, method)
        np.testing.assert_allclose(D @ V.T, B, atol=1e-12)
        np.testing.assert_allclose(V @ V.T, np.eye(20), atol=1e-12)
        np.testing.assert_allclose(np.linalg.norm(D, axis=1), np.linalg.norm(B, axis=1), rtol=1e-12)
    with pytest.raises(ValueError, match=r"method must be one of \('svd', 'direct'\), got 'qr'"):
        factorize(B, "qr")


@pytest.mark.parametrize("method", ["svd", "direct"])
def test_full_width_gives_B_exactly(method):
    rng = np.random.default_rng(4)
    for L in (3, 17, 40):
        A = sample_sparse(L, 3, 2.0, rng)
        res = approximate(A, 0.3, 0.05, L, rng=rng, method=method)
        assert res.draws == 1
        np.testing.assert_allclose(res.G, res.B, atol=1e-10)


def test_unbiased():
    """E[X1 X2^T] = B (eq. 14), Monte Carlo; the error shrinks like 1/sqrt(n)."""
    rng = np.random.default_rng(5)
    A = sample_sparse(8, 2, 2.0, rng)
    B = logit_target(A, 1.0, 0.5)
    D, V = factorize(B)
    n, d = 4000, 3
    mean = np.zeros((8, 8))
    for _ in range(n):
        X = draw_input(D, V, d, rng)
        mean += X[:, :d] @ X[:, d:].T
    mean /= n
    assert np.abs(mean - B).max() < 0.12 * np.abs(B).max()


def _success_and_logits(method, seed, n=300):
    rng = np.random.default_rng(seed)
    A = sample_sparse(24, 2, 2.0, np.random.default_rng(0))
    B = logit_target(A, 1.0, 0.5)
    D, V = factorize(B, method)
    d = 10
    off = np.argwhere(A == 0)[0]
    vals = []
    for _ in range(n):
        X = draw_input(D, V, d, rng)
        vals.append((X[:, :d] @ X[:, d:].T)[tuple(off)])
    return np.array(vals)


def test_svd_and_direct_agree_in_distribution():
    """Seeded two-sample KS test on an off-support logit, and on the criteria margins."""
    a = _success_and_logits("svd", 10)
    b = _success_and_logits("direct", 11)
    assert ks_2samp(a, b).pvalue > 1e-3
    # The test has power: a wrong scale (sqrt(L/d) missing from both factors) is detected.
    assert ks_2samp(a, b * (10 / 24)).pvalue < 1e-3
    A = sample_sparse(30, 2, 2.0, np.random.default_rng(1))
    m = {}
    for method, seed in (("svd", 12), ("direct", 13)):
        rng = np.random.default_rng(seed)
        D, V = factorize(logit_target(A, 1.0, 0.5), method)
        m[method] = []
        for _ in range(100):
            X = draw_input(D, V, 12, rng)
            m[method].append(check_approximation(X[:, :12] @ X[:, 12:].T, A, 1.0, 0.5).margin6)
    assert ks_2samp(m["svd"], m["direct"]).pvalue > 1e-3


@settings(max_examples=25, deadline=None)
@given(L=st.integers(2, 24), k=st.integers(1, 3), seed=st.integers(0, 10**6),
       eps1=st.floats(0.2, 2), eps2=st.floats(0.01, 0.6), frac=st.floats(0.3, 1.0),
       causal=st.booleans(), method=st.sampled_from(["svd", "direct"]))
def test_whenever_it_returns_the_criteria_hold(L, k, seed, eps1, eps2, frac, causal, method):
    rng = np.random.default_rng(seed)
    A = sample_sparse(L, min(k, L), 2.0, rng)
    if causal:
        A = np.tril(A)
        A[np.arange(L), np.arange(L)] += 0.5
    d = max(1, int(frac * L))
    try:
        res = approximate(A, eps1, eps2, d, rng=rng, causal=causal, max_draws=20, method=method)
    except ConstructionFailed as exc:
        assert exc.draws == 20 and exc.d == d and exc.L == L and not exc.best.ok
        return
    assert 1 <= res.draws <= 20 and res.report.ok
    # independent re-check: explicit ratios of the SAM computed by sattn.attention
    M = sam(res.X, res.W_Q, res.W_K, causal=causal)
    explicit = check_approximation_explicit(M, A, eps1, eps2, causal=causal)
    assert explicit.ok or min(res.report.margin6, res.report.margin7) < 1e-9
    W_Q, W_K = fixed_weights(d)
    np.testing.assert_array_equal(res.W_Q, W_Q)
    np.testing.assert_array_equal(res.W_K, W_K)
    if causal:
        assert np.all(M[np.triu_indices(L, 1)] == 0)
        np.testing.assert_allclose(res.M, M, atol=1e-12)


def test_causal_check_is_weaker_than_noncausal():
    """For a lower-triangular target the causal criteria ignore the future, so every draw that
    passes the non-causal check also passes the causal one."""
    L, d = 64, 50
    A = band_pattern(L, 2, causal=True, gamma=2.0)
    D, V = factorize(logit_target(A, 3.0, 0.5))
    rng = np.random.default_rng(6)
    ok_c = ok_n = 0
    for _ in range(40):
        X = draw_input(D, V, d, rng)
        G = X[:, :d] @ X[:, d:].T
        c = check_approximation(G, A, 3.0, 0.5, causal=True).ok
        n = check_approximation(G, A, 3.0, 0.5).ok
        assert c or not n
        ok_c, ok_n = ok_c + c, ok_n + n
    assert ok_c > ok_n


def test_budget_exhausted_raises_clear_error():
    A = sample_sparse(64, 4, 2.0, np.random.default_rng(0))
    with pytest.raises(ConstructionFailed, match=r"all 5 draws at d = 2 \(L = 64\) failed.*larger d") as info:
        approximate(A, 0.1, 0.01, 2, rng=np.random.default_rng(0), max_draws=5)
    assert info.value.draws == 5 and isinstance(info.value, RuntimeError)


def _bound_r5(L, k, gamma, eps1, eps2):
    """Bound (con-eq-bound) of Theorem 1' (chapters/04_construction.md, :prf:ref:`con-thm-1prime`)
    with the constants (con-eq-constants), written out again here in 60-digit arithmetic: an
    independent evaluation of the statement, exact up to the ceiling."""
    with mpmath.workdps(60):
        eps1, eps2, gamma = mpmath.mpf(eps1), mpmath.mpf(eps2), mpmath.mpf(gamma)
        delta = mpmath.log(1 + eps1) / 2
        R = mpmath.log(gamma * (1 + eps1) / eps2)
        eps = delta / (mpmath.sqrt(k) * R)
        x = 4 * mpmath.log(3 * L) / (eps ** 2 / 2 - eps ** 3 / 3)
        assert abs(x - mpmath.nint(x)) > mpmath.mpf(10) ** -9, "too close to an integer to judge"
        return int(mpmath.ceil(x))


@pytest.mark.parametrize("k,gamma,eps1,eps2", [(1, 1, 0.5, 0.1), (2, 2, 1.0, 0.5), (2, 2, 0.5, 0.1),
                                               (4, 2, 1.0, 0.1), (3, 1.5, 0.25, 0.9)])
def test_theorem1_bound_is_the_theorem_s_formula(k, gamma, eps1, eps2):
    for L in (k, 512, 1024, 3072, 10**6):   # the theorem asks 1 <= k <= L
        assert theorem1_bound(L, k, gamma, eps1, eps2) == _bound_r5(L, k, gamma, eps1, eps2)


def test_theorem1_constants_in_closed_form():
    # k = 2, gamma = 2, eps1 = 1, eps2 = 1/2: delta = ln(2)/2, Delta = ln 4, R = ln 8 = 3 ln 2, so
    # eps = (ln(2)/2) / (sqrt(2) 3 ln 2) = 1 / (6 sqrt 2) exactly
    c = theorem1_constants(512, 2, 2, 1.0, 0.5)
    assert c.delta == pytest.approx(math.log(2) / 2, rel=1e-15)
    assert c.Delta == pytest.approx(math.log(4), rel=1e-15)
    assert c.R == pytest.approx(3 * math.log(2), rel=1e-15)
    assert c.eps == pytest.approx(1 / (6 * math.sqrt(2)), rel=1e-14)
    assert c.d == theorem1_bound(512, 2, 2, 1.0, 0.5) == _bound_r5(512, 2, 2, 1.0, 0.5)


def test_default_max_draws():
    assert default_max_draws(100) == 100 and default_max_draws(100, 0.25) == 25 and default_max_draws(3, 0.1) == 1


def test_bound_is_logarithmic_in_L():
    d = [theorem1_bound(L, 2, 2.0, 1.0, 0.5) for L in (10**3, 10**6, 10**9)]
    # d ~ C ln(3L): equal increments for equal ratios of L
    assert abs((d[2] - d[1]) - (d[1] - d[0])) <= 2


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        (dict(A=-np.eye(3)), ValueError, r"A must be nonnegative, but A\[0, 0\] = -1 \(expected >= 0\)"),
        (dict(A=np.array([[1.0, np.nan], [0, 1]])), ValueError, r"A must contain only finite numbers, but A\[0, 1\] = nan"),
        (dict(A=np.array([[1.0, np.inf], [0, 1]])), ValueError, r"A must contain only finite numbers, but A\[0, 1\] = inf"),
        (dict(A=np.ones((2, 3))), ValueError, r"A must be square, got shape \(2, 3\)"),
        (dict(A=np.array([[1.0, 0], [0, 0]])), ValueError, r"row 1 of A has no nonzero entry"),
        (dict(eps1=0.0), ValueError, r"eps1 must lie in \(0, inf\], got 0"),
        (dict(eps1=np.nan), ValueError, r"eps1 must be finite, got nan"),
        (dict(eps2=1.0), ValueError, r"eps2 must lie in \(0, 1\), got 1"),
        (dict(eps2=0.0), ValueError, r"eps2 must lie in \(0, 1\), got 0"),
        (dict(d=0), ValueError, r"d must lie in \[1, 3\], got 0"),
        (dict(d=4), ValueError, r"d must lie in \[1, 3\], got 4"),
        (dict(d=2.0), TypeError, r"d must be an integer, got 2.0"),
        (dict(max_draws=0), ValueError, r"max_draws must lie in \[1, inf\], got 0"),
        (dict(method="qr"), ValueError, r"method must be one of"),
        (dict(rng=1), TypeError, r"rng must be a numpy.random.Generator"),
        (dict(A=np.ones((3, 3)), causal=True), ValueError,
         r"causal=True needs a lower-triangular target: A\[0, 1\] = 1 is nonzero above the diagonal"),
    ],
)
def test_bad_input(kwargs, exc, message):
    args = dict(A=np.eye(3), eps1=0.5, eps2=0.1, d=2, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(exc, match=message):
        approximate(args.pop("A"), args.pop("eps1"), args.pop("eps2"), args.pop("d"), **args)


@pytest.mark.parametrize(
    "args, message",
    [
        ((1, 1, 1.0, 0.5, 0.1), None),
        ((10, 0, 1.0, 0.5, 0.1), r"k must lie in \[1, 10\], got 0"),
        ((10, 11, 1.0, 0.5, 0.1), r"k must lie in \[1, 10\], got 11"),
        ((10, 2, 0.9, 0.5, 0.1), r"gamma must lie in \[1, inf\], got 0.9"),
        ((10, 2, 1.0, -1.0, 0.1), r"eps1 must lie in \(0, inf\]"),
        ((10, 2, 1.0, 0.5, 2.0), r"eps2 must lie in \(0, 1\), got 2"),
        ((0, 1, 1.0, 0.5, 0.1), r"L must lie in \[1, inf\], got 0"),
    ],
)
def test_bound_bad_input(args, message):
    if message is None:
        assert theorem1_bound(*args) > 0
    else:
        with pytest.raises(ValueError, match=message):
            theorem1_bound(*args)


def test_sample_stiefel_bad_input():
    with pytest.raises(ValueError, match=r"d must lie in \[1, 3\], got 4"):
        sample_stiefel(3, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"d must lie in \[1, inf\], got 0"):
        fixed_weights(0)
