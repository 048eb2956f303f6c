"""Tests of sattn.attention against an independent implementation (scipy.special.softmax)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from sattn import attention_logits, causal_mask, row_softmax, sam, self_attention, usam


def _random_module(rng, L=7, d_hid=5, d=3, d_v=4, scale=1.0):
    X = scale * rng.standard_normal((L, d_hid))
    return X, rng.standard_normal((d_hid, d)), rng.standard_normal((d_hid, d)), rng.standard_normal((d_hid, d_v))


def test_matches_scipy_softmax():
    rng = np.random.default_rng(0)
    X, WQ, WK, WV = _random_module(rng)
    ref = softmax((X @ WQ) @ (X @ WK).T, axis=1)
    np.testing.assert_allclose(sam(X, WQ, WK), ref, rtol=1e-13, atol=0)
    np.testing.assert_allclose(self_attention(X, WQ, WK, WV), ref @ X @ WV, rtol=1e-12)
    np.testing.assert_allclose(usam(X, WQ, WK), np.exp((X @ WQ) @ (X @ WK).T), rtol=1e-13)


def test_causal_matches_masked_scipy_softmax():
    rng = np.random.default_rng(1)
    X, WQ, WK, WV = _random_module(rng, L=9)
    G = (X @ WQ) @ (X @ WK).T
    ref = softmax(np.where(np.tri(9, dtype=bool), G, -np.inf), axis=1)
    M = sam(X, WQ, WK, causal=True)
    np.testing.assert_allclose(M, ref, rtol=1e-13, atol=0)
    assert np.all(M[np.triu_indices(9, 1)] == 0.0)
    U = usam(X, WQ, WK, causal=True)
    assert np.all(U[np.triu_indices(9, 1)] == 0.0)
    np.testing.assert_allclose(self_attention(X, WQ, WK, WV, causal=True), ref @ X @ WV, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    L=st.integers(1, 12), d_hid=st.integers(1, 6), d=st.integers(1, 6),
    log_scale=st.floats(-3, 4), seed=st.integers(0, 2**32 - 1), causal=st.booleans(),
)
def test_rows_are_probability_vectors(L, d_hid, d, log_scale, seed, causal):
    rng = np.random.default_rng(seed)
    X, WQ, WK, _ = _random_module(rng, L, d_hid, d, 2, scale=10.0 ** log_scale)
    M = sam(X, WQ, WK, causal=causal)
    assert np.all(np.isfinite(M)) and np.all(M >= 0)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    if causal:
        assert np.all(M[np.triu_indices(L, 1)] == 0.0)


def test_extreme_logits_are_stable():
    # Logits of +-1e4: the softmax must neither overflow nor produce NaN.
    X = np.array([[100.0, 0.0], [0.0, 100.0], [-100.0, 0.0]])
    W = np.eye(2)
    G = attention_logits(X, W, W)
    assert G.max() == 1e4 and G.min() == -1e4
    for causal in (False, True):
        M = sam(X, W, W, causal=causal)
        assert np.all(np.isfinite(M))
        np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-15)
    M = sam(X, W, W)
    assert M[0, 0] == 1.0 and M[2, 2] == 1.0
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        row_softmax(np.array([[1e4, -1e4, 0.0]]))


def test_usam_refuses_to_overflow_and_log_form_works():
    X = np.array([[100.0, 0.0], [0.0, 1.0]])
    W = np.eye(2)
    with pytest.raises(OverflowError, match=r"G\[0, 0\] = 10000.*log=True"):
        usam(X, W, W)
    np.testing.assert_array_equal(usam(X, W, W, log=True), X @ X.T)
    Lc = usam(X, W, W, log=True, causal=True)
    assert Lc[0, 1] == -np.inf


def test_temperature_absorbed_into_WQ():
    rng = np.random.default_rng(3)
    X, WQ, WK, _ = _random_module(rng, d=4)
    standard = softmax((X @ WQ) @ (X @ WK).T / np.sqrt(4), axis=1)
    np.testing.assert_allclose(sam(X, WQ / np.sqrt(4), WK), standard, rtol=1e-13)


@pytest.mark.parametrize(
    "args, message",
    [
        ((np.ones(3), np.ones((3, 2)), np.ones((3, 2))), r"X must be a 2-D array"),
        ((np.ones((4, 3)), np.ones((2, 2)), np.ones((3, 2))), r"W_Q must have shape \(d_hid, d\) with d_hid = X.shape\[1\] = 3"),
        ((np.ones((4, 3)), np.ones((3, 2)), np.ones((2, 2))), r"W_K must have shape"),
        ((np.ones((4, 3)), np.ones((3, 2)), np.ones((3, 5))), r"same number of columns d"),
        ((np.array([[1.0, np.nan]]), np.ones((2, 1)), np.ones((2, 1))), r"X must contain only finite numbers, but X\[0, 1\] = nan"),
        ((np.ones((2, 2)), np.array([[np.inf], [0]]), np.ones((2, 1))), r"W_Q must contain only finite"),
        ((np.ones((0, 2)), np.ones((2, 1)), np.ones((2, 1))), r"X must be non-empty"),
    ],
)
def test_clear_errors(args, message):
    for fn in (usam, sam, attention_logits):
        with pytest.raises(ValueError, match=message):
            fn(*args)


def test_value_weights_checked():
    with pytest.raises(ValueError, match=r"W_V must have shape \(d_hid, d_v\)"):
        self_attention(np.ones((3, 2)), np.ones((2, 1)), np.ones((2, 1)), np.ones((3, 1)))
    with pytest.raises(TypeError, match="real numeric array"):
        sam([["a", "b"]], np.ones((2, 1)), np.ones((2, 1)))


def test_causal_mask_and_row_softmax_errors():
    np.testing.assert_array_equal(causal_mask(3), np.tri(3, dtype=bool))
    with pytest.raises(ValueError, match="L must be a positive integer"):
        causal_mask(0)
    with pytest.raises(ValueError, match="row 1 of G is entirely masked"):
        row_softmax(np.array([[0.0, -np.inf], [-np.inf, -np.inf]]))
    with pytest.raises(ValueError, match="NaN or \\+inf"):
        row_softmax(np.array([[np.nan]]))


@pytest.mark.parametrize(
    "G, exc, message",
    [
        (np.zeros((3, 0)), ValueError, r"G must be non-empty, got shape \(3, 0\)"),
        (np.zeros((0, 3)), ValueError, r"G must be non-empty, got shape \(0, 3\)"),
        ([["a", "b"]], TypeError, r"G must be a real numeric array, got dtype <U1"),
        (np.array([[1.0 + 1.0j, 0.0]]), TypeError, r"G must be real, got complex dtype"),
    ],
)
def test_row_softmax_rejects_empty_and_non_real_logits(G, exc, message):
    # Used to return an empty array, fail inside numpy's max(), or drop the imaginary part.
    with pytest.raises(exc, match=message):
        row_softmax(G)
