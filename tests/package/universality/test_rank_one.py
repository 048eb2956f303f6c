"""Tests of sattn.universality.rank_one: Lemma 3 and the rank-1 construction of Theorem 2."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import softmax

from sattn.universality.rank_one import (
    adaptive_lambda,
    projection_vector,
    rank_one_contextual_mapping,
    theorem2_constants,
)



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
    assert rep.ok
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
