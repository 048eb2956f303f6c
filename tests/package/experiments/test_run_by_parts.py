"""The runner of tasks made of parts (an acceptance curve, one width at a time): each finished part
is stored at once, a resumed run recomputes none of them and asks for the same parts, a finished
task is stored whole and its parts' files removed; and the acceptance run on it gives the curves of
an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from sattn.experiments.acceptance import load_acceptance, reproduce_acceptance
from sattn.experiments.acceptance.design import (
    DRAWS_PER_PART,
    AcceptanceLevel,
    AcceptanceTask,
    acceptance_tasks,
    count_accepted,
    draws_per_part,
    next_widths,
    run_acceptance_level,
    run_acceptance_task,
)
from sattn.experiments.engine import FastEngine
from sattn.runs.runner import run_by_parts
from sattn.runs.store import OutputLock, StoreError, TaskStore

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Toy:
    """A task whose parts are 0, 1 (first round), then i + 1 after part i while i + 1 < n."""

    name: str
    n: int

    @property
    def task_id(self):
        return f"toy_{self.name}"

    def params(self):
        return {"name": self.name, "n": self.n}


@dataclass(frozen=True)
class ToyPart:
    task: Toy
    i: int

    @property
    def task_id(self):
        return f"{self.task.task_id}_{self.i}"

    def params(self):
        return {"task": self.task.params(), "i": self.i}


def toy_next(task, done):
    have = sorted(r["i"] for r in done)
    if not have:
        return [ToyPart(task, 0), ToyPart(task, 1)]
    nxt = [i for i in (0, 1) if i not in have] or ([have[-1] + 1] if have[-1] + 1 < task.n else [])
    return [ToyPart(task, i) for i in nxt]


def toy_assemble(task, done):
    return {"params": task.params(), "squares": sorted(r["i"] ** 2 for r in done)}


class Interrupted(Exception):
    pass


def test_a_resumed_run_recomputes_no_stored_part_and_removes_the_parts(tmp_path):
    tasks = [Toy("a", 4), Toy("b", 3)]
    calls = []

    def compute(part, stop_after=None):
        if stop_after is not None and len(calls) == stop_after:
            raise Interrupted
        calls.append(part.task_id)
        return {"params": part.params(), "i": part.i}

    with OutputLock(tmp_path) as lock, pytest.raises(Interrupted):
        run_by_parts(tasks, toy_next, lambda p: compute(p, stop_after=5), toy_assemble,
                     tmp_path, "toy", lock, desc="toy", progress=False)
    first = list(calls)
    assert len(first) == 5
    parts = sorted(p.name for p in (tmp_path / "tasks" / "toy_parts").rglob("*.json"))
    assert parts == sorted(f"{c}.json" for c in first)          # each stored as it finished
    assert not list((tmp_path / "tasks" / "toy").glob("*.json"))  # no task finished
    calls.clear()
    with OutputLock(tmp_path) as lock:
        run = run_by_parts(tasks, toy_next, compute, toy_assemble, tmp_path, "toy", lock,
                           desc="toy", progress=False)
    assert set(calls).isdisjoint(first)                          # nothing recomputed
    assert sorted(calls + first) == sorted(
        [f"toy_a_{i}" for i in range(4)] + [f"toy_b_{i}" for i in range(3)])
    assert sorted(run.computed) == ["toy_a", "toy_b"] and not run.reused
    assert run.payloads["toy_a"]["squares"] == [0, 1, 4, 9]
    assert not (tmp_path / "tasks" / "toy_parts").exists()       # parts removed
    # a third run reuses the finished tasks and computes nothing
    calls.clear()
    with OutputLock(tmp_path) as lock:
        run = run_by_parts(tasks, toy_next, compute, toy_assemble, tmp_path, "toy", lock,
                           desc="toy", progress=False)
    assert not calls and sorted(run.reused) == ["toy_a", "toy_b"] and not run.computed


def test_a_corrupted_part_is_refused_and_parts_of_finished_tasks_are_removed(tmp_path):
    tasks = [Toy("a", 3)]

    def compute(part):
        return {"params": part.params(), "i": part.i}

    def stop(part):
        raise Interrupted

    with OutputLock(tmp_path) as lock, pytest.raises(Interrupted):
        run_by_parts(tasks, toy_next, lambda p: compute(p) if p.i == 0 else stop(p),
                     toy_assemble, tmp_path, "toy", lock, desc="toy", progress=False)
    part = tmp_path / "tasks" / "toy_parts" / "toy_a" / "toy_a_0.json"
    good = part.read_bytes()
    part.write_bytes(good.replace(b'"i": 0', b'"i": 7'))
    with OutputLock(tmp_path) as lock, pytest.raises(StoreError, match="toy_a_0.json"):
        run_by_parts(tasks, toy_next, compute, toy_assemble, tmp_path, "toy", lock, desc="toy",
                     progress=False)
    part.write_bytes(good)
    with OutputLock(tmp_path) as lock:
        run_by_parts(tasks, toy_next, compute, toy_assemble, tmp_path, "toy", lock, desc="toy",
                     progress=False)
    # a part left beside its finished task (a run killed between the two) goes at the next run
    part.parent.mkdir(parents=True)
    part.write_bytes(good)
    with OutputLock(tmp_path) as lock:
        run = run_by_parts(tasks, toy_next, compute, toy_assemble, tmp_path, "toy", lock,
                           desc="toy", progress=False)
    assert run.reused == ["toy_a"] and not (tmp_path / "tasks" / "toy_parts").exists()


def test_next_widths_replays_the_order_of_measure_curve():
    """next_widths asks, from the counts alone, for the widths measure_curve visits, in order."""
    task = acceptance_tasks("quick")[0]
    rule = dict(task.rule)
    for curve in ({d: (12, 0) for d in range(200)}, {d: (12, 12) for d in range(200)},
                  {d: (12, min(12, max(0, d - 28))) for d in range(200)}):
        counts, order = {}, []
        while ws := next_widths(list(task.widths), task.L, rule, counts):
            for d in ws:
                counts[d] = curve[d]
                order.append(d)
        assert order[:len(task.widths)] == list(task.widths)
        assert len(order) <= len(task.widths) + 2 * rule["max"]
        assert len(set(order)) == len(order)


@pytest.mark.slow
def test_acceptance_resumes_inside_a_curve_after_sigkill(tmp_path):
    """Killed after a width of a curve was stored and before the curve ended, the run resumes
    there, and the curves equal those of the whole curve measured in one process."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "sattn", "reproduce", "acceptance", "--profile", "quick",
           "--setups", "k2-g2-e7-0.5", "--lengths", "128", "--jobs", "1", "--no-progress",
           "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    parts = out / "tasks" / "acceptance_parts"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if parts.is_dir() and any(parts.rglob("*.json")):
            break
        time.sleep(0.005)                               # polling the condition: a stored width
    os.killpg(proc.pid, signal.SIGSTOP)                 # frozen there
    assert proc.poll() is None, "the run finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = {p.name: json.loads(p.read_text())["payload"] for p in parts.rglob("*.json")}
    assert stored and not list((out / "tasks" / "acceptance").glob("*.json"))
    assert not (out / "acceptance.csv").exists()
    rerun = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert not parts.exists()
    for t in acceptance_tasks("quick", setups=["k2-g2-e7-0.5"], lengths=[128]):
        rec = json.loads((out / "tasks" / "acceptance" / f"{t.task_id}.json").read_text())
        whole = run_acceptance_task(t)
        assert rec["payload"]["params"] == whole["params"]
        assert rec["payload"]["result"] == whole["result"]
        for name, part in stored.items():               # the stored widths were kept as stored
            if name.startswith(t.task_id + "_d"):
                d, start, n, succ, s1 = part["result"]
                assert start == 0 and n == t.draws           # the quick profile: one part a width
                assert [d, n, succ, s1] in rec["payload"]["result"]["levels"]
    assert {r["L"] for r in load_acceptance(out)} == {128}


@pytest.mark.slow
def test_jobs_do_not_change_the_curves(tmp_path):
    m1 = reproduce_acceptance(profile="quick", lengths=[64], jobs=1, out=tmp_path / "j1",
                              progress=False)
    m2 = reproduce_acceptance(profile="quick", lengths=[64], jobs=2, out=tmp_path / "j2",
                              progress=False)
    assert (tmp_path / "j1" / "acceptance.csv").read_bytes() == \
        (tmp_path / "j2" / "acceptance.csv").read_bytes()
    assert m1["checksums"]["csv"] == m2["checksums"]["csv"]
    assert all(v["peak_rss_mib"] > 0 and v["seconds"] > 0 for v in m1["per_task"].values())
    assert isinstance(acceptance_tasks("quick")[0], AcceptanceTask)


def test_the_manifest_adds_up_each_curves_cpu_time_and_counts_parts_stored_without_one(tmp_path):
    """Every part records its CPU seconds beside its wall seconds; a curve's CPU time is the sum
    of its parts'; a part stored before parts recorded CPU time (here: one with the field removed)
    is counted in the curve's and the run's ``parts_without_cpu_seconds``, and the curve's counts
    are those of a run that stored every part itself."""
    task = acceptance_tasks("quick", setups=["k1-g1-e3-0.9"], lengths=[64])[0]
    level = AcceptanceLevel(task, task.widths[0], 0, min(DRAWS_PER_PART, task.draws), False)
    rec = run_acceptance_level(level)
    assert rec["cpu_seconds"] > 0 and rec["seconds"] > 0
    old = {k: v for k, v in rec.items() if k != "cpu_seconds"}
    resumed = tmp_path / "resumed"
    parts = TaskStore(resumed / "tasks" / "acceptance_parts" / task.task_id)
    parts.root.mkdir(parents=True)
    parts.save(level, old)
    man = reproduce_acceptance(profile="quick", setups=["k1-g1-e3-0.9"], lengths=[64],
                               out=resumed, progress=False)
    whole = reproduce_acceptance(profile="quick", setups=["k1-g1-e3-0.9"], lengths=[64],
                                 out=tmp_path / "whole", progress=False)
    assert (resumed / "acceptance.csv").read_bytes() == \
        (tmp_path / "whole" / "acceptance.csv").read_bytes()
    cost = man["per_task"][task.task_id]
    assert cost["parts_without_cpu_seconds"] == 1 and cost["cpu_seconds"] > 0
    others = [v for k, v in man["per_task"].items() if k != task.task_id]
    assert others and all("parts_without_cpu_seconds" not in v and v["cpu_seconds"] > 0
                          for v in others)
    assert man["task_cpu_seconds_total"]["parts_without"] == 1
    assert man["task_cpu_seconds_total"]["curves_without"] == 0
    assert man["task_cpu_seconds_total"]["seconds"] == pytest.approx(
        sum(v["cpu_seconds"] for v in man["per_task"].values()), abs=0.01)
    assert whole["task_cpu_seconds_total"]["parts_without"] == 0


@pytest.mark.slow
def test_a_width_counted_in_parts_gives_the_counts_of_counting_it_at_once():
    """The partial set's size carries from part to part (``warm``), so parts add up exactly."""
    task = acceptance_tasks("quick", setups=["k2-g2-e7-0.5"], lengths=[128])[0]
    eng = FastEngine(task.target_task().sample_target(), task.setup.eps1, task.setup.eps2)
    for d in task.widths:
        whole = count_accepted(eng, d, 12, task.root_seed, task.draw_key())
        succ = s1 = 0
        warm = False
        for start in range(0, 12, 5):
            n = min(5, 12 - start)
            a, b = count_accepted(eng, d, n, task.root_seed, task.draw_key(), start=start,
                                  warm=warm)
            succ, s1, warm = succ + a, s1 + b, warm or b < n
        assert (succ, s1) == whole, d


def test_parts_hold_fewer_draws_beyond_32768():
    assert [draws_per_part(L) for L in (64, 32768, 65536, 131072, 2 ** 20, 2 ** 30)] == \
        [16, 16, 8, 4, 1, 1]
    with pytest.raises(ValueError):
        draws_per_part(0)
    task = acceptance_tasks("out-of-sample", setups=["k2-g1-e7-0.5"], lengths=[131072])[0]
    small = AcceptanceLevel(task, task.widths[0], 0, 4, False)
    old = AcceptanceLevel(task, task.widths[0], 0, 16, False)
    assert small.task_id == old.task_id + "_n4" and small.stored_as() == (old,)
    assert old.stored_as() == () and AcceptanceLevel(task, task.widths[0], 4, 4, True).stored_as() == ()
    last = AcceptanceLevel(task, task.widths[0], 60, 4, True)       # the old rule's size there too
    assert last.task_id.endswith("_i60") and last.stored_as() == ()


def test_a_run_with_smaller_parts_resumes_the_parts_an_older_run_stored_on_disk(tmp_path, monkeypatch):
    """A part stored by a run with the old size (all draws of the first width in one part, under
    the old id) is loaded, not recomputed, when the run now splits widths into smaller parts
    (``PART_L`` lowered so that L = 128 gets parts of 8 draws); the other widths are computed in
    the smaller parts, and the curves equal those of a run that never changed its parts."""
    from sattn.experiments.acceptance import design

    task = acceptance_tasks("quick", setups=["k1-g1-e3-0.9"], lengths=[128])[0]
    assert draws_per_part(128) == 16 and task.draws == 12     # the old rule: one part a width
    first = AcceptanceLevel(task, task.widths[0], 0, 12, False)
    rec = run_acceptance_level(first)
    del rec["cpu_seconds"]                        # marks the record as the old run's
    resumed = tmp_path / "resumed"
    parts = TaskStore(resumed / "tasks" / "acceptance_parts" / task.task_id)
    parts.root.mkdir(parents=True)
    parts.save(first, rec)
    assert parts.path(first).name == f"{task.task_id}_d{task.widths[0]}_i0.json"

    monkeypatch.setattr(design, "PART_L", 64)
    assert draws_per_part(128) == 8
    computed = []
    real = design.run_acceptance_level

    def spy(level):
        computed.append((level.curve.task_id, level.d, level.start, level.count))
        return real(level)
    monkeypatch.setattr(design, "run_acceptance_level", spy)
    man = reproduce_acceptance(profile="quick", setups=["k1-g1-e3-0.9"], lengths=[128], jobs=1,
                               out=resumed, progress=False)
    assert (task.task_id, task.widths[0], 0, 8) not in computed          # loaded instead
    mine = [c for c in computed if c[0] == task.task_id]
    assert mine and {c[3] for c in mine} == {8, 4} and all(c[1] != task.widths[0] for c in mine)
    assert man["per_task"][task.task_id]["parts_without_cpu_seconds"] == 1

    monkeypatch.undo()
    whole = tmp_path / "whole"
    reproduce_acceptance(profile="quick", setups=["k1-g1-e3-0.9"], lengths=[128], jobs=1,
                         out=whole, progress=False)
    assert (resumed / "acceptance.csv").read_bytes() == (whole / "acceptance.csv").read_bytes()
