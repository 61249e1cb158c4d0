"""Every figure the series draws, in one style.

The helpers only draw: they take arrays that :mod:`attention_lib` already
computed and format them (rounding, labels, colours). One module per reason
to change:

* :mod:`~attention_lib.plots.style` - colours, the ``"default"`` and
  ``"board"`` styles, :func:`new_figure`, and :func:`artist`, with which an
  in-place updater finds what its builder drew;
* :mod:`~attention_lib.plots.heatmaps` - attention weights as a heatmap;
* :mod:`~attention_lib.plots.lookup` - key/value cards, 2-D arrows, weight
  bars and the blend of the values;
* :mod:`~attention_lib.plots.curves` - score histograms and variance curves.

Each figure builder that an explorer moves sits next to its ``update_*``
helper, which moves the same artists in place (found by gid constants defined
next to the builder). Everything public is importable from here, as
``plots.attention_heatmap`` and so on.

Examples
--------
>>> fig, ax = new_figure()
>>> image = attention_heatmap(np.array([[0.7, 0.3], [0.5, 0.5]]), ax=ax)
>>> ax.get_xlabel(), ax.get_ylabel()
('key', 'query')
"""

from __future__ import annotations

from .curves import score_histogram, variance_curve
from .heatmaps import attention_heatmap, update_attention_heatmap
from .lookup import (
    arrows_2d,
    blend_plot,
    kv_cards,
    update_arrows_2d,
    update_blend_plot,
    update_weight_bars,
    weight_bars,
    weight_colors,
)
from .style import (
    COLORS,
    DISPLAY_WIDTH_PX,
    DIVERGING_CMAP,
    MASKED_COLOR,
    STATIC_DPI,
    STYLES,
    artist,
    board_style,
    default_style,
    figure_style,
    format_weight,
    new_figure,
    series_style,
)

__all__ = [
    "COLORS",
    "DISPLAY_WIDTH_PX",
    "DIVERGING_CMAP",
    "MASKED_COLOR",
    "STATIC_DPI",
    "STYLES",
    "arrows_2d",
    "artist",
    "attention_heatmap",
    "blend_plot",
    "board_style",
    "default_style",
    "figure_style",
    "format_weight",
    "kv_cards",
    "new_figure",
    "score_histogram",
    "series_style",
    "update_arrows_2d",
    "update_attention_heatmap",
    "update_blend_plot",
    "update_weight_bars",
    "variance_curve",
    "weight_bars",
    "weight_colors",
]
