"""tools/stage_runner.py, the runner of ``make test``: its stage list covers every test file, a stage
starts only after the stages it follows passed, and a failure stops the others and fails loudly.
The runs below start real processes (shell commands that sleep, write and fail)."""

from __future__ import annotations

import glob
import os
import time

import pytest

from tools import stage_runner
from tools.stage_runner import Stage

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_stage_list_is_ordered_and_covers_every_site_test_once():
    stage_runner.check_stages()
    site = [s for s in stage_runner.STAGES if "test-site" in s.command]
    files = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "tests/site/test_*.py")))
    taken = {f: [] for f in files}
    for s in site:
        (arg,) = [a for a in s.command if a.startswith("SITE_TESTS=")]
        words = arg.split("=", 1)[1].split()
        ignored = {w.split("=", 1)[1] for w in words if w.startswith("--ignore=")}
        for target in (w for w in words if not w.startswith("-")):
            for f in files:
                if (f == target or f.startswith(target.rstrip("/") + "/")) and f not in ignored:
                    taken[f].append(s.name)
    assert all(len(v) == 1 for v in taken.values()), taken
    # and every stage of the Makefile's old list is there
    commands = {" ".join(s.command) for s in stage_runner.STAGES}
    for target in ("test-package", "test-notebooks", "test-nbval", "book-after-nbval", "pdf"):
        assert any(c.endswith(" " + target) for c in commands), target


def test_bad_stage_lists_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="follows .*'b'.* not listed before it"):
        stage_runner.check_stages((Stage("a", ("true",), after=("b",)), Stage("b", ("true",))))
    with pytest.raises(ValueError, match="listed twice"):
        stage_runner.check_stages((Stage("a", ("true",)), Stage("a", ("true",))))
    with pytest.raises(ValueError, match=r"unknown stage\(s\) \['nope'\]; the stages are"):
        stage_runner.with_prerequisites(["nope"])
    assert [s.name for s in stage_runner.with_prerequisites(["site-pdf"])] == \
        ["browser", "nbval", "book", "pdf", "site-pdf"]


def _sh(script: str) -> tuple[str, ...]:
    return ("bash", "-c", script)


def test_stages_run_side_by_side_after_what_they_follow(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(stage_runner, "LOGS", str(tmp_path / "logs"))
    monkeypatch.setattr(stage_runner, "TIMES", str(tmp_path / "times.txt"))
    marks = tmp_path / "marks"
    stages = (
        Stage("slow", _sh(f"sleep 1; echo slow >> {marks}")),
        Stage("fast", _sh(f"echo fast >> {marks}")),
        Stage("later", _sh(f"echo later >> {marks}; echo the last line"), after=("slow",)),
    )
    t0 = time.time()
    assert stage_runner.run(stages, poll=0.05) == 0
    assert time.time() - t0 < 4
    assert marks.read_text().split() == ["fast", "slow", "later"]
    out = capsys.readouterr().out
    assert "later: passed in" in out and "the last line" in out and "all stages passed" in out
    assert "later:" in (tmp_path / "times.txt").read_text()


def test_a_failing_stage_stops_the_others_and_prints_its_whole_log(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(stage_runner, "LOGS", str(tmp_path / "logs"))
    monkeypatch.setattr(stage_runner, "TIMES", str(tmp_path / "times.txt"))
    never = tmp_path / "never"
    stages = (
        Stage("long", _sh(f"sleep 30; touch {never}")),
        Stage("bad", _sh("echo first line; seq 1 50; echo broken >&2; exit 3")),
        Stage("after-bad", _sh(f"touch {never}"), after=("bad",)),
    )
    t0 = time.time()
    assert stage_runner.run(stages, poll=0.05) == 1
    assert time.time() - t0 < 20, "the long stage was not stopped"
    assert not never.exists()
    out = capsys.readouterr().out
    assert "bad: FAILED (exit 3)" in out and "first line" in out and "broken" in out
    assert "long: stopped" in out and "FAILED in stage bad" in out
    assert not (tmp_path / "times.txt").exists()
