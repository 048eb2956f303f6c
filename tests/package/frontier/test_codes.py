"""Codes for the book's weights: the bounds (each step checked), the codes, and the one checker."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sps

import sattn
from sattn.codes.checker import _extremes_blocks, _extremes_enumerate, _float_pass
from sattn.codes.inputs import _cycle_in_cube, target_supports
from sattn.codes.measure import CodeTask, load_width_codes, reproduce_width_codes, run_code_task
from sattn.experiments.target import draw_generator
from sattn.frontier import check_input
from sattn.precision import attention_matrix_in


def target(L, k, seed=1):
    return sattn.regular_pattern(L, k, draw_generator(seed, (L, k)), as_csr=True,
                                 structure="random")


# ----------------------------------------------------------------------------- bounds
@pytest.mark.parametrize("L", [2, 3, 4, 5, 64, 100, 1000, 1024, 2 ** 20])
def test_k1_bound_is_met_by_the_sign_code(L):
    bound = sattn.book_weights_bound(L, 1)
    assert bound == 2 * math.ceil(math.log2(L))
    if L <= 4096:
        code = sattn.sign_code_input(target(L, 1))
        assert code.bits == 1 and code.product == bound


def test_book_bound_uses_counting_when_larger():
    # k = 4: the counting bound log2 N / L is about 4 log2 L, above 2 log2 L for large L
    L = 2 ** 16
    c = sattn.width_bits_lower_bound(L, 4)
    assert c > 2 * 16
    assert sattn.book_weights_bound(L, 4) == 2 * math.ceil(c / 2)


def test_no_one_bit_input_of_width_one_serves_four_tokens():
    """Exhaustive at L = 4: with d b = 1 < log2 4 no input on {-1, 1} serves the identity, with
    d = 2 the sign code does (the bound is tight there)."""
    A = sps.identity(4, format="csr")
    for vals in itertools.product((-1.0, 1.0), repeat=8):
        X = np.array(vals).reshape(4, 2)
        assert not check_input(X, 1, A, 3.0, 0.9).ok
    code = sattn.sign_code_input(A)
    assert code.d == 2 and check_input(code.X, 2, A, 3.0, 0.9).ok


@pytest.mark.parametrize("seed", range(5))
def test_serving_obstruction_finds_the_failing_row(seed):
    rng = np.random.default_rng(seed)
    L, d = 16, 3
    A = target(L, 1, seed)
    Q = rng.integers(-1, 2, size=(L, d)).astype(float)
    K = rng.integers(-1, 2, size=(L, d)).astype(float)
    K[5] = K[9]                                    # two equal keys: some row separates them
    obs = sattn.serving_obstruction(Q, K, A)
    assert obs is not None
    kind, l, a, b = obs
    G = Q @ K.T
    if kind == "key":
        assert A[l, a] > 0 and A[l, b] == 0 and G[l, a] == G[l, b]
    else:
        assert G[a, b] == G[l, b] and A[l, b] > 0 and A[a, b] == 0
    assert not check_input(np.hstack([Q, K]), d, A, 3.0, 0.9).ok
    code = sattn.sign_code_input(A)
    assert sattn.serving_obstruction(code.Q, code.K, A) is None


def test_antichain_length_and_sperner():
    assert [sattn.antichain_length(L) for L in (1, 2, 3, 6, 7, 20, 2 ** 20)] == [0, 2, 3, 4, 5, 6, 23]
    for L in (5, 64, 300):
        code = sattn.constant_weight_input(target(L, 1))
        assert code.d == sattn.antichain_length(L) and code.grid == "twos" and code.bits == 1


@pytest.mark.parametrize("seed", range(20))
def test_line_lemma_on_random_bilinear_attention(seed):
    """Each support (the k largest logits) meets every axis-parallel line in a prefix or a suffix
    of its points: the step of bilinear_min_bits's proof, on random grids and weights."""
    rng = np.random.default_rng(seed)
    L, n, k = 40, 3, 1 + seed % 3
    X = rng.integers(0, 3, size=(L, n)).astype(float)
    W = rng.normal(size=(n, n))
    G = X @ W @ X.T
    for l in range(L):
        top = set(np.argsort(-G[l], kind="stable")[:k].tolist())
        if np.sort(G[l])[-k] == np.sort(G[l])[-k - 1]:
            continue                               # a tie: no strict support
        for axis in range(n):
            others = np.delete(X, axis, axis=1)
            for key in {tuple(r) for r in others}:
                on = np.flatnonzero((others == key).all(axis=1))
                t = X[on, axis]
                pts = sorted({float(v) for v in t})
                chosen = sorted({float(X[j, axis]) for j in on if j in top})
                if chosen:
                    assert chosen == pts[:len(chosen)] or chosen == pts[-len(chosen):]


def test_bilinear_bounds():
    assert sattn.bilinear_min_bits(10 ** 9, 1, 2) == 29      # two entries need 29 bits each
    assert sattn.bilinear_min_bits(10, 1, 1) is None
    assert sattn.bilinear_min_bits(2 ** 10, 1, 11) == 1
    prod, w = sattn.bilinear_bound(2 ** 10, 1)
    assert prod == 10 and w == 10
    with pytest.raises(ValueError):
        sattn.bilinear_min_bits(10, 10, 2)


# ----------------------------------------------------------------------------- codes
def test_cycles_in_the_cube():
    for n in range(2, 300):
        verts, r = _cycle_in_cube(n)
        assert len(set(verts)) == n and max(verts) < 2 ** r
        assert 2 ** r < 4 * n                     # so m <= ceil(log2 L) + 2 after packing
        S = set(verts)
        for a, b in zip(verts, verts[1:] + verts[:1]):
            diff = a ^ b
            dist = bin(diff).count("1")
            assert dist in (1, 2), (n, a, b)
            if dist == 2:
                lo = diff & -diff
                assert a ^ lo not in S and a ^ (diff ^ lo) not in S


@pytest.mark.parametrize("L", [4, 10, 64, 333])
def test_cycle_code(L):
    A = target(L, 2)
    cycles = sattn.column_cycles(A)
    assert sorted(r for _, rows in cycles for r in rows) == list(range(L))
    code = sattn.cycle_code_input(A)
    assert code.ok and set(np.unique(code.Q)) <= {-1, 0, 1}
    assert len({bytes(r) for r in code.K}) == L
    rep = sattn.check_code_input(code, A, 3.0, 0.9)
    assert rep.ok and rep.spread == 0 and rep.gap == -2


@pytest.mark.parametrize("k", [1, 2, 4])
def test_hash_code_passes_for_every_q(k):
    A = target(256, k)
    code = sattn.hash_code_input(A)
    assert code.info["q"] == k + 2
    assert sattn.check_code_input(code, A, 7.0, 0.9).ok
    other = sattn.hash_code_input(A, q=2 * k + 1)
    assert other.info["q"] == 2 * k + 1 and sattn.check_code_input(other, A, 7.0, 0.9).ok


def test_coloured_block_separates_the_pairs_left():
    """With the coloured blocks the hash code for k = 4 stays within 5x the bound at L = 1024."""
    A = target(1024, 4)
    code = sattn.hash_code_input(A)
    assert sattn.check_code_input(code, A, 7.0, 0.9).ok
    assert code.product <= 5 * sattn.book_weights_bound(1024, 4)


def test_bad_targets_are_refused():
    with pytest.raises(ValueError, match="permutation"):
        sattn.sign_code_input(target(16, 2))
    with pytest.raises(ValueError, match="k = 2"):
        sattn.column_cycles(target(16, 1))
    A = target(8, 2).toarray()
    A[0, A[0] > 0] = [0.3, 0.7]
    with pytest.raises(ValueError, match="equal"):
        sattn.cycle_code_input(A)


# ----------------------------------------------------------------------------- the checker
def _codes(L):
    A1, A2, A4 = target(L, 1), target(L, 2), target(L, 4)
    return [(sattn.sign_code_input(A1), A1), (sattn.constant_weight_input(A1), A1),
            (sattn.cycle_code_input(A2), A2), (sattn.hash_code_input(A1), A1),
            (sattn.hash_code_input(A4), A4)]


@pytest.mark.parametrize("L", [8, 64, 200])
def test_enumeration_blocks_and_float64_agree(L):
    for code, A in _codes(L):
        _, _, cols = target_supports(A)
        blocks = _extremes_blocks(code, cols)
        try:
            enum = _extremes_enumerate(code, cols)
        except ValueError:
            enum = None
        if enum is not None:                     # exact where found, an upper bound beyond
            exact = ~enum[3]
            assert (enum[0] == blocks[0]).all() and (enum[1] == blocks[1]).all()
            assert (enum[2][exact] == blocks[2][exact]).all()
            assert (enum[2][~exact] >= blocks[2][~exact]).all()
        rep = sattn.check_code_input(code, A, 3.0, 0.9)
        ref = check_input(code.X, code.d, A, 3.0, 0.9)
        assert rep.ok == ref.ok
        G = code.Q.astype(float) @ code.K.T.astype(float)
        on = np.take_along_axis(G, cols, axis=1)
        off = G.copy()
        np.put_along_axis(off, cols, -np.inf, axis=1)
        true_gap = int((off.max(axis=1) - on.min(axis=1)).max())
        assert rep.gap == true_gap


def test_checker_catches_broken_codes():
    A = target(64, 1)
    code = sattn.sign_code_input(A)
    K = code.K.copy()
    K[3] = K[7]                                  # a repeated key
    bad = sattn.CodeInput("broken", code.Q, K, 1.0, "symmetric", 1)
    rep = sattn.check_code_input(bad, A, 3.0, 0.9)
    assert not rep.ok and rep.method == "blocks" and rep.gap == 0
    Q = code.Q.copy()
    Q[0] = -Q[0]                                 # a query pointing away from its target
    rep = sattn.check_code_input(sattn.CodeInput("broken", Q, code.K, 1.0, "symmetric", 1), A,
                                 3.0, 0.9)
    assert not rep.ok
    assert rep.ok == check_input(np.hstack([Q, code.K]).astype(float), code.d, A, 3.0, 0.9).ok
    off_grid = sattn.CodeInput("off", code.Q * 3, code.K, 1.0, "symmetric", 1)
    with pytest.raises(ValueError, match="grid"):
        sattn.check_code_input(off_grid, A, 3.0, 0.9)
    with pytest.raises(ValueError, match="eps2"):
        sattn.check_code_input(code, A, 3.0, 1.5)


@pytest.mark.parametrize("p", [2, 3, 4, 6])
def test_float_verdict_matches_the_dense_pass(p, monkeypatch):
    """The float format decided from the rows' extremes agrees with the whole pass computed
    densely (sattn.attention_matrix_in, then (6)-(7) on M): with every possible row sum tried, and,
    with that step switched off, with the rows the extremes leave open summed exactly."""
    import sattn.codes.checker as checker
    open_seen = set()
    for code, A in _codes(48):
        _, _, cols = target_supports(A)
        on_min, on_max, off_max, _ = _extremes_blocks(code, cols)
        W_Q, W_K = sattn.fixed_weights(code.d)
        M = attention_matrix_in(code.X, W_Q, W_K, p)
        dense = sattn.check_attention_matrix(M, A, 3.0, 0.9).ok
        tried = _float_pass(on_min, on_max, off_max, code.unit, p, *(3.0, 0.9))
        assert tried is None or tried == dense, (code.name, p)
        with monkeypatch.context() as m:
            m.setattr(checker, "MAX_CANDIDATE_P", 1)          # no sums tried: rows stay open
            if _float_pass(on_min, on_max, off_max, code.unit, p, *(3.0, 0.9)) is None:
                open_seen.add(code.name)
            exact = _float_pass(on_min, on_max, off_max, code.unit, p, *(3.0, 0.9), code=code,
                                cols=cols)
        assert exact == dense, (code.name, p)
    if p == 2:                    # the exact sums are exercised: the extremes leave this case open
        assert "hash code" in open_seen


def test_every_possible_sum_decides_as_the_exact_sums(monkeypatch):
    """At L = 1024 the extremes leave rows of the sign and cycle codes open at small p; trying
    every possible row sum settles them as summing each row exactly does."""
    import sattn.codes.checker as checker
    settled = 0
    for code, A in _codes(1024)[:3]:
        _, _, cols = target_supports(A)
        ext = _extremes_blocks(code, cols)[:3]
        for p in (2, 3, 4):
            tried = _float_pass(*ext, code.unit, p, 3.0, 0.9)
            with monkeypatch.context() as m:
                m.setattr(checker, "MAX_CANDIDATE_P", 1)
                bounds_only = _float_pass(*ext, code.unit, p, 3.0, 0.9)
                exact = _float_pass(*ext, code.unit, p, 3.0, 0.9, code=code, cols=cols)
            assert tried is not None and tried == exact, (code.name, p)
            settled += bounds_only is None
    assert settled >= 2                     # the open cases do occur


@pytest.mark.slow
def test_measure_task_and_csv(tmp_path):
    pay = run_code_task(CodeTask("sign", 256, 1, "quick"))
    row = pay["rows"][0]
    assert row[0] == "sign" and row[7] == row[8] == 16 and row[9] == 1.0
    skipped = run_code_task(CodeTask("hash", 2 ** 20, 4, "paper"))["rows"][0]
    assert skipped[7] is None and skipped[-1].startswith("not run")
    man = reproduce_width_codes(profile="quick", out=tmp_path, progress=False)
    rows = load_width_codes(tmp_path)
    assert len(rows) == len(man["computed"]) and all(r["reason"] is None for r in rows)
    assert all(r["product"] >= r["book_bound"] for r in rows)
    again = reproduce_width_codes(profile="quick", out=tmp_path, progress=False)
    assert again["computed"] == [] and len(again["reused"]) == len(rows)
