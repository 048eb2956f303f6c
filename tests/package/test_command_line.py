"""``python -m sattn``: every option honoured or refused before any work, known values as
``choices``, output paths checked first, ``--version``, and the ``lab`` extra named when missing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sattn
from sattn import __main__ as cli
from sattn.runs import bench
from sattn.runs.store import StoreError, validate_output_file
from sattn.presentation import lab

REPO = Path(__file__).resolve().parents[2]


def exit_status(argv) -> int:
    """The exit status of ``python -m sattn argv``: argparse's own refusals exit with 2 too."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code


def test_version(capsys):
    assert exit_status(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"sattn {sattn.__version__}"


def test_version_from_a_fresh_interpreter():
    res = subprocess.run([sys.executable, "-m", "sattn", "--version"], capture_output=True, text=True,
                         cwd=REPO, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 0 and res.stdout.strip() == f"sattn {sattn.__version__}", res.stderr


#: Every option of ``reproduce`` that an experiment could be given, with a valid value.
GIVEN = {"setups": ["--setups", "k1-g1-e3-0.9"], "lengths": ["--lengths", "128"],
         "jobs": ["--jobs", "2"], "scheduler": ["--scheduler", "local"],
         "workers": ["--workers", "2"], "budget": ["--budget", "8"], "no_compute": ["--no-compute"]}
REFUSED = [(exp, opt) for exp in cli.EXPERIMENTS for opt in GIVEN if opt not in cli.OPTIONS[exp]]


def test_the_option_table_covers_every_experiment_and_option():
    assert set(cli.OPTIONS) == set(cli.EXPERIMENTS) == set(cli.EXPERIMENT_PROFILES)
    assert {o for opts in cli.OPTIONS.values() for o in opts} <= set(GIVEN)
    # width-bits ignored five of them silently before; now it honours --jobs and refuses the rest
    assert set(cli.OPTIONS["width-bits"]) == set(cli.OPTIONS["width-codes"]) == {"jobs"}
    assert ("width-bits", "setups") in REFUSED and ("fig5", "jobs") in REFUSED


@pytest.mark.parametrize("experiment,option", REFUSED, ids=[f"{e}-{o}" for e, o in REFUSED])
def test_an_option_an_experiment_does_not_use_is_refused_before_any_work(experiment, option, capsys,
                                                                         tmp_path):
    out = tmp_path / "out"
    assert exit_status(["reproduce", experiment, *GIVEN[option], "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"reproduce {experiment} does not use --{option.replace('_', '-')}" in err, err
    assert not out.exists()                                # refused before the folder was touched


def test_width_bits_help_lists_the_experiments(capsys):
    assert exit_status(["reproduce", "width-bits", "--help"]) == 0
    assert "width-bits" in capsys.readouterr().out


@pytest.mark.parametrize("argv,value", [
    (["reproduce", "fig7"], "fig7"),
    (["reproduce", "fig3", "--setups", "k9"], "k9"),
    (["reproduce", "fig3", "--profile", "huge"], "huge"),
    (["setups", "--profile", "huge"], "huge"),
])
def test_known_values_are_choices(argv, value, capsys):
    assert exit_status(argv) == 2
    assert f"invalid choice: '{value}'" in capsys.readouterr().err


def test_width_bits_refuses_a_profile_it_does_not_have(capsys, tmp_path):
    assert exit_status(["reproduce", "width-bits", "--profile", "paper-q1",
                        "--out", str(tmp_path / "o")]) == 2
    assert "width-bits has the profiles quick, paper" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("experiment,profile,has", [
    ("acceptance", "paper-q1", "paper, out-of-sample, quick"),
    ("fig3", "out-of-sample", "paper, paper-q1, quick"),
    ("width-codes", "out-of-sample", "quick, paper"),
])
def test_each_experiment_refuses_a_profile_it_does_not_have(experiment, profile, has, capsys,
                                                            tmp_path):
    assert exit_status(["reproduce", experiment, "--profile", profile,
                        "--out", str(tmp_path / "o")]) == 2
    assert f"{experiment} has the profiles {has}, got '{profile}'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_registered_out_of_sample_command_is_accepted(capsys, tmp_path):
    """The command the out-of-sample registration names (`reproduce acceptance --profile
    out-of-sample`) gets past the parser and the option checks: with --no-compute on an empty
    folder it stops at the store, with the store's own message."""
    assert exit_status(["reproduce", "acceptance", "--profile", "out-of-sample", "--setups",
                        "k1-g1-e3-0.9", "--lengths", "65536", "--no-compute", "--no-progress",
                        "--out", str(tmp_path / "o")]) == 2
    assert "no finished curve in" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()                   # refused before the folder was touched


# ------------------------------------------------------------------ bench: where it writes
def test_bench_writes_nothing_unless_told():
    assert cli.build_parser().parse_args(["bench"]).out is None
    assert bench.main.__defaults__ == (False, None)


@pytest.mark.parametrize("where", ["a folder", "under a file"])
def test_bench_checks_its_output_before_any_work(where, tmp_path, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the benchmark ran before its output was checked")
    monkeypatch.setattr(bench, "compare", no_work)
    (tmp_path / "file").write_text("")
    out = tmp_path if where == "a folder" else tmp_path / "file" / "results.json"
    assert exit_status(["bench", "--quick", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and str(out if where == "a folder" else out.parent) in err, err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes to a read-only folder")
def test_validate_output_file_refuses_a_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(StoreError, match="permission denied"):
            validate_output_file(ro / "results.json")
    finally:
        ro.chmod(0o755)


def test_validate_output_file_creates_the_folder_and_leaves_nothing_else(tmp_path):
    path = validate_output_file(tmp_path / "a" / "b" / "results.json")
    assert path.parent.is_dir() and not list(path.parent.iterdir())


# ------------------------------------------------------------------ lab: the extra
def test_lab_names_the_extra_when_a_requirement_is_missing(monkeypatch, capsys, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jupytext" else real(name, *a))
    assert lab.missing_lab_requirements() == ["jupytext"]
    assert exit_status(["lab", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "missing: jupytext" in err and "pip install 'sattn[lab]'" in err, err


def test_lab_reports_missing_modules_in_a_fresh_interpreter(tmp_path):
    """A fresh interpreter in which yaml cannot be imported (``sys.modules["yaml"] = None``, as
    for a module that is not installed): the command says so in one line, with the extra."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['yaml'] = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    res = subprocess.run([sys.executable, "-m", "sattn", "lab", str(tmp_path)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120, env=env)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "missing: pyyaml" in res.stderr and "sattn[lab]" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_the_lab_extra_declares_what_the_command_needs():
    import tomllib
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {r.split(">")[0].split("=")[0].strip().lower() for r in meta["optional-dependencies"]["lab"]}
    assert set(lab.LAB_REQUIREMENTS.values()) <= declared
    pins = {line.split("==")[0].strip().lower(): line.split("==")[1].split()[0]
            for line in (REPO / "requirements.txt").read_text().splitlines() if "==" in line}
    for req in meta["optional-dependencies"]["lab"]:
        name, floor = req.split(">=")
        assert name.lower() in pins, f"{name}: pin it in requirements.txt"
        assert tuple(map(int, pins[name.lower()].split(".")[:2])) >= tuple(map(int, floor.split(".")[:2]))

