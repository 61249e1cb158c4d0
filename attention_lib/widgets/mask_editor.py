"""Explorer for notebook 03: build a mask, watch the attention weights (chapter 19.2).

Controls: the sequence length ``T`` (main control), causal on/off, each
example's number of real tokens (a batch of a few examples, padded to ``T``),
and single cells of a ``(T, T)`` grid that the student blocks by clicking.
The mask used is the logical and of the three: causal (``(T, T)``), padding
(``(B, 1, T)``: the same blocked keys for every query of an example) and the
clicked grid (``(T, T)``, shared by the batch). Nothing can un-block a cell
that another mask blocks; that is what "combine with logical and" means.

:func:`update` is pure (NumPy only); :func:`draw` uses :mod:`attention_lib.plots`,
and :func:`mask_editor_explorer` wires both to ipywidgets through the shared shell.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
import traitlets

from .. import plots
from ..attention import attention_forward, attention_scores
from ..masks import causal_mask, combine_masks, padding_mask, valid_from_lengths
from ._layout import margins
from ._shell import ExplorerSpec, html_table

__all__ = [
    "EXPLORER",
    "CellGrid",
    "MaskEditorState",
    "RealTokenSliders",
    "draw",
    "example_inputs",
    "mask_editor_explorer",
    "readout",
    "refresh",
    "static_key",
    "table",
    "update",
]

#: Longest sequence the editor offers: a T x T grid of buttons stays clickable.
MAX_LENGTH = 8
#: Examples in the batch.
BATCH = 2
D_K = 4
D_V = 3


class MaskEditorState(NamedTuple):
    """What the mask editor shows for one setting of its controls (B examples, T tokens)."""

    length: int
    causal: bool
    lengths: tuple  #: real tokens per example, clipped to 0 ... length
    blocked: frozenset  #: (query, key) cells blocked by hand, inside the T x T grid
    causal_part: np.ndarray | None  #: (T, T) or None when causal is off
    padding_part: np.ndarray  #: (B, 1, T)
    cell_part: np.ndarray  #: (T, T), False at the blocked cells
    mask: np.ndarray  #: (B, T, T) the combined mask, True = may read
    scores: np.ndarray  #: (B, T, T) scaled scores before masking
    masked_scores: np.ndarray  #: (B, T, T) scores with -inf where the mask is False
    weights: np.ndarray  #: (B, T, T) softmax of the masked scores
    row_sums: np.ndarray  #: (B, T) 1 for a row with a readable key, 0 for an empty row
    empty_rows: np.ndarray  #: (B, T) True where the query may read no key at all
    output: np.ndarray  #: (B, T, d_v)


def example_inputs(length, *, batch=BATCH, d_k=D_K, d_v=D_V, seed=0):
    """Seeded ``Q, K, V`` of shapes ``(batch, length, d)``.

    They are the first ``length`` rows of fixed ``MAX_LENGTH``-long arrays (or
    longer, if ``length`` exceeds it), so changing ``T`` does not reshuffle
    the tokens that stay.

    Examples
    --------
    >>> Q3, _, _ = example_inputs(3)
    >>> Q5, _, _ = example_inputs(5)
    >>> Q3.shape, bool(np.array_equal(Q3, Q5[:, :3]))
    ((2, 3, 4), True)
    """
    rows = max(int(length), MAX_LENGTH)
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((batch, rows, d_k))
    K = rng.standard_normal((batch, rows, d_k))
    V = rng.standard_normal((batch, rows, d_v))
    return Q[:, :length], K[:, :length], V[:, :length]


def update(length, causal=True, lengths=None, blocked=(), *, seed=0):
    """Mask, masked scores, weights, row sums and outputs for the editor's controls.

    Parameters
    ----------
    length : int
        Sequence length ``T`` (at least 1).
    causal : bool, default True
        Combine a causal mask (query ``t`` reads keys ``<= t``).
    lengths : sequence of int, optional
        Real tokens per example; the rest is padding. Values are clipped to
        ``0 ... length`` (a slider may still hold an old, larger value while
        ``T`` shrinks). Defaults to ``length`` for every example of the batch.
    blocked : iterable of (int, int)
        ``(query, key)`` cells blocked by hand, for every example. Cells outside
        the ``T x T`` grid are ignored.
    seed : int
        Seed for the random ``Q, K, V`` (see :func:`example_inputs`).

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import update
    >>> state = update(3, causal=True, lengths=[3, 2])
    >>> state.mask[1].astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    >>> state.row_sums
    array([[1., 1., 1.],
           [1., 1., 1.]])
    """
    if isinstance(length, bool) or int(length) != length or length < 1:
        raise ValueError(f"length must be a whole number >= 1; got {length!r}.")
    length = int(length)
    if lengths is None:
        lengths = [length] * BATCH
    lengths = tuple(int(min(max(n, 0), length)) for n in lengths)
    if not lengths:
        raise ValueError("lengths must name at least one example.")
    blocked = frozenset((int(q), int(k)) for q, k in blocked if 0 <= q < length and 0 <= k < length)
    Q, K, V = example_inputs(length, batch=len(lengths), seed=seed)

    causal_part = causal_mask(length) if causal else None
    padding_part = padding_mask(valid_from_lengths(np.array(lengths), length))
    cell_part = np.ones((length, length), dtype=bool)
    for q, k in blocked:
        cell_part[q, k] = False
    mask = np.broadcast_to(
        combine_masks(causal_part, padding_part, cell_part), (len(lengths), length, length)
    ).copy()

    scores = attention_scores(Q, K)
    masked_scores = np.where(mask, scores, -np.inf)
    output, cache = attention_forward(Q, K, V, mask=mask, return_cache=True)
    return MaskEditorState(
        length=length,
        causal=bool(causal),
        lengths=lengths,
        blocked=blocked,
        causal_part=causal_part,
        padding_part=padding_part,
        cell_part=cell_part,
        mask=mask,
        scores=scores,
        masked_scores=masked_scores,
        weights=cache.weights,
        row_sums=cache.weights.sum(axis=-1),
        empty_rows=~mask.any(axis=-1),
        output=output,
    )


#: Figure size of the live explorer and of its static first-state figure (inches).
FIGSIZE = (9.0, 4.4)
#: The same for the board style (large fonts need a larger figure).
BOARD_FIGSIZE = (16.0, 8.5)
#: Space for the colour bar at the right, in inches at the default font size.
_COLORBAR_INCHES = 0.75


def _row_labels(state, b):
    return [f"q{t}  Σ={state.row_sums[b, t]:.2f}" for t in range(state.length)]


def draw(fig, state):
    """One weight heatmap per example, blocked cells grey and hatched, row sums in the labels.

    Examples
    --------
    >>> from attention_lib import plots
    >>> from attention_lib.widgets.mask_editor import draw, update
    >>> fig, _ = plots.new_figure(0, pyplot=False)
    >>> axes = draw(fig, update(3, lengths=[3, 1]))
    >>> [t.get_text() for t in axes[1].get_yticklabels()]
    ['q0  Σ=1.00', 'q1  Σ=1.00', 'q2  Σ=1.00']
    """
    batch = state.weights.shape[0]
    # Fixed margins instead of constrained layout (the layout pass costs about a third
    # of a redraw); the colour bar gets its own narrow axes so both heatmaps match.
    fig.set_layout_engine("none")
    room = margins(
        fig, left=1.15, right=_COLORBAR_INCHES, bottom=0.85, top=0.6, gap=1.2, columns=batch
    )
    grid = fig.add_gridspec(1, batch, **room)
    axes = [fig.add_subplot(grid[0, b]) for b in range(batch)]
    annotate = state.length <= 6  # at 7 and 8 the numbers no longer fit the cells
    image = None
    for b, ax in enumerate(axes):
        image = plots.attention_heatmap(
            state.weights[b],
            ax=ax,
            mask=state.mask[b],
            query_labels=_row_labels(state, b),
            key_labels=_key_labels(state, b),
            annotate=annotate,
            colorbar=False,
            title=_title(state, b),
        )
        ax.tick_params(axis="x", labelrotation=90 if state.length > 4 else 0)
    right = room["right"]
    bar_axes = fig.add_axes(
        (
            right + 0.2 * (1 - right),
            room["bottom"],
            0.15 * (1 - right),
            room["top"] - room["bottom"],
        )
    )
    bar = fig.colorbar(image, cax=bar_axes)
    bar.set_label("weight")
    return axes


def _key_labels(state, b):
    return [f"k{t}" + ("·pad" if t >= state.lengths[b] else "") for t in range(state.length)]


def _title(state, b):
    return f"example {b}\n{state.lengths[b]} real, {state.length - state.lengths[b]} padding"


def static_key(state):
    """What the parts of the figure that :func:`refresh` does not move depend on.

    ``T`` (the shape of the heatmaps) and the row labels with their sums. A
    row sum is 1 or 0, so the labels change only when a row loses its last
    readable key or gets one back; drawing the figure again then is cheaper
    over a session than blitting both y axes on every change (that would take
    a change from about 0.3x to 0.4x the naive redraw in the benchmark).

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import static_key, update
    >>> static_key(update(3, lengths=[3, 2])) == static_key(update(3, lengths=[3, 1]))
    True
    >>> static_key(update(3, lengths=[3, 0])) == static_key(update(3, lengths=[3, 1]))
    False
    """
    return state.length, tuple(tuple(_row_labels(state, b)) for b in range(len(state.lengths)))


def refresh(fig, state):
    """Move what :func:`draw` made to show ``state``; return the moved artists, for blitting.

    For a ``state`` with the same :func:`static_key` as the drawn one (the
    shell sees to that): new weights and mask through
    :func:`attention_lib.plots.update_attention_heatmap`, new padding marks
    in the key labels, new titles. Nothing is created, and the same artists
    come back every time: per example the image, the blocked cells and the
    numbers (stacked as a fresh drawing stacks them), then the key axis and
    the title, which overlap nothing.

    Examples
    --------
    >>> from attention_lib import plots
    >>> from attention_lib.widgets.mask_editor import draw, refresh, update
    >>> fig, _ = plots.new_figure(0, pyplot=False)
    >>> first = draw(fig, update(3))
    >>> moved = refresh(fig, update(3, lengths=[3, 1]))
    >>> fig.axes[1] is first[1], fig.axes[1].get_title()
    (True, 'example 1\\n1 real, 2 padding')
    >>> [t.get_text() for t in fig.axes[1].get_xticklabels()]
    ['k0', 'k1·pad', 'k2·pad']
    """
    moved = []
    for b, ax in enumerate(fig.axes[: len(state.lengths)]):
        moved += plots.update_attention_heatmap(ax, state.weights[b], mask=state.mask[b])
        # Only the texts change: the tick positions, sizes and rotation stay as drawn.
        ax.xaxis.set_ticklabels(_key_labels(state, b))
        ax.title.set_text(_title(state, b))
        moved += [ax.xaxis, ax.title]
    return moved


def table(state):
    """The weights and row sums of every example as accessible HTML tables.

    Blocked cells read "blocked", so a screen reader tells them from a weight of 0.

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import table, update
    >>> "blocked" in table(update(2, causal=True))
    True
    """
    parts = []
    for b in range(state.weights.shape[0]):
        rows = []
        for t in range(state.length):
            cells = [
                f"{state.weights[b, t, j]:.3f}" if state.mask[b, t, j] else "blocked"
                for j in range(state.length)
            ]
            rows.append([f"query {t}", *cells, f"{state.row_sums[b, t]:.3f}"])
        header = ["", *(f"key {j}" for j in range(state.length)), "row sum"]
        caption = (
            f"example {b}: {state.lengths[b]} real tokens, causal {'on' if state.causal else 'off'}"
        )
        parts.append(html_table(rows, header, caption=caption))
    return "".join(parts)


def readout(values, state):
    """One line: the controls' values and how many rows were left with no key to read.

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import readout, update
    >>> readout({}, update(3, lengths=[3, 0])).split(" · ")[-1]
    '<b>3</b> empty row(s) (weights and output 0)'
    """
    empty = int(state.empty_rows.sum())
    return (
        f"<b>T = {state.length}</b> · causal {'on' if state.causal else 'off'} · real tokens "
        f"{', '.join(map(str, state.lengths))} · {len(state.blocked)} cell(s) blocked by hand · "
        f"<b>{empty}</b> empty row(s) (weights and output 0)"
    )


class _TupleOfChildren:
    """Base of a control whose tuple ``value`` mirrors child widgets (a grid, sliders).

    A child's change sets ``value`` (through ``_read``) and a new ``value``
    sets the children (through ``_show``); changes made inside
    :meth:`_quietly` do not echo back. The explorer observes ``value`` only.
    """

    _syncing = False

    @contextlib.contextmanager
    def _quietly(self):
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _on_child(self, change):
        if not self._syncing:
            self.value = self._read()

    def _on_value(self, change):
        if not self._syncing:
            with self._quietly():
                self._show(change["new"])

    def close(self):
        for child in self.children:
            child.close()
        super().close()


class CellGrid(_TupleOfChildren, widgets.GridBox):
    """A T x T grid of toggle buttons, one per (query, key) cell; ``value`` = blocked cells.

    ``value`` is a sorted tuple of ``(query, key)`` pairs, so it can be an
    explorer control like any slider. The buttons are real ``<button>``s:
    Tab reaches them and Space toggles. :meth:`resize` rebuilds the grid for a
    new length and drops blocked cells that fall outside it.

    Examples
    --------
    >>> grid = CellGrid(3)
    >>> grid.buttons[2, 0].value = True
    >>> grid.value
    ((2, 0),)
    >>> grid.resize(2)
    >>> grid.value
    ()
    """

    value = traitlets.Tuple()

    def __init__(self, length, value=(), **kwargs):
        super().__init__(**kwargs)
        self.add_class("attn-cell-grid")
        self.buttons = {}
        self.observe(self._on_value, names="value")
        self.resize(length, value)

    def resize(self, length, value=None):
        """Rebuild the buttons for a ``length x length`` grid, keeping the blocked cells inside."""
        length = int(length)
        value = self.value if value is None else value
        kept = tuple(sorted((int(q), int(k)) for q, k in value if q < length and k < length))
        for child in self.children:  # the old buttons and labels
            child.close()
        self.buttons = {}
        children = [widgets.Label("")] + [
            widgets.Label(f"k{k}", layout=widgets.Layout(justify_content="center"))
            for k in range(length)
        ]
        for q in range(length):
            children.append(widgets.Label(f"q{q}"))
            for k in range(length):
                button = widgets.ToggleButton(
                    value=(q, k) in kept, layout=widgets.Layout(width="34px", height="28px")
                )
                self._style(button, q, k)
                button.observe(self._on_child, names="value")
                self.buttons[q, k] = button
                children.append(button)
        self.layout = widgets.Layout(
            grid_template_columns=f"28px repeat({length}, 34px)", grid_gap="2px"
        )
        self.children = children
        with self._quietly():  # the buttons already show it
            self.value = kept

    @staticmethod
    def _style(button, q, k):
        blocked = button.value
        button.description = "✕" if blocked else "·"
        action = "blocked by hand (click to allow)" if blocked else "open (click to block)"
        button.tooltip = f"query {q}, key {k}: {action}"

    def _read(self):
        for (q, k), button in self.buttons.items():
            self._style(button, q, k)
        return tuple(sorted(cell for cell, button in self.buttons.items() if button.value))

    def _show(self, value):
        chosen = set(value)
        for (q, k), button in self.buttons.items():
            button.value = (q, k) in chosen
            self._style(button, q, k)


class RealTokenSliders(_TupleOfChildren, widgets.HBox):
    """One slider per example for its number of real tokens; ``value`` = the tuple of them.

    One control with a tuple ``value`` (as :class:`CellGrid`), so the
    explorer's controls are exactly :func:`update`'s keywords. :meth:`resize`
    follows a new length ``T``.

    Examples
    --------
    >>> sliders = RealTokenSliders((5, 3), length=5)
    >>> sliders.children[1].value = 2
    >>> sliders.value
    (5, 2)
    >>> sliders.resize(old=5, new=4)  # the full example stays full
    >>> sliders.value, sliders.children[0].max
    ((4, 2), 4)
    """

    value = traitlets.Tuple()

    def __init__(self, lengths, length, **kwargs):
        sliders = [
            widgets.IntSlider(
                min(n, length),
                0,
                length,
                description=f"real tokens in example {b}",
                continuous_update=False,
                style={"description_width": "initial"},
                layout=widgets.Layout(width="380px"),
            )
            for b, n in enumerate(lengths)
        ]
        super().__init__(sliders, **kwargs)
        self.layout.flex_flow = "row wrap"
        self.value = self._read()
        self.observe(self._on_value, names="value")
        for slider in sliders:
            slider.observe(self._on_child, names="value")

    def _read(self):
        return tuple(slider.value for slider in self.children)

    def _show(self, value):
        for slider, n in zip(self.children, value, strict=True):
            slider.value = n  # the slider clips it to its range

    def resize(self, old, new):
        """New maximum ``new``; an example that was full (``old`` real tokens) stays full."""
        wanted = tuple(new if n == old else min(n, new) for n in self.value)
        with self._quietly():  # a lower maximum clips a slider: not a change of its own
            for slider in self.children:
                slider.max = new
        self.value = wanted


def mask_editor_explorer(length=5, causal=True, lengths=(5, 3), blocked=(), *, style=None):
    """The live mask editor for a batch of two examples.

    Controls, in order: the length ``T`` (main control), causal on/off, the
    real tokens of each example (:class:`RealTokenSliders`, whose maximum
    follows ``T``) and a :class:`CellGrid` to block single cells by hand: one
    control per keyword of :func:`update`.

    Returns
    -------
    attention_lib.widgets.Explorer

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import mask_editor_explorer
    >>> editor = mask_editor_explorer()
    >>> editor
    <mask editor explorer: run the notebook to interact>
    >>> bool(editor.set(lengths=(5, 0)).empty_rows[1].all())
    True
    """
    if not 1 <= length <= MAX_LENGTH:
        raise ValueError(f"length must lie between 1 and {MAX_LENGTH}; got {length!r}.")
    if len(lengths) != BATCH:
        raise ValueError(f"lengths must give {BATCH} examples; got {lengths!r}.")
    controls = {
        "length": widgets.IntSlider(
            length,
            1,
            MAX_LENGTH,
            description="T",
            continuous_update=False,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="220px"),
        ),
        "causal": widgets.Checkbox(
            bool(causal), description="causal", indent=False, layout=widgets.Layout(width="90px")
        ),
        "lengths": RealTokenSliders(lengths, length),
        "blocked": CellGrid(length, blocked),
    }

    def follow_length(change):
        # The real-token sliders and the grid follow T. The shell runs this inside the
        # batch of the T change: one redraw in all.
        controls["lengths"].resize(change["old"], change["new"])
        controls["blocked"].resize(change["new"])

    return EXPLORER.explorer(controls, follow={"length": follow_length}, style=style)


EXPLORER = ExplorerSpec(
    name="mask_editor",
    title="mask editor",
    factory=mask_editor_explorer,
    update=update,
    draw=draw,
    refresh=refresh,
    table=table,
    readout=readout,
    figsize=FIGSIZE,
    board_figsize=BOARD_FIGSIZE,
    static_key=static_key,
)
