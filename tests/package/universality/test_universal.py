"""Tests of sattn.universality.universal: the quantizer and the T_2 approximation."""

from __future__ import annotations

import numpy as np
import pytest

from sattn.layers import feed_forward
from sattn.universality.universal import quantizer_ffn, two_layer_approximation


def test_quantizer_is_a_staircase():
    K = 5
    ffn = quantizer_ffn(K, ramp=1e-3)
    x = np.array([[0.0, 0.1, 0.25, 0.39, 0.41, 0.999, 1.0]])
    np.testing.assert_allclose(feed_forward(x, ffn), [[1, 1, 2, 2, 3, 5, 5]], atol=1e-12)


def test_two_layer_error_shrinks_with_grid():
    f = lambda X: np.sin(np.pi * X) * (1 + X.mean(axis=2, keepdims=True))  # noqa: E731
    errs = []
    for K in (2, 4, 8, 16):
        model, rep = two_layer_approximation(f, 2, K, np.random.default_rng(1), samples=2000)
        assert rep.max_memorization_error < 1e-8
        assert rep.dp_error < 1.05 * rep.dp_quantization + 1e-3
        errs.append(rep.dp_error)
        X = np.array([[0.3, 0.71]])
        np.testing.assert_allclose(model(X), model.batch(X[None])[0], atol=1e-12)
    assert all(b < 0.6 * a for a, b in zip(errs, errs[1:]))


def test_two_layer_rejects_non_equivariant_target():
    f = lambda X: X * np.arange(1, X.shape[2] + 1)  # noqa: E731  (depends on position)
    with pytest.raises(ValueError, match="not permutation-equivariant"):
        two_layer_approximation(f, 2, 3, np.random.default_rng(0))
