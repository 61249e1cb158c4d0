"""Explorer for notebook 02: why divide the scores by sqrt(d_k) (chapter 19.2).

Controls: ``d_k`` (log steps 1 ... 4096) and whether the scores are scaled.
The state holds random scores at initialisation (standard-normal queries and
keys), one row of softmax weights, and how saturated the softmax is: the row
entropy, the largest weight and the norm of the softmax Jacobian (how much a
nudge of the scores still moves the weights). A small ``‖J‖`` is not a small
gradient: as notebook 02 measures, without the scale the Jacobian shrinks while
the gradient that reaches Q and K grows, by a factor that depends on the width and the draw.

:func:`update` is pure (NumPy only). The histogram shows the sizes ``|q . k|``
on a log axis, where multiplying every score by a factor shifts it sideways
without changing its shape: unscaled, it slides right by sqrt(2) per
doubling of ``d_k``; scaled, it stays on the dashed reference (where ``|z|``
of a standard normal ``z`` lies). Its bins are fixed, so :func:`refresh` only
moves the bars, lines and titles.
"""

from __future__ import annotations

from math import erf, sqrt
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
from matplotlib.ticker import LogLocator, MaxNLocator

from .. import plots
from ..variance import saturation_rows
from ._shell import ExplorerSpec, html_table

__all__ = ["EXPLORER", "SqrtDkState", "sqrt_dk_explorer", "update"]

#: The slider's stops: powers of two from 1 to 4096.
D_K_CHOICES = tuple(2**i for i in range(13))

#: Default sizes: the same as :func:`attention_lib.saturation_stats`, so the
#: explorer's averages equal ``saturation_stats(d_k, scaled=...)``.
N_QUERIES = 64
N_KEYS = 64


class SqrtDkState(NamedTuple):
    """What the sqrt(d_k) explorer shows for one setting of its controls."""

    d_k: int
    scaled: bool
    scores: np.ndarray  #: (n_queries, n_keys) scores, divided by sqrt(d_k) if scaled
    row: int  #: index of the query row shown as a bar chart
    row_weights: np.ndarray  #: (n_keys,) softmax weights of that row
    score_mean: float
    score_std: float
    score_var: float
    row_entropy: float  #: entropy (nats) of the shown row
    row_max_weight: float
    row_jacobian_norm: float
    entropy: float  #: averaged over all rows, like saturation_stats
    max_weight: float
    jacobian_norm: float
    uniform_entropy: float  #: log(n_keys): the entropy of a perfectly flat row


def update(d_k, scaled=True, *, n_queries=N_QUERIES, n_keys=N_KEYS, row=0, seed=0):
    """Scores, one weight row and saturation numbers at width ``d_k``.

    Parameters
    ----------
    d_k : int
        Width of queries and keys (the slider offers :data:`D_K_CHOICES`,
        but any whole number >= 1 works).
    scaled : bool, default True
        Divide the scores by ``sqrt(d_k)`` (the attention layer) or not.
    n_queries, n_keys : int
        Size of the random score matrix.
    row : int
        Which query row to show as a bar chart.
    seed : int
        Seed of the random queries and keys; the same seed with and without
        scaling uses the same vectors, so the toggle only changes the scale.

    Examples
    --------
    >>> from attention_lib.widgets.sqrt_dk import update
    >>> flat, sharp = update(1024, scaled=True), update(1024, scaled=False)
    >>> bool(sharp.max_weight > 0.9 > 0.2 > flat.max_weight)
    True
    """
    rows = saturation_rows(d_k, scaled=scaled, n_queries=n_queries, n_keys=n_keys, seed=seed)
    if not 0 <= row < rows.scores.shape[0]:
        raise ValueError(
            f"row must lie between 0 and n_queries - 1 = {rows.scores.shape[0] - 1}; got {row}."
        )
    average = rows.averaged()
    return SqrtDkState(
        d_k=average.d_k,
        scaled=average.scaled,
        scores=rows.scores,
        row=int(row),
        row_weights=rows.weights[row],
        score_mean=average.score_mean,
        score_std=float(np.sqrt(average.score_var)),
        score_var=average.score_var,
        row_entropy=float(rows.entropy[row]),
        row_max_weight=float(rows.max_weight[row]),
        row_jacobian_norm=float(rows.jacobian_norm[row]),
        entropy=average.entropy,
        max_weight=average.max_weight,
        jacobian_norm=average.jacobian_norm,
        uniform_entropy=float(np.log(rows.scores.shape[-1])),
    )


#: Figure size of the live explorer and of its static first-state figure (inches). Both
#: styles are rendered 1480 pixels wide (641 and 658 pixels tall), so the board's fewer
#: inches mean larger type.
FIGSIZE = (9.0, 3.9)
BOARD_FIGSIZE = (13.5, 6.0)


def _mode(scaled):
    return "scaled by 1/√d_k" if scaled else "unscaled"


#: Log-spaced bins for |score|, 10 per decade from 1e-3 to 1e3: wide enough for d_k = 4096
#: unscaled (std 64) and fixed, so the axes never change and only the bars move.
MAGNITUDE_BINS = np.logspace(-3.0, 3.0, 61)
_HIST_PEAK = 0.16  # on log bins |N(0, s^2)| puts at most ~11 % of the scores in one bin


def _magnitude_counts(scores):
    """How many |scores| fall in each of :data:`MAGNITUDE_BINS` (clipped into the end bins)."""
    magnitudes = np.clip(np.abs(scores).ravel(), MAGNITUDE_BINS[0], MAGNITUDE_BINS[-1])
    return np.histogram(magnitudes, bins=MAGNITUDE_BINS)[0]


def _normal_reference_counts(n):
    """Expected counts per bin for |z| with z ~ N(0, 1): where the scale puts the scores."""
    cdf = np.array([erf(b / sqrt(2.0)) for b in MAGNITUDE_BINS])  # P(|z| <= b)
    return n * np.diff(cdf)


def _titles(state):
    hist = f"d_k = {state.d_k}, {_mode(state.scaled)}\nscore std {state.score_std:.2f}"
    row = (
        f"query {state.row}: largest weight {state.row_max_weight:.2f}\n"
        f"entropy {state.row_entropy:.2f}, ‖J‖ {state.row_jacobian_norm:.3f}"
    )
    return hist, row


def _row_bars(ax, weights, line):
    """The weights of one query over all its keys as thin bars (too many keys to label each).

    Private until :func:`attention_lib.plots.weight_bars` can skip its per-bar labels.
    One LineCollection instead of n bar patches: the same picture, less to draw.
    """
    n = weights.size
    bars = ax.vlines(
        np.arange(n),
        0.0,
        weights,
        colors=plots.weight_colors(weights),
        linewidth=max(1.0, 240.0 / n),
    )
    ax.axhline(
        1.0 / n,
        color=plots.COLORS["reference"],
        linestyle="--",
        linewidth=0.55 * line,
        label=f"uniform 1/{n}",
    )
    ax.set(xlim=(-1, n), ylim=(0.0, 1.05), xlabel="key", ylabel="weight")
    return bars


def draw(fig, state):
    """Histogram of the scores' sizes |q . k| on a log axis (left), one query's weights (right)."""
    spec = plots.STYLES[plots.figure_style(fig)]  # the reference lines: thicker on the board
    hist_ax, row_ax = fig.subplots(1, 2, width_ratios=[1.0, 1.15])
    hist_title, row_title = _titles(state)
    n = state.scores.size
    bars = plots.score_histogram(
        np.clip(np.abs(state.scores), MAGNITUDE_BINS[0], MAGNITUDE_BINS[-1]),
        ax=hist_ax,
        bins=MAGNITUDE_BINS,
        density=False,
        title=hist_title,
        xlabel="|score| (log scale)",
    )
    hist_ax.set(
        xscale="log", xlim=(MAGNITUDE_BINS[0], MAGNITUDE_BINS[-1]), ylim=(0.0, _HIST_PEAK * n)
    )
    if plots.figure_style(fig) == "board":
        # The board's large type gets the ticks it had before the shared layout (which
        # made the histogram larger): every 200 counts, every other decade.
        hist_ax.yaxis.set_major_locator(MaxNLocator(4))
        hist_ax.xaxis.set_major_locator(LogLocator(numticks=5))
    hist_ax.stairs(
        _normal_reference_counts(n),
        MAGNITUDE_BINS,
        color=plots.COLORS["prediction"],
        linestyle="--",
        linewidth=0.8 * spec["line"],
        label="|N(0, 1)|: the scaled target",
    )
    std_line = hist_ax.axvline(
        state.score_std, color="black", linewidth=0.7 * spec["line"], label="score std"
    )
    row_bars = _row_bars(row_ax, state.row_weights, spec["line"])
    row_ax.set_title(row_title)
    # One legend for both panels, in a row under them: inside the axes it sat on the
    # histogram (the std line crosses every height), and no corner stays free as d_k moves.
    handles = [*hist_ax.get_legend_handles_labels()[0], *row_ax.get_legend_handles_labels()[0]]
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=len(handles),
        fontsize=spec["tick"],
        frameon=False,
        columnspacing=2.5,
    )
    return bars, std_line, row_bars, hist_ax.title, row_ax.title


def refresh(scene, state):
    """Move the histogram, the std line, the row of weights and both titles to ``state``."""
    bars, std_line, row_bars, hist_title, row_title = scene
    for bar, count in zip(bars, _magnitude_counts(state.scores), strict=True):
        bar.set_height(count)
        bar.set_visible(bool(count))  # an empty bin: no patch to draw (a third of them)
    std_line.set_xdata([state.score_std, state.score_std])
    row_bars.set_segments([((i, 0.0), (i, w)) for i, w in enumerate(state.row_weights)])
    row_bars.set_color(plots.weight_colors(state.row_weights))
    for title, text in zip((hist_title, row_title), _titles(state), strict=True):
        title.set_text(text)


def table(state):
    """The numbers the explorer shows, as an accessible HTML table."""
    rows = [
        ["score mean", state.score_mean, "—"],
        ["score standard deviation", state.score_std, "—"],
        ["entropy (nats)", state.row_entropy, state.entropy],
        ["largest weight", state.row_max_weight, state.max_weight],
        ["softmax Jacobian norm ‖J‖", state.row_jacobian_norm, state.jacobian_norm],
        ["entropy of uniform weights", state.uniform_entropy, state.uniform_entropy],
    ]
    caption = (
        f"d_k = {state.d_k}, {_mode(state.scaled)}, {state.scores.shape[0]} queries x "
        f"{state.scores.shape[1]} keys"
    )
    return html_table(
        rows, ["quantity", f"query {state.row}", "average over queries"], caption=caption
    )


def readout(values, state):
    """One line: ``d_k``, the scale, the score spread and how saturated the shown row is."""
    return (
        f"<b>d_k = {state.d_k}</b>, {_mode(state.scaled)} · score std {state.score_std:.2f} · "
        f"query {state.row}: max weight <b>{state.row_max_weight:.2f}</b>, entropy "
        f"{state.row_entropy:.2f} of {state.uniform_entropy:.2f}, ‖J‖ {state.row_jacobian_norm:.3f}"
    )


def sqrt_dk_explorer(d_k=256, scaled=False, *, style=None):
    """The live explorer: a log-step ``d_k`` slider (main control) and a scale toggle.

    Parameters
    ----------
    d_k : int, default 256
        Starting width, one of :data:`D_K_CHOICES`.
    scaled : bool, default False
        Start with or without the 1/sqrt(d_k) scale.
    style : {"default", "board"}

    Returns
    -------
    attention_lib.widgets.Explorer

    Examples
    --------
    >>> from attention_lib.widgets.sqrt_dk import sqrt_dk_explorer
    >>> explorer = sqrt_dk_explorer()
    >>> explorer
    <sqrt(d_k) explorer: run the notebook to interact>
    >>> explorer.set(d_k=4096, scaled=True).score_std < 1.2
    True
    """
    if d_k not in D_K_CHOICES:
        raise ValueError(f"d_k must be one of {D_K_CHOICES} (powers of two); got {d_k!r}.")
    controls = {
        "d_k": widgets.SelectionSlider(
            options=[(str(d), d) for d in D_K_CHOICES],
            value=d_k,
            description="d_k",
            continuous_update=False,
            readout=True,
            layout=widgets.Layout(width="360px"),
        ),
        "scaled": widgets.Checkbox(value=bool(scaled), description="divide by √d_k", indent=False),
    }
    return EXPLORER.explorer(controls, style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="sqrt(d_k)", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
