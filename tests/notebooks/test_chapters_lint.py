"""The chapters' code cells pass ruff: pyflakes (unused or undefined names) and lines <= 100.

Ruff reads the stored ``.ipynb`` directly (its cells are those of the ``.md``, which
``test_stored_notebooks.py`` checks). Unused names in a chapter's imports cell (its first code cell)
are reported separately: that cell belongs to the package's layout, and an unused import there is
a note for whoever maintains it, not a mistake in the chapter's argument.
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "chapters", "*.ipynb")))
RUFF = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
RULES = ["--select", "F,E9,E501", "--line-length", "100"]


def ruff_diagnostics(path: str) -> list[dict]:
    """Ruff's JSON diagnostics for one notebook, ignoring every configuration file."""
    proc = subprocess.run(
        [RUFF, "check", "--isolated", "--no-cache", *RULES, "--output-format", "json", path],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed on {path}: {proc.stderr}")
    return json.loads(proc.stdout or "[]")


def first_code_cell(path: str) -> int:
    """1-based index (ruff's numbering, all cells counted) of the notebook's first code cell."""
    nb = nbformat.read(path, as_version=4)
    return next(i for i, c in enumerate(nb.cells, start=1) if c.cell_type == "code")


def describe(d: dict) -> str:
    return f"cell {d.get('cell')}, line {d['location']['row']}: {d['code']} {d['message']}"


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_code_cells_pass_ruff(path):
    imports = first_code_cell(path)
    bad = [d for d in ruff_diagnostics(path)
           if not (d["code"] == "F401" and d.get("cell") == imports)]
    assert not bad, f"{os.path.relpath(path, ROOT)} (cells numbered as ruff does, from 1):\n" + \
        "\n".join("  " + describe(d) for d in bad)


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
def test_lint_catches_a_long_line_and_an_undefined_name(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import numpy as np"),
                nbformat.v4.new_code_cell("x = " + "1 + " * 30 + "1\nprint(undefined_name)")]
    path = tmp_path / "bad.ipynb"
    nbformat.write(nb, str(path))
    codes = sorted(d["code"] for d in ruff_diagnostics(str(path)))
    assert codes == ["E501", "F401", "F821"], codes
