"""The thin ipywidgets shell every explorer shares.

An explorer is three pure pieces written once per chapter idea:

* ``update(**control_values) -> state`` (NumPy only, what tests assert on),
* ``draw(fig, state)`` (matplotlib through :mod:`attention_lib.plots` only),
* ``table(state) -> str`` (a small HTML table of the numbers shown),

and this shell, which wires them to controls (each explorer module describes
itself once in an :class:`ExplorerSpec`, whose :meth:`ExplorerSpec.explorer`
builds the :class:`Explorer`). On every change of a control's
``value`` (or once per :meth:`Explorer.batch` of changes) it calls ``update``,
redraws one reused Agg figure (never a new pyplot figure) and hands PNG bytes
to a ``widgets.Image``. An ``Image`` rather than a ``widgets.Output`` because
output captured in an ``Output`` leaks into the cell under nbval; an ``Image``
keeps explorer cells strictly comparable.

The figure is rendered :data:`~attention_lib.plots.DISPLAY_WIDTH_PX` pixels
wide (the notebook column at 1920 x 1080; less for an explorer that shows a
control beside its figure, ``display_width_px``) and the image is shown at that size
or smaller, never stretched, so a projector gets sharp text. Rendering that
many pixels is affordable because a change only blits the artists that move
onto a cached background, a few recent layouts are kept frozen (going back to
an earlier size costs a blit, not a relayout), and the PNG is encoded straight
from the Agg buffer, without alpha, at zlib level 1.
"""

from __future__ import annotations

import contextlib
import functools
import html
import io
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import ipywidgets as widgets
import numpy as np
from PIL import Image as PILImage

from .. import plots
from ._frontend import ExplorerFrontend

__all__ = ["Explorer", "ExplorerSpec", "html_table", "live_dpi", "render_png"]

#: Frozen layouts an explorer keeps (one per static key: the mask editor's T, say), so
#: going back to a recent size blits instead of laying the figure out again.
FROZEN_LAYOUTS = 6

#: The static key before anything is drawn: equal to no key, so the first update draws in full.
_NOT_DRAWN = object()


class ExplorerSpec(NamedTuple):
    """One explorer described once: what the shell wires together and what the registry finds.

    Each explorer module defines ``EXPLORER = ExplorerSpec(...)`` from its own
    functions, and its factory builds the live widget with
    :meth:`ExplorerSpec.explorer`, so the explorer calls exactly the functions
    named here and ``spec.update(**explorer.values)`` is always
    ``explorer.state`` (what the benchmark's naive redraw relies on).

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"soft_lookup"``.
    title : str
        Human name, e.g. ``"soft lookup"`` (the explorer's text display).
    factory : callable
        ``factory(*, style=...) -> Explorer``, with default arguments otherwise.
    update : callable
        ``update(**control_values) -> state``, pure: every control's keyword
        is one of its parameters.
    draw, refresh, table, readout : callable
        ``draw(fig, state)``, ``refresh(fig, state) -> artists``,
        ``table(state) -> str`` and ``readout(values, state) -> str``; see
        :class:`Explorer`.
    figsize : (float, float)
        Figure size in inches in the default style.
    board_figsize : (float, float), optional
        Figure size in the board style (large fonts need more room); default ``figsize``.
    static_key : callable, optional
        See :class:`Explorer`; default: the static part never changes.
    display_width_px : int, optional
        Width the figure is rendered and shown at, in CSS pixels; default
        :data:`~attention_lib.plots.DISPLAY_WIDTH_PX` (the whole column). An
        explorer that shows controls beside its figure (``beside_figure``)
        takes less, so the row still fits the column unscaled.

    Examples
    --------
    >>> import ipywidgets
    >>> spec = ExplorerSpec(
    ...     "square", "square", None, lambda x: x * x, lambda fig, s: fig.subplots(),
    ...     lambda fig, s: None, lambda s: "", lambda values, s: f"x = {values['x']}",
    ...     figsize=(2.0, 2.0), board_figsize=(4.0, 4.0))
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

    def figsize_for(self, style):
        """The figure size in inches for ``style`` ("default" or "board").

        Examples
        --------
        >>> from attention_lib.widgets.sqrt_dk import EXPLORER
        >>> EXPLORER.figsize_for("default") == EXPLORER.figsize
        True
        """
        if style == "board" and self.board_figsize is not None:
            return self.board_figsize
        return self.figsize

    def explorer(self, controls, *, follow=None, style=None, beside_figure=()):
        """The live :class:`Explorer` of this spec, wired to ``controls``.

        Parameters
        ----------
        controls : mapping of str to ipywidgets.ValueWidget
            Keyword of :attr:`update` -> its control; the first is the main control.
        follow : mapping of str to callable, optional
            Dependent controls, see :class:`Explorer`.
        style : {"default", "board"}, optional
            Default: :func:`attention_lib.plots.default_style` (``$ATTENTION_STYLE``).
        beside_figure : sequence of str, optional
            Controls shown left of the figure instead of in the controls row, see
            :class:`Explorer`.

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
        return Explorer(
            self.title,
            controls,
            self.update,
            self.draw,
            self.table,
            self.readout,
            refresh=self.refresh,
            static_key=self.static_key,
            follow=follow,
            figsize=self.figsize,
            board_figsize=self.board_figsize,
            style=style,
            display_width_px=self.display_width_px,
            beside_figure=beside_figure,
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
    width_px = plots.DISPLAY_WIDTH_PX if width_px is None else width_px
    return float(width_px) / float(figsize[0])


def render_png(fig, *, compress_level=1):
    """Render ``fig`` with Agg and return PNG bytes, encoded fast.

    Draws once and encodes the RGBA buffer directly with Pillow (``savefig``
    would lay out and draw the figure a second time). ``compress_level=1``
    makes files a little larger and encoding several times faster.

    Examples
    --------
    >>> fig, ax = plots.new_figure(pyplot=False, figsize=(2, 1), dpi=50)
    >>> png = render_png(fig)
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return _encode(canvas, compress_level)


def _encode(canvas, compress_level=1):
    """PNG bytes of what the Agg canvas currently holds (no drawing)."""
    # The figures are opaque: dropping alpha (in Pillow's C code, no NumPy copy) leaves a
    # quarter less to compress and send.
    size = canvas.get_width_height()
    rgba = PILImage.frombuffer("RGBA", size, canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buffer = io.BytesIO()
    rgba.convert("RGB").save(buffer, format="png", compress_level=compress_level)
    return buffer.getvalue()


def _cell(value, decimals):
    if isinstance(value, (float, np.floating)):
        return f"{value:.{decimals}f}"
    return html.escape(str(value))


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
    body = []
    for row in rows:
        first, *rest = row
        cells = "".join(f"<td>{_cell(v, decimals)}</td>" for v in rest)
        body.append(f'<tr><th scope="row">{_cell(first, decimals)}</th>{cells}</tr>')
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (
        f'<table class="attn-table">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


class Explorer:
    """An interactive explorer: controls, a readout, a live figure and a numbers table.

    Parameters
    ----------
    name : str
        Human name, e.g. ``"soft lookup"``; used in the stable text display.
    controls : mapping of str to ipywidgets.ValueWidget
        Keyword of ``update`` -> its control. The first is the main control.
        Sliders should have ``continuous_update=False`` (checked).
    update : callable
        ``update(**values) -> state``, pure.
    draw : callable
        ``draw(fig, state)``; called on a cleared figure.
    table : callable
        ``table(state) -> str`` (HTML).
    readout : callable
        ``readout(values, state) -> str`` (HTML): control values and the key number.
    refresh : callable, optional
        ``refresh(fig, state) -> artists``: move the artists ``draw`` made so
        they show ``state`` (through the ``plots.update_*`` helpers) and
        return them, the same artists every time. When given, the shell draws
        once, freezes the layout, renders everything that does not move (axes,
        ticks, labels: most of a redraw's cost) once as a background, and on
        each change restores that background and draws only the returned
        artists (blitting). If ``refresh`` returns None, the frozen figure is
        redrawn in full instead. Without ``refresh``, each change clears the
        figure and calls ``draw`` again.
    static_key : callable, optional
        ``static_key(state) -> key`` (anything comparable with ``==``): what the
        part of the figure that ``refresh`` does not move depends on. While the
        key stays equal, changes go through ``refresh``; when it changes (the
        mask editor's length ``T`` changes the heatmaps' shape), the shell
        clears the figure, calls ``draw`` and freezes again, so that change
        costs one full draw and the ones after it blit again. Default: the
        static part never changes. A key of the state rather than a "cannot
        move" answer from ``refresh``: the shell decides before any artist is
        touched, so ``refresh`` never inspects the figure to learn what it
        shows, never leaves it half moved, and the choice is testable
        without a figure.
    follow : mapping of str to callable, optional
        ``{keyword: follow(change)}`` for controls that others depend on:
        when that control changes, ``follow`` gets the traitlets change and
        sets the dependent controls (e.g. the mask editor's ``T`` resets the
        length sliders' range and the cell grid) inside the same
        :meth:`batch`, so the whole change costs one update and one redraw.
    figsize : (float, float), default (8, 3.5)
        Inches in the default style; rendered at :func:`live_dpi`, so the
        image is ``DISPLAY_WIDTH_PX`` pixels wide whatever the inches.
    board_figsize : (float, float), optional
        Inches in the board style (larger type on the same pixels); default ``figsize``.
    display_width_px : int, optional
        CSS pixels the figure is rendered and shown at; default
        :data:`~attention_lib.plots.DISPLAY_WIDTH_PX`, the notebook column at
        1920 x 1080. Less when ``beside_figure`` takes part of the row.
    beside_figure : sequence of str, optional
        Keywords of controls shown in a column left of the figure rather than
        in the controls row: a control that acts on the figure (the mask
        editor's grid of cells) sits next to it. When the page is too narrow
        for both (a zoomed browser), the figure shrinks beside the column, so
        nothing needs scrolling inside the explorer.
    style : {"default", "board"}, optional
        The style to start in. Default: :func:`attention_lib.plots.default_style`,
        the environment variable ``ATTENTION_STYLE`` that ``make board`` sets,
        else "default". The explorer's "board" toggle switches it later; the
        style belongs to this explorer, nothing global changes.

    Attributes
    ----------
    widget : ipywidgets.VBox
        What a notebook displays (class ``attn-explorer``).
    controls : dict
        The controls, main control first (class ``attn-main-control``).
    controls_row : ipywidgets.HBox
        The row that shows the controls (but those ``beside_figure``); an
        explorer may add buttons that are not controls of ``update`` to it
        (the walkthrough's Back and Reset).
    board_toggle : ipywidgets.ToggleButton
        "board": large type and thick lines for a projector (class
        ``attn-board-toggle``, last in :attr:`controls_row`). Not a control of
        ``update``: it changes how the state is drawn, not the state.
    style : str
        The style the figure is drawn in now.
    readout, table : ipywidgets.HTML
    figure : ipywidgets.Image
        PNG of the current state (class ``attn-figure``).
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
    >>> def update(x):
    ...     return {"x": x, "square": x * x}
    >>> def draw(fig, state):
    ...     ax = fig.subplots()
    ...     ax.bar([0], [state["square"]])
    >>> explorer = Explorer(
    ...     "square", {"x": ipywidgets.IntSlider(2, 0, 9, continuous_update=False)}, update, draw,
    ...     table=lambda s: html_table([["x^2", s["square"]]], ["", "value"]),
    ...     readout=lambda values, s: f"x = {values['x']}", figsize=(2, 2))
    >>> explorer
    <square explorer: run the notebook to interact>
    >>> before = explorer.png
    >>> explorer.set(x=3)["square"]
    9
    >>> explorer.png != before, explorer.readout.value
    (True, 'x = 3')
    """

    def __init__(
        self,
        name,
        controls: Mapping[str, widgets.ValueWidget],
        update,
        draw,
        table,
        readout,
        *,
        refresh=None,
        static_key=None,
        follow=None,
        figsize=(8.0, 3.5),
        board_figsize=None,
        style=None,
        display_width_px=None,
        beside_figure=(),
    ):
        if not controls:
            raise ValueError("an explorer needs at least one control.")
        self.name = str(name)
        self.controls = dict(controls)
        for key, control in self.controls.items():
            if getattr(control, "continuous_update", False):
                raise ValueError(
                    f"control {key!r} has continuous_update=True; explorers redraw on "
                    "release only (continuous_update=False), so dragging stays responsive."
                )
        self._follow = dict(follow or {})
        unknown = set(self._follow) - set(self.controls)
        if unknown:
            raise KeyError(f"follow names unknown control(s) {sorted(unknown)}.")
        self._update, self._draw, self._table, self._readout = update, draw, table, readout
        self._refresh_artists = refresh
        self._static_key = static_key if static_key is not None else (lambda state: None)
        self._figsizes = {"default": tuple(figsize), "board": tuple(board_figsize or figsize)}
        self.display_width_px = int(display_width_px or plots.DISPLAY_WIDTH_PX)
        beside_figure = tuple(beside_figure)
        unknown = set(beside_figure) - set(self.controls)
        if unknown:
            raise KeyError(f"beside_figure names unknown control(s) {sorted(unknown)}.")
        self._batch_depth = 0  # open batch() blocks
        self._pending = False  # a control changed inside the open batch
        self.style = plots.default_style() if style is None else style
        self._new_figures()

        self.main_control.add_class("attn-main-control")
        self.readout = widgets.HTML()
        self.readout.add_class("attn-readout")
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
        )
        self.figure.add_class("attn-figure")
        self.board_toggle = widgets.ToggleButton(
            value=self.style == "board",
            description="board",
            icon="",
            tooltip="Board style: large type and thick lines for a projector",
            layout=widgets.Layout(width="auto"),
        )
        self.board_toggle.add_class("attn-board-toggle")
        self.table = widgets.HTML()
        self.table.add_class("attn-table")
        numbers = widgets.Accordion(children=[self.table], titles=("Numbers",))
        numbers.selected_index = None  # collapsed until asked for
        # The page-side helper (kernel-gone message, aria values, presenter keys):
        # first, so its message sits above the controls it switches off.
        self.frontend = ExplorerFrontend()
        # wrap onto a second line rather than squeeze sliders to a few pixels
        self.controls_row = widgets.HBox(
            [*(c for k, c in self.controls.items() if k not in beside_figure), self.board_toggle],
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
            [
                self.frontend,
                self.controls_row,
                self.readout,
                figure_row,
                numbers,
            ]
        )
        self.widget.add_class("attn-explorer")
        self._mark_style()
        self.state = None
        self._refresh()
        self.first_state = self.state
        for key, control in self.controls.items():
            control.observe(functools.partial(self._on_change, key), names="value")
        self.board_toggle.observe(self._on_board_toggle, names="value")

    def _new_figures(self):
        """Start with one figure and no drawn layout."""
        # Agg figures invisible to pyplot, one per frozen layout, most recent last:
        # (style, static key) -> (figure, background of what does not move).
        self._frozen = OrderedDict()
        self._fig = self._make_figure()
        self._layout_engine = self._fig.get_layout_engine()
        self._shown_key = _NOT_DRAWN  # (style, static key) of the state self._fig shows
        self._background = None  # pixels of everything that does not move (blitting)

    def _make_figure(self):
        figsize = self._figsizes[self.style]
        fig, _ = plots.new_figure(
            0,
            figsize=figsize,
            style=self.style,
            pyplot=False,
            dpi=live_dpi(figsize, self.display_width_px),
        )
        return fig

    def _mark_style(self):
        """The board class on the explorer: large readout and controls (``_frontend.css``)."""
        if self.style == "board":
            self.widget.add_class("attn-board")
        else:
            self.widget.remove_class("attn-board")

    def _on_board_toggle(self, change):
        self.set_style("board" if change["new"] else "default")

    def set_style(self, style):
        """Draw from now on in ``style`` ("default" or "board"); what the toggle does.

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
        if self._refresh_artists is None:  # one figure, drawn in full each time
            self._fig = self._make_figure()
        # Otherwise the layouts of both styles stay frozen side by side: a presenter
        # switching back and forth gets a blit after the first switch each way.
        self._refresh()

    @property
    def figure_dpi(self):
        """Resolution of the live figure (pixels per inch of its size)."""
        return self._fig.dpi

    @property
    def main_control(self):
        """The first control (the main slider or button)."""
        return next(iter(self.controls.values()))

    @property
    def values(self):
        """Current control values as ``{keyword: value}``."""
        return {key: control.value for key, control in self.controls.items()}

    @property
    def png(self):
        """PNG bytes the browser currently shows."""
        return self.figure.value

    @contextlib.contextmanager
    def batch(self):
        """Group control changes: one update and one redraw when the outermost block ends.

        Inside the block, changing a control only notes that something changed;
        leaving the outermost block (also by an exception: the controls did
        change) runs ``update`` once on all current values and redraws once.
        Nothing changed, nothing redrawn.

        Examples
        --------
        >>> import ipywidgets
        >>> calls = []
        >>> explorer = Explorer(
        ...     "sum", {"a": ipywidgets.IntSlider(0, 0, 5, continuous_update=False),
        ...             "b": ipywidgets.IntSlider(0, 0, 5, continuous_update=False)},
        ...     lambda a, b: calls.append((a, b)) or a + b, lambda fig, s: fig.subplots(),
        ...     lambda s: "", lambda v, s: "", figsize=(1, 1))
        >>> with explorer.batch():
        ...     explorer.controls["a"].value = 2
        ...     explorer.controls["b"].value = 3
        >>> calls, explorer.state
        ([(0, 0), (2, 3)], 5)
        """
        self._batch_depth += 1
        try:
            yield self
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0 and self._pending:
                self._pending = False
                self._refresh()

    def _on_change(self, key, change):
        with self.batch():
            self._pending = True
            if key in self._follow:
                self._follow[key](change)  # dependent controls join this batch

    def _refresh(self):
        values = self.values
        self.state = self._update(**values)
        with plots.series_style(self.style):
            if self._refresh_artists is not None and self._recall(self._frozen_key()):
                png = self._move()
            else:
                png = self._draw_in_full()
        self.figure.value = png
        self.readout.value = self._readout(values, self.state)
        self.table.value = self._table(self.state)

    def _frozen_key(self):
        return (self.style, self._static_key(self.state))

    def _recall(self, key):
        """Make the frozen layout drawn for ``key`` current; False if there is none."""
        if key == self._shown_key:
            return True
        frozen = self._frozen.get(key)
        if frozen is None:
            return False
        self._frozen.move_to_end(key)
        self._fig, self._background = frozen
        self._shown_key = key
        return True

    def _draw_in_full(self):
        """Clear, draw ``self.state`` from scratch, render; freeze if there is a refresh path."""
        if self._refresh_artists is not None and self._shown_key is not _NOT_DRAWN:
            # Keep the layout on show for a later return to its key; draw on another
            # figure, the least recently used one once FROZEN_LAYOUTS are kept.
            recycled = None
            if len(self._frozen) >= FROZEN_LAYOUTS:
                _, (recycled, _) = self._frozen.popitem(last=False)
            same_style = recycled is not None and plots.figure_style(recycled) == self.style
            self._fig = recycled if same_style else self._make_figure()
        fig = self._fig
        fig.clear()
        fig.set_layout_engine(self._layout_engine or "none")
        self._draw(fig, self.state)
        if self._refresh_artists is None:
            return render_png(fig)
        return self._freeze()

    def _freeze(self):
        """Fix the layout, cache the background of the moving artists; return the first PNG.

        One render serves both: the moving artists are left out of it (the
        layout pass still sees them) and blitted on top, so a full draw costs
        one render, not a render for the PNG plus one for the background.
        """
        fig = self._fig
        self._shown_key = self._frozen_key()
        self._background = None
        self._frozen.pop(self._shown_key, None)
        moving = self._refresh_artists(fig, self.state)  # same state: names, does not move
        if moving is not None:
            moving = list(moving)
            for artist in moving:
                artist.set_animated(True)  # left out of canvas.draw(), drawn by _blit
        fig.canvas.draw()
        # Keep the positions this layout pass found: none per change.
        fig.set_layout_engine("none")
        if moving is not None:
            self._background = fig.canvas.copy_from_bbox(fig.bbox)
        self._frozen[self._shown_key] = (fig, self._background)
        if moving is None:  # nothing to blit: changes render the frozen figure in full
            return _encode(fig.canvas)
        return self._blit(moving)

    def _move(self):
        moved = self._refresh_artists(self._fig, self.state)
        return self._blit(moved) if self._background is not None else render_png(self._fig)

    def _blit(self, moved):
        canvas = self._fig.canvas
        canvas.restore_region(self._background)
        for artist in moved:
            self._fig.draw_artist(artist)
        return _encode(canvas)

    def set(self, **values):
        """Set controls as a user would (observers fire) in one :meth:`batch`; return the state.

        However many controls change, ``update`` runs and the figure redraws once.

        Examples
        --------
        >>> import ipywidgets
        >>> explorer = Explorer(
        ...     "echo", {"x": ipywidgets.IntSlider(0, 0, 5, continuous_update=False)},
        ...     lambda x: x, lambda fig, s: fig.subplots(), lambda s: "", lambda v, s: "",
        ...     figsize=(1, 1))
        >>> explorer.set(x=4)
        4
        """
        unknown = set(values) - set(self.controls)
        if unknown:
            raise KeyError(f"unknown control(s) {sorted(unknown)}; known: {list(self.controls)}.")
        with self.batch():
            for key, value in values.items():
                self.controls[key].value = value
        return self.state

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
        >>> import ipywidgets
        >>> explorer = Explorer(
        ...     "echo", {"x": ipywidgets.IntSlider(0, 0, 5, continuous_update=False)},
        ...     lambda x: x, lambda fig, s: fig.subplots(), lambda s: "", lambda v, s: "",
        ...     figsize=(1, 1))
        >>> fig = explorer.draw_static()
        >>> fig.get_size_inches().tolist()
        [1.0, 1.0]
        >>> import matplotlib.pyplot as plt; plt.close(fig)
        """
        style = self.style if style is None else style
        state = self.first_state if state is None else state
        figsize = self._figsizes[style]
        fig, _ = plots.new_figure(
            0, figsize=figsize, style=style, dpi=live_dpi(figsize, self.display_width_px)
        )
        with plots.series_style(style):
            self._draw(fig, state)
        return fig

    def close(self):
        """Close the widgets (frees their comms in a live kernel)."""
        for child in (
            self.widget,
            self.frontend,
            self.readout,
            self.figure,
            self.table,
            self.board_toggle,
            *self.controls.values(),
        ):
            child.close()

    def __repr__(self):
        return f"<{self.name} explorer: run the notebook to interact>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data = dict(data) if data else {}
        data["text/plain"] = repr(self)
        return data
