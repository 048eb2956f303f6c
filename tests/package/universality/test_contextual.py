"""Tests of sattn.universality.contextual: separatedness and the contextual-mapping checker."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sattn.universality.contextual import (
    validate_separated,
    contextual_mapping_report,
    tokenwise_separation,
    vocabulary,
)



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
        validate_separated([X])
    with pytest.raises(ValueError, match=r"Xs\[0\]\[:, 0\] and Xs\[1\]\[:, 0\].*eps = 0.5"):
        validate_separated([np.array([[1.0, 3.0]]), np.array([[1.2, 3.0]])], eps=0.5)
    with pytest.raises(ValueError, match=r"norm 1 < r_min = 1.5"):
        validate_separated([np.array([[1.0, 3.0]])], r_min=1.5)
    with pytest.raises(ValueError, match=r"all sequences must have the same"):
        validate_separated([np.ones((1, 2)), np.ones((1, 3))])


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
