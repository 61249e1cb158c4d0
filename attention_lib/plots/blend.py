"""2-D values, the hull they span, and the blended output that never leaves it."""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from . import _labels as labels_
from .style import COLORS, STYLES, _labels, _prepare, _square_plane, figure_style, format_weight

__all__ = ["Blend", "blend_plot", "update_blend_plot"]


class Blend(NamedTuple):
    """What :func:`blend_plot` drew and :func:`update_blend_plot` moves (the hull stays)."""

    values: object  #: the values' markers (PathCollection), sized by their weights
    labels: list  #: the values' labels (Annotations), outside the hull
    output: object  #: the output's star (Line2D)
    names: tuple  #: the values' names, as the labels begin
    weighted: bool  #: the labels show the weights (sized for the longest they can show)


#: Where each blend's labels were placed for (its axes' pixels and limits): placed again
#: only when that changes (after a layout pass), not on every update.
_PLACED_FOR = weakref.WeakKeyDictionary()


def _value_areas(weights, spec):
    """Marker areas of the values: the heavier the weight, the larger."""
    return spec["marker"] ** 2 * (1 + 12 * np.asarray(weights))


def _value_label(label, weight, style):
    """A value's label: "name (weight)"; the name alone in the board style.

    The board's large type leaves no room beside three values in a small
    square for the weights, which its weight bars show anyway.
    """
    if weight is None or style == "board":
        return label
    return f"{label} ({format_weight(weight)})"


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


def blend_plot(
    ax, values, output, *, weights=None, labels=None, limit=None, title=None, style=None
):
    """2-D values, the hull they span and the blended output inside it.

    Each value is a point sized by its weight; the output (a convex
    combination of the values) is a star that can never leave the shaded hull.
    The values' labels ("name (weight)", the name alone in the board style)
    sit outside the hull, so the star never covers one (placed for the axes'
    position when drawn, and again by :func:`update_blend_plot`).

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
    Blend

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> drawn = blend_plot(ax, [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [0.3, 0.3])
    >>> drawn.output.get_xydata().tolist(), drawn.names
    ([[0.3, 0.3]], ('v0', 'v1', 'v2'))
    """
    values = np.atleast_2d(np.asarray(values, dtype=float))
    if values.shape[-1] != 2:
        raise ValueError(f"blend_plot draws 2-D values; got values of shape {values.shape}.")
    output = np.ravel(np.asarray(output, dtype=float))
    n = values.shape[0]
    names = tuple(_labels(labels, n, "labels") or [f"v{i}" for i in range(n)])
    ax, spec = _prepare(ax, style)
    if n >= 3:
        hull = _convex_hull(values)
        ax.fill(*hull.T, color=COLORS["value"], alpha=0.12, zorder=0, label="hull of the values")
    elif n == 2:
        ax.plot(*values.T, color=COLORS["value"], alpha=0.4, zorder=0, linewidth=spec["line"] * 2)
    sizes = np.full(n, 0.5) if weights is None else np.ravel(np.asarray(weights, dtype=float))
    outlined = {"color": COLORS["value"], "edgecolor": "black", "linewidth": 0.6, "zorder": 2}
    points = ax.scatter(*values.T, s=_value_areas(sizes, spec), **outlined)
    # Named only: update_blend_plot adds the weights and places the labels.
    texts = [
        labels_.label_at(ax, name, v, COLORS["value"], spec)
        for name, v in zip(names, values, strict=True)
    ]
    (star,) = ax.plot(
        [output[0]],
        [output[1]],
        "*",
        color=COLORS["output"],
        markersize=spec["marker"] * 3,
        markeredgecolor="black",
        zorder=3,
        label="output",
    )
    if limit is None:
        limit = 1.25 * max(float(np.abs(np.vstack([values, output])).max()), 1e-9)
    _square_plane(ax, limit, "value dimension", title, spec)
    drawn = Blend(points, texts, star, names, weights is not None)
    update_blend_plot(drawn, output, weights)
    return drawn


def update_blend_plot(drawn, output, weights=None):
    """Move the output star, resize the values and relabel them, as :func:`blend_plot` drew them.

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> drawn = blend_plot(ax, [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], [0.3, 0.3],
    ...                    weights=[0.4, 0.3, 0.3])
    >>> update_blend_plot(drawn, [0.0, 0.5], weights=[0.5, 0.0, 0.5])
    >>> drawn.output.get_xydata().tolist(), drawn.labels[1].get_text()
    ([[0.0, 0.5]], 'v1 (0.00)')
    """
    output = np.ravel(np.asarray(output, dtype=float))
    drawn.output.set_data([output[0]], [output[1]])
    if weights is not None:
        weights = np.ravel(np.asarray(weights, dtype=float))
        if weights.size != len(drawn.names):
            raise ValueError(f"got {weights.size} weights for the {len(drawn.names)} values drawn.")
        style = figure_style(drawn.output.axes)
        drawn.values.set_sizes(_value_areas(weights, STYLES[style]))
        for text, name, w in zip(drawn.labels, drawn.names, weights, strict=True):
            text.set_text(_value_label(name, w, style))
    _place_value_labels(drawn)


def _place_value_labels(drawn):
    """Put each value's label outside the hull of the values, clear of the points and each other.

    The output star moves anywhere inside the hull, so a label outside it
    (by the star's radius, or the largest value marker's) is never covered.
    Sizes are those of the longest text each label can show, so a label can
    change its number without moving.
    """
    ax = drawn.output.axes
    ax.apply_aspect()
    geometry = (*ax.bbox.extents, *ax.get_xlim(), *ax.get_ylim())
    if _PLACED_FOR.get(drawn.output) == geometry:
        return
    _PLACED_FOR[drawn.output] = geometry
    style = figure_style(ax)
    spec = STYLES[style]
    dpi = ax.get_figure(root=True).dpi
    values = np.asarray(drawn.values.get_offsets(), dtype=float)
    # "<0.01": the longest weight a label can show
    widest = [_value_label(name, 1e-9 if drawn.weighted else None, style) for name in drawn.names]
    # the star's radius, or the largest value marker's (at weight 1), in pixels
    clearance = max(1.5 * spec["marker"], 0.5 * float(np.sqrt(_value_areas(1.0, spec))))
    clearance *= dpi / 72.0
    to_px = ax.transData.transform
    points_px = to_px(values)
    hull_px = to_px(_convex_hull(values)) if len(values) >= 3 else points_px
    obstacles = labels_.polygon_points(hull_px)
    centre = points_px.mean(axis=0)
    bounds = labels_.inner_bounds(ax)
    # Where the star and the value's own marker reach beyond the hull: around each value.
    reserved = [np.concatenate([point - clearance, point + clearance]) for point in points_px]
    boxes = []
    pad = clearance / 4
    for text, longest, point in zip(drawn.labels, widest, points_px, strict=True):
        size = labels_.text_size_px(longest, text.get_fontsize(), dpi)
        spot, box = labels_.free_spot(
            point,
            size,
            point - centre,
            gap=clearance + pad + 1.0,  # clear of its own marker's box
            points=obstacles,
            boxes=[*reserved, *boxes],
            bounds=bounds,
            pad=pad,
        )
        boxes.append(labels_.place(text, spot, box))
