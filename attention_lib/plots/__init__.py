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

# Each module's __all__ is its public list, said once; the package re-exports them all.
from . import arrows, bars, blend, cards, curves, heatmaps, style
from .arrows import *  # noqa: F403
from .bars import *  # noqa: F403
from .blend import *  # noqa: F403
from .cards import *  # noqa: F403
from .curves import *  # noqa: F403
from .heatmaps import *  # noqa: F403
from .style import *  # noqa: F403

__all__ = [
    *style.__all__,
    *heatmaps.__all__,
    *cards.__all__,
    *bars.__all__,
    *arrows.__all__,
    *blend.__all__,
    *curves.__all__,
]
