"""sattn.presentation.lab: portable stored notebooks and the JupyterLab command."""

from __future__ import annotations

import json
import os

import pytest

from sattn.presentation import lab


@pytest.mark.parametrize("before,after", [
    ("\x1b[32m/home/me/book/sattn/patterns/sparse.py:372\x1b[39m", "\x1b[32msattn/patterns/sparse.py:372\x1b[39m"),
    ("/opt/v/lib/python3.11/site-packages/numpy/linalg/_linalg.py:3: Warning",
     "numpy/linalg/_linalg.py:3: Warning"),
    ('File "/work/x/sattn/__main__.py", line 1', 'File "sattn/__main__.py", line 1'),
    ("see ../data/fig3.csv and a/b/sattn/x.py", "see ../data/fig3.csv and a/b/sattn/x.py"),
])
def test_portable_text(before, after):
    assert lab.portable_text(before) == after


def test_portable_text_rejects_non_text():
    with pytest.raises(TypeError, match="text must be a str"):
        lab.portable_text(3)


def _state(view, child, link):
    """A widget state as nbclient stores it: a box (the view) with a slider, and a jslink."""
    model = lambda name, state: {"model_module": "@jupyter-widgets/controls",  # noqa: E731
                                 "model_module_version": "2.0.0", "model_name": name, "state": state}
    return {lab.WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": {
        view: model("VBoxModel", {"children": [f"IPY_MODEL_{child}"]}),
        child: model("IntSliderModel", {"value": 3, "step": 1.0, "max": 2.5}),
        link: model("LinkModel", {"source": [f"IPY_MODEL_{child}", "value"],
                                  "target": [f"IPY_MODEL_{child}", "max"]})}}}


def _chapter(model_id="0f" * 16, child="1e" * 16, link="2d" * 16):
    return {"metadata": {"jupytext": {"formats": "ipynb,md:myst"},
                         "widgets": _state(model_id, child, link)},
            "cells": [{"id": "abc", "cell_type": "code", "source": "", "metadata": {"trusted": True},
                       "outputs": [
                {"output_type": "display_data", "data": {
                    lab.WIDGET_VIEW: {"model_id": model_id, "version_major": 2},
                    "text/plain": "VBox()"}},
                {"output_type": "error", "traceback": ["File /srv/ck/sattn/a.py:3"]}]}]}


def test_pre_save_hook_makes_a_chapter_portable_and_run_independent():
    a, b = _chapter("1" * 32, "3" * 32, "5" * 32), _chapter("2" * 32, "4" * 32, "6" * 32)
    for nb in (a, b):
        lab.pre_save_hook(model={"type": "notebook", "content": nb}, path="01.ipynb")
    assert a == b                               # two runs, two random ids: one stored notebook
    # the widget state stays (a static page draws the views from it), renamed with the views
    state = a["metadata"]["widgets"][lab.WIDGET_STATE]["state"]
    view = a["cells"][0]["outputs"][0]["data"][lab.WIDGET_VIEW]["model_id"]
    child = state[view]["state"]["children"][0][len("IPY_MODEL_"):]
    assert state[child]["model_name"] == "IntSliderModel"
    # numbers as JavaScript writes them (JupyterLab's save): a whole float as an int
    assert json.dumps(state[child]["state"], sort_keys=True) == '{"max": 2.5, "step": 1, "value": 3}'
    (link,) = set(state) - {view, child}
    assert state[link]["state"]["source"] == [f"IPY_MODEL_{child}", "value"]
    again = json.loads(json.dumps(a))           # a save of the saved notebook changes nothing
    lab.pre_save_hook(model={"type": "notebook", "content": again}, path="01.ipynb")
    assert again == a
    assert "trusted" not in a["cells"][0]["metadata"]      # not signed: reopened, it shows pictures
    assert a["cells"][0]["outputs"][1]["traceback"] == ["File sattn/a.py:3"]


def test_a_rerun_saved_with_the_stored_state_keeps_that_state():
    """JupyterLab does not write the kernel's live models by default: after Run All its save holds
    new view ids in the outputs and, in the metadata, the state the notebook was opened with.
    The views are mapped onto that state, which stays as it was."""
    stored = _chapter("1" * 32, "3" * 32, "5" * 32)
    lab.portable_notebook(stored)
    rerun = json.loads(json.dumps(stored))
    rerun["cells"][0]["outputs"][0]["data"][lab.WIDGET_VIEW]["model_id"] = "9" * 32  # new kernel
    lab.portable_notebook(rerun)
    assert rerun == stored
    # a view that is in neither form gets its portable id; the state is kept, renamed by content
    other = json.loads(json.dumps(stored))
    other["cells"][0]["id"] = "new"
    other["cells"][0]["outputs"][0]["data"][lab.WIDGET_VIEW]["model_id"] = "8" * 32
    lab.portable_notebook(other)
    state = other["metadata"]["widgets"][lab.WIDGET_STATE]["state"]
    assert len(state) == 3 and lab._stable_id("new/0") not in state


def test_pre_save_hook_leaves_other_notebooks_alone():
    nb = _chapter()
    nb["metadata"]["jupytext"] = {}
    before = repr(nb)
    lab.pre_save_hook(model={"type": "notebook", "content": nb}, path="mine.ipynb")
    lab.pre_save_hook(model={"type": "file", "content": "x"}, path="a.txt")
    assert repr(nb) == before


def test_lab_command(tmp_path):
    cmd = lab.lab_command(str(tmp_path), ["--no-browser"])
    assert cmd[1] == "lab" and f"--notebook-dir={tmp_path}" in cmd and "--ip=127.0.0.1" in cmd
    assert "--ContentsManager.pre_save_hook=sattn.presentation.lab.pre_save_hook" in cmd
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)
    assert cmd[-1] == "--no-browser"
    with pytest.raises(ValueError, match="no folder"):
        lab.lab_command(str(tmp_path / "missing"))
