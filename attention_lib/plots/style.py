"""The series' look, in one place: colours, the two styles, new figures.

Two styles exist:

* ``"default"`` - notebook figures: readable fonts, labelled axes, the
  colour-blind-safe ``viridis`` colormap for weights and ``cividis`` for
  signed or unbounded values;
* ``"board"`` - the same figures for a projector: large fonts, thick lines.

A style is never switched on globally. Either create the figure with
``new_figure(style="board")`` (the helpers then pick the style up from the
figure), pass ``style="board"`` to a helper, or wrap a cell in
``with series_style("board"): ...``. Fonts, line widths and tick sizes are set on the
artists themselves, so a figure keeps its style however late it is rendered.

Every figure builder returns the artists it made that its in-place updater
moves, as a small named tuple (an explorer's scene is made of these).
"""

from __future__ import annotations

import contextlib
import functools
import os

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

__all__ = [
    "COLORS",
    "DISPLAY_WIDTH_PX",
    "DIVERGING_CMAP",
    "MASKED_COLOR",
    "STATIC_DPI",
    "STYLES",
    "default_style",
    "figure_style",
    "format_weight",
    "new_figure",
    "raise_small_text",
    "series_style",
]

#: Colour of masked (blocked) cells: grey with a hatch, never a colormap colour,
#: so a blocked key cannot be confused with a key that received weight 0.
MASKED_COLOR = "#bdbdbd"

#: One colour per role, from the Okabe-Ito palette (distinguishable with every
#: common colour-vision deficiency). Explorers that draw their own curves use
#: these too, so a query is the same colour in every figure of the series.
COLORS = {
    "query": "#D55E00",  # vermillion
    "key": "#0072B2",  # blue
    "value": "#009E73",  # bluish green
    "output": "#CC79A7",  # reddish purple
    "reference": "#555555",  # dark grey: y = d_k lines, markers
    # What a theory or the gradient predicts, next to what was measured: vermillion like
    # the query, which never shares a figure with a prediction.
    "prediction": "#D55E00",
    "neutral": "#999999",  # light grey: a shape with no role of its own
    "guide": "#cccccc",  # faint grey: frames and outlines behind the data
    "zero": "#dddddd",  # fainter grey: the lines x = 0 and y = 0 under the data
}
#: Diverging map for signed quantities (gradients): ColorBrewer's purple-orange,
#: readable with the common colour-vision deficiencies, white at 0 so that a
#: zero never looks like the grey hatch of a masked cell.
DIVERGING_CMAP = "PuOr_r"

#: Width in CSS pixels of JupyterLab's notebook column at 1920 x 1080 (measured: about
#: 1484). Live figures are rendered exactly this many pixels wide and shown at that
#: size, so a projector gets every pixel and the browser never stretches them.
DISPLAY_WIDTH_PX = 1480
#: Resolution of static (pyplot) figures: a 9-point annotation is 19 CSS pixels, a
#: 6.4-inch figure about 960 pixels wide (matplotlib's 100 would give 12.5 and 640).
STATIC_DPI = 150

_BASE_RC = {
    "image.cmap": "viridis",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titleweight": "bold",
    "axes.prop_cycle": mpl.cycler(
        color=["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
    ),
    "legend.frameon": False,
    "hatch.color": "#6e6e6e",
    "figure.constrained_layout.use": True,
}

#: Sizes per style. ``rc`` goes into :func:`matplotlib.rc_context`; the other
#: numbers are applied to the artists directly by the helpers.
STYLES = {
    "default": {
        "rc": {
            **_BASE_RC,
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "xtick.labelsize": 10,
            "ytick.labelsize": 10,
            "legend.fontsize": 10,
            "lines.linewidth": 1.8,
            "lines.markersize": 6,
            "axes.linewidth": 0.8,
        },
        "title": 12,
        "label": 11,
        "tick": 10,
        "annotation": 9,
        "line": 1.8,
        "marker": 6,
        "hatch_width": 1.0,
        "figsize": (6.4, 4.0),
    },
    "board": {
        "rc": {
            **_BASE_RC,
            "font.size": 20,
            "axes.titlesize": 24,
            "axes.labelsize": 22,
            "xtick.labelsize": 18,
            "ytick.labelsize": 18,
            "legend.fontsize": 18,
            "lines.linewidth": 4.0,
            "lines.markersize": 12,
            "axes.linewidth": 2.0,
        },
        "title": 24,
        "label": 22,
        "tick": 18,
        "annotation": 18,
        "line": 4.0,
        "marker": 12,
        "hatch_width": 2.0,
        "figsize": (12.0, 7.0),
        # A static figure is shown at most as wide as the board page's column, 1170
        # CSS px at 1280 x 720: at 14 inches its smallest type (18 pt, 37.5 px at
        # STATIC_DPI) still shows at 21 px there, however many columns of axes.
        "max_figwidth": 14.0,
    },
}

_STYLE_ATTRIBUTE = "_attention_lib_style"


def _check_style(style):
    if style not in STYLES:
        raise ValueError(f"style must be one of {sorted(STYLES)}; got {style!r}.")
    return style


@contextlib.contextmanager
def series_style(style="default"):
    """Context manager: matplotlib defaults of the series' ``style`` inside the block.

    Uses :func:`matplotlib.rc_context`, so nothing leaks out of the block.

    Examples
    --------
    >>> import matplotlib as mpl
    >>> before = mpl.rcParams["font.size"]
    >>> with series_style("board"):
    ...     mpl.rcParams["font.size"]
    20.0
    >>> mpl.rcParams["font.size"] == before
    True
    """
    _check_style(style)
    with mpl.rc_context(STYLES[style]["rc"]):
        yield STYLES[style]


#: The environment variable that sets the series' default style (``make board`` sets it).
STYLE_VARIABLE = "ATTENTION_STYLE"


def default_style():
    """The style used when none is given: ``$ATTENTION_STYLE`` if set, else ``"default"``.

    ``make board`` sets ``ATTENTION_STYLE=board`` for its kernels. It is read
    each time a figure or explorer is built and never written by the library,
    so a notebook cannot change it behind the reader; ``style=`` always wins.

    Examples
    --------
    >>> import os
    >>> default_style() == os.environ.get("ATTENTION_STYLE", "default")
    True
    """
    style = os.environ.get(STYLE_VARIABLE) or "default"
    if style not in STYLES:
        raise ValueError(
            f"the environment variable {STYLE_VARIABLE} must be one of {sorted(STYLES)} "
            f"or unset; got {style!r}."
        )
    return style


def _active_style():
    """The style whose font size the current rcParams carry (inside a style block)."""
    sizes = (mpl.rcParams["axes.titlesize"], mpl.rcParams["font.size"])
    for name, spec in STYLES.items():
        if sizes == (spec["rc"]["axes.titlesize"], spec["rc"]["font.size"]):
            return name
    return default_style()


def figure_style(fig_or_ax, style=None):
    """Which style a helper should use for ``fig_or_ax``.

    An explicit ``style`` wins; otherwise the style the figure was created
    with by :func:`new_figure`; otherwise the style of the enclosing
    :func:`series_style` block; otherwise :func:`default_style`.

    Examples
    --------
    >>> fig, ax = new_figure(style="board")
    >>> figure_style(ax), figure_style(ax, "default")
    ('board', 'default')
    """
    if style is not None:
        return _check_style(style)
    # The style is stored on the root figure (subfigures and axes name it with root=True).
    root = fig_or_ax.get_figure(root=True) if fig_or_ax is not None else None
    stored = getattr(root, _STYLE_ATTRIBUTE, None)
    return stored if stored is not None else _active_style()


def new_figure(
    nrows=1,
    ncols=1,
    *,
    figsize=None,
    style=None,
    pyplot=True,
    dpi=None,
    squeeze=True,
    **subplot_kw,
):
    """Create a figure and its axes in the series style.

    Parameters
    ----------
    nrows, ncols : int
        Grid of axes, as in :func:`matplotlib.pyplot.subplots`. ``nrows=0``
        creates no axes and returns ``(fig, None)``: for code that lays out its
        own axes (the explorers' ``draw(fig, state)``).
    figsize : (float, float), optional
        Inches; defaults to the style's size scaled by the grid.
    style : {"default", "board"}, optional
        Defaults to the enclosing :func:`series_style` block, else :func:`default_style`.
        The figure remembers it, so helpers drawing into it use it too.
    pyplot : bool, default True
        True: a pyplot-managed figure, for static notebook cells ending in
        ``plt.show()``. False: a bare :class:`matplotlib.figure.Figure` with an
        Agg canvas that pyplot never sees (no display, no memory held by
        pyplot): what the interactive explorers reuse.
    dpi : float, optional
        Resolution; default :data:`STATIC_DPI` for pyplot figures, matplotlib's
        for bare ones (the explorers set their own, see :data:`DISPLAY_WIDTH_PX`).
    squeeze : bool, default True
        As in :func:`matplotlib.pyplot.subplots`.
    **subplot_kw
        Passed on to :meth:`matplotlib.figure.Figure.subplots` (``sharex``, ...).

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : matplotlib.axes.Axes or numpy.ndarray of them

    Examples
    --------
    >>> fig, axes = new_figure(1, 2, pyplot=False)
    >>> axes.shape, figure_style(fig)
    ((2,), 'default')
    >>> fig, axes = new_figure(0, figsize=(4, 3), style="board", pyplot=False)
    >>> axes is None, figure_style(fig), fig.get_size_inches().tolist()
    (True, 'board', [4.0, 3.0])
    """
    style = figure_style(None, style)
    spec = STYLES[style]
    if figsize is None:
        width, height = spec["figsize"]
        width = min(width * min(ncols, 2) ** 0.75, spec.get("max_figwidth", np.inf))
        figsize = (width, height * min(max(nrows, 1), 2) ** 0.75)
    with series_style(style):
        if pyplot:
            import matplotlib.pyplot as plt  # here: importing pyplot picks a backend

            fig = plt.figure(figsize=figsize, dpi=STATIC_DPI if dpi is None else dpi)
        else:
            fig = Figure(figsize=figsize, dpi=dpi)
            FigureCanvasAgg(fig)
        setattr(fig, _STYLE_ATTRIBUTE, style)
        if nrows == 0:
            return fig, None
        if style == "board":
            each = {"axes_class": _BoardAxes, **subplot_kw.get("subplot_kw", {})}
            subplot_kw = {**subplot_kw, "subplot_kw": each}
        axes = fig.subplots(nrows, ncols, squeeze=squeeze, **subplot_kw)
        for ax in np.ravel(axes):
            _style_axes(ax, style)
    return fig, axes


def raise_small_text(fig, points):
    """Set every text of ``fig`` smaller than ``points`` to ``points`` (tick labels too).

    For a live figure that a 1366 x 768 laptop shows smaller than it is drawn
    (issue 21): JupyterLab's default layout there gives the notebook 934 of the
    1480 px the explorers draw for, so 12 CSS px as shown is 19 px drawn. An
    explorer whose figure is wide in inches (small points per pixel) calls this at
    the end of ``draw``; a tick a later draw adds copies the size of the first.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> raise_small_text(fig, 12)
    >>> ax.xaxis.get_ticklabels()[0].get_fontsize(), ax.title.get_fontsize()
    (12.0, 12.0)
    """
    for text in fig.findobj(Text):
        text.set_fontsize(max(points, text.get_fontsize()))


def _in_board_style(method):
    @functools.wraps(method)
    def styled(self, *args, **kwargs):
        with series_style("board"):
            return method(self, *args, **kwargs)

    return styled


class _BoardAxes(Axes):
    """Axes of a board figure: a legend, text, annotation or title that a notebook
    cell adds later, outside any style block, still gets the board's type sizes
    (matplotlib fixes a text's size from the rcParams of the moment it is made)."""

    legend = _in_board_style(Axes.legend)
    text = _in_board_style(Axes.text)
    annotate = _in_board_style(Axes.annotate)
    set_title = _in_board_style(Axes.set_title)


def _style_axes(ax, style):
    """Put the style's sizes on ``ax`` itself (survives rendering outside rc_context)."""
    spec = STYLES[style]
    ax.tick_params(labelsize=spec["tick"], width=spec["rc"]["axes.linewidth"])
    _style_labels(ax, spec)
    for spine in ax.spines.values():
        spine.set_linewidth(spec["rc"]["axes.linewidth"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _get_ax(ax, style):
    """``ax`` if given, else a fresh pyplot axes in ``style``."""
    if ax is None:
        _, ax = new_figure(style=style)
    return ax


def _prepare(ax, style=None):
    """What every figure builder starts with: ``ax`` (a new one if None) styled, and its sizes.

    The style is ``style`` if given, else the one :func:`figure_style` finds for ``ax``.
    """
    style = figure_style(ax, style)
    ax = _get_ax(ax, style)
    _style_axes(ax, style)
    return ax, STYLES[style]


def _labels(labels, n, name):
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    if len(labels) != n:
        raise ValueError(f"{name} must have {n} entries (one per row/column); got {len(labels)}.")
    return labels


def format_weight(weight, decimals=2):
    """A weight rounded for display, never showing a positive weight as zero.

    Softmax gives every readable key a positive weight; rounding 0.0004 to
    "0.00" would contradict that on screen, so it reads "<0.01" instead.

    Examples
    --------
    >>> format_weight(0.25), format_weight(0.0004), format_weight(0.0)
    ('0.25', '<0.01', '0.00')
    """
    weight = float(weight)
    text = f"{weight:.{decimals}f}"
    if 0.0 < weight < 0.5 * 10.0**-decimals:
        return f"<{10.0**-decimals:.{decimals}f}"
    return text


def _style_labels(ax, spec, title=None):
    """Set ``title`` if given; the style's sizes on the axis labels and the title.

    After the title, since ``set_title`` resets its font.
    """
    if title is not None:
        ax.set_title(title)
    ax.xaxis.label.set_fontsize(spec["label"])
    ax.yaxis.label.set_fontsize(spec["label"])
    ax.title.set_fontsize(spec["title"])
    ax.title.set_fontweight("bold")


def _square_plane(ax, limit, axis_name, title, spec):
    """Equal axes from ``-limit`` to ``limit``, labelled "<axis_name> 1" and "<axis_name> 2"."""
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_aspect("equal")
    # Whole numbers, few enough that board-size tick labels never run into each other.
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(nbins=4, integer=True, symmetric=True))
    ax.set_xlabel(f"{axis_name} 1")
    ax.set_ylabel(f"{axis_name} 2")
    _style_labels(ax, spec, title)
