"""Soft-lookup explorer (chapter 19.1): turn a 2-D query, watch scores, weights and output.

Three key/value cards live in a plane (``d_k = d_v = 2``) so that everything
can be drawn: the keys and the query as arrows, the weights as bars, and the
values with the blended output, which never leaves the triangle the values
span. The main control turns the query (angle in degrees); the second sets
its length (a longer query makes the scores larger and the weights sharper;
length 0 makes every score equal and the output the plain average).
"""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets
import numpy as np

from .. import plots
from ..attention import attention_forward, attention_scores
from ._shell import ExplorerSpec, html_table

__all__ = ["EXPLORER", "SoftLookupState", "soft_lookup_explorer", "update"]

#: Longest query the explorer's length slider allows.
MAX_LENGTH = 4.0
#: Figure sizes (inches) in the default and board styles. Both are rendered 1480 pixels
#: wide, so the board's fewer inches mean larger type: 518 and 518 pixels tall.
FIGSIZE = (10.0, 3.5)
BOARD_FIGSIZE = (13.0, 4.55)
#: Decimals of the weights on show (bars, labels, readout): what a tie is judged on.
WEIGHT_DECIMALS = 2


def example_cards():
    """The series' hand-sized dictionary: three 2-D keys, their 2-D values, their names.

    Returns
    -------
    keys : numpy.ndarray, shape (3, 2)
    values : numpy.ndarray, shape (3, 2)
    labels : list of str

    Examples
    --------
    >>> from attention_lib.widgets.soft_lookup import example_cards
    >>> keys, values, labels = example_cards()
    >>> keys.shape, values.shape, labels
    ((3, 2), (3, 2), ['cat', 'dog', 'car'])
    """
    keys = np.array([[2.0, 0.0], [1.5, 1.5], [-1.0, 2.0]])
    values = np.array([[1.0, 3.0], [3.0, 1.0], [-2.0, -1.0]])
    return keys, values, ["cat", "dog", "car"]


def query_from_polar(angle, length):
    """A 2-D query pointing ``angle`` degrees anticlockwise from the x axis.

    Examples
    --------
    >>> from attention_lib.widgets.soft_lookup import query_from_polar
    >>> np.round(query_from_polar(90, 2.0), 6)
    array([0., 2.])
    """
    radians = np.deg2rad(float(angle))
    return float(length) * np.array([np.cos(radians), np.sin(radians)])


class SoftLookupState(NamedTuple):
    """Everything the soft-lookup explorer shows for one query."""

    angle: float
    length: float
    query: np.ndarray  # (2,)
    keys: np.ndarray  # (T_k, 2)
    values: np.ndarray  # (T_k, 2)
    labels: tuple
    scores: np.ndarray  # (T_k,) scaled scores q . k / sqrt(2)
    weights: np.ndarray  # (T_k,)
    output: np.ndarray  # (2,)
    view_limit: float  # half-width of the drawn planes (fixed while the query moves)


def update(angle=30.0, length=1.5, *, keys=None, values=None, labels=None, max_length=MAX_LENGTH):
    """Scores, weights and output for the query at ``angle`` degrees and ``length``.

    Pure: NumPy only, through :func:`attention_lib.attention_forward`.

    Parameters
    ----------
    angle : float
        Direction of the query in degrees.
    length : float
        Length of the query (>= 0).
    keys, values : array_like, shape (T_k, 2), optional
        Default: :func:`example_cards`.
    labels : sequence of str, optional
    max_length : float
        Longest query the view must hold (keeps the axes still while it turns).

    Returns
    -------
    SoftLookupState

    Examples
    --------
    >>> from attention_lib.widgets.soft_lookup import update
    >>> state = update(angle=0.0, length=1.0)
    >>> np.round(state.scores, 3)
    array([ 1.414,  1.061, -0.707])
    >>> float(np.round(state.weights.sum(), 12))
    1.0
    >>> update(length=0.0).weights  # all scores equal: a plain average
    array([0.33333333, 0.33333333, 0.33333333])
    """
    default_keys, default_values, default_labels = example_cards()
    keys = default_keys if keys is None else np.asarray(keys, dtype=float)
    values = default_values if values is None else np.asarray(values, dtype=float)
    if labels is None:
        labels = default_labels if len(keys) == 3 else [f"k{i}" for i in range(len(keys))]
    if float(length) < 0:
        raise ValueError(f"length must be >= 0; got {length}.")
    query = query_from_polar(angle, length)
    output, cache = attention_forward(query[None, :], keys, values, return_cache=True)
    scores = attention_scores(query[None, :], keys)[0]
    extent = max(float(max_length), float(np.abs(keys).max()), float(np.abs(values).max()))
    return SoftLookupState(
        angle=float(angle),
        length=float(length),
        query=query,
        keys=keys,
        values=values,
        labels=tuple(labels),
        scores=scores,
        weights=cache.weights[0],
        output=output[0],
        view_limit=1.15 * extent,
    )


def draw(fig, state):
    """Three panels: keys and query, weights over the keys, values and the output."""
    left, middle, right = fig.subplots(1, 3, width_ratios=[1.0, 0.85, 1.0])
    arrows = plots.arrows_2d(
        left,
        state.keys,
        state.query,
        labels=state.labels,
        limit=state.view_limit,
        title="query and keys",
    )
    bars = plots.weight_bars(
        state.weights,
        ax=middle,
        labels=state.labels,
        scores=state.scores,
        decimals=WEIGHT_DECIMALS,
        title="softmax weights",
        score_row=True,
    )
    blend = plots.blend_plot(
        right,
        state.values,
        state.output,
        weights=state.weights,
        labels=state.labels,
        limit=state.view_limit,
        title="values and output",
    )
    plots.raise_small_text(fig, 10)  # the bars' weights: 13 CSS px at 1366x768
    return arrows, bars, blend


def refresh(scene, state):
    """Turn the query, set the bars and move the output to ``state`` (same keys and values)."""
    arrows, bars, blend = scene
    plots.update_arrows_2d(arrows, np.round(state.query, 12))
    plots.update_weight_bars(bars, state.weights, state.scores, decimals=WEIGHT_DECIMALS)
    plots.update_blend_plot(blend, state.output, weights=state.weights)


def _vector(v):
    return "[" + ", ".join(f"{x:.2f}" for x in v) + "]"


def table(state):
    """The numbers of the current state as an HTML table: one row per key, then the output."""
    rows = [
        [label, _vector(key), f"{score:.3f}", f"{weight:.3f}", _vector(value)]
        for label, key, score, weight, value in zip(
            state.labels, state.keys, state.scores, state.weights, state.values, strict=True
        )
    ]
    rows.append(["output", "", "", f"{state.weights.sum():.3f}", _vector(state.output)])
    return html_table(
        rows,
        ["key", "key vector", "score q·k/√2", "weight", "value"],
        caption=f"query {_vector(state.query)} (angle {state.angle:.0f}°, "
        f"length {state.length:.2f})",
    )


def heaviest_keys(weights, labels, decimals=WEIGHT_DECIMALS):
    """The keys that share the largest weight as shown, and that weight as shown.

    Weights are shown rounded to ``decimals``; keys whose rounded weight
    equals the largest one's tie, since nothing on screen tells them apart.

    Parameters
    ----------
    weights : array_like, shape (T_k,)
    labels : sequence of str
    decimals : int, default 2

    Returns
    -------
    names : list of str
        In the order of ``labels``.
    shown : str
        The largest weight, as printed.

    Examples
    --------
    >>> from attention_lib.widgets.soft_lookup import heaviest_keys
    >>> heaviest_keys([0.2, 0.5, 0.3], ["cat", "dog", "car"])
    (['dog'], '0.50')
    >>> heaviest_keys([1 / 3, 1 / 3, 1 / 3], ["cat", "dog", "car"])
    (['cat', 'dog', 'car'], '0.33')
    """
    weights = np.ravel(np.asarray(weights, dtype=float))
    if len(labels) != weights.size:
        raise ValueError(
            f"labels must have one entry per weight ({weights.size}); got {len(labels)} labels."
        )
    shown = [plots.format_weight(w, decimals) for w in weights]
    top = shown[int(np.argmax(weights))]
    return [label for label, text in zip(labels, shown, strict=True) if text == top], top


def _and(names):
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def readout(values, state):
    """One line: the controls, the heaviest key (or the keys that tie) and the output."""
    names, shown = heaviest_keys(state.weights, state.labels)
    verdict = (
        f"{names[0]} gets the most weight ({shown})"
        if len(names) == 1
        else f"{_and(names)} tie at {shown}"
    )
    return (
        f"angle {values['angle']:.0f}°, length {values['length']:.2f}: {verdict}; "
        f"output {_vector(state.output)}"
    )


def soft_lookup_explorer(angle=30.0, length=1.5, *, style=None):
    """The live soft-lookup widget: angle (main control) and length of a 2-D query.

    Parameters
    ----------
    angle : float, default 30
        Starting direction of the query, degrees (-180 to 180).
    length : float, default 1.5
        Starting length (0 to :data:`MAX_LENGTH`).
    style : {"default", "board"}

    Returns
    -------
    Explorer

    Examples
    --------
    >>> from attention_lib.widgets import soft_lookup_explorer
    >>> explorer = soft_lookup_explorer()
    >>> explorer
    <soft lookup explorer: run the notebook to interact>
    >>> state = explorer.set(length=0.0)
    >>> np.round(state.weights, 3)
    array([0.333, 0.333, 0.333])
    """
    controls = {
        "angle": ipywidgets.FloatSlider(
            value=angle,
            min=-180.0,
            max=180.0,
            step=5.0,
            description="angle (°)",
            continuous_update=False,
            readout_format=".0f",
        ),
        "length": ipywidgets.FloatSlider(
            value=length,
            min=0.0,
            max=MAX_LENGTH,
            step=0.1,
            description="length",
            continuous_update=False,
            readout_format=".1f",
        ),
    }
    return EXPLORER.explorer(controls, style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="soft lookup", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
