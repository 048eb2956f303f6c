"""Tests of the fast engine, the reference engine and the resumable experiment runner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sattn.attention import row_softmax
from sattn.construction import factorize, logit_target
from sattn.criteria import check_approximation, check_approximation_explicit, check_rows
from sattn.engine import FastEngine, draw_generator, prepare_target
from sattn.experiments import (
    ENGINE_VERSION,
    SETUPS,
    ExperimentError,
    StoreError,
    TaskStore,
    explicit_ratio_check,
    fit_log,
    make_tasks,
    reference_level,
    reproduce,
    run_task,
)
from sattn.__main__ import main as cli_main
from sattn.sparse import sample_sparse

ROOT = Path(__file__).resolve().parents[2]
TINY = dict(profile="quick", setups=["k1-g1-e3-0.5", "k2-g2-e7-0.5"], lengths=[128, 160])


def _target(L, name, seed=0):
    s = SETUPS[name]
    return s, sample_sparse(L, s.k, s.gamma, np.random.default_rng(seed))


# --------------------------------------------------------------------------- engine maths
def test_prepare_target_matches_logit_target():
    s, A = _target(96, "k2-g2-e7-0.5")
    t = prepare_target(A, s.eps1, s.eps2)
    B = logit_target(A, s.eps1, s.eps2)
    rebuilt = np.zeros_like(B)
    rows = np.repeat(np.arange(96)[:, None], t.k_max, axis=1)
    np.add.at(rebuilt, (rows, t.cols), t.bvals)
    np.testing.assert_allclose(rebuilt, B, atol=1e-12)
    np.testing.assert_allclose(t.row_norm, np.linalg.norm(B, axis=1), atol=1e-12)


@pytest.mark.parametrize("name,L,widths", [("k1-g1-e3-0.5", 96, (16, 28, 40, 60)),
                                           ("k2-g2-e7-0.5", 128, (20, 36, 52, 80))])
@pytest.mark.parametrize("fraction", [0.1, 0.5])
def test_same_decision_on_same_draw(name, L, widths, fraction):
    """The fast engine's decision equals the reference decision on Y = qr(Z) of the same draw:
    log-domain check (criteria module) and explicit ratios on the full M. A draw rejected in
    stage 1 names a row that really violates the criteria."""
    s, A = _target(L, name, seed=L)
    B = logit_target(A, s.eps1, s.eps2)
    eng = FastEngine(A, s.eps1, s.eps2)
    decisions = []
    for d in widths:
        for i in range(12):
            out = eng.draw(d, draw_generator(3, (d, i)), complete=True, fraction=fraction)
            Q, _ = np.linalg.qr(out.Z)
            G = (L / d) * B @ Q @ Q.T
            ref = check_approximation(G, A, s.eps1, s.eps2)
            assert out.ok == ref.ok, (d, i, out)
            assert explicit_ratio_check(row_softmax(G), A, s.eps1, s.eps2) == ref.ok
            if not out.ok:
                w = out.worst_row                   # a row that really violates (6) or (7)
                assert not check_rows(G[[w]], [w], A, s.eps1, s.eps2).ok, (d, i, out.stage)
            decisions.append((out.ok, out.stage, out.rest_checked))
    oks = [ok for ok, _, _ in decisions]
    stages = {st for _, st, _ in decisions}
    assert any(oks) and not all(oks)          # both outcomes occur: the test can fail
    assert "stage1" in stages and "screen" in stages
    # stage 1 also rejected draws through the Haar factor of the columns outside J
    assert any(st == "stage1" and rc for _, st, rc in decisions)


def test_float32_screen_equals_float64():
    s, A = _target(128, "k2-g2-e7-0.5", seed=5)
    e32 = FastEngine(A, s.eps1, s.eps2)
    e64 = FastEngine(A, s.eps1, s.eps2, use_float32=False)
    screened = []
    for d in (30, 44, 60):
        for i in range(10):
            a = e32.draw(d, draw_generator(9, (d, i)))
            b = e64.draw(d, draw_generator(9, (d, i)))
            assert a.ok == b.ok
            if a.stage != "stage1":                     # decided by the float32 blocks
                screened.append(a.ok)
    # stage 1 is float64 in both engines: the comparison only means something for draws that
    # reached the float32 screen, and those must include both outcomes
    assert True in screened and False in screened


def test_float64_confirmation_of_borderline_rows(monkeypatch):
    """The confirmation path: with the float32 error band widened (unit roundoff 2^-12 instead of
    2^-24) many rows fall inside it and are recomputed in float64; the decisions stay those of
    the reference on the same draw, with both outcomes among the confirmed draws."""
    import sattn.engine

    s, A = _target(128, "k2-g2-e7-0.5", seed=5)
    B = logit_target(A, s.eps1, s.eps2)
    eng = FastEngine(A, s.eps1, s.eps2)
    monkeypatch.setattr(sattn.engine, "_U32", 2.0 ** -12)
    confirmed = []
    for d in (52, 60, 68):
        for i in range(10):
            out = eng.draw(d, draw_generator(9, (d, i)), complete=True)
            Q, _ = np.linalg.qr(out.Z)
            assert out.ok == check_approximation((128 / d) * B @ Q @ Q.T, A, s.eps1, s.eps2).ok
            if out.stage == "confirm":
                assert out.borderline > 0
                confirmed.append(out.ok)
    assert True in confirmed and False in confirmed


@pytest.mark.parametrize("d,through_T", [(24, 0), (40, 50)])
def test_partial_draw_completes_to_a_gaussian_matrix(d, through_T):
    """Stage 1 (Z_J, the Bartlett factor, the thin Haar factor T R_T^{-1}) and stage 2
    (Z_rest = Qt O^T R_W) give an i.i.d. N(0, 1) matrix Z, whichever way the draw went."""
    s, A = _target(160, "k1-g1-e3-0.5")
    eng = FastEngine(A, s.eps1, s.eps2, partial_fraction=0.3)
    outs = [eng.draw(d, draw_generator(11, (d, i)), complete=True) for i in range(150)]
    assert sum(o.rest_checked for o in outs) >= through_T     # d = 40 exercises the T path
    Zs = np.stack([o.Z for o in outs])
    flat = Zs.reshape(-1)
    assert abs(flat.mean()) < 0.01
    assert abs(flat.var() - 1) < 0.02
    # every entry has variance 1 (rows inside and outside J alike) and columns are uncorrelated
    var_rows = Zs.var(axis=(0, 2))
    assert np.all(np.abs(var_rows - 1) < 0.35)
    C = np.einsum("nij,nik->jk", Zs, Zs) / (Zs.shape[0] * Zs.shape[1])
    assert np.abs(C - np.eye(d)).max() < 0.05
    # the rows outside J, in the draws that went through T, are Gaussian too
    J = eng._partial(d, 0.3)["J"]
    rest = np.setdiff1d(np.arange(160), J)
    if through_T:
        Zr = np.stack([o.Z[rest] for o in outs if o.rest_checked])
        assert abs(Zr.mean()) < 0.02 and abs(Zr.var() - 1) < 0.04


def test_level_escalates_and_depends_only_on_seeds():
    s, A = _target(128, "k2-g2-e7-0.5", seed=1)
    a = FastEngine(A, s.eps1, s.eps2).level(44, 40, 5, (1,))
    eng = FastEngine(A, s.eps1, s.eps2)
    eng.draw(44, draw_generator(0, (0,)))                # state left by other draws is irrelevant
    b = eng.level(44, 40, 5, (1,))
    assert a == b
    # the level equals the same draws taken one by one with the documented fraction switch
    # (the tally of stages and screened rows tells the two partial sets apart; the success flag
    # and the draw count alone do not, since every draw of this level fails)
    def by_hand(switch):
        fraction = eng.probe_fraction
        tally = dict(draws=0, stage1_rejects=0, screen_rejects=0, confirmations=0,
                     rows_screened=0)
        for i in range(40):
            out = eng.draw(44, draw_generator(5, (1, 44, i)), fraction=fraction)
            tally["draws"] += 1
            tally["stage1_rejects"] += out.stage == "stage1"
            tally["screen_rejects"] += out.stage == "screen" and not out.ok
            tally["confirmations"] += out.stage == "confirm"
            tally["rows_screened"] += out.rows_screened
            if switch and out.stage != "stage1":
                fraction = eng.partial_fraction
            if out.ok:
                break
        return tally, out.ok

    tally, ok = by_hand(switch=True)
    assert (tally, ok) == ({k: getattr(a, k) for k in tally}, a.success)
    assert a.stage1_rejects < a.draws                    # some draw survived stage 1: it escalated
    assert by_hand(switch=False)[0] != tally             # ... and the escalation changed the draws


def test_engine_rejects_bad_parameters():
    s, A = _target(64, "k2-g2-e7-0.5")
    with pytest.raises(ValueError, match="partial_fraction must lie in"):
        FastEngine(A, s.eps1, s.eps2, partial_fraction=0.0)
    with pytest.raises(ValueError, match="probe_fraction must lie in"):
        FastEngine(A, s.eps1, s.eps2, probe_fraction=1.5)
    with pytest.raises(ValueError, match="candidates must lie in"):
        FastEngine(A, s.eps1, s.eps2, candidates=-1)
    eng = FastEngine(A, s.eps1, s.eps2)
    with pytest.raises(ValueError, match="fraction must lie in"):
        eng.draw(10, draw_generator(0, (0,)), fraction=2.0)
    with pytest.raises(ValueError, match="d must lie in"):
        eng.draw(65, draw_generator(0, (0,)))


def test_fast_and_svd_reference_agree_in_distribution():
    """Success frequencies at a fixed width: fast engine vs the SVD route with explicit ratios."""
    s, A = _target(64, "k2-g2-e7-0.5", seed=2)
    eng = FastEngine(A, s.eps1, s.eps2)
    n = 250
    rates = {}
    factors = factorize(logit_target(A, s.eps1, s.eps2), "svd")
    for d in (40, 48):
        fast = np.mean([eng.draw(d, draw_generator(4, (d, i))).ok for i in range(n)])
        rng = np.random.default_rng(d)
        ref = np.mean([reference_level(A, s.eps1, s.eps2, d, 1, rng, factors=factors)[0]
                       for _ in range(n)])
        rates[d] = (fast, ref)
        p = (fast + ref) / 2
        sd = np.sqrt(2 * p * (1 - p) / n) + 1e-9
        assert abs(fast - ref) < 4.5 * sd, (d, fast, ref)
    assert any(0.05 < f < 0.95 for f, _ in rates.values())


def test_explicit_ratio_check_matches_criteria_module():
    rng = np.random.default_rng(0)
    outcomes = []
    for trial in range(12):
        L = 12
        A = sample_sparse(L, 2, 2.0, rng)
        G = logit_target(A, 1.0, 0.5) + rng.normal(scale=0.05 + 0.05 * trial, size=(L, L))
        M = row_softmax(G)
        ok = explicit_ratio_check(M, A, 1.0, 0.5)
        assert ok == check_approximation_explicit(M, A, 1.0, 0.5).ok
        outcomes.append(ok)
    assert True in outcomes and False in outcomes        # both outcomes occur: the test can fail


def test_fit_log_recovers_exact_curve():
    L = np.arange(512, 3073, 256)
    a, b, r2 = fit_log(L, 7.5 * np.log(L) - 3.0)
    assert (round(a, 6), round(b, 6), round(r2, 9)) == (7.5, -3.0, 1.0)
    with pytest.raises(ValueError, match="equal length"):
        fit_log([1, 2, 3], [1, 2])


def test_run_task_is_deterministic_and_reports_the_protocol():
    t = make_tasks("fig3", "quick", setups=["k1-g1-e3-0.5"], lengths=[128])[0]
    r1, r2 = run_task(t), run_task(t)
    assert r1["result"] == r2["result"]
    levels = r1["result"]["levels"]
    assert [lv[0] for lv in levels] == list(range(t.grid[0], levels[-1][0] + 1, t.grid[2]))
    assert all(lv[1] == t.n_draws and not lv[2] for lv in levels[:-1])   # failing levels: all draws
    assert levels[-1][2] == 1 and r1["result"]["d_min"] == levels[-1][0]


# --------------------------------------------------------------------------- store and runner
def test_jobs_do_not_change_results(tmp_path):
    m1 = reproduce("fig3", jobs=1, out=tmp_path / "j1", progress=False, **TINY)
    m2 = reproduce("fig3", jobs=2, out=tmp_path / "j2", progress=False, **TINY)
    c1 = (tmp_path / "j1" / "fig3.csv").read_bytes()
    assert c1 == (tmp_path / "j2" / "fig3.csv").read_bytes()
    assert m1["checksums"]["csv"] == m2["checksums"]["csv"]
    assert len(m1["computed"]) == 4 and not m1["reused"]
    # a second run recomputes nothing
    m3 = reproduce("fig3", jobs=1, out=tmp_path / "j1", progress=False, **TINY)
    assert not m3["computed"] and len(m3["reused"]) == 4
    assert (tmp_path / "j1" / "fig3.csv").read_bytes() == c1


def test_resume_after_sigkill_recomputes_no_finished_task(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "sattn", "reproduce", "fig3", "--profile", "quick",
           "--setups", "k1-g1-e3-0.5", "k2-g2-e7-0.5", "--lengths", "192", "256",
           "--jobs", "1", "--no-progress", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tdir = out / "tasks" / "fig3"
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if tdir.is_dir() and len(list(tdir.glob("*.json"))) >= 1:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.name: p.read_bytes() for p in tdir.glob("*.json")}
    assert 1 <= len(finished) < 4
    assert not (out / "fig3.csv").exists()
    rerun = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    man = json.loads((out / "fig3_manifest.json").read_text())
    computed = {f"{t}.json" for t in man["computed"]}
    assert computed.isdisjoint(finished)                        # nothing recomputed
    assert {f"{t}.json" for t in man["reused"]} == set(finished)
    assert len(computed) + len(finished) == 4                    # nothing lost or duplicated
    for name, data in finished.items():                          # finished files untouched
        assert (tdir / name).read_bytes() == data
    assert not list(tdir.glob(".tmp-*"))
    # the resumed CSV equals an uninterrupted run's
    ref = reproduce("fig3", profile="quick", setups=["k1-g1-e3-0.5", "k2-g2-e7-0.5"],
                    lengths=[192, 256], jobs=2, out=tmp_path / "ref", progress=False)
    assert (out / "fig3.csv").read_bytes() == (tmp_path / "ref" / "fig3.csv").read_bytes()
    assert ref["checksums"]["csv"] == man["checksums"]["csv"]


def test_corrupted_task_file_is_a_clear_error(tmp_path):
    reproduce("fig3", jobs=1, out=tmp_path, progress=False, profile="quick",
              setups=["k1-g1-e3-0.5"], lengths=[128])
    f = next((tmp_path / "tasks" / "fig3").glob("*.json"))
    good = f.read_bytes()
    (tmp_path / "fig3_manifest.json").unlink()          # isolate the task-file check
    f.write_bytes(good.replace(b'"d_min":', b'"d_min": 1 +', 1)[:-5])
    with pytest.raises(StoreError, match="corrupted result file"):
        reproduce("fig3", jobs=1, out=tmp_path, progress=False, profile="quick",
                  setups=["k1-g1-e3-0.5"], lengths=[128])
    rec = json.loads(good)
    rec["payload"]["result"]["d_min"] += 4                # valid JSON, wrong checksum
    f.write_text(json.dumps(rec))
    with pytest.raises(StoreError, match="SHA-256"):
        reproduce("fig3", jobs=1, out=tmp_path, progress=False, profile="quick",
                  setups=["k1-g1-e3-0.5"], lengths=[128])
    assert f.read_text() == json.dumps(rec)              # nothing was overwritten


def test_corrupted_manifest_or_csv_is_a_clear_error(tmp_path):
    kw = dict(jobs=1, out=tmp_path, progress=False, profile="quick", setups=["k1-g1-e3-0.5"],
              lengths=[128])
    reproduce("fig3", **kw)
    csv = tmp_path / "fig3.csv"
    csv.write_text(csv.read_text() + "\n")
    with pytest.raises(StoreError, match="checksum"):
        reproduce("fig3", **kw)
    (tmp_path / "fig3_manifest.json").write_text("{not json")
    with pytest.raises(StoreError, match="corrupted manifest"):
        reproduce("fig3", **kw)


@pytest.mark.parametrize("edit,msg", [
    (lambda m: m["checksums"].update(tasks=list(m["checksums"]["tasks"])), "checksums must map"),
    (lambda m: m["checksums"].update(csv=None), "checksums must map"),
    (lambda m: m.update(runs="two"), "runs must be a number"),
    (lambda m: m.update(wall_seconds_all_runs=None), "wall_seconds_all_runs must be a number"),
])
def test_manifest_with_wrong_types_is_a_clear_error(tmp_path, edit, msg):
    """Valid JSON whose fields have the wrong types: a StoreError before anything is computed
    or written (it used to be an AttributeError, or a TypeError after the CSV was rewritten)."""
    kw = dict(jobs=1, out=tmp_path, progress=False, profile="quick", setups=["k1-g1-e3-0.5"],
              lengths=[128])
    reproduce("fig3", **kw)
    mpath = tmp_path / "fig3_manifest.json"
    man = json.loads(mpath.read_text())
    edit(man)
    mpath.write_text(json.dumps(man))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(StoreError, match=msg):
        reproduce("fig3", **kw)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_fig5_refuses_to_overwrite_corrupted_outputs(tmp_path):
    reproduce("fig5", out=tmp_path, progress=False, profile="quick")
    man = tmp_path / "fig5_manifest.json"
    good = man.read_bytes()
    assert reproduce("fig5", out=tmp_path, progress=False, profile="quick")["L"] == 64  # valid
    npz = tmp_path / "fig5_maps.npz"
    npz.write_bytes(npz.read_bytes()[:-10])
    with pytest.raises(StoreError, match="fig5_maps.npz does not match"):
        reproduce("fig5", out=tmp_path, progress=False, profile="quick")
    man.write_text("{not json")
    with pytest.raises(StoreError, match="corrupted manifest"):
        reproduce("fig5", out=tmp_path, progress=False, profile="quick")
    assert man.read_text() == "{not json"                 # nothing was overwritten
    man.write_bytes(good)
    npz.unlink()                                          # a missing map is recomputed
    reproduce("fig5", out=tmp_path, progress=False, profile="quick")
    from sattn.experiments import load_figure
    assert load_figure("fig5", tmp_path)["L"] == 64       # checksums match again


def test_parameter_mismatch_is_refused(tmp_path):
    t = make_tasks("fig3", "quick", setups=["k1-g1-e3-0.5"], lengths=[128])[0]
    store = TaskStore(tmp_path)
    payload = run_task(t)
    payload["params"]["grid"] = [8, 128, 8]
    store.save(t, payload)
    with pytest.raises(StoreError, match="different parameters"):
        store.load(t)


@pytest.mark.parametrize("argv,msg", [
    (["reproduce", "fig9"], "unknown figure 'fig9'"),
    (["reproduce", "fig5", "--setups", "nope"], "apply to fig3 and fig4 only"),
    (["reproduce", "fig5", "--lengths", "16"], "apply to fig3 and fig4 only"),
    (["reproduce", "fig3", "--setups", "nope"], "unknown setup name"),
    (["reproduce", "fig3", "--lengths", "256", "128"], "strictly increasing"),
    (["reproduce", "fig3", "--lengths", "128", "128"], "strictly increasing"),
    (["reproduce", "fig3", "--lengths", "16"], "outside the supported range"),
    (["reproduce", "fig3", "--lengths", "70000"], "outside the supported range"),
    (["reproduce", "fig3", "--profile", "huge"], "unknown profile"),
    (["reproduce", "fig3", "--jobs", "0"], "jobs must be"),
])
def test_cli_bad_input(argv, msg, capsys, tmp_path):
    assert cli_main(argv + ["--out", str(tmp_path)]) == 2
    assert msg in capsys.readouterr().err
    assert not (tmp_path / "fig3.csv").exists()
    assert not (tmp_path / "fig5.csv").exists()


def test_cli_setups_unknown_profile(capsys):
    assert cli_main(["setups", "--profile", "huge"]) == 2
    assert "unknown profile 'huge'" in capsys.readouterr().err


def test_bad_grid_and_empty_lengths():
    with pytest.raises(ExperimentError, match="at least one L"):
        make_tasks("fig3", "quick", lengths=[])
    from dataclasses import replace

    from sattn.experiments import PROFILES
    bad = replace(PROFILES["quick"], grids={n: (40, 20, 4) for n in SETUPS})
    with pytest.raises(ExperimentError, match="non-increasing"):
        make_tasks("fig3", bad)
    with pytest.raises(ExperimentError, match="at least one setup"):
        make_tasks("fig3", "quick", setups=[])


@pytest.mark.parametrize("figure", ["fig3", "fig4", "fig5"])
def test_shipped_data_matches_its_manifest(figure):
    """The committed data/ files are complete, pass their checksums and match the paper profile."""
    from sattn.experiments import _sha256_file, load_figure

    data = ROOT / "data"
    assert (data / f"{figure}_manifest.json").exists(), (
        f"data/{figure}_manifest.json is missing: run `python -m sattn reproduce {figure} "
        "--profile paper` and commit data/")
    rows = load_figure(figure, data)                     # verifies the CSV checksum
    man = json.loads((data / f"{figure}_manifest.json").read_text())
    assert man["profile"] == "paper"
    assert man["versions"]["engine"] == ENGINE_VERSION, "data made by another engine version"
    if figure == "fig5":
        assert rows["M"].shape == rows["A"].shape == (rows["L"], rows["L"])
        return
    for name, digest in man["checksums"]["tasks"].items():
        assert _sha256_file(data / "tasks" / figure / name) == digest
    expected = {t.task_id for t in make_tasks(figure, "paper")}
    assert {f"{figure}_{r['setup']}_L{r['L']}_Q{r['Q']:g}" for r in rows} == expected
    assert all(r["d_min"] is not None and r["levels_tried"] > 1 for r in rows)
