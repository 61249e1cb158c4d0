"""The board walkthrough of chapter 19.5, one step at a time (NumPy only).

At the board an instructor draws three key/value cards and a query, then
computes, in front of the class: the dot products, the division by
sqrt(d_k), the softmax, the weighted sum of the values, and finally the same
with a causal mask, which erases the cards that lie after the query's
position before the softmax. :func:`walkthrough_step` returns everything the
board shows after a given step: the numbers (full precision, for tests and
drawing), the same numbers as short strings rounded for the board, and one
line saying what just happened.

It is a pure function of the cards, the step and the query's position, so
edited cards simply mean calling it again; the explorer in
:mod:`attention_lib.widgets.teach_walkthrough` draws its result.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._validation import as_float_array, require_whole_number
from .attention import attention_scores, masked_softmax

__all__ = [
    "BOARD_ROWS",
    "DEFAULT_CARDS",
    "N_STEPS",
    "STEP_TITLES",
    "BoardRow",
    "Cards",
    "WalkthroughStep",
    "make_cards",
    "walkthrough_step",
]

#: Short names of the six board steps, in order (step 1 is ``STEP_TITLES[0]``).
STEP_TITLES = (
    "the cards",
    "dot products",
    "divide by √d_k",
    "softmax",
    "weights × values",
    "causal mask",
)
N_STEPS = len(STEP_TITLES)
#: Labels of the rows of numbers under the cards, in the order the steps add them.
BOARD_ROWS = ("q · k", "÷ √d_k", "weight")

# Steps by name, so the code below reads as the board does.
_DOTS, _SCALE, _SOFTMAX, _OUTPUT, _MASK = range(2, N_STEPS + 1)


class Cards(NamedTuple):
    """One query card and the key/value cards it reads, in sequence order."""

    query: np.ndarray  #: (d_k,)
    keys: np.ndarray  #: (n, d_k): card i's key is row i
    values: np.ndarray  #: (n, d_v): card i's value is row i


class BoardRow(NamedTuple):
    """One line of numbers on the board: a label and one short string per card."""

    label: str
    cells: tuple[str, ...]


class WalkthroughStep(NamedTuple):
    """What the board shows after one step of the walkthrough.

    Quantities not computed yet at this step are None. Card positions are
    1-based, as an instructor counts them at the board.
    """

    step: int  #: 1 ... N_STEPS
    n_steps: int
    title: str  #: the step's short name
    caption: str  #: one line: what just happened
    cards: Cards
    query_position: int  #: the query's place in the sequence, 1 ... n
    d_k: int
    scale: float  #: sqrt(d_k)
    dots: np.ndarray | None  #: (n,) q . k, from step 2
    scores: np.ndarray | None  #: (n,) q . k / sqrt(d_k), from step 3; -inf where erased
    weights: np.ndarray | None  #: (n,) softmax of the scores, from step 4
    output: np.ndarray | None  #: (d_v,) weights @ values, from step 5
    erased: np.ndarray  #: (n,) bool: cards the causal mask erases (step 6 only)
    board: tuple[BoardRow, ...]  #: the numbers under the cards, rounded for the board
    output_text: str | None  #: the output vector rounded for the board


def make_cards(query, keys, values):
    """Check and freeze the cards: a query, ``n`` keys and ``n`` values.

    Parameters
    ----------
    query : array_like, shape (d_k,)
    keys : array_like, shape (n, d_k)
    values : array_like, shape (n, d_v)

    Returns
    -------
    Cards
        float64 copies, read-only (an edit makes new cards, never changes these).

    Raises
    ------
    ValueError
        Wrong shapes, a key width that differs from the query's, a count of
        values that differs from the count of keys, or non-finite numbers.

    Examples
    --------
    >>> cards = make_cards([1, 0], [[1, 0], [0, 1]], [[5.0], [7.0]])
    >>> cards.keys.shape, cards.values.shape
    ((2, 2), (2, 1))
    >>> make_cards([1, 0], [[1, 0, 0]], [[5.0]])
    Traceback (most recent call last):
    ...
    ValueError: keys must have shape (n, 2) to match the query's width d_k = 2; got (1, 3).
    """
    query = as_float_array(query, "query", min_ndim=1, layout="(d_k,)")
    keys = as_float_array(keys, "keys", min_ndim=2, layout="(n, d_k)")
    values = as_float_array(values, "values", min_ndim=2, layout="(n, d_v)")
    if query.ndim != 1:
        raise ValueError(f"query must be one vector of shape (d_k,); got shape {query.shape}.")
    d_k = query.shape[0]
    if keys.ndim != 2 or keys.shape[1] != d_k or keys.shape[0] == 0:
        raise ValueError(
            f"keys must have shape (n, {d_k}) to match the query's width d_k = {d_k}; "
            f"got {keys.shape}."
        )
    if values.ndim != 2 or values.shape[0] != keys.shape[0]:
        raise ValueError(
            f"values must have shape (n, d_v) with one row per key (n = {keys.shape[0]}); "
            f"got {values.shape}."
        )
    frozen = []
    for array in (query, keys, values):
        array = np.array(array, dtype=np.float64)
        array.flags.writeable = False
        frozen.append(array)
    return Cards(*frozen)


#: The cards the walkthrough starts with: d_k = 4 (so dividing by sqrt(d_k) halves
#: the scores), whole numbers a class can multiply in its head, and the best match
#: (card 3) placed last, so the causal mask of step 6 visibly changes the answer.
DEFAULT_CARDS = make_cards(
    query=[1, 0, 1, 0],
    keys=[[1, 0, 1, 0], [0, 1, 0, 1], [2, 0, 1, 1]],
    values=[[1, 0], [0, 1], [2, 2]],
)


def _number(x, decimals):
    """``x`` rounded for the board: no trailing zeros, no "-0", never a positive shown as 0."""
    if x == -math.inf:
        return "−∞"
    if 0 < abs(x) < 0.5 * 10.0**-decimals:
        return ("<" if x > 0 else "> −") + f"{10.0**-decimals:.{decimals}f}"
    text = f"{x:.{decimals}f}".rstrip("0").rstrip(".") if decimals > 0 else f"{x:.0f}"
    return "0" if text in ("-0", "") else text.replace("-", "−")


def _vector(vector, decimals):
    return "[" + ", ".join(_number(float(x), decimals) for x in vector) + "]"


def _cards_list(indices):
    """'card 3', 'cards 2 and 3', 'cards 1, 2 and 3' (1-based)."""
    names = [str(i + 1) for i in indices]
    if len(names) == 1:
        return f"card {names[0]}"
    return "cards " + ", ".join(names[:-1]) + " and " + names[-1]


def _caption(step, d_k, scale, dots, weights, erased, query_position, decimals):
    """One line for the board, in the series' words, with this step's key number."""
    if step == 1:
        return "Each card holds a key (what it is found by) and a value (what it hands over)."
    if step == _DOTS:
        best = int(np.argmax(dots))
        return (
            f"The query is multiplied into every key: card {best + 1} matches best "
            f"(q · k = {_number(float(dots[best]), decimals)})."
        )
    if step == _SCALE:
        return (
            f"Each score is divided by √d_k = √{d_k} = {_number(scale, decimals)}: "
            "wider keys would otherwise give ever larger scores."
        )
    best = int(np.argmax(weights))
    if step == _SOFTMAX:
        return (
            f"Softmax makes the scores positive weights that add up to 1; "
            f"card {best + 1} gets {_number(float(weights[best]), decimals)}."
        )
    if step == _OUTPUT:
        return "The output is the values averaged with these weights: a blend, not one card."
    future = np.flatnonzero(erased)
    if future.size == 0:
        return (
            f"Causal mask: the query is at position {query_position}, the last one, "
            "so no card lies in its future."
        )
    verb = "is" if future.size == 1 else "are"
    return (
        f"Causal mask: the query is at position {query_position}, so "
        f"{_cards_list(future)} {verb} erased before softmax."
    )


def walkthrough_step(cards, step, query_position=2, *, decimals=2):
    """Everything the board shows after ``step`` of the six-step walkthrough.

    1. the cards; 2. dot products ``q . k``; 3. divided by ``sqrt(d_k)``;
    4. softmax into weights; 5. weights times values into the output;
    6. a causal mask: the cards after ``query_position`` are erased (their
    scores set to -inf) before softmax, and weights and output are recomputed.

    Parameters
    ----------
    cards : Cards
        From :func:`make_cards` (or :data:`DEFAULT_CARDS`).
    step : int
        1 ... :data:`N_STEPS`.
    query_position : int, default 2
        The query's place in the sequence, 1 ... n (number of cards). It only
        matters from step 6 on, where cards after it are in its future.
    decimals : int, default 2
        Rounding of the board's numbers (the arrays keep full precision).

    Returns
    -------
    WalkthroughStep

    Examples
    --------
    >>> state = walkthrough_step(DEFAULT_CARDS, 3)
    >>> state.title, state.scores.tolist()
    ('divide by √d_k', [1.0, 0.0, 1.5])
    >>> [row.label for row in state.board], state.board[1].cells
    (['q · k', '÷ √d_k'], ('1', '0', '1.5'))
    >>> masked = walkthrough_step(DEFAULT_CARDS, 6, query_position=2)
    >>> masked.erased.tolist(), masked.board[1].cells, masked.board[2].cells
    ([False, False, True], ('1', '0', '−∞'), ('0.73', '0.27', '0'))
    >>> print(masked.caption)
    Causal mask: the query is at position 2, so card 3 is erased before softmax.
    """
    if not isinstance(cards, Cards):
        raise TypeError(
            f"cards must be Cards (build them with make_cards(query, keys, values)); "
            f"got {type(cards).__name__}."
        )
    step = require_whole_number(step, "step")
    if step > N_STEPS:
        raise ValueError(f"step must lie between 1 and {N_STEPS}; got {step}.")
    n = cards.keys.shape[0]
    query_position = require_whole_number(query_position, "query_position")
    if query_position > n:
        raise ValueError(
            f"query_position must lie between 1 and the number of cards ({n}); "
            f"got {query_position}."
        )
    decimals = require_whole_number(decimals, "decimals", minimum=0)

    d_k = cards.query.shape[0]
    scale = math.sqrt(d_k)
    erased = np.zeros(n, dtype=bool)
    if step == _MASK:
        erased[query_position:] = True  # positions after the query's (0-based slice)
    dots = scores = weights = output = None
    board = []
    if step >= _DOTS:
        dots = attention_scores(cards.query[None, :], cards.keys, scaled=False)[0]
        board.append(BoardRow(BOARD_ROWS[0], tuple(_number(float(x), decimals) for x in dots)))
    if step >= _SCALE:
        scores = np.where(erased, -np.inf, dots / scale)
        board.append(BoardRow(BOARD_ROWS[1], tuple(_number(float(x), decimals) for x in scores)))
    if step >= _SOFTMAX:
        # The mask acts on the scores, before softmax: erased cards get no share at all.
        weights = masked_softmax(dots / scale, ~erased)
        board.append(BoardRow(BOARD_ROWS[2], tuple(_number(float(w), decimals) for w in weights)))
    if step >= _OUTPUT:
        output = weights @ cards.values
    return WalkthroughStep(
        step=step,
        n_steps=N_STEPS,
        title=STEP_TITLES[step - 1],
        caption=_caption(step, d_k, scale, dots, weights, erased, query_position, decimals),
        cards=cards,
        query_position=query_position,
        d_k=d_k,
        scale=scale,
        dots=dots,
        scores=scores,
        weights=weights,
        output=output,
        erased=erased,
        board=tuple(board),
        output_text=None if output is None else _vector(output, decimals),
    )
