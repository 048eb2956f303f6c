"""Tests of sattn.contextual: Boltzmann operator, separatedness, hardmax counter-example, Theorem 2."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from sattn.attention import AttentionHead, multihead_attention
from sattn.contextual import (
    adaptive_lambda,
    boltzmann,
    boltzmann_average,
    boltzmann_mp,
    check_hardmax_counterexample,
    check_separated,
    contextual_mapping_report,
    hardmax_counterexample,
    projection_vector,
    rank_one_contextual_mapping,
    theorem2_constants,
    tokenwise_separation,
    vocabulary,
)

vectors = st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=8).map(np.array)


# ---------------------------------------------------------------- Boltzmann operator
@given(vectors)
@settings(max_examples=200, deadline=None)
def test_boltzmann_matches_scipy_softmax(a):
    assert boltzmann(a) == pytest.approx(float(a @ softmax(a)), rel=1e-12, abs=1e-12)


@given(vectors, st.floats(-20, 20, allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_p1_shift(a, c):
    assert boltzmann(a + c) == pytest.approx(boltzmann(a) + c, rel=1e-9, abs=1e-9)


@given(vectors)
@settings(max_examples=200, deadline=None)
def test_p2_entropy_identity_and_bounds(a):
    p = softmax(a)
    lse = float(np.log(np.sum(np.exp(a - a.max()))) + a.max())
    H = -float(np.sum(p[p > 0] * np.log(p[p > 0])))
    assert boltzmann(a) == pytest.approx(lse - H, rel=1e-9, abs=1e-9)
    assert a.max() - math.log(a.size) - 1e-9 <= boltzmann(a) <= a.max() + 1e-9


@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=6).map(np.array),
       st.floats(-5, 5), st.floats(0.01, 3))
@settings(max_examples=200, deadline=None)
def test_p3_monotone_in_temperature(a, t, dt):
    lo, hi = boltzmann_average(a, t), boltzmann_average(a, t + dt)
    assert hi >= lo - 1e-12
    assert boltzmann_average(a, 0.0) == pytest.approx(a.mean(), abs=1e-12)


def test_p3_limits_and_derivative_is_variance():
    a = np.array([0.3, -1.2, 2.5, 0.9])
    assert boltzmann_average(a, 1e4) == pytest.approx(a.max())
    assert boltzmann_average(a, -1e4) == pytest.approx(a.min())
    t, h = 0.7, 1e-6
    w = softmax(t * a)
    var = float(w @ a**2 - (w @ a) ** 2)
    deriv = (boltzmann_average(a, t + h) - boltzmann_average(a, t - h)) / (2 * h)
    assert deriv == pytest.approx(var, rel=1e-6)


@given(st.integers(2, 6), st.floats(1.0, 8.0))
@settings(max_examples=100, deadline=None)
def test_p4_large_gaps(n, gap):
    a = -gap * np.arange(n, dtype=float)
    assert 0 <= a[0] - boltzmann(a) <= (n - 1) * gap * math.exp(-gap) + 1e-12


def test_boltzmann_overflow_safe_and_mp_agrees():
    a = np.array([1e4, 1e4 - 3.0, -2e4])
    assert np.isfinite(boltzmann(a))
    assert float(boltzmann_mp(a, dps=40)) == pytest.approx(boltzmann(a), rel=1e-14)


def test_lemma2_on_adversarial_grid():
    rng = np.random.default_rng(3)
    for n in (2, 3, 4):
        g = 2 * math.log(n) + 3
        grid = g * np.arange(-2 * n, 2 * n + 1)
        r = float(np.abs(grid).max()) + 1e-9
        bound = mpmath.mpf(math.log(n)) ** 2 * mpmath.exp(-2 * r)
        for _ in range(100):
            a = rng.choice(grid, n, replace=False)
            b = rng.choice(grid, n, replace=False)
            if set(a) == set(b):
                continue
            diff = abs(boltzmann_mp(a, dps=80) - boltzmann_mp(b, dps=80))
            assert diff > bound


# ---------------------------------------------------------------- separatedness
def test_separation_report_and_vocabulary():
    X1 = np.array([[1.0, 0.0, 3.0], [0.0, 2.0, 0.0]])
    X2 = np.array([[3.0, 1.0, 1.0], [0.0, 0.0, 0.5]])
    rep = tokenwise_separation([X1, X2])
    assert rep.r_min == pytest.approx(1.0) and rep.r_max == pytest.approx(3.0)
    assert rep.eps == pytest.approx(0.5) and rep.vocabulary_size == 4
    assert set(rep.eps_pair) == {(0, 0), (1, 2)}
    assert not rep.has_duplicates
    assert vocabulary(X1) == {(1.0, 0.0), (0.0, 2.0), (3.0, 0.0)}


def test_check_separated_errors_name_culprit():
    X = np.array([[1.0, 2.0, 1.0]])
    with pytest.raises(ValueError, match=r"sequence 0 has a duplicate token: columns 0 and 2"):
        check_separated([X])
    with pytest.raises(ValueError, match=r"Xs\[0\]\[:, 0\] and Xs\[1\]\[:, 0\].*eps = 0.5"):
        check_separated([np.array([[1.0, 3.0]]), np.array([[1.2, 3.0]])], eps=0.5)
    with pytest.raises(ValueError, match=r"norm 1 < r_min = 1.5"):
        check_separated([np.array([[1.0, 3.0]])], r_min=1.5)
    with pytest.raises(ValueError, match=r"all sequences must have the same"):
        check_separated([np.ones((1, 2)), np.ones((1, 3))])


# ---------------------------------------------------------------- contextual mapping checker
def test_identity_map_is_not_contextual_but_separates_tokens():
    X1 = np.array([[1.0, 2.0]])
    X2 = np.array([[1.0, 3.0]])
    rep = contextual_mapping_report([X1, X2], [X1, X2])
    assert rep.min_distance_same_token == 0.0
    assert rep.worst_pair == ((0, 0), (1, 0))
    assert rep.min_distance_different_tokens == pytest.approx(1.0)


def test_permuted_sequences_need_no_separation():
    X1 = np.array([[1.0, 2.0]])
    rep = contextual_mapping_report([X1, X1[:, ::-1]], [X1, X1[:, ::-1]])
    assert rep.min_distance_same_token == math.inf  # same vocabulary: nothing to separate


# ---------------------------------------------------------------- hardmax counter-example
def test_counterexample_sets_share_min_max_mean():
    X1, X2 = hardmax_counterexample()
    for f in (np.min, np.max, np.mean):
        assert f(X1) == f(X2)
    assert vocabulary(X1) != vocabulary(X2)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_counterexample_exact(d):
    rep = check_hardmax_counterexample(np.random.default_rng(d), trials=150, d=d)
    assert rep.mismatches == 0
    assert rep.zero_key_trials > 0 and rep.tied_trials > 0
    assert rep.softmax_gap > 0.1
    assert rep.softmax_outputs[0] == pytest.approx(5.6485, abs=1e-4)
    assert rep.softmax_outputs[1] == pytest.approx(5.4242, abs=1e-4)


def test_counterexample_check_can_fail_on_other_sets():
    # sets with different means: a W_K = 0 head (plain mean) separates them
    X1 = [[1, 2, 5, 6]]
    X2 = [[1, 3, 5, 6]]
    head = AttentionHead(np.ones((1, 1)), np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
    Y1 = multihead_attention(X1, [head], kind="hardmax", exact=True)
    Y2 = multihead_attention(X2, [head], kind="hardmax", exact=True)
    assert Y1[0, 0] != Y2[0, 0]
    assert Y1[0, 0] == 1 + Fraction(14, 4)


# ---------------------------------------------------------------- Lemma 3, Theorem 2
def test_projection_vector_property_on_all_pairs():
    rng = np.random.default_rng(0)
    P = rng.standard_normal((12, 4))
    v, rep = projection_vector(P, rng)
    assert np.linalg.norm(v) == pytest.approx(1.0)
    for x, y in itertools.combinations(P, 2):
        assert abs(v @ (x - y)) >= rep.bound * np.linalg.norm(x - y) - 1e-15
    with pytest.raises(ValueError, match="rows 0 and 2 are equal"):
        projection_vector(np.array([[1.0, 0], [0, 1], [1, 0]]), rng)


def test_theorem2_constants_table():
    c = theorem2_constants(2, 3, 1, 0.9, 0.9, 3.1)
    assert c.lam == pytest.approx(544.4, rel=1e-3)
    assert c.log10_delta == pytest.approx(-4548.8, abs=0.1)
    c = theorem2_constants(3, 5, 2, 0.864, 1.071, 1.492)
    assert c.lam == pytest.approx(5717, rel=1e-3)
    # delta from its closed form in the spec agrees with the composed one
    n, V, d, eps, rmin, rmax = 3, 5, 2, 0.864, 1.071, 1.492
    K = (V + 1) ** 4 * (2 * math.log(n) + 3) * math.pi * d
    ln_delta = math.log(2 * math.log(n) ** 2 * eps**2 * rmin / (rmax**2 * K)) - K * rmax**2 / (4 * eps * rmin)
    assert c.log10_delta == pytest.approx(ln_delta / math.log(10), rel=1e-12)


def _dataset(rng, V=5, d=2, n=3):
    P = rng.standard_normal((V, d))
    P *= rng.uniform(1.0, 1.5, (V, 1)) / np.linalg.norm(P, axis=1, keepdims=True)
    return [P[list(c)].T for c in itertools.combinations(range(V), n)]


def test_rank_one_weights_are_rank_one_and_match_formula():
    rng = np.random.default_rng(5)
    Xs = _dataset(rng)
    m = rank_one_contextual_mapping(Xs, rng, lam=2.0, s=3)
    for W in (m.head.W_Q, m.head.W_K, m.head.W_V, m.head.W_O):
        assert np.linalg.matrix_rank(W) == 1
    X = Xs[4]
    a = m.v @ X
    expected = X + m.scale * np.outer(m.v, [a @ softmax(m.lam * ak * a) for ak in a])
    np.testing.assert_allclose(m(X), expected, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(m.boltzmann_values(X), [a @ softmax(m.lam * ak * a) for ak in a], rtol=1e-13)


@pytest.mark.parametrize("lam", [0.1, 1.0, 3.0])
def test_float64_and_mpmath_separations_agree(lam):
    rng = np.random.default_rng(11)
    Xs = _dataset(rng)
    m = rank_one_contextual_mapping(Xs, rng, lam=lam)
    f = m.verify(Xs)
    h = m.verify(Xs, dps=50)
    assert f.log10_min_distance_same_token == pytest.approx(h.log10_min_distance_same_token, abs=1e-4)
    assert f.min_distance_different_tokens == pytest.approx(h.min_distance_different_tokens)


def test_theorem_lambda_in_high_precision_meets_delta():
    Xs = [np.array([[1.0, 2.0]]), np.array([[1.0, 3.0]]), np.array([[2.0, 3.0]])]
    m = rank_one_contextual_mapping(Xs, np.random.default_rng(0))
    assert m.lam == pytest.approx(m.constants.lam)
    rep = m.verify(Xs, dps="auto")
    assert rep.holds
    assert rep.log10_min_distance_same_token > m.constants.log10_delta
    assert rep.max_norm <= m.constants.r
    assert rep.min_distance_different_tokens > m.constants.eps / 2
    # float64 loses the same-token separation at this lambda (underflow)
    assert m.verify(Xs).min_distance_same_token == 0.0


def test_adaptive_lambda_in_high_precision_separates():
    rng = np.random.default_rng(1)
    Xs = _dataset(rng)
    m = rank_one_contextual_mapping(Xs, rng, lam="adaptive")
    a = np.array(m.vocab) @ m.v
    s = np.sort(a)
    assert m.lam * np.abs(a).min() * np.diff(s).min() == pytest.approx(2 * math.log(3) + 3)
    assert m.lam < m.constants.lam
    rep = m.verify(Xs, dps="auto")
    assert rep.min_distance_different_tokens > m.constants.eps / 2
    assert rep.log10_min_distance_same_token > -1000 and math.isfinite(rep.log10_min_distance_same_token)
    with pytest.raises(ValueError, match="projections must be nonzero"):
        adaptive_lambda([0.0, 1.0], 2)


def test_rank_one_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"sequence 1 has a duplicate token: columns 0 and 1"):
        rank_one_contextual_mapping([np.array([[1.0, 2.0]]), np.array([[3.0, 3.0]])], rng)
    with pytest.raises(ValueError, match=r"Xs\[0\]\[:, 1\] is the zero vector.*r_min > 0"):
        rank_one_contextual_mapping([np.array([[1.0, 0.0]]), np.array([[1.0, 2.0]])], rng)
    with pytest.raises(ValueError, match=r"n >= 2"):
        rank_one_contextual_mapping([np.array([[1.0]])], rng)
    with pytest.raises(ValueError, match="lam must be"):
        rank_one_contextual_mapping([np.array([[1.0, 2.0]])], rng, lam="big")
    with pytest.raises(ValueError, match=r"not eps-separated"):
        rank_one_contextual_mapping([np.array([[1.0, 2.0]]), np.array([[1.05, 3.0]])], rng, eps=0.5)
    with pytest.raises(ValueError, match=r"single 2-D array"):
        rank_one_contextual_mapping(np.ones((2, 3)), rng)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        rank_one_contextual_mapping([np.array([[1.0, 2.0]])], 0)
