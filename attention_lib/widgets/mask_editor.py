"""Explorer for notebook 03: build a mask, watch the attention weights (chapter 19.2).

Controls: the sequence length ``T`` (main control), causal on/off, each
example's number of real tokens (a batch of a few examples, padded to ``T``),
and single cells of a ``(T, T)`` grid that the student blocks by clicking.
The mask used is the logical and of the three: causal (``(T, T)``), padding
(``(B, 1, T)``: the same blocked keys for every query of an example) and the
clicked grid (``(T, T)``, shared by the batch). Nothing can un-block a cell
that another mask blocks; that is what "combine with logical and" means, and
the grid shows it: cells the causal mask or the padding blocks are drawn
hatched and labelled, and a click on one says so instead of changing anything.

Each example's number of real tokens is what the student asked for, kept
while ``T`` is too short to show it (the slider shows it clipped) and given
back when ``T`` grows again; a slider at its right end asks for no padding.

:func:`update` is pure (NumPy only); :func:`draw` uses :mod:`attention_lib.plots`,
and :func:`mask_editor_explorer` wires both to ipywidgets through the shared shell.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
import traitlets
from matplotlib import transforms as mtransforms

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
    "blocked_click_note",
    "draw",
    "example_inputs",
    "mask_editor_explorer",
    "mask_reason",
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
    requested: tuple  #: real tokens per example as asked (None: no padding), unclipped
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


def _requested_lengths(lengths):
    """``lengths`` as a tuple of whole numbers or None, or a clear error naming the argument."""
    requested = []
    for n in lengths:
        if n is not None and (isinstance(n, bool) or int(n) != n):
            raise ValueError(
                f"lengths must hold whole numbers of real tokens, or None for no padding; "
                f"got {tuple(lengths)!r}."
            )
        requested.append(None if n is None else int(n))
    if not requested:
        raise ValueError("lengths must name at least one example.")
    return tuple(requested)


def _clipped_lengths(requested, length):
    """Real tokens shown at sequence length ``length``: None means all of them."""
    return tuple(length if n is None else min(max(n, 0), length) for n in requested)


def update(length, causal=True, lengths=None, blocked=(), *, seed=0):
    """Mask, masked scores, weights, row sums and outputs for the editor's controls.

    Parameters
    ----------
    length : int
        Sequence length ``T`` (at least 1).
    causal : bool, default True
        Combine a causal mask (query ``t`` reads keys ``<= t``).
    lengths : sequence of int or None, optional
        Real tokens per example; the rest is padding. None means no padding
        (all ``T`` tokens real, whatever ``T``). Numbers are clipped to
        ``0 ... length`` for this state only: the editor keeps what was asked
        for, so an example of 3 real tokens has them back when ``T`` shrinks
        to 1 and grows again. Defaults to no padding in any of the ``BATCH``
        examples.
    blocked : iterable of (int, int)
        ``(query, key)`` cells blocked by hand, for every example. Cells outside
        the ``T x T`` grid are ignored.
    seed : int
        Seed for the random ``Q, K, V`` (see :func:`example_inputs`).

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import update
    >>> state = update(3, causal=True, lengths=[None, 2])
    >>> state.mask[1].astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    >>> state.row_sums
    array([[1., 1., 1.],
           [1., 1., 1.]])
    >>> update(1, lengths=[None, 2]).lengths, update(4, lengths=[None, 2]).lengths
    ((1, 1), (4, 2))
    """
    if isinstance(length, bool) or int(length) != length or length < 1:
        raise ValueError(f"length must be a whole number >= 1; got {length!r}.")
    length = int(length)
    requested = _requested_lengths([None] * BATCH if lengths is None else lengths)
    lengths = _clipped_lengths(requested, length)
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
        requested=requested,
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


def mask_reason(query, key, causal, lengths):
    """Why the causal or padding mask blocks cell ``(query, key)`` in every example; "" if not.

    The grid of cells is shared by the batch, so a key that is padding in
    only some examples is not blocked for all: a click there still blocks
    it in the others. ``lengths`` are the real tokens shown (clipped to ``T``).

    Examples
    --------
    >>> mask_reason(0, 3, True, (5, 3))
    'the causal mask'
    >>> mask_reason(4, 3, True, (3, 2))
    'padding (key 3 is padding in every example)'
    >>> mask_reason(4, 3, True, (5, 3))
    ''
    """
    reasons = []
    if causal and key > query:
        reasons.append("the causal mask")
    if all(key >= n for n in lengths):
        reasons.append(f"padding (key {key} is padding in every example)")
    return " and ".join(reasons)


def blocked_click_note(state, cell):
    """What the readout says when a click hits a cell that a mask already blocks.

    Examples
    --------
    >>> blocked_click_note(update(4, lengths=[4, 2]), (1, 3))
    'query 1, key 3 is already blocked by the causal mask: the click changes nothing.'
    """
    query, key = cell
    reason = mask_reason(query, key, state.causal, state.lengths)
    if not reason:
        raise ValueError(f"cell {cell!r} is not blocked by the causal or the padding mask.")
    return f"query {query}, key {key} is already blocked by {reason}: the click changes nothing."


#: Width of the live figure in CSS pixels: the notebook column (about 1484 at
#: 1920 x 1080) less the grid of cells beside it, so both fit on one row unscaled.
DISPLAY_WIDTH_PX = 1100
#: Figure size of the live explorer and of its static first-state figure (inches):
#: a 9-point cell number is 17 CSS px at 1100 px.
FIGSIZE = (8.0, 3.85)
#: The same for the board style: its 18-point numbers are 21 CSS px.
BOARD_FIGSIZE = (13.0, 5.9)
#: Longest sequence whose weights are written in the cells (longer: too small to read,
#: and each number is a text to draw on every change).
ANNOTATE_UP_TO = 5
#: Space right of each heatmap for its row sums, in inches at the default font size.
_ROW_SUM_INCHES = 0.5
#: Space for the colour bar at the right, in inches at the default font size.
_COLORBAR_INCHES = 0.78
# Tag of the row-sum texts, so refresh finds them (see plots.artist).
_ROW_SUM_GID = "row-sum"


def _row_sum_text(value):
    return f"Σ={value:.3g}"  # 1 or 0: a row sum is never anything else


def draw(fig, state):
    """One weight heatmap per example, blocked cells grey and hatched, each row's sum beside it.

    Examples
    --------
    >>> from attention_lib import plots
    >>> from attention_lib.widgets.mask_editor import draw, update
    >>> fig, _ = plots.new_figure(0, pyplot=False)
    >>> axes = draw(fig, update(3, lengths=[3, 1]))
    >>> [t.get_text() for t in axes[1].get_yticklabels()]
    ['q0', 'q1', 'q2']
    >>> [t.get_text() for t in axes[1].texts if t.get_gid() == "row-sum"]
    ['Σ=1', 'Σ=1', 'Σ=1']
    """
    batch = state.weights.shape[0]
    # Fixed margins instead of constrained layout (the layout pass costs about a third
    # of a redraw); the colour bar gets its own narrow axes so both heatmaps match.
    fig.set_layout_engine("none")
    # Key labels stand upright from T = 4 on: there "k2·pad" in board type is wider than
    # its column. T alone decides (the padding marks come and go without a redraw).
    upright = state.length >= 4
    room = margins(
        fig,
        left=0.78,
        right=_ROW_SUM_INCHES + _COLORBAR_INCHES,
        bottom=0.95 if upright else 0.62,
        top=0.6,
        gap=_ROW_SUM_INCHES + 0.62,
        columns=batch,
    )
    grid = fig.add_gridspec(1, batch, **room)
    axes = [fig.add_subplot(grid[0, b]) for b in range(batch)]
    style = plots.STYLES[plots.figure_style(fig)]
    image = None
    for b, ax in enumerate(axes):
        ax.legacy_heatmap = plots.attention_heatmap(  # LEGACY: phase 2
            state.weights[b],
            ax=ax,
            mask=state.mask[b],
            query_labels=[f"q{t}" for t in range(state.length)],
            key_labels=_key_labels(state, b),
            annotate=state.length <= ANNOTATE_UP_TO,
            colorbar=False,
            title=_title(state, b),
        )
        image = ax.legacy_heatmap.image
        ax.tick_params(axis="x", labelrotation=90 if upright else 0)
        # The row sums sit just right of the heatmap: x in axes units, y in rows.
        transform = mtransforms.offset_copy(ax.get_yaxis_transform(), fig=fig, x=4, units="points")
        for t in range(state.length):
            ax.text(
                1.0,
                t,
                "",
                transform=transform,
                ha="left",
                va="center",
                fontsize=style["tick"],
                gid=_ROW_SUM_GID,
            )
        _show_row_sums(ax, state, b)
    # The colour bar right of the last example's row sums, in the same scaled inches.
    inch = (style["label"] / plots.STYLES["default"]["label"]) / fig.get_size_inches()[0]
    bar_axes = fig.add_axes(
        (
            room["right"] + _ROW_SUM_INCHES * inch,
            room["bottom"],
            0.14 * inch,
            room["top"] - room["bottom"],
        )
    )
    bar = fig.colorbar(image, cax=bar_axes)
    bar.set_label("weight")
    return axes


def _show_row_sums(ax, state, b):
    """Write example ``b``'s row sums into its row-sum texts; return them."""
    texts = plots.artist(ax, _ROW_SUM_GID, count=state.length)
    for text, value, empty in zip(texts, state.row_sums[b], state.empty_rows[b], strict=True):
        text.set_text(_row_sum_text(value))
        # An empty row is the lesson's surprise: its 0 stands out.
        text.set_color(plots.COLORS["query"] if empty else "black")
        text.set_fontweight("bold" if empty else "normal")
    return texts


def _key_labels(state, b):
    return [f"k{t}" + ("·pad" if t >= state.lengths[b] else "") for t in range(state.length)]


def _title(state, b):
    return f"example {b}\n{state.lengths[b]} real, {state.length - state.lengths[b]} padding"


def static_key(state):
    """What the parts of the figure that :func:`refresh` does not move depend on: ``T``.

    ``T`` fixes the heatmaps' shape, their row labels and whether the cells
    carry numbers. Everything else (weights, mask, key labels, titles, row
    sums) :func:`refresh` moves, so emptying a row costs a blit, not a redraw.

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import static_key, update
    >>> static_key(update(3, lengths=[3, 0])) == static_key(update(3, lengths=[3, 1]))
    True
    >>> static_key(update(3)) == static_key(update(4))
    False
    """
    return state.length


def refresh(fig, state):
    """Move what :func:`draw` made to show ``state``; return the moved artists, for blitting.

    For a ``state`` with the same :func:`static_key` as the drawn one (the
    shell sees to that): new weights and mask through
    :func:`attention_lib.plots.update_attention_heatmap`, new padding marks
    in the key labels, new titles and row sums. Nothing is created, and the
    same artists come back every time: per example the image, the blocked
    cells and the numbers (stacked as a fresh drawing stacks them), then the
    key axis, the title and the row sums, which overlap nothing.

    Examples
    --------
    >>> from attention_lib import plots
    >>> from attention_lib.widgets.mask_editor import draw, refresh, update
    >>> fig, _ = plots.new_figure(0, pyplot=False)
    >>> first = draw(fig, update(3))
    >>> moved = refresh(fig, update(3, lengths=[3, 0]))
    >>> fig.axes[1] is first[1], fig.axes[1].get_title()
    (True, 'example 1\\n0 real, 3 padding')
    >>> [t.get_text() for t in fig.axes[1].get_xticklabels()]
    ['k0·pad', 'k1·pad', 'k2·pad']
    >>> [t.get_text() for t in fig.axes[1].texts if t.get_gid() == "row-sum"]
    ['Σ=0', 'Σ=0', 'Σ=0']
    """
    moved = []
    for b, ax in enumerate(fig.axes[: len(state.lengths)]):
        plots.update_attention_heatmap(ax.legacy_heatmap, state.weights[b], mask=state.mask[b])
        moved += [ax.legacy_heatmap.image, ax.legacy_heatmap.masked, *ax.legacy_heatmap.texts]
        # Only the texts change: the tick positions, sizes and rotation stay as drawn.
        ax.xaxis.set_ticklabels(_key_labels(state, b))
        ax.title.set_text(_title(state, b))
        moved += [ax.xaxis, ax.title, *_show_row_sums(ax, state, b)]
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

    An example whose real tokens are clipped by a short ``T`` says how many it
    gets back when ``T`` grows.

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import readout, update
    >>> readout({}, update(3, lengths=[3, 0])).split(" · ")[-1]
    '<b>3</b> empty row(s) (weights and output 0)'
    >>> readout({}, update(1, lengths=[None, 3])).split(" · ")[2]
    'real tokens 1, 1 (example 1 gets its 3 back when T ≥ 3)'
    """
    empty = int(state.empty_rows.sum())
    waiting = [
        f"example {b} gets its {n} back when T ≥ {n}"
        for b, n in enumerate(state.requested)
        if n is not None and n > state.length
    ]
    kept = f" ({'; '.join(waiting)})" if waiting else ""
    return (
        f"<b>T = {state.length}</b> · causal {'on' if state.causal else 'off'} · real tokens "
        f"{', '.join(map(str, state.lengths))}{kept} · "
        f"{len(state.blocked)} cell(s) blocked by hand · "
        f"<b>{empty}</b> empty row(s) (weights and output 0)"
    )


class _TupleOfChildren:
    """Base of a control whose tuple ``value`` mirrors child widgets (a grid, sliders).

    A child's change sets ``value`` (through ``_on_child``) and a new ``value``
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

    def _on_value(self, change):
        if not self._syncing:
            with self._quietly():
                self._show(change["new"])

    def close(self):
        for child in self.children:
            for grandchild in getattr(child, "children", ()):
                grandchild.close()  # the cells and labels of the grid
            child.close()
        super().close()


#: Width of the grid with its key, in CSS pixels: room for 8 x 8 cells, the same for
#: every T so the figure beside it does not move when T changes.
_GRID_WIDTH = "320px"
#: What a cell of the grid shows: symbol (its accessible name comes from the
#: tooltip, see ``_frontend.js``) and CSS class (``_frontend.css``).
_CELL_LOOKS = {
    "open": ("·", ""),
    "hand": ("✕", ""),
    "causal": ("◥", "attn-cell-masked"),
    "padding": ("▒", "attn-cell-masked"),
}
_MASKED_CLASS = "attn-cell-masked"
_PARTLY_PADDED_CLASS = "attn-cell-partly-padded"
_CELL_CLASSES = (_MASKED_CLASS, _PARTLY_PADDED_CLASS)
#: The grid's key, under it.
_GRID_LEGEND = (
    '<div style="line-height: 1.4">✕ blocked by you<br>◥ causal mask, ▒ padding in every '
    "example: hatched, a click there changes nothing<br>tinted: padding in one example</div>"
)


class CellGrid(_TupleOfChildren, widgets.VBox):
    """A T x T grid of toggle buttons, one per (query, key) cell; ``value`` = blocked cells.

    ``value`` is a sorted tuple of ``(query, key)`` pairs blocked by hand, so
    it can be an explorer control like any slider. The buttons are real
    ``<button>``s: Tab reaches them and Space toggles. Each carries a label
    (its tooltip, which the front end makes its ``aria-label``) such as
    "query 2, key 4: blocked by the causal mask".

    :meth:`show_masks` marks the cells that the causal mask or the padding
    blocks in every example: hatched, with their own symbol. A click on such
    a cell changes nothing (the button springs back) and calls
    ``on_blocked_click(cell)``, so the explorer can say why. A cell blocked
    by hand can always be freed.

    The buttons of the longest grid are made once; :meth:`resize` shows the
    first ``length x length`` of them and drops blocked cells outside, so a
    new ``T`` sends a few layout changes to the page, not a new grid. A key
    to the symbols sits under the cells (:attr:`cells`, a ``GridBox``).

    Examples
    --------
    >>> grid = CellGrid(3)
    >>> grid.buttons[2, 0].value = True
    >>> grid.value
    ((2, 0),)
    >>> grid.show_masks(causal=True, lengths=(3, 3))
    >>> grid.buttons[0, 2].tooltip
    'query 0, key 2: blocked by the causal mask'
    >>> grid.buttons[0, 2].value = True  # a click on it
    >>> grid.buttons[0, 2].value, grid.value
    (False, ((2, 0),))
    >>> grid.resize(2)
    >>> grid.value, len(grid.buttons)
    ((), 4)
    """

    value = traitlets.Tuple()

    def __init__(self, length, value=(), *, causal=False, lengths=(), on_blocked_click=None):
        self._shown = widgets.Layout(width="34px", height="32px")  # tall: room beside the figure
        self._hidden = widgets.Layout(display="none")
        self._all = {}
        key_labels = [widgets.Label(f"k{k}") for k in range(MAX_LENGTH)]
        children = [widgets.Label(""), *key_labels]
        query_labels = []
        for q in range(MAX_LENGTH):
            query_labels.append(widgets.Label(f"q{q}"))
            children.append(query_labels[-1])
            for k in range(MAX_LENGTH):
                button = widgets.ToggleButton(False, layout=self._hidden)
                button.observe(self._on_button, names="value")
                self._all[q, k] = button
                children.append(button)
        self.cells = widgets.GridBox(children, layout=widgets.Layout(grid_gap="2px"))
        legend = widgets.HTML(_GRID_LEGEND)
        self._labels = {"k": key_labels, "q": query_labels}
        super().__init__([self.cells, legend], layout=widgets.Layout(width=_GRID_WIDTH))
        self.add_class("attn-cell-grid")
        self.on_blocked_click = on_blocked_click
        self._causal, self._lengths = bool(causal), tuple(lengths)
        self.length = 0
        self.buttons = {}
        self.observe(self._on_value, names="value")
        self.resize(length, value)

    def resize(self, length, value=None):
        """Show a ``length x length`` grid, keeping the blocked cells inside it."""
        length = int(length)
        value = self.value if value is None else value
        kept = tuple(sorted((int(q), int(k)) for q, k in value if q < length and k < length))
        with self._quietly():  # the buttons already show it
            for (q, k), button in self._all.items():
                inside = q < length and k < length
                button.value = (q, k) in kept
                button.layout = self._shown if inside else self._hidden
            for labels in self._labels.values():
                for i, label in enumerate(labels):
                    label.layout.display = None if i < length else "none"
            self.cells.layout.grid_template_columns = f"28px repeat({length}, 34px)"
            self.length = length
            self.buttons = {cell: b for cell, b in self._all.items() if max(cell) < length}
            self.value = kept
        self._restyle()

    def show_masks(self, causal, lengths):
        """Mark the cells blocked by the causal mask (if ``causal``) or by padding in every example.

        ``lengths`` are the real tokens shown per example (clipped to ``T``).
        """
        self._causal, self._lengths = bool(causal), tuple(lengths)
        self._restyle()

    def _reason(self, q, k):
        return mask_reason(q, k, self._causal, self._lengths) if self._lengths else ""

    def _restyle(self):
        # Hidden cells too: a page that lists every button finds each one named, and
        # only the looks that changed reach the page.
        for (q, k), button in self._all.items():
            reason = self._reason(q, k)
            padded = [b for b, n in enumerate(self._lengths) if k >= n]
            if button.value:
                look = "hand"
                label = "blocked by hand" + (f" and by {reason}" if reason else "")
                label += " (click to allow)"
            elif reason:
                look = "causal" if reason.startswith("the causal") else "padding"
                label = f"blocked by {reason}"
            else:
                look, label = "open", "open (click to block)"
                if padded:
                    where = ", ".join(map(str, padded))
                    label = f"open; key {k} is padding in example {where} (click to block)"
            symbol, css = _CELL_LOOKS[look]
            button.description = symbol
            button.tooltip = f"query {q}, key {k}: {label}"
            wanted = {css} if css else set()
            if padded and not reason:
                wanted.add(_PARTLY_PADDED_CLASS)
            if reason:
                wanted.add(_MASKED_CLASS)
            classes = tuple(c for c in button._dom_classes if c not in _CELL_CLASSES)
            new = classes + tuple(sorted(wanted))
            if new != tuple(button._dom_classes):
                button._dom_classes = new

    def _on_button(self, change):
        if self._syncing:
            return
        button = change["owner"]
        cell = next(c for c, b in self._all.items() if b is button)
        if change["new"] and self._reason(*cell):
            # A mask blocks it already: nothing to block by hand. Spring back and say why.
            with self._quietly():
                button.value = False
            if self.on_blocked_click is not None:
                self.on_blocked_click(cell)
            return
        with self._quietly():  # the buttons already show it; the explorer still hears it
            self.value = tuple(sorted(c for c, b in self.buttons.items() if b.value))
        self._restyle()

    def _show(self, value):
        chosen = set(value)
        for cell, button in self.buttons.items():
            button.value = cell in chosen
        self._restyle()


class RealTokenSliders(_TupleOfChildren, widgets.HBox):
    """One slider per example for its number of real tokens; ``value`` = what was asked for.

    One control with a tuple ``value`` (as :class:`CellGrid`), so the
    explorer's controls are exactly :func:`update`'s keywords. ``value``
    holds each example's requested real tokens, None for "no padding"
    (what a slider moved to its right end asks for). :meth:`resize` follows
    a new length ``T``: the sliders show the requests clipped to it, and the
    requests stay, so growing ``T`` again gives them back.

    Examples
    --------
    >>> sliders = RealTokenSliders((None, 3), length=5)
    >>> [s.value for s in sliders.children]
    [5, 3]
    >>> sliders.resize(1)  # shown clipped...
    >>> [s.value for s in sliders.children], sliders.value
    ([1, 1], (None, 3))
    >>> sliders.resize(6)  # ...and given back
    >>> [s.value for s in sliders.children]
    [6, 3]
    >>> sliders.children[1].value = 2  # as a user drags it
    >>> sliders.value
    (None, 2)
    """

    value = traitlets.Tuple()

    def __init__(self, lengths, length, **kwargs):
        requested = _requested_lengths(lengths)
        sliders = [
            widgets.IntSlider(
                shown,
                0,
                length,
                description=f"real tokens in example {b}",
                continuous_update=False,
                style={"description_width": "initial"},
                layout=widgets.Layout(
                    width="400px"
                ),  # the track stays usable with board-sized labels
            )
            for b, shown in enumerate(_clipped_lengths(requested, length))
        ]
        super().__init__(sliders, **kwargs)
        self.layout.flex_flow = "row wrap"
        self.value = requested
        self.observe(self._on_value, names="value")
        for slider in sliders:
            slider.observe(self._on_slider, names="value")

    def _on_slider(self, change):
        if self._syncing:
            return
        slider = change["owner"]
        asked = None if slider.value == slider.max else slider.value
        self.value = tuple(
            asked if other is slider else n
            for other, n in zip(self.children, self.value, strict=True)
        )

    def _show(self, value):
        length = self.children[0].max
        for slider, n in zip(self.children, _clipped_lengths(value, length), strict=True):
            slider.value = n

    def resize(self, length):
        """New maximum ``length``; the sliders show the requests clipped to it."""
        with self._quietly():  # a lower maximum clips a slider: not a change of request
            for slider, n in zip(self.children, _clipped_lengths(self.value, length), strict=True):
                if length > slider.max:
                    slider.max = length
                    slider.value = n
                else:
                    slider.value = n
                    slider.max = length


def mask_editor_explorer(length=5, causal=True, lengths=(None, 3), blocked=(), *, style=None):
    """The live mask editor for a batch of two examples.

    Controls, in order: the length ``T`` (main control), causal on/off, the
    real tokens of each example (:class:`RealTokenSliders`, whose maximum
    follows ``T``; None = no padding) and a :class:`CellGrid` to block single
    cells by hand, shown beside the heatmaps it changes: one control per
    keyword of :func:`update`. A click on a cell that the causal mask or the
    padding already blocks changes nothing, and the readout says why.

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
    requested = _requested_lengths(lengths)
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
        "lengths": RealTokenSliders(requested, length),
        "blocked": CellGrid(
            length, blocked, causal=causal, lengths=_clipped_lengths(requested, length)
        ),
    }
    grid = controls["blocked"]

    def show_masks(_change=None):
        shown = _clipped_lengths(controls["lengths"].value, controls["length"].value)
        grid.show_masks(controls["causal"].value, shown)

    def follow_length(change):
        # The real-token sliders and the grid follow T. The shell runs this inside the
        # batch of the T change: one redraw in all.
        controls["lengths"].resize(change["new"])
        grid.resize(change["new"])
        show_masks()

    explorer = EXPLORER.explorer(
        controls, follow={"length": follow_length}, style=style, beside_figure=("blocked",)
    )

    def say_blocked(cell):
        note = blocked_click_note(explorer.state, cell)
        explorer.readout.value = f"{readout(explorer.values, explorer.state)}<br>{note}"

    grid.on_blocked_click = say_blocked
    controls["causal"].observe(show_masks, names="value")
    controls["lengths"].observe(show_masks, names="value")
    return explorer


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
    display_width_px=DISPLAY_WIDTH_PX,
    legacy=True,  # issue 22: not yet on the scene contract
)
