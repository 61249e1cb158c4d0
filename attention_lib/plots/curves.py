"""Curves of many scores: a histogram of scores, score variance against the width d_k."""

from __future__ import annotations

import numpy as np

from .style import COLORS, _prepare, _style_labels

__all__ = ["score_histogram", "variance_curve"]


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
    >>> from attention_lib.plots import new_figure
    >>> fig, ax = new_figure(pyplot=False)
    >>> bars = score_histogram(np.array([0.0, 0.1, -np.inf, 0.2]), ax=ax, bins=2)
    >>> len(bars), ax.get_xlabel(), ax.get_ylabel()
    (2, 'score', 'density')
    """
    scores = np.asarray(scores, dtype=float).ravel()
    scores = scores[np.isfinite(scores)]
    ax, spec = _prepare(ax, style)
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
    ax.set(xlabel=xlabel, ylabel="density" if density else "count")
    if label is not None:
        ax.legend(fontsize=spec["tick"])
    _style_labels(ax, spec, title)
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
    >>> from attention_lib.plots import new_figure
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
    ax, spec = _prepare(ax, style)
    lines = ax.plot(
        widths,
        variances,
        "o-",
        color=COLORS["key"],
        label=label,
        linewidth=spec["line"],
        markersize=spec["marker"],
    )
    if reference:
        lines += ax.plot(
            widths,
            widths,
            "--",
            color=COLORS["reference"],
            label="y = d_k",
            linewidth=spec["line"] * 0.8,
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set(xlabel="width d_k", ylabel=ylabel)
    ax.legend(fontsize=spec["tick"])
    _style_labels(ax, spec, title)
    return lines
