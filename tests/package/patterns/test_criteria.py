"""Tests of sattn.patterns.criteria: the log-domain check against the explicit-ratio reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given, settings
from hypothesis import strategies as st

import sattn
from sattn import (
    check_approximation,
    check_approximation_explicit,
    check_rows,
    merge_reports,
    row_softmax,
    sample_sparse,
)


def _case(L, k, seed, noise, shift):
    """A sampled target and logits ln A + shift on the support, noisy everywhere."""
    rng = np.random.default_rng(seed)
    A = sample_sparse(L, k, 2.0, rng)
    G = np.where(A > 0, np.log(np.where(A > 0, A, 1.0)) + shift, 0.0)
    G = G + noise * rng.standard_normal((L, L))
    return A, G


@settings(max_examples=120, deadline=None)
@given(L=st.integers(2, 9), k=st.integers(1, 3), seed=st.integers(0, 10**6),
       noise=st.floats(0, 1.5), shift=st.floats(0, 5), eps1=st.floats(0.01, 2),
       eps2=st.floats(0.001, 0.9), causal=st.booleans())
def test_log_domain_equals_explicit(L, k, seed, noise, shift, eps1, eps2, causal):
    A, G = _case(L, min(k, L), seed, noise, shift)
    if causal:
        A = np.tril(A)
        A[np.arange(L), np.arange(L)] += 0.1  # keep every row nonempty
        G = np.where(np.tri(L, dtype=bool), G, -np.inf)
    M = row_softmax(G)
    fast = check_approximation(G, A, eps1, eps2, causal=causal)
    slow = check_approximation_explicit(M, A, eps1, eps2, causal=causal)
    assert math.isclose(fast.ratio_spread, slow.ratio_spread, rel_tol=1e-9, abs_tol=1e-9)
    if fast.worst_row7 is None:
        assert slow.worst_row7 is None
    else:
        assert math.isclose(fast.log_gap7, slow.log_gap7, rel_tol=1e-9, abs_tol=1e-9)
    # Away from the threshold (rounding), the verdicts are identical.
    if abs(fast.margin6) > 1e-9:
        assert fast.ok6 == slow.ok6
    if abs(fast.margin7) > 1e-9:
        assert fast.ok7 == slow.ok7


@settings(max_examples=60, deadline=None)
@given(L=st.integers(2, 12), seed=st.integers(0, 10**6), c=st.floats(-50, 50))
def test_row_shifts_and_target_scaling_do_not_matter(L, seed, c):
    A, G = _case(L, 2, seed, 0.3, 2.0)
    rng = np.random.default_rng(seed + 1)
    rep = check_approximation(G, A, 0.5, 0.1)
    rep2 = check_approximation(G + c * rng.random((L, 1)), A * rng.uniform(0.1, 10, (L, 1)), 0.5, 0.1)
    assert rep.ok == rep2.ok
    assert math.isclose(rep.margin6, rep2.margin6, abs_tol=1e-9)
    assert math.isclose(rep.margin7, rep2.margin7, abs_tol=1e-9)


def test_blocks_merge_to_the_whole():
    A, G = _case(40, 3, 0, 0.4, 3.0)
    whole = check_approximation(G, A, 0.5, 0.1)
    parts = [check_rows(G[s:s + 7], np.arange(s, min(s + 7, 40)), A, 0.5, 0.1) for s in range(0, 40, 7)]
    merged = merge_reports(parts)
    assert merged == whole
    assert check_approximation(G, A, 0.5, 0.1, block_rows=3) == whole
    assert check_approximation(G, sps.csr_array(A), 0.5, 0.1) == whole
    assert check_rows(G[5:9], slice(5, 9), A, 0.5, 0.1) == check_rows(G[5:9], [5, 6, 7, 8], A, 0.5, 0.1)


def test_worst_row_and_pairs_are_reported():
    A = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.25, 0.0, 0.75]])
    G = np.log(np.where(A > 0, A, 1e-9))
    G[2, 0] += 0.3          # ratio error in row 2
    G[1, 2] = np.log(0.5)   # zero position of row 1 gets weight half the support
    rep = check_approximation(G, A, 0.2, 0.1)
    assert not rep.ok and rep.ok6 is False and rep.ok7 is False
    assert rep.worst_row6 == 2 and rep.worst_pair6 == (0, 2)
    assert rep.ratio_spread == pytest.approx(0.3)
    assert rep.worst_row7 == 1 and rep.worst_pair7 == (2, 1)
    assert rep.worst_zero_ratio == pytest.approx(0.5)
    assert rep.margin7 == pytest.approx(math.log(0.1) - math.log(0.5))
    assert "FAIL" in rep.message and "row 2" in rep.message and "row 1" in rep.message
    ok = check_approximation(np.log(np.where(A > 0, A, 1e-9)), A, 0.2, 0.1)
    assert ok.ok and ok.ratio_spread == pytest.approx(0, abs=1e-12) and ok.message.startswith("PASS")


@pytest.mark.slow
def test_no_underflow_at_tiny_eps2_and_L4096():
    """eps2 = 1e-12 at L = 4096: M itself underflows, the log-domain check does not."""
    L = 4096
    A = sample_sparse(L, 2, 2.0, np.random.default_rng(0), as_csr=True)
    rng = np.random.default_rng(1)
    dense = A.toarray()
    S = dense > 0
    G = np.where(S, np.log(np.where(S, dense, 1.0)) + 800.0, 0.0)  # off-support weights e^-800 x
    G += 0.05 * rng.standard_normal((L, L))
    rep = check_approximation(G, A, 0.5, 1e-12)
    assert rep.ok and rep.margin7 > 700 and rep.margin6 > 0
    assert rep.worst_zero_ratio == 0.0 and "exp(" in rep.message  # the ratio itself underflows
    G[17, np.flatnonzero(~S[17])[0]] = G[17][S[17]].min() - 20.0  # e^-20 > 1e-12: (7) fails
    rep = check_approximation(G, A, 0.5, 1e-12)
    assert not rep.ok7 and rep.worst_row7 == 17


def test_causal_ignores_positions_above_the_diagonal():
    A = np.tril(np.ones((4, 4)))
    A[3, :3] = 0.0
    G = np.zeros((4, 4))
    G[3, 3] = 10.0
    assert not check_approximation(G, A, 0.1, 0.01).ok  # non-causal: row 0 positions 1-3 are zeros
    Gc = np.where(np.tri(4, dtype=bool), G, -np.inf)
    rep = check_approximation(Gc, A, 0.1, 0.01, causal=True)
    assert rep.ok and rep.worst_row7 == 3
    assert rep.log_gap7 == pytest.approx(-10.0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: check_approximation(np.zeros((2, 2)), np.eye(2), 0.0, 0.1), r"eps1 must lie in \(0, inf\], got 0"),
        (lambda: check_approximation(np.zeros((2, 2)), np.eye(2), 0.1, 1.0), r"eps2 must lie in \(0, 1\), got 1"),
        (lambda: check_approximation(np.zeros((2, 2)), np.eye(2), 0.1, -0.5), r"eps2 must lie in \(0, 1\)"),
        (lambda: check_approximation(np.zeros((2, 2)), np.eye(3), 0.1, 0.1), r"A must have shape \(2, 2\)"),
        (lambda: check_approximation(np.zeros((2, 3)), np.eye(2), 0.1, 0.1), r"G must be square"),
        (lambda: check_approximation(np.zeros((2, 2)), np.array([[1, 0], [0, 0.0]]), 0.1, 0.1), r"row 1 of A has no nonzero"),
        (lambda: check_approximation(np.zeros((2, 2)), np.array([[1, 0], [-1, 1.0]]), 0.1, 0.1), r"A must be nonnegative, but A\[1, 0\] = -1"),
        (lambda: check_approximation(np.array([[0, np.nan], [0, 0]]), np.eye(2), 0.1, 0.1), r"G must not contain NaN, but G\[0, 1\]"),
        (lambda: check_approximation(np.array([[0, np.inf], [0, 0]]), np.eye(2), 0.1, 0.1), r"G must be finite, but G\[0, 1\] = inf"),
        (lambda: check_approximation(np.zeros((2, 2)), np.ones((2, 2)), 0.1, 0.1, causal=True), r"causal=True needs a lower-triangular A, but A\[0, 1\]"),
        (lambda: check_rows(np.zeros((2, 3)), [0], np.eye(3), 0.1, 0.1), r"rows must list 2 row indices"),
        (lambda: check_rows(np.zeros((1, 3)), [3], np.eye(3), 0.1, 0.1), r"rows must lie in \[0, 2\]"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_merge_rejects_mixed_tolerances():
    A = np.eye(3)
    a = check_approximation(np.eye(3), A, 0.1, 0.1)
    b = check_approximation(np.eye(3), A, 0.2, 0.1)
    with pytest.raises(ValueError, match="share eps1, eps2 and causal"):
        merge_reports([a, b])


@pytest.mark.parametrize(
    "call, exc, message",
    [
        # rows given as floats used to be truncated silently (0.7 -> row 0, 1.9 -> row 1)
        (lambda: check_rows(np.zeros((2, 3)), [0.7, 1.9], np.eye(3), 0.1, 0.1), TypeError,
         r"rows must be integer row indices or a slice, got dtype float64"),
        (lambda: check_rows([["a", "b"]], [0], np.eye(2), 0.1, 0.1), TypeError,
         r"G_block must be a real numeric array"),
        (lambda: check_rows(np.zeros((1, 2), dtype=complex), [0], np.eye(2), 0.1, 0.1), TypeError,
         r"G_block must be real"),
        # a larger A used to be cut down to M's size silently, a smaller one raised IndexError
        (lambda: check_approximation_explicit(np.full((2, 2), 0.5), np.eye(3), 0.1, 0.1), ValueError,
         r"A must have the shape of M, \(2, 2\), got \(3, 3\)"),
        (lambda: check_approximation_explicit(np.full((3, 3), 1 / 3), np.eye(2), 0.1, 0.1), ValueError,
         r"A must have the shape of M, \(3, 3\), got \(2, 2\)"),
        # a negative target entry used to be treated as a zero of A
        (lambda: check_approximation_explicit(np.full((2, 2), 0.5), np.array([[1.0, -1.0], [1.0, 1.0]]),
                                              0.1, 0.1), ValueError, r"A must be nonnegative, but A\[0, 1\] = -1"),
        (lambda: check_approximation_explicit(np.array([[1.5, -0.5], [0.5, 0.5]]), np.ones((2, 2)), 0.1, 0.1),
         ValueError, r"M must be nonnegative, but M\[0, 1\] = -0.5"),
        (lambda: check_approximation_explicit(np.array([[1.0, 0.0], [0.5, 0.5]]), np.ones((2, 2)), 0.1, 0.1),
         ValueError, r"M\[0, 1\] = 0 on the support of A"),
        (lambda: merge_reports([1]), TypeError, r"reports\[0\] must be an ApproximationReport, got int"),
    ],
)
def test_bad_input_is_named_not_guessed(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_report_of_a_huge_zero_ratio_prints_instead_of_overflowing():
    """A logit gap above 709 nats (the moment curve in float64 at L >= 512, chapter 8) made
    ``worst_zero_ratio`` raise OverflowError, and with it ``message``, ``str`` and ``sattn.check``."""
    L = 4
    A = np.eye(L)
    G = np.zeros((L, L))
    G[0, 1] = 800.0  # an off-support logit 800 nats above the support's
    rep = sattn.check_approximation(G, A, 1.0, 0.5)
    assert not rep.ok7 and rep.worst_zero_ratio == np.inf
    assert "exp(800)" in rep.message and str(rep) == rep.message
    with pytest.raises(sattn.ClaimFailed, match="exp\\(800\\)"):
        sattn.check(rep, "criterion (7)")


def test_attention_matrix_exact_ties_pass_and_whatever_log_does(monkeypatch):
    """Entries whose ratios meet eps1 and eps2 exactly are ties in exact arithmetic: they pass,
    however NumPy's logarithm rounds (here moved up and down by 3 ulp)."""
    # row 0: support ratio 2 = 1 + eps1 exactly, zero/support ratio 1/4 / 1/2 = eps2 exactly
    M = np.array([[0.5, 0.25, 0.125, 0.125], [0.125, 0.5, 0.25, 0.125],
                  [0.125, 0.125, 0.5, 0.25], [0.25, 0.125, 0.125, 0.5]])
    A = np.array([[1.0, 0.5, 0, 0], [0, 1.0, 0.5, 0], [0, 0, 1.0, 0.5], [0.5, 0, 0, 1.0]])
    exact = sattn.check_attention_matrix(M, A, 1.0, 0.5)
    assert exact.ok
    real_log = np.log
    for k in (-3, 3):
        monkeypatch.setattr(np, "log", lambda x, k=k: (lambda y: y + k * np.spacing(np.abs(y)))(
            real_log(x)))
        rep = sattn.check_attention_matrix(M, A, 1.0, 0.5)
        assert rep.ok and rep.exact_rows >= 1, rep
    monkeypatch.setattr(np, "log", real_log)
    # a hair past the tie fails, on exactly the row that moved
    M2 = M.copy()
    M2[1, 3] = np.nextafter(0.125, 1.0)
    bad = sattn.check_attention_matrix(M2, A, 1.0, 0.5)
    assert not bad.ok7 and bad.worst_row7 == 1 and bad.worst_pair7 == (3, 2)


def test_attention_matrix_zero_on_the_support_fails_and_bad_input_is_named():
    M = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert not sattn.check_attention_matrix(M, np.ones((2, 2)), 1.0, 0.5).ok6
    with pytest.raises(ValueError, match="nonnegative"):
        sattn.check_attention_matrix(-M, np.ones((2, 2)), 1.0, 0.5)
    with pytest.raises(ValueError, match="shape of M"):
        sattn.check_attention_matrix(M, np.ones((3, 3)), 1.0, 0.5)
