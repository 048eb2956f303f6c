"""Tests of sattn.presentation.messages (an expected error printed, a missing one fails),
plain_text (an explorer's HTML view printed without tags) and panel_figure (a row of panels that
a phone gets stacked)."""

from __future__ import annotations

import base64
import re

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

import sattn  # noqa: E402
from sattn.errors import SizeTooLargeError  # noqa: E402
from sattn.presentation.plotting import NARROW_SCREEN_PX, PanelFigure, panel_figure  # noqa: E402
from sattn.presentation.widgets import plain_text, precomputed_explorer  # noqa: E402


def test_expected_error_prints_the_message(capsys):
    with sattn.expected_error((ValueError, KeyError)):
        raise ValueError("width must be positive, got -1")
    assert capsys.readouterr().out == "ValueError: width must be positive, got -1\n"


def test_expected_error_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="expected ValueError, but the block raised nothing"):
        with sattn.expected_error(ValueError):
            pass


def test_expected_error_lets_other_errors_through():
    with pytest.raises(TypeError):
        with sattn.expected_error(ValueError):
            raise TypeError("not the expected class")


@pytest.mark.parametrize("error", [(), "ValueError", int, (ValueError, 5)])
def test_expected_error_needs_exception_classes(error):
    with pytest.raises(TypeError, match="error must be an exception class"):
        sattn.expected_error(error)


def test_plain_text():
    assert plain_text("<b>k = 1</b>: a &lt; b<br>next<br/>last") == "k = 1: a < b\nnext\nlast"
    with pytest.raises(TypeError):
        plain_text(3)


def test_text_values_get_a_dropdown_numbers_a_slider():
    ex = precomputed_explorer(lambda name, L: f"{name} {L}",
                              {"name": ["Algorithm 1", "memorization"], "L": [16, 32]})
    kinds = [type(s).__name__ for s in ex.sliders]
    assert kinds == ["Dropdown", "SelectionSlider"]
    assert ex.sliders[0].options == ("Algorithm 1", "memorization")  # whole names


def _draw(fig, axes):
    for i, ax in enumerate(axes):
        ax.plot([0, 1], [0, i])
        ax.set_title(f"panel {i}")


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_panel_figure_is_a_row_and_a_column():
    pf = panel_figure(3, _draw, panel_width=3.0, panel_height=2.5)
    assert isinstance(pf, PanelFigure)
    (ww, wh), (nw, nh) = _png_size(pf.wide), _png_size(pf.narrow)
    assert ww > 2 * wh and nh > 2 * nw  # a row, and a column
    bundle = pf._repr_mimebundle_()
    assert base64.b64decode(bundle["image/png"]) == pf.wide
    html = bundle["text/html"]
    m = re.search(r'<source media="\(max-width: (\d+)px\)" srcset="data:image/png;base64,([^"]+)"', html)
    assert m and int(m.group(1)) == NARROW_SCREEN_PX and base64.b64decode(m.group(2)) == pf.narrow
    assert "3 panels" in bundle["text/plain"]


def test_panel_figure_rejects_bad_input():
    with pytest.raises(TypeError):
        panel_figure(2, "not callable")
    with pytest.raises(ValueError):
        panel_figure(0, _draw)
    with pytest.raises(SizeTooLargeError):
        panel_figure(13, _draw)
    with pytest.raises(ValueError):
        panel_figure(2, _draw, panel_width=-1.0)
