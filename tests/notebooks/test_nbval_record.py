"""The book is built from the stored notebooks nbval verified: tools/nbval_record.py (the record of
nbval's run) and tools/stored_notebooks.py (the Sphinx extension that reads the .ipynb of each pair,
refuses one the record does not vouch for, and shows the run times of the executions made).

The record is written by a real nbval run; the refusal is checked with a real Sphinx build of a
small book (myst-nb and the extension, as in _config.yml).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from tools import execute_notebooks, nbval_record, private_kernels, stored_notebooks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAPTERS = sorted(glob.glob(os.path.join(ROOT, "chapters", "*.ipynb")))

TINY_MD = """---
jupytext:
  formats: ipynb,md:myst
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---

# A tiny chapter

```{code-cell} ipython3
x = 6 * 7
```

```{code-cell} ipython3
print(x)
```
"""


def _tiny_pair(folder, name="tiny"):
    """A small real chapter pair (.md and its executed .ipynb), written as the book writes them."""
    import jupytext
    import nbclient
    from jupyter_client.manager import AsyncKernelManager

    folder.mkdir(parents=True, exist_ok=True)
    md = folder / f"{name}.md"
    md.write_text(TINY_MD)
    nb = jupytext.read(str(md))
    cls = private_kernels.kernel_manager_class(private_kernels.private_folder(), AsyncKernelManager)
    nbclient.NotebookClient(nb, kernel_manager_class=cls, timeout=60, kernel_name="python3").execute()
    nbformat.write(nb, str(folder / f"{name}.ipynb"))
    return str(md), str(folder / f"{name}.ipynb")


def _entry(path, passed=True, seconds=1.5):
    return {"all_cells_passed": passed, "cells": 2, "seconds": seconds,
            "sha256": nbval_record.file_sha256(path)}


def test_every_stored_notebook_is_a_page_and_no_md_of_a_pair_is():
    """Each chapters/*.ipynb is the page of a pair (a .md with a jupytext header next to it)."""
    pairs = stored_notebooks.paired_chapters(ROOT)
    assert sorted(p + ".ipynb" for p in pairs) == sorted(os.path.relpath(p, ROOT) for p in CHAPTERS)
    assert "chapters/intro" not in pairs and "chapters/status" not in pairs


@pytest.mark.slow
def test_the_plugin_records_a_real_nbval_run(tmp_path):
    """nbval on a small real notebook, with the plugin: every cell passed, the file's hash, its time;
    a notebook whose stored output is wrong is recorded as failed."""
    _, good = _tiny_pair(tmp_path / "chapters", "good")
    _, bad = _tiny_pair(tmp_path / "chapters", "bad")
    nb = nbformat.read(bad, as_version=4)
    nb.cells[-1].outputs[0]["text"] = "41\n"
    nbformat.write(nb, bad)
    out = tmp_path / "rec" / "record.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-q",
         "-p", "no:cacheprovider", "-p", "tools.private_kernels", "-p", "tools.nbval_record",
         "--nbval-record", str(out),
         "--rootdir", str(tmp_path), "chapters"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]  # the bad one failed
    record = nbval_record.load(str(out))
    assert record["chapters/good.ipynb"]["all_cells_passed"] is True
    assert record["chapters/good.ipynb"]["cells"] == 2
    assert record["chapters/good.ipynb"]["sha256"] == nbval_record.file_sha256(good)
    assert record["chapters/good.ipynb"]["seconds"] > 0
    assert record["chapters/bad.ipynb"]["all_cells_passed"] is False
    with open(good, "rb") as f:
        data = f.read()
    assert nbval_record.problems(record, {"chapters/good.ipynb": data}) == []
    assert nbval_record.problems(record, {"chapters/bad.ipynb": b""}) == [
        "chapters/bad.ipynb: not every cell passed under nbval"]
    assert nbval_record.problems(record, {"chapters/good.ipynb": data + b"\n"}) == [
        "chapters/good.ipynb: the file changed since nbval's run started"]
    assert nbval_record.problems(record, {"chapters/other.ipynb": data}) == [
        "chapters/other.ipynb: nbval did not run it"]


def test_no_record_says_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="make test-nbval"):
        nbval_record.load(str(tmp_path / "none.json"))


SPHINX_BUILD = """
import sys
sys.path.insert(0, {tools!r})
from sphinx.application import Sphinx
app = Sphinx({src!r}, {src!r}, {out!r}, {out!r} + "/.doctrees", "html", freshenv=True,
             warningiserror=True, status=None,
             confoverrides={{"extensions": "myst_nb,stored_notebooks", "nb_execution_mode": "off",
                            "exclude_patterns": "_build,chapters/*.ipynb",
                            "root_doc": "chapters/status"}})
app.build()
"""


def _build(src, record=None):
    """A real Sphinx build of ``src`` with myst-nb and the extension; (exit code, output)."""
    out = os.path.join(src, "_build", "html")
    shutil.rmtree(os.path.join(src, "_build"), ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k != stored_notebooks.RECORD_ENV}
    if record is not None:
        env[stored_notebooks.RECORD_ENV] = record
    code = SPHINX_BUILD.format(tools=os.path.join(ROOT, "tools"), src=src, out=out)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    page = os.path.join(out, "chapters", "status.html")
    return proc.returncode, proc.stdout + proc.stderr, open(page).read() if os.path.exists(page) else ""


@pytest.mark.slow
def test_the_build_reads_the_stored_notebook_and_refuses_one_nbval_did_not_verify(tmp_path):
    """A small book: the page of a pair comes from its .ipynb (the stored output, not a new run:
    the .ipynb is edited to print 43 and the page shows 43), the status table shows nbval's time
    with a record and the execution's time without one, and with a record the build stops when
    the notebook is not the file nbval verified."""
    md, ipynb = _tiny_pair(tmp_path / "chapters", "tiny")
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[-1].outputs[0]["text"] = "43\n"
    nbformat.write(nb, ipynb)
    execute_notebooks.record_execution(ipynb, 7.25)
    (tmp_path / "chapters" / "status.md").write_text(
        "# Status\n\n```{toctree}\ntiny\n```\n\n```{book-execution-table}\n```\n")
    (tmp_path / "conf.py").write_text("")

    code, log, status = _build(str(tmp_path))
    assert code == 0, log[-3000:]
    page = open(tmp_path / "_build" / "html" / "chapters" / "tiny.html").read()
    assert "43" in page and "42" not in page          # the stored output, nothing executed
    assert "7.2" in status and "execute_notebooks.py" in status

    record = tmp_path / "record.json"
    record.write_text(json.dumps({"notebooks": {"chapters/tiny.ipynb": _entry(ipynb, seconds=3.5)}}))
    code, log, status = _build(str(tmp_path), str(record))
    assert code == 0, log[-3000:]
    assert "3.5" in status and "nbval" in status

    with open(ipynb, "a") as f:
        f.write("\n")   # not the bytes nbval read
    code, log, _ = _build(str(tmp_path), str(record))
    assert code != 0 and "chapters/tiny.ipynb: the file changed since nbval's run started" in log
    record.write_text(json.dumps({"notebooks": {}}))
    code, log, _ = _build(str(tmp_path), str(record))
    assert code != 0 and "chapters/tiny.ipynb: nbval did not run it" in log


def test_execution_rows_say_when_the_stored_notebook_is_not_the_one_executed(tmp_path):
    _, ipynb = _tiny_pair(tmp_path / "chapters", "tiny")
    assert stored_notebooks.execution_rows(str(tmp_path), None) == [
        ("chapters/tiny", "–", "unknown: no execution recorded")]
    execute_notebooks.record_execution(ipynb, 2.0)
    assert stored_notebooks.execution_rows(str(tmp_path), None)[0][1] == "2.0"
    with open(ipynb, "a") as f:
        f.write("\n")
    assert stored_notebooks.execution_rows(str(tmp_path), None)[0][1:] == (
        "–", "unknown: the stored notebook is not the one its recorded execution wrote")


def test_nbval_runs_every_stored_notebook_once_the_longest_first():
    """make test-nbval's order (the Makefile's NBVAL_FIRST, then the rest): each stored notebook
    exactly once, and the notebooks named first exist (a renamed chapter fails here, not silently)."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "test-nbval"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if "--nbval" in x)
    run = [w for w in line.split() if w.endswith(".ipynb")]
    assert sorted(run) == sorted(os.path.relpath(p, ROOT) for p in CHAPTERS)
    assert len(run) == len(set(run))
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        first = next(x for x in f if x.startswith("NBVAL_FIRST :=")).split(":=")[1].split()
    assert first and run[:len(first)] == first


def test_make_test_builds_the_book_from_the_record_of_its_nbval_run():
    """The book stage hands nbval's record to the build, and no stage executes a chapter for it."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "book-after-nbval"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert f"{stored_notebooks.RECORD_ENV}={ROOT}/_build/nbval/record.json" in out
    import yaml

    with open(os.path.join(ROOT, "_config.yml"), encoding="utf-8") as f:
        config = yaml.safe_load(f)
    assert config["execute"]["execute_notebooks"] == "off"
    assert "stored_notebooks" in config["sphinx"]["local_extensions"]
