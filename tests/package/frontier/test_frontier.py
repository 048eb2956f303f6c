"""The frontier: fixed-point grid, bits measurements, and the bound against every measured point."""

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import sattn
from sattn.frontier import FrontierTask, grid_scale, round_fixed, run_frontier_task

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


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("construction", ["algorithm1", "moment-curve", "optimizer"])
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
