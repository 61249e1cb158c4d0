"""Interactive explorers: one module per chapter idea, one shared shell.

Every explorer module follows one template (``soft_lookup.py`` is the
shortest example to copy):

* ``update(**controls) -> XxxState`` - pure NumPy; one keyword per control,
  returning a NamedTuple of arrays and numbers (what tests assert on). Reuse
  the library's computations (``attention_forward``, ``saturation_rows``...),
  never a copy of them.
* ``draw(fig, state)`` - the figure from scratch, through
  :mod:`attention_lib.plots` and its colours (``plots.COLORS``); every artist
  that a change moves gets a gid, a constant defined once in the module.
* ``refresh(fig, state) -> artists`` - moves those artists in place (found with
  ``plots.artist(ax, gid)`` or a ``plots.update_*`` helper) and returns them,
  the same ones every time, in the order a fresh drawing stacks them, followed
  by any static artist drawn on top of them (legends, labels, spines they cross):
  the shell blits exactly these, so the frame must equal a fresh ``draw``
  (``tests/test_widgets_template.py`` checks it pixel for pixel).
* ``table(state) -> str`` and ``readout(values, state) -> str`` - HTML numbers.
* ``xxx_explorer(..., *, style="default") -> Explorer`` - builds the controls
  (sliders with ``continuous_update=False``; a control whose value is a tuple,
  like :class:`~attention_lib.widgets.mask_editor.CellGrid`, when one keyword
  needs several widgets), then ``return EXPLORER.explorer(controls,
  follow={...}, style=style)``: controls that depend on others are set in a
  ``follow`` callback (never a raw ``.observe``), so a change is one update and
  one redraw.
* ``EXPLORER = ExplorerSpec(name, title, factory, update, draw, refresh, table,
  readout, figsize, board_figsize=..., static_key=...)`` - the one place that
  ties them together: the explorer calls exactly these functions, and
  :func:`available_explorers` (the tests, ``benchmarks/bench_widgets.py``) finds
  the module without editing this file.
* ``__all__`` lists all of these.

In a notebook::

    explorer = soft_lookup_explorer()
    explorer                      # the live widget (needs a kernel)

    fig = explorer.draw_static()  # next cell: the first state as a plain figure
    plt.show()
"""

from __future__ import annotations

import importlib
import pkgutil

from ._frontend import BACK_CLASS, NEXT_CLASS, ExplorerFrontend, presenter_buttons
from ._shell import FROZEN_LAYOUTS, Explorer, ExplorerSpec, html_table, live_dpi, render_png
from .soft_lookup import soft_lookup_explorer

__all__ = [
    "BACK_CLASS",
    "FROZEN_LAYOUTS",
    "NEXT_CLASS",
    "Explorer",
    "ExplorerFrontend",
    "ExplorerSpec",
    "available_explorers",
    "html_table",
    "live_dpi",
    "presenter_buttons",
    "render_png",
    "soft_lookup_explorer",
]


def available_explorers():
    """Every explorer module's ``EXPLORER`` spec, by name (sorted).

    Imports each public submodule of :mod:`attention_lib.widgets` and collects
    the ``EXPLORER`` it defines.

    Returns
    -------
    dict of str to ExplorerSpec

    Examples
    --------
    >>> specs = available_explorers()
    >>> all(isinstance(spec, ExplorerSpec) for spec in specs.values())
    True
    """
    found = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        spec = getattr(module, "EXPLORER", None)
        if isinstance(spec, ExplorerSpec):
            found[spec.name] = spec
    return dict(sorted(found.items()))
