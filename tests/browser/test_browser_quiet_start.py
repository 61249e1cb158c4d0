"""JupyterLab opens quietly (issue 24): a newcomer's first minute, on the server
``make lab`` starts (lab_server.py runs the command ``make -n lab`` prints, with
the series' settings from ``etc/jupyter`` and empty user settings).

The first notebook opens without a toast or a dialog, and nothing else shows up
while the page is left alone for a minute; a new notebook then starts the
series' kernel without asking for one. Nothing leaves 127.0.0.1 meanwhile: not
from the page (every request it makes, websockets included) and not from the
server process, which is where JupyterLab's news feed and update check are
fetched when the page asks for them (``/lab/api/news``, ``/lab/api/update``).
"""

from __future__ import annotations

import re
import time

import pytest

from .browser_harness import STATUS_JS, BrowserCheckError, is_local

pytestmark = pytest.mark.browser

FIRST_NOTEBOOK = "notebooks/01_soft_lookup.ipynb"
IDLE_SECONDS = 60  # the minute; the news prompt was up as soon as the notebook was
# The page's requests for news and updates, which the server would fetch from the web.
NEWS_AND_UPDATES = re.compile(r"/lab/api/(news|update)\b")
SMALL_SCREEN = {"width": 1366, "height": 768}

# Toasts, dialogs and the unread count of the notification centre (status bar).
GREETINGS_JS = """() => ({
    toasts: [...document.querySelectorAll('.Toastify__toast')].map(e => e.innerText),
    dialogs: [...document.querySelectorAll('.jp-Dialog')].map(e => e.innerText),
    unread: document.querySelector('.jp-Notification-Status-Text')?.textContent ?? '?',
})"""


# The notebook on show: its name (the page title) and its toolbar's kernel name.
NOTEBOOK_ON_SHOW_JS = """() => {
    const panel = [...document.querySelectorAll('.jp-NotebookPanel')]
        .find(p => !p.classList.contains('lm-mod-hidden'));
    const kernel = panel && panel.querySelector('.jp-Toolbar-kernelName');
    return {title: document.title, kernel: kernel ? kernel.textContent : ''};
}"""


def _greetings_while_idle(page, seconds: float) -> dict | None:
    """Watch the page, touching nothing; the first toast or dialog seen, or None."""
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < seconds:
        seen = page.evaluate(GREETINGS_JS)
        if seen["toasts"] or seen["dialogs"]:
            return {"after_seconds": round(elapsed, 1), **seen}
        page.wait_for_timeout(500)
    return None


def _new_notebook(page) -> None:
    """File > New > Notebook, as a student starts a scratch notebook."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^File$")).click()
    page.locator(".lm-Menu-item:visible", has_text=re.compile(r"^New$")).hover()
    page.locator(".lm-Menu-item:visible", has_text=re.compile(r"^Notebook$")).click()


def _wait_for_kernel(page, timeout: float = 60) -> None:
    """Until the new notebook's own kernel is idle; fails on a dialog (asking
    which kernel, say) or when no kernel starts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        if dialogs:
            raise BrowserCheckError(f"a new notebook asks first: {' '.join(dialogs[0].split())!r}")
        shown = page.evaluate(NOTEBOOK_ON_SHOW_JS)
        if (
            shown["title"].startswith("Untitled")
            and "(ipykernel)" in shown["kernel"]
            and re.search(r"\|\s*Idle", page.evaluate(STATUS_JS))
        ):
            return
        page.wait_for_timeout(250)
    raise BrowserCheckError(f"the new notebook's kernel did not start: {shown}")


def test_a_newcomer_s_first_minute_is_quiet_and_offline(
    lab, jupyterlab, network_guard, screenshot_path
):
    page = lab.page
    page.set_viewport_size(SMALL_SCREEN)  # where a toast covers the most notebook
    try:
        lab.open(FIRST_NOTEBOOK)  # fails on a dialog, e.g. a kernel to choose
        greeting = _greetings_while_idle(page, IDLE_SECONDS)
        assert greeting is None, f"JupyterLab greets the newcomer: {greeting}"
        unread = page.evaluate(GREETINGS_JS)["unread"]
        assert unread == "0", f"{unread} notification(s) waiting in the notification centre"
    finally:
        screenshot_path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot_path))

    _new_notebook(page)  # an Untitled.ipynb in the server's temporary copy
    _wait_for_kernel(page)

    problems = [
        f"the page fetched from another host: {url}"
        for url in network_guard.requests
        if not is_local(url)
    ]
    problems += [
        f"the page asked its server for news or updates: {url}"
        for url in network_guard.requests
        if NEWS_AND_UPDATES.search(url)
    ]
    problems += [f"the Jupyter server or a kernel: {line}" for line in jupyterlab.hosts_reached()]
    assert not problems, "something left 127.0.0.1 or asked to:\n  " + "\n  ".join(problems)
