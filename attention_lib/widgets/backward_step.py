"""Explorer for notebook 04 (chapter 19.3): nudge one input entry, compare with the gradient.

Pick one entry ``x`` of ``Q``, ``K`` or ``V`` and a step ``h``. The loss is
``L = sum(G * O)`` for a fixed upstream gradient ``G``, so ``dL/dO = G``. The
explorer shows

* the actual change ``L(x + h) - L(x)`` next to the gradient's linear
  prediction ``h * dL/dx`` (and the loss along the line ``x + t`` for ``t`` in
  ``[-2h, 2h]``, with the tangent line the gradient promises);
* the error of a finite-difference estimate of ``dL/dx`` as the step shrinks,
  over a log range of steps (relative to the largest entry of the gradient of
  the chosen input, so that entries with a zero gradient stay meaningful):
  large steps suffer truncation (central differences: error ~ h**2, one-sided:
  ~ h), tiny steps suffer round-off (error ~ 1e-16 / h), and the best step
  sits between the two.

:func:`update` is pure NumPy (no matplotlib, no ipywidgets) so tests can assert
on it. By default the gradient comes from :func:`attention_lib.attention_backward`;
pass ``backward=`` (same signature) to probe another one, such as a planted bug.
"""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets as widgets
import matplotlib as mpl
import numpy as np
from matplotlib.ticker import LogLocator

from .. import plots
from .._validation import require_whole_number
from ..attention import attention_backward, attention_forward
from ..masks import causal_mask
from ._shell import ExplorerSpec, html_table, int_slider

__all__ = ["EXPLORER", "BackwardStepState", "backward_step_explorer", "update"]

ARRAYS = ("Q", "K", "V")
#: Steps of the finite-difference error curve: 10**-13 .. 10**0, four per decade.
STEPS = np.logspace(-13.0, 0.0, 53)
#: Offsets ``t / h`` at which the loss curve ``L(x + t) - L(x)`` is drawn.
CURVE_OFFSETS = np.linspace(-2.0, 2.0, 41)
_TINY = np.finfo(np.float64).tiny


class Problem(NamedTuple):
    """A small fixed attention problem: inputs, upstream gradient ``G`` and mask."""

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    upstream: np.ndarray
    mask: np.ndarray | None


def example_problem(*, length=4, width=3, causal=True, seed=4):
    """Seeded float64 inputs ``Q, K, V`` of shape ``(length, width)`` and ``G``.

    Examples
    --------
    >>> problem = example_problem()
    >>> problem.Q.shape, problem.upstream.shape, problem.mask.shape
    ((4, 3), (4, 3), (4, 4))
    >>> example_problem(causal=False).mask is None
    True
    """
    rng = np.random.default_rng(seed)
    Q, K, V, upstream = rng.standard_normal((4, length, width))
    mask = causal_mask(length) if causal else None
    return Problem(Q, K, V, upstream, mask)


def loss(problem, **replace):
    """``sum(G * attention_forward(Q, K, V, mask))``, with any of Q, K, V replaced.

    Examples
    --------
    >>> problem = example_problem()
    >>> loss(problem) == loss(problem, V=problem.V)
    True
    """
    arrays = {name: replace.get(name, getattr(problem, name)) for name in ARRAYS}
    output = attention_forward(arrays["Q"], arrays["K"], arrays["V"], problem.mask)
    return float(np.sum(problem.upstream * output))


class BackwardStepState(NamedTuple):
    """Everything the backward-step explorer shows for one choice of entry and step."""

    array: str
    index: tuple
    h: float
    value: float
    loss: float
    gradient: float
    actual_change: float
    predicted_change: float
    central_difference: float
    offsets: np.ndarray
    curve: np.ndarray
    gradient_scale: float
    steps: np.ndarray
    central_errors: np.ndarray
    forward_errors: np.ndarray
    best_step: float
    #: The one key this entry's query reads (a Q entry whose row of the mask allows a single
    #: key: row 0 under the causal mask), else None. Its weight is 1 whatever its score, so
    #: the loss cannot depend on the entry and the gradient is exactly 0.
    only_key: int | None = None

    @property
    def prediction_error(self):
        """``|actual - predicted| / (h * gradient_scale)``: the gap, relative to the gradient."""
        return abs(self.actual_change - self.predicted_change) / (self.h * self.gradient_scale)


def _loss_along(problem, array, index, offsets):
    """``L(x + t) - L(x)`` for each ``t`` in ``offsets`` (x = ``array[index]``), in one batch."""
    nudged = np.repeat(getattr(problem, array)[None], len(offsets), axis=0)
    nudged[:, index[0], index[1]] += offsets
    arrays = {name: getattr(problem, name) for name in ARRAYS} | {array: nudged}
    output = attention_forward(arrays["Q"], arrays["K"], arrays["V"], problem.mask)
    return np.sum(problem.upstream * output, axis=(-2, -1)) - loss(problem)


def _errors(estimates, gradient, scale):
    return np.abs(np.asarray(estimates) - gradient) / scale


def update(array="Q", row=3, col=0, h=0.5, *, causal=True, problem=None, backward=None):
    """Nudge ``array[row, col]`` by ``h`` and compare the loss change with the gradient.

    Parameters
    ----------
    array : {"Q", "K", "V"}
        Which input holds the entry.
    row, col : int
        The entry (position, feature); counted from 0.
    h : float
        The perturbation, ``0 < h <= 1``.
    causal : bool, default True
        Use a causal mask in the example problem (ignored when ``problem`` is given).
    problem : Problem, optional
        Defaults to :func:`example_problem` with ``causal``.
    backward : callable, optional
        ``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)``; defaults to
        :func:`attention_lib.attention_backward`.

    Returns
    -------
    BackwardStepState

    Examples
    --------
    >>> state = update("V", 2, 1, h=0.5)
    >>> abs(state.actual_change - state.predicted_change) < 1e-12  # L is linear in V
    True
    >>> state = update("Q", 0, 0)  # query 0 reads only key 0 under the causal mask
    >>> state.actual_change, abs(state.gradient) < 1e-14, state.only_key
    (0.0, True, 0)
    """
    if array not in ARRAYS:
        raise ValueError(f"array must be one of {ARRAYS}; got {array!r}.")
    problem = example_problem(causal=causal) if problem is None else problem
    base = getattr(problem, array)
    for name, value, size in (("row", row, base.shape[0]), ("col", col, base.shape[1])):
        if require_whole_number(value, name, minimum=0) >= size:
            raise ValueError(f"{name} must be in 0..{size - 1} for {array} of shape {base.shape}")
    if not (np.isfinite(h) and 0 < h <= 1):
        raise ValueError(f"h must be a step in (0, 1]; got {h!r}.")
    index = (int(row), int(col))
    backward = attention_backward if backward is None else backward

    output, cache = attention_forward(problem.Q, problem.K, problem.V, problem.mask, True)
    grads = dict(zip(ARRAYS, backward(problem.upstream, cache), strict=True))
    gradient = float(grads[array][index])

    curve = _loss_along(problem, array, index, CURVE_OFFSETS * h)
    actual, minus = _loss_along(problem, array, index, np.array([h, -h]))
    plus_steps = _loss_along(problem, array, index, STEPS)
    minus_steps = _loss_along(problem, array, index, -STEPS)
    # Errors are relative to the size of this input's whole gradient (its largest entry), as
    # gradient_check's norm-wise error is: an entry whose gradient is 0 up to round-off
    # (query 0 under the causal mask) then shows an error near 1e-16, not a meaningless 1.
    scale = max(abs(gradient), float(np.abs(grads[array]).max()), _TINY)
    central_errors = _errors((plus_steps - minus_steps) / (2 * STEPS), gradient, scale)
    forward_errors = _errors(plus_steps / STEPS, gradient, scale)
    return BackwardStepState(
        array=array,
        index=index,
        h=float(h),
        value=float(base[index]),
        loss=float(np.sum(problem.upstream * output)),
        gradient=gradient,
        actual_change=float(actual),
        predicted_change=gradient * float(h),
        central_difference=float((actual - minus) / (2 * h)),
        gradient_scale=scale,
        offsets=CURVE_OFFSETS * h,
        curve=curve,
        steps=STEPS,
        central_errors=central_errors,
        forward_errors=forward_errors,
        best_step=float(STEPS[np.argmin(central_errors)]),
        only_key=_only_key(problem, array, index[0]),
    )


def _only_key(problem, array, row):
    """The single key query ``row`` reads, if ``array`` is Q and its mask row allows just one."""
    if array != "Q" or problem.mask is None:
        return None
    allowed = np.flatnonzero(
        np.broadcast_to(problem.mask, (problem.Q.shape[0], problem.K.shape[0]))[row]
    )
    return int(allowed[0]) if allowed.size == 1 else None


# ---------------------------------------------------------------------------
# Drawing, table, readout and the explorer (the thin part around update()).

#: The steps the explorer's slider offers: 1, 2 and 5 per decade from 1e-12 to 1, so its
#: arrow keys step through round numbers and always come back to the starting 0.5.
H_CHOICES = tuple(
    float(f"{mantissa}e{exponent}") for exponent in range(-12, 0) for mantissa in (1, 2, 5)
) + (1.0,)
#: Figure sizes (inches): both are rendered 1480 pixels wide (569 and 650 pixels tall), so
#: the board's fewer inches per pixel mean larger type.
FIGSIZE = (9.0, 3.46)
BOARD_FIGSIZE = (14.8, 6.5)
#: Errors below this are drawn at this value (an exact 0 has no place on a log axis).
ERROR_FLOOR = 1e-17
# The series' colours (attention_lib.plots.COLORS): measured blue, predicted vermillion.
_ACTUAL_COLOR = plots.COLORS["key"]
_PREDICTED_COLOR = plots.COLORS["prediction"]
_ONE_SIDED_COLOR = plots.COLORS["value"]
_MARK_COLOR = plots.COLORS["reference"]


def format_step(h):
    """A step ``h`` as the explorer writes it everywhere: slider, readout, table and figure.

    Decimals down to 0.01, then a short power of ten (two significant digits
    at most, no padded exponent), so a step always reads the same way.

    Examples
    --------
    >>> format_step(0.5), format_step(0.05), format_step(1.0), format_step(5e-3)
    ('0.5', '0.05', '1', '5e-3')
    >>> format_step(1e-12), format_step(10**-2.5), format_step(10**-0.25)
    ('1e-12', '3.2e-3', '0.56')
    """
    h = float(h)
    if h >= 0.01:
        return f"{h:.2g}"
    mantissa, exponent = f"{h:.1e}".split("e")
    return f"{mantissa.removesuffix('.0')}e{int(exponent)}"


def _entry_name(state):
    return f"{state.array}[{state.index[0]}, {state.index[1]}]"


# Both panels keep fixed axes, so a change only moves a few artists (the shell blits
# them): the loss curve is drawn in units that do not depend on h or on the entry.
LOSS_XLIM = (-2.1, 2.1)
LOSS_YLIM = (-2.5, 4.6)  # room above the curves (they stay within +-2.8) for the legend
ERROR_YLIM = (ERROR_FLOOR, 1e5)  # errors stay below 1: the decades above hold the legend
#: Both legends sit on white, without a frame: the dotted lines t = h and h cross their area.
_LEGEND = dict(loc="upper center", frameon=True, facecolor="white", edgecolor="none", framealpha=1)


def _loss_curves(state):
    """The left panel's curves, ``(x, y)`` each, in units of ``h * gradient_scale`` along ``t / h``.

    The loss along the line, the gradient's tangent, and the gap between them at t = h.
    """
    unit = state.h * state.gradient_scale
    x = state.offsets / state.h
    gap = [state.predicted_change / unit, state.actual_change / unit]
    return (
        (x, state.curve / unit),
        (x, x * state.gradient / state.gradient_scale),
        ([1.0, 1.0], gap),
    )


def _shown_errors(state):
    """The right panel's curves: the central and one-sided errors, floored for the log axis."""
    return [
        np.maximum(errors, ERROR_FLOOR) for errors in (state.central_errors, state.forward_errors)
    ]


def _loss_title(state):
    return f"nudge {_entry_name(state)} by h = {format_step(state.h)}"


def _flat_note(state):
    """Why the left panel is flat (a query that reads one key), or "" when it is not."""
    if state.only_key is None:
        return ""
    row = state.index[0]
    return (
        f"flat: query {row} reads only key {state.only_key},\n"
        f"so its weight is 1 whatever Q[{row}, ·] is:\nthe loss cannot move, dL/dx = 0"
    )


def _draw_tangent(ax, spec):
    """Left panel: L(x + t) - L(x) along the line, the gradient's tangent, the gap at t = h.

    Its curves, note and title are drawn empty: :func:`refresh` gives them the state.
    """
    line = spec["line"]
    curves = (  # in the order of _loss_curves: format, colour, width, label, the rest
        ("o-", _ACTUAL_COLOR, line, "actual  L(x + t) − L(x)", {"markersize": spec["marker"] / 2}),
        ("--", _PREDICTED_COLOR, line, "gradient's prediction  t · dL/dx", {}),
        ("-", _MARK_COLOR, line * 2.5, "gap at t = h", {"solid_capstyle": "butt"}),
    )
    lines = [
        ax.plot([], [], fmt, color=color, linewidth=width, label=label, **rest)[0]
        for fmt, color, width, label, rest in curves
    ]
    ax.axvline(1.0, color=_MARK_COLOR, linewidth=0.8, linestyle=":")
    ax.axhline(0.0, color=plots.COLORS["zero"], linewidth=0.8, zorder=0)
    # Under the flat curves (their only place then), centred: said in words, not left to guess.
    note = ax.text(
        0.0,
        -0.45,
        "",
        ha="center",
        va="top",
        fontsize=spec["annotation"],
        color=_MARK_COLOR,
        # on white, over the dotted line t = h that runs through the panel
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 2.0},
    )
    # whole units on both axes, whatever width the layout gives the panel
    ax.set(xlim=LOSS_XLIM, ylim=LOSS_YLIM, xticks=range(-2, 3), yticks=range(-2, 5))
    ax.set(xlabel="nudge t, in units of h", ylabel="loss change ÷ (h · gradient size)")
    ax.legend(fontsize=spec["annotation"], **_LEGEND)
    return lines, note, ax.title


def _draw_errors(ax, state, spec):
    """Right panel: error of the finite-difference estimates against the step."""
    curves = (  # in the order of _shown_errors: format, colour, label
        ("-", _ACTUAL_COLOR, "central  [L(x+h) − L(x−h)] / 2h"),
        (":", _ONE_SIDED_COLOR, "one-sided  [L(x+h) − L(x)] / h"),
    )
    lines = [  # drawn with their data: it sets the step axis' range
        ax.loglog(state.steps, errors, fmt, color=color, linewidth=spec["line"], label=label)[0]
        for errors, (fmt, color, label) in zip(_shown_errors(state), curves, strict=True)
    ]
    step = ax.axvline(state.h, color=_MARK_COLOR, linewidth=0.8, linestyle=":")
    ax.set_ylim(*ERROR_YLIM)
    # Few ticks, room for large type; none above 1, where only the legend is.
    ax.xaxis.set_major_locator(LogLocator(numticks=5))
    ax.set_yticks([1e-16, 1e-12, 1e-8, 1e-4, 1.0])
    ax.minorticks_off()
    # Which error wins at which end of the step axis, in the x label's row: no curve goes there.
    ax.set_xlabel("step h")
    below = -(
        mpl.rcParams["xtick.major.size"] + mpl.rcParams["xtick.major.pad"] + 1.5 * spec["tick"]
    )
    for x, text, align in ((0.0, "← round-off", "left"), (1.0, "truncation →", "right")):
        ax.annotate(
            text,
            (x, 0.0),
            xycoords="axes fraction",
            xytext=(0, below),
            textcoords="offset points",
            ha=align,
            va="top",
            fontsize=spec["annotation"],
            color=_MARK_COLOR,
        )
    ax.set(ylabel="error ÷ gradient size", title="finite-difference error")
    ax.legend(fontsize=spec["annotation"], **_LEGEND)
    return lines, step


def draw(fig, state):
    """The loss along x + t and its tangent (left) beside the finite-difference errors (right)."""
    spec = plots.STYLES[plots.figure_style(fig)]
    tangent, errors = fig.subplots(1, 2)
    return (*_draw_tangent(tangent, spec), *_draw_errors(errors, state, spec))


def refresh(scene, state):
    """Move both panels' curves, the step line, the flat note and the title to ``state``."""
    loss_lines, note, title, error_lines, step = scene
    for line, xy in zip(loss_lines, _loss_curves(state), strict=True):
        line.set_data(*xy)
    for line, errors in zip(error_lines, _shown_errors(state), strict=True):
        line.set_ydata(errors)
    note.set_text(_flat_note(state))
    title.set_text(_loss_title(state))
    step.set_xdata([state.h, state.h])


def _sci(x):
    return f"{x:.3e}"


def table(state):
    """The numbers the figure shows, as a small HTML table."""
    rows = [
        ["entry x", _entry_name(state)],
        ["value of x", f"{state.value:.4f}"],
        ["step h", format_step(state.h)],
        ["gradient dL/dx", _sci(state.gradient)],
        ["predicted change h·dL/dx", _sci(state.predicted_change)],
        ["actual change L(x+h) − L(x)", _sci(state.actual_change)],
        ["relative gap", f"{state.prediction_error:.1e}"],
        ["central difference at h", _sci(state.central_difference)],
        ["best step (central)", format_step(state.best_step)],
    ]
    return html_table(rows, ["quantity", "value"], caption="nudge one entry, compare")


def readout(values, state):
    """The entry, h, the predicted and actual changes, and why a flat row is flat."""
    text = (
        f"<b>{_entry_name(state)}</b>, h = {format_step(state.h)}: predicted change "
        f"{state.predicted_change:.3e}, actual {state.actual_change:.3e} "
        f"(relative gap {state.prediction_error:.1e}); best finite-difference step "
        f"≈ {format_step(state.best_step)}"
    )
    if state.only_key is not None:
        text += (
            f" · query {state.index[0]} reads only key {state.only_key} (causal mask): its "
            "weight is 1 whatever its score, so the gradient is exactly 0"
        )
    return text


def backward_step_explorer(array="Q", row=3, col=0, h=0.5, *, causal=True, style=None):
    """The live explorer: a slider of steps h (main control), the entry, the causal switch.

    The steps are :data:`H_CHOICES` (1, 2, 5 per decade), labelled by
    :func:`format_step`; ``h`` must be one of them.

    Returns
    -------
    attention_lib.widgets.Explorer

    Examples
    --------
    >>> explorer = backward_step_explorer()
    >>> explorer
    <backward step explorer: run the notebook to interact>
    >>> explorer.set(array="V").array
    'V'
    >>> explorer.close()
    """
    if h not in H_CHOICES:
        raise ValueError(
            f"h must be one of the slider's steps (1, 2 or 5 times a power of ten from 1e-12 "
            f"to 1, see H_CHOICES); got {h!r}."
        )
    shape = example_problem().Q.shape
    controls = {
        "h": widgets.SelectionSlider(
            options=[(format_step(step), step) for step in H_CHOICES],
            value=h,
            description="step h",
            continuous_update=False,
            layout={"min_width": "300px", "width": "300px"},
        ),
        "array": widgets.ToggleButtons(
            options=list(ARRAYS),
            value=array,
            description="input",
            style={"button_width": "2.5em", "description_width": "initial"},
            layout={"width": "12em", "min_width": "12em"},  # Q K V side by side
        ),
        # the controls share one row: without a fixed width a track shrinks away
        "row": int_slider(row, 0, shape[0] - 1, "row", "190px"),
        "col": int_slider(col, 0, shape[1] - 1, "column", "190px"),
        "causal": widgets.Checkbox(
            value=causal, description="causal mask", indent=False, layout={"width": "auto"}
        ),
    }
    return EXPLORER.explorer(controls, style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="backward step", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
