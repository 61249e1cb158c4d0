"""Layout help shared by this package's explorers (private: the registry skips ``_`` modules)."""

from __future__ import annotations


def margins(fig, *, left, right, bottom, top, gap, columns=2):
    """Subplot margins given in inches at the default font size, scaled for the figure's style.

    Fixed margins (no layout pass per redraw) that still fit the larger fonts of
    the board style: every inch is multiplied by the ratio of the style's label
    size to the default one and converted to a fraction of the figure, ready
    for ``gridspec_kw`` / ``add_gridspec``.

    Examples
    --------
    >>> from attention_lib import plots
    >>> from attention_lib.widgets._layout import margins
    >>> fig, _ = plots.new_figure(0, figsize=(10, 4), pyplot=False)
    >>> m = margins(fig, left=1.0, right=0.5, bottom=0.4, top=0.4, gap=1.0)
    >>> round(m["left"], 2), round(m["right"], 2), round(m["wspace"], 3)
    (0.1, 0.95, 0.267)
    >>> board, _ = plots.new_figure(0, figsize=(10, 4), style="board", pyplot=False)
    >>> round(margins(board, left=1.0, right=0.5, bottom=0.4, top=0.4, gap=1.0)["left"], 2)
    0.2
    """
    from .. import plots

    factor = plots.STYLES[plots.figure_style(fig)]["label"] / plots.STYLES["default"]["label"]
    width, height = (float(x) for x in fig.get_size_inches())
    left, right, bottom, top, gap = (factor * x for x in (left, right, bottom, top, gap))
    axes_width = (width - left - right - gap * (columns - 1)) / columns
    return {
        "left": left / width,
        "right": 1 - right / width,
        "bottom": bottom / height,
        "top": 1 - top / height,
        "wspace": gap / axes_width,
    }
