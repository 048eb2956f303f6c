"""One figure style for the whole book.

Figures are drawn on an opaque white background so that they stay readable when the website is in
dark mode, at a modest size and resolution so that stored notebooks stay small.
"""

from __future__ import annotations

import base64
import io
from contextlib import contextmanager

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from ..errors import SizeTooLargeError
from .._validate import as_float_array, check_bool, check_real, check_size, gib

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["apply_style", "heatmap", "subplots", "figure_to_png", "panel_figure", "PanelFigure"]
# The module's public names: the flat ones, then those that stay in this module.
__all__ = [*__flat__, "BOOK_STYLE", "book_style", "NARROW_SCREEN_PX"]

#: rcParams applied by :func:`apply_style`.
BOOK_STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 90,
    "savefig.dpi": 90,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "savefig.bbox": "tight",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "font.size": 9,
    "image.cmap": "viridis",
    "axes.prop_cycle": mpl.cycler(
        color=["#1f5fa8", "#d1495b", "#2e933c", "#edae49", "#66459b", "#00798c", "#444444"]
    ),
}


def apply_style() -> None:
    """Apply :data:`BOOK_STYLE` globally (chapters call this once in their imports cell)."""
    mpl.rcParams.update(BOOK_STYLE)


@contextmanager
def book_style():
    """Context manager form of :func:`apply_style` that restores the previous settings."""
    with mpl.rc_context(BOOK_STYLE):
        yield


#: The most panels of one :func:`subplots` figure (each axes costs milliseconds and memory;
#: the book's largest figure has 12).
MAX_PANELS = 256
#: The largest resolution of :func:`figure_to_png` (and of the precomputed widgets).
MAX_DPI = 2400
#: The most pixels of one rendered PNG: 10**8 (an RGBA buffer of 400 MB).
MAX_PIXELS = 10**8


def subplots(nrows: int = 1, ncols: int = 1, *, width: float | None = None,
             height: float | None = None, **kwargs):
    """``plt.subplots`` with the book's default size scaled to the grid of panels.

    ``nrows``, ``ncols`` and their product are at most 256 (``MAX_PANELS``); a larger grid is
    a :class:`sattn.SizeTooLargeError`.

    References
    ----------
    The book's figure style, used by the figures of every chapter.
    """
    why = f"at most {MAX_PANELS} panels in one figure (nrows * ncols)"
    nrows = check_size("nrows", nrows, cap=MAX_PANELS, why=why)
    ncols = check_size("ncols", ncols, cap=MAX_PANELS // nrows, why=why + f", nrows = {nrows}")
    width = None if width is None else check_real("width", width, low=0.0, low_open=True)
    height = None if height is None else check_real("height", height, low=0.0, low_open=True)
    w = width if width is not None else min(2.9 * ncols + 0.6, 10.0)
    h = height if height is not None else 2.6 * nrows + 0.4
    with book_style():
        return plt.subplots(nrows, ncols, figsize=(w, h), **kwargs)


def heatmap(ax, M, *, title: str | None = None, cmap: str = "viridis", log: bool = False,
            vmin: float | None = None, vmax: float | None = None, colorbar: bool = True,
            floor: float = 1e-12):
    """Draw a matrix as an image with row index down and column index across.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    M : array_like, shape (m, n)
        Real, non-empty. NaN entries are left blank (use them to hide cells, e.g. above the
        diagonal of a causal matrix).
    title : str, optional
    cmap : str, default "viridis"
    log : bool, default False
        Show ``log10(max(M, floor))``; useful for attention matrices whose small entries matter.
        ``M`` must then be nonnegative (apart from NaN).
    vmin, vmax : float, optional
        Colour limits (in log10 units when ``log``).
    colorbar : bool, default True
    floor : float, default 1e-12
        Smallest value shown when ``log`` is set (zeros are drawn at this level); ``floor > 0``.

    Returns
    -------
    matplotlib.image.AxesImage

    Raises
    ------
    TypeError
        If ``M`` is not a real numeric array, ``ax`` has no ``imshow``, ``log`` or ``colorbar``
        is not a bool, or ``cmap`` is neither a name nor a Colormap.
    ValueError
        If ``M`` is not a non-empty 2-D array, ``log`` is set and ``M`` has a negative entry,
        or ``floor`` (checked whether or not ``log`` is set) is not a positive finite number.
    """
    if not hasattr(ax, "imshow"):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    M = as_float_array("M", M, finite=False)
    if M.ndim != 2:
        raise ValueError(f"M must be a 2-D matrix, got shape {M.shape}")
    if M.size == 0:
        raise ValueError(f"M must be non-empty, got shape {M.shape}")
    for nm, flag in (("log", log), ("colorbar", colorbar)):
        check_bool(nm, flag)
    if not isinstance(cmap, (str, mpl.colors.Colormap)):
        raise TypeError(f"cmap must be a colormap name, got {cmap!r} ({type(cmap).__name__})")
    vmin = None if vmin is None else check_real("vmin", vmin)
    vmax = None if vmax is None else check_real("vmax", vmax)
    floor = check_real("floor", floor, low=0.0, low_open=True)
    if log:
        neg = M < 0  # NaN compares False: blank cells are allowed
        if neg.any():
            r, c = np.argwhere(neg)[0]
            raise ValueError(
                f"heatmap(log=True) needs a nonnegative M, but M[{r}, {c}] = {M[r, c]:.6g} "
                "(it would be drawn at the floor)"
            )
    data = np.log10(np.maximum(M, floor)) if log else M
    im = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="equal")
    if title:
        ax.set_title(title)
    ax.set_xlabel("column $j$")
    ax.set_ylabel("row $l$")
    if colorbar:
        cb = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        if log:
            cb.set_label("log$_{10}$ entry", fontsize=8)
    return im


def figure_to_png(fig, *, dpi: int | None = None, close: bool = True) -> bytes:
    """Render a figure to PNG bytes (used for precomputed widgets).

    ``dpi`` is at most 2400 (``MAX_DPI``), and the figure at that resolution at most
    ``10**8`` pixels (``MAX_PIXELS``); more is a :class:`sattn.SizeTooLargeError`.

    References
    ----------
    The precomputed interactive figures of every chapter (the introduction's "How to read it").
    """
    if not hasattr(fig, "savefig"):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    dpi = None if dpi is None else check_size("dpi", dpi, cap=MAX_DPI,
                                              why="the resolution of a figure in the book")
    res = dpi or BOOK_STYLE["savefig.dpi"]
    try:
        w, h = (float(x) for x in fig.get_size_inches())
    except (AttributeError, TypeError, ValueError):
        w = h = None
    if w is not None and w * h * float(res) ** 2 > MAX_PIXELS:
        raise SizeTooLargeError(
            f"dpi = {res} is too large for a {w:g} x {h:g} inch figure: "
            f"{w * h * float(res) ** 2:.3g} pixels, more than the {MAX_PIXELS:.0e} allowed "
            f"({gib(4.0 * MAX_PIXELS)} of RGBA); lower dpi or the figure size")
    check_bool('close', close)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=res, bbox_inches="tight",
                facecolor="white", metadata={"Software": None})
    if close:
        plt.close(fig)
    return buf.getvalue()


#: Screens at most this wide (CSS pixels) get the stacked layout of a :class:`PanelFigure`.
NARROW_SCREEN_PX = 600


class PanelFigure:
    """Panels drawn twice: side by side for a wide screen, stacked for a phone.

    Displayed in a notebook or on the website, it is an HTML ``<picture>`` whose image is the
    side-by-side figure on screens wider than ``NARROW_SCREEN_PX`` pixels and the stacked one on
    narrower screens, so a phone shows every panel at the width of the screen instead of a row of
    panels shrunk to a third of it. Its ``image/png`` is the side-by-side figure (what a notebook
    shows without HTML). Made by :func:`panel_figure`.
    """

    def __init__(self, wide: bytes, narrow: bytes, n: int):
        self.wide, self.narrow, self.n = wide, narrow, n

    def _html(self) -> str:
        b64 = {k: base64.b64encode(v).decode("ascii") for k, v in
               (("wide", self.wide), ("narrow", self.narrow))}
        return (f'<picture class="book-panels"><source media="(max-width: {NARROW_SCREEN_PX}px)" '
                f'srcset="data:image/png;base64,{b64["narrow"]}">'
                f'<img src="data:image/png;base64,{b64["wide"]}" '
                f'alt="{self.n} panels (stacked on a narrow screen)"></picture>')

    def _repr_mimebundle_(self, **kwargs):
        return {"text/html": self._html(),
                "image/png": base64.b64encode(self.wide).decode("ascii"),
                "text/plain": repr(self)}

    def __repr__(self) -> str:
        return f"<PanelFigure: {self.n} panels, side by side; stacked on a narrow screen>"


def panel_figure(n: int, draw, *, panel_width: float = 3.3, panel_height: float = 3.0,
                 dpi: int | None = None) -> PanelFigure:
    """A row of ``n`` panels that a phone shows stacked (one panel per screen width).

    ``draw(fig, axes)`` draws the panels on a list of ``n`` axes; it is called twice, once on a
    row of ``n`` panels and once on a column of them, so it must not depend on the layout.

    Parameters
    ----------
    n : int
        Number of panels, ``1 <= n <= 12``.
    draw : callable
        ``draw(fig, axes)`` with ``axes`` a list of ``n`` matplotlib axes.
    panel_width, panel_height : float
        Size of one panel in inches (positive, at most 20).
    dpi : int, optional
        Resolution of the two PNGs (default the book's).

    Returns
    -------
    PanelFigure
        Displays as the row on a wide screen and as the column on a narrow one.

    Raises
    ------
    TypeError
        If ``draw`` is not callable.
    ValueError
        If ``n < 1`` or a size is out of the range stated above.
    SizeTooLargeError
        If ``n > 12`` or ``dpi > 2400``.

    References
    ----------
    Multi-panel figures of Part III (:ref:`ch-finite-precision`); tests/site/test_narrow.py checks
    that the phone gets the stacked image.
    """
    n = check_size("n", n, cap=12, why="panels in one figure")
    dpi = None if dpi is None else check_size("dpi", dpi, cap=MAX_DPI,
                                              why="the resolution of a figure in the book")
    if not callable(draw):
        raise TypeError(f"draw must be callable as draw(fig, axes), got {type(draw).__name__}")
    panel_width = check_real("panel_width", panel_width, low=0.0, high=20.0, low_open=True)
    panel_height = check_real("panel_height", panel_height, low=0.0, high=20.0, low_open=True)
    pngs = []
    for rows, cols in ((1, n), (n, 1)):
        fig, axes = subplots(rows, cols, width=panel_width * cols, height=panel_height * rows)
        draw(fig, list(np.ravel(axes)))
        fig.tight_layout()
        pngs.append(figure_to_png(fig, dpi=dpi))
    return PanelFigure(pngs[0], pngs[1], n)
