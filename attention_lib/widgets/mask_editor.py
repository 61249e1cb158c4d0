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

What the student asked for is kept while ``T`` is too short to show it and
given back when ``T`` grows again: each example's number of real tokens (the
slider shows it clipped; at its right end it asks for no padding) and the
cells blocked by hand.
"""

from __future__ import annotations

import functools
import numbers
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
import traitlets
from matplotlib.transforms import offset_copy

from .. import plots
from ..attention import attention_forward, attention_scores
from ..masks import causal_mask, combine_masks, padding_mask, valid_from_lengths
from ._shell import ExplorerSpec, html_table, int_slider

__all__ = ["EXPLORER", "MaskEditorState", "mask_editor_explorer", "update"]

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
    padding_part: np.ndarray  #: (B, 1, T)
    mask: np.ndarray  #: (B, T, T) the combined mask, True = may read
    scores: np.ndarray  #: (B, T, T) scaled scores before masking
    masked_scores: np.ndarray  #: (B, T, T) scores with -inf where the mask is False
    weights: np.ndarray  #: (B, T, T) softmax of the masked scores
    row_sums: np.ndarray  #: (B, T) 1 for a row with a readable key, 0 for an empty row
    empty_rows: np.ndarray  #: (B, T) True where the query may read no key at all
    output: np.ndarray  #: (B, T, d_v)


def _example_inputs(length, batch=BATCH, seed=0):
    """Seeded ``Q, K, V``: the first ``length`` rows of fixed longer ones, so a new T keeps them."""
    rows = max(length, MAX_LENGTH)
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((batch, rows, d)) for d in (D_K, D_K, D_V))
    return Q[:, :length], K[:, :length], V[:, :length]


def _is_whole(n):
    return isinstance(n, numbers.Real) and not isinstance(n, bool) and float(n).is_integer()


def _requested_lengths(lengths, count=None):
    """``lengths`` as whole numbers or None (``count`` of them), or an error saying so."""
    requested = tuple(lengths) if isinstance(lengths, tuple | list | np.ndarray) else None
    if (
        not requested
        or (count is not None and len(requested) != count)
        or not all(n is None or _is_whole(n) for n in requested)
    ):
        raise ValueError(
            f"lengths must give {count or 'one or more'} examples, each a whole number of real "
            f"tokens or None for no padding; got {lengths!r}."
        )
    return tuple(None if n is None else int(n) for n in requested)


def _clipped_lengths(requested, length):
    """Real tokens shown at sequence length ``length``: None means all of them."""
    return tuple(length if n is None else min(max(n, 0), length) for n in requested)


def _cells(blocked, below=np.inf):
    """``blocked`` as sorted (query, key) pairs of whole numbers from 0 (below ``below``)."""
    try:
        pairs = [tuple(cell) for cell in blocked]
        fit = all(len(p) == 2 and all(_is_whole(i) and 0 <= i < below for i in p) for p in pairs)
    except TypeError:
        fit = False
    if not fit:
        most = "" if below == np.inf else f" to {below - 1}"
        raise ValueError(
            f"blocked must hold (query, key) cells, pairs of whole numbers from 0{most}; "
            f"got {blocked!r}."
        )
    return tuple(sorted({(int(q), int(k)) for q, k in pairs}))


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
        the ``T x T`` grid are ignored (the editor keeps them for a longer ``T``).
    seed : int
        Seed for the random ``Q, K, V``: the first ``T`` of fixed
        ``MAX_LENGTH``-long sequences, so changing ``T`` keeps the tokens that stay.

    Returns
    -------
    MaskEditorState

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
    >>> update(3, blocked=[(0, 0), (5, 5)]).blocked  # (5, 5) lies outside T = 3
    frozenset({(0, 0)})
    """
    if not _is_whole(length) or length < 1:
        raise ValueError(f"length must be a whole number >= 1; got {length!r}.")
    length = int(length)
    requested = _requested_lengths([None] * BATCH if lengths is None else lengths)
    lengths = _clipped_lengths(requested, length)
    blocked = frozenset(cell for cell in _cells(blocked) if max(cell) < length)
    Q, K, V = _example_inputs(length, len(lengths), seed)

    padding_part = padding_mask(valid_from_lengths(np.array(lengths), length))
    by_hand = np.ones((length, length), dtype=bool)
    for q, k in blocked:
        by_hand[q, k] = False
    # (B, T, T): the padding's (B, 1, T) and the grid's (T, T) broadcast together
    mask = combine_masks(causal_mask(length) if causal else None, padding_part, by_hand)

    scores = attention_scores(Q, K)
    output, cache = attention_forward(Q, K, V, mask=mask, return_cache=True)
    return MaskEditorState(
        length=length,
        causal=bool(causal),
        lengths=lengths,
        requested=requested,
        blocked=blocked,
        padding_part=padding_part,
        mask=mask,
        scores=scores,
        masked_scores=np.where(mask, scores, -np.inf),
        weights=cache.weights,
        row_sums=cache.weights.sum(axis=-1),
        empty_rows=~mask.any(axis=-1),
        output=output,
    )


def _mask_reason(query, key, causal, lengths):
    """Why the causal or the padding mask blocks cell ``(query, key)`` in every example; "" if not.

    The grid is shared by the batch, so a key that is padding in only some
    examples is not blocked for all: a click there blocks it in the others.
    """
    reasons = []
    if causal and key > query:
        reasons.append("the causal mask")
    if all(key >= n for n in lengths):
        reasons.append(f"padding (key {key} is padding in every example)")
    return " and ".join(reasons)


def _masked_click_note(state, cell):
    """What the readout says after a click on a cell that a mask blocked: nothing changed."""
    where = f"query {cell[0]}, key {cell[1]}"
    reason = _mask_reason(*cell, state.causal, state.lengths)
    if not reason:  # a later change of the same batch lifted that mask
        return f"{where} was blocked by a mask when clicked: the click changed nothing."
    return f"{where} is already blocked by {reason}: the click changes nothing."


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


def _key_labels(state, b):
    return [f"k{t}" + ("·pad" if t >= state.lengths[b] else "") for t in range(state.length)]


def _title(state, b):
    return f"example {b}\n{state.lengths[b]} real, {state.length - state.lengths[b]} padding"


def draw(fig, state):
    """One weight heatmap per example, blocked cells hatched, row sums right of it, a colour bar."""
    axes = fig.subplots(1, len(state.lengths))
    tick = plots.STYLES[plots.figure_style(fig)]["tick"]
    rows = range(state.length)
    scene = []
    for b, ax in enumerate(axes):
        heatmap = plots.attention_heatmap(
            state.weights[b],
            ax=ax,
            mask=state.mask[b],
            query_labels=[f"q{t}" for t in rows],
            key_labels=[f"k{t}·pad" for t in rows],  # the widest: the layout keeps their room
            annotate=state.length <= ANNOTATE_UP_TO,
            colorbar=False,
            title=_title(state, b),
        )
        # Key labels stand upright from T = 4 on: there "k2·pad" in board type is wider than
        # its column. T alone decides (the padding marks come and go without a redraw).
        if state.length >= 4:
            ax.tick_params(axis="x", labelrotation=90)
        # The row sums sit where a right-hand axis would put its tick labels, as plain
        # texts: a change redraws a few glyphs, not an axis. The layout pass counts the
        # scene's texts as "lp", so a transparent widest sum keeps their room (under the
        # axes, where nothing else is).
        at = {"transform": offset_copy(ax.get_yaxis_transform(), fig=fig, x=4, units="points")}
        at["fontsize"] = tick
        ax.text(1.0, state.length - 0.5, "Σ=0", va="top", fontweight="bold", alpha=0.0, **at)
        sums = [ax.text(1.0, t, "", va="center_baseline", in_layout=False, **at) for t in rows]
        scene.append((heatmap, ax.xaxis, ax.title, sums))
    fig.colorbar(heatmap.image, ax=axes).set_label("weight")
    plots.raise_small_text(fig, 12)  # 12.8 CSS px at 1366x768 (shown at 0.56x)
    return scene


def refresh(scene, state):
    """Move the weights, the mask, the padding marks, the titles and the row sums to ``state``."""
    for b, (heatmap, keys, title, sums) in enumerate(scene):
        plots.update_attention_heatmap(heatmap, state.weights[b], mask=state.mask[b])
        keys.set_ticklabels(_key_labels(state, b))
        title.set_text(_title(state, b))
        for text, value, empty in zip(sums, state.row_sums[b], state.empty_rows[b], strict=True):
            # 1 or 0; an empty row is the lesson's surprise: its 0 stands out.
            text.set_text(f"Σ={value:.3g}")
            text.set(
                color=plots.COLORS["query"] if empty else "black",
                fontweight="bold" if empty else "normal",
            )


def static_key(state):
    """What :func:`refresh` does not move depends on ``T`` alone: shape, rows, cell numbers."""
    return state.length


def table(state):
    """The weights and row sums of every example as HTML tables; blocked cells read "blocked"."""
    header = ["", *(f"key {j}" for j in range(state.length)), "row sum"]
    parts = []
    for b, sums in enumerate(state.row_sums):
        cells = np.where(state.mask[b], state.weights[b].astype(object), "blocked")
        rows = [[f"query {t}", *cells[t], sums[t]] for t in range(state.length)]
        caption = f"example {b}: {state.lengths[b]} real tokens, causal {_on_off(state.causal)}"
        parts.append(html_table(rows, header, caption=caption))
    return "".join(parts)


def _on_off(flag):
    return "on" if flag else "off"


def readout(values, state):
    """One line: the controls' values (and real tokens kept for a longer T) and the empty rows."""
    empty = int(state.empty_rows.sum())
    waiting = [
        f"example {b} gets its {n} back when T ≥ {n}"
        for b, n in enumerate(state.requested)
        if n is not None and n > state.length
    ]
    kept = f" ({'; '.join(waiting)})" if waiting else ""
    return (
        f"<b>T = {state.length}</b> · causal {_on_off(state.causal)} · real tokens "
        f"{', '.join(map(str, state.lengths))}{kept} · "
        f"{len(state.blocked)} cell(s) blocked by hand · "
        f"<b>{empty}</b> empty row(s) (weights and output 0)"
    )


#: Width of the grid with its key, in CSS pixels: room for 8 x 8 cells, the same for
#: every T so the figure beside it does not move when T changes.
_GRID_WIDTH = "320px"
#: The grid's key, under it.
_GRID_LEGEND = (
    '<div style="line-height: 1.4">✕ blocked by you<br>◥ causal mask, ▒ padding in every '
    "example: hatched, a click there changes nothing<br>tinted: padding in one example</div>"
)


class CellGrid(widgets.VBox):
    """Toggle buttons for the (query, key) cells, the first T x T shown; ``value``: blocked cells.

    ``value`` is a sorted tuple of the ``(query, key)`` pairs blocked by hand,
    those beyond the ``T`` on show included (kept for a longer ``T``). The
    buttons are real ``<button>``s (Tab reaches them, Space toggles), each
    named by its tooltip, which the front end makes its ``aria-label``:
    "query 2, key 4: blocked by the causal mask". A click on a cell that the
    causal mask or the padding blocks in every example changes nothing (the
    button springs back) and calls ``on_masked_click(cell)``. The buttons of
    the longest grid are made once: :meth:`show` sends a few layout changes to
    the page for a new ``T``, not a new grid.
    """

    value = traitlets.TraitType(())  # any value but None; _checked says what fits

    def __init__(self, value, *, on_masked_click):
        self._shown = widgets.Layout(width="34px", height="32px")  # tall: room beside the figure
        self._hidden = widgets.Layout(display="none")
        self._all, self._labels = {}, [widgets.Label(f"k{k}") for k in range(MAX_LENGTH)]
        children = [widgets.Label(""), *self._labels]  # the key labels along the top
        for q in range(MAX_LENGTH):
            self._labels.append(widgets.Label(f"q{q}"))
            children.append(self._labels[-1])  # then each query's label and its cells
            for k in range(MAX_LENGTH):
                self._all[q, k] = widgets.ToggleButton(False, layout=self._hidden)
                self._all[q, k].observe(functools.partial(self._on_button, (q, k)), "value")
                children.append(self._all[q, k])
        self.cells = widgets.GridBox(children, layout=widgets.Layout(grid_gap="2px"))
        super().__init__(
            [self.cells, widgets.HTML(_GRID_LEGEND)], layout=widgets.Layout(width=_GRID_WIDTH)
        )
        self.add_class("attn-cell-grid")
        self.on_masked_click = on_masked_click
        self.buttons, self._causal, self._lengths = {}, False, ()
        self.value = value

    @traitlets.validate("value")
    def _checked(self, proposal):  # a value that does not fit raises before anything changes
        return _cells(proposal["value"], below=MAX_LENGTH)

    def show(self, length, causal, lengths):
        """Show ``value`` in the first ``length x length`` cells, marked as the masks block them.

        Only what changed reaches the page: a button or label that keeps its look sends nothing.
        """
        self._causal, self._lengths = bool(causal), tuple(lengths)
        self.buttons = {cell: b for cell, b in self._all.items() if max(cell) < length}
        for cell, button in self._all.items():
            button.value = cell in self.value
            button.layout = self._shown if cell in self.buttons else self._hidden
        for i, label in enumerate(self._labels):
            label.layout.display = None if i % MAX_LENGTH < length else "none"
        self.cells.layout.grid_template_columns = f"28px repeat({length}, 34px)"
        # Hidden cells too: a page that lists every button finds each one named (the
        # tooltip is its accessible name, see _frontend.js). The classes are styled in
        # _frontend.css.
        for (q, k), button in self._all.items():
            reason = _mask_reason(q, k, self._causal, self._lengths)
            padded = ", ".join(str(b) for b, n in enumerate(self._lengths) if k >= n)
            if button.value:
                also = f" and by {reason}" if reason else ""
                symbol, label = "✕", f"blocked by hand{also} (click to allow)"
            elif reason:
                symbol = "◥" if reason.startswith("the causal") else "▒"
                label = f"blocked by {reason}"
            else:
                symbol = "·"
                label = f"open; key {k} is padding in example {padded}" if padded else "open"
                label += " (click to block)"
            button.description = symbol
            button.tooltip = f"query {q}, key {k}: {label}"
            button._dom_classes = (
                ("attn-cell-masked",) if reason else ("attn-cell-partly-padded",) if padded else ()
            )

    def _on_button(self, cell, change):
        # A button that show() sets to what value holds asks for nothing new.
        asked = change["new"] and cell not in self.value
        if asked and _mask_reason(*cell, self._causal, self._lengths):
            change["owner"].value = False  # a mask blocks it already: spring back, say why
            self.on_masked_click(cell)
        else:
            others = [c for c in self.value if c != cell]
            self.value = tuple(sorted([*others, cell] if change["new"] else others))


class RealTokenSliders(widgets.HBox):
    """One slider per example for its real tokens; ``value``: what was asked for (None: no padding).

    The sliders show the requests clipped to the ``T`` of :meth:`resize`; the
    requests stay, so a longer ``T`` gives them back. A slider moved to its
    right end asks for no padding.
    """

    value = traitlets.TraitType(())  # any value but None; _checked says what fits

    def __init__(self, lengths, length):
        # 400 px: a usable track beside board-sized labels
        sliders = [
            int_slider(0, 0, length, f"real tokens in example {b}", "400px") for b in range(BATCH)
        ]
        super().__init__(sliders, layout=widgets.Layout(flex_flow="row wrap"))
        self.value = lengths
        for b, slider in enumerate(sliders):
            slider.observe(functools.partial(self._on_slider, b), names="value")
        self.resize(length)

    @traitlets.validate("value")
    def _checked(self, proposal):
        return _requested_lengths(proposal["value"], count=len(self.children))

    def _on_slider(self, b, change):
        # A slider that shows its request (resize() sets it so) asks for nothing new.
        asked, shown = list(self.value), change["new"]
        if shown != _clipped_lengths(asked, self.length)[b]:
            asked[b] = None if shown == self.length else shown
            self.value = tuple(asked)

    def resize(self, length):
        """New maximum ``length``; the sliders show the requests clipped to it."""
        self.length = length
        for slider, n in zip(self.children, _clipped_lengths(self.value, length), strict=True):
            slider.max = max(slider.max, length)  # never below the value it is to show
            slider.value = n
            slider.max = length


def mask_editor_explorer(length=5, causal=True, lengths=(None, 3), blocked=(), *, style=None):
    """The live mask editor for a batch of two examples.

    Controls, in order: the length ``T`` (main control), causal on/off, the
    real tokens of each example (one slider each, whose maximum follows ``T``;
    None = no padding) and a grid of cells to block by hand, shown beside
    the heatmaps it changes: one control per keyword of :func:`update`. A
    click on a cell that the causal mask or the padding already blocks
    changes nothing, and the readout says why.

    Parameters
    ----------
    length : int, default 5
        Starting ``T``, 1 to :data:`MAX_LENGTH`.
    causal : bool, default True
    lengths : pair of int or None, default (None, 3)
        Real tokens asked for per example (None: no padding).
    blocked : iterable of (int, int), default ()
        Cells blocked by hand, each below :data:`MAX_LENGTH`.
    style : {"default", "board"}, optional
        Defaults to ``ATTENTION_STYLE`` (unset: ``"default"``).

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
    >>> editor.controls["blocked"].buttons[0, 3].value = True  # a click the causal mask refuses
    >>> editor.readout.value.split("<br>")[-1]
    'query 0, key 3 is already blocked by the causal mask: the click changes nothing.'
    >>> editor.set(length=3, blocked=((4, 0),)).blocked  # (4, 0) waits for T >= 5
    frozenset()
    >>> editor.set(length=5).blocked
    frozenset({(4, 0)})
    """
    if not 1 <= length <= MAX_LENGTH:
        raise ValueError(f"length must lie between 1 and {MAX_LENGTH}; got {length!r}.")

    def say_why(cell):
        explorer.note(lambda state: _masked_click_note(state, cell))

    controls = {
        "length": int_slider(length, 1, MAX_LENGTH, "T", "220px"),
        "causal": widgets.Checkbox(
            bool(causal), description="causal", indent=False, layout=widgets.Layout(width="90px")
        ),
        "lengths": RealTokenSliders(lengths, length),
        "blocked": CellGrid(blocked, on_masked_click=say_why),
    }

    def follow(_change=None):
        # The sliders and the grid show every change of every control inside its batch:
        # one redraw in all, and a click reads the batch's masks.
        length, real = controls["length"].value, controls["lengths"]
        real.resize(length)
        shown = _clipped_lengths(real.value, length)
        controls["blocked"].show(length, controls["causal"].value, shown)

    follow()
    explorer = EXPLORER.explorer(
        controls, follow=dict.fromkeys(controls, follow), style=style, beside_figure=["blocked"]
    )
    return explorer


EXPLORER = ExplorerSpec.from_module(
    __name__,
    title="mask editor",
    figsize=FIGSIZE,
    board_figsize=BOARD_FIGSIZE,
    display_width_px=DISPLAY_WIDTH_PX,
)
