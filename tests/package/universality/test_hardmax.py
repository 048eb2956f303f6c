"""Tests of sattn.universality.hardmax: the hardmax counter-example, exactly."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from sattn.layers import AttentionHead, multihead_attention
from sattn.universality.contextual import (
    vocabulary,
)
from sattn.universality.hardmax import check_hardmax_counterexample, hardmax_counterexample



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
