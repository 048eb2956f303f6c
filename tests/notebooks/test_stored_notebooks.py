"""Every stored chapter notebook is fully executed and in sync with its MyST source.

nbval silently skips cells whose stored execution_count is null, so an unexecuted notebook would
pass nbval as a mere smoke test; this module closes that gap.
"""

from __future__ import annotations

import glob
import os

import jupytext
import nbformat
import pytest

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
    assert "widgets" not in stored.metadata, f"{path} stores widget state (random ids); use the execute script"
