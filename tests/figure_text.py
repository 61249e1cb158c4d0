"""How large a figure's text is where JupyterLab shows it, in CSS pixels (issue 12).

A projector's back row reads 14 px; a point size says nothing until the figure's
dpi and its displayed width are known. Live explorer figures are rendered
``DISPLAY_WIDTH_PX`` wide and shown 1:1; a static figure wider than the notebook
column is shrunk by JupyterLab to the column, which shrinks its text too.

Used in two places: ``tests/test_figure_text.py`` measures the live explorers,
and ``tests/nbval_figure_text.py`` loads this file into each notebook's kernel
under nbval, where :func:`watch_printed_figures` measures every figure as the
inline backend turns it into a PNG. Only matplotlib is imported here: the
kernel loads nothing else on the notebook's behalf.
"""

from __future__ import annotations

from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.text import Text

MIN_TEXT_PX = 14.0
#: JupyterLab's notebook column at 1920 x 1080 (measured, see plots.DISPLAY_WIDTH_PX).
COLUMN_PX = 1484

#: One entry per figure printed since :func:`watch_printed_figures`: its (text, CSS px).
printed = []


def shown_text(fig, *, tight=False):
    """``(text, CSS px)`` of every visible, non-empty text inside ``fig`` as displayed.

    ``tight``: the figure is saved cropped to its contents (``bbox_inches="tight"``,
    as the inline backend does), so the width JupyterLab may shrink is the crop's.
    """
    fig.canvas.draw()  # positions and visibility of tick labels
    renderer = fig.canvas.get_renderer()
    width_in = fig.get_tightbbox(renderer).width + 0.2 if tight else fig.get_figwidth()
    shrink = min(1.0, COLUMN_PX / (width_in * fig.dpi))
    found = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        if not text.get_window_extent(renderer).overlaps(fig.bbox):
            continue
        found.append((text.get_text(), text.get_fontsize() * fig.dpi / 72 * shrink))
    return found


def too_small(found):
    """The ``(text, CSS px)`` pairs of ``found`` under ``MIN_TEXT_PX``, rounded for a message."""
    return [(text, round(px, 1)) for text, px in found if px < MIN_TEXT_PX]


def watch_printed_figures():
    """From now on, note the text of every figure before it is printed (saved as an image)."""
    print_figure = FigureCanvasBase.print_figure

    def noting_print_figure(canvas, *args, **kwargs):
        printed.append(shown_text(canvas.figure, tight=kwargs.get("bbox_inches") == "tight"))
        return print_figure(canvas, *args, **kwargs)

    FigureCanvasBase.print_figure = noting_print_figure


def printed_report():
    """How many figures were printed, and ``(figure number, text, CSS px)`` of each too small."""
    small = [(n, *pair) for n, found in enumerate(printed, 1) for pair in too_small(found)]
    return {"figures": len(printed), "too_small": small, "min_px": MIN_TEXT_PX}
