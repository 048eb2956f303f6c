"""The frontier: fixed-point grid, bits measurements, and the bound against every measured point."""

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import sattn
from sattn.frontier import TOLERANCES, FrontierTask, grid_scale, round_fixed, run_frontier_task
from sattn.patterns.supports import target_supports

REPO = Path(__file__).resolve().parents[3]


def test_round_fixed_has_two_to_the_b_values():
    R = 4.0
    x = np.linspace(-5, 5, 10001)
    for b in (2, 3, 6):
        v = np.unique(round_fixed(x, b, R))
        assert v.size == 2 ** b
        assert v.min() == -R and v.max() == R - R / 2 ** (b - 1)
    assert grid_scale([0.3, -3.1]) == 4.0
    with pytest.raises(ValueError):
        round_fixed(x, 1, R)
    with pytest.raises(TypeError):
        round_fixed(x, 3.0, R)


@pytest.mark.parametrize("construction,k", [
    (c, k) if (c, k) not in {("optimizer", 2), ("optimizer", 4)}
    else pytest.param(c, k, marks=pytest.mark.slow)
    for c in ("algorithm1", "moment-curve", "optimizer") for k in (1, 2, 4)])
def test_measured_points_lie_above_the_bound(construction, k):
    task = FrontierTask(construction, 64, k, "quick")
    assert (task.params()["eps1"], task.params()["eps2"]) == sattn.frontier.TOLERANCES[k]
    pay = run_frontier_task(task)
    for row in pay["rows"]:
        name, L, kk, d, d_hid, fmt, bits = row[:7]
        assert (name, L, kk) == (construction, 64, k)
        if bits is None:
            assert row[-1]                       # a reason is given
            continue
        assert d_hid * bits >= sattn.width_bits_lower_bound(L, k)


def test_shipped_frontier_lies_above_the_bound():
    rows = sattn.load_width_bits(REPO / "data")
    measured = [r for r in rows if r["bits"] is not None]
    assert measured
    for r in measured:
        assert r["d_hid"] * r["bits"] >= sattn.width_bits_lower_bound(r["L"], r["k"])
        assert math.isclose(r["ratio"], r["d_hid"] * r["bits"] / r["bound"], rel_tol=1e-3)
    for r in rows:
        assert r["bits"] is not None or r["reason"]
    # every (construction, k, L, format) of the paper profile has exactly one row, and every
    # construction has measured points for every k
    prof = sattn.frontier.PROFILES["paper"]
    keys = [(r["construction"], r["k"], r["L"], r["format"]) for r in rows]
    assert sorted(keys) == sorted((c, k, L, f) for c in sattn.frontier.CONSTRUCTIONS
                                  for k in prof["k"] for L in prof["lengths"]
                                  for f in ("fixed", "float"))
    assert prof["k"] == (1, 2, 4)
    for c in sattn.frontier.CONSTRUCTIONS:
        for k in prof["k"]:
            assert any(r["construction"] == c and r["k"] == k for r in measured), (c, k)


@pytest.mark.slow
def test_model_runs_at_a_billion_in_a_minute_and_a_gigabyte():
    code = textwrap.dedent("""
        import resource, time, numpy as np
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        import sattn
        t = time.perf_counter()
        rt = sattn.regular_row_types(10 ** 9, 1, 1.0, 3.0, 0.9, np.random.default_rng(0))
        d = sattn.predict_d50(rt, 3.0, 0.9)
        print(d, time.perf_counter() - t)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1",
                                           "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    d, secs = out.stdout.split()
    assert 50 < int(d) < 1000 and float(secs) < 60


def test_row_types_from_stream_match_the_model_input():
    L, k = 300, 2
    rng = np.random.default_rng(3)
    blocks = list(sattn.stream_regular_blocks(L, k, 2.0, rng, block_rows=64))
    import scipy.sparse as sps
    A = sps.vstack([b for _, b in blocks]).tocsr()
    assert ((A != 0).sum(axis=1) == k).all() and ((A != 0).sum(axis=0) == k).all()
    rt = sattn.row_types_from_blocks(iter(blocks), L, 7.0, 0.5)
    assert sum(c for _, c in rt.types) == L
    p1 = sattn.draw_success_probability(rt, 7.0, 0.5, 60, n_samples=4096).p
    p2 = sattn.draw_success_probability(A, 7.0, 0.5, 60, n_samples=4096).p
    assert math.isclose(p1, p2, rel_tol=1e-9)
    with pytest.raises(ValueError, match="cover"):
        sattn.row_types_from_blocks(iter(blocks[1:]), L, 7.0, 0.5)


def test_regular_row_types_law():
    rt = sattn.regular_row_types(10 ** 6, 2, 2.0, 7.0, 0.5, np.random.default_rng(1))
    counts = dict(rt.types)
    assert sum(counts.values()) == 10 ** 6 and len(counts) == 2
    mixed = max(counts.values())
    assert abs(mixed / 1e6 - 0.5) < 0.005
    with pytest.raises(ValueError):
        sattn.regular_row_types(3, 1, 1.0, 3.0, 0.9, np.random.default_rng(0))


def test_fixed_point_bits_is_a_threshold():
    A = sattn.regular_pattern(16, 1, np.random.default_rng(0))
    res = sattn.optimize_logits(A, 3.0, 0.9, 3, rng=np.random.default_rng(1), restarts=2)
    assert res.ok
    from sattn.frontier import check_input
    bits, R = sattn.fixed_point_bits(res.X, 3, A, 3.0, 0.9)
    assert R == grid_scale(res.X) and 2 <= bits <= 53
    assert check_input(round_fixed(res.X, bits, R), 3, A, 3.0, 0.9).ok
    if bits > 2:
        assert not check_input(round_fixed(res.X, bits - 1, R), 3, A, 3.0, 0.9).ok
    total, p, e = sattn.float_format_bits(res.X, 3, A, 3.0, 0.9)
    assert total == 1 + e + (p - 1) and e >= 1
    with pytest.raises(ValueError, match="d = 2"):
        sattn.fixed_point_bits(res.X, 2, A, 3.0, 0.9)


@pytest.mark.slow
def test_reproduce_quick_resumes(tmp_path):
    cmd = [sys.executable, "-m", "sattn", "reproduce", "width-bits", "--profile", "quick",
           "--out", str(tmp_path), "--no-progress"]
    env = {"PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr

    def results():          # every column but the task's timing
        return [{c: v for c, v in r.items() if c != "seconds"} for r in sattn.load_width_bits(tmp_path)]
    before = results()
    (tmp_path / "tasks" / "width_bits" / "optimizer-L128-k1.json").unlink()
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert "1 tasks computed, 26 reused" in second.stdout
    assert results() == before
    rows = sattn.load_width_bits(tmp_path)
    assert {r["construction"] for r in rows} == {"algorithm1", "moment-curve", "optimizer"}
    assert {r["k"] for r in rows} == {1, 2, 4}
    measured = [r for r in rows if r["bits"] is not None]
    assert {(r["construction"], r["k"]) for r in measured} == {
        (c, k) for c in ("algorithm1", "moment-curve", "optimizer") for k in (1, 2, 4)}
    for r in measured:
        assert r["d_hid"] * r["bits"] >= sattn.width_bits_lower_bound(r["L"], r["k"])
    import json
    man = json.loads((tmp_path / "width_bits_manifest.json").read_text())
    assert man["tolerances"] == {"1": [3.0, 0.9], "2": [3.0, 0.9], "4": [7.0, 0.9]}
    assert "k4-g1-e7-0.9" in man["description"]


# ------------------------------------------------------------------ the float format in row blocks
def test_weight_extremes_decide_near_ties_exactly():
    from fractions import Fraction
    from sattn.patterns.criteria import extremes_meet_criteria
    lo = 0.1
    at = float(Fraction(lo) * 4)                    # on_max = (1 + eps1) on_min exactly: passes
    assert Fraction(at) == 4 * Fraction(lo)
    above = np.nextafter(at, 1.0)                   # one ulp more: fails (6)
    ok = extremes_meet_criteria([lo, lo, lo, 0.0], [at, above, lo, 0.5], [0.0, 0.0, 0.09, 0.0],
                               3.0, 0.9)
    assert ok.tolist() == [True, False, True, False]        # a zero on the support fails
    off_at = float(Fraction(lo) * Fraction(0.9))            # (7) at equality, and one ulp above
    if Fraction(off_at) == Fraction(lo) * Fraction(0.9):
        assert extremes_meet_criteria([lo], [lo], [off_at], 3.0, 0.9).tolist() == [True]
    below = float(Fraction(lo) * Fraction(0.9))
    up = np.nextafter(below, 1.0)
    want = Fraction(up) <= Fraction(lo) * Fraction(0.9)
    assert extremes_meet_criteria([lo], [lo], [up], 3.0, 0.9).tolist() == [want]
    with pytest.raises(ValueError, match="one length"):
        extremes_meet_criteria([1.0], [1.0, 2.0], [0.0], 3.0, 0.9)


def test_softmax_extremes_are_those_of_the_dense_pass():
    from sattn.precision.forward import softmax_extremes_in
    from sattn.precision.formats import FormatArithmetic
    rng = np.random.default_rng(3)
    A = sattn.regular_pattern(40, 2, rng)
    _, _, cols = target_supports(A)
    X = rng.normal(size=(40, 10))
    W_Q, W_K = sattn.fixed_weights(5)
    for p in (3, 8, 24):
        M = sattn.attention_matrix_in(X, W_Q, W_K, p)
        ar = FormatArithmetic(p)
        Xr = ar.r(X)
        on_min, on_max, off_max = softmax_extremes_in(ar.matmul(Xr[:, :5], Xr[:, 5:].T), cols, p)
        on = np.take_along_axis(M, cols, axis=1)
        off = np.where(A > 0, -np.inf, M).max(axis=1)
        assert np.array_equal(on_min, on.min(axis=1)) and np.array_equal(on_max, on.max(axis=1))
        assert np.array_equal(off_max, off)
    with pytest.raises(ValueError, match="cols"):
        softmax_extremes_in(np.zeros((2, 3)), np.array([[0], [3]]), 8)


@pytest.mark.parametrize("L,k", [(64, 1), (128, 2)])
def test_float_bits_in_row_blocks_match_the_dense_pass(L, k):
    """Every significand decides as the whole pass computed densely (sattn.attention_matrix_in and
    sattn.algorithm1_precision) does, whatever the row blocks."""
    from sattn.frontier import _algorithm1_input, _float_pass_ok
    from sattn.patterns.construction import Approximation
    eps1, eps2 = TOLERANCES[k]
    A = sattn.regular_pattern(L, k, np.random.default_rng(L + k), as_csr=True, structure="random")
    d = {1: 19, 2: 45}[k]
    X, _ = _algorithm1_input(A, eps1, eps2, d, (0, L, k))
    _, _, cols = target_supports(A)
    W_Q, W_K = sattn.fixed_weights(d)
    approx = Approximation(X=X, W_Q=W_Q, W_K=W_K, draws=1, report=None, B=None, d=d, eps1=eps1,
                           eps2=eps2, causal=False, method="given")
    verdicts = []
    for p in range(2, 14):
        dense = sattn.algorithm1_precision(approx, A.toarray(), p, mode="forward").ok
        for block in (7, L):
            assert _float_pass_ok(X, d, cols, p, eps1, eps2, block) == dense, (p, block)
        verdicts.append(dense)
    assert not verdicts[0] and verdicts[-1]          # both outcomes occur
    bits, p, e = sattn.float_format_bits(X, d, A, eps1, eps2)
    assert verdicts[p - 2] and not verdicts[p - 3] and bits == 1 + e + (p - 1)


def test_algorithm1_is_measured_at_the_log_law_d50():
    from sattn.frontier import LOG_LAW_SETUPS, frontier_tasks, log_law_d50
    widths = log_law_d50(1, REPO / "data")
    assert sorted(widths) == [2 ** p for p in range(6, 16)]
    assert 41 < widths[1024] < 42                          # the registered series of k1-g1-e3-0.9
    assert log_law_d50(2, REPO / "data") == {} and set(LOG_LAW_SETUPS) == {1, 4}
    tasks = {t.task_id: t for t in frontier_tasks("paper", REPO / "data")}
    assert tasks["algorithm1-L1024-k1"].d_log_law == math.ceil(widths[1024])
    assert tasks["algorithm1-L1024-k1"].params()["d_log_law"] == 42
    assert tasks["algorithm1-L1024-k2"].d_log_law is None
    assert "d_log_law" not in tasks["optimizer-L1024-k1"].params()
