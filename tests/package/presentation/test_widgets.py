"""Tests of sattn.presentation.widgets and .plotting: the precomputed explorer must link every slider to
its stack in the browser (jslink), hold exactly one view per grid point, and reject bad grids."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sattn.presentation.plotting import figure_to_png, heatmap, subplots  # noqa: E402
from sattn.presentation.widgets import live_explorer, precomputed_explorer  # noqa: E402


def _render_html(a, b):
    return f"<p>a={a}, b={b}</p>"


def test_one_view_per_grid_point_and_links():
    ex = precomputed_explorer(_render_html, {"a": [1, 2, 3], "b": ["x", "y"]})
    assert ex.n_views == 6
    assert ex.view(a=3, b="y").value == "<p>a=3, b=y</p>"
    assert ex.view(a=1, b="x").value == "<p>a=1, b=x</p>"
    # one link for the outer slider, one per inner stack (3) for the inner slider
    links = ex.links
    assert len(links) == 1 + 3
    for link in links:
        assert link.source[1] == "index" and link.target[1] == "selected_index"
        assert link.source[0] in ex.sliders and isinstance(link.target[0], widgets.Stack)
    assert repr(ex) == "PrecomputedExplorer(a=['1', '2', '3'], b=['x', 'y']; 6 precomputed views)"


def test_initial_value_selects_view():
    ex = precomputed_explorer(_render_html, {"a": [1, 2], "b": [0.5, 1.0]}, value={"b": 1.0})
    assert ex.sliders[1].index == 1
    assert all(s.selected_index == 1 for s in ex.stack.children)


def test_figures_become_png_images():
    def render(c):
        fig, ax = plt.subplots()
        ax.plot([0, c])
        return fig

    ex = precomputed_explorer(render, {"c": [1, 2]})
    img = ex.view(c=2)
    assert isinstance(img, widgets.Image) and img.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert ex.view(c=1).value != img.value
    assert plt.get_fignums() == []  # rendered figures are closed


@pytest.mark.parametrize(
    "grid, value, message",
    [
        ({}, None, "at least one parameter"),
        ({"a": []}, None, r"grid\['a'\] is empty"),
        ({"a": [1, 1]}, None, "repeated values"),
        ({"a": [1]}, {"z": 1}, "unknown parameter 'z'"),
        ({"a": [1]}, {"a": 5}, "not on the grid"),
    ],
)
def test_bad_grids(grid, value, message):
    with pytest.raises(ValueError, match=message):
        precomputed_explorer(_render_html, grid, value=value)


def test_bad_render_result():
    with pytest.raises(TypeError, match="must return a matplotlib Figure or an HTML string"):
        precomputed_explorer(lambda a: 3, {"a": [1]})


def test_view_errors():
    ex = precomputed_explorer(_render_html, {"a": [1], "b": [2]})
    with pytest.raises(KeyError, match="missing parameter 'b'"):
        ex.view(a=1)
    with pytest.raises(ValueError, match="not on the grid"):
        ex.view(a=1, b=3)


def test_live_explorer_checks_controls():
    box = live_explorer(_render_html, a=widgets.IntSlider(1), b=widgets.Text("x"))
    assert isinstance(box, widgets.VBox)
    with pytest.raises(ValueError, match="at least one control"):
        live_explorer(_render_html)
    with pytest.raises(TypeError, match="control 'a' must be an ipywidgets value widget"):
        live_explorer(_render_html, a=3)


def test_heatmap_and_png():
    fig, ax = subplots(1, 1)
    im = heatmap(ax, np.eye(3), title="I", log=True)
    assert im.get_array().min() == pytest.approx(-12.0)
    png = figure_to_png(fig)
    assert png[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="2-D matrix"):
        heatmap(plt.gca(), np.ones(3))
    plt.close("all")


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        # negative entries used to be clipped to the floor without a word
        (dict(M=[[-1.0, 1.0]], log=True), ValueError, r"needs a nonnegative M, but M\[0, 0\] = -1"),
        (dict(M=[[0.0, 1.0]], log=True, floor=0.0), ValueError, r"floor must lie in \(0, inf\], got 0"),
        (dict(M=np.zeros((0, 3))), ValueError, r"M must be non-empty, got shape \(0, 3\)"),
        (dict(M=[["a"]]), TypeError, r"M must be a real numeric array"),
        (dict(M=np.eye(2) * 1j), TypeError, r"M must be real"),
    ],
)
def test_heatmap_rejects_what_it_cannot_draw_faithfully(kwargs, exc, message):
    fig, ax = plt.subplots()
    try:
        with pytest.raises(exc, match=message):
            heatmap(ax, kwargs.pop("M"), **kwargs)
    finally:
        plt.close(fig)


def test_heatmap_log_leaves_nan_cells_blank():
    fig, ax = plt.subplots()
    im = heatmap(ax, [[1.0, np.nan], [0.0, 0.1]], log=True, floor=1e-3)
    data = np.ma.getdata(im.get_array())
    assert np.isnan(data[0, 1]) and data[1, 0] == pytest.approx(-3.0)
    plt.close(fig)


@pytest.mark.parametrize(
    "render, grid, message",
    [
        (5, {"a": [1]}, r"render must be callable, got int"),
        (_render_html, [("a", [1])], r"grid must be a mapping"),
        (_render_html, {"a": 3}, r"grid\['a'\] must be a list, tuple, range or 1-D array"),
        # a string used to be split into one slider position per character
        (_render_html, {"a": "xy"}, r"grid\['a'\] must be a list, tuple, range or 1-D array"),
        (_render_html, {1: [1, 2]}, r"grid keys must be parameter names \(str\), got 1"),
    ],
)
def test_precomputed_explorer_type_errors(render, grid, message):
    with pytest.raises(TypeError, match=message):
        precomputed_explorer(render, grid)


def test_live_explorer_needs_a_callable():
    with pytest.raises(TypeError, match="render must be callable, got int"):
        live_explorer(5, a=widgets.IntSlider(1))


def test_grid_values_may_be_tuples_or_arrays():
    ex = precomputed_explorer(lambda p: f"<p>{p}</p>", {"p": [(1, 2), (3, 4)]})
    assert ex.view(p=(3, 4)).value == "<p>(3, 4)</p>"
    ex = precomputed_explorer(lambda c: f"<p>{c}</p>", {"c": np.array([0.5, 1.0])})
    assert ex.n_views == 2
    with pytest.raises(TypeError, match=r"grid\['c'\] must be a list, tuple, range or 1-D array"):
        precomputed_explorer(lambda c: "", {"c": np.ones((2, 2))})


def _render_checked(L, d):
    if d > L:
        raise ValueError("d must be at most L")
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, L, d])
    return fig


def test_invalid_combination_keeps_a_figure_with_the_message_beside_it():
    ex = precomputed_explorer(_render_checked, {"L": [32, 64], "d": [16, 64]})
    bad = ex.view(L=32, d=64)
    assert isinstance(bad, widgets.HBox)
    img, note = bad.children
    assert img is ex.view(L=32, d=16)          # the nearest valid view (one value away), not a copy
    assert "d must be at most L" in note.value and "d = 16" in note.value
    with pytest.raises(ValueError, match="every combination"):
        precomputed_explorer(_render_checked, {"L": [8], "d": [16]})


def test_stored_bundle_carries_the_default_view():
    ex = precomputed_explorer(_render_checked, {"L": [32, 64], "d": [16, 64]}, value={"L": 64})
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "image/png" in bundle
    html_ex = precomputed_explorer(_render_html, {"a": [1, 2], "b": ["x"]})
    assert html_ex._repr_mimebundle_()["text/html"] == "<p>a=1, b=x</p>"
    bad = precomputed_explorer(_render_checked, {"L": [32], "d": [16, 64]}, value={"d": 64})
    assert "d must be at most L" in bad._repr_mimebundle_()["text/html"]


def test_live_explorer_stores_its_figure_and_keeps_it_on_bad_values(monkeypatch):
    import sattn.presentation.widgets as w
    shown = []
    monkeypatch.setattr(w, "display", shown.append)   # (no kernel here to fill the Output area)
    L = widgets.IntSlider(value=32, min=8, max=64)
    d = widgets.IntSlider(value=16, min=1, max=64)
    ex = live_explorer(_render_checked, L=L, d=d)
    png = ex._repr_mimebundle_()["image/png"]
    d.value = 48                               # d > L: the last figure stays, with the message
    assert ex._repr_mimebundle_()["image/png"] == png
    assert "d must be at most L" in shown[-1].data and png in shown[-1].data
    assert plt.get_fignums() == []
