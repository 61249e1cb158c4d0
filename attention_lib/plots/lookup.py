"""Key/value and lookup figures: cards, 2-D arrows, weight bars, the blend of the values.

Each builder that an explorer moves has its in-place updater right after it.
The updaters change the artists the builder drew (no new axes, ticks or
layout: that is where a redraw's time goes) and return them, for blitting.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.textpath import TextToPath
from matplotlib.ticker import MaxNLocator

from .style import (
    COLORS,
    STYLES,
    _get_ax,
    _labels,
    _style_axes,
    _style_labels,
    artist,
    figure_style,
    format_weight,
    new_figure,  # noqa: F401 (the examples draw into it)
)

__all__ = [
    "arrows_2d",
    "blend_plot",
    "kv_cards",
    "update_arrows_2d",
    "update_blend_plot",
    "update_weight_bars",
    "weight_bars",
    "weight_colors",
]

# Tags of the artists the updaters move (see style.artist).
BAR_GID = "weight-bars"
BAR_LABEL_GID = "weight-label"
SCORE_ROW_GID = "score-row"
KEY_LABEL_GID = "key-label"
QUERY_ARROW_GID = "query-arrow"
QUERY_TIP_GID = "query-tip"
QUERY_LABEL_GID = "query-label"
VALUES_GID = "values"
VALUE_LABEL_GID = "value-label"
OUTPUT_GID = "output"


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
        card(0, "#fdf0e8", COLORS["query"], "query", [("q", query, "#9a3a00")])
        slot = 1
    cards = []
    for i in range(n):
        x = 1.2 * (slot + i)
        body = [("key", keys[i], COLORS["key"]), ("value", values[i], COLORS["value"])]
        cards.append(card(x, "white", COLORS["key"], f"card {labels[i]}", body))
        if weights is not None:
            w = float(np.clip(weights[i], 0.0, 1.0))
            ax.add_patch(Rectangle((x, -0.3), 1.0, 0.16, facecolor="#eeeeee", edgecolor="none"))
            ax.add_patch(Rectangle((x, -0.3), w, 0.16, facecolor=COLORS["key"], edgecolor="none"))
            ax.text(
                x + 0.5,
                -0.45,
                f"weight {format_weight(weights[i])}",
                ha="center",
                va="center",
                fontsize=font,
            )
    if output is not None:
        card(1.2 * (slot + n), "#f7eaf2", COLORS["output"], "output", [("o", output, "#7d3160")])
    if title is not None:
        ax.set_title(title, fontsize=spec["title"], fontweight="bold")
    return cards


def weight_colors(weights):
    """The colour of a bar of height ``weight``: the middle of viridis, darker for less weight.

    Shared by every figure that draws weights as bars, so a weight has one
    colour across the series. The ends of the map are left out: its darkest
    purple looks black and its lightest yellow vanishes on white.

    Examples
    --------
    >>> weight_colors([0.0, 1.0]).shape
    (2, 4)
    """
    return mpl.colormaps["viridis"](0.15 + 0.7 * np.clip(weights, 0, 1))


def _bar_text(weights, scores, i, decimals):
    text = format_weight(weights[i], decimals)
    if scores is not None:
        text += f"\nscore {np.ravel(scores)[i]:.{decimals}f}"
    return text


def _score_text(scores, i, decimals):
    # a true minus sign, as on the tick labels beside it
    return f"{np.ravel(scores)[i]:.{decimals}f}".replace("-", "\N{MINUS SIGN}")


def weight_bars(
    weights,
    ax=None,
    *,
    labels=None,
    scores=None,
    decimals=2,
    title=None,
    ylabel="weight",
    score_row=False,
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
    score_row : bool, default False
        Print the scores in a row of their own under the key names (headed
        "score") instead of under each weight: one short line above each bar,
        so neighbouring labels cannot run into each other in large type.
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
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = weight_bars([0.5, 0.5], ax=ax, scores=[0.1, 0.1], score_row=True)
    >>> [t.get_text() for t in ax.texts]
    ['0.50', '0.50', '0.10', '0.10', 'score']
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
        color=weight_colors(weights),
        edgecolor="black",
        linewidth=spec["rc"]["axes.linewidth"],
        gid=BAR_GID,
    )
    in_row = score_row and scores is not None
    for i, w in enumerate(weights):
        ax.text(
            i,
            w + 0.02,
            _bar_text(weights, None if in_row else scores, i, decimals),
            ha="center",
            va="bottom",
            fontsize=spec["annotation"],
            gid=BAR_LABEL_GID,
        )
    ax.set_xticks(range(n), labels)
    ax.set_ylim(0.0, 1.15)
    if in_row:
        # One line below the key names (tick length + pad + a line of tick labels).
        below = -(mpl.rcParams["xtick.major.size"] + mpl.rcParams["xtick.major.pad"])
        below -= 1.35 * spec["tick"]
        for i in range(n):
            ax.annotate(
                _score_text(scores, i, decimals),
                (i, 0.0),
                xycoords=("data", "axes fraction"),
                xytext=(0, below),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=spec["tick"],
                gid=SCORE_ROW_GID,
            )
        ax.annotate(
            "score",
            (0.0, 0.0),
            xycoords="axes fraction",
            xytext=(-0.5 * spec["tick"], below),
            textcoords="offset points",
            ha="right",
            va="top",
            fontsize=spec["tick"],
            style="italic",
        )
    else:
        ax.set_xlabel("key")
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    _style_labels(ax, spec)
    return bars


def update_weight_bars(ax, weights, scores=None, *, decimals=2):
    """Set the bars (and their labels) that :func:`weight_bars` drew on ``ax``.

    Returns the artists it changed (bars, then labels, then the row of
    scores if drawn with ``score_row=True``), for blitting.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = weight_bars([0.5, 0.5], ax=ax)
    >>> moved = update_weight_bars(ax, [0.9, 0.1])
    >>> [t.get_text() for t in ax.texts]
    ['0.90', '0.10']
    """
    weights = np.ravel(np.asarray(weights, dtype=float))
    try:
        bars = artist(ax, BAR_GID, count=weights.size)
        texts = artist(ax, BAR_LABEL_GID, count=weights.size)
    except LookupError as error:  # the caller's weights do not fit the bars drawn
        raise ValueError(
            f"got {weights.size} weights, not one per bar drawn on these axes ({error})"
        ) from None
    row = artist(ax, SCORE_ROW_GID, count=(0, weights.size))
    for i, (bar, text, color) in enumerate(zip(bars, texts, weight_colors(weights), strict=True)):
        bar.set_height(weights[i])
        bar.set_facecolor(color)
        text.set_y(weights[i] + 0.02)
        text.set_text(_bar_text(weights, None if row else scores, i, decimals))
        if row and scores is not None:
            row[i].set_text(_score_text(scores, i, decimals))
    return [*bars, *texts, *row]


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
        Key names written at the arrow tips: beyond each tip along its key,
        or turned aside where an arrow or another label lies (the "q" too),
        so no label sits on an arrow. Placed for the axes' position when
        drawn: with a layout engine that moves the axes later, call
        :func:`update_arrows_2d` after the layout to place them again.
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
    width = _arrow_width(limit, spec)
    arrows = []
    for i, key in enumerate(keys):
        arrows.append(
            ax.arrow(
                0,
                0,
                key[0],
                key[1],
                width=width,
                color=COLORS["key"],
                length_includes_head=True,
                head_width=4 * width,
            )
        )
        _label_at(ax, labels[i], key, COLORS["key"], spec, KEY_LABEL_GID)
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
                color=COLORS["query"],
                length_includes_head=True,
                **_query_arrow_shape(q, width),
                gid=QUERY_ARROW_GID,
                visible=bool(np.hypot(*q) > 0),
            )
        )
        ax.plot(
            [q[0]],
            [q[1]],
            "o",
            color=COLORS["query"],
            markersize=spec["marker"] * 0.6,
            gid=QUERY_TIP_GID,
        )
        _label_at(ax, "q", q, COLORS["query"], spec, QUERY_LABEL_GID)
    ax.axhline(0, color=COLORS["zero"], linewidth=0.8, zorder=0)
    ax.axvline(0, color=COLORS["zero"], linewidth=0.8, zorder=0)
    _square_plane(ax, limit, "dimension", title, spec)
    _place_arrow_labels(ax)
    return arrows


def _label_at(ax, text, xy, color, spec, gid):
    """A bold label for the point ``xy``, centred on it until a ``_place_*`` helper moves it."""
    return ax.annotate(
        text,
        xy,
        xytext=(0, 0),
        textcoords="offset points",
        ha="center",
        va="center",
        color=color,
        fontsize=spec["annotation"] + 1,
        weight="bold",
        gid=gid,
    )


def _arrow_width(limit, spec):
    """Shaft width of a key's arrow in data units: thicker lines in the board style."""
    return 0.012 * limit * spec["line"] / 1.8


def _query_arrow_shape(q, width):
    """Shaft and head of the query's arrow: a short query gets a smaller head, never all head."""
    head_length = min(7.5 * width, 0.5 * float(np.hypot(*q)))
    head_width = head_length / 1.5
    return {
        "width": min(1.4 * width, 0.35 * head_width),
        "head_width": head_width,
        "head_length": head_length,
    }


def update_arrows_2d(ax, query):
    """Move the query arrow that :func:`arrows_2d` drew on ``ax`` to ``query``.

    The labels move out of the way of the new arrow (see :func:`arrows_2d`).
    Returns the artists it moved (arrow, tip, the key labels, the query's
    label), for blitting.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = arrows_2d(ax, [[1.0, 0.0]], query=[0.5, 0.5], limit=2)
    >>> moved = update_arrows_2d(ax, [0.0, 1.5])
    >>> ax.texts[-1].xy
    (0.0, 1.5)
    """
    q = np.ravel(np.asarray(query, dtype=float))
    arrow = artist(ax, QUERY_ARROW_GID)
    limit = ax.get_xlim()[1]
    arrow.set_data(
        dx=q[0], dy=q[1], **_query_arrow_shape(q, _arrow_width(limit, STYLES[figure_style(ax)]))
    )
    arrow.set_visible(bool(np.hypot(*q) > 0))  # q = 0: only the dot
    tip = artist(ax, QUERY_TIP_GID)
    tip.set_data([q[0]], [q[1]])
    label = artist(ax, QUERY_LABEL_GID)
    label.xy = (float(q[0]), float(q[1]))
    return [arrow, tip, *_place_arrow_labels(ax)]


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
    The values' labels ("name (weight)", the name alone in the board style)
    sit outside the hull, so the star never covers one (placed for the axes'
    position when drawn).

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
            color=COLORS["value"],
            alpha=0.12,
            zorder=0,
            label="hull of the values",
        )
    elif n == 2:
        ax.plot(
            values[:, 0],
            values[:, 1],
            color=COLORS["value"],
            alpha=0.4,
            zorder=0,
            linewidth=spec["line"] * 2,
        )
    sizes = np.full(n, 0.5) if weights is None else np.ravel(np.asarray(weights, dtype=float))
    ax.scatter(
        values[:, 0],
        values[:, 1],
        s=_value_areas(sizes, spec),
        color=COLORS["value"],
        edgecolor="black",
        linewidth=0.6,
        zorder=2,
        gid=VALUES_GID,
    )
    texts = []
    for i in range(n):
        text = _value_label(labels[i], None if weights is None else sizes[i], style)
        texts.append(_label_at(ax, text, values[i], COLORS["value"], spec, VALUE_LABEL_GID))
    (star,) = ax.plot(
        [output[0]],
        [output[1]],
        "*",
        color=COLORS["output"],
        markersize=spec["marker"] * 3,
        markeredgecolor="black",
        zorder=3,
        label="output",
        gid=OUTPUT_GID,
    )
    if limit is None:
        limit = 1.25 * max(float(np.abs(np.vstack([values, output])).max()), 1e-9)
    _square_plane(ax, limit, "value dimension", title, spec)
    # The widest text a label can show; the star's radius, which it may reach past the hull.
    widest = [
        label if weights is None else _value_label(label, 1e-9, style)  # "<0.01": the longest
        for label in labels
    ]
    # the star's radius, or the largest value marker's (at weight 1), in pixels
    reach = max(1.5 * spec["marker"], 0.5 * float(np.sqrt(_value_areas(1.0, spec))))
    _place_value_labels(ax, values, texts, widest, reach * ax.get_figure(root=True).dpi / 72.0)
    return star


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
    star = artist(ax, OUTPUT_GID)
    star.set_data([output[0]], [output[1]])
    if weights is None:
        return [star]
    weights = np.ravel(np.asarray(weights, dtype=float))
    points = artist(ax, VALUES_GID)
    points.set_sizes(_value_areas(weights, STYLES[figure_style(ax)]))
    texts = artist(ax, VALUE_LABEL_GID, count=weights.size)
    labels = _labels(labels, len(texts), "labels") or [f"v{i}" for i in range(len(texts))]
    style = figure_style(ax)
    for text, label, w in zip(texts, labels, weights, strict=True):
        text.set_text(_value_label(label, w, style))
    return [points, *texts, star]


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
    if title is not None:
        ax.set_title(title)
    _style_labels(ax, spec)


def _value_areas(weights, spec):
    """Marker areas of the values in :func:`blend_plot`: the heavier the weight, the larger."""
    return spec["marker"] ** 2 * (1 + 12 * np.asarray(weights))


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


# --- labels that stay clear of the arrows, points and other labels -----------------------

#: Directions tried for a label around its anchor, as turns from the preferred one (degrees):
#: straight on first, then further away on alternate sides.
_TURNS = tuple(sign * turn for turn in np.arange(0.0, 181.0, 22.5) for sign in (1, -1))[1:-1]
#: Distances tried, in steps of three quarters of the label's size beyond the nearest.
_RINGS = 3
_TEXT_TO_PATH = TextToPath()


def _text_size_px(text, fontsize, dpi, weight="bold"):
    """Width and height of a text (one line or several) in pixels, without a renderer."""
    prop = FontProperties(size=fontsize, weight=weight)
    lines = text.split("\n")
    widths = [
        _TEXT_TO_PATH.get_text_width_height_descent(line, prop, ismath=False)[0] for line in lines
    ]
    _, height, descent = _TEXT_TO_PATH.get_text_width_height_descent("lp", prop, ismath=False)
    # matplotlib spaces lines 1.2 font sizes apart
    tall = height + descent + (len(lines) - 1) * 1.2 * fontsize
    return np.array([max(widths), tall]) * dpi / 72.0


def _value_label(label, weight, style):
    """A value's label in :func:`blend_plot`: "name (weight)"; the name alone in the board style.

    The board's large type leaves no room beside three values in a small
    square for the weights, which its weight bars show anyway.
    """
    if weight is None or style == "board":
        return label
    return f"{label} ({format_weight(weight)})"


def _covering(box, points, boxes, bounds, pad=0.0):
    """How badly a label box covers: points inside it, boxes it overlaps, and leaving ``bounds``.

    Leaving the axes is worst (the label would be cut), then covering another
    label or a reserved box, then each point of a line or area it covers.
    ``pad`` grows the box for the points and boxes, not for the bounds.
    """
    outside = box[0] < bounds[0] or box[1] < bounds[1] or box[2] > bounds[2] or box[3] > bounds[3]
    x0, y0, x1, y1 = np.asarray(box) + np.array([-pad, -pad, pad, pad])
    inside = 0
    if len(points):
        x, y = points[:, 0], points[:, 1]
        inside = int(np.count_nonzero((x > x0) & (x < x1) & (y > y0) & (y < y1)))
    overlaps = 0
    if len(boxes):
        overlaps = int(
            np.count_nonzero(
                (boxes[:, 0] < x1) & (boxes[:, 2] > x0) & (boxes[:, 1] < y1) & (boxes[:, 3] > y0)
            )
        )
    return inside + 500 * overlaps + 100_000 * outside


def _free_spot(anchor, size, preferred, *, gap, points=(), boxes=(), bounds, pad=0.0):
    """Where a label of ``size`` (pixels) next to ``anchor`` covers nothing: its centre and box.

    Tries the directions of :data:`_TURNS` around ``preferred``, at the
    distances of :data:`_RINGS`, and takes the
    first whose box (its near side ``gap`` pixels from the anchor) contains no
    point of ``points``, overlaps no box of ``boxes`` (all boxes grown by
    ``pad``) and stays inside ``bounds``; if every direction covers something,
    the one that covers least. Pure geometry, in display pixels.

    Examples
    --------
    >>> centre, box = _free_spot(np.array([50.0, 50.0]), np.array([10.0, 10.0]),
    ...                          np.array([1.0, 0.0]), gap=5, bounds=(0, 0, 100, 100))
    >>> centre.tolist()
    [60.0, 50.0]
    >>> wall = np.array([[x, 50.0] for x in range(51, 100)])  # a line along the preferred side
    >>> centre, box = _free_spot(np.array([50.0, 50.0]), np.array([10.0, 10.0]),
    ...                          np.array([1.0, 0.0]), gap=5, points=wall, bounds=(0, 0, 100, 100))
    >>> np.round(centre, 1).tolist()  # turned 45 degrees, clear of the line
    [58.5, 58.5]
    """
    anchor = np.asarray(anchor, dtype=float)
    width, height = (float(x) for x in size)
    points = np.reshape(np.asarray(points, dtype=float), (-1, 2))
    boxes = np.reshape(np.asarray(boxes, dtype=float), (-1, 4))
    start = np.arctan2(preferred[1], preferred[0]) if np.hypot(*preferred) > 0 else np.pi / 2
    best = None
    # Close to the anchor all round first, then a little further out (a short query between
    # two keys has no room right at its tip).
    step = 0.75 * max(width, height)
    for turn, ring in ((turn, ring) for ring in range(_RINGS) for turn in _TURNS):
        angle = start + np.deg2rad(turn)
        direction = np.array([np.cos(angle), np.sin(angle)])
        # distance from the box's centre to its edge along `direction`
        half = min(
            width / 2 / max(abs(direction[0]), 1e-9), height / 2 / max(abs(direction[1]), 1e-9)
        )
        centre = anchor + direction * (gap + ring * step + half)
        half_size = np.array([width / 2, height / 2])
        box = np.concatenate([centre - half_size, centre + half_size])
        cost = _covering(box, points, boxes, bounds, pad)
        if cost == 0:
            return centre, box
        if best is None or cost < best[0]:
            best = (cost, centre, box)
    return best[1], best[2]


def _segment_points(starts, ends, count=32):
    """``count`` points along each segment from ``starts[i]`` to ``ends[i]`` (pixels), stacked."""
    starts = np.reshape(np.asarray(starts, dtype=float), (-1, 2))
    ends = np.reshape(np.asarray(ends, dtype=float), (-1, 2))
    t = np.linspace(0.0, 1.0, count)[None, :, None]
    return (starts[:, None, :] + t * (ends - starts)[:, None, :]).reshape(-1, 2)


def _place(label, centre_px, box_px):
    """Put annotation ``label`` with its centre at ``centre_px`` (pixels) and return its box."""
    fig = label.get_figure(root=True)
    anchor = label.axes.transData.transform(label.xy)
    label.xyann = tuple((np.asarray(centre_px) - anchor) * 72.0 / fig.dpi)  # offset points
    return box_px


def _inner_bounds(ax, margin=2.0):
    x0, y0, x1, y1 = ax.bbox.extents
    return (x0 + margin, y0 + margin, x1 - margin, y1 - margin)


def _place_arrow_labels(ax):
    """Place the key labels and the "q" of :func:`arrows_2d` where no arrow or label lies.

    The "q" goes beyond the query's tip, clear of every arrow; each key's
    name goes beyond its tip, along the key, unless the query's arrow, its
    dot or another label is there. Needs the axes' final position
    (fixed margins, or after the layout pass). Returns the labels.
    """
    ax.apply_aspect()
    to_px = ax.transData.transform
    origin = to_px((0.0, 0.0))
    keys = [child for child in ax.get_children() if child.get_gid() == KEY_LABEL_GID]
    query = artist(ax, QUERY_LABEL_GID, count=(0, 1))
    arrow_tips = [to_px(label.xy) for label in keys]
    q_tip = to_px(query[0].xy) if query else None
    if q_tip is not None and np.hypot(*(q_tip - origin)) > 0.5:
        arrow_tips.append(q_tip)
    points = _segment_points([origin] * len(arrow_tips), arrow_tips)
    dpi = ax.get_figure(root=True).dpi
    bounds = _inner_bounds(ax)
    # half the widest arrowhead, in pixels: the labels keep clear of the arrows' edges
    limit = ax.get_xlim()[1]
    head = 2.5 * _arrow_width(limit, STYLES[figure_style(ax)]) * ax.bbox.width / (2 * limit)
    boxes = []
    # The "q" first: it names the arrow that moves, so it gets the place next to its tip and
    # the key names make way. Then the query's dot, which the key names avoid too.
    for i, label in enumerate([*query, *keys]):
        if query and i == 1:
            radius = 0.5 * query[0].get_fontsize() * dpi / 72.0
            boxes.append(np.concatenate([q_tip - radius, q_tip + radius]))
        tip = to_px(label.xy)
        size = _text_size_px(label.get_text(), label.get_fontsize(), dpi)
        gap = 0.3 * label.get_fontsize() * dpi / 72.0
        centre, box = _free_spot(
            tip,
            size,
            tip - origin,
            gap=max(gap / 2, head) + gap,  # beyond the padding, so its own tip is clear
            points=points,
            boxes=boxes,
            bounds=bounds,
            pad=max(gap / 2, head),
        )
        boxes.append(_place(label, centre, box))
    return [*keys, *query]


def _hull_points(hull, count=12):
    """Points covering the convex polygon ``hull`` (its edges and inside), for labels to avoid."""
    if len(hull) < 3:
        return _segment_points(hull[:-1], hull[1:]) if len(hull) == 2 else hull
    a, b = np.meshgrid(np.linspace(0, 1, count), np.linspace(0, 1, count))
    keep = a + b <= 1.0
    a, b = a[keep], b[keep]
    fans = [
        hull[0] + a[:, None] * (hull[i] - hull[0]) + b[:, None] * (hull[i + 1] - hull[0])
        for i in range(1, len(hull) - 1)
    ]
    return np.vstack([*fans, _segment_points(hull, np.roll(hull, -1, axis=0))])


def _place_value_labels(ax, values, texts, widest, clearance):
    """Put each value's label outside the hull of the values, clear of the points and each other.

    The output star moves anywhere inside the hull, so a label outside it
    (``clearance`` pixels: the star's radius) is never covered. Sizes come
    from ``widest`` (the longest text each label can show), so the label can
    change its number without moving.
    """
    ax.apply_aspect()
    to_px = ax.transData.transform
    points_px = to_px(values)
    hull_px = to_px(_convex_hull(values)) if len(values) >= 3 else points_px
    obstacles = _hull_points(hull_px)
    centre = points_px.mean(axis=0)
    dpi = ax.get_figure(root=True).dpi
    bounds = _inner_bounds(ax)
    # Where the star and the value's own marker reach beyond the hull: around each value.
    reserved = [np.concatenate([point - clearance, point + clearance]) for point in points_px]
    boxes = []
    pad = clearance / 4
    for text, longest, point in zip(texts, widest, points_px, strict=True):
        size = _text_size_px(longest, text.get_fontsize(), dpi)
        spot, box = _free_spot(
            point,
            size,
            point - centre,
            gap=clearance + pad + 1.0,  # clear of its own marker's box
            points=obstacles,
            boxes=[*reserved, *boxes],
            bounds=bounds,
            pad=pad,
        )
        boxes.append(_place(text, spot, box))
