"""Tests of sattn.patterns.optimize: optimized and moment-curve logits, and the width bisection."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sattn import (
    check_approximation,
    check_approximation_explicit,
    logit_target,
    permutation_pattern,
    row_softmax,
    sample_sparse,
)
from sattn.patterns.optimize import moment_curve_logits, optimize_logits, smallest_width


# --------------------------------------------------------------------------- optimize_logits
@settings(max_examples=25, deadline=None)
@given(L=st.integers(2, 14), k=st.integers(1, 3), gamma=st.sampled_from([1.0, 2.0, 4.0]),
       eps1=st.floats(0.1, 2.0), eps2=st.floats(0.01, 0.9), d=st.integers(1, 6),
       seed=st.integers(0, 10**6))
def test_claimed_success_passes_an_independent_check(L, k, gamma, eps1, eps2, d, seed):
    A = sample_sparse(L, min(k, L), gamma, np.random.default_rng(seed))
    d = min(d, L)
    res = optimize_logits(A, eps1, eps2, d, rng=np.random.default_rng(seed + 1), restarts=2,
                          maxiter=100)
    assert res.Q.shape == res.K.shape == (L, d) and res.X.shape == (L, 2 * d)
    G = res.Q @ res.K.T
    np.testing.assert_allclose(res.G, G)
    rep = check_approximation(G, A, eps1, eps2)
    assert res.ok == rep.ok == res.report.ok
    if res.ok:
        # and the literal ratio test on the softmax agrees (well-scaled small cases only)
        if np.ptp(G, axis=1).max() < 500:
            assert check_approximation_explicit(row_softmax(G), A, eps1, eps2).ok
    assert 1 <= res.starts <= 2 and len(res.iterations) == res.starts


@settings(max_examples=20, deadline=None)
@given(L=st.integers(1, 16), k=st.integers(1, 4), gamma=st.sampled_from([1.0, 3.0]),
       eps1=st.floats(0.05, 3.0), eps2=st.floats(1e-4, 0.99), seed=st.integers(0, 10**6))
def test_full_width_always_succeeds(L, k, gamma, eps1, eps2, seed):
    A = sample_sparse(L, min(k, L), gamma, np.random.default_rng(seed))
    res = optimize_logits(A, eps1, eps2, L, rng=np.random.default_rng(0), restarts=1,
                          margin=0.5 * math.log1p(eps1))
    assert res.ok and res.starts == 1
    # the start is rounded to a 24-bit grid (a defined start), so G is B to about that accuracy
    B = logit_target(A, eps1, eps2)
    np.testing.assert_allclose(res.G, B, rtol=0, atol=2 ** -18 * max(1.0, np.abs(B).max()))


def test_width_one_cannot_realize_a_permutation():
    # At d = 1, row l's logits q_l k_j are monotone in k_j, so the top column of every row is the
    # largest or the smallest k_j: at most two rows of a permutation can be served.
    A = permutation_pattern(8, np.random.default_rng(0))
    res = optimize_logits(A, 0.5, 0.1, 1, rng=np.random.default_rng(1), restarts=3)
    assert not res.ok and res.starts == 3
    assert min(res.report.margin6, res.report.margin7) < 0


def test_permutation_at_width_two():
    A = permutation_pattern(12, np.random.default_rng(3))
    res = optimize_logits(A, 0.5, 0.1, 2, rng=np.random.default_rng(4), restarts=4)
    assert res.ok


def test_optimizer_is_deterministic_given_the_generator():
    A = sample_sparse(20, 2, 2.0, np.random.default_rng(5))
    r1 = optimize_logits(A, 1.0, 0.5, 3, rng=np.random.default_rng(6), restarts=2, maxiter=50)
    r2 = optimize_logits(A, 1.0, 0.5, 3, rng=np.random.default_rng(6), restarts=2, maxiter=50)
    np.testing.assert_array_equal(r1.Q, r2.Q)
    assert r1.report == r2.report


def test_gradient_matches_finite_differences():
    from sattn.patterns.optimize import _HingeLoss

    A = sample_sparse(7, 2, 2.0, np.random.default_rng(7))
    f = _HingeLoss(A, 0.5, 0.2, 3, 0.01)
    theta = np.random.default_rng(8).standard_normal(2 * 7 * 3)
    loss, grad = f(theta)
    assert loss > 0
    h = 1e-6
    num = np.array([(f(theta + h * e)[0] - f(theta - h * e)[0]) / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"A": -np.eye(3)}, ValueError, r"A must be nonnegative.*A\[0, 0\]"),
        ({"A": np.zeros((3, 3))}, ValueError, "row 0 of A has no nonzero"),
        ({"A": np.ones((2, 3))}, ValueError, "A must be square"),
        ({"d": 0}, ValueError, r"d must lie in \[1, 4\], got 0"),
        ({"d": 5}, ValueError, r"d must lie in \[1, 4\], got 5"),
        ({"d": 2.0}, TypeError, "d must be an integer"),
        ({"eps1": 0.0}, ValueError, r"eps1 must lie in \(0"),
        ({"eps2": 1.0}, ValueError, r"eps2 must lie in \(0, 1\)"),
        ({"rng": 0}, TypeError, "rng must be a numpy.random.Generator"),
        ({"restarts": 0}, ValueError, "restarts must lie in"),
        ({"maxiter": 0}, ValueError, "maxiter must lie in"),
        ({"margin": 1.0}, ValueError, r"margin must lie in \[0, ln\(1 \+ eps1\)\)"),
        ({"margin": -0.1}, ValueError, "margin must lie in"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = {"A": np.eye(4), "eps1": 0.5, "eps2": 0.1, "d": 2, "rng": np.random.default_rng(0)}
    args.update(kwargs)
    A, eps1, eps2, d = args.pop("A"), args.pop("eps1"), args.pop("eps2"), args.pop("d")
    with pytest.raises(exc, match=match):
        optimize_logits(A, eps1, eps2, d, **args)


# --------------------------------------------------------------------------- moment curve
@settings(max_examples=30, deadline=None)
@given(L=st.integers(2, 40), k=st.integers(1, 3), gamma=st.sampled_from([1.0, 2.0, 4.0]),
       eps1=st.floats(0.1, 2.0), eps2=st.floats(1e-3, 0.9), seed=st.integers(0, 10**6))
def test_moment_curve_width_2k_plus_1(L, k, gamma, eps1, eps2, seed):
    A = sample_sparse(L, min(k, L), gamma, np.random.default_rng(seed))
    kk = int((A > 0).sum(axis=1).max())
    res = moment_curve_logits(A, eps1, eps2)
    assert res.d == 2 * kk + 1 and res.Q.shape == (L, 2 * kk + 1) and res.method == "moment-curve"
    assert res.ok and res.report.ok
    assert check_approximation(res.Q @ res.K.T, A, eps1, eps2).ok
    # on the support the logits are ln A (criterion (6) with spread 0)
    S = A > 0
    scale = max(1.0, float(np.abs(res.Q).max()))
    np.testing.assert_allclose(res.G[S], np.log(A[S]), atol=1e-9 * scale)


def test_moment_curve_custom_nodes_and_errors():
    A = permutation_pattern(6, np.random.default_rng(0))
    res = moment_curve_logits(A, 0.5, 0.01, nodes=np.linspace(0, 1, 6))
    assert res.d == 3 and res.ok
    with pytest.raises(ValueError, match="nodes must be distinct"):
        moment_curve_logits(A, 0.5, 0.01, nodes=[0, 0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="nodes must have length 6"):
        moment_curve_logits(A, 0.5, 0.01, nodes=[0, 1])
    with pytest.raises(ValueError, match="eps2 must lie in"):
        moment_curve_logits(A, 0.5, 0.0)


def test_moment_curve_overflow_is_an_error_not_nan():
    A = np.eye(4)[[1, 0, 3, 2]]
    with pytest.raises(FloatingPointError, match="overflow float64"):
        moment_curve_logits(A, 0.5, 0.1, nodes=[0.0, 1e-170, 1.0, 2.0])


def test_moment_curve_reports_float64_breakdown_honestly():
    A = sample_sparse(1024, 3, 2.0, np.random.default_rng(1024))
    res = moment_curve_logits(A, 1.0, 0.5)
    assert not res.ok and not check_approximation(res.G, A, 1.0, 0.5).ok


# --------------------------------------------------------------------------- smallest_width
@given(threshold=st.integers(1, 60), low=st.integers(1, 5), high=st.integers(5, 64))
def test_bisection_finds_the_threshold_of_a_monotone_predicate(threshold, low, high):
    calls = []

    def succeeds(d):
        calls.append(d)
        return d >= threshold

    ws = smallest_width(succeeds, low, high)
    if threshold > high:
        assert ws.d is None and ws.tried == ((high, False),)
    else:
        assert ws.d == max(threshold, low)
    assert [d for d, _ in ws.tried] == calls
    assert len(calls) <= math.ceil(math.log2(high - low + 2)) + 1


def test_bisection_errors():
    with pytest.raises(TypeError, match="succeeds must be callable"):
        smallest_width(3, 1, 4)
    with pytest.raises(ValueError, match=r"high must lie in \[4, inf\], got 2"):
        smallest_width(lambda d: True, 4, 2)
    with pytest.raises(ValueError, match="low must lie in"):
        smallest_width(lambda d: True, 0, 2)
