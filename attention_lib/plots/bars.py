"""One query's weights over the keys as labelled bars, and the update that moves them."""

from __future__ import annotations

from typing import NamedTuple

import matplotlib as mpl
import numpy as np

from .style import _labels, _prepare, _style_labels, format_weight

__all__ = ["WeightBars", "update_weight_bars", "weight_bars", "weight_colors"]


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


class WeightBars(NamedTuple):
    """What :func:`weight_bars` drew and :func:`update_weight_bars` moves."""

    bars: mpl.container.BarContainer
    labels: list  #: the weight above each bar
    scores: list  #: the row of scores under the key names (empty without ``score_row``)


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
    WeightBars

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> drawn = weight_bars([0.5, 0.3, 0.2], ax=ax, labels=["a", "b", "c"])
    >>> [f"{b.get_height():.2f}" for b in drawn.bars], drawn.labels[0].get_text()
    (['0.50', '0.30', '0.20'], '0.50')
    >>> fig, ax = new_figure(pyplot=False)
    >>> _ = weight_bars([0.5, 0.5], ax=ax, scores=[0.1, 0.1], score_row=True)
    >>> [t.get_text() for t in ax.texts]
    ['0.50', '0.50', '0.10', '0.10', 'score']
    """
    weights = np.ravel(np.asarray(weights, dtype=float))
    n = weights.size
    labels = _labels(labels, n, "labels") or [str(i) for i in range(n)]
    ax, spec = _prepare(ax, style)
    bars = ax.bar(
        range(n),
        weights,
        color=weight_colors(weights),
        edgecolor="black",
        linewidth=spec["rc"]["axes.linewidth"],
    )
    in_row = score_row and scores is not None
    # Empty texts, which update_weight_bars fills in: one place says what a bar's label shows.
    texts = [
        ax.text(i, 0.0, "", ha="center", va="bottom", fontsize=spec["annotation"]) for i in range(n)
    ]
    ax.set_xticks(range(n), labels)
    ax.set_ylim(0.0, 1.15)
    row = []
    if in_row:
        # One line below the key names (tick length + pad + a line of tick labels).
        below = -(mpl.rcParams["xtick.major.size"] + mpl.rcParams["xtick.major.pad"])
        below -= 1.35 * spec["tick"]
        row = [
            ax.annotate(
                "",
                (i, 0.0),
                xycoords=("data", "axes fraction"),
                xytext=(0, below),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=spec["tick"],
            )
            for i in range(n)
        ]
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
    _style_labels(ax, spec, title)
    drawn = WeightBars(bars, texts, row)
    update_weight_bars(drawn, weights, scores, decimals=decimals)
    return drawn


def update_weight_bars(drawn, weights, scores=None, *, decimals=2):
    """Set the bars, their labels and the row of scores that :func:`weight_bars` drew.

    Examples
    --------
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> drawn = weight_bars([0.5, 0.5], ax=ax)
    >>> update_weight_bars(drawn, [0.9, 0.1])
    >>> [t.get_text() for t in drawn.labels]
    ['0.90', '0.10']
    """
    weights = np.ravel(np.asarray(weights, dtype=float))
    if weights.size != len(drawn.bars):
        raise ValueError(
            f"got {weights.size} weights, not one per bar drawn ({len(drawn.bars)} bars)."
        )
    colors = weight_colors(weights)
    for i, (bar, text) in enumerate(zip(drawn.bars, drawn.labels, strict=True)):
        bar.set_height(weights[i])
        bar.set_facecolor(colors[i])
        text.set_y(weights[i] + 0.02)
        shown = format_weight(weights[i], decimals)
        if drawn.scores and scores is not None:
            drawn.scores[i].set_text(_score_text(scores, i, decimals))
        elif scores is not None:  # drawn without a row of scores: each under its weight
            shown += f"\nscore {np.ravel(scores)[i]:.{decimals}f}"
        text.set_text(shown)
