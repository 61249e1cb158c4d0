"""How large a figure's text is where JupyterLab shows it, in CSS pixels (issue 12).

A projector's back row reads 14 px; a point size says nothing until the figure's
dpi and its displayed width are known. Live explorer figures are rendered
``DISPLAY_WIDTH_PX`` wide and shown 1:1; a static figure wider than the notebook
column is shrunk by JupyterLab to the column, which shrinks its text too.

Used in two places: ``tests/test_figure_text.py`` measures the live explorers,
and ``tests/nbval_figure_text.py`` loads this file into each notebook's kernel
under nbval, where :func:`watch_printed_figures` measures every figure as the
inline backend turns it into a PNG. The browser tests load it into their
servers' kernels, where :func:`note_png_text` notes every PNG's smallest text for
the page to scale (tests/browser/README.md). Only matplotlib (and Pillow, which
it uses) is imported here: the kernel loads nothing else on the notebook's behalf.
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


def smallest_drawn_text(fig):
    """``(CSS px at the figure's dpi, text)`` of the smallest text of a figure just drawn.

    No new draw (the explorers blit): the texts and their positions are those of
    the last draw. ``(inf, "")`` for a figure without text.
    """
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    # the smallest first: usually only one extent is computed
    for text in sorted(texts, key=Text.get_fontsize):
        if text.get_window_extent(renderer).overlaps(fig.bbox):
            return text.get_fontsize() * fig.dpi / 72, text.get_text()
    return float("inf"), ""


#: The explorers' own PNG encoder (their figure's RGB rows, written without Pillow).
EXPLORER_ENCODER = ("attention_lib.widgets._shell", "_encode")


def note_png_text(log_path):
    """From now on, append ``{"sha256", "px", "text"}`` to ``log_path`` for every PNG
    made from a matplotlib figure (inline backend and ``savefig`` alike, and the
    explorers' own encoder): the smallest text in the PNG's own pixels.

    The browser tests load this into their servers' kernels: the page knows how
    much each image is scaled, only the kernel knows its text. matplotlib's PNGs
    are saved by Pillow after the canvas' buffer is read (``buffer_rgba``), so the
    figure is noted at the first and the PNG's bytes hashed at the second; the
    explorers' encoder (:data:`EXPLORER_ENCODER`) is wrapped as its module is
    imported, which the kernel does later, if at all.
    """
    import hashlib
    import importlib.util
    import io
    import json
    import sys

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    pending = []
    buffer_rgba = FigureCanvasAgg.buffer_rgba
    save = Image.Image.save

    def note(png, px, text):
        digest = hashlib.sha256(png).hexdigest()
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"sha256": digest, "px": px, "text": text}) + "\n")

    def noting_buffer_rgba(canvas):
        pending[:] = [smallest_drawn_text(canvas.figure)]
        return buffer_rgba(canvas)

    def hashing_save(image, fp, format=None, **params):
        result = save(image, fp, format, **params)
        if pending and isinstance(fp, io.BytesIO) and str(format).lower() == "png":
            note(fp.getvalue(), *pending.pop())
        return result

    def noting_encoder(encode):
        def encoded(canvas, *args, **kwargs):
            png = encode(canvas, *args, **kwargs)
            note(png, *pending.pop())  # buffer_rgba noted the figure on the way
            return png

        return encoded

    class WrapEncoder:
        """Finds the encoder's module for the import system, and wraps the encoder once
        the module has run (then steps aside)."""

        def find_spec(self, name, path, target=None):
            module_name, attribute = EXPLORER_ENCODER
            if name != module_name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                setattr(module, attribute, noting_encoder(getattr(module, attribute)))

            spec.loader.exec_module = exec_module
            return spec

    FigureCanvasAgg.buffer_rgba = noting_buffer_rgba
    Image.Image.save = hashing_save
    sys.meta_path.insert(0, WrapEncoder())
