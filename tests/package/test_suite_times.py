"""tools/suite_times.py: the stages of make test, each timed, stopping at the first that fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tools import suite_times


def test_the_stages_are_make_tests_own():
    stages = suite_times.make_test_stages()
    assert stages[:3] == ["test-package", "test-notebooks", "test-nbval"]
    assert "book-after-nbval" in stages
    # every site test runs: the pages beside the PDF, then the PDF's own
    assert "test-site-pages+pdf" in stages and stages[-1] == "test-pdf"
    assert stages.index("browser") < stages.index("test-site-pages+pdf")
    with open(os.path.join(suite_times.ROOT, "Makefile"), encoding="utf-8") as f:
        assert "suite_times.py $(STAGES)" in f.read()


def test_each_stage_is_timed_and_a_failure_stops_the_run(tmp_path):
    (tmp_path / "Makefile").write_text(
        "quick:\n\t@true\nslow:\n\t@sleep 0.3\nbad:\n\t@exit 3\nnever:\n\t@touch ran\n")
    done, total = suite_times.run(["quick", "slow", "bad", "never"], cwd=str(tmp_path))
    assert [(d[0], d[2]) for d in done] == [("quick", 0), ("slow", 0), ("bad", 2)]
    seconds = {d[0]: d[1] for d in done}
    assert seconds["slow"] >= 0.3 > seconds["quick"] and total >= sum(seconds.values())
    assert not (tmp_path / "ran").exists()
    text = suite_times.table(done, total)
    assert "bad" in text and "FAILED (exit 2)" in text and "total" in text


@pytest.mark.slow
def test_a_group_runs_at_once_and_reports_each_member(tmp_path, capsys):
    (tmp_path / "Makefile").write_text(
        "a:\n\t@sleep 2; echo from-a\nb:\n\t@sleep 2; echo from-b; nice\n"
        "bad:\n\t@sleep 0.2; exit 4\nnever:\n\t@touch ran\n")
    done, total = suite_times.run(["a+b"], cwd=str(tmp_path))
    assert [(d[0], d[2]) for d in done] == [("a", 0), ("b", 0), ("a+b", 0)]
    assert total < 3.5                  # at the same time: one after the other takes 4 s or more
    out = capsys.readouterr().out
    # b's output comes whole after the group, with its priority (nice prints it): 10 lower
    assert "output of make b" in out and "from-b\n10" in out
    done, _ = suite_times.run(["a+bad", "never"], cwd=str(tmp_path))
    assert [(d[0], d[2]) for d in done] == [("a", 0), ("bad", 2), ("a+bad", 1)]
    assert not (tmp_path / "ran").exists()


# 0.6 s of CPU time in one line (a recipe line cannot hold a loop statement)
BURN = "import time; t = time.process_time(); all(iter(lambda: time.process_time() - t < 0.6, False))"


@pytest.mark.slow
def test_each_stage_reports_the_cpu_time_of_the_processes_under_it(tmp_path):
    """A stage's CPU time counts its descendants (here a Python child of make's shell), not its
    wall time: a stage that sleeps uses almost none, one that computes about its wall time; a
    group's CPU time is its members' sum; the table turns the total into a least wall time."""
    py = sys.executable
    (tmp_path / "Makefile").write_text(
        f"idle:\n\t@sleep 0.6\nbusy:\n\t@{py} -c '{BURN}'\n"
        f"group-a:\n\t@{py} -c '{BURN}'\ngroup-b:\n\t@sleep 0.6\n")
    done, total = suite_times.run(["idle", "busy", "group-a+group-b"], cwd=str(tmp_path))
    cpu = {d[0]: d[3] for d in done}
    assert cpu["idle"] < 0.2 and cpu["group-b"] < 0.2
    assert cpu["busy"] >= 0.6 and cpu["group-a"] >= 0.6
    assert cpu["group-a+group-b"] == cpu["group-a"] + cpu["group-b"]   # nothing was orphaned
    assert suite_times.cpu_total(done) == pytest.approx(
        cpu["idle"] + cpu["busy"] + cpu["group-a"] + cpu["group-b"], abs=1e-9)
    text = suite_times.table(done, total, cores=2)
    least = suite_times.cpu_total(done) / 2
    assert f"at least {least:.1f} s of wall time" in text and "cores busy" in text


def test_an_unwritable_out_path_is_refused_before_any_stage_runs(tmp_path, capsys):
    (tmp_path / "Makefile").write_text("never:\n\t@touch ran\n")
    with pytest.raises(SystemExit) as e:
        suite_times.main(["never", "--out", str(tmp_path / "missing" / "times.json")])
    assert e.value.code == 2
    assert "not a writable folder" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux's")
def test_the_command_line_counts_the_cpu_time_of_orphaned_processes(tmp_path):
    """A process whose parent ends first (as Chromium's renderers do when the browser is closed)
    is handed to init, so its CPU time reaches no one who waits: run() without adopting misses
    it. The command line makes itself the subreaper, adopts it and counts it in its stage."""
    (tmp_path / "Makefile").write_text(
        f"orphan:\n\t@({sys.executable} -c '{BURN}' &) ; sleep 2\n")
    done, _ = suite_times.run(["orphan"], cwd=str(tmp_path))
    assert done[0][3] < 0.3                      # the orphan's 0.6 s went to init
    out = tmp_path / "times.json"
    proc = subprocess.run([sys.executable, os.path.join(suite_times.ROOT, "tools", "suite_times.py"),
                           "-C", str(tmp_path), "orphan", "--out", str(out),
                           "--keep", str(tmp_path / "kept.txt")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "every process under each stage counted" in proc.stdout
    times = json.loads(out.read_text())
    assert times["stages"][0]["cpu_seconds"] >= 0.6 and times["cpu_seconds"] >= 0.6
