"""The harness proven on fixture notebooks (tests/browser/fixtures/): it passes
working explorers and catches what a student would trip over."""

from __future__ import annotations

import pytest

from .browser_harness import (
    BrowserCheckError,
    Expectation,
    accessibility_violations,
    check_explorer,
    describe_violations,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]


def test_working_slider_explorer_passes(lab, screenshot_path):
    # The fixture also shows a tagged deliberate error and a warning on stderr:
    # neither may count as an error output.
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


def test_working_button_explorer_passes(lab, screenshot_path):
    expect = Expectation(control="button", reason="board mode")
    changes = check_explorer(lab, "fixtures/button_explorer.ipynb", expect, screenshot_path)
    assert [c.after["readout"] for c in changes] == ["step 1", "step 2", "step 3"]
    assert [c.how.split(" + ")[-1] for c in changes] == ["Enter", "Space", "clicking the button"]


def test_broken_callback_is_caught(lab, screenshot_path):
    with pytest.raises(BrowserCheckError) as caught:
        check_explorer(lab, "fixtures/broken_callback.ipynb", Expectation(), screenshot_path)
    message = str(caught.value)
    assert "the widget callback raised" in message
    # The callback's own error, as JupyterLab's Log Console shows it.
    assert "NameError: name 'drow' is not defined" in message


def test_error_output_is_caught(lab, screenshot_path):
    with pytest.raises(BrowserCheckError) as caught:
        check_explorer(lab, "fixtures/error_cell.ipynb", Expectation(), screenshot_path)
    message = str(caught.value)
    assert message.startswith("error output after Run All:\ncell 2:"), message
    assert "ZeroDivisionError" in message


def test_offline_guard_flags_foreign_hosts_and_console_errors(lab, network_guard):
    lab.page.evaluate(
        """() => { console.error('deliberate console error');
                   return fetch('http://example.invalid/probe.js').catch(() => null); }"""
    )
    problems = network_guard.problems()
    network_guard.reset()  # handled here: the lab fixture must not fail on them
    assert "request to a host other than 127.0.0.1: http://example.invalid/probe.js" in problems
    assert "console deliberate console error" in problems


# A page with one critical violation (an image without a text alternative) and one
# moderate one (a heading level skipped) in .broken, and nothing wrong in .sound.
AXE_FIXTURE = """<!doctype html><html lang="en"><head><title>axe fixture</title></head>
<body><main>
  <div class="broken"><h1>one</h1><h3>three</h3>
    <img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="40" height="40"></div>
  <div class="sound"><button>Next</button>
    <img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="weights: cat 0.29"></div>
</main></body></html>"""


def test_accessibility_check_reports_serious_and_critical_violations_only(chromium):
    page = chromium.new_page()
    try:
        page.set_content(AXE_FIXTURE)
        broken = accessibility_violations(page, ".broken")
        assert [(v["id"], v["impact"]) for v in broken] == [("image-alt", "critical")], (
            describe_violations(broken)
        )
        assert [node["target"] for node in broken[0]["nodes"]] == ['img[width="40"]']
        assert accessibility_violations(page, ".sound") == []
        with pytest.raises(BrowserCheckError, match="no element matches"):
            accessibility_violations(page, ".absent")
    finally:
        page.close()
