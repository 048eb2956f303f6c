"""The status page's reliability figures are committed data, fresh for the code they describe."""

import glob
import json
import os

import pytest
from reliability import ROOT, fingerprint

FIGURES = sorted(glob.glob(os.path.join(ROOT, "data", "reliability", "*.json")))


def test_there_are_figures():
    assert FIGURES, "data/reliability/ is empty: run 'make status' and commit it"


@pytest.mark.parametrize("path", FIGURES, ids=[os.path.basename(p) for p in FIGURES])
def test_figure_is_complete_and_fresh(path):
    fig = json.loads(open(path, encoding="utf-8").read())
    assert fig["passed"] == fig["tried"] > 0, f"{path}: a published figure must be a full count"
    assert fig.get("code") == fingerprint(fig["test"]), (
        f"{os.path.relpath(path, ROOT)} was measured on other code than this (the measured files or "
        f"{fig['test'].split('::')[0]} changed since): run 'make status' and commit data/reliability/")
