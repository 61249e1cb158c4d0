"""The thin ipywidgets shell every explorer shares.

An explorer is three pure pieces written once per chapter idea:

* ``update(**control_values) -> state`` (NumPy only, what tests assert on),
* ``draw(fig, state)`` (matplotlib through :mod:`attention_lib.plots` only),
* ``table(state) -> str`` (a small HTML table of the numbers shown),

and this shell, which wires them to controls. On every change of a control's
``value`` it calls ``update``, redraws one reused Agg figure (never a new
pyplot figure) and hands PNG bytes to a ``widgets.Image``. An ``Image``
rather than a ``widgets.Output`` because output captured in an ``Output``
leaks into the cell under nbval; an ``Image`` keeps explorer cells strictly
comparable. The PNG is encoded straight from the Agg buffer at a modest dpi
with zlib level 1: most of a redraw's cost is rendering and encoding, not
the science.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import ipywidgets as widgets
import numpy as np
from PIL import Image as PILImage

from .. import plots

__all__ = ["Explorer", "ExplorerSpec", "html_table", "render_png"]

#: Resolution of the live figure: readable on a laptop screen, cheap to encode.
LIVE_DPI = 72


class ExplorerSpec(NamedTuple):
    """How to find and benchmark an explorer: each explorer module defines ``EXPLORER``.

    Attributes
    ----------
    name : str
        Short name, e.g. ``"soft_lookup"``.
    factory : callable
        ``factory() -> Explorer`` with default arguments.
    update, draw : callable
        The explorer's pure ``update`` and its ``draw(fig, state)``.
    figsize : (float, float)
        The explorer's figure size in inches (the naive benchmark uses it too).
    changes : tuple of dict, optional
        Control values to step through in the benchmark; default: sweep the
        main control over its range.
    """

    name: str
    factory: Callable[[], Explorer]
    update: Callable[..., Any]
    draw: Callable[[Any, Any], Any]
    figsize: tuple[float, float]
    changes: tuple[dict, ...] = ()


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
    rgba = np.asarray(canvas.buffer_rgba())
    buffer = io.BytesIO()
    PILImage.fromarray(rgba, mode="RGBA").save(buffer, format="png", compress_level=compress_level)
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
        return them, the same artists every time. When given, ``draw`` runs
        once; the shell then freezes the layout, renders everything that does
        not move (axes, ticks, labels: most of a redraw's cost) once as a
        background, and on each change restores that background and draws
        only the returned artists (blitting). If ``refresh`` returns None, the
        frozen figure is redrawn in full instead. Without ``refresh``, each
        change clears the figure and calls ``draw`` again.
    figsize : (float, float), default (8, 3.5)
    dpi : float, default LIVE_DPI
    style : {"default", "board"}, default "default"

    Attributes
    ----------
    widget : ipywidgets.VBox
        What a notebook displays (class ``attn-explorer``).
    controls : dict
        The controls, main control first (class ``attn-main-control``).
    readout, table : ipywidgets.HTML
    figure : ipywidgets.Image
        PNG of the current state (class ``attn-figure``).
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
        figsize=(8.0, 3.5),
        dpi=LIVE_DPI,
        style="default",
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
        self._update, self._draw, self._table, self._readout = update, draw, table, readout
        self._refresh_artists = refresh
        self._frozen = False  # layout fixed after the first render (refresh path)
        self._background = None  # pixels of everything that does not move (blitting)
        self.style = style
        # One Agg figure for the explorer's lifetime, invisible to pyplot.
        self._fig, _ = plots.new_figure(0, figsize=figsize, style=style, pyplot=False, dpi=dpi)

        self.main_control.add_class("attn-main-control")
        self.readout = widgets.HTML()
        self.readout.add_class("attn-readout")
        self.figure = widgets.Image(format="png")
        self.figure.add_class("attn-figure")
        self.table = widgets.HTML()
        self.table.add_class("attn-table")
        numbers = widgets.Accordion(children=[self.table], titles=("Numbers",))
        numbers.selected_index = None  # collapsed until asked for
        self.widget = widgets.VBox(
            [widgets.HBox(list(self.controls.values())), self.readout, self.figure, numbers]
        )
        self.widget.add_class("attn-explorer")
        self.state = None
        self._refresh()
        self.first_state = self.state
        for control in self.controls.values():
            control.observe(self._on_change, names="value")

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

    def _on_change(self, _change=None):
        self._refresh()

    def _refresh(self):
        values = self.values
        self.state = self._update(**values)
        with plots.series_style(self.style):
            if self._frozen:
                moved = self._refresh_artists(self._fig, self.state)
                png = self._blit(moved) if self._background is not None else render_png(self._fig)
            else:
                self._fig.clear()
                self._draw(self._fig, self.state)
                png = render_png(self._fig)
                if self._refresh_artists is not None:
                    self._freeze()
        self.figure.value = png
        self.readout.value = self._readout(values, self.state)
        self.table.value = self._table(self.state)

    def _freeze(self):
        """Fix the layout and cache the background of the moving artists."""
        fig = self._fig
        # Keep the positions the first layout found: no layout pass per change.
        fig.set_layout_engine("none")
        self._frozen = True
        moving = self._refresh_artists(fig, self.state)  # same state: changes nothing
        if moving is None:
            return
        moving = list(moving)
        for artist in moving:
            artist.set_animated(True)  # left out of canvas.draw(), drawn by _blit
        fig.canvas.draw()
        self._background = fig.canvas.copy_from_bbox(fig.bbox)

    def _blit(self, moved):
        canvas = self._fig.canvas
        canvas.restore_region(self._background)
        for artist in moved:
            self._fig.draw_artist(artist)
        return _encode(canvas)

    def set(self, **values):
        """Set controls as a user would (observers fire); return the new state.

        Setting several controls redraws once per control that changed.

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
        fig, _ = plots.new_figure(0, figsize=tuple(self._fig.get_size_inches()), style=style)
        with plots.series_style(style):
            self._draw(fig, state)
        return fig

    def close(self):
        """Close the widgets (frees their comms in a live kernel)."""
        for child in (self.widget, self.readout, self.figure, self.table, *self.controls.values()):
            child.close()

    def __repr__(self):
        return f"<{self.name} explorer: run the notebook to interact>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data = dict(data) if data else {}
        data["text/plain"] = repr(self)
        return data
