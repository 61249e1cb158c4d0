"""Interactive explorers: one module per chapter idea, one shared shell.

Every explorer module follows one contract, written once in
``docs/architecture.md`` ("The explorer contract") and checked for every module
by ``tests/test_widgets_template.py``; ``mask_order.py`` is the shortest to
copy. :func:`available_explorers` finds the modules, so adding one edits no list.
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
