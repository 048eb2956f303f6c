"""The chapters as JupyterLab shows them (sattn.presentation.lab): every role JupyterLab cannot
resolve becomes a link, every link becomes its role again on saving, byte for byte, for every
chapter; solutions' code cells start collapsed and are saved as they were."""

from __future__ import annotations

import copy
import glob
import os

import jupytext
import pytest

from sattn.presentation import lab_contents as lab

CHAPTERS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "chapters")
SOURCES = sorted(glob.glob(os.path.join(CHAPTERS, "*.md")))


@pytest.fixture(scope="module")
def index():
    return lab.reference_index(CHAPTERS)


def test_the_index_knows_labels_equations_figures_and_citations(index):
    labels = index["labels"]
    assert labels["ch-approximation"][:2] == ("03_approximation", "What it means to approximate")
    assert labels["apx-eq-7"][:2] == ("03_approximation", "(3.2)")   # as the website numbers it
    assert labels["fig-r1-explorer"][0] == "12_rank_one" and labels["fig-r1-explorer"][2]
    assert labels["con-rem-svd-free"][1] == "Remark (The SVD is not needed)"
    assert index["cites"]["likhosherstov2021expressive"] == ("Likhosherstov et al.", "2021")


@pytest.mark.parametrize("path", SOURCES, ids=os.path.basename)
def test_open_then_save_gives_back_every_chapter_exactly(path, index):
    doc = os.path.basename(path)[:-3]
    nb = jupytext.read(path)
    shown = lab.notebook_for_lab(copy.deepcopy(nb), doc, index)
    # what is left as a role refers to a label an earlier cell of the same chapter defines
    defined = set()
    for cell in shown.cells:
        if cell.cell_type == "markdown":
            defined |= lab.cell_labels(cell.source)
            for m in lab._ROLE.finditer(lab._LINK.sub("", cell.source)):
                target = lab._EXPLICIT.match(m.group(2))
                target = target.group(2) if target else m.group(2)
                assert m.group(1) in ("prf:ref", "ref", "numref", "eq"), m.group(0)
                assert target in defined, f"{doc}: {m.group(0)} is left for JupyterLab but not defined before"
    assert lab.notebook_from_lab(shown) == nb
    assert jupytext.writes(shown, fmt="md:myst") == jupytext.writes(nb, fmt="md:myst")


def test_a_link_edited_in_jupyterlab_is_saved_as_a_role(index):
    src = "See {ref}`ch-approximation` and {cite:p}`stewart1980efficient,mezzadri2007generate`."
    shown = lab.references_for_lab(src, "04_construction", index)
    assert shown.startswith("See [What it means to approximate](03_approximation.ipynb ")
    assert "(Stewart, 1980; Mezzadri, 2007)" in shown or "Stewart" in shown
    edited = "New sentence. " + shown.replace("See ", "As shown in ")
    assert lab.references_from_lab(edited) == "New sentence. " + src.replace("See ", "As shown in ")


def test_solution_code_starts_collapsed_and_is_saved_without_the_flags(index):
    nb = jupytext.read(os.path.join(CHAPTERS, "04_construction.md"))
    shown = lab.notebook_for_lab(copy.deepcopy(nb), "04_construction", index)
    hidden = [c for c in shown.cells if c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    assert len(hidden) == len(lab._solution_cells(nb.cells)) >= 1 and all(c.metadata["jupyter"]["outputs_hidden"] for c in hidden)
    hidden[0].metadata["jupyter"]["source_hidden"] = False   # the reader opened one
    hidden[1].metadata["collapsed"] = True                    # JupyterLab's flag of the same
    assert lab.notebook_from_lab(shown) == nb


def test_bad_folder_is_refused():
    with pytest.raises(ValueError, match="no folder"):
        lab.reference_index("/nonexistent/chapters")


def test_a_shortened_caption_never_cuts_inline_math(index):
    """A link text with an odd number of '$' would open inline math that swallows the link."""
    for label, (_, text, _) in index["labels"].items():
        assert text.count("$") % 2 == 0, f"{label}: {text!r}"
