"""The width x bits bound: exact counts against brute force, the certified bound, the lemma."""

import itertools
import math

import numpy as np
import pytest

import sattn
from sattn.patterns.supports import enumerate_supports


@pytest.mark.parametrize("L,k", [(L, 1) for L in range(2, 9)] + [(L, 2) for L in range(2, 6)]
                         + [(4, 3), (5, 3), (3, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_count_matches_brute_force(L, k, causal):
    if causal and L == 8 and k > 1:
        pytest.skip("too many candidates")
    brute = sum(1 for _ in enumerate_supports(L, k, causal=causal))
    assert sattn.support_count(L, k, causal=causal) == brute


@pytest.mark.parametrize("L", [2, 3, 4])
def test_count_matches_every_zero_one_matrix(L):
    """Independent of the enumerator: all 2**(L*L) 0/1 matrices, filtered with numpy."""
    for k in range(1, L + 1):
        bits = np.array(list(itertools.product([0, 1], repeat=L * L)), dtype=np.int8)
        M = bits.reshape(-1, L, L)
        ok = (M.sum(axis=2) == k).all(axis=1) & (M.sum(axis=1) <= k).all(axis=1)
        assert sattn.support_count(L, k) == int(ok.sum())
        low = np.tril(np.ones((L, L), dtype=bool))
        rows = np.minimum(k, np.arange(L) + 1)
        okc = ((M * ~low[None]).sum(axis=(1, 2)) == 0) & (M.sum(axis=2) == rows).all(axis=1)
        assert sattn.support_count(L, k, causal=True) == int(okc.sum())


def test_k1_is_factorial():
    for L in (2, 5, 12, 30):
        assert sattn.support_count(L, 1) == math.factorial(L)
        assert sattn.support_count(L, 1, causal=True) == math.factorial(L)


@pytest.mark.parametrize("causal", [False, True])
def test_bound_is_below_the_exact_count(causal):
    cases = ([(L, k) for L in range(2, 17) for k in range(1, min(L, 3) + 1)] + [(40, 1), (40, 2)]
             if not causal else [(L, k) for L in range(2, 200, 7) for k in range(1, min(L, 4) + 1)])
    for L, k in cases:
        exact = math.log2(sattn.support_count(L, k, causal=causal)) / L
        assert sattn.width_bits_lower_bound(L, k, causal=causal) <= exact


def test_bound_k1_is_within_a_few_percent_of_log_factorial():
    for L in (2, 64, 1000, 32768, 10 ** 6, 10 ** 9, 2 ** 53):
        exact = math.lgamma(L + 1) / math.log(2) / L
        lb = sattn.width_bits_lower_bound(L, 1)
        assert lb <= exact * (1 + 1e-12) and lb >= 0.97 * exact
    # log2 L - log2 e + o(1)
    L = 10 ** 9
    assert abs(sattn.width_bits_lower_bound(L, 1) - (math.log2(L) - math.log2(math.e))) < 1e-6 * 30


def test_bound_grows_like_k_log_L():
    for k in (2, 3, 4):
        b = sattn.width_bits_lower_bound(10 ** 9, k)
        assert k * (math.log2(1e9) - math.log2(math.e)) - 3 * k < b < k * math.log2(1e9)


@pytest.mark.parametrize("bad,exc", [
    (dict(L=1, k=1), ValueError), (dict(L=4, k=5), ValueError), (dict(L=4, k=0), ValueError),
    (dict(L=4.0, k=1), TypeError), (dict(L=True, k=1), TypeError), (dict(L=4, k=True), TypeError),
    (dict(L="4", k=1), TypeError), (dict(L=2 ** 60, k=1), ValueError)])
def test_bad_arguments(bad, exc):
    with pytest.raises(exc):
        sattn.width_bits_lower_bound(**bad)
    with pytest.raises(exc):
        sattn.support_count(**bad)


def test_huge_exact_count_is_refused_clearly():
    with pytest.raises(ValueError, match="too large"):
        sattn.support_count(41, 2)
    with pytest.raises(TypeError):
        sattn.width_bits_lower_bound(10, 1, causal=1)


def test_regular_pattern_is_in_the_class():
    for structure in ("windows", "random"):
        for L, k in ((5, 1), (9, 3), (64, 4), (8, 4), (300, 2)):
            A = sattn.regular_pattern(L, k, np.random.default_rng(L), structure=structure)
            assert ((A > 0).sum(axis=1) == k).all() and ((A > 0).sum(axis=0) == k).all()
            assert sattn.check_k_nonzero_bounded(A, k).ok
    # k = 1: both structures are the same permutation from the same generator
    a, b = (sattn.regular_pattern(50, 1, np.random.default_rng(7), structure=s)
            for s in ("windows", "random"))
    assert (a == b).all()


def test_random_structure_is_generic():
    """Random supports are not cyclic windows: at k = 2 the windows form one cycle of length 2L
    in the row-column graph, random supports (almost always) several."""
    def cycles(A):
        import scipy.sparse as sps
        from scipy.sparse.csgraph import connected_components
        B = sps.csr_array(A != 0).astype(int)
        G = sps.block_array([[None, B], [B.T, None]])
        return connected_components(G, directed=False)[0]
    rng = np.random.default_rng(3)
    assert cycles(sattn.regular_pattern(200, 2, rng)) == 1
    assert sum(cycles(sattn.regular_pattern(200, 2, rng, structure="random")) > 1
               for _ in range(5)) >= 4
    with pytest.raises(ValueError, match="structure"):
        sattn.regular_pattern(8, 2, rng, structure="cyclic")
    with pytest.raises(TypeError, match="structure"):
        sattn.regular_pattern(8, 2, rng, structure=1)
    with pytest.raises(ValueError, match="k <= L / 2"):
        sattn.regular_pattern(8, 5, rng, structure="random")


def test_distinct_supports_are_told_apart_by_any_matrix():
    """The lemma, by brute force at L = 4, k = 1: a matrix meeting (6)-(7) for one permutation
    meets them for no other of the 24."""
    rng = np.random.default_rng(0)
    perms = list(itertools.permutations(range(4)))
    for _ in range(20):
        p = perms[rng.integers(24)]
        A = np.eye(4)[list(p)]
        G = rng.normal(size=(4, 4)) * 0.1 + 3.0 * A
        rep = sattn.check_approximation(G, A, 3.0, 0.9)
        assert rep.ok
        passes = [q for q in perms if sattn.check_approximation(G, np.eye(4)[list(q)], 3.0, 0.9).ok]
        assert passes == [p]


def test_nested_supports_counterexample():
    loose = sattn.nested_supports_example(3.0, 0.9)
    assert loose.ok and loose.report_small.ok and loose.report_full.ok
    tight = sattn.nested_supports_example(0.05, 0.9)
    assert not tight.ok
    edge = 1 / 0.5 - 1
    assert sattn.nested_supports_example(edge * 1.001, 0.5).ok
    assert not sattn.nested_supports_example(edge * 0.999, 0.5).ok
