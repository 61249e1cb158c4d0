"""Layout checks for drawn figures: every text inside the figure, none on top of another.

Imported by the explorer tests (pytest does not collect this file). What a
look at a PNG finds (a title cut off at the edge, a label across the next
panel), asserted for every state a test draws.
"""

from attention_lib import plots


def _texts(ax):
    """The visible, non-empty texts that belong to ``ax``: titles, labels, ticks, notes, legend."""
    candidates = [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
    for axis in (ax.xaxis, ax.yaxis):
        low, high = sorted(axis.get_view_interval())
        for tick in axis.get_major_ticks():
            if low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                candidates += [tick.label1, tick.label2]
    candidates += ax.texts
    legend = ax.get_legend()
    if legend is not None:
        candidates += legend.get_texts()
    return [t for t in candidates if t.get_visible() and t.get_text().strip()]


def _overlap(a, b, slack):
    return min(a.x1, b.x1) - max(a.x0, b.x0) > slack and min(a.y1, b.y1) - max(a.y0, b.y0) > slack


def assert_texts_inside_and_apart(fig, slack=0.5):
    """No text leaves the figure, overlaps another text, or lies on another axes' panel.

    ``fig`` must have been drawn (its canvas rendered), so text extents are final.
    ``slack`` pixels of contact are allowed (antialiased edges).
    """
    renderer = fig.canvas.get_renderer()
    figure_box = fig.bbox
    placed = []
    for ax in fig.axes:
        for text in _texts(ax):
            box = text.get_window_extent(renderer)
            label = f"{text.get_text()!r} of axes {fig.axes.index(ax)}"
            assert (
                box.x0 >= figure_box.x0 - slack
                and box.x1 <= figure_box.x1 + slack
                and box.y0 >= figure_box.y0 - slack
                and box.y1 <= figure_box.y1 + slack
            ), f"{label} leaves the figure: {box.extents} outside {figure_box.extents}"
            for other_ax in fig.axes:
                if other_ax is not ax:
                    panel = other_ax.get_window_extent(renderer)
                    assert not _overlap(box, panel, slack), (
                        f"{label} lies on the panel of axes {fig.axes.index(other_ax)}"
                    )
            for other_label, other_box in placed:
                assert not _overlap(box, other_box, slack), f"{label} overlaps {other_label}"
            placed.append((label, box))


def drawn_figure(spec, state, style):
    """``state`` drawn by the spec on a new figure of the explorer's size and dpi, rendered."""
    with plots.series_style(style):  # the style the shell renders in
        fig = spec.figure(state, style=style)
        fig.canvas.draw()
    return fig


def smallest_font_px(fig):
    """The smallest text in ``fig`` in CSS pixels when shown at its rendered width."""
    sizes = [text.get_fontsize() for ax in fig.axes for text in _texts(ax)]
    return min(sizes) * fig.dpi / 72
