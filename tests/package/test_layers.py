"""Tests of the column-convention layers of sattn.attention (Part II)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from sattn.layers import (
    AttentionHead,
    FeedForward,
    column_softmax,
    feed_forward,
    hardmax,
    multihead_attention,
    transformer_block,
)


def _heads(rng, d, h=2, s=3, scale=1.0):
    return [AttentionHead(*(scale * rng.standard_normal(sh) for sh in ((s, d), (s, d), (s, d), (d, s))))
            for _ in range(h)]


def test_softmax_attention_matches_independent_loop():
    rng = np.random.default_rng(0)
    d, n = 4, 5
    Z = rng.standard_normal((d, n))
    heads = _heads(rng, d)
    expected = Z.copy()
    for hd in heads:
        for k in range(n):
            scores = np.array([(hd.W_K @ Z[:, l]) @ (hd.W_Q @ Z[:, k]) for l in range(n)])
            w = softmax(scores)
            expected[:, k] += hd.W_O @ hd.W_V @ (Z @ w)
    np.testing.assert_allclose(multihead_attention(Z, heads), expected, rtol=1e-12, atol=1e-12)


@given(st.integers(0, 10_000), st.sampled_from(["softmax", "hardmax"]))
@settings(max_examples=50, deadline=None)
def test_permutation_equivariance(seed, kind):
    rng = np.random.default_rng(seed)
    d, n = 3, 6
    Z = rng.standard_normal((d, n))
    heads = _heads(rng, d)
    perm = rng.permutation(n)
    ffn = FeedForward(rng.standard_normal((7, d)), rng.standard_normal(7), rng.standard_normal((d, 7)),
                      rng.standard_normal(d))
    np.testing.assert_allclose(multihead_attention(Z[:, perm], heads, kind=kind),
                               multihead_attention(Z, heads, kind=kind)[:, perm], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(transformer_block(Z[:, perm], heads, ffn),
                               transformer_block(Z, heads, ffn)[:, perm], rtol=1e-10, atol=1e-10)


def test_hardmax_splits_ties_equally_exact_and_float():
    A = np.array([[1.0, 0.0], [3.0, 0.0], [3.0, -1.0]])
    np.testing.assert_array_equal(hardmax(A), [[0, 0.5], [0.5, 0.5], [0.5, 0]])
    E = hardmax(np.array([[Fraction(1, 3), 2], [Fraction(1, 3), 1], [0, 2]], dtype=object))
    assert list(E[:, 0]) == [Fraction(1, 2), Fraction(1, 2), 0]
    assert list(E[:, 1]) == [Fraction(1, 2), 0, Fraction(1, 2)]


def test_exact_hardmax_equals_float_hardmax_without_ties():
    rng = np.random.default_rng(1)
    Z = rng.integers(-5, 6, (2, 5))
    heads = [AttentionHead(*(rng.integers(-3, 4, sh) for sh in ((2, 2), (2, 2), (2, 2), (2, 2))))]
    exact = multihead_attention(Z, heads, kind="hardmax", exact=True)
    approx = multihead_attention(Z.astype(float), heads, kind="hardmax")
    np.testing.assert_allclose(exact.astype(float), approx, atol=1e-12)


def test_large_logits_do_not_overflow():
    Z = np.array([[30.0, -30.0, 10.0]])
    h = AttentionHead(np.ones((1, 1)), 100 * np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
    out = multihead_attention(Z, [h])
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(column_softmax([[1000.0], [0.0]]), [[1.0], [0.0]])


def test_feed_forward_formula():
    rng = np.random.default_rng(2)
    H = rng.standard_normal((3, 4))
    W1, b1, W2, b2 = rng.standard_normal((5, 3)), rng.standard_normal(5), rng.standard_normal((3, 5)), rng.standard_normal(3)
    exp = np.stack([H[:, k] + W2 @ np.maximum(W1 @ H[:, k] + b1, 0) + b2 for k in range(4)], axis=1)
    np.testing.assert_allclose(feed_forward(H, (W1, b1, W2, b2)), exp, rtol=1e-12)


def test_layer_bad_input_names_the_problem():
    Z = np.ones((3, 4))
    good = AttentionHead(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 2)))
    bad = AttentionHead(np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"heads\[1\]\.W_K must have shape \(s, d\) = \(2, 3\)"):
        multihead_attention(Z, [good, bad])
    with pytest.raises(ValueError, match=r"kind must be one of"):
        multihead_attention(Z, [good], kind="sparsemax")
    with pytest.raises(ValueError, match=r"exact=True needs kind='hardmax'"):
        multihead_attention(Z, [good], exact=True)
    with pytest.raises(ValueError, match=r"Z must be a 2-D array"):
        multihead_attention(np.ones(3), [good])
    with pytest.raises(ValueError, match=r"at least one head"):
        multihead_attention(Z, [])
    with pytest.raises(ValueError, match=r"ffn.W2 must have shape \(d, q\) = \(3, 5\)"):
        feed_forward(Z, (np.ones((5, 3)), np.ones(5), np.ones((5, 3)), np.ones(3)))
    with pytest.raises(ValueError, match=r"ffn.W1 must have 3 columns"):
        feed_forward(Z, (np.ones((5, 2)), np.ones(5), np.ones((3, 5)), np.ones(3)))
