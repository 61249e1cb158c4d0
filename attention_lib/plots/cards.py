"""Key/value pairs as index cards: what a query can find, and what each card hands over."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from matplotlib.patches import FancyBboxPatch, Rectangle

from .style import (
    COLORS,
    STYLES,
    _get_ax,
    _labels,
    figure_style,
    format_weight,
    new_figure,  # noqa: F401 (the examples draw into it)
)

__all__ = ["KVCards", "kv_cards"]

_ROUNDED = "round,pad=0.02,rounding_size=0.06"  # a card's corners


class KVCards(NamedTuple):
    """What :func:`kv_cards` drew that new numbers change.

    Attributes
    ----------
    cards : list of matplotlib.patches.FancyBboxPatch
        The key/value cards, left to right.
    vectors : list of matplotlib.text.Text
        The printed vectors: the query, each card's key then value, the output
        (those drawn).
    """

    cards: list
    vectors: list


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
    KVCards
        The cards and their printed vectors.

    Examples
    --------
    >>> fig, ax = new_figure(pyplot=False)
    >>> drawn = kv_cards([[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]], ax=ax,
    ...                  weights=[0.73, 0.27], query=[1.0, 0.0], output=[1.27])
    >>> len(drawn.cards), len(drawn.vectors)
    (2, 6)
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
    centred = {"ha": "center", "va": "center", "fontsize": spec["annotation"]}
    line = spec["line"] / 2

    slots = n + (query is not None) + (output is not None)
    ax.set_xlim(-0.1, slots * 1.2)
    ax.set_ylim(-0.55, 1.25)
    ax.set_axis_off()
    slot = 0
    vectors = []

    def card(x, face, edge, head, body):
        patch = FancyBboxPatch(
            (x, 0.05), 1.0, 1.0, _ROUNDED, facecolor=face, edgecolor=edge, linewidth=line
        )
        ax.add_patch(patch)
        ax.text(x + 0.5, 0.9, head, **centred, weight="bold")
        for k, (caption, vector, color) in enumerate(body):
            top = 0.7 - 0.34 * k
            ax.text(x + 0.5, top, caption, **centred, color=color)
            text = ", ".join(f"{x:.{decimals}f}" for x in np.ravel(vector))
            vectors.append(ax.text(x + 0.5, top - 0.13, f"[{text}]", **centred, color=color))
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
            ax.text(x + 0.5, -0.45, f"weight {format_weight(weights[i])}", **centred)
    if output is not None:
        card(1.2 * (slot + n), "#f7eaf2", COLORS["output"], "output", [("o", output, "#7d3160")])
    if title is not None:
        ax.set_title(title, fontsize=spec["title"], fontweight="bold")
    return KVCards(cards, vectors)
