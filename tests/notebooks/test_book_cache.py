"""tools/book_cache.py: which stored notebooks may stand for the book's own execution.

The rule is the module's docstring; these tests run it on the real chapters and a real
jupyter-cache, and check that a notebook it adds is the one the book build then finds for the .md.
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
from jupyter_cache import get_cache
from myst_nb.core.read import read_myst_markdown_notebook

from sattn.presentation.lab import WIDGET_VIEW
from tools import book_cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAPTERS = sorted(glob.glob(os.path.join(ROOT, "chapters", "*.ipynb")))


def _record(paths, passed=True, base=ROOT):
    return {os.path.relpath(p, base).replace(os.sep, "/"): {
        "all_cells_passed": passed, "cells": 3, "seconds": 1.5,
        "sha256": book_cache.file_sha256(p)} for p in paths}


def _copy_chapter(tmp_path, name):
    (tmp_path / "chapters").mkdir(exist_ok=True)
    for ext in (".ipynb", ".md"):
        shutil.copy(os.path.join(ROOT, "chapters", name + ext), tmp_path / "chapters")
    return str(tmp_path / "chapters" / (name + ".ipynb"))


TINY_MD = """---
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

    folder.mkdir(parents=True, exist_ok=True)
    md = folder / f"{name}.md"
    md.write_text(TINY_MD)
    nb = jupytext.read(str(md))
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    nbformat.write(nb, str(folder / f"{name}.ipynb"))
    return str(md), str(folder / f"{name}.ipynb")


def test_the_rule_on_the_real_chapters():
    """Every chapter gets a verdict; widget and exempt-output chapters are always left to the build."""
    records = _record(CHAPTERS)
    verdicts = {}
    for path in CHAPTERS:
        key = os.path.relpath(path, ROOT).replace(os.sep, "/")
        verdicts[os.path.basename(path)] = book_cache.reasons_to_execute(path, records[key])
    assert any("widget views" in " ".join(r) for r in verdicts.values())
    assert any("nbval-ignore-output" in " ".join(r) for r in verdicts.values())
    assert verdicts["16_log_law.ipynb"] == [] and verdicts["17_prediction.ipynb"] == []
    for name, reasons in verdicts.items():
        nb = nbformat.read(os.path.join(ROOT, "chapters", name), as_version=4)
        widgets = any(WIDGET_VIEW in o.get("data", {})
                      for c in nb.cells for o in c.get("outputs", []))
        exempt = any(set(c.metadata.get("tags", [])) & book_cache.EXEMPT_TAGS for c in nb.cells)
        assert (reasons == []) == (not widgets and not exempt), name


@pytest.mark.parametrize("how", ["failed", "changed", "missing"])
def test_a_notebook_nbval_did_not_pass_as_read_is_executed(tmp_path, how):
    path = _copy_chapter(tmp_path, "06_causal")
    record = _record([path], passed=(how != "failed"))
    entry = next(iter(record.values()))
    if how == "changed":
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n")
    reasons = book_cache.reasons_to_execute(path, None if how == "missing" else entry)
    expected = {"failed": "not every cell passed", "changed": "changed since nbval's run started",
                "missing": "nbval did not run it"}[how]
    assert any(expected in r for r in reasons), reasons


def test_a_primed_chapter_is_what_the_build_finds_for_its_md(tmp_path, monkeypatch):
    """The cache record matches the notebook myst-nb reads from the .md, with nbval's time."""
    monkeypatch.chdir(tmp_path)
    path = _copy_chapter(tmp_path, "06_causal")
    results = tmp_path / "record.json"
    results.write_text(json.dumps({"notebooks": _record([path], base=tmp_path)}))
    assert book_cache.prime(str(results), str(tmp_path / "cache"), ["chapters/06_causal.ipynb"]) == 1
    cache = get_cache(str(tmp_path / "cache"))
    with open(tmp_path / "chapters" / "06_causal.md", encoding="utf-8") as f:
        from_md = read_myst_markdown_notebook(f.read())
    record = cache.match_cache_notebook(from_md)
    assert record.data == {"execution_seconds": 1.5, "executed_by": "nbval"}
    _, merged = cache.merge_match_into_notebook(from_md)
    stored = nbformat.read(path, as_version=4)
    assert [c.get("outputs") for c in merged.cells if c.cell_type == "code"] == \
        [c.get("outputs") for c in stored.cells if c.cell_type == "code"]


def test_prime_without_a_record_says_what_to_run(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "book_cache.py"), "prime",
                           "--results", str(tmp_path / "none.json"), "--cache", str(tmp_path / "c"),
                           os.path.join(ROOT, "chapters", "06_causal.ipynb")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode != 0
    assert "no nbval record" in proc.stderr and "make test-nbval" in proc.stderr


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
         "-p", "no:cacheprovider", "-p", "tools.book_cache", "--nbval-record", str(out),
         "--rootdir", str(tmp_path), "chapters"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]  # the bad one failed
    record = json.loads(out.read_text())["notebooks"]
    assert record["chapters/good.ipynb"]["all_cells_passed"] is True
    assert record["chapters/good.ipynb"]["cells"] == 2
    assert record["chapters/good.ipynb"]["sha256"] == book_cache.file_sha256(good)
    assert record["chapters/good.ipynb"]["seconds"] > 0
    assert record["chapters/bad.ipynb"]["all_cells_passed"] is False


def test_execute_runs_what_the_cache_lacks_and_the_build_finds_it(tmp_path, monkeypatch):
    """Two chapters executed at once from their .md; a second call executes nothing."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "chapters"
    folder.mkdir()
    (folder / "one.md").write_text(TINY_MD)
    (folder / "two.md").write_text(TINY_MD.replace("6 * 7", "6 * 8"))
    mds = ["chapters/one.md", "chapters/two.md"]
    assert book_cache.execute(str(tmp_path / "cache"), mds, workers=2) == 2
    assert book_cache.execute(str(tmp_path / "cache"), mds, workers=2) == 0
    cache = get_cache(str(tmp_path / "cache"))
    for md, shown in zip(mds, ("42", "48")):
        with open(md, encoding="utf-8") as f:
            from_md = read_myst_markdown_notebook(f.read())
        assert cache.match_cache_notebook(from_md).data["execution_seconds"] > 0
        _, merged = cache.merge_match_into_notebook(from_md)
        assert merged.cells[-1].outputs[0]["text"].strip() == shown, md


def test_execute_stops_on_a_failing_chapter_with_its_traceback(tmp_path, capsys):
    md = tmp_path / "broken.md"
    md.write_text(TINY_MD + "\n```{code-cell} ipython3\nraise RuntimeError('the bad cell')\n```\n")
    with pytest.raises(SystemExit, match="1 chapter"):
        book_cache.execute(str(tmp_path / "cache"), [str(md)], workers=1)
    assert "the bad cell" in capsys.readouterr().err


def test_the_longest_chapters_start_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rec = tmp_path / "record.json"
    rec.write_text(json.dumps({"notebooks": {
        "chapters/a.ipynb": {"seconds": 2.0}, "chapters/b.ipynb": {"seconds": 40.0}}}))
    mds = ["chapters/a.md", "chapters/c.md", "chapters/b.md"]
    assert book_cache.longest_first(mds, str(rec)) == ["chapters/b.md", "chapters/a.md",
                                                       "chapters/c.md"]
    assert book_cache.longest_first(mds, None) == mds


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
