"""The runnable kit (sattn-kit.zip at the root of the built site, tools/make_kit.py): unpacked into
an empty folder, installed into a fresh venv as its README.txt says, and one data-reading chapter
(07, experiments: data/ and benchmarks/results.json) executed there, with nothing of the book's
checkout importable."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
import zipfile

import pytest

from conftest import ROOT

import fresh_env  # noqa: E402  (tests/)
import book_version  # noqa: E402  (tools/)
import make_kit  # noqa: E402

CHAPTER = "07_experiments"


@pytest.fixture(scope="module")
def kit(html_dir, tmp_path_factory):
    path = os.path.join(html_dir, make_kit.KIT_NAME)
    assert os.path.exists(path), f"no kit at {path}: make book writes it"
    where = tmp_path_factory.mktemp("kit")
    assert not os.listdir(where)
    with zipfile.ZipFile(path) as z:
        z.extractall(where)
    (top,) = os.listdir(where)
    return where / top


def test_kit_layout(kit, html_dir):
    v = book_version.version()
    assert kit.name == f"sattn-kit-{v}"
    wheels = list(kit.glob("sattn-*.whl"))
    assert [w.name for w in wheels] == [f"sattn-{v}-py3-none-any.whl"]
    chapters = {p.name for p in (kit / "chapters").iterdir()}
    for md in make_kit.notebook_chapters():
        assert os.path.basename(md) in chapters, f"{md} missing from the kit"
    assert "intro.md" in chapters
    for item in make_kit.KIT_DATA:
        assert (kit / item).exists(), f"{item} missing from the kit"
    assert {p.name for p in (kit / "data").iterdir()} >= {"fig3.csv", "fig3_manifest.json"}
    readme = (kit / "README.txt").read_text().splitlines()
    howto = [line for line in readme if line.startswith((".venv/", "python3 -m venv"))]
    assert len(howto) == 2 and wheels[0].name in howto[0] and "-m sattn lab chapters" in howto[1], readme
    assert "jupytext.toml" in chapters
    # nothing shipped names a folder of the machine that built it (tracebacks, manifests' commands)
    machine = re.compile(r"(?:/home/|/work/|/root/|/tmp/|/Users/|site-packages/)")
    for p in kit.rglob("*"):
        if p.is_file() and p.suffix in (".json", ".ipynb", ".md", ".txt", ".csv"):
            hits = machine.findall(p.read_text(errors="replace"))
            assert not hits, f"{p.relative_to(kit)} names folders of the build machine: {hits[:3]}"
    # the kit pins exactly what the book pins
    book = {m.group(1).lower(): m.group(0) for m in re.finditer(
        r"^([A-Za-z0-9_.\-]+(?:\[[A-Za-z0-9_,\-]+\])?)==([^\s#]+)",
        open(os.path.join(ROOT, "requirements.txt")).read(), re.M)}
    for line in (kit / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert book.get(line.split("==")[0].lower()) == line, line
    info = json.loads((kit / "KIT.json").read_text())
    assert info["version"] == v


def test_kit_installs_in_a_fresh_venv_and_runs_a_data_chapter(kit):
    env = {k: val for k, val in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "JUPYTER_PATH", "JUPYTER_DATA_DIR")}
    env.update(OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0", PIP_DISABLE_PIP_VERSION_CHECK="1")
    lines = [line for line in (kit / "README.txt").read_text().splitlines()
             if line.startswith("python3 -m venv")]
    # the wheels it needs come from a folder filled once (tests/fresh_env.py), not from the index
    wheel = next(kit.glob("*.whl"))
    requirements = (kit / "requirements.txt").read_text()
    folder = fresh_env.wheelhouse(["-r", str(kit / "requirements.txt"), str(wheel)], "kit",
                                  requirements + "\n" + fresh_env.requires_dist(wheel))
    t0 = time.time()
    install = lines[0]  # exactly what the README says (python3 on PATH)
    r = subprocess.run(install + " -q", shell=True, cwd=kit, env=fresh_env.pip_env(env, folder),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"install failed ({install}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    t_install = time.time() - t0
    py = kit / ".venv" / "bin" / "python"
    where = subprocess.run([str(py), "-c", "import sattn, sys; print(sattn.__file__)"], cwd=kit / "chapters",
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(kit / ".venv")), f"sattn imported from {where}, not the kit's venv"
    t1 = time.time()
    out = kit / "executed.ipynb"
    r = subprocess.run([str(kit / ".venv" / "bin" / "jupyter"), "execute", f"--output={out}",
                        f"chapters/{CHAPTER}.ipynb"], cwd=kit, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, f"{CHAPTER} failed in the kit:\n{r.stderr[-4000:]}"
    t_run = time.time() - t1
    nb = json.loads(out.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), "not every cell ran"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"
              and "raises-exception" not in c.get("metadata", {}).get("tags", [])]
    assert not errors, errors[:1]
    # the README's second line starts JupyterLab, also as root (it used to refuse without a flag)
    lab_line = [line for line in (kit / "README.txt").read_text().splitlines()
                if line.startswith(".venv/")][0].split("#")[0].split()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(lab_line + ["--no-browser", f"--port={port}", "--ServerApp.token=kit"],
                            cwd=kit, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        t2 = time.time()
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token=kit", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() - t2 > 90:
                    os.killpg(proc.pid, signal.SIGTERM)
                    pytest.fail("the kit's JupyterLab did not start:\n"
                                + proc.stdout.read().decode()[-3000:])
                time.sleep(0.5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    print(f"\nkit: fresh venv + install {t_install:.0f} s, {CHAPTER} executed in {t_run:.0f} s")
