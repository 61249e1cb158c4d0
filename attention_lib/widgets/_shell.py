"""The ipywidgets shell every explorer shares: ``Explorer``, ``ExplorerSpec`` and their helpers.

The contract an explorer module follows, and what the shell does with it (one
layout pass per style and static key, the blit over a cached background, the
PNG in an ``ipywidgets.Image`` rather than an ``Output`` that would leak into
nbval), is written once in ``docs/architecture.md`` ("The explorer contract").
"""

from __future__ import annotations

import contextlib
import functools
import html
import math
import numbers
import re
import struct
import sys
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import ipywidgets as widgets
import numpy as np
import traitlets
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, FigureBase
from matplotlib.text import Text

from .. import plots
from ._frontend import ExplorerFrontend, presenter_buttons

__all__ = [
    "Button",
    "Explorer",
    "ExplorerSpec",
    "HiddenControl",
    "html_table",
    "int_slider",
    "live_dpi",
    "render_png",
]

#: Frozen drawings an explorer keeps (one per style and static key), so going back to a
#: recent size blits instead of drawing again: the mask editor's eight T in one style.
FROZEN_LAYOUTS = 8

#: The functions an explorer module defines, found by name (``static_key`` is optional).
HOOKS = ("update", "draw", "refresh", "table", "readout")


class ExplorerSpec(NamedTuple):
    """One explorer described once: what the shell wires together and what the registry finds.

    An explorer module ends with ``EXPLORER = ExplorerSpec.from_module(__name__,
    ...)``, which picks up its functions by name; its factory builds the live
    widget with :meth:`explorer`. So the explorer calls exactly the functions
    named here, and ``spec.update(**explorer.values)`` is always ``explorer.state``.

    Attributes
    ----------
    name : str
        Registry name, the module's: ``"soft_lookup"``.
    title : str
        What the explorer is called on screen: ``"soft lookup"``.
    factory : callable
        ``factory(*, style=...) -> Explorer``, defaults otherwise (``<name>_explorer``).
    update, draw, refresh, table, readout : callable
        The module's functions of those names (see :mod:`attention_lib.widgets`).
    figsize : (float, float)
        Figure size in inches in the default style (rendered ``display_width_px`` wide).
    board_figsize : (float, float), optional
        In the board style (large fonts need more inches for the same pixels);
        default ``figsize``.
    static_key : callable, optional
        ``static_key(state) -> key``: what the drawing that ``refresh`` does
        not move depends on (the mask editor's ``T``); a new key is drawn in
        full and frozen again. Default: it never changes.
    display_width_px : int, optional
        Width the figure is rendered and shown at, in CSS pixels; default
        :data:`~attention_lib.plots.DISPLAY_WIDTH_PX` (the whole column). An
        explorer that shows controls beside its figure takes less.

    Examples
    --------
    >>> import ipywidgets
    >>> def draw(fig, state):
    ...     (bar,) = fig.subplots().bar([0], [state])
    ...     return bar
    >>> spec = ExplorerSpec(
    ...     "square", "square", None, lambda x: x * x, draw, lambda bar, s: bar.set_height(s),
    ...     lambda s: "", lambda values, s: f"x = {values['x']}", figsize=(2.0, 2.0),
    ...     board_figsize=(4.0, 4.0))
    >>> explorer = spec.explorer({"x": ipywidgets.IntSlider(3, 0, 9, continuous_update=False)})
    >>> explorer.state, explorer.readout.value, spec.figsize_for("board")
    (9, 'x = 3', (4.0, 4.0))
    """

    name: str
    title: str
    factory: Callable[..., Explorer]
    update: Callable[..., Any]
    draw: Callable[[Any, Any], Any]
    refresh: Callable[[Any, Any], Any]
    table: Callable[[Any], str]
    readout: Callable[[Mapping[str, Any], Any], str]
    figsize: tuple[float, float]
    board_figsize: tuple[float, float] | None = None
    static_key: Callable[[Any], Any] | None = None
    display_width_px: int | None = None

    @classmethod
    def from_module(cls, module, *, title, figsize, board_figsize=None, display_width_px=None):
        """The spec of explorer module ``module`` (its ``__name__``), its functions found by name.

        Examples
        --------
        >>> from attention_lib.widgets import soft_lookup
        >>> spec = ExplorerSpec.from_module(
        ...     "attention_lib.widgets.soft_lookup", title="soft lookup", figsize=(10.0, 3.5))
        >>> spec.name, spec.update is soft_lookup.update, spec.factory.__name__
        ('soft_lookup', True, 'soft_lookup_explorer')
        """
        found = vars(sys.modules[module])
        name = module.rpartition(".")[2]
        missing = [hook for hook in (*HOOKS, f"{name}_explorer") if not callable(found.get(hook))]
        if missing:
            raise AttributeError(
                f"explorer module {module} defines no {', '.join(missing)}: every explorer "
                f"module defines {', '.join(HOOKS)} and its factory {name}_explorer."
            )
        return cls(
            name,
            title,
            found[f"{name}_explorer"],
            *(found[hook] for hook in HOOKS),
            figsize=tuple(figsize),
            board_figsize=None if board_figsize is None else tuple(board_figsize),
            static_key=found.get("static_key"),
            display_width_px=display_width_px,
        )

    def figsize_for(self, style):
        """The figure size in inches for ``style`` ("default" or "board").

        Examples
        --------
        >>> from attention_lib.widgets.sqrt_dk import EXPLORER
        >>> EXPLORER.figsize_for("default") == EXPLORER.figsize
        True
        """
        return self.board_figsize if style == "board" and self.board_figsize else self.figsize

    def explorer(self, controls, **options):
        """The live :class:`Explorer` of this spec, wired to ``controls``.

        Parameters
        ----------
        controls : mapping of str to ipywidgets.ValueWidget or HiddenControl
            Keyword of :attr:`update` -> its control; the first shown one is
            the main control (unless there are buttons).
        follow : mapping of str to callable, optional
            ``{keyword: follow(change)}``: when that control changes, ``follow``
            gets the traitlets change and sets the controls that depend on it
            inside the same batch (one update, one redraw). Never a raw
            ``.observe`` in an explorer module.
        buttons : mapping of str to Button, optional
            Buttons first in the controls row, the first is the main control;
            ``"next"`` and ``"back"`` also answer a presenter's clicker.
        style : {"default", "board"}, optional
            Default: :func:`attention_lib.plots.default_style` (``$ATTENTION_STYLE``).
        beside_figure : sequence of str, optional
            Controls shown left of the figure instead of in the controls row: a
            control that acts on the figure (the mask editor's grid of cells)
            sits next to it, and the figure shrinks beside it on a narrow page.

        Every option is keyword-only and passed on to :class:`Explorer`.

        Returns
        -------
        Explorer

        Examples
        --------
        >>> import ipywidgets
        >>> from attention_lib.widgets import sqrt_dk
        >>> explorer = sqrt_dk.EXPLORER.explorer(
        ...     {"d_k": ipywidgets.IntSlider(16, 1, 64, continuous_update=False),
        ...      "scaled": ipywidgets.Checkbox(True)})
        >>> explorer, explorer.state.d_k
        (<sqrt(d_k) explorer: run the notebook to interact>, 16)
        """
        return Explorer(self, controls, **options)

    def figure(self, state, *, style=None, pyplot=False):
        """``state`` drawn as the explorer draws it, on a new figure of its size and resolution.

        Drawn, laid out once, then refreshed to ``state`` (what the explorer
        does for a new layout), with no blitting: the reference a blitted
        frame must equal, and the static figure of a notebook (``pyplot=True``).

        Examples
        --------
        >>> from attention_lib.widgets.soft_lookup import EXPLORER, update
        >>> fig = EXPLORER.figure(update(), style="board")
        >>> plots.figure_style(fig), round(fig.get_size_inches()[0] * fig.dpi)
        ('board', 1480)
        """
        style = plots.figure_style(None, style)
        with plots.series_style(style):
            fig = self._new_figure(style, pyplot=pyplot)
            _draw_laid_out(self, fig, state)
        return fig

    def _new_figure(self, style, *, pyplot=False):
        """An empty figure of the explorer's size in ``style``, ``display_width_px`` wide."""
        figsize = self.figsize_for(style)
        dpi = live_dpi(figsize, self.display_width_px)
        return plots.new_figure(0, figsize=figsize, style=style, pyplot=pyplot, dpi=dpi)[0]


class Button(NamedTuple):
    """A button of an explorer: what a press changes, and when it can be pressed.

    Attributes
    ----------
    description : str
        Its label, e.g. ``"Next ▶"``.
    press : callable
        ``press(values) -> changes``: from the controls' current values to the
        controls a press sets (one :meth:`Explorer.set`).
    enabled : callable, optional
        ``enabled(values) -> bool``; default: always.
    tooltip : str, optional
    primary : bool, default False
        Drawn as the primary button.

    Examples
    --------
    >>> next_step = Button("Next", lambda values: {"step": values["step"] + 1},
    ...                    enabled=lambda values: values["step"] < 6)
    >>> next_step.press({"step": 2}), next_step.enabled({"step": 6})
    ({'step': 3}, False)
    """

    description: str
    press: Callable[[Mapping[str, Any]], Mapping[str, Any]]
    enabled: Callable[[Mapping[str, Any]], bool] | None = None
    tooltip: str = ""
    primary: bool = False


class HiddenControl(traitlets.HasTraits):
    """A control that no widget shows: only :meth:`Explorer.set` and the buttons change it.

    The walkthrough's step is one: Next, Back and Reset set it.

    Examples
    --------
    >>> step = HiddenControl(1)
    >>> step.value = 2
    >>> step.value
    2
    """

    value = traitlets.Any()

    def __init__(self, value):
        super().__init__(value=value)


def int_slider(value, low, high, description, width, *, label_width="initial"):
    """A whole-number slider of fixed width that moves the explorer when released.

    The shell lays the controls out in one wrapping row, where a track without
    a fixed width would shrink to a few pixels.

    Parameters
    ----------
    value, low, high : int
        Its value, minimum and maximum.
    description : str
    width : str
        CSS width of the whole slider, label included, e.g. ``"220px"``.
    label_width : str, default "initial"
        CSS width of the description (``"initial"``: as long as it is).

    Returns
    -------
    ipywidgets.IntSlider

    Examples
    --------
    >>> slider = int_slider(5, 1, 8, "T", "220px")
    >>> slider.value, slider.continuous_update, slider.layout.min_width
    (5, False, '220px')
    """
    return widgets.IntSlider(
        value,
        low,
        high,
        description=description,
        continuous_update=False,
        style={"description_width": label_width},
        layout=widgets.Layout(width=width, min_width=width),
    )


def live_dpi(figsize, width_px=None):
    """Dots per inch that render a figure of ``figsize`` inches ``width_px`` pixels wide.

    ``width_px`` defaults to :data:`~attention_lib.plots.DISPLAY_WIDTH_PX`.

    Font sizes stay in points, so a wider figure in inches means smaller type
    on screen: an explorer's ``figsize`` chooses its type size, the display
    width fixes its pixels.

    Examples
    --------
    >>> live_dpi((10.0, 4.0)) * 10.0 == plots.DISPLAY_WIDTH_PX
    True
    >>> live_dpi((10.0, 4.0), 1100)
    110.0
    """
    return float(width_px or plots.DISPLAY_WIDTH_PX) / float(figsize[0])


def render_png(fig, *, compress_level=1):
    """Render ``fig`` with Agg and return PNG bytes, encoded fast.

    Draws once and encodes the RGBA buffer directly (``savefig`` would lay
    out and draw the figure a second time). ``compress_level=1`` makes files
    a little larger and encoding several times faster.

    Examples
    --------
    >>> fig, ax = plots.new_figure(pyplot=False, figsize=(2, 1), dpi=50)
    >>> png = render_png(fig)
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return _encode(canvas, compress_level)


def _encode(canvas, compress_level=1):
    """PNG bytes of what the Agg canvas currently holds (no drawing): RGB, rows unfiltered.

    Written here rather than by Pillow, whose adaptive row filters cost a few
    milliseconds to choose and cost the browser more to undo: with plain rows a
    figure encodes about 4 ms and decodes about 7 ms faster at 1480 px wide, and
    its PNG is as small (a figure is mostly flat colour, which zlib packs alone).
    The figures are opaque, so alpha is dropped: a quarter less to pack and send.
    """
    width, height = canvas.get_width_height()
    rgba = np.asarray(canvas.buffer_rgba())
    rows = np.zeros((height, 1 + 3 * width), np.uint8)  # each row: filter byte 0, then RGB
    rows[:, 1:] = rgba[:, :, :3].reshape(height, -1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    chunks = [
        (b"IHDR", header),
        (b"IDAT", zlib.compress(rows.tobytes(), compress_level)),
        (b"IEND", b""),
    ]
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        for kind, data in chunks
    )


def _cell(value, decimals):
    if isinstance(value, (float, np.floating)):
        return f"{value:.{decimals}f}"
    return html.escape(str(value))


def _plain_text(markup):
    """The words of an HTML readout, for the figure's text alternative.

    >>> _plain_text("d_k = <b>256</b>, <i>unscaled</i> &middot; row<br>0")
    'd_k = 256, unscaled · row; 0'
    """
    text = re.sub(r"<[^>]+>", "", re.sub(r"<br\s*/?>", "; ", markup))
    return " ".join(html.unescape(text).split()).replace(" ;", ";")


def html_table(rows, header, *, caption=None, decimals=3):
    """A small accessible HTML table (``<th scope>``, optional ``<caption>``).

    Parameters
    ----------
    rows : sequence of sequence
        One entry per row; floats are rounded to ``decimals``.
    header : sequence of str
        Column headings; the first column of every row is its row heading.
    caption : str, optional
    decimals : int, default 3

    Returns
    -------
    str

    Examples
    --------
    >>> print(html_table([["k0", 0.25]], ["key", "weight"]))
    <table class="attn-table"><thead><tr><th scope="col">key</th><th scope="col">weight</th></tr></thead><tbody><tr><th scope="row">k0</th><td>0.250</td></tr></tbody></table>
    """  # noqa: E501
    head = "".join(f'<th scope="col">{html.escape(str(h))}</th>' for h in header)
    body = ""
    for first, *rest in rows:
        cells = "".join(f"<td>{_cell(v, decimals)}</td>" for v in rest)
        body += f'<tr><th scope="row">{_cell(first, decimals)}</th>{cells}</tr>'
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (
        f'<table class="attn-table">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _draw_laid_out(spec, fig, state):
    """Draw ``state`` on ``fig`` from scratch, lay it out once, freeze the layout, refresh.

    The layout depends on the static key alone (see :func:`_stand_ins`), so every
    drawing of a key has its axes where a fresh one has them. Returns the scene.
    """
    for ax in fig.axes:  # fig.clear() would clear each axes first, for nothing
        fig.delaxes(ax)
    fig.clear()
    fig.set_layout_engine("constrained")
    scene = spec.draw(fig, state)
    if fig.axes:
        with _stand_ins(scene):
            fig.get_layout_engine().execute(fig)
    fig.set_layout_engine("none")
    spec.refresh(scene, state)
    return scene


@contextlib.contextmanager
def _stand_ins(scene):
    """The scene as the layout pass sees it, so the layout depends on the frozen key alone.

    A text of the scene counts as its number of lines, each as tall as "lp"
    and no wider (a title keeps its room, whatever numbers it shows); an axis
    keeps the room of the tick labels ``draw`` gave it (so ``draw`` gives it
    its widest ones); the other artists of the scene are left out of the layout.
    """
    artists = [artist for artist in _scene_artists(scene) if not isinstance(artist, Axis)]
    texts = {artist: artist.get_text() for artist in artists if isinstance(artist, Text)}
    in_layout = {artist: artist.get_in_layout() for artist in artists if artist not in texts}
    for text, shown in texts.items():
        text.set_text("\n".join(["lp"] * (shown.count("\n") + 1)))
    for artist in in_layout:
        artist.set_in_layout(False)
    try:
        yield
    finally:
        for text, shown in texts.items():
            text.set_text(shown)
        for artist, was_in_layout in in_layout.items():
            artist.set_in_layout(was_in_layout)


def _scene_artists(scene):
    """The artists in ``scene``: nested tuples and lists (builders' named tuples) of artists.

    Other leaves (None for a part not drawn, names, numbers) are not drawn.
    """
    if isinstance(scene, Axes | FigureBase):
        raise TypeError(
            "a scene holds the artists that change, not whole axes or figures (redrawing "
            "those is what blitting avoids); return the builders' artists from draw."
        )
    if isinstance(scene, Artist):
        return [scene]
    if isinstance(scene, tuple | list):
        return [artist for part in scene for artist in _scene_artists(part)]
    return []


def _in_draw_order(parent):
    """The children of a figure or axes in the order a render draws them (as matplotlib does)."""
    hidden = {id(parent.patch)}
    if isinstance(parent, Axes) and not (parent.axison and parent.get_frame_on()):
        hidden.update(map(id, parent.spines.values()))
    if isinstance(parent, Axes) and not parent.axison:
        hidden.update(map(id, (parent.xaxis, parent.yaxis)))
    children = [child for child in parent.get_children() if id(child) not in hidden]
    return sorted(children, key=Artist.get_zorder)


def _blitted(fig, scene):
    """The artists a change draws again, in the order a fresh render stacks them.

    The scene, plus every still artist that a render draws on top of a scene
    artist of the same axes (or of the figure) where it could cover it: the
    spines bars stand on, a reference line across moving bars. The area a
    scene artist may reach is its clip box, or its extent when unclipped.
    Axes' ticks are never among them: they point outward, off the data.
    """
    moving = {id(artist) for artist in _scene_artists(scene)}
    renderer = fig.canvas.get_renderer()
    order = []

    def visit(parent):
        regions = []
        for child in _in_draw_order(parent):
            if id(child) in moving:
                order.append(child)
                clip = child.get_clip_box() if child.get_clip_on() else None
                regions.append(clip if clip is not None else child.get_window_extent(renderer))
            elif isinstance(child, Axes):
                visit(child)
            elif regions and child.get_visible() and not isinstance(child, Axis):
                box = child.get_window_extent(renderer)  # edges count: a spine on the axes' edge
                if (box.width > 0 or box.height > 0) and any(map(box.overlaps, regions)):
                    order.append(child)

    visit(fig)
    missing = moving - {id(artist) for artist in order}
    if missing:
        raise ValueError(
            f"{len(missing)} artist(s) of the scene are not drawn directly on the "
            "figure or on its axes: a scene holds what the figure and its axes draw."
        )
    return order


def _value_error(key, control, value):
    """What is wrong with ``value`` for a standard ipywidgets control, or None if nothing is.

    ipywidgets would clip a number into a slider's range, or take NaN, or fail
    with a message about an ``index`` trait: the explorer says what fits instead.
    """
    if hasattr(control, "options"):
        choices = list(control._options_values)
        fits = any(value is c or (type(value) is type(c) and value == c) for c in choices)
        shown = ", ".join(map(repr, choices if len(choices) <= 8 else choices[:3]))
        if len(choices) > 8:
            shown += f", ..., {choices[-1]!r} ({len(choices)} in all)"
        expected = f"one of {shown}"
    elif isinstance(control, widgets.Checkbox | widgets.ToggleButton):
        fits, expected = isinstance(value, bool | np.bool_), "True or False"
    elif hasattr(control, "min") and hasattr(control, "max"):
        low, high = control.min, control.max
        if isinstance(control, widgets.FloatLogSlider):  # its min and max are exponents
            low, high = control.base**low, control.base**high
        whole = isinstance(control.value, numbers.Integral)
        fits = (
            isinstance(value, numbers.Real)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (not whole or value == int(value))
            and low <= value <= high
        )
        expected = f"{'a whole number' if whole else 'a number'} from {low:g} to {high:g}"
    else:
        return None  # an explorer's own control (or a hidden one): its traits check the value
    return None if fits else f"{key} must be {expected}; got {value!r}."


class _Frozen(NamedTuple):
    """A drawing kept with its layout: the figure, its scene, what a change blits, the rest."""

    fig: Figure
    scene: Any
    blitted: list
    background: Any


class Explorer:
    """An interactive explorer: controls, a readout, a live figure and a numbers table.

    Built by :meth:`ExplorerSpec.explorer` (its parameters are described
    there). A change of a control runs the spec's ``update`` once, moves the
    scene of the drawing frozen for the new state's style and ``static_key``
    (drawing and freezing one if there is none yet) and shows the new PNG,
    readout and table. A change that fails (a value a control cannot take,
    an ``update`` that refuses it) leaves controls, state and figure as they
    were and says why: :meth:`set` raises, a change in the page shows the
    reason under the readout.

    Attributes
    ----------
    spec : ExplorerSpec
    title : str
        What the explorer is called on screen.
    widget : ipywidgets.VBox
        What a notebook displays (class ``attn-explorer``).
    controls : dict
        The controls, keyword of ``update`` -> control.
    buttons : dict of str to ipywidgets.Button
        The spec's buttons, first in :attr:`controls_row`.
    controls_row : ipywidgets.HBox
        The buttons, the controls (but those beside the figure or hidden) and
        the board toggle, wrapping onto a second line on a narrow page.
    board_toggle : ipywidgets.ToggleButton
        "board": large type and thick lines for a projector (class
        ``attn-board-toggle``). Not a control of ``update``: it changes how the
        state is drawn, not the state.
    style : str
        The style the figure is drawn in now.
    readout, table : ipywidgets.HTML
    figure : ipywidgets.Image
        PNG of the current state (class ``attn-figure``).
    fig : matplotlib.figure.Figure
        The live figure that PNG was rendered from.
    frontend : ExplorerFrontend
        The page-side helper, first in ``widget``: says so and switches the
        controls off when the kernel is gone, gives sliders an
        ``aria-valuetext``, forwards presenter keys (see ``_frontend.py``).
    state
        The result of the last ``update``.
    first_state
        The state the explorer started in (what the static cell draws).

    Examples
    --------
    >>> import ipywidgets
    >>> def draw(fig, state):
    ...     (bar,) = fig.subplots().bar([0], [state["square"]])
    ...     return bar
    >>> spec = ExplorerSpec(
    ...     "square", "square", None, lambda x: {"x": x, "square": x * x}, draw,
    ...     lambda bar, state: bar.set_height(state["square"]),
    ...     lambda s: html_table([["x^2", s["square"]]], ["", "value"]),
    ...     lambda values, s: f"x = {values['x']}", figsize=(2, 2))
    >>> explorer = spec.explorer({"x": ipywidgets.IntSlider(2, 0, 9, continuous_update=False)})
    >>> explorer
    <square explorer: run the notebook to interact>
    >>> before = explorer.png
    >>> explorer.set(x=3)["square"]
    9
    >>> explorer.png != before, explorer.readout.value
    (True, 'x = 3')
    >>> explorer.set(x=12)
    Traceback (most recent call last):
    ...
    ValueError: x must be a whole number from 0 to 9; got 12.
    """

    def __init__(self, spec, controls, *, follow=None, buttons=None, style=None, beside_figure=()):
        if not controls:
            raise ValueError("an explorer needs at least one control.")
        self.spec = spec
        self.title = spec.title
        self.controls = dict(controls)
        for key, control in self.controls.items():
            if getattr(control, "continuous_update", False):
                raise ValueError(
                    f"control {key!r} has continuous_update=True; explorers redraw on "
                    "release only (continuous_update=False), so dragging stays responsive."
                )
        self._follow = dict(follow or {})
        beside_figure = tuple(beside_figure)
        for what, keys in (("follow", self._follow), ("beside_figure", beside_figure)):
            unknown = set(keys) - set(self.controls)
            if unknown:
                raise KeyError(f"{what} names unknown control(s) {sorted(unknown)}.")
        self._button_specs = dict(buttons or {})
        self.display_width_px = int(spec.display_width_px or plots.DISPLAY_WIDTH_PX)
        self.style = plots.figure_style(None, plots.default_style() if style is None else style)
        self._depth = 0  # open batch() blocks
        self._pending = False  # a control changed inside the open batch
        self._notes = []  # note(state) callables for the batch's state
        # (style, static key) -> _Frozen, most recently shown last
        self._frozen = OrderedDict()
        self._shown = None  # key of the drawing on show

        self.buttons = {}
        for name, button in self._button_specs.items():
            self.buttons[name] = widgets.Button(
                description=button.description,
                tooltip=button.tooltip,
                button_style="primary" if button.primary else "",
            )
            self.buttons[name].on_click(functools.partial(self._on_click, name))
        if "next" in self.buttons:  # a clicker's keys press them
            presenter_buttons(self.buttons["next"], self.buttons.get("back"))
        shown = [
            control
            for key, control in self.controls.items()
            if key not in beside_figure and not isinstance(control, HiddenControl)
        ]
        self.main_control = next(iter([*self.buttons.values(), *shown]), None)
        if self.main_control is not None:
            self.main_control.add_class("attn-main-control")
        self.readout = widgets.HTML().add_class("attn-readout")
        # Shown at its own width (the column's at 1920 x 1080) or narrower, never
        # stretched: a flex column would otherwise widen it to fill the row.
        self.figure = widgets.Image(
            format="png",
            layout=widgets.Layout(
                width=f"{self.display_width_px}px",
                max_width="100%",
                height="auto",
                align_self="flex-start",
                # ipywidgets' 2 px side margins on a 100%-wide image made a zoomed
                # page scroll sideways by 4 px
                margin="2px 0",
            ),
        ).add_class("attn-figure")
        self.board_toggle = widgets.ToggleButton(
            value=self.style == "board",
            description="board",
            tooltip="Board style: large type and thick lines for a projector",
            layout=widgets.Layout(width="auto"),
        ).add_class("attn-board-toggle")
        self.table = widgets.HTML().add_class("attn-table")
        numbers_box = widgets.Accordion(children=[self.table], titles=("Numbers",))
        numbers_box.selected_index = None  # collapsed until asked for
        # The page-side helper (kernel-gone message, aria values, presenter keys):
        # first, so its message sits above the controls it switches off.
        self.frontend = ExplorerFrontend()
        # wrap onto a second line rather than squeeze sliders to a few pixels
        self.controls_row = widgets.HBox(
            [*self.buttons.values(), *shown, self.board_toggle],
            layout=widgets.Layout(flex_flow="row wrap"),
        )
        figure_row = self.figure
        if beside_figure:
            # The controls keep their width; the figure takes the rest of the row and
            # shrinks (never grows) when the page is narrower (a zoomed browser), so
            # what the controls change stays beside them and nothing scrolls inside.
            beside = widgets.VBox(
                [self.controls[key] for key in beside_figure],
                layout=widgets.Layout(flex="0 0 auto"),
            )
            self.figure.layout.min_width = "0"
            figure_row = widgets.HBox(
                [beside, self.figure],
                layout=widgets.Layout(align_items="flex-start", overflow="visible"),
            )
        self.widget = widgets.VBox(
            [self.frontend, self.controls_row, self.readout, figure_row, numbers_box]
        ).add_class("attn-explorer")
        self._mark_style()
        self._refresh()  # sets the state
        self.first_state = self.state
        for key, control in self.controls.items():
            control.observe(functools.partial(self._on_change, key), names="value")
        self.board_toggle.observe(
            lambda change: self.set_style("board" if change["new"] else "default"), names="value"
        )

    @property
    def fig(self):
        """The live figure: what the PNG on show was rendered from (an Agg figure)."""
        return self._frozen[self._shown].fig

    @property
    def figure_dpi(self):
        """Resolution of the live figure (pixels per inch of its size)."""
        return self.fig.dpi

    @property
    def values(self):
        """Current control values as ``{keyword: value}``."""
        return {key: control.value for key, control in self.controls.items()}

    @property
    def png(self):
        """PNG bytes the browser currently shows."""
        return self.figure.value

    def _mark_style(self):
        """The board class on the explorer: large readout and controls (``_frontend.css``)."""
        mark = self.widget.add_class if self.style == "board" else self.widget.remove_class
        mark("attn-board")

    def set_style(self, style):
        """Draw from now on in ``style`` ("default" or "board"); what the toggle does.

        The drawings of both styles stay frozen side by side: a presenter
        switching back and forth gets a blit after the first switch each way.

        Examples
        --------
        >>> from attention_lib.widgets import soft_lookup_explorer
        >>> explorer = soft_lookup_explorer(style="default")
        >>> explorer.set_style("board")
        >>> explorer.style, explorer.board_toggle.value, explorer.png[16:24] != b""
        ('board', True, True)
        """
        style = plots.figure_style(None, style)  # checks the name
        self.board_toggle.value = style == "board"  # re-enters once through the observer
        if style == self.style:
            return
        self.style = style
        self._mark_style()
        self._refresh()

    @contextlib.contextmanager
    def batch(self):
        """Group control changes: one update and one redraw when the outermost block ends.

        Inside the block, changing a control only notes that something changed;
        leaving the outermost block runs ``update`` once on all current values
        and redraws once (nothing changed, nothing redrawn). If the block or
        that update fails, every control goes back to the value it had before
        the block, state and figure stay as they were, and the error propagates.

        Examples
        --------
        >>> import ipywidgets
        >>> calls = []
        >>> spec = ExplorerSpec(
        ...     "sum", "sum", None, lambda a, b: calls.append((a, b)) or a + b,
        ...     lambda fig, s: None, lambda scene, s: None, lambda s: "", lambda v, s: "",
        ...     figsize=(1, 1))
        >>> explorer = spec.explorer(
        ...     {"a": ipywidgets.IntSlider(0, 0, 5, continuous_update=False),
        ...      "b": ipywidgets.IntSlider(0, 0, 5, continuous_update=False)})
        >>> with explorer.batch():
        ...     explorer.controls["a"].value = 2
        ...     explorer.controls["b"].value = 3
        >>> calls, explorer.state
        ([(0, 0), (2, 3)], 5)
        """
        self._depth += 1
        try:
            yield self
            if self._depth == 1 and self._pending:
                self._refresh()
            elif self._depth == 1 and self._notes:
                self._show_notes()
        except BaseException:
            if self._depth == 1:
                self._roll_back()
            raise
        finally:
            self._depth -= 1

    def note(self, text):
        """Show ``text(state)`` under the readout, for the state the current change ends in.

        Inside a :meth:`batch` (or a ``follow`` callback, or a control's own
        handler during a change), ``text`` waits for the batch's one update, so
        a note reads the same state as the figure and the readout. The next
        change's readout replaces it.

        Examples
        --------
        >>> from attention_lib.widgets import soft_lookup_explorer
        >>> explorer = soft_lookup_explorer()
        >>> with explorer.batch():
        ...     explorer.note(lambda state: f"now {state.length:.1f} long")
        ...     explorer.controls["length"].value = 2.0
        >>> explorer.readout.value.endswith("<br>now 2.0 long")
        True
        """
        self._notes.append(text)
        if not self._depth:
            self._show_notes()

    def _show_notes(self):
        notes, self._notes = self._notes, []
        self.readout.value = "<br>".join([self._readout_text, *(n(self.state) for n in notes)])

    def _on_change(self, key, change):
        with self._reported(), self.batch():
            self._pending = True
            if key in self._follow:
                self._follow[key](change)  # dependent controls join this batch

    def _on_click(self, name, _button):
        with self._reported():
            self.press(name)

    @contextlib.contextmanager
    def _reported(self):
        """Errors of a change made in the page: undone already; said under the readout."""
        outermost = not self._depth
        try:
            yield
        except (ValueError, TypeError, traitlets.TraitError) as error:
            if not outermost:
                raise
            self.readout.value = f"{self._readout_text}<br>{html.escape(str(error))}"

    def _roll_back(self):
        """Put every control back to the values of the state on show, as they were.

        Called inside the failed batch, so the changes back only join it (with
        their follow callbacks) and draw nothing.
        """
        try:
            for _ in range(2):  # a follow callback may move a control restored before it
                for key, value in self._committed.items():
                    self.controls[key].value = value
        finally:
            self._pending, self._notes = False, []
        if self._shown in self._frozen:  # a failed refresh may have moved some artists
            with plots.series_style(self.style):
                self.spec.refresh(self._frozen[self._shown].scene, self.state)
        self._update_buttons()

    def _refresh(self):
        values = self.values
        state = self.spec.update(**values)
        readout = self.spec.readout(values, state)
        table = self.spec.table(state)
        notes = [note(state) for note in self._notes]
        key = (self.style, None if self.spec.static_key is None else self.spec.static_key(state))
        with plots.series_style(self.style):
            png = self._show(key, state)
        self.state, self._committed, self._readout_text = state, values, readout
        self._pending, self._notes = False, []
        self.figure.value = png
        self.frontend.description = f"{self.spec.title} figure: {_plain_text(readout)}"
        self.readout.value = "<br>".join([readout, *notes])
        self.table.value = table
        self._update_buttons()

    def _show(self, key, state):
        """PNG of ``state`` from the drawing frozen for ``key`` (drawn and frozen if none is)."""
        frozen = self._frozen.get(key)
        if frozen is None:
            frozen = self._freeze(key, state)
        else:
            self.spec.refresh(frozen.scene, state)
        self._frozen.move_to_end(key)
        self._shown = key
        frozen.fig.canvas.restore_region(frozen.background)
        for artist in frozen.blitted:
            frozen.fig.draw_artist(artist)
        return _encode(frozen.fig.canvas)

    def _freeze(self, key, state):
        """Draw ``state`` in full, lay it out once and keep it, with the background of its scene.

        One render serves both: the artists a change draws again are left out
        of it (the layout pass still sees them) and blitted on top, so a full
        draw costs one render, not one for the PNG plus one for the background.
        """
        while len(self._frozen) >= FROZEN_LAYOUTS:  # the least recently shown goes
            self._frozen.popitem(last=False)
        fig = self.spec._new_figure(self.style)
        scene = _draw_laid_out(self.spec, fig, state)
        blitted = _blitted(fig, scene)
        for artist in blitted:
            artist.set_animated(True)  # left out of canvas.draw(), blitted on top
        fig.canvas.draw()
        frozen = _Frozen(fig, scene, blitted, fig.canvas.copy_from_bbox(fig.bbox))
        self._frozen[key] = frozen
        return frozen

    def _update_buttons(self):
        values = self.values
        for name, button in self._button_specs.items():
            self.buttons[name].disabled = button.enabled is not None and not button.enabled(values)

    def set(self, **values):
        """Set controls as a user would (observers fire) in one :meth:`batch`; return the state.

        However many controls change, ``update`` runs and the figure redraws
        once. A value a control cannot take, or one ``update`` refuses, raises
        ``ValueError`` saying what it should be, and nothing changes.

        Examples
        --------
        >>> from attention_lib.widgets import soft_lookup_explorer
        >>> explorer = soft_lookup_explorer()
        >>> round(float(explorer.set(angle=90.0, length=0.0).weights[0]), 3)
        0.333
        >>> explorer.set(angle=float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: angle must be a number from -180 to 180; got nan.
        >>> explorer.values
        {'angle': 90.0, 'length': 0.0}
        """
        unknown = set(values) - set(self.controls)
        if unknown:
            raise KeyError(f"unknown control(s) {sorted(unknown)}; known: {list(self.controls)}.")
        problems = [_value_error(key, self.controls[key], value) for key, value in values.items()]
        if any(problems):
            raise ValueError(" ".join(p for p in problems if p))
        try:
            with self.batch():
                for key, value in values.items():
                    self.controls[key].value = value
        except (ValueError, TypeError, traitlets.TraitError) as error:
            asked = ", ".join(f"{key}={value!r}" for key, value in values.items())
            raise ValueError(f"{asked} refused, nothing changed: {error}") from error
        return self.state

    def press(self, name):
        """Do what a click on button ``name`` does; return the state.

        Examples
        --------
        >>> import ipywidgets
        >>> spec = ExplorerSpec(
        ...     "count", "count", None, lambda n: n, lambda fig, s: None,
        ...     lambda scene, s: None, lambda s: "", lambda v, s: f"n = {v['n']}", figsize=(1, 1))
        >>> explorer = spec.explorer(
        ...     {"n": HiddenControl(0)},
        ...     buttons={"next": Button("Next", lambda values: {"n": values["n"] + 1})})
        >>> explorer.press("next"), explorer.main_control is explorer.buttons["next"]
        (1, True)
        """
        return self.set(**self._button_specs[name].press(self.values))

    def draw_static(self, state=None, *, style=None):
        """Draw ``state`` (default: the first state) as an ordinary pyplot figure.

        For the separate static cell after the explorer, ending in
        ``plt.show()``: GitHub, exported HTML and a notebook without a kernel
        show this picture.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> from attention_lib.widgets import soft_lookup_explorer
        >>> fig = soft_lookup_explorer().draw_static()
        >>> fig.get_size_inches().tolist()
        [10.0, 3.5]
        >>> import matplotlib.pyplot as plt; plt.close(fig)
        """
        state = self.first_state if state is None else state
        return self.spec.figure(state, style=self.style if style is None else style, pyplot=True)

    def close(self):
        """Close the widgets (frees their comms in a live kernel).

        All of them are in :attr:`widget`'s tree, but the hidden controls, which are none.
        """
        tree = [self.widget]
        while tree:
            widget = tree.pop()
            tree += getattr(widget, "children", ())
            widget.close()

    def __repr__(self):
        return f"<{self.title} explorer: run the notebook to interact>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        return {**(data or {}), "text/plain": repr(self)}
