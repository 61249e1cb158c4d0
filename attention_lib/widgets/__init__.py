"""Interactive explorers: one module per chapter idea, one shared shell.

Each explorer module (``soft_lookup.py``, ``sqrt_dk.py``, ...) holds a pure
``update(...)`` (control values -> a NamedTuple of arrays), a
``draw(fig, state)`` that uses :mod:`attention_lib.plots` only, a
``table(state) -> str`` and a factory ``xxx_explorer(...)`` returning an
:class:`Explorer`. It also defines ``EXPLORER = ExplorerSpec(...)``, which is
how :func:`available_explorers` (and ``benchmarks/bench_widgets.py``) find it:
a new module joins the registry without editing this file.

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
from ._shell import LIVE_DPI, Explorer, ExplorerSpec, html_table, render_png
from .soft_lookup import soft_lookup_explorer

__all__ = [
    "BACK_CLASS",
    "LIVE_DPI",
    "NEXT_CLASS",
    "Explorer",
    "ExplorerFrontend",
    "ExplorerSpec",
    "available_explorers",
    "html_table",
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
