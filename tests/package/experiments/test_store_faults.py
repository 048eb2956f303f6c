"""Faults of the experiments' resumable store, measured and recorded for the status page.

- **Corrupted data**: seeded random truncations and byte flips of task files, CSVs and manifests.
  Every corruption that changes content must be refused with a message naming the file, with
  nothing overwritten. After the user deletes the damaged file, as the message says, the next run
  recomputes only what was lost and writes the same CSV as a clean run.
- **Killed runs**: the command line killed (SIGKILL) at several points of a run. The resumed run
  loses, duplicates and recomputes no finished task, and its CSV equals an uninterrupted run's.
- **Worker counts**: the same run with 1, 2 and all workers writes byte-identical CSVs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from reliability import record
from sattn import load_figure, reproduce
from sattn.runs.store import LOCK_NAME, StoreError, StoreWarning

ROOT = Path(__file__).resolve().parents[3]
TINY = dict(profile="quick", setups=["k1-g1-e3-0.5", "k2-g2-e7-0.5"], lengths=[128, 160])
N_CORRUPTIONS = 48


def _snapshot(folder: Path) -> dict:
    """The data files under ``folder`` (not the lock file: each run writes its PID there)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != LOCK_NAME}


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "run"
    manifest = reproduce("fig3", jobs=1, out=out, progress=False, **TINY)
    assert len(manifest["computed"]) == 4
    return out, _snapshot(out)


def _corrupt(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    if rng.random() < 0.4:
        cut = int(rng.integers(0, len(data)))
        return data[:cut], f"truncated to {cut} of {len(data)} bytes"
    i = int(rng.integers(0, len(data)))
    flip = int(rng.integers(1, 256))
    out = bytearray(data)
    out[i] ^= flip
    return bytes(out), f"byte {i} of {len(data)} xor 0x{flip:02x}"


def _same_json(a: bytes, b: bytes) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except ValueError:
        return False


@pytest.mark.reliability
@pytest.mark.slow
def test_every_corruption_is_refused_and_recovery_recomputes_only_the_loss(clean_run, tmp_path):
    src, clean = clean_run
    rng = np.random.default_rng(20261201)
    names = sorted(clean)
    outcomes = {"refused": 0, "unchanged content (accepted)": 0}
    failures, per_file = [], {}
    for trial in range(N_CORRUPTIONS):
        out = tmp_path / f"t{trial}"
        shutil.copytree(src, out)
        name = names[int(rng.integers(0, len(names)))]
        kind = ("task file" if name.startswith("tasks/") else
                "manifest" if name.endswith("manifest.json") else "CSV")
        bad, how = _corrupt(clean[name], rng)
        (out / name).write_bytes(bad)
        case = f"{name}: {how}"
        per_file[kind] = per_file.get(kind, 0) + 1
        harmless = name.endswith(".json") and _same_json(bad, clean[name])
        before = _snapshot(out)
        try:
            reproduce("fig3", jobs=1, out=out, progress=False, **TINY)
        except StoreError as exc:
            if harmless:
                failures.append(f"{case}: content unchanged, yet refused ({exc})")
                continue
            msg = str(exc)
            if Path(name).name not in msg or "Nothing was overwritten" not in msg and "Delete" not in msg:
                failures.append(f"{case}: message does not name the file or the remedy: {msg}")
                continue
            if _snapshot(out) != before:
                failures.append(f"{case}: files changed although the run was refused")
                continue
            if kind != "task file":  # the chapters' loader must refuse the damaged outputs too
                try:
                    load_figure("fig3", out)
                    failures.append(f"{case}: load_figure accepted it")
                    continue
                except StoreError:
                    pass
                except Exception as exc:  # noqa: BLE001 - a raw decoding error is the failure we count
                    failures.append(f"{case}: load_figure raised {type(exc).__name__}: {exc}")
                    continue
            # the remedy the message gives: delete the damaged file, run again
            (out / name).unlink()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", StoreWarning)
                    man = reproduce("fig3", jobs=1, out=out, progress=False, **TINY)
                if (kind == "task file") != any(issubclass(w.category, StoreWarning) for w in caught):
                    failures.append(f"{case}: recovery {'gave no' if kind == 'task file' else 'gave a'} "
                                    "warning about a recomputed result")
                    continue
            except StoreError as again:
                failures.append(f"{case}: after deleting the file as told, the run still refused: {again}")
                continue
            lost = {Path(name).stem} if kind == "task file" else set()
            if set(man["computed"]) != lost:
                failures.append(f"{case}: recovery recomputed {man['computed']}, lost only {sorted(lost)}")
                continue
            if (out / "fig3.csv").read_bytes() != clean["fig3.csv"]:
                failures.append(f"{case}: recovered CSV differs from the clean run's")
                continue
            outcomes["refused"] += 1
        except Exception as exc:  # noqa: BLE001 - any other exception is the failure we count
            failures.append(f"{case}: {type(exc).__name__}: {exc}")
        else:
            if not harmless:
                failures.append(f"{case}: accepted silently")
                continue
            if (out / "fig3.csv").read_bytes() != clean["fig3.csv"]:
                failures.append(f"{case}: content-preserving edit changed the CSV")
                continue
            outcomes["unchanged content (accepted)"] += 1
        finally:
            shutil.rmtree(out, ignore_errors=True)
    passed = N_CORRUPTIONS - len(failures)
    record("corrupted-data", title=("Random truncations and byte flips of task files, CSVs and "
                                    "manifests: refused with a message naming the file, nothing "
                                    "overwritten, and recovery recomputing only what was lost"),
           tried=N_CORRUPTIONS, passed=passed, unit="corruptions",
           test="tests/package/experiments/test_store_faults.py::test_every_corruption_is_refused_and_recovery_recomputes_only_the_loss",
           details={**outcomes, "per file kind": per_file}, failures=failures)
    assert not failures, f"{len(failures)} of {N_CORRUPTIONS} corruptions mishandled:\n" + "\n".join(failures)


#: Four tasks of a second or so each: Figure 3 (two setups x two lengths) and the decades
#: experiment (two setups x two targets at one length).
KILL_RUNS = {
    "fig3": dict(setups=["k1-g1-e3-0.5", "k2-g2-e7-0.5"], lengths=[192, 256]),
    "decades": dict(setups=["k1-g1-e3-0.9", "k2-g2-e7-0.5"], lengths=[2048]),
}


def _cli(out: Path, figure="fig3") -> list[str]:
    run = KILL_RUNS[figure]
    return [sys.executable, "-m", "sattn", "reproduce", figure, "--profile", "quick",
            "--setups", *run["setups"], "--lengths", *map(str, run["lengths"]),
            "--jobs", "1", "--no-progress", "--out", str(out)]


@pytest.mark.reliability
@pytest.mark.slow
@pytest.mark.parametrize("figure", list(KILL_RUNS))
def test_runs_killed_at_any_point_resume_with_nothing_lost_or_recomputed(tmp_path, figure):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    reproduce(figure, profile="quick", jobs=2, out=tmp_path / "ref", progress=False,
              **KILL_RUNS[figure])
    ref_csv = (tmp_path / "ref" / f"{figure}.csv").read_bytes()
    kill_after = [0, 1, 2, 3]  # finished task files when the run is killed (0: while starting)
    failures, finished_at_kill = [], []
    for k in kill_after:
        out = tmp_path / f"kill{k}"
        proc = subprocess.Popen(_cli(out, figure), cwd=ROOT, env=env, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        tdir = out / "tasks" / figure
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            n = len(list(tdir.glob("*.json"))) if tdir.is_dir() else 0
            if n >= k and (k > 0 or time.time() > deadline - 59.7):
                break
            time.sleep(0.01)
        if proc.poll() is not None:
            failures.append(f"kill after {k}: the run finished before it could be killed")
            continue
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        finished = {p.name: p.read_bytes() for p in tdir.glob("*.json")} if tdir.is_dir() else {}
        finished_at_kill.append(len(finished))
        rerun = subprocess.run(_cli(out, figure), cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=120)
        if rerun.returncode != 0:
            failures.append(f"kill after {k}: resume failed: {rerun.stderr[-500:]}")
            continue
        man = json.loads((out / f"{figure}_manifest.json").read_text())
        computed = {f"{t}.json" for t in man["computed"]}
        problems = []
        if not computed.isdisjoint(finished):
            problems.append(f"recomputed {sorted(computed & set(finished))}")
        if {f"{t}.json" for t in man["reused"]} != set(finished):
            problems.append("reused set differs from the finished files")
        if len(computed) + len(finished) != 4:
            problems.append(f"{len(computed)} computed + {len(finished)} finished != 4 tasks")
        if any((tdir / n).read_bytes() != b for n, b in finished.items()):
            problems.append("a finished file was rewritten")
        if list(tdir.glob(".tmp-*")):
            problems.append("temporary files left behind")
        if (out / f"{figure}.csv").read_bytes() != ref_csv:
            problems.append("resumed CSV differs from an uninterrupted run's")
        if problems:
            failures.append(f"kill after {k}: " + "; ".join(problems))
    record("kill-resume" if figure == "fig3" else f"kill-resume-{figure}",
           title=(f"Runs of `python -m sattn reproduce {figure}` killed with SIGKILL at a point "
                  "of the run, then resumed: nothing lost, duplicated or recomputed, CSV identical "
                  "to an uninterrupted run"),
           tried=len(kill_after), passed=len(kill_after) - len(failures), unit="kill points",
           test=("tests/package/experiments/test_store_faults.py::"
                 f"test_runs_killed_at_any_point_resume_with_nothing_lost_or_recomputed[{figure}]"),
           details={"finished task files at the kill": finished_at_kill, "tasks per run": 4},
           failures=failures)
    assert not failures, "\n".join(failures)


@pytest.mark.reliability
def test_worker_counts_do_not_change_results(tmp_path):
    jobs = [1, 2, -1]
    csvs, failures = {}, []
    for j in jobs:
        man = reproduce("fig3", jobs=j, out=tmp_path / f"j{j}", progress=False, **TINY)
        csvs[j] = (tmp_path / f"j{j}" / "fig3.csv").read_bytes()
        if len(man["computed"]) != 4:
            failures.append(f"jobs={j}: computed {len(man['computed'])} of 4 tasks")
    for j in jobs[1:]:
        if csvs[j] != csvs[jobs[0]]:
            failures.append(f"jobs={j}: CSV differs from jobs=1")
    again = reproduce("fig3", jobs=1, out=tmp_path / "j1", progress=False, **TINY)
    if again["computed"] or len(again["reused"]) != 4:
        failures.append("a second run over finished results recomputed something")
    record("worker-count", title=("The same run with 1, 2 and all workers (joblib): byte-identical "
                                  "CSVs; a second run over the finished results recomputes nothing"),
           tried=len(jobs), passed=len(jobs) - sum(f.startswith("jobs=") for f in failures),
           unit="worker counts", test="tests/package/experiments/test_store_faults.py::test_worker_counts_do_not_change_results",
           details={"tasks per run": 4}, failures=failures)
    assert not failures, "\n".join(failures)
