"""The explorers' front end (attention_lib/widgets/_frontend.js) in real JupyterLab.

* Every registered notebook's explorers (``check_accessible_and_honest_after_a_restart``,
  run by test_browser_every_explorer.py on the Run All it measures against the bar):
  sliders announce the value their readout shows (aria-valuetext), toggle buttons say
  which one is pressed, symbol-only grid buttons have a name; the main explorer is used
  as a student does (``check_explorer``: reached with Tab, keyboard and mouse, a new
  figure and readout each time); after a kernel restart every explorer says so in words
  and its controls are switched off (screenshot at 1920x1080).
* On the fixture ``fixtures/frontend.ipynb``: presenter keys press Next / Back;
  a kernel that stops answering without any status change (paused with
  SIGSTOP: only the heartbeat can tell) switches the explorer off, and on
  again when it answers (SIGCONT); Kernel > Shut Down Kernel says "stopped";
  Run All after a restart gives live explorers again.

Not covered here: a lost connection that comes back (the same code path as
the SIGSTOP case once the connection is up again), and Voila (checked by hand
on the fixture: the heartbeat, the restart message and the presenter keys with
nothing focused work there; the Voila front end of the harness is branch
``board``'s).
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from .browser_harness import (
    NEXT_FRAMES_JS,
    STATUS_JS,
    BrowserCheckError,
    accessibility_violations,
    check_explorer,
    describe_violations,
    figure_text_problems,
)
from .explorer_measures import set_viewport
from .notebook_registry import notebooks_to_drive

pytestmark = [pytest.mark.browser]

FULL_HD = {"width": 1920, "height": 1080}
EXPLORERS = ".jp-NotebookPanel .attn-explorer"
# A ping is called unanswered after 4 s; a touched explorer pings at once.
# Room for a loaded machine on top.
SILENT_VERDICT_MS = 15_000

EXPLORERS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel .attn-explorer')]
  .map(root => ({
    kernel: root.dataset.attnKernel || null,
    message: (root.querySelector('.attn-kernel-message') || {}).textContent || '',
    sliders: [...root.querySelectorAll('.widget-slider')].map(s => ({
        label: (s.querySelector('.widget-label') || {}).textContent || '',
        readout: (s.querySelector('.widget-readout') || {}).textContent || '',
        valuetext: s.querySelector('.noUi-handle').getAttribute('aria-valuetext'),
        off: s.querySelector('.noUi-target').hasAttribute('disabled'),
    })),
    toggleGroups: [...root.querySelectorAll('.widget-toggle-buttons')].map(g =>
        [...g.querySelectorAll('.widget-toggle-button')].map(b => ({
            text: b.textContent.trim(), pressed: b.getAttribute('aria-pressed'),
            active: b.classList.contains('mod-active')}))),
    gridLabels: [...root.querySelectorAll('.attn-cell-grid button')]
        .map(b => b.getAttribute('aria-label')),
    controlsOn: [...root.querySelectorAll('button, input, select, textarea')]
        .filter(c => !c.disabled).map(c => c.outerHTML.slice(0, 80)),
    inertChildren: [...root.children].filter(c => c.inert).length,
    // The explorer's own children: not our message box or the note over the figure.
    children: [...root.children].filter(c => !c.matches('.attn-frontend, .attn-stale-note')).length,
  }))"""

ALL_GONE_JS = """() => {
  const roots = [...document.querySelectorAll('.jp-NotebookPanel .attn-explorer')];
  return roots.length > 0 && roots.every(r => r.dataset.attnKernel === 'gone');
}"""


def explorers(page) -> list[dict]:
    return page.evaluate(EXPLORERS_JS)


def restart_kernel(page) -> None:
    """Kernel -> Restart Kernel..., confirmed, as a student does it."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Kernel$")).click()
    page.locator(".lm-Menu-item:visible", has_text="Restart Kernel").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()


def assert_accessible(found: list[dict], where: str) -> None:
    problems = []
    for i, explorer in enumerate(found):
        for slider in explorer["sliders"]:
            label, shown = slider["label"].strip(), slider["readout"].strip()
            wanted = f"{label} = {shown}" if label else shown
            if slider["valuetext"] != wanted:
                problems.append(
                    f"explorer {i}: slider {label!r} shows {shown!r} but announces "
                    f"{slider['valuetext']!r} (wanted {wanted!r})"
                )
        for group in explorer["toggleGroups"]:
            if [b["pressed"] for b in group] != [str(b["active"]).lower() for b in group]:
                problems.append(f"explorer {i}: aria-pressed does not follow the selection {group}")
            if sum(b["pressed"] == "true" for b in group) != 1:
                problems.append(f"explorer {i}: not exactly one toggle pressed {group}")
        for label in explorer["gridLabels"]:
            if not label or not re.fullmatch(r"query \d+, key \d+: .+", label):
                problems.append(f"explorer {i}: grid button named {label!r}")
    if problems:
        raise BrowserCheckError(f"{where}:\n  " + "\n  ".join(problems))


def assert_switched_off(found: list[dict]) -> None:
    problems = []
    for i, explorer in enumerate(found):
        if explorer["kernel"] != "gone":
            problems.append(f"explorer {i}: state {explorer['kernel']!r}, not 'gone'")
        message = explorer["message"].lower()
        if "kernel" not in message or "switched off" not in message:
            problems.append(f"explorer {i}: message {explorer['message']!r}")
        if explorer["controlsOn"]:
            problems.append(f"explorer {i}: controls still on: {explorer['controlsOn']}")
        if any(not s["off"] for s in explorer["sliders"]):
            problems.append(f"explorer {i}: a slider is still on")
        # Everything but the message is inert (no focus, no clicks).
        if explorer["inertChildren"] != explorer["children"]:
            problems.append(f"explorer {i}: {explorer['inertChildren']} inert children")
    if problems:
        raise BrowserCheckError("after the kernel restart:\n  " + "\n  ".join(problems))


#: The registry and any widget notebook not registered yet (notebook_registry); those
#: without an explorer are run in test_browser_notebooks.py.
PLAN = {p: expect for p, expect in notebooks_to_drive().items() if expect.has_explorer}


def check_accessible_and_honest_after_a_restart(lab, path, screenshot_path):
    """Every explorer of ``path``, which ``lab`` has open and has run (Run All, no error
    output), back at 1920x1080: accessible, used as a student does, and honest after a
    kernel restart. test_browser_every_explorer.py calls this after measuring the same
    Run All against the bar (which leaves every control as it found it): one Run All of
    each notebook serves both."""
    page = lab.page
    set_viewport(page, FULL_HD)
    # Where Run All leaves a student: the last cell selected, in command mode (the bar's
    # presses left a control of the explorer's cell focused, a few Tabs from anywhere).
    page.keyboard.press("Escape")
    page.locator(".jp-NotebookPanel .jp-Cell").last.locator(".jp-InputPrompt").click()
    page.wait_for_function(
        """() => { const cells = document.querySelectorAll('.jp-NotebookPanel .jp-Cell');
                   const last = cells[cells.length - 1];
                   return last.classList.contains('jp-mod-active')
                          && last.contains(document.activeElement); }"""
    )
    main = lab.explorer()
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-NotebookPanel .attn-explorer')]
                 .every(r => r.dataset.attnKernel === 'live')"""
    )
    assert_accessible(explorers(page), "after Run All and the bar's presses")
    violations = accessibility_violations(page, EXPLORERS)
    assert not violations, f"{path}: axe-core in JupyterLab:\n{describe_violations(violations)}"
    problems = figure_text_problems(page, EXPLORERS, wait_ms=5000)
    assert not problems, f"{path}: after Run All: {problems}"
    main.root.scroll_into_view_if_needed()
    screenshot_path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot_path.with_name(f"{screenshot_path.stem}_live.png")))
    # Used as a student does: reached with Tab, then keyboard and mouse (one Run All for both).
    check_explorer(lab, path, PLAN[path], screenshot_path, opened=True)

    # One change by keyboard: the announced value follows the readout.
    handle = main.main.locator(".noUi-handle").first
    if handle.count():
        before = handle.get_attribute("aria-valuetext")
        handle.focus()
        page.keyboard.press(
            "ArrowRight"
            if handle.get_attribute("aria-valuenow") != handle.get_attribute("aria-valuemax")
            else "ArrowLeft"
        )
        page.wait_for_function(
            "([h, old]) => h.getAttribute('aria-valuetext') !== old",
            arg=[handle.element_handle(), before],
        )
        assert_accessible(explorers(page), "after a slider change")
        # the figure's text follows it: the alt says the new readout
        problems = figure_text_problems(page, EXPLORERS, wait_ms=5000)
        assert not problems, f"{path}: after a slider change: {problems}"

    restart_kernel(page)
    page.wait_for_function(ALL_GONE_JS, timeout=SILENT_VERDICT_MS)
    found = explorers(page)
    assert_switched_off(found)

    # A student still tries: the keyboard cannot reach or move the main slider.
    if handle.count():
        value = handle.get_attribute("aria-valuenow")
        handle.focus()
        # noUiSlider moves its handle in the keydown handler itself: had the key
        # reached it, the value would have changed before press() returned.
        page.keyboard.press("ArrowRight")
        assert handle.get_attribute("aria-valuenow") == value
        assert not main.focus_is_on_main()
    # Still switched off after the restarted kernel is idle: it never answers for the old comm.
    # The explorers ping at once when the kernel's connection is back, and an idle kernel
    # answers a ping in milliseconds: a second after Idle, an answer would have come.
    page.wait_for_function(
        f"() => /\\|\\s*Idle/.test(({STATUS_JS})())", timeout=SILENT_VERDICT_MS, polling=100
    )
    page.wait_for_timeout(1000)
    assert_switched_off(explorers(page))
    # Where a student looks (the middle of the figure, even in a tall explorer
    # whose message box is off screen), the message is in sight too: on every
    # explorer of the page, not just the first.
    roots = page.locator(".jp-NotebookPanel .attn-explorer")
    for i, explorer in enumerate(found):
        root = roots.nth(i)
        root.locator(".attn-figure").first.evaluate("el => el.scrollIntoView({block: 'center'})")
        page.evaluate(NEXT_FRAMES_JS)
        note = root.locator(".attn-stale-note")
        box = note.bounding_box()
        assert (
            box is not None and 0 <= box["y"] and box["y"] + box["height"] <= FULL_HD["height"]
        ), f"explorer {i}: no kernel message in sight ({box}) when the figure is"
        assert note.inner_text() == explorer["message"], f"explorer {i}"
    main.figure.evaluate("el => el.scrollIntoView({block: 'center'})")
    page.screenshot(path=str(screenshot_path))


# --------------------------------------------------------------------------
# The fixture: presenter keys, and the heartbeat on its own
# --------------------------------------------------------------------------

FIXTURE = "fixtures/frontend.ipynb"


def _open_fixture(lab):
    lab.open(FIXTURE)
    lab.run_all()
    assert not lab.error_outputs(), lab.error_outputs()
    board = lab.page.locator(".jp-NotebookPanel .presenter-board")
    board.wait_for()
    return board


def _step(board) -> str:
    return board.locator(".attn-readout").inner_text().strip()


def _wait_step(page, board, text):
    deadline = time.monotonic() + 10
    while _step(board) != text:
        if time.monotonic() > deadline:
            raise BrowserCheckError(f"board shows {_step(board)!r}, expected {text!r}")
        page.wait_for_timeout(50)


@pytest.mark.timeout(150)
def test_presenter_keys_press_next_and_back(lab, screenshot_path):
    page = lab.page
    board = _open_fixture(lab)
    # Focus elsewhere (a notebook cell): the keys keep JupyterLab's meaning.
    page.keyboard.press("Escape")
    page.keyboard.press("PageDown")
    # The presenter clicks Next once; from then on the clicker drives the board. The
    # kernel answers in order, so step 2 (not 3) also says the PageDown above did nothing.
    board.locator(".attn-next").click()
    _wait_step(page, board, "step 2 / 5")
    for key, text in [
        ("PageDown", "step 3 / 5"),
        ("ArrowRight", "step 4 / 5"),
        ("PageUp", "step 3 / 5"),
        ("ArrowLeft", "step 2 / 5"),
        ("PageDown", "step 3 / 5"),
        ("PageDown", "step 4 / 5"),
        ("PageDown", "step 5 / 5"),
    ]:
        page.keyboard.press(key)
        _wait_step(page, board, text)
    # The last step: Next is disabled, the clicker does nothing (and the page does not scroll).
    scroll = page.evaluate(
        "() => document.querySelector('.jp-WindowedPanel-outer, .jp-Notebook').scrollTop"
    )
    page.keyboard.press("PageDown")  # the handler acts (or not) before press() returns
    page.evaluate(NEXT_FRAMES_JS)  # a scroll it let through shows by the second frame
    assert scroll == page.evaluate(
        "() => document.querySelector('.jp-WindowedPanel-outer, .jp-Notebook').scrollTop"
    )
    # With a modifier the key is the browser's or JupyterLab's, not ours: one Back
    # press after it lands on step 4, not 3 (the kernel answers presses in order).
    page.keyboard.press("Shift+PageUp")
    board.locator(".attn-back").click()
    _wait_step(page, board, "step 4 / 5")
    board.locator(".attn-next").click()
    _wait_step(page, board, "step 5 / 5")
    # Nothing focused (as on a Voila board page): the visible board with Next / Back
    # takes the keys, not the shell explorer below it, which has none.
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    assert page.evaluate("() => document.activeElement === document.body")
    page.keyboard.press("PageUp")
    _wait_step(page, board, "step 4 / 5")
    page.screenshot(path=str(screenshot_path))


def _kernel_pid(page) -> int:
    text = page.locator(".jp-OutputArea-output", has_text="kernel pid").first.inner_text()
    return int(re.search(r"kernel pid (\d+)", text).group(1))


@pytest.mark.timeout(150)
def test_silent_kernel_switches_explorers_off_and_back_on(lab, screenshot_path):
    """No status change at all (a paused process): only the heartbeat can tell.

    A student touches the explorer (the touch pings at once): within a few
    seconds it says the kernel is not answering; when the kernel runs again,
    the explorer comes back on, draws the change it was sent and takes new ones.
    """
    page = lab.page
    page.set_viewport_size(FULL_HD)
    _open_fixture(lab)
    pid = _kernel_pid(page)
    shell = page.locator(".jp-NotebookPanel .attn-explorer:not(.presenter-board)")
    slider = shell.locator(".noUi-handle")
    readout = shell.locator(".attn-readout")
    assert readout.inner_text().strip() == "n = 3"
    os.kill(pid, signal.SIGSTOP)
    try:
        slider.focus()
        page.keyboard.press("ArrowRight")
        touched = time.monotonic()
        page.wait_for_function(
            "el => el.dataset.attnKernel === 'gone'",
            arg=shell.element_handle(),
            timeout=SILENT_VERDICT_MS,
        )
        waited = time.monotonic() - touched
        found = explorers(page)
        assert_switched_off([e for e in found if e["sliders"]])
        assert all("not answering" in e["message"] for e in found if e["sliders"]), found
        shell.locator(".attn-figure").evaluate("el => el.scrollIntoView({block: 'center'})")
        page.screenshot(path=str(screenshot_path))
    finally:
        os.kill(pid, signal.SIGCONT)
    assert waited < 8, f"the silent kernel took {waited:.1f} s to show after a touch"

    page.wait_for_function(
        "el => el.dataset.attnKernel === 'live'", arg=shell.element_handle(), timeout=10_000
    )
    found = explorers(page)
    assert all(e["message"] == "" and not e["inertChildren"] for e in found), found
    # The change sent while it was paused arrives; then it takes new ones.
    page.wait_for_function(
        "el => el.textContent.trim() === 'n = 4'", arg=readout.element_handle(), timeout=10_000
    )
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "el => el.textContent.trim() === 'n = 5'", arg=readout.element_handle(), timeout=10_000
    )


@pytest.mark.timeout(150)
def test_shut_down_kernel_switches_explorers_off(lab):
    page = lab.page
    _open_fixture(lab)
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Kernel$")).click()
    page.locator(".lm-Menu-item:visible", has_text="Shut Down Kernel").first.click()
    dialog = page.locator(".jp-Dialog .jp-mod-accept")
    try:
        dialog.click(timeout=3000)  # JupyterLab may ask first
    except Exception:  # playwright TimeoutError: it did not ask
        pass
    page.wait_for_function(ALL_GONE_JS, timeout=SILENT_VERDICT_MS)
    found = explorers(page)
    assert_switched_off(found)
    assert all("stopped" in e["message"] for e in found), found


@pytest.mark.timeout(180)
def test_run_all_after_a_restart_gives_working_explorers(lab):
    """What the message tells a student to do works: the new explorers are live and answer."""
    page = lab.page
    _open_fixture(lab)
    restart_kernel(page)
    page.wait_for_function(ALL_GONE_JS, timeout=SILENT_VERDICT_MS)
    lab.run_all()
    page.wait_for_function(
        """() => {
            const roots = [...document.querySelectorAll('.jp-NotebookPanel .attn-explorer')];
            return roots.length === 2 && roots.every(r => r.dataset.attnKernel === 'live');
        }""",
        timeout=SILENT_VERDICT_MS,
    )
    shell = page.locator(".jp-NotebookPanel .attn-explorer:not(.presenter-board)")
    readout = shell.locator(".attn-readout")
    assert readout.inner_text().strip() == "n = 3"
    shell.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "el => el.textContent.trim() === 'n = 4'", arg=readout.element_handle(), timeout=10_000
    )
