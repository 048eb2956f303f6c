"""Every stored chapter notebook is fully executed and in sync with its MyST source.

nbval silently skips cells whose stored execution_count is null, so an unexecuted notebook would
pass nbval as a mere smoke test; this module closes that gap.
"""

from __future__ import annotations

import copy
import glob
import os

import jupytext
import nbformat
import pytest

from sattn.presentation.lab import WIDGET_STATE, WIDGET_VIEW, portable_notebook

import importlib.util

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAPTERS = os.path.join(ROOT, "chapters")
NOTEBOOKS = sorted(glob.glob(os.path.join(CHAPTERS, "*.ipynb")))
_spec = importlib.util.spec_from_file_location(
    "execute_notebooks", os.path.join(ROOT, "tools", "execute_notebooks.py"))
execute_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execute_notebooks)

PAIRED_MD = sorted(
    p for p in glob.glob(os.path.join(CHAPTERS, "*.md")) if "jupytext:" in open(p).read(400)
)


def test_there_are_chapters():
    assert NOTEBOOKS, "no stored chapter notebooks found in chapters/"


@pytest.mark.parametrize("md", PAIRED_MD, ids=os.path.basename)
def test_every_paired_source_has_a_notebook(md):
    assert os.path.exists(md[:-3] + ".ipynb"), (
        f"{md} is a notebook chapter without its executed .ipynb; "
        "run: python tools/execute_notebooks.py " + os.path.relpath(md, ROOT)
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_fully_executed(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path} has no code cells"
    missing = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.execution_count is None]
    assert not missing, f"{path}: code cells {missing} were never executed (nbval would skip them)"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path}: execution counts {counts} are not 1..{len(code)}: "
        "the notebook was not executed top to bottom in one kernel"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_in_sync_with_md(path):
    md = path[:-6] + ".md"
    assert os.path.exists(md), f"{path} has no paired .md source"
    text = jupytext.read(md)
    stored = jupytext.read(path)
    a = [(c.cell_type, c.source.strip()) for c in text.cells]
    b = [(c.cell_type, c.source.strip()) for c in stored.cells]
    assert len(a) == len(b), f"{md} has {len(a)} cells but {path} has {len(b)}: re-execute it"
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == y, f"cell {i} differs between {md} and {path}: re-execute the chapter"
    tags_a = [sorted(c.metadata.get("tags", [])) for c in text.cells]
    tags_b = [sorted(c.metadata.get("tags", [])) for c in stored.cells]
    assert tags_a == tags_b, f"cell tags differ between {md} and {path}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_written_by_the_execute_script(path):
    """Cell ids derive from the sources (tools/execute_notebooks.py), so re-execution is diff-free."""
    md = path[:-6] + ".md"
    expected = jupytext.read(md)
    execute_notebooks.stable_cell_ids(expected)
    stored = nbformat.read(path, as_version=4)
    assert [c.id for c in stored.cells] == [c.id for c in expected.cells], (
        f"{path} was not written by tools/execute_notebooks.py from {md}; re-execute it with that script"
    )
    if "widgets" in stored.metadata:   # kept portable: ids derived from the cells, not random
        again = copy.deepcopy(stored)
        portable_notebook(again)
        assert again.metadata == stored.metadata, (
            f"{path} stores widget state with the kernel's random ids; re-execute it with the script")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_every_widget_view_has_its_state(path):
    """The book is built from the stored notebook (tools/stored_notebooks.py): a static page draws a
    widget view only from the widget state stored with it, which tools/execute_notebooks.py keeps."""
    nb = nbformat.read(path, as_version=4)
    views = [out["data"][WIDGET_VIEW]["model_id"] for cell in nb.cells
             for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    missing = [v for v in views if v not in state]
    assert not missing, (f"{path}: {len(missing)} of {len(views)} widget views have no stored state "
                         "(the page would show no widget): re-execute the chapter with "
                         "tools/execute_notebooks.py")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_md_is_what_jupytext_writes_from_the_notebook(path):
    """The pair is consistent for jupytext: the .md is byte for byte the text jupytext writes from
    the stored .ipynb (cell options in the .ipynb's sorted key order). Otherwise JupyterLab refuses
    to open the chapter once the .ipynb is newer ("... is more recent than ..."), and a save with no
    edit rewrites the .md. Fix: python tools/execute_notebooks.py --pin-only CHAPTER.md"""
    md = path[:-6] + ".md"
    written = jupytext.writes(jupytext.read(path), fmt="md:myst")
    current = open(md, encoding="utf-8").read()
    if written != current:
        import difflib
        diff = "\n".join(list(difflib.unified_diff(current.splitlines(), written.splitlines(),
                                                   "stored .md", "from .ipynb", lineterm="", n=0))[:20])
        pytest.fail(f"{os.path.relpath(md, ROOT)} is not what jupytext writes from its .ipynb; run "
                    f"python tools/execute_notebooks.py --pin-only {os.path.relpath(md, ROOT)}\n{diff}")


_ABSOLUTE = __import__("re").compile(r"(?:/home/|/work/|/root/|/tmp/|/Users/|site-packages/|[A-Z]:\\\\)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_no_machine_paths_in_stored_outputs(path):
    """Stored outputs name modules as sattn/x.py or numpy/x.py, never by the build machine's folders
    (sattn.presentation.lab.portable_notebook, run by the execute script and JupyterLab's save)."""
    text = open(path, encoding="utf-8").read()
    hits = sorted(set(m.group(0) for m in _ABSOLUTE.finditer(text)))
    assert not hits, f"{os.path.relpath(path, ROOT)} stores paths of the machine: {hits}"
