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
from typing import Callable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import HTML, display
from matplotlib.figure import Figure

from .._validate import SizeTooLargeError, check_size
from .plotting import MAX_DPI
from .plotting import figure_to_png

__all__ = ["PrecomputedExplorer", "precomputed_explorer", "live_explorer"]


def _format_value(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


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


class PrecomputedExplorer(widgets.VBox):
    """A VBox of sliders and precomputed views; see :func:`precomputed_explorer`.

    Its text representation is a short summary (not the PNG bytes of every view), which keeps
    stored notebooks small and makes nbval compare something meaningful. Its display bundle also
    carries the PNG of the view the sliders start on (``image/png``): a notebook that JupyterLab
    has not run yet (untrusted, no widget state) shows that picture instead of the text summary,
    and the website and a running kernel show the widget itself.
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

    def default_png(self) -> bytes | None:
        """PNG bytes of the view the sliders start on, or None if that view is HTML."""
        w = self.stack
        for slider in self.sliders:
            w = w.children[slider.index]
        if isinstance(w, widgets.Image) and w.format == "png":
            return bytes(w.value)
        return None

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        png = self.default_png()
        if bundle is not None and png is not None:
            bundle["image/png"] = base64.b64encode(png).decode("ascii")
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
        string, for one point of the grid.
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
        If the grid is empty, a parameter has no values or repeated values, or ``value`` names
        an unknown parameter or an off-grid value.
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
        sliders.append(widgets.SelectionSlider(
            options=[_format_value(v) for v in vals], index=start, description=name,
            continuous_update=True, style={"description_width": "initial"},
            layout=widgets.Layout(width="320px"),
        ))

    links = []

    def build(level: int, fixed: tuple) -> widgets.Stack:
        children = []
        for v in values[level]:
            params = fixed + (v,)
            if level == len(names) - 1:
                children.append(_to_widget(render(**dict(zip(names, params))), dpi=dpi))
            else:
                children.append(build(level + 1, params))
        stack = widgets.Stack(children=children, selected_index=sliders[level].index)
        links.append(widgets.jslink((sliders[level], "index"), (stack, "selected_index")))
        return stack

    stack = build(0, ())
    header = [widgets.HTML(description)] if description else []
    controls = widgets.HBox(sliders, layout=widgets.Layout(flex_flow="row wrap"))
    return PrecomputedExplorer(header + [controls, stack], grid=dict(zip(names, values)),
                               sliders=sliders, stack=stack, links=links)


def live_explorer(render: Callable[..., object], **controls: widgets.ValueWidget) -> widgets.VBox:
    """Recompute ``render`` in the running kernel whenever a control changes.

    Parameters
    ----------
    render : callable
        ``render(**values)`` returns a matplotlib Figure or an HTML string.
    **controls : ipywidgets.ValueWidget
        One widget per parameter of ``render`` (sliders, dropdowns, ...).

    Returns
    -------
    ipywidgets.VBox
        The controls and an Output area. On the static website the output shown is the one
        computed when the page was built; moving the controls needs a kernel.

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

    def show(**kw):
        out = render(**kw)
        if isinstance(out, Figure):
            display(out)
            plt.close(out)
        elif isinstance(out, str):
            display(HTML(out))
        else:
            raise TypeError(f"render must return a Figure or HTML string, got {type(out).__name__}")

    out = widgets.interactive_output(show, controls)
    box = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
    return widgets.VBox([box, out])
