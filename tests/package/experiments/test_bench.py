"""The benchmark harness (`python -m sattn bench`) lives in the package and runs from any folder."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sattn
import sattn.runs.bench as bench

REPO = Path(__file__).resolve().parents[3]


def _env():
    """The environment of a user who installed sattn: importable, whatever the working folder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def test_bench_is_a_module_of_the_package():
    pkg = Path(sattn.__file__).resolve().parent
    assert Path(bench.__file__).resolve().parent == pkg / "runs"
    assert callable(bench.main) and callable(bench.compare) and callable(bench.peak_memory)
    assert callable(bench.large) and callable(bench.batching)


@pytest.mark.slow
def test_cli_bench_help_from_another_working_directory(tmp_path):
    res = subprocess.run([sys.executable, "-m", "sattn", "bench", "--help"], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "--quick" in res.stdout and "--out" in res.stdout


@pytest.mark.slow
def test_quick_bench_writes_consistent_results(tmp_path):
    out = tmp_path / "results.json"
    res = subprocess.run([sys.executable, "-m", "sattn", "bench", "--quick", "--out", str(out)],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    r = json.loads(out.read_text())
    assert r["quick"] is True
    (c,) = r["comparisons"]
    assert c["L"] == 256 and 1 <= c["d"] <= c["L"]
    # every draw of both engines was decided, and the stage tally accounts for each fast draw
    assert sum(c["fast"]["stages"].values()) == c["draws"] == 20
    assert set(c["fast"]["stages"]) <= {"stage1", "screen", "confirm"}
    for engine in ("reference", "fast"):
        e = c[engine]
        assert 0 <= e["successes"] <= c["draws"]
        assert e["total_s"] >= e["draws_s"] > 0 and e["setup_s"] > 0
    fl = c["floor"]
    assert fl["per_draw_s"] == fl["gaussian_s"] + fl["block_gemm_s"] > 0
    assert abs(c["speedup"] - c["reference"]["total_s"] / c["fast"]["total_s"]) < 1e-9
    assert c["far_below"]["draws"] >= 1 and c["far_below"]["d"] < c["d"]
    (m,) = r["memory"]
    assert m["L"] == 3072 and 0 < m["peak_rss_MB"] < 2048
    assert r["targets"]["peak_memory_under_2GB"] is True
    assert not any(name.startswith("speedup_") for name in r["targets"])   # retired targets stay out
    # large L: the fast engine alone, floors per draw at both widths, peak memory
    (g,) = r["large"]
    assert g["L"] == 8192 and "reference" not in g and g["far_below"]["d"] < g["d"] == g["below"]["d"]
    for w in ("below", "far_below"):
        e = g[w]
        assert e["per_draw_s"] > 0 and e["floor_s"] > 0
        assert abs(e["per_draw_over_floor"] - e["per_draw_s"] / e["floor_s"]) < 1e-9
    assert sum(g["below"]["stages"].values()) == g["below"]["draws"]
    b = g["below"]                                   # the strict floor, timed alongside
    assert b["strict_floor_s"] > 0
    assert abs(b["per_draw_over_strict_floor"] - b["per_draw_s"] / b["strict_floor_s"]) < 1e-9
    assert 0 < g["memory"]["peak_rss_MB"] < 2048 and g["memory"]["L"] == 8192
    assert isinstance(r["targets"]["large_per_draw_within_2x_floor"], bool)
    assert r["targets"]["large_peak_memory_32768_under_2GB"] is None   # not measured by --quick
    # batching: the same levels one by one and batched (equal results, else the bench fails)
    (bt,) = r["batching"]
    assert bt["L"] == 256 and bt["batch"] > 1
    for w in ("below", "far_below"):
        e = bt[w]
        assert e["draws"] >= 1 and e["one_by_one_s"] > 0 and e["batched_s"] > 0
        assert abs(e["ratio"] - e["one_by_one_s"] / e["batched_s"]) < 1e-9
