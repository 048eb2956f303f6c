"""The status page's reliability figures are committed data, fresh for the code they describe.

A stale figure fails here (``make test``, CI). In the edit loop (``make test-fast`` sets
``BOOK_STALE_FIGURES=warn``) it is reported with a warning instead: ``make status`` re-measures it.
"""

import os
import warnings

import pytest
from reliability import ROOT, StaleFigureWarning, figures, fingerprint

FIGURES = figures()
WARN_ONLY = os.environ.get("BOOK_STALE_FIGURES") == "warn"


def test_there_are_figures():
    assert FIGURES, "data/reliability/ is empty: run 'make status' and commit it"


@pytest.mark.parametrize("fig", FIGURES, ids=[os.path.basename(f["path"]) for f in FIGURES])
def test_figure_is_complete_and_fresh(fig):
    assert fig["passed"] == fig["tried"] > 0, f"{fig['path']}: a published figure must be a full count"
    if fig.get("code") == fingerprint(fig["test"]):
        return
    message = (f"{os.path.relpath(fig['path'], ROOT)} was measured on other code than this (the measured "
               f"files or {fig['test'].split('::')[0]} changed since): run 'make status' and commit "
               "data/reliability/")
    if WARN_ONLY:
        warnings.warn(message, StaleFigureWarning, stacklevel=1)
    else:
        pytest.fail(message)
