"""Key/value and lookup figures: cards, 2-D arrows, weight bars, the blend of the values.

Each builder that an explorer moves has its in-place updater right after it.
The updaters change the artists the builder drew (no new axes, ticks or
layout: that is where a redraw's time goes) and return them, for blitting.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
from matplotlib.patches import FancyBboxPatch, Rectangle

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
        color=weight_colors(weights),
        edgecolor="black",
        linewidth=spec["rc"]["axes.linewidth"],
        gid=BAR_GID,
    )
    for i, w in enumerate(weights):
        ax.text(
            i,
            w + 0.02,
            _bar_text(weights, scores, i, decimals),
            ha="center",
            va="bottom",
            fontsize=spec["annotation"],
            gid=BAR_LABEL_GID,
        )
    ax.set_xticks(range(n), labels)
    ax.set_ylim(0.0, 1.15)
    ax.set_xlabel("key")
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    _style_labels(ax, spec)
    return bars


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
    try:
        bars = artist(ax, BAR_GID, count=weights.size)
        texts = artist(ax, BAR_LABEL_GID, count=weights.size)
    except LookupError as error:  # the caller's weights do not fit the bars drawn
        raise ValueError(
            f"got {weights.size} weights, not one per bar drawn on these axes ({error})"
        ) from None
    for i, (bar, text, color) in enumerate(zip(bars, texts, weight_colors(weights), strict=True)):
        bar.set_height(weights[i])
        bar.set_facecolor(color)
        text.set_y(weights[i] + 0.02)
        text.set_text(_bar_text(weights, scores, i, decimals))
    return [*bars, *texts]


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
                color=COLORS["key"],
                length_includes_head=True,
                head_width=4 * width,
            )
        )
        ax.annotate(
            labels[i],
            key,
            xytext=(4, 4),
            textcoords="offset points",
            color=COLORS["key"],
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
                color=COLORS["query"],
                length_includes_head=True,
                head_width=5 * width,
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
        ax.annotate(
            "q",
            q,
            xytext=(-6, 6),
            textcoords="offset points",
            color=COLORS["query"],
            fontsize=spec["annotation"] + 1,
            weight="bold",
            gid=QUERY_LABEL_GID,
        )
    ax.axhline(0, color=COLORS["zero"], linewidth=0.8, zorder=0)
    ax.axvline(0, color=COLORS["zero"], linewidth=0.8, zorder=0)
    _square_plane(ax, limit, "dimension", title, spec)
    return arrows


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
    arrow = artist(ax, QUERY_ARROW_GID)
    arrow.set_data(dx=q[0], dy=q[1])
    arrow.set_visible(bool(np.hypot(*q) > 0))  # q = 0: only the dot
    tip = artist(ax, QUERY_TIP_GID)
    tip.set_data([q[0]], [q[1]])
    label = artist(ax, QUERY_LABEL_GID)
    label.xy = (float(q[0]), float(q[1]))
    return [arrow, tip, label]


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
    for i in range(n):
        text = labels[i] if weights is None else f"{labels[i]} ({format_weight(sizes[i])})"
        ax.annotate(
            text,
            values[i],
            xytext=(6, 6),
            textcoords="offset points",
            color=COLORS["value"],
            fontsize=spec["annotation"] + 1,
            weight="bold",
            gid=VALUE_LABEL_GID,
        )
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
    for text, label, w in zip(texts, labels, weights, strict=True):
        text.set_text(f"{label} ({format_weight(w)})")
    return [points, *texts, star]


def _square_plane(ax, limit, axis_name, title, spec):
    """Equal axes from ``-limit`` to ``limit``, labelled "<axis_name> 1" and "<axis_name> 2"."""
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_aspect("equal")
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
