"""Which notebooks the browser tests drive, and what each one's explorer promises.

When you land a notebook with a live widget
-------------------------------------------
1. Build its main explorer with the shell (``docs/architecture.md``, "The explorer
   contract"): it gives the ``VBox`` class ``attn-explorer``, the main control
   ``attn-main-control``, the readout ``attn-readout`` and the figure ``Image``
   ``attn-figure``, which is how ``browser_harness.py`` finds them.
2. Add one line to ``REGISTRY`` below: ``"notebooks/NN_name.ipynb": Expectation()``
   for a slider whose readout shows the slider's value, or e.g.
   ``Expectation(control="button", reason="board mode: Next button")``.
   Every deviation from the defaults carries a ``reason``.
3. Run ``pytest tests/browser -m browser``; a screenshot lands in
   ``artifacts/browser/``.

A notebook that looks like it has a widget (see ``looks_like_widget_notebook``)
is driven even if you forget step 2, with the default expectation, so a new
widget can never escape the browser tests; an entry whose file is gone fails.
A notebook that matches the heuristic but really has no explorer is listed
with ``Expectation(has_explorer=False, reason=...)``: it is then still run in
the browser (Run All, no error output), just not interacted with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .browser_harness import Expectation

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# notebook path (relative to the repository root) -> what its explorer promises
REGISTRY: dict[str, Expectation] = {
    "notebooks/01_soft_lookup.ipynb": Expectation(),
    "notebooks/02_why_sqrt_dk.ipynb": Expectation(),
    "notebooks/03_masks.ipynb": Expectation(),
    "notebooks/04_backward.ipynb": Expectation(),
    "notebooks/05_self_and_cross.ipynb": Expectation(),
    "notebooks/06_teach_it.ipynb": Expectation(control="button", reason="board mode: Next"),
    "notebooks/08_in_practice.ipynb": Expectation(),
}

# A widget notebook shows itself by the explorer class, ipywidgets, the
# library's widgets module or an explorer factory in its code, or by a widget
# view among its stored outputs.
WIDGET_HINTS = re.compile(
    r"attn-explorer|ipywidgets|attention_lib\.widgets|\bwidgets\.\w+\(|\w+_explorer\b"
)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def looks_like_widget_notebook(path: Path) -> bool:
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if cell.get("cell_type") == "code" and WIDGET_HINTS.search(source):
            return True
        for output in cell.get("outputs", []):
            if WIDGET_MIME in output.get("data", {}):
                return True
    return False


def discovered_notebooks() -> list[str]:
    """Repository-relative paths of every notebook under notebooks/ that looks
    like it has a widget (checkpoint copies excluded)."""
    if not NOTEBOOKS.is_dir():
        return []
    found = []
    for path in sorted(NOTEBOOKS.rglob("*.ipynb")):
        rel = path.relative_to(REPO)
        if ".ipynb_checkpoints" in rel.parts:
            continue
        if looks_like_widget_notebook(path):
            found.append(rel.as_posix())
    return found


def notebooks_to_drive() -> dict[str, Expectation]:
    """The registry, plus every discovered widget notebook it does not list yet."""
    plan = dict(REGISTRY)
    for rel in discovered_notebooks():
        plan.setdefault(rel, Expectation())
    return dict(sorted(plan.items()))
