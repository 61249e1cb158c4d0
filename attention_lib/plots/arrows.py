"""2-D keys and a query as arrows from the origin, named where nothing else lies."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _labels as labels_
from .style import COLORS, STYLES, _labels, _prepare, _square_plane, figure_style

__all__ = ["Arrows2D", "arrows_2d", "update_arrows_2d"]


class Arrows2D(NamedTuple):
    """What :func:`arrows_2d` drew and :func:`update_arrows_2d` moves (the keys stay)."""

    query: object  #: the query's FancyArrow (hidden while the query is 0), or None
    tip: object  #: the dot at the query's tip (Line2D), or None
    query_label: object  #: its "q" (Annotation), or None
    key_labels: list  #: the keys' names (Annotations), placed out of the query's way


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


def arrows_2d(ax, keys, query=None, *, labels=None, limit=None, title=None, style=None):
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
        drawn: after a layout pass moves the axes, :func:`update_arrows_2d`
        places them again (the explorers' ``refresh`` runs after the layout).
    limit : float, optional
        Half-width of the square view; default fits every arrow.
    title : str, optional
    style : {"default", "board"}, optional

    Returns
    -------
    Arrows2D

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> drawn = arrows_2d(ax, [[1.0, 0.0], [0.0, 1.0]], query=[0.5, 0.5])
    >>> len(ax.patches), drawn.query_label.get_text(), ax.get_aspect()
    (3, 'q', 1.0)
    """
    keys = np.atleast_2d(np.asarray(keys, dtype=float))
    if keys.shape[-1] != 2:
        raise ValueError(f"arrows_2d draws 2-D vectors; got keys of shape {keys.shape}.")
    labels = _labels(labels, keys.shape[0], "labels") or [f"k{i}" for i in range(len(keys))]
    ax, spec = _prepare(ax, style)
    vectors = keys if query is None else np.vstack([keys, np.reshape(query, (1, 2))])
    if limit is None:
        limit = 1.25 * max(float(np.abs(vectors).max()), 1e-9)
    width = _arrow_width(limit, spec)
    key_labels = []
    key_arrow = {"width": width, "head_width": 4 * width, "color": COLORS["key"]}
    for label, key in zip(labels, keys, strict=True):
        ax.arrow(0, 0, *key, length_includes_head=True, **key_arrow)
        key_labels.append(labels_.label_at(ax, label, key, COLORS["key"], spec))
    arrow = tip = query_label = None
    if query is not None:
        q = np.ravel(np.asarray(query, dtype=float))
        # Always an arrow (hidden when q = 0) plus a dot at its tip, so that
        # update_arrows_2d can move both in place.
        shape = {"color": COLORS["query"], "visible": bool(np.hypot(*q) > 0)}
        arrow = ax.arrow(
            0, 0, *q, length_includes_head=True, **shape, **_query_arrow_shape(q, width)
        )
        (tip,) = ax.plot(
            [q[0]], [q[1]], "o", color=COLORS["query"], markersize=spec["marker"] * 0.6
        )
        query_label = labels_.label_at(ax, "q", q, COLORS["query"], spec)
    ax.axhline(0, color=COLORS["zero"], linewidth=0.8, zorder=0)
    ax.axvline(0, color=COLORS["zero"], linewidth=0.8, zorder=0)
    _square_plane(ax, limit, "dimension", title, spec)
    drawn = Arrows2D(arrow, tip, query_label, key_labels)
    _place_arrow_labels(drawn)
    return drawn


def update_arrows_2d(drawn, query):
    """Move the query that :func:`arrows_2d` drew to ``query``; the labels make way again.

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> drawn = arrows_2d(ax, [[1.0, 0.0]], query=[0.5, 0.5], limit=2)
    >>> update_arrows_2d(drawn, [0.0, 1.5])
    >>> drawn.query_label.xy, drawn.query.get_visible()
    ((0.0, 1.5), True)
    """
    if drawn.query is None:
        raise ValueError("these arrows were drawn without a query: there is no query to move.")
    q = np.ravel(np.asarray(query, dtype=float))
    ax = drawn.query.axes
    width = _arrow_width(ax.get_xlim()[1], STYLES[figure_style(ax)])
    drawn.query.set_data(dx=q[0], dy=q[1], **_query_arrow_shape(q, width))
    drawn.query.set_visible(bool(np.hypot(*q) > 0))  # q = 0: only the dot
    drawn.tip.set_data([q[0]], [q[1]])
    drawn.query_label.xy = (float(q[0]), float(q[1]))
    _place_arrow_labels(drawn)


def _place_arrow_labels(drawn):
    """Place the "q" and the key names where no arrow or label lies.

    The "q" goes beyond the query's tip, clear of every arrow; each key's
    name goes beyond its tip, along the key, unless the query's arrow, its
    dot or another label is there.
    """
    query = [drawn.query_label] if drawn.query_label is not None else []
    ax = (query or drawn.key_labels)[0].axes
    ax.apply_aspect()
    to_px = ax.transData.transform
    origin = to_px((0.0, 0.0))
    arrow_tips = [to_px(label.xy) for label in drawn.key_labels]
    q_tip = to_px(query[0].xy) if query else None
    if q_tip is not None and np.hypot(*(q_tip - origin)) > 0.5:
        arrow_tips.append(q_tip)
    points = labels_.segment_points([origin] * len(arrow_tips), arrow_tips)
    dpi = ax.get_figure(root=True).dpi
    bounds = labels_.inner_bounds(ax)
    # half the widest arrowhead, in pixels: the labels keep clear of the arrows' edges
    limit = ax.get_xlim()[1]
    head = 2.5 * _arrow_width(limit, STYLES[figure_style(ax)]) * ax.bbox.width / (2 * limit)
    boxes = []
    # The "q" first: it names the arrow that moves, so it gets the place next to its tip and
    # the key names make way. Then the query's dot, which the key names avoid too.
    for i, label in enumerate([*query, *drawn.key_labels]):
        if query and i == 1:
            radius = 0.5 * query[0].get_fontsize() * dpi / 72.0
            boxes.append(np.concatenate([q_tip - radius, q_tip + radius]))
        tip = to_px(label.xy)
        size = labels_.text_size_px(label.get_text(), label.get_fontsize(), dpi)
        gap = 0.3 * label.get_fontsize() * dpi / 72.0
        centre, box = labels_.free_spot(
            tip,
            size,
            tip - origin,
            gap=max(gap / 2, head) + gap,  # beyond the padding, so its own tip is clear
            points=points,
            boxes=boxes,
            bounds=bounds,
            pad=max(gap / 2, head),
        )
        boxes.append(labels_.place(label, centre, box))
