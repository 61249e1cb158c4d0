"""Explorer for notebook 06: the board walkthrough, one step per click (chapter 19.5).

Three key/value cards and a query card in large type. Next / Back / Reset
step through :func:`attention_lib.walkthrough.walkthrough_step`: the cards,
dot products, division by sqrt(d_k), softmax, the weighted sum of the values,
and a causal mask that erases the cards after the query's position before the
softmax. The query's position is a slider; every number on the cards is an
editable field, and an edit recomputes the step on screen.

:func:`update` is pure (it only calls the walkthrough); :func:`draw` uses
:func:`attention_lib.plots.kv_cards` for the cards and adds what the board
needs beyond them (the rows of numbers under the cards, the covers of erased
cards, the output card). Every artist a step can change exists from the
first drawing, empty or hidden, and :func:`refresh` only sets texts, widths
and visibility, so a step or a new query position is blitted over the still
cards. An edited number is a new :func:`static_key`: the cards are drawn
again, with their numbers, and kept (going back to earlier cards is a blit).
"""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
import traitlets
from matplotlib.patches import FancyBboxPatch, Rectangle

from .. import plots
from ..walkthrough import (
    BOARD_ROWS,
    DEFAULT_CARDS,
    N_STEPS,
    Cards,
    WalkthroughStep,
    make_cards,
    walkthrough_step,
)
from ._shell import Button, ExplorerSpec, HiddenControl, html_table

__all__ = ["EXPLORER", "WalkthroughStep", "teach_walkthrough_explorer", "update"]

#: Figure sizes (inches) in the default and board styles, both rendered 1480 x 600 pixels:
#: with the controls, readout and "Numbers" bar the explorer stays under the 959 px of the
#: notebook panel's visible height. The board's fewer inches mean larger type.
FIGSIZE = (9.25, 3.75)
BOARD_FIGSIZE = (14.8, 6.0)
#: Decimals of a card entry: what a card on the board prints (a wider number would not fit).
CARD_DECIMALS = 1


def update(step=1, query_position=2, cards=DEFAULT_CARDS):
    """The board after ``step``: :func:`attention_lib.walkthrough.walkthrough_step`, nothing more.

    Parameters
    ----------
    step : int, default 1
        1 ... :data:`attention_lib.walkthrough.N_STEPS`.
    query_position : int, default 2
        The query's place in the sequence, 1 ... number of cards.
    cards : Cards, default DEFAULT_CARDS

    Returns
    -------
    WalkthroughStep

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import update
    >>> update(4).board[-1].cells
    ('0.33', '0.12', '0.55')
    >>> update(0)
    Traceback (most recent call last):
    ...
    ValueError: step must be at least 1; got 0.
    """
    return walkthrough_step(cards, step, query_position)


# --- drawing ------------------------------------------------------------------------------

_SLOT = 1.2  # kv_cards puts card i's left edge at 1.2 * slot
_ROW_Y = (-0.2, -0.47, -0.74)  # heights of the BOARD_ROWS under the cards
_BAR_Y, _BAR_HEIGHT = -0.95, 0.09
_OUTPUT_FACE = "#f7eaf2"
_ROUNDED = "round,pad=0.02,rounding_size=0.06"  # the corners of kv_cards' cards


class _Board(NamedTuple):
    """The artists a step changes (the scene)."""

    caption: object  # the axes' left title: step, name, what just happened
    query_position: object
    rows: list  # (label, [cell per card]) per BOARD_ROWS
    bars: list  # (background, weight bar) per card
    covers: list  # (cover, its "erased" label) per card
    output_card: object
    output_text: object


def _decimals(cards):
    """Whole-number cards print without decimals, others with :data:`CARD_DECIMALS`."""
    numbers = np.concatenate([cards.query, cards.keys.ravel(), cards.values.ravel()])
    return 0 if np.all(numbers == np.round(numbers)) else CARD_DECIMALS


def static_key(state):
    """The cards' numbers: the cards are still, a step only blits the board under them."""
    return tuple((array.shape, array.tobytes()) for array in state.cards)


def draw(fig, state):
    """The query, key/value and output cards, the rows of numbers under them, the caption."""
    spec = plots.STYLES[plots.figure_style(fig)]
    big, small = spec["title"], spec["annotation"]
    bold = {"fontsize": big, "weight": "bold"}
    ax = fig.subplots()
    cards = state.cards
    n = len(cards.keys)
    plots.kv_cards(cards.keys, cards.values, ax=ax, query=cards.query, decimals=_decimals(cards))
    # kv_cards sizes the axes to the cards it drew; keep every step on the same grid.
    ax.set_xlim(-0.1, _SLOT * (n + 2) - 0.1)
    ax.set_ylim(-1.02, 1.3)

    def text(x, y, content="", **style):
        return ax.text(x, y, content, ha="center", va="center", **style)

    lefts = [_SLOT * (1 + i) for i in range(n)]
    for i, x in enumerate(lefts):
        text(x + 0.5, 1.15, f"position {i + 1}", fontsize=small, color="#555555")
    where = text(0.5, 1.15, fontsize=small, weight="bold", color="#9a3a00")
    rows = [
        (
            text(0.5, y, label, fontsize=big, color=plots.COLORS["reference"]),
            [text(x + 0.5, y, **bold) for x in lefts],
        )
        for label, y in zip(BOARD_ROWS, _ROW_Y, strict=True)
    ]
    # Unclipped, the bars and the output card reach only their own extent, not the whole
    # axes: the shell then blits them without redrawing every card text on top.
    bars = [
        tuple(
            ax.add_patch(Rectangle((x, _BAR_Y), width, _BAR_HEIGHT, facecolor=face, clip_on=False))
            for width, face in ((1.0, "#eeeeee"), (0.0, plots.COLORS["key"]))
        )
        for x in lefts
    ]
    # The cover over an erased card: opaque, above kv_cards' texts (zorder 3), its label on top.
    cover = {"facecolor": plots.MASKED_COLOR, "hatch": "//", "edgecolor": "#6e6e6e", "zorder": 4}
    on_white = {"facecolor": "white", "edgecolor": "none", "pad": 4}
    covers = [
        (
            ax.add_patch(Rectangle((x - 0.03, 0.02), 1.06, 1.06, **cover)),
            text(x + 0.5, 0.55, "future:\nerased", **bold, bbox=on_white, zorder=5),
        )
        for x in lefts
    ]
    # The output card, drawn here rather than by kv_cards, which rounds every vector alike:
    # whole-number cards print without decimals, but the output is a blend and needs two.
    x = _SLOT * (1 + n)
    edge = {"edgecolor": plots.COLORS["output"], "linewidth": spec["line"] / 2, "clip_on": False}
    output_card = ax.add_patch(FancyBboxPatch((x, 0.05), 1.0, 1.0, _ROUNDED, **edge))
    text(x + 0.5, 0.9, "output", fontsize=small, weight="bold")
    output_text = text(x + 0.5, 0.55, **bold, color="#7d3160")
    caption = ax.set_title("", loc="left", fontsize=spec["label"], fontweight="normal")
    scene = _Board(caption, where, rows, bars, covers, output_card, output_text)
    refresh(scene, state)  # the caption's two lines take their room in the layout
    return scene


def refresh(scene, state):
    """Show ``state``: caption, the rows computed so far, weight bars, covers, output."""
    scene.caption.set_text(f"Step {state.step} / {state.n_steps}: {state.title}\n{state.caption}")
    scene.query_position.set_text(f"at position {state.query_position}")
    for r, (label, cells) in enumerate(scene.rows):
        computed = r < len(state.board)
        label.set_visible(computed)
        for i, cell in enumerate(cells):
            cell.set_text(state.board[r].cells[i] if computed else "")
            # the dot product of an erased card is still taken, then thrown away: grey
            cell.set_color("#bdbdbd" if r == 0 and state.erased[i] else "black")
    weighted = state.weights is not None
    for i, (background, bar) in enumerate(scene.bars):
        background.set_visible(weighted)  # not setp: its alias lookups cost more
        bar.set_visible(weighted)
        bar.set_width(float(state.weights[i]) if weighted else 0.0)
    for erased, (cover, label) in zip(state.erased, scene.covers, strict=True):
        cover.set_visible(bool(erased))
        label.set_visible(bool(erased))
    computed = state.output_text is not None
    scene.output_card.set_facecolor(_OUTPUT_FACE if computed else "none")
    scene.output_card.set_linestyle("-" if computed else "--")
    scene.output_text.set_text(state.output_text if computed else "?")


def table(state):
    """Every number of the current step, rounded for the board, as an HTML table."""
    n = state.cards.keys.shape[0]
    rows = [[row.label, *row.cells] for row in state.board]
    if state.output_text is not None:
        rows.append(["output", state.output_text, *[""] * (n - 1)])
    if not rows:
        rows.append(["(nothing computed yet)", *[""] * n])
    caption = f"step {state.step} / {state.n_steps}: {state.title}"
    return html_table(rows, ["", *(f"card {i + 1}" for i in range(n))], caption=caption)


def readout(values, state):
    """The step indicator "3 / 6", the step's name and the query's position."""
    return (
        f"<b>Step {state.step} / {state.n_steps}</b> · {state.title} · "
        f"query at position {state.query_position}"
    )


# --- controls -----------------------------------------------------------------------------


def _card_rows(cards):
    """``(role, index, row)`` of every row of entries, as the board shows them: q, k1, v1, k2 ..."""
    yield "q", 0, cards.query
    for i, (key, value) in enumerate(zip(cards.keys, cards.values, strict=True)):
        yield "k", i, key
        yield "v", i, value


class _CardEditor(widgets.HBox):
    """One small number field per card entry; ``value`` is the :class:`Cards` they spell.

    Entries are rounded to :data:`CARD_DECIMALS` as they are typed (and the field
    shows the rounded number): the card on the board prints one decimal, and the
    class must be able to redo the arithmetic from what it sees.
    """

    value = traitlets.Instance(Cards)

    def __init__(self, cards, *, field_width="3.6em"):
        self._shapes = [array.shape for array in cards]
        self._fields = {}
        boxes = []
        for role, i, row in _card_rows(cards):
            name = "q" if role == "q" else f"{role}{i + 1}"
            fields = [  # the tooltip becomes the field's title: a screen reader's name for it
                widgets.FloatText(
                    value=float(x),
                    tooltip=f"{name} entry {j + 1}",
                    layout=widgets.Layout(width=field_width),
                )
                for j, x in enumerate(row)
            ]
            self._fields[role, i] = fields
            for field in fields:
                field.observe(self._on_field, names="value")
            label = widgets.HTML(f"<b>{name}</b>", layout=widgets.Layout(width="auto"))
            # the right margin parts the groups: q | k1 v1 | k2 v2 ...
            margin = "0 0.3em 0 0" if role == "k" else "0 1.2em 0 0"
            boxes.append(widgets.HBox([label, *fields], layout=widgets.Layout(margin=margin)))
        super().__init__(boxes, layout=widgets.Layout(flex_flow="row wrap"), value=cards)
        self.add_class("attn-card-editor")
        self._syncing = False
        self.observe(self._on_value, names="value")

    @traitlets.validate("value")
    def _fits_the_fields(self, proposal):
        shapes = [array.shape for array in proposal["value"]]
        if shapes != self._shapes:
            query, keys, values = self._shapes
            raise traitlets.TraitError(
                f"cards must have the card fields' shapes: query {query}, keys {keys}, "
                f"values {values}; got {', '.join(map(str, shapes))}."
            )
        return proposal["value"]

    def _spelled(self):
        rows = {"q": [], "k": [], "v": []}
        for (role, _), fields in self._fields.items():  # each role's rows in order
            rows[role].append([round(field.value, CARD_DECIMALS) for field in fields])
        return make_cards(rows["q"][0], rows["k"], rows["v"])

    def _on_field(self, change):
        if not self._syncing:
            self.value = self._spelled()

    def _on_value(self, change):
        """Show new cards set from Python (Reset) in the fields without re-firing per field."""
        self._syncing = True
        try:
            for role, i, row in _card_rows(change["new"]):
                for field, x in zip(self._fields[role, i], row, strict=True):
                    field.value = float(x)
        finally:
            self._syncing = False


def teach_walkthrough_explorer(cards=DEFAULT_CARDS, query_position=2, *, style=None):
    """The live board walkthrough: Next (main control), Back, Reset, position, card fields.

    Next and Back answer a presenter's clicker (PageDown / PageUp) too.

    Parameters
    ----------
    cards : Cards, default DEFAULT_CARDS
        The starting cards (:func:`attention_lib.walkthrough.make_cards`).
    query_position : int, default 2
        The query's starting position, 1 ... number of cards.
    style : {"default", "board"}, optional
        Defaults to the environment variable ``ATTENTION_STYLE`` (unset:
        ``"default"``), read when the explorer is built.

    Returns
    -------
    attention_lib.widgets.Explorer

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import teach_walkthrough_explorer
    >>> explorer = teach_walkthrough_explorer(style="board")
    >>> explorer.press("next").title, explorer.press("next").scores.tolist()
    ('dot products', [1.0, 0.0, 1.5])
    >>> explorer.readout.value.startswith("<b>Step 3 / 6</b>")
    True
    >>> explorer.close()
    """
    walkthrough_step(cards, 1, query_position)  # checks the cards and the position against them
    start = {"step": 1, "query_position": query_position, "cards": cards}
    controls = {
        "step": HiddenControl(1),
        "query_position": widgets.IntSlider(
            value=query_position,
            min=1,
            max=cards.keys.shape[0],
            description="query position",
            continuous_update=False,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="18em"),
        ),
        "cards": _CardEditor(cards),
    }

    def step_button(description, by, tooltip, **primary):
        """Next or Back: the step ``by`` one, switched off at the end it would pass."""
        return Button(
            description,
            lambda values: {"step": min(max(values["step"] + by, 1), N_STEPS)},
            lambda values: 1 <= values["step"] + by <= N_STEPS,
            tooltip=tooltip,
            **primary,
        )

    buttons = {
        "next": step_button("Next ▶", 1, "next step", primary=True),
        "back": step_button("◀ Back", -1, "previous step"),
        "reset": Button("⟲ Reset", lambda values: start, tooltip="step 1, first cards"),
    }
    return EXPLORER.explorer(controls, buttons=buttons, style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="board walkthrough", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
