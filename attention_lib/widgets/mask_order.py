"""Explorer for notebook 06: mask before softmax or after it? Edit a future key and watch.

The board's cards with the query at position 2: card 3 lies in its future.
The slider edits card 3's key (its first entry). Left, the right order
(``masked_softmax``: card 3 erased from the scores, before softmax): the
weights of cards 1 and 2 and the output never move. Right, the wrong order
(:func:`attention_lib.pitfalls.mask_after_softmax`: softmax over all three,
then card 3's weight zeroed): the row no longer sums to one, and the future
card's key changes what the query reads from the past.

:func:`update` is pure; :func:`draw` draws both rows with
:func:`attention_lib.plots.weight_bars` and :func:`refresh` moves the bars and titles.
"""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets as widgets
import numpy as np

from .. import pitfalls, plots
from ..walkthrough import DEFAULT_CARDS, Cards, make_cards, walkthrough_step
from ._shell import ExplorerSpec, html_table

__all__ = ["EXPLORER", "MaskOrderState", "mask_order_explorer", "update"]

#: The query's position: cards 1 and 2 are its past, card 3 its future.
QUERY_POSITION = 2
_FUTURE = 2  # index of card 3
#: Figure sizes (inches) in the default and board styles: both rendered 1480 x 440 pixels,
#: so the board's fewer inches mean larger type.
FIGSIZE = (9.25, 2.75)
BOARD_FIGSIZE = (14.8, 4.4)


class MaskOrderState(NamedTuple):
    """Both orders of masking for the query at :data:`QUERY_POSITION`."""

    future_key: np.ndarray  #: card 3's key, as edited
    cards: Cards
    scores: np.ndarray  #: (3,) scaled scores before any mask
    right_weights: np.ndarray  #: masked before softmax
    wrong_weights: np.ndarray  #: masked after softmax (pitfalls.mask_after_softmax)
    right_output: np.ndarray
    wrong_output: np.ndarray
    wrong_sum: float  #: what the wrong row adds up to


def update(future_first=2.0, cards=DEFAULT_CARDS):
    """Right and wrong weights after setting the first entry of card 3's key to ``future_first``.

    Examples
    --------
    >>> from attention_lib.widgets.mask_order import update
    >>> a, b = update(-2.0), update(4.0)
    >>> bool(np.array_equal(a.right_output, b.right_output))  # the future cannot reach it
    True
    >>> round(a.wrong_sum, 2), round(b.wrong_sum, 2)  # ... unless the mask comes too late
    (0.86, 0.23)
    """
    keys = cards.keys.copy()
    keys[_FUTURE, 0] = float(future_first)
    edited = make_cards(cards.query, keys, cards.values)
    scores = walkthrough_step(edited, 3).scores
    right = walkthrough_step(edited, 6, QUERY_POSITION)
    allowed = np.arange(len(scores)) < QUERY_POSITION
    wrong = pitfalls.mask_after_softmax(scores, allowed)
    return MaskOrderState(
        future_key=keys[_FUTURE].copy(),
        cards=edited,
        scores=scores,
        right_weights=right.weights,
        wrong_weights=wrong,
        right_output=right.output,
        wrong_output=wrong @ edited.values,
        wrong_sum=float(wrong.sum()),
    )


def _vector(vector):
    return "[" + ", ".join(f"{x:.2f}" for x in vector) + "]"


def _titles(state):
    return (
        f"mask before softmax: sum {state.right_weights.sum():.2f}\n"
        f"output {_vector(state.right_output)}",
        f"mask after softmax: sum {state.wrong_sum:.2f}\noutput {_vector(state.wrong_output)}",
    )


_LABELS = ["card 1", "card 2", "card 3\n(future)"]


def draw(fig, state):
    """The two rows of weights side by side, each titled with its sum and its output."""
    axes = fig.subplots(1, 2, sharey=True)
    scene = []
    for ax, weights, title in zip(
        axes, (state.right_weights, state.wrong_weights), _titles(state), strict=True
    ):
        scene.append((plots.weight_bars(weights, ax=ax, labels=_LABELS, title=title), ax.title))
        ax.set_xlabel("")
    return scene


def refresh(scene, state):
    """Set both rows of bars and their titles to ``state``."""
    for (bars, title), weights, text in zip(
        scene, (state.right_weights, state.wrong_weights), _titles(state), strict=True
    ):
        plots.update_weight_bars(bars, weights)
        title.set_text(text)


def table(state):
    """Both rows of weights and outputs as an HTML table."""
    rows = [
        ["mask before softmax", *state.right_weights, state.right_weights.sum()],
        ["mask after softmax", *state.wrong_weights, state.wrong_sum],
    ]
    caption = f"query at position {QUERY_POSITION}, card 3's key {_vector(state.future_key)}"
    return html_table(
        rows, ["order", "card 1", "card 2", "card 3", "row sum"], caption=caption, decimals=2
    )


def readout(values, state):
    """Card 3's key and what each order makes of it."""
    return (
        f"card 3's key (the future) <b>{_vector(state.future_key)}</b> · before softmax: "
        f"output {_vector(state.right_output)} · after softmax: output "
        f"<b>{_vector(state.wrong_output)}</b>, row sum <b>{state.wrong_sum:.2f}</b>"
    )


def mask_order_explorer(future_first=2.0, *, style=None):
    """The live comparison: a slider for card 3's key (main control), both orders side by side.

    Parameters
    ----------
    future_first : float, default 2.0
        Starting first entry of card 3's key (2 is the board's card).
    style : {"default", "board"}, optional
        Defaults to ``ATTENTION_STYLE`` (unset: ``"default"``).

    Returns
    -------
    attention_lib.widgets.Explorer

    Examples
    --------
    >>> from attention_lib.widgets.mask_order import mask_order_explorer
    >>> explorer = mask_order_explorer()
    >>> round(explorer.set(future_first=-2.0).wrong_sum, 2)
    0.86
    >>> explorer.close()
    """
    controls = {
        "future_first": widgets.FloatSlider(
            value=float(future_first),
            min=-4.0,
            max=6.0,
            step=0.5,
            description="card 3's key, first entry",
            continuous_update=False,
            readout_format=".1f",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="32em"),
        )
    }
    return EXPLORER.explorer(controls, style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="mask order", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
