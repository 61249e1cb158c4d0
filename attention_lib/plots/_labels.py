"""Labels that keep clear of what else a panel shows: a small placement solver (private).

The 2-D figures (:mod:`~attention_lib.plots.arrows`, :mod:`~attention_lib.plots.blend`)
name their arrows and points with bold labels placed where no arrow, point,
area or other label lies. Everything here works in display pixels, for axes
whose position is final (after the layout pass; the explorers' ``refresh``
runs then).
"""

from __future__ import annotations

import numpy as np
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

#: Directions tried for a label around its anchor, as turns from the preferred one (degrees):
#: straight on first, then further away on alternate sides.
_TURNS = tuple(sign * turn for turn in np.arange(0.0, 181.0, 22.5) for sign in (1, -1))[1:-1]
#: Distances tried, in steps of three quarters of the label's size beyond the nearest.
_RINGS = 3
_TEXT_TO_PATH = TextToPath()


def label_at(ax, text, xy, color, spec):
    """A bold label for the point ``xy``, centred on it until :func:`place` moves it.

    Left out of the layout: :func:`place` keeps it inside its axes, and a label
    that counted would make the layout depend on where the point is.
    """
    label = ax.annotate(
        text,
        xy,
        xytext=(0, 0),
        textcoords="offset points",
        ha="center",
        va="center",
        color=color,
        fontsize=spec["annotation"] + 1,
        weight="bold",
    )
    label.set_in_layout(False)
    return label


def text_size_px(text, fontsize, dpi, weight="bold"):
    """Width and height of a text (one line or several) in pixels, without a renderer.

    Examples
    --------
    >>> width, height = text_size_px("cat", 10, 72)
    >>> bool(10 < width < 30 and 8 < height < 16)
    True
    """
    prop = FontProperties(size=fontsize, weight=weight)
    lines = text.split("\n")
    widths = [
        _TEXT_TO_PATH.get_text_width_height_descent(line, prop, ismath=False)[0] for line in lines
    ]
    _, height, descent = _TEXT_TO_PATH.get_text_width_height_descent("lp", prop, ismath=False)
    # matplotlib spaces lines 1.2 font sizes apart
    tall = height + descent + (len(lines) - 1) * 1.2 * fontsize
    return np.array([max(widths), tall]) * dpi / 72.0


def _covering(box, points, boxes, bounds, pad=0.0):
    """How badly a label box covers: points inside it, boxes it overlaps, and leaving ``bounds``.

    Leaving the axes is worst (the label would be cut), then covering another
    label or a reserved box, then each point of a line or area it covers.
    ``pad`` grows the box for the points and boxes, not for the bounds.
    """
    outside = box[0] < bounds[0] or box[1] < bounds[1] or box[2] > bounds[2] or box[3] > bounds[3]
    x0, y0, x1, y1 = np.asarray(box) + np.array([-pad, -pad, pad, pad])
    x, y = points[:, 0], points[:, 1]
    inside = np.count_nonzero((x > x0) & (x < x1) & (y > y0) & (y < y1))
    overlaps = np.count_nonzero(
        (boxes[:, 0] < x1) & (boxes[:, 2] > x0) & (boxes[:, 1] < y1) & (boxes[:, 3] > y0)
    )
    return inside + 500 * overlaps + 100_000 * outside


def free_spot(anchor, size, preferred, *, gap, points=(), boxes=(), bounds, pad=0.0):
    """Where a label of ``size`` (pixels) next to ``anchor`` covers nothing: its centre and box.

    Tries the directions of :data:`_TURNS` around ``preferred``, at the
    distances of :data:`_RINGS`, and takes the first whose box (its near side
    ``gap`` pixels from the anchor) contains no point of ``points``, overlaps
    no box of ``boxes`` (all boxes grown by ``pad``) and stays inside
    ``bounds``; if every direction covers something, the one that covers least.

    Examples
    --------
    >>> centre, box = free_spot(np.array([50.0, 50.0]), np.array([10.0, 10.0]),
    ...                         np.array([1.0, 0.0]), gap=5, bounds=(0, 0, 100, 100))
    >>> centre.tolist()
    [60.0, 50.0]
    >>> wall = np.array([[x, 50.0] for x in range(51, 100)])  # a line along the preferred side
    >>> centre, box = free_spot(np.array([50.0, 50.0]), np.array([10.0, 10.0]),
    ...                         np.array([1.0, 0.0]), gap=5, points=wall, bounds=(0, 0, 100, 100))
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
    half_size = np.array([width / 2, height / 2])
    for turn, ring in ((turn, ring) for ring in range(_RINGS) for turn in _TURNS):
        angle = start + np.deg2rad(turn)
        direction = np.array([np.cos(angle), np.sin(angle)])
        # distance from the box's centre to its edge along `direction`
        half = min(
            width / 2 / max(abs(direction[0]), 1e-9), height / 2 / max(abs(direction[1]), 1e-9)
        )
        centre = anchor + direction * (gap + ring * step + half)
        box = np.concatenate([centre - half_size, centre + half_size])
        cost = _covering(box, points, boxes, bounds, pad)
        if cost == 0:
            return centre, box
        if best is None or cost < best[0]:
            best = (cost, centre, box)
    return best[1], best[2]


def segment_points(starts, ends, count=32):
    """``count`` points along each segment from ``starts[i]`` to ``ends[i]`` (pixels), stacked."""
    starts = np.reshape(np.asarray(starts, dtype=float), (-1, 2))
    ends = np.reshape(np.asarray(ends, dtype=float), (-1, 2))
    t = np.linspace(0.0, 1.0, count)[None, :, None]
    return (starts[:, None, :] + t * (ends - starts)[:, None, :]).reshape(-1, 2)


def polygon_points(polygon, count=12):
    """Points covering a convex polygon (its edges and inside, pixels), for labels to avoid."""
    if len(polygon) < 3:
        return segment_points(polygon[:-1], polygon[1:]) if len(polygon) == 2 else polygon
    a, b = np.meshgrid(np.linspace(0, 1, count), np.linspace(0, 1, count))
    keep = a + b <= 1.0
    a, b = a[keep], b[keep]
    fans = [
        polygon[0]
        + a[:, None] * (polygon[i] - polygon[0])
        + b[:, None] * (polygon[i + 1] - polygon[0])
        for i in range(1, len(polygon) - 1)
    ]
    return np.vstack([*fans, segment_points(polygon, np.roll(polygon, -1, axis=0))])


def place(label, centre_px, box_px):
    """Put annotation ``label`` with its centre at ``centre_px`` (pixels) and return its box."""
    fig = label.get_figure(root=True)
    anchor = label.axes.transData.transform(label.xy)
    label.xyann = tuple((np.asarray(centre_px) - anchor) * 72.0 / fig.dpi)  # offset points
    return box_px


def inner_bounds(ax, margin=2.0):
    """The axes' box in pixels, ``margin`` pixels in from each side: where labels may go."""
    x0, y0, x1, y1 = ax.bbox.extents
    return (x0 + margin, y0 + margin, x1 - margin, y1 - margin)
