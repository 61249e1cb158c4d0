"""The harness proven on fixture notebooks: it passes a working explorer and
catches a broken widget callback."""

from __future__ import annotations

import pytest
from browser_harness import BrowserCheckError, Expectation, check_explorer

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]


def test_working_explorer_passes(lab, screenshot_path):
    changes = check_explorer(lab, "fixtures/explorer.ipynb", Expectation(), screenshot_path)
    hows = [c.how for c in changes]
    assert len(changes) == 2, hows
    assert hows[0].startswith("Tab x") and hows[1] == "dragging the slider handle"
    # The readout follows the slider: 3 -> 4 by keyboard, then dragged further.
    assert changes[0].before["readout"] == "n = 3"
    assert changes[0].after["readout"] == "n = 4"
    assert changes[1].after["readout"] == f"n = {changes[1].after['value']}"
    assert changes[1].after["value"] not in {"3", "4"}
    assert screenshot_path.stat().st_size > 0


def test_broken_callback_is_caught(lab, screenshot_path):
    with pytest.raises(BrowserCheckError) as caught:
        check_explorer(lab, "fixtures/broken_callback.ipynb", Expectation(), screenshot_path)
    message = str(caught.value)
    assert "the widget callback raised" in message
    # The callback's own error, as JupyterLab's Log Console shows it.
    assert "NameError: name 'drow' is not defined" in message
