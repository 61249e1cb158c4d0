"""Training-steps explorer (notebook 08): watch one attention head learn a lookup.

A training run of :mod:`attention_lib.tiny_layer` saves, every few steps, the
attention weights of a fixed probe batch (the same sequences at every
snapshot) and the loss on it. The slider moves through those saved steps.
Left: the weights of each probe sequence's query token over its four pair
tokens, the pair that holds the answer outlined; they start uniform and
sharpen onto the outlined cells. Right: the loss per training step and on the
probe, with a marker at the chosen step.

Nothing is trained while the slider moves: :func:`update` only reads the
saved history (a :class:`~attention_lib.tiny_layer.TrainingRun`), so a
change costs a blit. Without a run of its own the explorer shows
:func:`example_run`, seeded, trained once per session (a fraction of a second).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import ipywidgets
import numpy as np
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from .. import plots
from .._validation import require_whole_number
from ..tiny_layer import TrainingRun, init_params, lookup_batch, train
from ._shell import ExplorerSpec, HiddenControl, html_table

__all__ = ["EXPLORER", "TrainingStepsState", "training_steps_explorer", "update"]

#: The example task and its training, the sizes notebook 08 uses.
N_PAIRS, N_KEYS, N_VALUES, D_K = 4, 8, 4, 8
PROBE_SIZE, BATCH_SIZE, STEPS, LEARNING_RATE, SNAPSHOT_EVERY = 6, 64, 300, 0.01, 10

FIGSIZE = (11.0, 4.4)
BOARD_FIGSIZE = (15.0, 6.6)


@functools.lru_cache(maxsize=1)
def example_run():
    """The explorer's default history: the notebook's lookup task, seeded, 300 steps of Adam.

    Trained once per session and cached; its arrays are read-only, so no
    caller can change what the next one sees.

    Returns
    -------
    attention_lib.tiny_layer.TrainingRun
        Snapshots every 10 steps of a probe batch of 6 sequences.

    Examples
    --------
    >>> from attention_lib.widgets.training_steps import example_run
    >>> run = example_run()
    >>> run.snapshot_steps[[0, 1, -1]].tolist(), run.snapshot_weights.shape
    ([0, 10, 300], (31, 6, 4))
    """
    rng = np.random.default_rng(0)
    probe = lookup_batch(PROBE_SIZE, N_PAIRS, N_KEYS, N_VALUES, rng)
    run = train(
        init_params(N_KEYS + N_VALUES, D_K, N_VALUES, rng),
        lambda: lookup_batch(BATCH_SIZE, N_PAIRS, N_KEYS, N_VALUES, rng),
        probe,
        STEPS,
        learning_rate=LEARNING_RATE,
        snapshot_every=SNAPSHOT_EVERY,
    )
    saved = (run.losses, run.snapshot_steps, run.snapshot_weights, run.snapshot_losses)
    for array in (*run.params.values(), *saved, *run.probe):
        array.setflags(write=False)
    return run


class TrainingStepsState(NamedTuple):
    """The probe's attention and the losses at one saved step of a training run."""

    step_index: int  # which snapshot, 0 .. n_snapshots - 1
    step: int  # training steps taken at that snapshot
    total_steps: int
    n_values: int  # answers the layer chooses among
    weights: np.ndarray  # (n_probe, n_pairs) each probe query's weights over its pairs
    answer_positions: np.ndarray  # (n_probe,) the pair whose key the query asks for
    asked_keys: np.ndarray  # (n_probe,) that key
    weight_on_answer: np.ndarray  # (n_probe,) weight on the answer's pair
    mean_weight_on_answer: float
    probe_loss: float  # loss on the probe batch at this step
    snapshot_steps: np.ndarray  # (n_snapshots,)
    probe_losses: np.ndarray  # (n_snapshots,)
    training_losses: np.ndarray  # (total_steps,) loss of each step's training batch


def update(step_index=0, *, run=None):
    """The saved snapshot ``step_index`` of ``run`` (pure: reads the history, trains nothing).

    Parameters
    ----------
    step_index : int
        Which snapshot, from 0 (before training) to ``len(run.snapshot_steps) - 1``.
    run : attention_lib.tiny_layer.TrainingRun, optional
        Default :func:`example_run`.

    Returns
    -------
    TrainingStepsState

    Examples
    --------
    >>> from attention_lib.widgets.training_steps import update
    >>> start, end = update(0), update(30)
    >>> start.step, round(start.mean_weight_on_answer, 2), end.step
    (0, 0.25, 300)
    >>> bool(end.mean_weight_on_answer > 0.95)
    True
    >>> update(31)
    Traceback (most recent call last):
    ...
    ValueError: step_index must be between 0 and 30 (the run saved 31 snapshots); got 31.
    """
    run = example_run() if run is None else run
    if not isinstance(run, TrainingRun):
        raise TypeError(
            f"run must be the TrainingRun that tiny_layer.train returns; got {type(run).__name__}."
        )
    last = len(run.snapshot_steps) - 1
    why = f" (the run saved {last + 1} snapshots)"
    step_index = require_whole_number(step_index, "step_index", minimum=0, maximum=last, why=why)
    weights = run.snapshot_weights[step_index]
    answers = run.probe.answer_positions
    on_answer = weights[np.arange(len(answers)), answers]
    return TrainingStepsState(
        step_index=step_index,
        step=int(run.snapshot_steps[step_index]),
        total_steps=len(run.losses),
        n_values=int(run.params["W_V"].shape[1]),
        weights=weights,
        answer_positions=answers,
        # The query token is one-hot in its key and zero in the value part.
        asked_keys=run.probe.queries[:, 0, :].argmax(axis=1),
        weight_on_answer=on_answer,
        mean_weight_on_answer=float(on_answer.mean()),
        probe_loss=float(run.snapshot_losses[step_index]),
        snapshot_steps=run.snapshot_steps,
        probe_losses=run.snapshot_losses,
        training_losses=run.losses,
    )


def _titles(state):
    return (
        f"weights at step {state.step}\n"
        f"mean on the answer's pair {state.mean_weight_on_answer:.2f}",
        f"loss at step {state.step}\n{state.probe_loss:.3f} on the probe",
    )


def _loss_ylim(state):
    """The loss axes' range: from just under 0 to a little over the highest loss of the run."""
    highest = max(float(state.training_losses.max(initial=0.0)), float(state.probe_losses.max()))
    return -0.05 * highest, 1.12 * highest


def _stem(state):
    """x and y of the step's stem: from the bottom of the loss axes to the probe's loss."""
    return [state.step, state.step], [_loss_ylim(state)[0], state.probe_loss]


def draw(fig, state):
    """The probe's weights (answers outlined) beside the loss curves with the step marked."""
    spec = plots.STYLES[plots.figure_style(fig)]
    heat_ax, loss_ax = fig.subplots(1, 2, width_ratios=(1.0, 1.35))
    heat_title, loss_title = _titles(state)
    n_pairs = state.weights.shape[1]
    heatmap = plots.attention_heatmap(
        state.weights,
        ax=heat_ax,
        annotate=True,
        colorbar=False,
        query_labels=[f"asks k{key}" for key in state.asked_keys],
        key_labels=[f"pair {j}" for j in range(n_pairs)],
        title=heat_title,
    )
    heat_ax.set(xlabel="", ylabel="probe query")
    outline = {"fill": False, "edgecolor": plots.COLORS["query"], "linewidth": spec["line"] * 1.2}
    for row, column in enumerate(state.answer_positions):
        heat_ax.add_patch(Rectangle((column - 0.44, row - 0.44), 0.88, 0.88, **outline))

    steps = np.arange(len(state.training_losses))
    loss_ax.plot(
        steps,
        state.training_losses,
        color=plots.COLORS["neutral"],
        linewidth=spec["line"] / 2,
        label="each training batch",
    )
    loss_ax.plot(
        state.snapshot_steps,
        state.probe_losses,
        color=plots.COLORS["output"],
        linewidth=spec["line"],
        label=f"the {len(state.weights)} probe sequences",
    )
    # Uniform output probabilities: the loss of a guess among the values.
    loss_ax.axhline(
        np.log(state.n_values),
        color=plots.COLORS["reference"],
        linestyle=":",
        linewidth=spec["line"],
        label=f"guessing (ln {state.n_values})",
    )
    span = max(int(state.snapshot_steps[-1]), 1)
    loss_ax.set(xlim=(-0.03 * span, 1.03 * span), ylim=_loss_ylim(state))
    # Fewer loss ticks on the board, for its large type: 0.25 apart there, 0.2 otherwise.
    nbins = 8 if plots.figure_style(fig) == "board" else 9
    loss_ax.yaxis.set_major_locator(MaxNLocator(nbins, steps=[1, 2, 2.5, 5, 10]))
    # The step: a stem from the x axis up to the probe's loss, clear of the legend above.
    # Stem and marker lie above the spines and the legend (z-order 6), so a change
    # redraws them alone, not everything that their axes-wide clip box touches.
    (stem,) = loss_ax.plot(
        *_stem(state),
        color=plots.COLORS["reference"],
        linestyle="--",
        linewidth=spec["line"] / 2,
        zorder=6,
    )
    (marker,) = loss_ax.plot(
        [state.step],
        [state.probe_loss],
        "o",
        color=plots.COLORS["query"],
        markersize=spec["marker"] * 1.3,
        zorder=6,
    )
    loss_ax.set(xlabel="training step", ylabel="cross-entropy", title=loss_title)
    # Right of the middle: above the curves once they have come down.
    loss_ax.legend(loc="center right")
    plots.raise_small_text(fig, 10.5)  # 11 inches wide: 12.4 CSS px at 1366x768
    return heatmap, heat_ax.title, stem, marker, loss_ax.title


def refresh(scene, state):
    """Move the weights and their numbers, the step's stem and marker and both titles."""
    heatmap, heat_title, stem, marker, loss_title = scene
    plots.update_attention_heatmap(heatmap, state.weights)
    stem.set_data(*_stem(state))
    marker.set_data([state.step], [state.probe_loss])
    for title, text in zip((heat_title, loss_title), _titles(state), strict=True):
        title.set_text(text)


def table(state):
    """One row per probe sequence: the key it asks for, its weights, the weight on the answer."""
    n_pairs = state.weights.shape[1]
    rows = [
        [
            f"query {i}",
            f"k{state.asked_keys[i]}",
            f"pair {state.answer_positions[i]}",
            *state.weights[i],
            state.weight_on_answer[i],
        ]
        for i in range(len(state.weights))
    ]
    return html_table(
        rows,
        ["probe", "asks", "answer in", *(f"pair {j}" for j in range(n_pairs)), "on the answer"],
        caption=f"attention weights after {state.step} of {state.total_steps} training steps",
        decimals=2,
    )


def readout(values, state):
    """One line: the step, the loss on the probe, the mean weight on the answer's pair."""
    uniform = 1.0 / state.weights.shape[1]
    return (
        f"step <b>{state.step}</b> of {state.total_steps} · loss on the probe "
        f"<b>{state.probe_loss:.3f}</b> · mean weight on the answer's pair "
        f"<b>{state.mean_weight_on_answer:.2f}</b> (uniform: {uniform:.2f})"
    )


def training_steps_explorer(run=None, step_index=0, *, style=None):
    """The live history: a slider over the saved steps of a training run (main control).

    Parameters
    ----------
    run : attention_lib.tiny_layer.TrainingRun, optional
        The history to show (default :func:`example_run`); the explorer's
        ``update`` is :func:`update` with this run.
    step_index : int, default 0
        The snapshot shown first (0: before training).
    style : {"default", "board"}, optional
        Defaults to ``ATTENTION_STYLE`` (unset: ``"default"``).

    Returns
    -------
    attention_lib.widgets.Explorer

    Examples
    --------
    >>> from attention_lib.widgets.training_steps import training_steps_explorer
    >>> explorer = training_steps_explorer()
    >>> explorer
    <training steps explorer: run the notebook to interact>
    >>> explorer.set(step_index=30).step
    300
    >>> explorer.close()
    """
    state = update(step_index, run=run)  # checks the run and the index before any widget exists
    controls = {
        "step_index": ipywidgets.SelectionSlider(
            options=[(str(step), i) for i, step in enumerate(state.snapshot_steps)],
            value=state.step_index,
            description="training step",
            continuous_update=False,
            style={"description_width": "initial"},
            layout=ipywidgets.Layout(width="32em"),
        )
    }
    return EXPLORER.explorer({**controls, "run": HiddenControl(run)}, style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="training steps", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
