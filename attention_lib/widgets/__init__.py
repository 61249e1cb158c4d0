"""Interactive explorers: one module per chapter idea, one shared shell.

Every explorer module follows one contract; ``mask_order.py`` is the shortest
to copy. It defines, by these names:

* ``update(**controls) -> XxxState`` - pure NumPy, one keyword per control,
  returning a NamedTuple (what tests assert on); numpydoc with an example.
  Reuse the library's computations, never a copy of them.
* ``draw(fig, state) -> scene`` - the figure from scratch through
  :mod:`attention_lib.plots`, returning the scene: the artists a change moves,
  as the builders return them (a named tuple per builder; tuples of those).
* ``refresh(scene, state)`` - moves the scene to ``state`` (the builders'
  ``update_*`` helpers, ``set_text``...), creating nothing.
* ``table(state) -> str`` and ``readout(values, state) -> str`` - HTML numbers.
* ``static_key(state)``, optional - what the drawing that ``refresh`` does not
  move depends on (the mask editor's ``T``); a new key is a full ``draw``.
* ``xxx_explorer(..., *, style=None) -> Explorer`` - the factory: builds the
  controls (``continuous_update=False``; a control with a tuple ``value`` when
  one keyword needs several widgets; a :class:`HiddenControl` for a value only
  buttons change) and returns ``EXPLORER.explorer(controls, follow=...,
  buttons=..., fixed=...)``: dependent controls move in a ``follow`` callback
  (never a raw ``.observe``), buttons are :class:`Button` s, and arguments the
  factory binds (a training run) go in ``fixed``. numpydoc with an example.
* ``EXPLORER = ExplorerSpec.from_module(__name__, title=..., figsize=...,
  board_figsize=...)`` - finds the functions above by name;
  :func:`available_explorers` finds the module.
* ``__all__``: the factory, ``EXPLORER``, ``update`` and the state type. The
  hooks get one-line docstrings; ``tests/test_widgets_template.py`` checks all
  of this for every explorer.

Layout: the module does none. ``draw`` makes its axes with ``fig.subplots``
(ratios, ``sharey``...) and no margins, positions or resolution; the shell
gives it a figure of ``figsize`` inches rendered ``display_width_px`` pixels
wide, runs matplotlib's constrained layout once per style and ``static_key``
(a key drawn again, after its drawing left the frozen ones, gets the axes'
positions back without a layout pass), switches it off, then calls
``refresh``: anything placed by pixel geometry (labels clear of arrows) is
placed there, after the layout.

Blitting: the shell draws the scene, in the z-order a fresh render uses, over
a cached background of everything else, redrawing on top the still artists of
the same axes that could cover it (a spine the bars stand on, a line across
them); ticks point outward and are never redrawn. Frames must equal a fresh
drawing (``ExplorerSpec.figure``) pixel for pixel.

Changes: ``Explorer.set`` and the page run one ``update`` per :meth:`Explorer.batch`;
a failed change is undone whole (controls, state, figure) and says what a value
should be. ``Explorer.note(text)`` puts ``text(state)`` under the readout for
the state the batch ends in, so a control's own message reads the same state
as the figure.

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
from ._shell import (
    FROZEN_LAYOUTS,
    Button,
    Explorer,
    ExplorerSpec,
    HiddenControl,
    html_table,
    int_slider,
    live_dpi,
    render_png,
)
from .soft_lookup import soft_lookup_explorer

__all__ = [
    "BACK_CLASS",
    "FROZEN_LAYOUTS",
    "NEXT_CLASS",
    "Button",
    "Explorer",
    "ExplorerFrontend",
    "ExplorerSpec",
    "HiddenControl",
    "available_explorers",
    "html_table",
    "int_slider",
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
