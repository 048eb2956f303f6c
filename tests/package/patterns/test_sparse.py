"""Tests of sattn.patterns.sparse: validators, the two-pass sampler (against a literal reference loop), patterns."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency

from sattn import (
    PatternError,
    band_pattern,
    block_pattern,
    check_gamma_variation_bounded,
    check_k_nonzero_bounded,
    check_lower_triangular,
    check_right_stochastic,
    pattern_parameters,
    permutation_pattern,
    validate_gamma_variation_bounded,
    validate_k_nonzero_bounded,
    validate_lower_triangular,
    validate_right_stochastic,
    sample_sparse,
    strided_pattern,
)


def reference_sample(L, k, gamma, rng):
    """The spec's literal two-pass double loop (Section 8.1), without normalisation."""
    A = np.zeros((L, L))
    rc = np.zeros(L)
    cc = np.zeros(L)
    for i in rng.permutation(L):
        for j in rng.permutation(L):
            if A[i, j] == 0 and rc[i] < k and cc[j] < k:
                A[i, j] = 1 if rng.random() < 0.5 else gamma
                rc[i] += 1
                cc[j] += 1
    for j in rng.permutation(L):
        for i in rng.permutation(L):
            if A[i, j] == 0 and rc[i] < k and cc[j] < k:
                A[i, j] = 1 if rng.random() < 0.5 else gamma
                rc[i] += 1
                cc[j] += 1
    return A


# --------------------------------------------------------------------------- validators
def naive_counts(A):
    return (A != 0).sum(axis=1), (A != 0).sum(axis=0)


@settings(max_examples=80, deadline=None)
@given(L=st.integers(1, 9), k=st.integers(1, 9), density=st.floats(0, 1), seed=st.integers(0, 10**6))
def test_k_validator_matches_naive_counts(L, k, density, seed):
    rng = np.random.default_rng(seed)
    A = rng.random((L, L)) * (rng.random((L, L)) < density)
    rc, cc = naive_counts(A)
    rep = check_k_nonzero_bounded(A, k)
    assert rep.ok == bool((rc <= k).all() and (cc <= k).all())
    assert check_k_nonzero_bounded(sps.csr_array(A), k).ok == rep.ok
    if not rep.ok:
        if (rc > k).any():
            assert rep.row == int(np.flatnonzero(rc > k)[0]) and rep.count == rc[rep.row]
            assert f"row {rep.row} of A has {rep.count} nonzeros, more than k = {k}" == rep.message
        else:
            assert rep.col == int(np.flatnonzero(cc > k)[0]) and rep.count == cc[rep.col]
        with pytest.raises(PatternError, match="more than k"):
            validate_k_nonzero_bounded(A, k)


@settings(max_examples=80, deadline=None)
@given(L=st.integers(1, 8), gamma=st.floats(1, 5), seed=st.integers(0, 10**6))
def test_gamma_validator_matches_naive_pairs(L, gamma, seed):
    rng = np.random.default_rng(seed)
    A = rng.choice([0.0, 1.0, 2.0, 3.0], size=(L, L))
    naive_ok = all(
        A[l, a] <= gamma * A[l, b] * (1 + 1e-12)
        for l in range(L) for a in range(L) for b in range(L) if A[l, a] > 0 and A[l, b] > 0
    )
    rep = check_gamma_variation_bounded(A, gamma)
    assert rep.ok == naive_ok
    if not rep.ok:
        vals = A[rep.row][A[rep.row] > 0]
        assert rep.values == (vals.max(), vals.min())
        with pytest.raises(PatternError, match=f"row {rep.row} of A has nonzeros"):
            validate_gamma_variation_bounded(A, gamma)


def test_gamma_validator_reports_negative_entries():
    rep = check_gamma_variation_bounded(np.array([[1.0, -2.0], [1.0, 1.0]]), 2.0)
    assert not rep.ok and (rep.row, rep.col) == (0, 1) and "negative" in rep.message


def test_right_stochastic_and_lower_triangular():
    A = np.array([[0.5, 0.5, 0.0], [0.2, 0.7, 0.0], [0.0, 0.0, 1.0]])
    rep = check_right_stochastic(A)
    assert not rep.ok and rep.row == 1 and rep.values[0] == pytest.approx(0.9)
    assert "row 1 of A sums to 0.9" in rep.message
    with pytest.raises(PatternError, match="row 1 of A sums to 0.9"):
        validate_right_stochastic(A)
    A[1, 2] = 0.1
    assert check_right_stochastic(A).ok
    neg = check_right_stochastic(np.array([[1.5, -0.5], [0, 1.0]]))
    assert not neg.ok and (neg.row, neg.col) == (0, 1)
    rep = check_lower_triangular(A)
    assert not rep.ok and (rep.row, rep.col) == (0, 1)
    assert "A[0, 1] = 0.5 is nonzero above the diagonal" in rep.message
    with pytest.raises(PatternError, match="not lower triangular"):
        validate_lower_triangular(A)
    assert check_lower_triangular(np.tril(A)).ok


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: check_k_nonzero_bounded(np.ones((2, 3)), 1), ValueError, r"A must be square \(L x L\), got shape \(2, 3\)"),
        (lambda: check_k_nonzero_bounded(np.array([[np.nan]]), 1), ValueError, r"finite numbers, but A\[0, 0\] = nan"),
        (lambda: check_k_nonzero_bounded(np.eye(2), 0), ValueError, r"k must lie in \[1, inf\], got 0"),
        (lambda: check_gamma_variation_bounded(np.eye(2), 0.5), ValueError, r"gamma must lie in \[1, inf\], got 0.5"),
        (lambda: check_gamma_variation_bounded(np.eye(2), np.nan), ValueError, r"gamma must be finite"),
        (lambda: sample_sparse(4, 5, 2.0, np.random.default_rng(0)), ValueError, r"k must lie in \[1, 4\], got 5"),
        (lambda: sample_sparse(0, 1, 2.0, np.random.default_rng(0)), ValueError, r"L must lie in \[1, inf\], got 0"),
        (lambda: sample_sparse(4, 1, 2.0, 0), TypeError, r"rng must be a numpy.random.Generator"),
        (lambda: strided_pattern(8, 3, 3), ValueError, r"count \* stride <= L"),
        (lambda: band_pattern(5, 5), ValueError, r"width must lie in \[0, 4\], got 5"),
    ],
)
def test_bad_input(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


# --------------------------------------------------------------------------- the sampler
@settings(max_examples=40, deadline=None)
@given(L=st.integers(1, 40), k=st.integers(1, 8), gamma=st.sampled_from([1.0, 2.0, 3.5]),
       seed=st.integers(0, 10**6))
def test_sampler_invariants(L, k, gamma, seed):
    k = min(k, L)
    A = sample_sparse(L, k, gamma, np.random.default_rng(seed), normalize=False)
    rc, cc = naive_counts(A)
    assert rc.max() <= k and cc.max() <= k and rc.min() >= 1
    assert set(np.unique(A[A != 0])) <= {1.0, gamma}
    assert check_k_nonzero_bounded(A, k).ok and check_gamma_variation_bounded(A, gamma).ok
    An = sample_sparse(L, k, gamma, np.random.default_rng(seed))
    np.testing.assert_allclose(An * A.sum(axis=1, keepdims=True), A, rtol=1e-12)
    assert check_right_stochastic(An).ok and check_gamma_variation_bounded(An, gamma).ok
    S = sample_sparse(L, k, gamma, np.random.default_rng(seed), as_csr=True)
    np.testing.assert_allclose(S.toarray(), An, rtol=1e-15)


def test_sampler_is_maximal():
    """After pass 2 no zero position can be filled: its row or its column is full."""
    for seed in range(20):
        L, k = 30, 3
        A = sample_sparse(L, k, 2.0, np.random.default_rng(seed), normalize=False)
        rc, cc = naive_counts(A)
        free = (A == 0) & (rc[:, None] < k) & (cc[None, :] < k)
        assert not free.any()


def test_sampler_is_seeded():
    a = sample_sparse(50, 3, 2.0, np.random.default_rng(7))
    b = sample_sparse(50, 3, 2.0, np.random.default_rng(7))
    c = sample_sparse(50, 3, 2.0, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def _pattern_stats(A):
    rc, cc = naive_counts(A)
    return int((A != 0).sum()), tuple(np.bincount(rc, minlength=5)), int((A == 2.0).sum())


@pytest.mark.parametrize("L, k", [(5, 2), (7, 3)])
def test_sampler_matches_reference_loop_in_distribution(L, k):
    """Chi-square two-sample tests on (nnz, row-count histogram, count of gamma values) and on
    the exact 0/1 pattern of a small case: the fast sampler and the literal loop must agree."""
    n = 600
    fast_rng, ref_rng = np.random.default_rng(1), np.random.default_rng(2)
    fast = [sample_sparse(L, k, 2.0, fast_rng, normalize=False) for _ in range(n)]
    ref = [reference_sample(L, k, 2.0, ref_rng) for _ in range(n)]
    for stat in (lambda A: _pattern_stats(A)[0], lambda A: _pattern_stats(A)[1],
                 lambda A: _pattern_stats(A)[2], lambda A: tuple((A[0] != 0).astype(int))):
        keys = sorted({stat(A) for A in fast + ref})
        table = np.array([[sum(stat(A) == key for A in group) for key in keys] for group in (fast, ref)])
        table = table[:, table.sum(axis=0) >= 10]  # pool away very rare cells
        if table.shape[1] < 2:
            continue
        p = chi2_contingency(table)[1]
        assert p > 1e-3, (keys, table, p)


def test_distribution_test_can_fail():
    """The same test detects a sampler that skips pass 2 (fewer nonzeros)."""
    rng = np.random.default_rng(3)
    L, k, n = 7, 3, 300

    def one_pass(rng):
        A = reference_sample(L, k, 2.0, rng)
        # drop one nonzero from a random full row, mimicking an incomplete second pass
        i = rng.integers(L)
        js = np.flatnonzero(A[i])
        A[i, js[0]] = 0
        return A

    fast = [sample_sparse(L, k, 2.0, rng, normalize=False) for _ in range(n)]
    bad = [one_pass(rng) for _ in range(n)]
    keys = sorted({int((A != 0).sum()) for A in fast + bad})
    table = np.array([[sum(int((A != 0).sum()) == key for A in g) for key in keys] for g in (fast, bad)])
    table = table[:, table.sum(axis=0) >= 10]
    assert chi2_contingency(table)[1] < 1e-6


def test_sampler_count_distribution_k4_L256():
    # Spec Section 8.1 (checked there): for k = 4, L = 256 the counts are 3-4 and ~1023 nonzeros.
    A = sample_sparse(256, 4, 2.0, np.random.default_rng(0), normalize=False)
    rc, cc = naive_counts(A)
    assert rc.min() >= 3 and cc.min() >= 3 and (A != 0).sum() >= 1020
    frac_gamma = (A == 2.0).sum() / (A != 0).sum()
    assert abs(frac_gamma - 0.5) < 0.05


def test_sampler_large_L_sparse_output():
    A = sample_sparse(20000, 4, 2.0, np.random.default_rng(0), as_csr=True)
    assert sps.issparse(A) and A.shape == (20000, 20000)
    assert check_k_nonzero_bounded(A, 4).ok and check_right_stochastic(A).ok


# --------------------------------------------------------------------------- structured patterns
@settings(max_examples=40, deadline=None)
@given(L=st.integers(2, 30), w=st.integers(0, 5), gamma=st.sampled_from([1.0, 3.0]), causal=st.booleans())
def test_band(L, w, gamma, causal):
    w = min(w, L - 1)
    A = band_pattern(L, w, gamma=gamma, causal=causal, normalize=False)
    i, j = np.indices((L, L))
    support = (np.abs(i - j) <= w) & ((j <= i) if causal else True)
    np.testing.assert_array_equal(A != 0, support)
    k = w + 1 if causal else 2 * w + 1
    assert check_k_nonzero_bounded(A, k).ok and check_gamma_variation_bounded(A, gamma).ok
    assert check_right_stochastic(band_pattern(L, w, gamma=gamma, causal=causal)).ok
    assert check_lower_triangular(A).ok == (causal or w == 0)


@settings(max_examples=40, deadline=None)
@given(L=st.integers(2, 30), s=st.integers(1, 4), c=st.integers(1, 4), causal=st.booleans())
def test_strided(L, s, c, causal):
    if not causal and s * c > L:
        return
    c = min(c, L)
    A = strided_pattern(L, s, c, causal=causal, gamma=2.0, rng=np.random.default_rng(0), normalize=False)
    rc, cc = naive_counts(A)
    assert rc.max() <= c and cc.max() <= c
    if not causal:
        assert (rc == c).all() and (cc == c).all()
    else:
        assert check_lower_triangular(A).ok
    i, j = np.nonzero(A)
    offsets = (i - j) if causal else (j - i) % L
    assert set(offsets.tolist()) <= {s * t for t in range(c)}


@settings(max_examples=30, deadline=None)
@given(L=st.integers(1, 30), b=st.integers(1, 6), causal=st.booleans())
def test_block_and_permutation(L, b, causal):
    b = min(b, L)
    A = block_pattern(L, b, causal=causal, normalize=False)
    i, j = np.indices((L, L))
    np.testing.assert_array_equal(A != 0, (i // b == j // b) & ((j <= i) if causal else True))
    assert pattern_parameters(A)[0] <= b
    P = permutation_pattern(L, np.random.default_rng(L))
    assert pattern_parameters(P) == (1, 1.0) and check_right_stochastic(P).ok


def test_pattern_parameters():
    A = np.array([[1.0, 3.0, 0.0], [0.0, 2.0, 0.0], [0.0, 4.0, 1.0]])
    assert pattern_parameters(A) == (3, 4.0)
    assert pattern_parameters(sps.csr_array(A)) == (3, 4.0)


def test_bad_rtol_and_complex_sparse_input_are_rejected():
    # A NaN rtol used to make every matrix pass (ratio > gamma * (1 + nan) is always False).
    A = np.array([[1.0, 5.0], [1.0, 1.0]])
    assert not check_gamma_variation_bounded(A, 2.0).ok
    with pytest.raises(ValueError, match=r"rtol must be finite, got nan"):
        check_gamma_variation_bounded(A, 2.0, rtol=np.nan)
    with pytest.raises(ValueError, match=r"rtol must lie in \[0, inf\], got -1"):
        check_gamma_variation_bounded(A, 2.0, rtol=-1.0)
    # A complex scipy.sparse matrix used to lose its imaginary part with only a warning.
    with pytest.raises(TypeError, match=r"A must be a real numeric matrix, got dtype complex128"):
        check_k_nonzero_bounded(sps.csr_array(np.eye(2) * (1 + 1j)), 1)


def test_validate_gamma_takes_the_same_rtol_as_check():
    """The raising variant takes every argument of its report-returning partner."""
    A = np.array([[1.0, 2.0 * (1 + 1e-9)], [1.0, 0.0]])
    assert not check_gamma_variation_bounded(A, 2.0).ok
    with pytest.raises(PatternError):
        validate_gamma_variation_bounded(A, 2.0)
    assert check_gamma_variation_bounded(A, 2.0, rtol=1e-6).ok
    assert validate_gamma_variation_bounded(A, 2.0, rtol=1e-6).ok
