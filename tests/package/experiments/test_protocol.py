"""Tests of sattn.experiments.setups, .store and .protocol: tasks, the resumable runner, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sattn.__main__ import main as cli_main
from sattn.experiments.engine import ENGINE_VERSION
from sattn.experiments.protocol import fit_dmin_log, load_figure, reproduce, run_task
from sattn.experiments.setups import PROFILES, SETUPS, ExperimentError, make_tasks
from sattn.runs.store import (
    LOCK_NAME,
    StoreError,
    StoreWarning,
    TaskStore,
    sha256_file,
    write_manifest,
)

ROOT = Path(__file__).resolve().parents[3]
TINY = dict(profile="quick", setups=["k1-g1-e3-0.5", "k2-g2-e7-0.5"], lengths=[128, 160])


def exit_status(argv) -> int:
    """The exit status of ``python -m sattn argv``: argparse's own refusals exit with 2 too."""
    try:
        return cli_main(argv)
    except SystemExit as exc:
        return exc.code


def _files(folder: Path) -> dict:
    """Every file under ``folder`` and its bytes, but for the lock file (each run writes its PID
    there; it holds no data)."""
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != LOCK_NAME}


def test_fit_log_recovers_exact_curve():
    L = np.arange(512, 3073, 256)
    a, b, r2 = fit_dmin_log(L, 7.5 * np.log(L) - 3.0)
    assert (round(a, 6), round(b, 6), round(r2, 9)) == (7.5, -3.0, 1.0)
    with pytest.raises(ValueError, match="equal length"):
        fit_dmin_log([1, 2, 3], [1, 2])


def test_run_task_is_deterministic_and_reports_the_protocol():
    t = make_tasks("fig3", "quick", setups=["k1-g1-e3-0.5"], lengths=[128])[0]
    r1, r2 = run_task(t), run_task(t)
    assert r1["result"] == r2["result"]
    levels = r1["result"]["levels"]
    assert [lv[0] for lv in levels] == list(range(t.grid[0], levels[-1][0] + 1, t.grid[2]))
    assert all(lv[1] == t.n_draws and not lv[2] for lv in levels[:-1])   # failing levels: all draws
    assert levels[-1][2] == 1 and r1["result"]["d_min"] == levels[-1][0]


# --------------------------------------------------------------------------- store and runner
@pytest.mark.slow
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


@pytest.mark.slow
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
        time.sleep(0.01)                               # polling the condition: a first result
    os.killpg(proc.pid, signal.SIGSTOP)                # frozen there: no later task can finish
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
    """Valid JSON whose fields have the wrong types, re-signed so that the manifest's own checksum
    passes: a StoreError before anything is computed or written (it used to be an AttributeError,
    or a TypeError after the CSV was rewritten)."""
    kw = dict(jobs=1, out=tmp_path, progress=False, profile="quick", setups=["k1-g1-e3-0.5"],
              lengths=[128])
    reproduce("fig3", **kw)
    mpath = tmp_path / "fig3_manifest.json"
    man = json.loads(mpath.read_text())
    edit(man)
    write_manifest(mpath, man)
    before = _files(tmp_path)
    with pytest.raises(StoreError, match=msg):
        reproduce("fig3", **kw)
    assert _files(tmp_path) == before


def test_manifest_edited_without_its_checksum_is_refused(tmp_path):
    """A manifest whose content changed but still parses (a byte flip in a number) no longer
    matches its own SHA-256: refused before anything is written; load_figure refuses it too."""
    kw = dict(jobs=1, out=tmp_path, progress=False, profile="quick", setups=["k1-g1-e3-0.5"],
              lengths=[128])
    reproduce("fig3", **kw)
    mpath = tmp_path / "fig3_manifest.json"
    man = json.loads(mpath.read_text())
    man["runs"] += 1
    mpath.write_text(json.dumps(man))
    before = _files(tmp_path)
    for call in (lambda: reproduce("fig3", **kw), lambda: load_figure("fig3", tmp_path)):
        with pytest.raises(StoreError, match="does not match its own SHA-256"):
            call()
    assert _files(tmp_path) == before


def test_missing_listed_result_is_recomputed_with_a_warning(tmp_path):
    """A finished result deleted after the manifest listed it (e.g. the remedy for a corrupted
    file) is recomputed, identical, with a StoreWarning, and named in the manifest's recovered."""
    kw = dict(jobs=1, out=tmp_path, progress=False, profile="quick", setups=["k1-g1-e3-0.5"],
              lengths=[128, 160])
    reproduce("fig3", **kw)
    csv = (tmp_path / "fig3.csv").read_bytes()
    victim = sorted((tmp_path / "tasks" / "fig3").glob("*.json"))[0]
    data = victim.read_bytes()
    victim.unlink()
    with pytest.warns(StoreWarning, match="missing and will be recomputed"):
        man = reproduce("fig3", **kw)
    assert man["computed"] == man["recovered"] == [victim.stem]
    # the same result (only the task's own wall time differs) and the same CSV
    assert json.loads(victim.read_bytes())["payload"]["result"] == json.loads(data)["payload"]["result"]
    assert (tmp_path / "fig3.csv").read_bytes() == csv


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
    (["reproduce", "fig9"], "invalid choice: 'fig9'"),
    (["reproduce", "fig5", "--setups", "k1-g1-e3-0.5"], "reproduce fig5 does not use --setups"),
    (["reproduce", "fig5", "--lengths", "16"], "reproduce fig5 does not use --lengths"),
    (["reproduce", "fig5", "--jobs", "2"], "reproduce fig5 does not use --jobs"),
    (["reproduce", "fig3", "--setups", "nope"], "invalid choice: 'nope'"),
    (["reproduce", "fig3", "--lengths", "256", "128"], "strictly increasing"),
    (["reproduce", "fig3", "--lengths", "128", "128"], "strictly increasing"),
    (["reproduce", "fig3", "--lengths", "16"], "outside the supported range"),
    (["reproduce", "fig3", "--lengths", "200000"], "outside the supported range"),
    (["reproduce", "fig3", "--profile", "huge"], "invalid choice: 'huge'"),
    (["reproduce", "fig3", "--jobs", "0"], "jobs must be"),
])
def test_cli_bad_input(argv, msg, capsys, tmp_path):
    assert exit_status(argv + ["--out", str(tmp_path)]) == 2
    assert msg in capsys.readouterr().err
    assert not (tmp_path / "fig3.csv").exists()
    assert not (tmp_path / "fig5.csv").exists()


def test_cli_setups_unknown_profile(capsys):
    assert exit_status(["setups", "--profile", "huge"]) == 2
    assert "invalid choice: 'huge'" in capsys.readouterr().err


def test_bad_grid_and_empty_lengths():
    with pytest.raises(ExperimentError, match="at least one L"):
        make_tasks("fig3", "quick", lengths=[])
    bad = replace(PROFILES["quick"], grids={n: (40, 20, 4) for n in SETUPS})
    with pytest.raises(ExperimentError, match="non-increasing"):
        make_tasks("fig3", bad)
    with pytest.raises(ExperimentError, match="at least one setup"):
        make_tasks("fig3", "quick", setups=[])


@pytest.mark.parametrize("figure", ["fig3", "fig4", "fig5"])
def test_shipped_data_matches_its_manifest(figure):
    """The committed data/ files are complete, pass their checksums and match the paper profile."""
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
        assert sha256_file(data / "tasks" / figure / name) == digest
    expected = {t.task_id for t in make_tasks(figure, "paper")}
    assert {f"{figure}_{r['setup']}_L{r['L']}_Q{r['Q']:g}" for r in rows} == expected
    assert all(r["d_min"] is not None and r["levels_tried"] > 1 for r in rows)


@pytest.mark.parametrize("folder", ["data", "data/q1"])
def test_every_shipped_engine_task_is_of_this_engine_version(folder):
    """Every stored task of the engine experiments was made by the current engine version, or
    carried over to it from fast-2 by tools/migrate_engine_version.py: such a task names the audit
    that cleared it, and the audit's record of it (tools/audit_engine_rank.py, committed beside
    the data) replayed all its draws and matched its stage-1 counts. Draws that met a dependent
    set of candidates (the only draws on which fast-3 and fast-2 differ) lie at widths that the
    audit recomputed with fast-3, and the task holds those recomputed records."""
    data = ROOT / folder
    log = data / "engine_rank_audit.jsonl"
    audit = {r["task"]: r for r in map(json.loads, log.read_text().splitlines())} \
        if log.exists() else {}
    carried = made = 0
    for exp in ("fig3", "fig4", "decades", "acceptance"):
        for f in sorted((data / "tasks" / exp).glob("*.json")):
            payload = json.loads(f.read_text())["payload"]
            assert payload["params"]["engine"] == ENGINE_VERSION, f"{f.name}: another engine"
            note = payload.get("engine_audit")
            if note is None:
                made += 1
                continue
            rec = audit[f.name]
            draws = sum(lv[1] for lv in payload["result"]["levels"])
            assert note["from"] == "fast-2" and rec["faithful"], f.name
            assert note["dependent_draws"] == rec["dependent_draws"], f.name
            assert rec["draws"] == note["draws"], f.name
            recomputed = {new[0]: new for _, new in rec.get("recomputed_levels", [])}
            assert sorted(recomputed) == sorted(note.get("recomputed_widths", [])), f.name
            if rec["dependent_draws"]:
                assert recomputed, f"{f.name}: dependent draws at widths never recomputed"
            for lv in payload["result"]["levels"]:
                if lv[0] in recomputed:
                    assert lv == recomputed[lv[0]], (f.name, lv[0])
            if not recomputed:
                assert draws == rec["draws"], f.name
            assert rec["method"] == ("target" if payload["params"]["k"] == 1 else "replay")
            carried += 1
    assert carried + made > 100


def test_shipped_q1_data_matches_its_manifest_and_never_raises_d_min():
    """data/q1 (profile paper-q1, the paper's budget Q = 1): checksums, engine, the four lengths for
    all twelve settings, and d_min at most the shipped Q = 0.1 value (same targets, nested draws)."""
    data = ROOT / "data" / "q1"
    rows = load_figure("fig3", data)
    man = json.loads((data / "fig3_manifest.json").read_text())
    assert man["profile"] == "paper-q1" and man["Q"] == [1.0]
    assert man["versions"]["engine"] == ENGINE_VERSION, "data made by another engine version"
    for name, digest in man["checksums"]["tasks"].items():
        assert sha256_file(data / "tasks" / "fig3" / name) == digest
    assert {(r["setup"], r["L"]) for r in rows} >= {(s, L) for s in SETUPS for L in (512, 1024, 2048, 3072)}
    low = {(r["setup"], r["L"]): r["d_min"] for r in load_figure("fig3", ROOT / "data")}
    assert all(r["d_min"] is not None and r["d_min"] <= low[(r["setup"], r["L"])] for r in rows)


# ----------------------------------------------------------------------------- decades
DEC = dict(profile="quick", lengths=[64, 128])


def test_decades_tasks_follow_the_profile():
    cfg = PROFILES["paper"].decades
    tasks = make_tasks("decades", "paper")
    assert len(tasks) == len(cfg["setups"]) * len(cfg["lengths"]) * cfg["targets"] == 180
    assert cfg["lengths"] == tuple(64 * 2 ** i for i in range(10))
    ks = {SETUPS[s].k for s in cfg["setups"]}
    gammas = {SETUPS[s].gamma for s in cfg["setups"]}
    assert ks == {1, 2, 3, 4} and gammas == {1.0, 2.0}
    assert all(t.n_draws == 16 and t.coarse == 4 for t in tasks)
    # independent targets: distinct seed keys, none shared with Figures 3-4
    keys = {t.target_key() for t in tasks}
    assert len(keys) == len(tasks)
    assert not keys & {t.target_key() for t in make_tasks("fig3", "paper")}
    w = tasks[-1].widths()
    assert all(b - a == max(1, int(0.02 * a)) for a, b in zip(w, w[1:]))


def test_a_task_draws_its_own_target():
    """``Task.sample_target`` is the paper's sampler under the task's target seed key: the three
    targets of one decades (setup, L) differ, a Figure 3 task gives the same target for every Q,
    and another root seed gives another target."""
    from sattn.experiments.target import draw_generator
    from sattn.patterns.sparse import sample_sparse

    t0, t1, _ = make_tasks("decades", "paper", setups=["k2-g2-e7-0.5"], lengths=[256])
    s = t0.setup
    ref = sample_sparse(256, s.k, s.gamma, draw_generator(t0.root_seed, t0.target_key()),
                        as_csr=True)
    a0 = t0.sample_target()
    assert (a0 != ref).nnz == 0 and a0.shape == (256, 256)
    assert (a0 != t1.sample_target()).nnz > 0
    assert (a0 != t0.sample_target(root_seed=1)).nnz > 0
    (f,) = make_tasks("fig3", "paper", setups=["k2-g2-e7-0.5"], lengths=[512])
    assert (f.sample_target() != replace(f, Q=1.0).sample_target()).nnz == 0


@pytest.mark.slow
def test_decades_jobs_do_not_change_results_and_resume(tmp_path):
    m1 = reproduce("decades", jobs=1, out=tmp_path / "j1", progress=False, **DEC)
    m2 = reproduce("decades", jobs=2, out=tmp_path / "j2", progress=False, **DEC)
    c1 = (tmp_path / "j1" / "decades.csv").read_bytes()
    assert c1 == (tmp_path / "j2" / "decades.csv").read_bytes()
    assert m1["checksums"]["csv"] == m2["checksums"]["csv"] and m2["jobs"] == 2
    assert len(m1["computed"]) == 8 and m1["machine"]["cpus"] == os.cpu_count()
    rows = load_figure("decades", tmp_path / "j1")
    assert all(r["d_below"] < r["d_min"] and r["levels_tried"] > 1 for r in rows)
    assert len({(r["setup"], r["L"], r["target"]) for r in rows}) == 8
    # a longer run reuses what is there
    m3 = reproduce("decades", jobs=1, out=tmp_path / "j1", progress=False, profile="quick")
    assert len(m3["reused"]) == 8 and len(m3["computed"]) == 4


@pytest.mark.parametrize("kwargs, match", [
    (dict(budget=0), "outside the supported range"),
    (dict(budget=10 ** 6), "outside the supported range"),
    (dict(budget=2.5), "must be an integer"),
    (dict(lengths=[32]), "outside the supported range"),
    (dict(lengths=[262144]), "outside the supported range"),
    (dict(profile="paper-q1"), "has no decades experiment"),
])
def test_decades_bad_requests_are_refused(tmp_path, kwargs, match):
    args = dict(DEC, **kwargs)
    with pytest.raises(ExperimentError, match=match):
        reproduce("decades", out=tmp_path, progress=False, **args)
    assert not any(tmp_path.iterdir())


def test_budget_is_refused_for_figure_3():
    with pytest.raises(ExperimentError, match="decades experiment only"):
        make_tasks("fig3", "quick", budget=8)


def test_decades_grid_starting_above_d_min_is_an_error(tmp_path):
    t = replace(make_tasks("decades", "quick", lengths=[128])[0], grid=(100, 128, 1))
    with pytest.raises(ExperimentError, match="must start below d_min"):
        run_task(t)
    prof = replace(PROFILES["quick"], decades=dict(PROFILES["quick"].decades,
                                                    starts={n: 100 for n in SETUPS}))
    with pytest.raises(ExperimentError, match="must start below d_min"):
        reproduce("decades", profile=prof, lengths=[128], out=tmp_path, progress=False)


def test_decades_folder_of_another_engine_version_is_refused(tmp_path):
    reproduce("decades", out=tmp_path, progress=False, **DEC)
    t = make_tasks("decades", **DEC)[0]
    store = TaskStore(tmp_path / "tasks" / "decades")
    payload = store.load(t)
    payload["params"]["engine"] = "fast-1"
    store.save(t, payload)                       # a valid record, written by another engine
    (tmp_path / "decades_manifest.json").unlink()  # (whose manifest would list its checksum)
    before = _files(tmp_path)
    with pytest.raises(StoreError, match="different parameters"):
        reproduce("decades", out=tmp_path, progress=False, **DEC)
    assert _files(tmp_path) == before


@pytest.mark.parametrize("argv,msg", [
    (["reproduce", "decades", "--budget", "0"], "outside the supported range"),
    (["reproduce", "fig3", "--budget", "8"], "reproduce fig3 does not use --budget"),
])
def test_cli_decades_bad_input(argv, msg, capsys, tmp_path):
    assert cli_main(argv + ["--out", str(tmp_path)]) == 2
    assert msg in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("setup", ["k1-g1-e3-0.9", "k2-g2-e7-0.5"])
def test_coarse_scan_finds_the_d_min_of_the_full_scan(setup):
    """Striding over cold widths (every draw rejected in stage 1) skips only widths far below
    d_min: over many targets the scan returns the d_min of the plain upward scan of every width,
    and every level it visits is decided as in the plain scan."""
    from sattn import FastEngine, sample_sparse, draw_generator
    from sattn.experiments.protocol import dmin_search
    from sattn.experiments.setups import ladder_values
    s = SETUPS[setup]
    agree = 0
    for i in range(12):
        A = sample_sparse(96, s.k, s.gamma, draw_generator(5, (i,)), as_csr=True)
        eng = FastEngine(A, s.eps1, s.eps2)
        ws = ladder_values(2, 96, 0.02)
        full, lv_full = dmin_search(eng, None, 8, 9, (i,), widths=ws)
        fast, lv_fast = dmin_search(eng, None, 8, 9, (i,), widths=ws, coarse=4)
        agree += full == fast
        assert len(lv_fast) < len(lv_full)
        # the levels the coarse scan visits are decided exactly as in the full scan
        by_d = {lv[0]: lv for lv in lv_full}
        assert all(by_d[lv[0]] == lv for lv in lv_fast if lv[0] in by_d)
    assert agree == 12


def test_shipped_decades_data_match_their_manifest_and_the_profile():
    """data/decades.csv: checksums, engine, every (setting, L, target) of the paper profile with
    its d_min strictly inside its ladder, and the recorded wall time and machine."""
    rows = load_figure("decades", ROOT / "data")
    man = json.loads((ROOT / "data" / "decades_manifest.json").read_text())
    assert man["profile"] == "paper" and man["versions"]["engine"] == ENGINE_VERSION
    for name, digest in man["checksums"]["tasks"].items():
        assert sha256_file(ROOT / "data" / "tasks" / "decades" / name) == digest
    expected = {(t.setup.name, t.L, t.target) for t in make_tasks("decades", "paper")}
    assert {(r["setup"], r["L"], r["target"]) for r in rows} == expected
    assert all(r["d_min"] is not None and r["d_below"] < r["d_min"] for r in rows)
    assert man["wall_seconds_all_runs"] > 0 and man["machine"]["cpus"] >= 1
