"""Every explorer shows the texts and PNG sizes it showed before issue 22's refactor.

``tests/reference/explorers.json`` was made by ``scripts/explorer_reference.py``
from the code before the change: per explorer, style and state (the frame
tests' changes, the widget benchmark's session, the board toggle and the states
the issue names), the readout and table HTML and the PNG's size in pixels.
Replaying the same steps must show exactly the same. The frames themselves are
compared by eye (sub-pixel moves of a layout change are fine): the script's
``--sheets`` writes contact sheets beside the stored ones in ``tests/reference/sheets``.
"""

import json
import runpy
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from attention_lib.widgets import available_explorers

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = runpy.run_path(str(ROOT / "scripts" / "explorer_reference.py"))
STORED = json.loads(SCRIPT["REFERENCE"].read_text())


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_the_reference_covers_every_explorer():
    assert set(STORED) == set(available_explorers())


@pytest.mark.parametrize("style", SCRIPT["STYLES"])
@pytest.mark.parametrize("name", sorted(STORED))
def test_explorer_shows_what_the_reference_shows(name, style):
    entry = STORED[name]
    steps = [{key: value for key, value in s.items() if key != "sheet"} for s in entry["steps"]]
    records = SCRIPT["replay"](available_explorers()[name], style, steps)
    expected = SCRIPT["unpooled"](entry, style)
    assert len(records) == len(expected)
    for i, ((shown, _), wanted) in enumerate(zip(records, expected, strict=True)):
        where = f"{name} ({style}), " + (f"after step {i}: {steps[i - 1]}" if i else "first state")
        for part in ("readout", "table", "png_size"):
            assert shown[part] == wanted[part], f"{where}: the {part} changed"
