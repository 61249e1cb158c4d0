"""Every figure the series draws, in one style.

The helpers only draw: they take arrays that :mod:`attention_lib` already
computed and format them (rounding, labels, colours). One module per figure:

* :mod:`~attention_lib.plots.style` - colours, the ``"default"`` and
  ``"board"`` styles and :func:`new_figure`;
* :mod:`~attention_lib.plots.heatmaps` - attention weights as a heatmap;
* :mod:`~attention_lib.plots.cards` - key/value pairs as index cards;
* :mod:`~attention_lib.plots.bars` - one query's weights as labelled bars;
* :mod:`~attention_lib.plots.arrows` - 2-D keys and a query as arrows;
* :mod:`~attention_lib.plots.blend` - 2-D values and the output they blend into;
* :mod:`~attention_lib.plots.curves` - score histograms and variance curves.

Each figure builder that an explorer moves returns the artists it made as a
small named tuple, and its ``update_*`` helper, next to it, moves those same
artists in place. Everything public is importable from here, as
``plots.attention_heatmap`` and so on.

Examples
--------
>>> fig, ax = new_figure()
>>> heatmap = attention_heatmap(np.array([[0.7, 0.3], [0.5, 0.5]]), ax=ax)
>>> ax.get_xlabel(), ax.get_ylabel()
('key', 'query')
"""

from __future__ import annotations

from .arrows import Arrows2D, arrows_2d, update_arrows_2d
from .bars import WeightBars, update_weight_bars, weight_bars, weight_colors
from .blend import Blend, blend_plot, update_blend_plot
from .cards import kv_cards
from .curves import score_histogram, variance_curve
from .heatmaps import Heatmap, attention_heatmap, update_attention_heatmap
from .style import (
    COLORS,
    DISPLAY_WIDTH_PX,
    DIVERGING_CMAP,
    MASKED_COLOR,
    STATIC_DPI,
    STYLES,
    default_style,
    figure_style,
    format_weight,
    new_figure,
    raise_small_text,
    series_style,
)

__all__ = [
    "COLORS",
    "DISPLAY_WIDTH_PX",
    "DIVERGING_CMAP",
    "MASKED_COLOR",
    "STATIC_DPI",
    "STYLES",
    "Arrows2D",
    "Blend",
    "Heatmap",
    "WeightBars",
    "arrows_2d",
    "attention_heatmap",
    "blend_plot",
    "default_style",
    "figure_style",
    "format_weight",
    "kv_cards",
    "new_figure",
    "raise_small_text",
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
