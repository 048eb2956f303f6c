"""sattn as a library: its wheel installs into a fresh virtual environment, with the dependencies
that ``pyproject.toml`` declares and nothing else, and its command line runs from a folder outside
the repository (no source tree on the path)."""

import csv
import json
import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import fresh_env
import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(cmd, cwd, env, timeout):
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
    return res


def test_runtime_dependencies_are_declared_and_the_extras_are_optional():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in meta["dependencies"]}
    # what `import sattn` imports (tests/package/test_layout.py keeps the imports themselves in check)
    assert {"numpy", "scipy", "matplotlib", "joblib", "threadpoolctl", "mpmath", "tqdm", "ml-dtypes",
            "ipywidgets"} <= names
    assert "dask" not in names and "jax" not in names          # extras, not requirements
    assert set(meta["optional-dependencies"]) == {"dask", "jax", "lab"}
    assert "jupyterlab" not in names and "jupytext" not in names  # the lab command: an extra


@pytest.mark.slow
def test_wheel_installs_in_a_fresh_venv_and_runs_outside_the_repository(tmp_path):
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
         cwd=tmp_path, env=os.environ.copy(), timeout=300)
    (wheel,) = wheels.glob("sattn-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # a clean environment: nothing of the repository or of the test run's own venv on the path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    # its dependencies come from a folder filled once (tests/fresh_env.py), not from the index
    folder = fresh_env.wheelhouse([str(wheel)], "wheel", fresh_env.requires_dist(wheel))
    _run([py, "-m", "pip", "install", "-q", str(wheel)], cwd=tmp_path, env=fresh_env.pip_env(env, folder),
         timeout=600)
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = _run([py, "-c", "import sattn; print(sattn.__file__)"],
                 cwd=work, env=env, timeout=120).stdout.strip()
    assert Path(where).is_relative_to(env_dir), f"sattn imported from {where}, not from the wheel"
    # Dask is an extra: without it a scheduler is a clear error, not an ImportError at import time
    res = subprocess.run([py, "-m", "sattn", "reproduce", "decades", "--profile", "quick",
                          "--scheduler", "local", "--out", "x"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "sattn[dask]" in res.stdout + res.stderr, res.stderr
    _run([py, "-m", "sattn", "bench", "--quick", "--out", "bench.json"], cwd=work, env=env, timeout=600)
    assert json.loads((work / "bench.json").read_text())
    _run([py, "-m", "sattn", "reproduce", "decades", "--profile", "quick", "--no-progress",
          "--out", "decades"], cwd=work, env=env, timeout=600)
    rows = list(csv.DictReader((work / "decades" / "decades.csv").open()))
    assert rows and all(int(r["L"]) > 0 for r in rows)
