"""The audit of stored engine tasks (tools/audit_engine_rank.py) and the rule by which the
migration (tools/migrate_engine_version.py) carries a task over to engine version fast-3."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))

import audit_engine_rank  # noqa: E402
import migrate_engine_version  # noqa: E402

# the record of this task as engine version fast-2 stored it (before the carry-over to fast-3,
# which recomputed it; the file is git's copy of data/tasks/fig3 at version fast-2)
FLAGGED = Path(__file__).parent / "fixtures" / "fig3_k2-g1-e3-0.9_L1024_Q0.1.fast-2.json"
CLEAN = REPO / "data" / "tasks" / "fig3" / "fig3_k4-g1-e7-0.9_L512_Q0.1.json"


def test_the_replay_matches_the_stored_counts_and_finds_the_dependent_draws():
    """A fig3 task stored by fast-2 whose target has equal rows of B: the replay of stage 1
    agrees with the record at every width without a dependent draw and finds seven dependent
    draws, at d = 72 and at d_min = 78; recomputed with span_basis=True, width 78 is unchanged and width 72
    differs only in how its rejected draws split between stage 1 and screening."""
    rec = audit_engine_rank.audit_task(str(FLAGGED))
    assert rec["method"] == "replay" and rec["faithful"]
    assert rec["dependent_draws"] == 7 and {d for d, _ in rec["dependent_at"]} == {72, 78}
    assert set(rec["stage1_mismatch_at"]) <= {72, 78}
    (old72, new72), (old78, new78) = rec["recomputed_levels"]
    assert old72[:3] == new72[:3] == [72, 103, 0] and old72[3] + old72[4] == new72[3] + new72[4]
    assert old72 != new72 and old78 == new78 and old78[:3] == [78, 55, 1]     # d_min = 78
    assert not rec["recomputed_equal"]
    clean = audit_engine_rank.audit_task(str(CLEAN))
    assert clean["dependent_draws"] == 0 and clean["faithful"] and clean["recomputed_levels"] == []


def test_k1_targets_are_cleared_from_the_target_alone():
    path = REPO / "data" / "tasks" / "fig3" / "fig3_k1-g1-e3-0.9_L512_Q0.1.json"
    if not path.exists():
        pytest.skip("the shipped fig3 data are not in this checkout")
    rec = audit_engine_rank.audit_task(str(path))
    assert rec["method"] == "target" and rec["faithful"] and rec["dependent_draws"] == 0


def _acceptance(levels, widths, rule):
    return {"params": {"figure": "acceptance", "L": 1024, "widths": widths, "rule": rule},
            "result": {"levels": levels}}


RULE = {"down": 1.06, "high_p": 0.4, "low_p": 0.1, "max": 4, "up": 1.08}


def test_a_task_is_carried_over_only_when_its_records_follow():
    current = migrate_engine_version._current_levels
    levels = [[30, 128, 5, 100], [33, 128, 40, 60], [36, 128, 90, 10]]
    clean = {"faithful": True, "dependent_draws": 0, "recomputed_levels": []}
    assert current(_acceptance(levels, [30, 33, 36], RULE), clean) == levels
    # a recomputed width that is unchanged, and one whose count moved without moving the design
    same = {"faithful": True, "dependent_draws": 2,
            "recomputed_levels": [[levels[1], levels[1]]]}
    assert current(_acceptance(levels, [30, 33, 36], RULE), same) == levels
    moved = {"faithful": True, "dependent_draws": 2,
             "recomputed_levels": [[levels[1], [33, 128, 41, 59]]]}
    assert current(_acceptance(levels, [30, 33, 36], RULE), moved)[1] == [33, 128, 41, 59]
    # the top width falls below high_p: the extension rule now asks for a width never measured
    fell = {"faithful": True, "dependent_draws": 1,
            "recomputed_levels": [[levels[2], [36, 128, 40, 10]]]}
    assert current(_acceptance(levels, [30, 33, 36], RULE), fell) is None
    # a d_min scan whose record changed, and a replay that disagreed with the record
    scan = {"params": {"figure": "fig3"}, "result": {"levels": [[66, 52, 0, 50, 2, 0]]}}
    assert current(scan, {"faithful": True, "dependent_draws": 1,
                          "recomputed_levels": [[[66, 52, 0, 50, 2, 0],
                                                 [66, 52, 0, 51, 1, 0]]]}) is None
    assert current(scan, {"faithful": False, "dependent_draws": 0,
                          "recomputed_levels": []}) is None


@pytest.mark.parametrize("folder", ["data", "data/q1"])
def test_the_shipped_data_are_carried_over_and_the_migration_leaves_them(folder, capsys):
    """Every stored engine task is at the current engine version, so a second run of the
    migration finds nothing to carry over and nothing to recompute."""
    if not (REPO / folder / "engine_rank_audit.jsonl").exists():
        pytest.skip("no audit in this checkout")
    assert migrate_engine_version.main(["--dry-run", "--data", str(REPO / folder)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "all: 0 carried over, 0 to recompute (dry run: nothing written)")


@pytest.mark.parametrize("folder", ["data", "data/q1"])
def test_the_committed_audit_covers_every_stored_task_as_it_is(folder):
    """<folder>/engine_rank_audit.jsonl holds one record for each stored engine task of the
    folder, with the draw count of the task's file (except a task recomputed by a later engine
    version)."""
    log = REPO / folder / "engine_rank_audit.jsonl"
    if not log.exists():
        pytest.skip("no audit in this checkout")
    audit = {r["task"]: r for r in map(json.loads, log.read_text().splitlines())}
    files = [f for e in audit_engine_rank.EXPERIMENTS
             for f in sorted((REPO / folder / "tasks" / e).glob("*.json"))]
    assert {f.name for f in files} == set(audit)
    for f in files:
        payload = json.loads(f.read_text())["payload"]
        if payload["params"]["engine"] != "fast-2" and "engine_audit" not in payload:
            continue                                   # recomputed, not carried over
        assert audit[f.name]["draws"] == sum(lv[1] for lv in payload["result"]["levels"])
