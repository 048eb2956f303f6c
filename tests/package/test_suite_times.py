"""tools/suite_times.py: the stages of make test, each timed, stopping at the first that fails."""

from __future__ import annotations

import os

from tools import suite_times


def test_the_stages_are_make_tests_own():
    stages = suite_times.make_test_stages()
    assert stages[:3] == ["test-package", "test-notebooks", "test-nbval"]
    assert "book-after-nbval" in stages and "test-site" in stages
    with open(os.path.join(suite_times.ROOT, "Makefile"), encoding="utf-8") as f:
        assert "suite_times.py $(STAGES)" in f.read()


def test_each_stage_is_timed_and_a_failure_stops_the_run(tmp_path):
    (tmp_path / "Makefile").write_text(
        "quick:\n\t@true\nslow:\n\t@sleep 0.3\nbad:\n\t@exit 3\nnever:\n\t@touch ran\n")
    done, total = suite_times.run(["quick", "slow", "bad", "never"], cwd=str(tmp_path))
    assert [(s, c) for s, _, c in done] == [("quick", 0), ("slow", 0), ("bad", 2)]
    seconds = dict((s, t) for s, t, _ in done)
    assert seconds["slow"] >= 0.3 > seconds["quick"] and total >= sum(seconds.values())
    assert not (tmp_path / "ran").exists()
    text = suite_times.table(done, total)
    assert "bad" in text and "FAILED (exit 2)" in text and "total" in text
