"""The board mode: every notebook of the series as Voila serves it with the
board template (``make board``), in headless Chromium at 1920x1080.

For every notebook under notebooks/: the page renders with no code on it, no
error, nothing requested from outside 127.0.0.1 (the network guard of the
``board`` fixtures) and readable text; where it has an explorer, the explorer
fits one screen and its main control changes the figure (``check_explorer``,
the same check as in JupyterLab), and axe-core finds no serious or critical
violation on the page or in an explorer, whose figure's alt says what it
shows. Light and dark theme each get a screenshot in artifacts/browser/. The
template's cell tags are proven on a fixture.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from .browser_harness import (
    BrowserCheckError,
    Expectation,
    Explorer,
    accessibility_violations,
    check_explorer,
    describe_violations,
    figure_text_problems,
    guarded,
)
from .conftest import ARTIFACTS
from .explorer_measures import figure_text_on_page, set_viewport, wait_for_figure
from .notebook_registry import NOTEBOOKS, REPO, notebooks_to_drive
from .voila_frontend import BOARD_VIEWPORT

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

# Body text against its page: WCAG AA asks for 4.5 for normal text.
MIN_CONTRAST = 4.5
#: The projectors of issue 21: every board page is measured at each (one page load,
#: the window resized: nothing on the page depends on the width it was loaded at).
BOARD_SCREENS = [BOARD_VIEWPORT, {"width": 1280, "height": 720}]
#: Every text in every figure on a board page, static or live, at least this as shown.
BOARD_MIN_TEXT_PX = 14.0
#: The mask editor's grid is where the instructor clicks: its text as large as the
#: figure's numbers (about 20 px at 1920x1080), not just the page's minimum.
BOARD_GRID_TEXT_PX = 18.0
#: Each shown text of the mask editor's grid (cell marks, row and column labels, legend):
#: its font size as shown, and whether its box cuts it off (an ellipsis, or overflow).
GRID_TEXT_JS = """selector => [...document.querySelectorAll(selector)].flatMap(grid =>
    [...grid.querySelectorAll('button, .widget-label, .widget-html-content')]
    .filter(el => el.offsetParent !== null && el.textContent.trim())
    .map(el => ({text: el.textContent.trim().slice(0, 20),
                 px: Math.round(parseFloat(getComputedStyle(el).fontSize)
                                * el.getBoundingClientRect().width / el.offsetWidth * 10) / 10,
                 clipped: el.scrollWidth > el.clientWidth + 1})))"""
#: A notebook's stored figure as Voila renders it (an image/png output), in axe's
#: selector for it.
STATIC_FIGURE = ".jp-RenderedImage"
NO_EXPLORER = Expectation(has_explorer=False, reason="no live widget: rendered and checked only")


def board_plan() -> dict[str, Expectation]:
    """Every notebook of the series (notebooks/*.ipynb, not solutions/), with
    the registry's expectation where it has one."""
    driven = notebooks_to_drive()
    paths = [p.relative_to(REPO).as_posix() for p in sorted(NOTEBOOKS.glob("*.ipynb"))]
    return {path: driven.get(path, NO_EXPLORER) for path in paths}


PLAN = board_plan()
PARAMS = [pytest.param(p, id=p.removeprefix("notebooks/")) for p in PLAN] or [
    pytest.param(None, id="none", marks=pytest.mark.skip(reason="no notebook under notebooks/"))
]


def has_instructor_notes(notebook: Path) -> bool:
    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    return any("instructor-note" in c.get("metadata", {}).get("tags", []) for c in cells)


def check_board_page(frontend, path: str) -> None:
    """What every board page promises besides its explorer."""
    code = frontend.code_on_page()
    assert not code, f"{path}: code on the board page: {code}"
    readable = frontend.readability()
    if readable is not None:
        assert readable["contrast"] >= MIN_CONTRAST, f"{path}: text contrast {readable}"
    if frontend.theme == "dark":
        assert readable is None or readable["background_luminance"] < 0.1, (
            f"{path}: the dark theme did not darken the page: {readable}"
        )
    # axe-core over the whole page, and over each explorer on it (what a screen reader meets)
    page, explorers = frontend.page, "#rendered_cells .attn-explorer"
    scopes = ["#rendered_cells"] + [explorers] * bool(page.locator(explorers).count())
    for scope in scopes:
        # Not yet: the notebooks' static figures are image/png outputs, which JupyterLab
        # and Voila render without an alt; every other serious or critical one fails.
        violations = [
            v
            for v in accessibility_violations(page, scope)
            if v["id"] != "image-alt"
            or any(STATIC_FIGURE not in node["target"] for node in v["nodes"])
        ]
        assert not violations, (
            f"{path} ({frontend.theme}), {scope}:\n{describe_violations(violations)}"
        )
    problems = figure_text_problems(page, explorers)
    assert not problems, f"{path} ({frontend.theme}): {problems}"
    switch = frontend.page.locator("#board-notes-switch").count()
    assert switch == int(has_instructor_notes(REPO / path)), (
        f"{path}: the instructor-notes switch is shown {switch} times"
    )


def check_fits_screen(frontend, explorer, path: str) -> None:
    box = frontend.explorer_box(explorer)
    for side in ("width", "height"):
        assert box[side] <= BOARD_VIEWPORT[side], (
            f"{path}: the explorer is {box['width']:.0f}x{box['height']:.0f} CSS px, larger than "
            f"one {BOARD_VIEWPORT['width']}x{BOARD_VIEWPORT['height']} screen"
        )


@pytest.mark.parametrize("path", PARAMS)
def test_board_page_light(path, board):
    """Render, no code, readable; the main control changes the figure."""
    stem = Path(path).stem
    screenshot = ARTIFACTS / f"board-{stem}-light.png"
    check_explorer(board, path, PLAN[path], screenshot)
    check_board_page(board, path)
    explorer = board.explorer() if PLAN[path].has_explorer else None
    board.screenshot_at(explorer, screenshot)
    problems = check_screens(board, path)
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


def check_screens(frontend, path: str) -> list[str]:
    """At every size of BOARD_SCREENS, with every answer open: each explorer fits
    the window, and every figure's text is at least BOARD_MIN_TEXT_PX as shown.
    The numbers go to artifacts/browser/screens.json; returns the problems."""
    page = frontend.page
    page.evaluate(
        """() => document.querySelectorAll('.board-reveal[aria-expanded="false"]')
            .forEach(button => button.click())"""
    )
    roots = page.locator("#rendered_cells .attn-explorer")
    measured, problems = {}, []
    for size in BOARD_SCREENS:
        screen = f"{size['width']}x{size['height']}"
        started = time.monotonic()
        set_viewport(page, size)
        explorers = []
        for i in range(roots.count()):
            wait_for_figure(page, roots.nth(i))
            box = frontend.explorer_box(Explorer.within(roots.nth(i)))
            explorers.append({"width": round(box["width"]), "height": round(box["height"])})
            if box["width"] > size["width"] or box["height"] > size["height"]:
                problems.append(
                    f"at {screen}: explorer {i} is {box['width']:.0f}x{box['height']:.0f} "
                    "CSS px, larger than the window"
                )
        figures = figure_text_on_page(
            page, "#rendered_cells", frontend.server.figure_texts(), BOARD_MIN_TEXT_PX
        )
        problems += [f"at {screen}: {f['problem']}" for f in figures if "problem" in f]
        grid = page.evaluate(GRID_TEXT_JS, "#rendered_cells .attn-cell-grid")
        problems += [
            f"at {screen}: mask grid text {t['text']!r} is {t['px']} px"
            + (", clipped" if t["clipped"] else "")
            for t in grid
            if t["px"] < BOARD_GRID_TEXT_PX or t["clipped"]
        ]
        if screen != "1920x1080":
            frontend.screenshot_at(
                Explorer.within(roots.first) if roots.count() else None,
                ARTIFACTS / f"board-{Path(path).stem}-{screen}.png",
            )
        measured[screen] = {
            "explorers": explorers,
            "figures": figures,
            "grid_text_px": sorted({t["px"] for t in grid}),
            "seconds": round(time.monotonic() - started, 1),  # what this size adds
            "load_average_1min": round(os.getloadavg()[0], 2),
        }
    record_screens(f"board {path}", measured)
    return problems


def record_screens(page_name: str, measured: dict) -> None:
    """Keep one entry per page in artifacts/browser/screens.json, across runs."""
    results = ARTIFACTS / "screens.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(results.read_text()) if results.exists() else {}
    data[page_name] = {
        "measured": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        **measured,
    }
    results.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")


@pytest.mark.parametrize("path", PARAMS)
def test_board_page_dark(path, board_dark):
    """The same page in the dark theme: renders, no error, no code, readable."""
    board_dark.open(path)
    errors = board_dark.error_outputs() + board_dark.unexecuted_cells()
    assert not errors, f"{path}: {errors}"
    explorer = None
    if PLAN[path].has_explorer:
        explorer = board_dark.explorer()
        explorer.figure.wait_for(state="visible")
        check_fits_screen(board_dark, explorer, path)
    check_board_page(board_dark, path)
    board_dark.screenshot_at(explorer, ARTIFACTS / f"board-{Path(path).stem}-dark.png")


def test_board_template_honours_cell_tags(board, screenshot_path):
    """board-hide left out (but run), answer behind a button, instructor
    notes behind the switch, equations typeset from local files."""
    board.open("fixtures/board_tags.ipynb")
    page = board.page
    assert board.error_outputs() == [] and board.unexecuted_cells() == []
    html = page.content()
    for marker in ("SETUP-MARKER", "FALLBACK-MARKER"):
        assert marker not in html, f"a board-hide cell reached the page ({marker})"
    # The hidden setup cell still ran: the next cell uses what it defined.
    assert page.get_by_text("after the hidden setup: 42").is_visible()
    # make board's switch reaches the kernels: explorers built there default to "board".
    assert page.get_by_text("style switch: board").is_visible()
    assert not board.code_on_page()

    # MathJax from Voila's own static files (the guard fails the test on a CDN).
    page.locator("#rendered_cells .jp-RenderedMarkdown mjx-container").first.wait_for()

    answers = page.locator(".board-reveal")
    assert answers.count() == 2
    for i, marker in enumerate(("MD-ANSWER-MARKER", "CODE-ANSWER-MARKER")):
        text = page.get_by_text(marker)
        assert text.count() == 1 and not text.is_visible(), f"{marker} shown before asked"
        button = answers.nth(i)
        assert button.inner_text() == "Show answer"
        button.click()
        text.wait_for(state="visible")
        assert button.get_attribute("aria-expanded") == "true"
        assert button.inner_text() == "Hide answer"
    answers.first.click()
    page.get_by_text("MD-ANSWER-MARKER").wait_for(state="hidden")

    note = page.get_by_text("NOTE-MARKER")
    assert note.count() == 1 and not note.is_visible()
    switch = page.locator("#board-notes-switch")
    switch.click()
    note.wait_for(state="visible")
    assert switch.get_attribute("aria-pressed") == "true"
    page.screenshot(path=str(screenshot_path))
    switch.click()
    note.wait_for(state="hidden")


def test_board_notebook_list(chromium, voila, network_guard, screenshot_path):
    """`make board` without NB= opens on the list of notebooks: offline, no
    console error, every notebook linked to its board page."""
    with guarded(network_guard):
        page = chromium.new_page()
        network_guard.attach_page(page)
        try:
            page.set_viewport_size(BOARD_VIEWPORT)
            page.goto(f"{voila.base_url}/voila/tree/notebooks")
            links = page.locator(".board-tree a").evaluate_all(
                "els => els.map(a => a.getAttribute('href'))"
            )
            page.screenshot(path=str(screenshot_path))
        finally:
            network_guard.recording = False
            page.close()
    expected = [f"/voila/render/{p}?" for p in PLAN]
    assert [link for link in links if "/render/" in link] == expected


# The board front end's checks proven on the harness fixtures: a failure on the
# board page is found, not passed over.


def test_board_catches_a_broken_callback(board):
    with pytest.raises(BrowserCheckError) as caught:
        check_explorer(board, "fixtures/broken_callback.ipynb", Expectation())
    message = str(caught.value)
    assert "the widget callback raised" in message
    # Voila shows the error nowhere; the kernel's error message on the page's
    # websocket is what the front end reads.
    assert "NameError: name 'drow' is not defined" in message


def test_board_catches_an_error_cell(board):
    with pytest.raises(BrowserCheckError) as caught:
        check_explorer(board, "fixtures/error_cell.ipynb", Expectation())
    message = str(caught.value)
    assert message.startswith("error output after Run All:\ncell 2:"), message
    assert "ZeroDivisionError" in message


def test_board_page_of_the_explorer_fixture_passes(board):
    """A tagged deliberate error and a warning on stderr are not errors on the
    board page either; keyboard and mouse both change the figure."""
    changes = check_explorer(board, "fixtures/explorer.ipynb", Expectation())
    assert [c.after["readout"] for c in changes][:1] == ["n = 4"]
    assert changes[-1].how == "dragging the slider handle"
