"""Filesystem faults under ``python -m sattn reproduce``: an ``error:`` line and exit status 2,
never a traceback (issue 21).

Each case builds a finished run of one tiny task, damages the filesystem around it, and runs the
command line: a read-only ``--out`` (a read-only bind mount when the tests run as root, where
``chmod`` blocks nothing; ``chmod 555`` otherwise), even over complete results; an ``--out``
under ``/sys`` (sysfs refuses new folders); ``--out`` naming a file; a folder in place of the
lock file, of a task file, of the manifest, of the CSV, and a file in place of the tasks folder;
a task file of 10**6 ``[`` (too deeply nested for the JSON parser). After each refusal the
finished task file is unchanged.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sattn.__main__ import main as cli_main
from sattn.experiments.protocol import reproduce
from sattn.runs.store import LOCK_NAME

ROOT = Path(__file__).resolve().parents[3]
RUN = dict(profile="quick", setups=["k1-g1-e3-0.5"], lengths=[64])
ARGS = ["reproduce", "fig3", "--profile", "quick", "--setups", "k1-g1-e3-0.5", "--lengths", "64",
        "--no-progress"]
TASK = "tasks/fig3/fig3_k1-g1-e3-0.5_L64_Q0.5.json"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished") / "run"
    reproduce("fig3", jobs=1, out=out, progress=False, **RUN)
    return out


def _copy(finished, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


def _refused(capsys, out, *match) -> str:
    rc = cli_main([*ARGS, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for m in match:
        assert m in err, err
    return err


@contextlib.contextmanager
def _read_only(folder: Path):
    """``folder`` read-only: a read-only bind mount as root, ``chmod 555`` otherwise."""
    if os.geteuid() == 0:
        if shutil.which("mount") is None:
            pytest.skip("root without mount(8): no way to make a folder read-only")
        bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
        if bind.returncode != 0:
            pytest.skip(f"root, but bind mounts are not permitted here ({bind.stderr.decode()!r})")
        try:
            ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True)
            if ro.returncode != 0:
                pytest.skip(f"read-only remount not permitted here ({ro.stderr.decode()!r})")
            yield "EROFS"
        finally:
            subprocess.run(["umount", str(folder)], check=True)
    else:
        modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")] if p.is_dir()}
        for p in modes:
            p.chmod(0o555)
        try:
            yield "EACCES"
        finally:
            for p, m in modes.items():
                p.chmod(m)


def test_a_read_only_out_over_complete_results(finished, tmp_path, capsys):
    out = _copy(finished, tmp_path)
    before = (out / TASK).read_bytes()
    with _read_only(out) as code:
        err = _refused(capsys, out, str(out / LOCK_NAME), code)
        _refused(capsys, out / "sub", str(out / "sub"), code)      # a new folder under it
    assert "choose a writable --out" in err
    assert (out / TASK).read_bytes() == before


@pytest.mark.slow
def test_a_read_only_out_in_a_subprocess(finished, tmp_path):
    out = _copy(finished, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    with _read_only(out):
        r = subprocess.run([sys.executable, "-m", "sattn", *ARGS, "--out", str(out)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="no sysfs")
def test_an_out_under_sysfs(capsys):
    _refused(capsys, "/sys/kernel/sattn-no-such-folder", "/sys/kernel/sattn-no-such-folder")


def test_out_naming_a_file(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    _refused(capsys, f, "is a file, not a folder")
    assert f.read_text() == "x"


@pytest.mark.parametrize("name, match", [
    (LOCK_NAME, "lock file"),
    (TASK, "result file"),
    ("fig3_manifest.json", "manifest"),
    ("fig3.csv", "CSV"),
])
def test_a_folder_in_place_of_a_file(finished, tmp_path, capsys, name, match):
    out = _copy(finished, tmp_path)
    (out / name).unlink()
    (out / name).mkdir()
    _refused(capsys, out, match, str(out / name))


def test_a_folder_in_place_of_the_csv_of_a_new_run(tmp_path, capsys):
    out = tmp_path / "run"
    (out / "fig3.csv").mkdir(parents=True)
    _refused(capsys, out, str(out / "fig3.csv"), "EISDIR")
    assert not list(out.glob(".tmp-*"))


def test_a_file_in_place_of_the_tasks_folder(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "tasks").write_text("x")
    _refused(capsys, out, "ENOTDIR")


@pytest.mark.parametrize("manifest", [True, False], ids=["with-manifest", "without-manifest"])
def test_a_deeply_nested_task_file(finished, tmp_path, capsys, manifest):
    out = _copy(finished, tmp_path)
    if not manifest:
        (out / "fig3_manifest.json").unlink()
    (out / TASK).write_bytes(b"[" * 10**6)
    _refused(capsys, out, str(out / TASK))
    assert (out / TASK).read_bytes() == b"[" * 10**6
