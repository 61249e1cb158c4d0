"""Online-softmax explorer (notebook 08): one row of streaming attention, block by block.

One query's 16 scores arrive in blocks of 4 keys, as streaming attention reads
them. The slider steps through the blocks. Left: the scores, the blocks read
so far in colour, the current one highlighted, and the running maximum ``m``.
Right: the partial output (the attention output over the keys read so far)
after each block, next to the output of the ordinary softmax over the whole
row; after the last block the two agree. When a block brings a larger score,
the sum and the partial output kept so far are multiplied by
``exp(m_old - m_new)`` before the new block is added: the readout says by how
much. The numbers come from
:func:`attention_lib.streaming.online_softmax_trace`.
"""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets
import numpy as np

from .. import plots
from ..attention import masked_softmax
from ..streaming import OnlineSoftmaxTrace, online_softmax_trace
from ._shell import ExplorerSpec, html_table

__all__ = ["EXPLORER", "OnlineSoftmaxState", "online_softmax_steps_explorer", "update"]

BLOCK_SIZE = 4
FIGSIZE = (10.0, 3.6)
BOARD_FIGSIZE = (16.0, 6.5)


def example_row():
    """The explorer's row: 16 seeded scores with a large one arriving in block 3, 1-D values.

    Returns
    -------
    scores : numpy.ndarray, shape (16,)
    values : numpy.ndarray, shape (16, 1)

    Examples
    --------
    >>> from attention_lib.widgets.online_softmax_steps import example_row
    >>> scores, values = example_row()
    >>> int(np.argmax(scores)) // 4  # the largest score sits in the third block (index 2)
    2
    """
    rng = np.random.default_rng(19)
    scores = rng.normal(size=16)
    scores[1] = 1.5  # block 1 sets a first maximum ...
    scores[10] = 3.0  # ... that block 3 beats: everything kept so far is rescaled
    values = rng.normal(size=(16, 1))
    return scores, values


class OnlineSoftmaxState(NamedTuple):
    """The row, its full trace, and how many blocks have been read."""

    block: int  # blocks read so far, 1..n_blocks
    block_size: int
    scores: np.ndarray  # (T_k,)
    values: np.ndarray  # (T_k, 1)
    trace: OnlineSoftmaxTrace
    dense_output: float  # softmax(scores) @ values over the whole row


def update(block=1, *, scores=None, values=None, block_size=BLOCK_SIZE):
    """The state after reading ``block`` blocks of keys (pure).

    Parameters
    ----------
    block : int
        Blocks read so far, from 1 to the number of blocks.
    scores, values : array_like, optional
        One row of scores (T_k,) and 1-D values (T_k, 1); default :func:`example_row`.
    block_size : int

    Returns
    -------
    OnlineSoftmaxState

    Examples
    --------
    >>> from attention_lib.widgets.online_softmax_steps import update
    >>> state = update(4)
    >>> bool(np.isclose(state.trace.partial_output[-1, 0], state.dense_output, rtol=1e-12))
    True
    >>> update(5)
    Traceback (most recent call last):
    ...
    ValueError: block must be between 1 and 4 (the row has 4 blocks of 4 keys); got 5.
    """
    if scores is None or values is None:
        scores, values = example_row()
    trace = online_softmax_trace(scores, values, block_size)
    n_blocks = len(trace.block_starts)
    if not 1 <= int(block) <= n_blocks:
        raise ValueError(
            f"block must be between 1 and {n_blocks} (the row has {n_blocks} blocks of "
            f"{block_size} keys); got {block}."
        )
    scores = np.asarray(scores, dtype=float)
    values = np.asarray(values, dtype=float)
    dense = masked_softmax(scores[None, :])[0] @ values
    return OnlineSoftmaxState(
        block=int(block),
        block_size=int(block_size),
        scores=scores,
        values=values,
        trace=trace,
        dense_output=float(dense[0]),
    )


def _bar_colors(state):
    keys = np.arange(len(state.scores)) // state.block_size + 1
    colors = np.where(keys < state.block, plots.COLORS["key"], plots.COLORS["guide"])
    return np.where(keys == state.block, plots.COLORS["query"], colors)


def _titles(state):
    i = state.block - 1
    return (
        f"scores, block {state.block} of {len(state.trace.block_starts)}\n"
        f"running max m = {state.trace.running_max[i]:.2f}, "
        f"rescale × {state.trace.rescale[i]:.2f}",
        # Short lines: the board's large title must fit above the narrower panel.
        f"partial output\nnow {state.trace.partial_output[i, 0]:.3f}, "
        f"whole row {state.dense_output:.3f}",
    )


def draw(fig, state):
    """Scores with the running max (left), partial outputs against the whole row's (right)."""
    left, right = fig.subplots(1, 2, width_ratios=[1.4, 1.0])
    n_keys, n_blocks = len(state.scores), len(state.trace.block_starts)
    thin = plots.STYLES[plots.figure_style(fig)]["line"] / 2
    for start in state.trace.block_starts[1:]:
        left.axvline(start - 0.5, color=plots.COLORS["guide"], linewidth=thin)
    bars = left.bar(np.arange(n_keys), state.scores, width=0.8, color=_bar_colors(state))
    # the running max: refresh puts it at the block's height
    (max_line,) = left.plot([-0.5, n_keys - 0.5], [0, 0], color=plots.COLORS["reference"], ls="--")
    low, high = min(state.scores.min(), 0.0), state.scores.max()
    left.set(xlim=(-1.0, n_keys), ylim=(low - 0.3, high + 0.3), xlabel="key", ylabel="score")

    right.plot(
        [0.6, n_blocks + 0.4], [state.dense_output] * 2, color=plots.COLORS["reference"], ls=":"
    )
    (partial,) = right.plot([], [], color=plots.COLORS["output"], marker="o")
    outputs = np.append(state.trace.partial_output[:, 0], state.dense_output)
    pad = 0.15 * max(float(np.ptp(outputs)), 0.1)
    right.set(
        xlim=(0.5, n_blocks + 0.5),
        ylim=(outputs.min() - pad, outputs.max() + pad),
        xticks=np.arange(1, n_blocks + 1),
        xlabel="blocks read",
        ylabel="output",
    )
    for ax, title in zip((left, right), _titles(state), strict=True):
        ax.set_title(title)
    return bars, max_line, left.title, partial, right.title


def refresh(scene, state):
    """Recolour the bars, move the running max and the partial outputs, retitle."""
    bars, max_line, left_title, partial, right_title = scene
    for bar, color in zip(bars, _bar_colors(state), strict=True):
        bar.set_facecolor(color)
    max_line.set_ydata([state.trace.running_max[state.block - 1]] * 2)
    partial.set_data(np.arange(1, state.block + 1), state.trace.partial_output[: state.block, 0])
    for title, text in zip((left_title, right_title), _titles(state), strict=True):
        title.set_text(text)


def table(state):
    """One row per block read: its keys, its largest score, m, the rescale, l and the output."""
    trace = state.trace
    starts = trace.block_starts[: state.block]
    stops = np.minimum(starts + state.block_size, len(state.scores))
    rows = [
        [
            f"{i + 1}",
            f"{start}-{stop - 1}",
            float(state.scores[start:stop].max()),
            trace.running_max[i],
            trace.rescale[i],
            trace.running_sum[i],
            trace.partial_output[i, 0],
        ]
        for i, (start, stop) in enumerate(zip(starts, stops, strict=True))
    ]
    return html_table(
        rows,
        ["block", "keys", "block max", "running max m", "rescale", "running sum l", "output"],
        caption=f"whole-row softmax output {state.dense_output:.3f}",
    )


def readout(values, state):
    """One line: what the current block did to the running state."""
    i = state.block - 1
    trace = state.trace
    last_key = min(trace.block_starts[i] + state.block_size, len(state.scores)) - 1
    if i > 0 and trace.rescale[i] < 1.0:
        what = (
            f"a larger score ({trace.running_max[i]:.2f}) arrived, so the sum and output "
            f"kept so far were multiplied by {trace.rescale[i]:.2f}"
        )
    elif i == 0:
        what = f"the first block sets m = {trace.running_max[i]:.2f}"
    else:
        what = "no larger score: nothing rescaled"
    return (
        f"block {values['block']}: {what}; output over keys 0-{last_key}: "
        f"{trace.partial_output[i, 0]:.3f}"
    )


def online_softmax_steps_explorer(block=1, *, style=None):
    """The live step-through: a slider over the blocks of one row (main control).

    Parameters
    ----------
    block : int, default 1
        Blocks read at the start.
    style : {"default", "board"}, optional
        Defaults to ``ATTENTION_STYLE`` (unset: ``"default"``).

    Returns
    -------
    Explorer

    Examples
    --------
    >>> from attention_lib.widgets.online_softmax_steps import online_softmax_steps_explorer
    >>> explorer = online_softmax_steps_explorer()
    >>> explorer
    <online softmax explorer: run the notebook to interact>
    >>> round(float(explorer.set(block=4).trace.partial_output[-1, 0]), 3)
    -0.837
    >>> explorer.close()
    """
    n_blocks = len(online_softmax_trace(*example_row(), BLOCK_SIZE).block_starts)
    controls = {
        "block": ipywidgets.IntSlider(
            value=int(block),
            min=1,
            max=n_blocks,
            step=1,
            description="blocks read",
            continuous_update=False,
        )
    }
    return EXPLORER.explorer(controls, style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="online softmax", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
