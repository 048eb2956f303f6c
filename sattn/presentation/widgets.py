"""Interactive figures that work both on the static website and in a live kernel.

The static website has no Python kernel. :func:`precomputed_explorer` therefore renders every
combination of a small parameter grid ahead of time, stores the results in nested
``ipywidgets.Stack`` widgets, and connects each slider to its stack with ``widgets.jslink``. The
link runs in the browser, so moving a slider switches the figure with no kernel at all.

In JupyterLab (or on the website with a live kernel, see ``make live``) :func:`live_explorer`
recomputes the same figure for any parameter values.
"""

from __future__ import annotations

import base64
import html
import itertools
import re
from typing import Callable, Mapping, Sequence

import ipywidgets as widgets
import numpy as np
from IPython.display import HTML, Image, display
from matplotlib.figure import Figure

from ..errors import SizeTooLargeError
from .._validate import check_size
from .plotting import MAX_DPI
from .plotting import figure_to_png

__flat__ = __all__ = ["PrecomputedExplorer", "LiveExplorer", "precomputed_explorer", "live_explorer",
                      "plain_text"]


def _format_value(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def plain_text(view: str) -> str:
    """The text of an HTML view, for printing: line breaks kept, tags dropped, entities decoded.

    A chapter prints one view of an explorer as the evidence nbval compares; printed raw, its
    ``<b>`` and ``<br>`` tags would show as text.

    Parameters
    ----------
    view : str
        HTML of the kind a ``render`` function of :func:`precomputed_explorer` returns.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        If ``view`` is not a string.

    References
    ----------
    The explorers of :ref:`ch-finite-precision` and :ref:`ch-width-bits`.
    """
    if not isinstance(view, str):
        raise TypeError(f"view must be a str of HTML, got {type(view).__name__}")
    text = re.sub(r"<br\s*/?>|</p>|</li>|</tr>", "\n", view, flags=re.I)
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip("\n")


def _to_widget(out, *, dpi: int | None) -> widgets.Widget:
    if isinstance(out, Figure):
        return widgets.Image(value=figure_to_png(out, dpi=dpi), format="png",
                             layout=widgets.Layout(max_width="100%", height="auto"))
    if isinstance(out, str):
        return widgets.HTML(out)
    raise TypeError(
        "render(**params) must return a matplotlib Figure or an HTML string, "
        f"got {type(out).__name__}"
    )


def _message_beside(view: widgets.Widget, message: str, shown: str) -> widgets.Widget:
    """An invalid combination: the figure of a valid one, with the message beside it."""
    text = (f"<p style='max-width: 22em'><b>{html.escape(message)}</b><br>"
            f"<span style='font-size: 90%'>Still showing {html.escape(shown)}.</span></p>")
    return widgets.HBox([view, widgets.HTML(text)],
                        layout=widgets.Layout(flex_flow="row wrap", align_items="center"))


def _view_bundle(view: widgets.Widget) -> dict:
    """The static part of a view: ``image/png`` of a figure, ``text/html`` of an HTML view."""
    if isinstance(view, widgets.Image) and view.format == "png":
        return {"image/png": base64.b64encode(bytes(view.value)).decode("ascii")}
    if isinstance(view, widgets.HTML):
        return {"text/html": view.value}
    if isinstance(view, widgets.Box):
        parts = [_view_bundle(c) for c in view.children]
        pngs = [b for b in parts if "image/png" in b]
        htmls = [b["text/html"] for b in parts if "text/html" in b]
        if pngs and not htmls:
            return pngs[0]
        if htmls and not pngs:
            return {"text/html": "".join(htmls)}
        if pngs and htmls:  # a figure with a message beside it: one HTML block
            return {"text/html": f"<img src='data:image/png;base64,{pngs[0]['image/png']}'>"
                                 + "".join(htmls)}
    return {}


class PrecomputedExplorer(widgets.VBox):
    """A VBox of sliders and precomputed views; see :func:`precomputed_explorer`.

    Its text representation is a short summary (not the PNG bytes of every view), which keeps
    stored notebooks small and makes nbval compare something meaningful. Its display bundle also
    carries the view the sliders start on (``image/png`` for a figure, ``text/html`` for an HTML
    view): a notebook that JupyterLab has not run yet (untrusted, no widget state) shows that
    picture instead of the text summary, and the website and a running kernel show the widget.
    """

    def __init__(self, children, *, grid: Mapping[str, Sequence], sliders, stack, links):
        super().__init__(children=children)
        self.grid = {k: list(v) for k, v in grid.items()}
        self.sliders = sliders
        self.stack = stack
        self.links = links

    @property
    def n_views(self) -> int:
        n = 1
        for v in self.grid.values():
            n *= len(v)
        return n

    def view(self, **params) -> widgets.Widget:
        """The precomputed view for the given parameter values (for tests and inspection)."""
        w = self.stack
        for name, values in self.grid.items():
            if name not in params:
                raise KeyError(f"missing parameter {name!r}; expected {list(self.grid)}")
            if params[name] not in values:
                raise ValueError(f"{name}={params[name]!r} is not on the grid {values}")
            w = w.children[values.index(params[name])]
        return w

    def default_view(self) -> widgets.Widget:
        """The view the sliders start on."""
        w = self.stack
        for slider in self.sliders:
            w = w.children[slider.index]
        return w

    def default_png(self) -> bytes | None:
        """PNG bytes of the view the sliders start on, or None if that view is HTML."""
        w = self.default_view()
        if isinstance(w, widgets.Image) and w.format == "png":
            return bytes(w.value)
        return None

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            bundle.update(_view_bundle(self.default_view()))
        return bundle

    def __repr__(self) -> str:
        axes = ", ".join(f"{k}={[_format_value(v) for v in vals]}" for k, vals in self.grid.items())
        return f"PrecomputedExplorer({axes}; {self.n_views} precomputed views)"


#: The most combinations of a precomputed grid (each is rendered and stored in the page).
MAX_VIEWS = 1000


def precomputed_explorer(render: Callable[..., object], grid: Mapping[str, Sequence], *,
                         description: str | None = None, value: Mapping[str, object] | None = None,
                         dpi: int | None = None) -> PrecomputedExplorer:
    """Precompute ``render`` on a parameter grid and browse it with sliders (no kernel needed).

    Parameters
    ----------
    render : callable
        ``render(**params)`` returns a matplotlib Figure (closed after rendering) or an HTML
        string, for one point of the grid. For a combination that makes no sense (``d > L``) it
        raises ``ValueError``: that view shows the view of the nearest valid combination (fewest
        parameters changed, then the nearest values) with the error's message beside it.
    grid : mapping of str to sequence
        Parameter name -> the values its slider offers, in slider order. Every combination is
        rendered, so keep the product small (tens of views).
    description : str, optional
        A line of HTML shown above the sliders.
    value : mapping, optional
        Initial value of some sliders (default: the first value of each).
    dpi : int, optional
        Resolution of the rendered PNGs.

    Returns
    -------
    PrecomputedExplorer
        An ``ipywidgets.VBox``: the sliders, then the nested stack of views.

    Raises
    ------
    TypeError
        If ``render`` is not callable, ``grid`` is not a mapping, a parameter name is not a
        string, or its values are not a list, tuple, range or 1-D array.
    ValueError
        If the grid is empty, a parameter has no values or repeated values, ``value`` names
        an unknown parameter or an off-grid value, or ``render`` raises ``ValueError`` on every
        combination.
    SizeTooLargeError
        If the grid has more than 1000 combinations (``MAX_VIEWS``) or ``dpi > 2400``.

    References
    ----------
    Used by the interactive figures of every chapter; the mechanism is explained in the
    introduction ("How to read it").
    """
    if not callable(render):
        raise TypeError(f"render must be callable, got {type(render).__name__}")
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a mapping of parameter name -> values, got {type(grid).__name__}")
    if not grid:
        raise ValueError("grid must name at least one parameter")
    if description is not None and not isinstance(description, str):
        raise TypeError(f"description must be a str of HTML, got {type(description).__name__}")
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(f"value must be a mapping of parameter name -> value, got {type(value).__name__}")
    dpi = None if dpi is None else check_size("dpi", dpi, cap=MAX_DPI,
                                              why="the resolution of a figure in the book")
    names = list(grid)
    values = []
    views = 1
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"grid keys must be parameter names (str), got {name!r}")
        vals = grid[name]
        if not isinstance(vals, (list, tuple, range, np.ndarray)) or (
                isinstance(vals, np.ndarray) and vals.ndim != 1):
            raise TypeError(
                f"grid[{name!r}] must be a list, tuple, range or 1-D array of values, "
                f"got {grid[name]!r}"
            )
        views *= len(vals)
        if views > MAX_VIEWS:
            raise SizeTooLargeError(
                f"grid is too large: grid[{name!r}] has {len(vals)} values, and with the parameters "
                f"before it the grid has {views} combinations, more than the {MAX_VIEWS} views "
                "allowed (every combination is rendered ahead of time and stored in the page)")
        vals = list(grid[name])
        if not vals:
            raise ValueError(f"grid[{name!r}] is empty; give at least one value")
        labels = [_format_value(v) for v in vals]
        if len(set(labels)) != len(labels):
            raise ValueError(f"grid[{name!r}] has repeated values: {labels}")
        values.append(vals)
    value = dict(value or {})
    for k, v in value.items():
        if k not in grid:
            raise ValueError(f"value names unknown parameter {k!r}; parameters are {names}")
        if v not in values[names.index(k)]:
            raise ValueError(f"value[{k!r}] = {v!r} is not on the grid {values[names.index(k)]}")

    sliders = []
    for name, vals in zip(names, values):
        start = vals.index(value[name]) if name in value else 0
        options = [_format_value(v) for v in vals]
        if all(isinstance(v, str) for v in vals):
            # names, not a scale: a dropdown shows each name whole (a slider's readout cut
            # "memorization" to "memorizatio" and ran into the next slider's label)
            sliders.append(widgets.Dropdown(
                options=options, index=start, description=name,
                style={"description_width": "initial"}, layout=widgets.Layout(width="auto"),
            ))
        else:
            sliders.append(widgets.SelectionSlider(
                options=options, index=start, description=name,
                continuous_update=True, style={"description_width": "initial"},
                layout=widgets.Layout(width="320px"),
            ))

    links = []
    # every combination first (so that an invalid one can show the nearest valid view)
    combos = list(itertools.product(*[range(len(v)) for v in values]))
    views, invalid = {}, {}
    for idx in combos:
        params = {n: values[i][j] for i, (n, j) in enumerate(zip(names, idx))}
        try:
            views[idx] = _to_widget(render(**params), dpi=dpi)
        except ValueError as exc:
            invalid[idx] = str(exc)
    if not views:
        raise ValueError(f"render raised ValueError on every combination of the grid, e.g. "
                         f"{next(iter(invalid.values()))!r}")
    for idx, message in invalid.items():
        near = min(views, key=lambda v: (sum(a != b for a, b in zip(v, idx)),
                                         sum(abs(a - b) for a, b in zip(v, idx)), v))
        shown = ", ".join(f"{n} = {_format_value(values[i][near[i]])}"
                          for i, n in enumerate(names) if near[i] != idx[i])
        views[idx] = _message_beside(views[near], message, shown)

    def build(level: int, fixed: tuple) -> widgets.Stack:
        children = []
        for j in range(len(values[level])):
            idx = fixed + (j,)
            children.append(views[idx] if level == len(names) - 1 else build(level + 1, idx))
        stack = widgets.Stack(children=children, selected_index=sliders[level].index)
        links.append(widgets.jslink((sliders[level], "index"), (stack, "selected_index")))
        return stack

    stack = build(0, ())
    header = [widgets.HTML(description)] if description else []
    controls = widgets.HBox(sliders, layout=widgets.Layout(flex_flow="row wrap"))
    return PrecomputedExplorer(header + [controls, stack], grid=dict(zip(names, values)),
                               sliders=sliders, stack=stack, links=links)


class LiveExplorer(widgets.VBox):
    """A VBox of controls and an Output area; see :func:`live_explorer`.

    Its display bundle carries the view last shown (``image/png`` of a figure, ``text/html``
    otherwise), so a stored notebook shows the default figure before anything runs.
    """

    def __init__(self, children, *, shown: dict):
        super().__init__(children=children)
        self._shown = shown

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            if self._shown.get("png") is not None:
                bundle["image/png"] = base64.b64encode(self._shown["png"]).decode("ascii")
            elif self._shown.get("html") is not None:
                bundle["text/html"] = self._shown["html"]
        return bundle


def live_explorer(render: Callable[..., object], **controls: widgets.ValueWidget) -> LiveExplorer:
    """Recompute ``render`` in the running kernel whenever a control changes.

    Parameters
    ----------
    render : callable
        ``render(**values)`` returns a matplotlib Figure or an HTML string. For values that make
        no sense together (``d > L``) it raises ``ValueError``: the last figure stays, with the
        error's message beside it.
    **controls : ipywidgets.ValueWidget
        One widget per parameter of ``render`` (sliders, dropdowns, ...).

    Returns
    -------
    LiveExplorer
        An ``ipywidgets.VBox``: the controls and an Output area. On the static website the output
        shown is the one computed when the page was built; moving the controls needs a kernel.

    Raises
    ------
    TypeError
        If ``render`` is not callable or a control is not an ipywidgets value widget.
    ValueError
        If no control is given.

    References
    ----------
    Used by the chapters' "live" cells; see the introduction ("How to read it").
    """
    if not callable(render):
        raise TypeError(f"render must be callable, got {type(render).__name__}")
    if not controls:
        raise ValueError("live_explorer needs at least one control widget")
    for name, c in controls.items():
        if not isinstance(c, widgets.ValueWidget):
            raise TypeError(f"control {name!r} must be an ipywidgets value widget, got {type(c).__name__}")

    shown: dict = {"png": None, "html": None}

    def show(**kw):
        try:
            out = render(**kw)
        except ValueError as exc:
            message = (f"<p style='max-width: 22em'><b>{html.escape(str(exc))}</b><br>"
                       "<span style='font-size: 90%'>Still showing the last valid values.</span></p>")
            if shown["png"] is not None:
                display(HTML(f"<div style='display: flex; flex-wrap: wrap; align-items: center'>"
                             f"<img style='max-width: 100%' src='data:image/png;base64,"
                             f"{base64.b64encode(shown['png']).decode('ascii')}'>{message}</div>"))
            else:
                display(HTML((shown["html"] or "") + message))
            return
        if isinstance(out, Figure):
            png = figure_to_png(out)
            shown.update(png=png, html=None)
            display(Image(data=png, format="png"))
        elif isinstance(out, str):
            shown.update(png=None, html=out)
            display(HTML(out))
        else:
            raise TypeError(f"render must return a Figure or HTML string, got {type(out).__name__}")

    out = widgets.interactive_output(show, controls)
    box = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
    return LiveExplorer([box, out], shown=shown)
