"""Every figure the series draws, in one style.

The helpers only draw: they take arrays that :mod:`attention_lib` already
computed and format them (rounding, labels, colours). Two styles exist:

* ``"default"`` - notebook figures: readable fonts, labelled axes, the
  colour-blind-safe ``viridis`` colormap for weights and ``cividis`` for
  signed or unbounded values;
* ``"board"`` - the same figures for a projector: large fonts, thick lines.

A style is never switched on globally. Either create the figure with
``new_figure(style="board")`` (the helpers then pick the style up from the
figure), pass ``style="board"`` to a helper, or wrap a cell in
``with board_style(): ...``. Fonts, line widths and tick sizes are set on the
artists themselves, so a figure keeps its style however late it is rendered.

Examples
--------
>>> fig, ax = new_figure()
>>> image = attention_heatmap(np.array([[0.7, 0.3], [0.5, 0.5]]), ax=ax)
>>> ax.get_xlabel(), ax.get_ylabel()
('key', 'query')
"""

from __future__ import annotations

import contextlib

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, PathPatch, Rectangle
from matplotlib.path import Path

__all__ = [
    "COLORS",
    "DIVERGING_CMAP",
    "MASKED_COLOR",
    "STYLES",
    "arrows_2d",
    "attention_heatmap",
    "blend_plot",
    "board_style",
    "figure_style",
    "format_weight",
    "kv_cards",
    "new_figure",
    "score_histogram",
    "series_style",
    "update_arrows_2d",
    "update_attention_heatmap",
    "update_blend_plot",
    "update_weight_bars",
    "variance_curve",
    "weight_bars",
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
}
#: Diverging map for signed quantities (gradients): ColorBrewer's purple-orange,
#: readable with the common colour-vision deficiencies, white at 0 so that a
#: zero never looks like the grey hatch of a masked cell.
DIVERGING_CMAP = "PuOr_r"

_QUERY_COLOR = COLORS["query"]
_KEY_COLOR = COLORS["key"]
_VALUE_COLOR = COLORS["value"]
_OUTPUT_COLOR = COLORS["output"]
_REFERENCE_COLOR = COLORS["reference"]

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


def board_style():
    """Context manager for projector figures: large fonts and thick lines.

    Same as ``series_style("board")``; every helper called inside it and every
    figure created inside it with :func:`new_figure` uses the board sizes.

    Examples
    --------
    >>> with board_style():
    ...     fig, ax = new_figure()
    >>> figure_style(fig)
    'board'
    """
    return series_style("board")


def _active_style():
    """The style whose font size the current rcParams carry (inside a style block)."""
    size = mpl.rcParams["axes.titlesize"]
    for name, spec in STYLES.items():
        if (
            size == spec["rc"]["axes.titlesize"]
            and mpl.rcParams["font.size"] == (spec["rc"]["font.size"])
        ):
            return name
    return "default"


def figure_style(fig_or_ax, style=None):
    """Which style a helper should use for ``fig_or_ax``.

    An explicit ``style`` wins; otherwise the style the figure was created
    with by :func:`new_figure`; otherwise the style of the enclosing
    :func:`board_style` / :func:`series_style` block; otherwise ``"default"``.

    Examples
    --------
    >>> fig, ax = new_figure(style="board")
    >>> figure_style(ax), figure_style(ax, "default")
    ('board', 'default')
    """
    if style is not None:
        return _check_style(style)
    fig = getattr(fig_or_ax, "figure", None) if fig_or_ax is not None else None
    fig = fig if fig is not None else fig_or_ax
    # Subfigures report their parent via .figure; the root figure points to itself.
    root = getattr(fig, "get_figure", lambda **_: fig)(root=True) if fig is not None else None
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
        Defaults to the enclosing :func:`board_style` block, else ``"default"``.
        The figure remembers it, so helpers drawing into it use it too.
    pyplot : bool, default True
        True: a pyplot-managed figure, for static notebook cells ending in
        ``plt.show()``. False: a bare :class:`matplotlib.figure.Figure` with an
        Agg canvas that pyplot never sees (no display, no memory held by
        pyplot): what the interactive explorers reuse.
    dpi : float, optional
        Resolution; defaults to matplotlib's.
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
        figsize = (width * min(ncols, 2) ** 0.75, height * min(max(nrows, 1), 2) ** 0.75)
    with series_style(style):
        if pyplot:
            import matplotlib.pyplot as plt

            fig = plt.figure(figsize=figsize, dpi=dpi)
        else:
            fig = Figure(figsize=figsize, dpi=dpi)
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            FigureCanvasAgg(fig)
        setattr(fig, _STYLE_ATTRIBUTE, style)
        if nrows == 0:
            return fig, None
        axes = fig.subplots(nrows, ncols, squeeze=squeeze, **subplot_kw)
        for ax in np.ravel(axes):
            _style_axes(ax, style)
    return fig, axes


def _style_axes(ax, style):
    """Put the style's sizes on ``ax`` itself (survives rendering outside rc_context)."""
    spec = STYLES[style]
    ax.tick_params(labelsize=spec["tick"], width=spec["rc"]["axes.linewidth"])
    ax.xaxis.label.set_fontsize(spec["label"])
    ax.yaxis.label.set_fontsize(spec["label"])
    ax.title.set_fontsize(spec["title"])
    ax.title.set_fontweight("bold")
    for spine in ax.spines.values():
        spine.set_linewidth(spec["rc"]["axes.linewidth"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _get_ax(ax, style):
    """``ax`` if given, else a fresh pyplot axes in ``style``."""
    if ax is None:
        _, ax = new_figure(style=style)
    return ax


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


def _text_color(rgba):
    """Black or white, whichever reads better on a cell of colour ``rgba``."""
    r, g, b = rgba[:3]
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if luminance > 0.45 else "white"


def attention_heatmap(
    weights,
    ax=None,
    *,
    mask=None,
    query_labels=None,
    key_labels=None,
    annotate=None,
    decimals=2,
    title=None,
    cmap=None,
    vmin=0.0,
    vmax=1.0,
    colorbar=True,
    colorbar_label=None,
    signed=False,
    style=None,
):
    """Attention weights as a heatmap: one row per query, one column per key.

    Masked (blocked) cells are drawn grey and hatched, never with a colormap
    colour, so they stay distinct from readable keys that got weight 0.

    Parameters
    ----------
    weights : array_like, shape (T_q, T_k)
        The weights to show (or any matrix, with ``vmin``/``vmax`` to match).
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new pyplot figure if omitted.
    mask : array_like of bool, optional
        True = the query may read the key; broadcastable to ``weights``.
    query_labels, key_labels : sequence of str, optional
        Token labels for rows and columns (default: positions 0, 1, ...).
    annotate : bool, optional
        Write each value in its cell, rounded to ``decimals``. Default: only
        when the matrix is small enough to read (at most 10 x 10).
    decimals : int, default 2
    title : str, optional
    cmap : str, optional
        Default "viridis" (sequential), or ``DIVERGING_CMAP`` when ``signed``.
    vmin, vmax : float, default 0 and 1
        Colour range; weights live in [0, 1]. Pass None for the data range.
        Ignored when ``signed``.
    colorbar : bool, default True
    colorbar_label : str, optional
        What the colours measure, e.g. "∂L/∂S". Default "weight" for the
        default range, otherwise "value".
    signed : bool, default False
        For signed quantities such as gradients: a diverging colour map centred
        at 0 (white), with limits ``±max|value|``, so positive and negative
        entries get opposite hues and a zero is white, never the grey hatch of
        a masked cell.
    style : {"default", "board"}, optional
        Default: the figure's style (see :func:`figure_style`).

    Returns
    -------
    matplotlib.image.AxesImage

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> weights = np.array([[1.0, 0.0], [0.25, 0.75]])
    >>> image = attention_heatmap(weights, ax=ax, mask=causal_mask(2), key_labels=["a", "b"])
    >>> [t.get_text() for t in ax.texts if t.get_visible()]  # the masked cell has none
    ['1.00', '0.25', '0.75']
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['a', 'b']
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(
            f"weights must be 2-D (T_q, T_k) for a heatmap; got shape {weights.shape}. "
            "Pick one example and head first, e.g. weights[0, 0]."
        )
    n_q, n_k = weights.shape
    blocked = _blocked_cells(mask, weights.shape)
    query_labels = _labels(query_labels, n_q, "query_labels")
    key_labels = _labels(key_labels, n_k, "key_labels")
    style = figure_style(ax, style)
    spec = STYLES[style]
    ax = _get_ax(ax, style)
    _style_axes(ax, style)

    shown = np.ma.masked_array(weights, mask=blocked | ~np.isfinite(weights))
    if signed:
        largest = float(np.abs(shown).max()) if shown.count() else 0.0
        vmax = largest if largest > 0 else 1.0
        vmin = -vmax
    if cmap is None:
        cmap = DIVERGING_CMAP if signed else "viridis"
    colormap = mpl.colormaps[cmap].with_extremes(bad=MASKED_COLOR)
    image = ax.imshow(
        shown,
        cmap=colormap,
        vmin=vmin,
        vmax=vmax,
        aspect="auto",
        interpolation="nearest",
        gid="attention-weights",
    )
    # All masked cells form ONE hatched patch, so an explorer can move the mask
    # in place (update_attention_heatmap) and drawing stays cheap for large T.
    ax.add_patch(
        PathPatch(
            _cells_path(blocked),
            facecolor=MASKED_COLOR,
            edgecolor="#6e6e6e",
            hatch="//",
            linewidth=0,
            label="_masked",
            gid="masked",
        )
    )
    if annotate is None:
        annotate = max(n_q, n_k) <= 10
    if annotate:
        # One text per cell (hidden where masked), so updates only change them.
        for i in range(n_q):
            for j in range(n_k):
                ax.text(
                    j,
                    i,
                    "",
                    ha="center",
                    va="center",
                    fontsize=spec["annotation"],
                    gid="weight-annotation",
                )
        _annotate_cells(ax, image, weights, blocked, decimals)
    ax.set_xticks(range(n_k), key_labels if key_labels is not None else range(n_k))
    ax.set_yticks(range(n_q), query_labels if query_labels is not None else range(n_q))
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if title is not None:
        ax.set_title(title)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax, shrink=0.85)
        bar.ax.tick_params(labelsize=spec["tick"])
        if colorbar_label is None:
            colorbar_label = "weight" if (vmin, vmax) == (0.0, 1.0) else "value"
        bar.set_label(colorbar_label, fontsize=spec["label"])
    _style_labels(ax, spec)
    return image


def _cells_path(blocked):
    """One compound path of unit squares around the True cells of ``blocked``."""
    rows, cols = np.nonzero(blocked)
    if rows.size == 0:
        return Path(np.zeros((1, 2)), [Path.MOVETO])
    corners = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5], [-0.5, -0.5]])
    vertices = (np.stack([cols, rows], axis=-1)[:, None, :] + corners[None]).reshape(-1, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], rows.size)
    return Path(vertices, codes)


def _annotate_cells(ax, image, weights, blocked, decimals):
    texts = [t for t in ax.texts if t.get_gid() == "weight-annotation"]
    if not texts:
        return []
    if len(texts) != weights.size:
        raise ValueError(
            f"ax holds {len(texts)} annotations; got weights of shape {weights.shape}."
        )
    colormap, norm = image.get_cmap(), image.norm
    for text, value, hidden in zip(texts, weights.ravel(), blocked.ravel(), strict=True):
        visible = not hidden and bool(np.isfinite(value))
        text.set_visible(visible)
        if visible:
            text.set_text(format_weight(value, decimals))
            text.set_color(_text_color(colormap(norm(value))))
    return texts


def _blocked_cells(mask, shape):
    """Boolean array of the cells a mask blocks (``~mask``), or all False without a mask."""
    if mask is None:
        return np.zeros(shape, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be boolean (True = may read); got dtype {mask.dtype}.")
    try:
        return ~np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to weights of shape {shape}."
        ) from None


def _style_labels(ax, spec):
    ax.xaxis.label.set_fontsize(spec["label"])
    ax.yaxis.label.set_fontsize(spec["label"])
    ax.title.set_fontsize(spec["title"])
    ax.title.set_fontweight("bold")


def _vector_text(vector, decimals):
    return "[" + ", ".join(f"{x:.{decimals}f}" for x in np.ravel(vector)) + "]"


def kv_cards(
    keys,
    values,
    ax=None,
    *,
    weights=None,
    query=None,
    output=None,
    labels=None,
    decimals=1,
    title=None,
    style=None,
):
    """Key/value pairs drawn as index cards, optionally with their weights.

    Each card shows a key (what it can be found by) above its value (what it
    hands over). With ``weights``, a bar under each card shows how much the
    query read from it; with ``query`` / ``output``, the query card sits on
    the left and the blended output on the right. Made for the soft-lookup
    and board views; at most about eight cards stay readable.

    Parameters
    ----------
    keys : array_like, shape (T_k, d_k)
    values : array_like, shape (T_k, d_v)
    ax : matplotlib.axes.Axes, optional
    weights : array_like, shape (T_k,), optional
        One query's weights over the keys, in [0, 1]; None = not computed yet.
    query : array_like, shape (d_k,), optional
    output : array_like, shape (d_v,), optional
    labels : sequence of str, optional
        Card names (default "1", "2", ...).
    decimals : int, default 1
        For the vectors (weights always show two decimals).
    title : str, optional
    style : {"default", "board"}, optional

    Returns
    -------
    list of matplotlib.patches.FancyBboxPatch
        The key/value cards, left to right.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> cards = kv_cards([[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]], ax=ax,
    ...                  weights=[0.73, 0.27], query=[1.0, 0.0], output=[1.27])
    >>> len(cards)
    2
    >>> any(t.get_text() == "weight 0.73" for t in ax.texts)
    True
    """
    keys = np.atleast_2d(np.asarray(keys, dtype=float))
    values = np.atleast_2d(np.asarray(values, dtype=float))
    if keys.shape[0] != values.shape[0]:
        raise ValueError(
            f"keys and values need one row per card; got {keys.shape[0]} keys and "
            f"{values.shape[0]} values."
        )
    n = keys.shape[0]
    if weights is not None:
        weights = np.ravel(np.asarray(weights, dtype=float))
        if weights.shape != (n,):
            raise ValueError(f"weights must have one entry per card ({n}); got {weights.shape}.")
    labels = _labels(labels, n, "labels") or [str(i + 1) for i in range(n)]
    style = figure_style(ax, style)
    spec = STYLES[style]
    ax = _get_ax(ax, style)
    font = spec["annotation"]
    line = spec["line"] / 2

    slots = n + (query is not None) + (output is not None)
    ax.set_xlim(-0.1, slots * 1.2)
    ax.set_ylim(-0.55, 1.25)
    ax.set_axis_off()
    slot = 0

    def card(x, face, edge, head, body):
        patch = FancyBboxPatch(
            (x, 0.05),
            1.0,
            1.0,
            boxstyle="round,pad=0.02,rounding_size=0.06",
            facecolor=face,
            edgecolor=edge,
            linewidth=line,
        )
        ax.add_patch(patch)
        ax.text(x + 0.5, 0.9, head, ha="center", va="center", fontsize=font, weight="bold")
        for k, (caption, vector, color) in enumerate(body):
            top = 0.7 - 0.34 * k
            ax.text(x + 0.5, top, caption, ha="center", va="center", fontsize=font, color=color)
            ax.text(
                x + 0.5,
                top - 0.13,
                _vector_text(vector, decimals),
                ha="center",
                va="center",
                fontsize=font,
                color=color,
            )
        return patch

    if query is not None:
        card(0, "#fdf0e8", _QUERY_COLOR, "query", [("q", query, "#9a3a00")])
        slot = 1
    cards = []
    for i in range(n):
        x = 1.2 * (slot + i)
        body = [("key", keys[i], _KEY_COLOR), ("value", values[i], _VALUE_COLOR)]
        cards.append(card(x, "white", _KEY_COLOR, f"card {labels[i]}", body))
        if weights is not None:
            w = float(np.clip(weights[i], 0.0, 1.0))
            ax.add_patch(Rectangle((x, -0.3), 1.0, 0.16, facecolor="#eeeeee", edgecolor="none"))
            ax.add_patch(Rectangle((x, -0.3), w, 0.16, facecolor=_KEY_COLOR, edgecolor="none"))
            ax.text(
                x + 0.5,
                -0.45,
                f"weight {format_weight(weights[i])}",
                ha="center",
                va="center",
                fontsize=font,
            )
    if output is not None:
        card(1.2 * (slot + n), "#f7eaf2", _OUTPUT_COLOR, "output", [("o", output, "#7d3160")])
    if title is not None:
        ax.set_title(title, fontsize=spec["title"], fontweight="bold")
    return cards


def score_histogram(
    scores,
    ax=None,
    *,
    bins=40,
    label=None,
    color=None,
    density=True,
    title=None,
    xlabel="score",
    style=None,
):
    """Histogram of attention scores (masked -inf entries are left out).

    Parameters
    ----------
    scores : array_like
        Any shape; flattened. Non-finite entries (masked scores) are dropped.
    ax : matplotlib.axes.Axes, optional
    bins : int or sequence, default 40
    label : str, optional
        Legend entry (for comparing scaled and unscaled scores on one axes).
    color : str, optional
    density : bool, default True
        Plot a density, so samples of different sizes compare.
    title, xlabel : str, optional
    style : {"default", "board"}, optional

    Returns
    -------
    matplotlib.container.BarContainer

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> bars = score_histogram(np.array([0.0, 0.1, -np.inf, 0.2]), ax=ax, bins=2)
    >>> len(bars), ax.get_xlabel(), ax.get_ylabel()
    (2, 'score', 'density')
    """
    scores = np.asarray(scores, dtype=float).ravel()
    scores = scores[np.isfinite(scores)]
    style = figure_style(ax, style)
    spec = STYLES[style]
    ax = _get_ax(ax, style)
    _style_axes(ax, style)
    _, _, bars = ax.hist(
        scores,
        bins=bins,
        density=density,
        color=color,
        alpha=0.75,
        label=label,
        edgecolor="white",
        linewidth=0.5,
    )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density" if density else "count")
    if title is not None:
        ax.set_title(title)
    if label is not None:
        ax.legend(fontsize=spec["tick"])
    _style_labels(ax, spec)
    return bars


def variance_curve(
    widths,
    variances,
    ax=None,
    *,
    label="Monte Carlo",
    reference=True,
    title=None,
    ylabel="Var(q · k)",
    style=None,
):
    """Measured score variance against the width ``d_k``, on log-log axes.

    Parameters
    ----------
    widths : array_like of int
        The widths ``d_k`` measured.
    variances : array_like
        The measured variance at each width.
    ax : matplotlib.axes.Axes, optional
    label : str, default "Monte Carlo"
    reference : bool, default True
        Also draw the line ``y = d_k`` that the derivation predicts.
    title, ylabel : str, optional
    style : {"default", "board"}, optional

    Returns
    -------
    list of matplotlib.lines.Line2D
        The measured curve, then the reference line if drawn.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> lines = variance_curve([1, 4, 16], [1.02, 3.9, 16.3], ax=ax)
    >>> [line.get_label() for line in lines], ax.get_xscale(), ax.get_yscale()
    (['Monte Carlo', 'y = d_k'], 'log', 'log')
    """
    widths = np.asarray(widths, dtype=float)
    variances = np.asarray(variances, dtype=float)
    if widths.shape != variances.shape or widths.ndim != 1:
        raise ValueError(
            f"widths and variances must be 1-D and the same length; got {widths.shape} "
            f"and {variances.shape}."
        )
    style = figure_style(ax, style)
    spec = STYLES[style]
    ax = _get_ax(ax, style)
    _style_axes(ax, style)
    lines = ax.plot(
        widths,
        variances,
        "o-",
        color=_KEY_COLOR,
        label=label,
        linewidth=spec["line"],
        markersize=spec["marker"],
    )
    if reference:
        lines += ax.plot(
            widths,
            widths,
            "--",
            color=_REFERENCE_COLOR,
            label="y = d_k",
            linewidth=spec["line"] * 0.8,
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("width d_k")
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    ax.legend(fontsize=spec["tick"])
    _style_labels(ax, spec)
    return lines


def _bar_colors(weights):
    return mpl.colormaps["viridis"](0.15 + 0.7 * np.clip(weights, 0, 1))


def _bar_text(weights, scores, i, decimals):
    text = format_weight(weights[i], decimals)
    if scores is not None:
        text += f"\nscore {np.ravel(scores)[i]:.{decimals}f}"
    return text


def weight_bars(
    weights,
    ax=None,
    *,
    labels=None,
    scores=None,
    decimals=2,
    title=None,
    ylabel="weight",
    style=None,
):
    """One query's weights over the keys as bars, each labelled with its value.

    Parameters
    ----------
    weights : array_like, shape (T_k,)
    ax : matplotlib.axes.Axes, optional
    labels : sequence of str, optional
        Key names for the x axis.
    scores : array_like, shape (T_k,), optional
        Also print each key's score under its weight.
    decimals : int, default 2
    title, ylabel : str, optional
    style : {"default", "board"}, optional

    Returns
    -------
    matplotlib.container.BarContainer

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> bars = weight_bars([0.5, 0.3, 0.2], ax=ax, labels=["a", "b", "c"])
    >>> [f"{b.get_height():.2f}" for b in bars]
    ['0.50', '0.30', '0.20']
    """
    weights = np.ravel(np.asarray(weights, dtype=float))
    n = weights.size
    labels = _labels(labels, n, "labels") or [str(i) for i in range(n)]
    style = figure_style(ax, style)
    spec = STYLES[style]
    ax = _get_ax(ax, style)
    _style_axes(ax, style)
    bars = ax.bar(
        range(n),
        weights,
        color=_bar_colors(weights),
        edgecolor="black",
        linewidth=spec["rc"]["axes.linewidth"],
        gid="weight-bars",
    )
    for i, w in enumerate(weights):
        ax.text(
            i,
            w + 0.02,
            _bar_text(weights, scores, i, decimals),
            ha="center",
            va="bottom",
            fontsize=spec["annotation"],
            gid="weight-label",
        )
    ax.set_xticks(range(n), labels)
    ax.set_ylim(0.0, 1.15)
    ax.set_xlabel("key")
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    _style_labels(ax, spec)
    return bars


def arrows_2d(
    ax,
    keys,
    query=None,
    *,
    labels=None,
    limit=None,
    title=None,
    style=None,
):
    """2-D keys (blue) and a query (vermillion) as arrows from the origin.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    keys : array_like, shape (T_k, 2)
    query : array_like, shape (2,), optional
    labels : sequence of str, optional
        Key names written at the arrow tips.
    limit : float, optional
        Half-width of the square view; default fits every arrow.
    title : str, optional
    style : {"default", "board"}, optional

    Returns
    -------
    list of matplotlib.patches.FancyArrow
        The key arrows, then the query arrow if given.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> arrows = arrows_2d(ax, [[1.0, 0.0], [0.0, 1.0]], query=[0.5, 0.5])
    >>> len(arrows), ax.get_aspect()
    (3, 1.0)
    """
    keys = np.atleast_2d(np.asarray(keys, dtype=float))
    if keys.shape[-1] != 2:
        raise ValueError(f"arrows_2d draws 2-D vectors; got keys of shape {keys.shape}.")
    labels = _labels(labels, keys.shape[0], "labels") or [f"k{i}" for i in range(len(keys))]
    style = figure_style(ax, style)
    spec = STYLES[style]
    _style_axes(ax, style)
    vectors = keys if query is None else np.vstack([keys, np.reshape(query, (1, 2))])
    if limit is None:
        limit = 1.25 * max(float(np.abs(vectors).max()), 1e-9)
    width = 0.012 * limit * spec["line"] / 1.8
    arrows = []
    for i, key in enumerate(keys):
        arrows.append(
            ax.arrow(
                0,
                0,
                key[0],
                key[1],
                width=width,
                color=_KEY_COLOR,
                length_includes_head=True,
                head_width=4 * width,
            )
        )
        ax.annotate(
            labels[i],
            key,
            xytext=(4, 4),
            textcoords="offset points",
            color=_KEY_COLOR,
            fontsize=spec["annotation"] + 1,
            weight="bold",
        )
    if query is not None:
        q = np.ravel(np.asarray(query, dtype=float))
        # Always an arrow (empty when q = 0) plus a dot at its tip, so that
        # update_arrows_2d can move both in place.
        arrows.append(
            ax.arrow(
                0,
                0,
                q[0],
                q[1],
                width=1.4 * width,
                color=_QUERY_COLOR,
                length_includes_head=True,
                head_width=5 * width,
                gid="query-arrow",
                visible=bool(np.hypot(*q) > 0),
            )
        )
        ax.plot(
            [q[0]],
            [q[1]],
            "o",
            color=_QUERY_COLOR,
            markersize=spec["marker"] * 0.6,
            gid="query-tip",
        )
        ax.annotate(
            "q",
            q,
            xytext=(-6, 6),
            textcoords="offset points",
            color=_QUERY_COLOR,
            fontsize=spec["annotation"] + 1,
            weight="bold",
            gid="query-label",
        )
    ax.axhline(0, color="#dddddd", linewidth=0.8, zorder=0)
    ax.axvline(0, color="#dddddd", linewidth=0.8, zorder=0)
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_aspect("equal")
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    if title is not None:
        ax.set_title(title)
    _style_labels(ax, spec)
    return arrows


def blend_plot(
    ax,
    values,
    output,
    *,
    weights=None,
    labels=None,
    limit=None,
    title=None,
    style=None,
):
    """2-D values, the hull they span and the blended output inside it.

    Each value is a point sized by its weight; the output (a convex
    combination of the values) is a star that can never leave the shaded hull.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    values : array_like, shape (T_k, 2)
    output : array_like, shape (2,)
    weights : array_like, shape (T_k,), optional
        Size of each value's marker and its label.
    labels : sequence of str, optional
    limit : float, optional
        Half-width of the square view; default fits every point.
    title : str, optional
    style : {"default", "board"}, optional

    Returns
    -------
    matplotlib.lines.Line2D
        The output marker.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> star = blend_plot(ax, [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [0.3, 0.3])
    >>> star.get_xydata().tolist()
    [[0.3, 0.3]]
    """
    values = np.atleast_2d(np.asarray(values, dtype=float))
    if values.shape[-1] != 2:
        raise ValueError(f"blend_plot draws 2-D values; got values of shape {values.shape}.")
    output = np.ravel(np.asarray(output, dtype=float))
    n = values.shape[0]
    labels = _labels(labels, n, "labels") or [f"v{i}" for i in range(n)]
    style = figure_style(ax, style)
    spec = STYLES[style]
    _style_axes(ax, style)
    if n >= 3:
        hull = _convex_hull(values)
        ax.fill(
            hull[:, 0],
            hull[:, 1],
            color=_VALUE_COLOR,
            alpha=0.12,
            zorder=0,
            label="hull of the values",
        )
    elif n == 2:
        ax.plot(
            values[:, 0],
            values[:, 1],
            color=_VALUE_COLOR,
            alpha=0.4,
            zorder=0,
            linewidth=spec["line"] * 2,
        )
    sizes = np.full(n, 0.5) if weights is None else np.ravel(np.asarray(weights, dtype=float))
    base = spec["marker"] ** 2
    ax.scatter(
        values[:, 0],
        values[:, 1],
        s=base * (1 + 12 * sizes),
        color=_VALUE_COLOR,
        edgecolor="black",
        linewidth=0.6,
        zorder=2,
        gid="values",
    )
    for i in range(n):
        text = labels[i] if weights is None else f"{labels[i]} ({format_weight(sizes[i])})"
        ax.annotate(
            text,
            values[i],
            xytext=(6, 6),
            textcoords="offset points",
            color=_VALUE_COLOR,
            fontsize=spec["annotation"] + 1,
            weight="bold",
            gid="value-label",
        )
    (star,) = ax.plot(
        [output[0]],
        [output[1]],
        "*",
        color=_OUTPUT_COLOR,
        markersize=spec["marker"] * 3,
        markeredgecolor="black",
        zorder=3,
        label="output",
        gid="output",
    )
    if limit is None:
        limit = 1.25 * max(float(np.abs(np.vstack([values, output])).max()), 1e-9)
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_aspect("equal")
    ax.set_xlabel("value dimension 1")
    ax.set_ylabel("value dimension 2")
    if title is not None:
        ax.set_title(title)
    _style_labels(ax, spec)
    return star


def _convex_hull(points):
    """Vertices of the 2-D convex hull in order (Andrew's monotone chain)."""
    pts = sorted(map(tuple, np.asarray(points, dtype=float)))
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


# In-place updates: an explorer draws once with the helpers above, then moves
# the same artists on every change (no new axes, ticks or layout: that is where
# a redraw's time goes). Each helper tags its moving artists with a gid.


def _tagged(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def update_attention_heatmap(ax, weights, mask=None, *, decimals=2):
    """Show new ``weights`` (and a new ``mask``) in a heatmap drawn by :func:`attention_heatmap`.

    Same shape as before; the colour scale, labels and title stay. Returns the
    artists it changed (image, masked-cell patch, annotations), for blitting.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = attention_heatmap(np.full((2, 2), 0.5), ax=ax, colorbar=False)
    >>> moved = update_attention_heatmap(ax, np.array([[1.0, 0.0], [0.3, 0.7]]),
    ...                                  mask=causal_mask(2))
    >>> [t.get_text() for t in ax.texts if t.get_visible()]
    ['1.00', '0.30', '0.70']
    """
    weights = np.asarray(weights, dtype=float)
    (image,) = _tagged(ax, "attention-weights")
    if weights.shape != image.get_array().shape:
        raise ValueError(
            f"the heatmap shows shape {image.get_array().shape}; got weights of shape "
            f"{weights.shape}. Draw a new heatmap for a new shape."
        )
    blocked = _blocked_cells(mask, weights.shape)
    image.set_data(np.ma.masked_array(weights, mask=blocked | ~np.isfinite(weights)))
    (patch,) = _tagged(ax, "masked")
    patch.set_path(_cells_path(blocked))
    return [image, patch, *_annotate_cells(ax, image, weights, blocked, decimals)]


def update_arrows_2d(ax, query):
    """Move the query arrow that :func:`arrows_2d` drew on ``ax`` to ``query``.

    Returns the artists it moved (arrow, tip, label), for blitting.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = arrows_2d(ax, [[1.0, 0.0]], query=[0.5, 0.5], limit=2)
    >>> moved = update_arrows_2d(ax, [0.0, 1.5])
    >>> ax.texts[-1].xy
    (0.0, 1.5)
    """
    q = np.ravel(np.asarray(query, dtype=float))
    (arrow,) = _tagged(ax, "query-arrow")
    arrow.set_data(dx=q[0], dy=q[1])
    arrow.set_visible(bool(np.hypot(*q) > 0))  # q = 0: only the dot
    (tip,) = _tagged(ax, "query-tip")
    tip.set_data([q[0]], [q[1]])
    (label,) = _tagged(ax, "query-label")
    label.xy = (float(q[0]), float(q[1]))
    return [arrow, tip, label]


def update_weight_bars(ax, weights, scores=None, *, decimals=2):
    """Set the bars (and their labels) that :func:`weight_bars` drew on ``ax``.

    Returns the artists it changed (bars, then labels), for blitting.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = weight_bars([0.5, 0.5], ax=ax)
    >>> moved = update_weight_bars(ax, [0.9, 0.1])
    >>> [t.get_text() for t in ax.texts]
    ['0.90', '0.10']
    """
    weights = np.ravel(np.asarray(weights, dtype=float))
    bars = [p for p in ax.patches if p.get_gid() == "weight-bars"] or [
        p for c in ax.containers if c.get_gid() == "weight-bars" for p in c
    ]
    texts = _tagged(ax, "weight-label")
    if len(bars) != weights.size or len(texts) != weights.size:
        raise ValueError(f"ax holds {len(bars)} weight bars; got {weights.size} weights.")
    for i, (bar, text, color) in enumerate(zip(bars, texts, _bar_colors(weights), strict=True)):
        bar.set_height(weights[i])
        bar.set_facecolor(color)
        text.set_y(weights[i] + 0.02)
        text.set_text(_bar_text(weights, scores, i, decimals))
    return [*bars, *texts]


def update_blend_plot(ax, output, weights=None, labels=None):
    """Move the output star and resize the values that :func:`blend_plot` drew on ``ax``.

    Returns the artists it changed (values, labels, star), for blitting.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = blend_plot(ax, [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [0.3, 0.3],
    ...                weights=[0.4, 0.3, 0.3])
    >>> moved = update_blend_plot(ax, [0.0, 0.5], weights=[0.5, 0.0, 0.5])
    >>> ax.lines[-1].get_xydata().tolist(), ax.texts[1].get_text()
    ([[0.0, 0.5]], 'v1 (0.00)')
    """
    output = np.ravel(np.asarray(output, dtype=float))
    (star,) = _tagged(ax, "output")
    star.set_data([output[0]], [output[1]])
    if weights is None:
        return [star]
    weights = np.ravel(np.asarray(weights, dtype=float))
    (points,) = _tagged(ax, "values")
    base = STYLES[figure_style(ax)]["marker"] ** 2
    points.set_sizes(base * (1 + 12 * weights))
    texts = _tagged(ax, "value-label")
    labels = _labels(labels, len(texts), "labels") or [f"v{i}" for i in range(len(texts))]
    for text, label, w in zip(texts, labels, weights, strict=True):
        text.set_text(f"{label} ({format_weight(w)})")
    return [points, *texts, star]
