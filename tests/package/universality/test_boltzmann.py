"""Tests of sattn.universality.boltzmann: the Boltzmann operator and its properties P1-P4."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from sattn.universality.boltzmann import boltzmann, boltzmann_average, boltzmann_mp

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
