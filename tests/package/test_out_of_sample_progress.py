"""tools/out_of_sample_progress.py: what the out-of-sample run has stored, and a lower bound of
what is left, read from a store laid out as the run lays it out."""

from __future__ import annotations

import json

from sattn.experiments.acceptance.design import acceptance_tasks
from tools import out_of_sample_progress as prog


def _write(path, payload):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"payload": payload, "sha256": "not checked here"}))


def test_progress_counts_whole_curves_parts_and_the_cost_left(tmp_path, capsys):
    tasks = acceptance_tasks("out-of-sample")
    whole, partial = tasks[0], tasks[-1]
    _write(tmp_path / "tasks" / "acceptance" / f"{whole.task_id}.json",
           {"result": {"levels": [[d, 64, 10, 0] for d in whole.widths]}, "seconds": 5.0,
            "cpu_seconds": 4.0})
    parts = tmp_path / "tasks" / "acceptance_parts" / partial.task_id
    d0, d1 = partial.widths[:2]
    # width d0: 8 draws timed (2 s each) and 16 stored before CPU time was recorded
    _write(parts / "a.json", {"result": [d0, 0, 16, 3, 0], "seconds": 99.0})
    _write(parts / "b.json", {"result": [d0, 16, 8, 2, 0], "seconds": 20.0, "cpu_seconds": 16.0})
    # width d1: only a part without CPU time
    _write(parts / "c.json", {"result": [d1, 0, 16, 0, 16], "seconds": 1.0})
    recs = {r["curve"]: r for r in prog.progress(tmp_path)}
    assert len(recs) == len(tasks)
    w = recs[whole.task_id]
    assert w["complete"] and w["draws"] == w["needed"] == 64 * len(whole.widths)
    assert w["left"] == 0 and w["cpu_seconds"] == 4.0
    p = recs[partial.task_id]
    assert not p["complete"] and p["draws"] == 40
    assert p["needed"] == 64 * len(partial.widths)
    assert p["cpu_seconds"] == 16.0 and p["cpu_incomplete"]
    assert p["left"] == (64 - 24) * 2.0            # 40 draws left at d0, 2 CPU s each
    assert p["untimed"] == 64 - 16                 # d1's draws left, no cost known
    untouched = recs[tasks[1].task_id]
    assert untouched["draws"] == 0 and untouched["left"] == 0
    prog.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "1 of 12 curves complete" in out and "CPU time left, at least: 80 s, and 48 draws" in out
