"""Explorer for notebook 06: the board walkthrough, one step per click (chapter 19.5).

Three key/value cards and a query card in large type. Next / Back / Reset
step through :func:`attention_lib.walkthrough.walkthrough_step`: the cards,
dot products, division by sqrt(d_k), softmax, the weighted sum of the values,
and a causal mask that erases the cards after the query's position before the
softmax. The query's position is a slider; every number on the cards is an
editable field, and an edit recomputes the step on screen.

:func:`update` is pure (it only calls the walkthrough); :func:`draw` uses
:func:`attention_lib.plots.kv_cards` for the cards and adds what the board
needs beyond them (the rows of numbers under the cards, the erased cards, the
output card). Every artist a step can change exists from the first drawing,
empty or hidden, and :func:`refresh` only sets texts, widths and visibility,
so the shell blits a step over the still cards; an edited card changes
:func:`static_key` and costs one full drawing.

The figure is drawn at about the width JupyterLab shows it at 1920 x 1080
(:data:`DISPLAY_WIDTH_PX`), so the browser does not stretch it and the
numbers stay sharp on a projector.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import traitlets

from .. import plots
from ..walkthrough import (
    BOARD_ROWS,
    DEFAULT_CARDS,
    N_STEPS,
    Cards,
    make_cards,
    walkthrough_step,
)
from ._frontend import presenter_buttons
from ._shell import Explorer, ExplorerSpec, html_table

__all__ = [
    "CARD_DECIMALS",
    "DISPLAY_WIDTH_PX",
    "EXPLORER",
    "WalkthroughExplorer",
    "draw",
    "figure_geometry",
    "readout",
    "refresh",
    "static_key",
    "table",
    "teach_walkthrough_explorer",
    "update",
]

#: Width of the notebook column in JupyterLab at 1920 x 1080 (see the shell); the
#: figure is rendered this many pixels wide, so it is shown at about 1:1.
DISPLAY_WIDTH_PX = plots.DISPLAY_WIDTH_PX
#: Height of the figure in pixels: with the controls, readout and the "Numbers" bar the
#: explorer stays under the 959 px of the notebook panel's visible height.
DISPLAY_HEIGHT_PX = 600
#: Decimals of a card entry: what a card on the board prints (a wider number would not fit).
CARD_DECIMALS = 1
#: Dots per inch per style: the board style's larger fonts need fewer pixels per point
#: for the same picture to fit, the default style is a sharper, smaller-type version.
_DPI = {"default": 160.0, "board": 100.0}


def figure_geometry(style, height_px=DISPLAY_HEIGHT_PX):
    """``(figsize, dpi)`` that render a figure ``DISPLAY_WIDTH_PX`` by ``height_px`` pixels.

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import figure_geometry
    >>> (width, height), dpi = figure_geometry("board")
    >>> round(width * dpi), round(height * dpi)
    (1480, 600)
    """
    if style not in _DPI:
        raise ValueError(f"style must be one of {sorted(_DPI)}; got {style!r}.")
    dpi = _DPI[style]
    return (DISPLAY_WIDTH_PX / dpi, height_px / dpi), dpi


def update(step=1, query_position=2, cards=DEFAULT_CARDS):
    """The board after ``step`` (pure: :func:`attention_lib.walkthrough.walkthrough_step`).

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import update
    >>> update(4).board[-1].cells
    ('0.33', '0.12', '0.55')
    """
    return walkthrough_step(cards, step, query_position)


# --- drawing ------------------------------------------------------------------------------

_SLOT = 1.2  # kv_cards puts card i's left edge at 1.2 * slot
_ROW_Y = (-0.2, -0.47, -0.74)  # heights of the BOARD_ROWS under the cards
_BAR_Y, _BAR_HEIGHT = -0.95, 0.09
_BOTTOM, _TOP = -1.02, 1.3
_OUTPUT_FACE = "#f7eaf2"


def _centre(slot):
    return _SLOT * slot + 0.5


def _decimals(cards):
    """Whole-number cards print without decimals, others with :data:`CARD_DECIMALS`."""
    numbers = np.concatenate([cards.query, cards.keys.ravel(), cards.values.ravel()])
    return 0 if np.all(numbers == np.round(numbers)) else CARD_DECIMALS


def static_key(state):
    """What the still part of the figure depends on: the cards (kv_cards prints them).

    Steps, the query position and everything under the cards change through
    :func:`refresh`; new card values need a full :func:`draw`.

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import static_key, update
    >>> static_key(update(1)) == static_key(update(6, query_position=3))
    True
    """
    return tuple(array.tobytes() for array in state.cards)


def _moving_artists(fig, ax, n, spec):
    """Every artist a step can change, created empty or hidden; :func:`refresh` fills them."""
    from matplotlib.patches import FancyBboxPatch, Rectangle

    from .. import plots

    big = spec["title"]
    text = {"ha": "center", "va": "center"}
    fig.text(0.01, 0.985, "", fontsize=spec["label"], ha="left", va="top", gid="caption")
    ax.text(
        _centre(0),
        1.15,
        "",
        fontsize=spec["annotation"],
        weight="bold",
        color="#9a3a00",
        gid="query-position",
        **text,
    )
    for r, (label, y) in enumerate(zip(BOARD_ROWS, _ROW_Y, strict=True)):
        ax.text(
            _centre(0),
            y,
            label,
            fontsize=big,
            color=plots.COLORS["reference"],
            gid=f"row-{r}",
            **text,
        )
        for i in range(n):
            ax.text(_centre(1 + i), y, "", fontsize=big, weight="bold", gid=f"cell-{r}-{i}", **text)
    for i in range(n):
        x = _SLOT * (1 + i)
        ax.add_patch(
            Rectangle((x, _BAR_Y), 1.0, _BAR_HEIGHT, facecolor="#eeeeee", gid=f"bar-bg-{i}")
        )
        ax.add_patch(
            Rectangle((x, _BAR_Y), 0.0, _BAR_HEIGHT, facecolor=plots.COLORS["key"], gid=f"bar-{i}")
        )
        # the cover over an erased card: above the card's texts, opaque, the card is gone
        ax.add_patch(
            Rectangle(
                (x - 0.03, 0.02),
                1.06,
                1.06,
                facecolor=plots.MASKED_COLOR,
                hatch="//",
                edgecolor="#6e6e6e",
                zorder=4,  # kv_cards' texts are at 3
                gid=f"erased-{i}",
            )
        )
        ax.text(
            x + 0.5,
            0.55,
            "future:\nerased",
            fontsize=big,
            weight="bold",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 4},
            zorder=5,
            gid=f"erased-label-{i}",
            **text,
        )
    # The output card, drawn here rather than by kv_cards, which rounds every vector alike:
    # whole-number cards print without decimals, but the output is a blend and needs two.
    x = _SLOT * (1 + n)
    ax.add_patch(
        FancyBboxPatch(
            (x, 0.05),
            1.0,
            1.0,
            boxstyle="round,pad=0.02,rounding_size=0.06",
            edgecolor=plots.COLORS["output"],
            linewidth=spec["line"] / 2,
            gid="output-card",
        )
    )
    ax.text(
        x + 0.5,
        0.9,
        "output",
        fontsize=spec["annotation"],
        weight="bold",
        gid="output-head",
        **text,
    )
    ax.text(
        x + 0.5, 0.55, "", fontsize=big, weight="bold", color="#7d3160", gid="output-text", **text
    )


def draw(fig, state):
    """The board: query card, key/value cards, output card, the numbers of the steps so far.

    The caption (step, name and what just happened) heads the figure, so the
    static figures of the slides say it too.

    Examples
    --------
    >>> from attention_lib import plots
    >>> from attention_lib.widgets.teach_walkthrough import draw, update
    >>> fig, _ = plots.new_figure(0, figsize=(14.8, 6.0), style="board", pyplot=False)
    >>> ax = draw(fig, update(6))
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "cell-2-2"]
    ['0']
    >>> [p.get_visible() for p in ax.patches if p.get_gid() == "erased-2"]
    [True]
    """
    from .. import plots

    style = plots.figure_style(fig)
    spec = plots.STYLES[style]
    fig.set_layout_engine("none")
    ax = fig.add_axes((0.005, 0.0, 0.99, 0.87))
    cards = state.cards
    n = cards.keys.shape[0]
    plots.kv_cards(
        cards.keys, cards.values, ax=ax, query=cards.query, decimals=_decimals(cards), style=style
    )
    for i in range(n):
        ax.text(
            _centre(1 + i),
            1.15,
            f"position {i + 1}",
            ha="center",
            va="center",
            fontsize=spec["annotation"],
            color="#555555",
        )
    # kv_cards sizes the axes to the cards it drew; keep every step on the same grid.
    ax.set_xlim(-0.1, _SLOT * (n + 2) - 0.1)
    ax.set_ylim(_BOTTOM, _TOP)
    _moving_artists(fig, ax, n, spec)
    refresh(fig, state)
    return ax


def refresh(fig, state):
    """Show ``state`` in the artists :func:`draw` made: texts, bars, covers, caption.

    Returns them, the same list every time and in drawing order (covers over
    cards, labels over covers), so the shell can blit a step in place of
    redrawing the cards.

    Examples
    --------
    >>> from attention_lib import plots
    >>> from attention_lib.widgets.teach_walkthrough import draw, refresh, update
    >>> fig, _ = plots.new_figure(0, figsize=(14.8, 6.0), pyplot=False)
    >>> ax = draw(fig, update(1))
    >>> moved = refresh(fig, update(4))
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "cell-2-0"]
    ['0.33']
    """
    ax = fig.axes[0]
    artists = {a.get_gid(): a for a in (*ax.texts, *ax.patches, *fig.texts) if a.get_gid()}
    n = state.cards.keys.shape[0]
    moved = []

    def show(gid, visible=True, text=None):
        artist = artists[gid]
        artist.set_visible(visible)
        if text is not None:
            artist.set_text(text)
        moved.append(artist)
        return artist

    show("caption", text=f"Step {state.step} / {state.n_steps}: {state.title}\n{state.caption}")
    show("query-position", text=f"at position {state.query_position}")
    for r in range(len(BOARD_ROWS)):
        computed = r < len(state.board)
        show(f"row-{r}", computed)
        for i in range(n):
            cell = show(f"cell-{r}-{i}", computed, state.board[r].cells[i] if computed else "")
            # the dot product of an erased card is still taken, then thrown away: grey
            cell.set_color("#bdbdbd" if r == 0 and state.erased[i] else "black")
    for i in range(n):
        weighted = state.weights is not None
        show(f"bar-bg-{i}", weighted)
        show(f"bar-{i}", weighted).set_width(float(state.weights[i]) if weighted else 0.0)
    for i in range(n):
        show(f"erased-{i}", bool(state.erased[i]))
        show(f"erased-label-{i}", bool(state.erased[i]))
    computed = state.output_text is not None
    card = show("output-card")
    card.set_facecolor(_OUTPUT_FACE if computed else "none")
    card.set_linestyle("-" if computed else "--")
    show("output-head")  # after the card: blitted in list order, the card would cover it
    show("output-text", text=state.output_text if computed else "?")
    return moved


def table(state):
    """Every number of the current step, rounded for the board, as an HTML table.

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import table, update
    >>> "÷ √d_k" in table(update(3))
    True
    """
    n = state.cards.keys.shape[0]
    rows = [[row.label, *row.cells] for row in state.board]
    if state.output_text is not None:
        rows.append(["output", state.output_text, *[""] * (n - 1)])
    if not rows:
        rows.append(["(nothing computed yet)", *[""] * n])
    caption = f"step {state.step} / {state.n_steps}: {state.title}"
    return html_table(rows, ["", *(f"card {i + 1}" for i in range(n))], caption=caption)


def readout(values, state):
    """The step indicator "3 / 6", the step's name and its one line.

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import readout, update
    >>> readout({}, update(3)).startswith("<b>Step 3 / 6</b>")
    True
    """
    return (
        f"<b>Step {state.step} / {state.n_steps}</b> · {state.title} · "
        f"query at position {state.query_position}"
    )


# --- controls -----------------------------------------------------------------------------


class _StepButton(widgets.Button):
    """The Next button, carrying the current step as its ``value`` (a Python-side trait).

    The shell watches a control's ``value``; giving the main button one lets
    the walkthrough's step be an ordinary control of the shell.
    """

    value = traitlets.Int(1)


class _CardEditor(widgets.HBox):
    """One small number field per card entry; ``value`` is the :class:`Cards` they spell.

    Entries are rounded to :data:`CARD_DECIMALS` as they are typed (and the field
    shows the rounded number): the card on the board prints one decimal, and the
    class must be able to redo the arithmetic from what it sees.
    """

    value = traitlets.Instance(Cards)

    def __init__(self, cards, *, field_width="3.6em"):
        self._fields = {}
        groups = []
        for role, array in (("q", cards.query[None, :]), ("k", cards.keys), ("v", cards.values)):
            for i, row in enumerate(array):
                fields = [
                    widgets.FloatText(value=float(x), layout=widgets.Layout(width=field_width))
                    for x in row
                ]
                self._fields[role, i] = fields
                name = "q" if role == "q" else f"{role}{i + 1}"
                label = widgets.HTML(f"<b>{name}</b>", layout=widgets.Layout(width="auto"))
                # the right margin parts the groups: q | k1 v1 | k2 v2 ...
                margin = "0 0.3em 0 0" if role == "k" else "0 1.2em 0 0"
                box = widgets.HBox([label, *fields], layout=widgets.Layout(margin=margin))
                groups.append((role, i, box))
        # query first, then each card's key beside its value, like the cards on the board
        order = sorted(groups, key=lambda g: (g[0] != "q", g[1], g[0]))
        super().__init__(
            [box for *_, box in order],
            layout=widgets.Layout(flex_flow="row wrap"),
            value=cards,
        )
        self.add_class("attn-card-editor")
        self._syncing = False
        for fields in self._fields.values():
            for field in fields:
                field.observe(self._on_field, names="value")
        self.observe(self._on_value, names="value")

    def _spelled(self):
        def rows(role):
            n = sum(1 for r, _ in self._fields if r == role)
            return [
                [round(f.value, CARD_DECIMALS) for f in self._fields[role, i]] for i in range(n)
            ]

        return make_cards(rows("q")[0], rows("k"), rows("v"))

    def _on_field(self, change):
        if not self._syncing:
            self.value = self._spelled()

    def _on_value(self, change):
        """Show new cards set from Python (Reset) in the fields without re-firing per field."""
        cards = change["new"]
        self._syncing = True
        try:
            for role, array in (
                ("q", cards.query[None, :]),
                ("k", cards.keys),
                ("v", cards.values),
            ):
                for i, row in enumerate(array):
                    for field, x in zip(self._fields[role, i], row, strict=True):
                        field.value = float(x)
        finally:
            self._syncing = False


class WalkthroughExplorer(Explorer):
    """The board walkthrough: an :class:`Explorer` whose main control is the Next button.

    Back and Reset sit beside Next; :meth:`next`, :meth:`back` and
    :meth:`reset` do what the buttons do (for tests and for a presenter's
    keys). Build it with :func:`teach_walkthrough_explorer`.
    """

    def __init__(self, controls, *, style):
        super().__init__(EXPLORER, controls, style=style)
        self._start = self.values
        next_button = self.controls["step"]
        self.back_button = widgets.Button(description="◀ Back", tooltip="previous step")
        self.reset_button = widgets.Button(description="⟲ Reset", tooltip="step 1, first cards")
        next_button.on_click(lambda _: self.next())
        self.back_button.on_click(lambda _: self.back())
        self.reset_button.on_click(lambda _: self.reset())
        row = self.controls_row  # Next stays first
        row.children = (next_button, self.back_button, self.reset_button, *row.children[1:])
        presenter_buttons(next_button, self.back_button)  # a clicker's keys press them
        next_button.observe(self._enable_buttons, names="value")
        self._enable_buttons()

    def _enable_buttons(self, change=None):
        step = self.controls["step"].value
        self.controls["step"].disabled = step >= N_STEPS
        self.back_button.disabled = step <= 1

    def next(self):
        """One step forward (stays at the last step); returns the new state."""
        return self.set(step=min(self.controls["step"].value + 1, N_STEPS))

    def back(self):
        """One step back (stays at step 1); returns the new state."""
        return self.set(step=max(self.controls["step"].value - 1, 1))

    def reset(self):
        """Step 1 with the cards and query position the explorer started with."""
        return self.set(**self._start)

    def close(self):
        """Close the widgets, the Back and Reset buttons and the card fields too."""
        self.back_button.close()
        self.reset_button.close()
        for fields in self.controls["cards"]._fields.values():
            for field in fields:
                field.close()
        super().close()


def teach_walkthrough_explorer(cards=DEFAULT_CARDS, query_position=2, *, style=None):
    """The live board walkthrough: Next (main control), Back, Reset, position, card fields.

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
    WalkthroughExplorer

    Examples
    --------
    >>> from attention_lib.widgets.teach_walkthrough import teach_walkthrough_explorer
    >>> explorer = teach_walkthrough_explorer(style="board")
    >>> explorer.next().title, explorer.next().scores.tolist()
    ('dot products', [1.0, 0.0, 1.5])
    >>> explorer.readout.value.startswith("<b>Step 3 / 6</b>")
    True
    >>> explorer.close()
    """
    from .. import plots

    style = plots.default_style() if style is None else style
    # walkthrough_step checks the cards and the position against them
    walkthrough_step(cards, 1, query_position)
    n = cards.keys.shape[0]
    controls = {
        "step": _StepButton(description="Next ▶", tooltip="next step", button_style="primary"),
        "query_position": widgets.IntSlider(
            value=query_position,
            min=1,
            max=n,
            description="query position",
            continuous_update=False,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="18em"),
        ),
        "cards": _CardEditor(cards),
    }
    return WalkthroughExplorer(controls, style=style)


EXPLORER = ExplorerSpec(
    name="teach_walkthrough",
    title="board walkthrough",
    factory=teach_walkthrough_explorer,
    update=update,
    draw=draw,
    refresh=refresh,
    table=table,
    readout=readout,
    figsize=figure_geometry("default")[0],
    board_figsize=figure_geometry("board")[0],
    static_key=static_key,
    legacy=True,  # issue 22: not yet on the scene contract
)
