"""Drive the series' explorers in a real browser, as a student would.

The explorer contract (what every notebook with a live widget provides)
-----------------------------------------------------------------------
Each notebook with a live widget shows one main *explorer*, built with
ipywidgets and marked with CSS classes through ``widget.add_class(...)``:

====================  =======================================================
class                 on
====================  =======================================================
``attn-explorer``     the explorer ``VBox`` (the first one in the notebook is
                      the main explorer)
``attn-main-control`` its main control, anywhere inside the VBox (directly or
                      in an ``HBox`` of controls): an ipywidgets slider
                      (``IntSlider`` / ``FloatSlider`` / ``SelectionSlider``
                      ...) or, for the board notebook, the ``Button`` "Next"
``attn-readout``      an ``HTML`` / ``Label`` widget showing the current
                      value(s); for a slider it must contain the slider's own
                      readout text (e.g. ``4`` or ``0.50``) unless the registry
                      says otherwise
``attn-figure``       the figure, redrawn on every change: an ipywidgets
                      ``Image`` (PNG bytes; what ``attention_lib.widgets``
                      uses) or a ``widgets.Output`` holding an ``<img>`` from
                      matplotlib's inline backend
====================  =======================================================

Nothing else is assumed: no widget model ids, no cell positions, no texts.
``tests/browser/notebook_registry.py`` says which notebooks have an explorer
and what their main control is.

What a check does (``check_explorer``)
--------------------------------------
Open the notebook in the front end, run all cells, wait until the kernel is
idle, fail on any error output (``raises-exception`` cells excepted), find the
main explorer, reach its main control from the notebook with the Tab key the
way a keyboard user does, change it with the keyboard (arrow key for a slider,
Enter and Space for a button) and once with the mouse (drag the slider handle /
click the button), and after every change require a new figure image (its
image data differs) and a new readout text. Tracebacks of widget callbacks are
looked for too (one raised outside an Output reaches no cell: JupyterLab shows
it in its Log Console), and the
network guard for requests that left 127.0.0.1 and for console errors.

Front ends
----------
``Frontend`` is the small protocol a front end implements (open a notebook,
run it, find the explorer, move keyboard focus into it). ``JupyterLabFrontend``
is here; ``voila_frontend.VoilaFrontend`` is the board page (Voila with the
board template; ``run_all`` is a no-op there: Voila runs the notebook on load).
The widget DOM is the same in both, so ``Explorer`` and the checks are shared.

Nothing here imports Playwright at module level: without it, this module still
imports (pytest's doctest collection reads it) and the tests skip or fail as
``conftest.py`` decides.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:  # pragma: no cover - typing only
    from playwright.sync_api import BrowserContext, Locator, Page

    from .lab_server import JupyterLabServer

EXPLORER = "attn-explorer"
MAIN_CONTROL = "attn-main-control"
READOUT = "attn-readout"
FIGURE = "attn-figure"

# Debian's package; ATTENTION_CHROMIUM points elsewhere (another distribution).
CHROMIUM = os.environ.get("ATTENTION_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 1000}

# Bounded waits (milliseconds). A cold JupyterLab draws widgets in ~6 s here;
# these leave room for a loaded CI machine without hanging a run.
PAGE_TIMEOUT = 60_000
RUN_ALL_TIMEOUT = 120_000
CHANGE_TIMEOUT = 20_000
SETTLE_SECONDS = 0.6  # a changed explorer must then hold still this long
MAX_TABS = 12

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
LOCAL_SCHEMES = {"data", "blob", "about"}

# Benign browser messages as (regex, reason it is harmless). Patterns are
# searched in "<kind> <text>", kind one of console / failed / http / pageerror;
# requests that leave 127.0.0.1 can never be allowed. JupyterLab 4.6 with this
# setup (news and update checks off, terminals off) produced no console error,
# failed request or HTTP error in any run, so the list is empty: add an entry
# only for a message you have seen, with its reason, and never a broad pattern.
ALLOWED_NOISE: list[tuple[str, str]] = []


class BrowserCheckError(AssertionError):
    """A check of the student-facing behaviour failed."""


# --------------------------------------------------------------------------
# Network and console guard
# --------------------------------------------------------------------------


def is_local(url: str) -> bool:
    """True for URLs that stay on this machine.

    >>> is_local("http://127.0.0.1:8888/lab"), is_local("ws://localhost:1/api")
    (True, True)
    >>> is_local("data:image/png;base64,AAAA"), is_local("https://cdn.jsdelivr.net/x.js")
    (True, False)
    """
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme in {"http", "https", "ws", "wss"} and parts.hostname in LOCAL_HOSTS


@dataclasses.dataclass
class NetworkGuard:
    """Records every request, failure and console error of a browser context."""

    allowed_noise: list[tuple[str, str]] = dataclasses.field(
        default_factory=lambda: list(ALLOWED_NOISE)
    )
    requests: list[str] = dataclasses.field(default_factory=list)
    events: list[str] = dataclasses.field(default_factory=list)
    recording: bool = True

    def attach_context(self, context: BrowserContext) -> None:
        context.on("request", lambda r: self._request(r.url))
        context.on("requestfailed", lambda r: self._event("failed", f"{r.url} {r.failure}"))
        context.on(
            "response",
            lambda r: r.status >= 400 and self._event("http", f"{r.status} {r.url}"),
        )

    def attach_page(self, page: Page) -> None:
        page.on("websocket", lambda ws: self._request(ws.url))
        page.on(
            "console",
            lambda m: m.type in ("error", "assert") and self._event("console", m.text),
        )
        page.on("pageerror", lambda e: self._event("pageerror", str(e)))

    def _request(self, url: str) -> None:
        self.requests.append(url)
        if not is_local(url):
            # Recorded even when not recording: nothing may ever leave the machine.
            self.events.append(f"offline {url}")

    def _event(self, kind: str, text: str) -> None:
        if self.recording:
            self.events.append(f"{kind} {text}")

    def problems(self) -> list[str]:
        found = []
        for event in self.events:
            if event.startswith("offline "):
                found.append(f"request to a host other than 127.0.0.1: {event[8:]}")
            elif not any(re.search(pat, event) for pat, _reason in self.allowed_noise):
                found.append(event)
        return found

    def reset(self) -> None:
        self.requests.clear()
        self.events.clear()
        self.recording = True


FIGURE_FINGERPRINT_JS = """async el => {
    const imgs = el.tagName === 'IMG' ? [el] : [...el.querySelectorAll('img')];
    if (!imgs.length || !imgs[imgs.length - 1].src) return '';
    const src = imgs[imgs.length - 1].src;
    if (!src.startsWith('blob:')) return src;
    const bytes = await (await fetch(src)).arrayBuffer();
    const digest = await crypto.subtle.digest('SHA-256', bytes);
    return 'sha256:' + [...new Uint8Array(digest)]
        .map(b => b.toString(16).padStart(2, '0')).join('');
}"""


# --------------------------------------------------------------------------
# Accessibility: axe-core, from this checkout's own files
# --------------------------------------------------------------------------

#: axe-core as ``make axe`` installs it (npm ci from tests/browser/package-lock.json).
AXE_CORE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
#: The impacts a page must not have; axe's "moderate" and "minor" are advice.
AXE_BLOCKING = ("serious", "critical")

AXE_RUN_JS = """async ([selector, impacts]) => {
    const found = await window.axe.run(
        {include: [selector]}, {resultTypes: ['violations']});
    return found.violations
        .filter(v => impacts.includes(v.impact))
        .map(v => ({id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.map(n => ({target: n.target.join(' '),
                                              summary: n.failureSummary}))}));
}"""


def accessibility_violations(page: Page, selector: str) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations in the elements ``selector`` matches.

    Each is ``{"id", "impact", "help", "nodes": [{"target", "summary"}]}``, as
    axe reports it (``[]``: none). axe is put into the page from this
    checkout's ``node_modules`` (``make axe``), never fetched from a CDN, and
    runs its default rules (WCAG 2.x A and AA, best practices) on what
    ``selector`` matches; a selector that matches nothing is an error, not a pass.
    """
    if not AXE_CORE.is_file():
        raise BrowserCheckError(
            f"axe-core is not installed at {AXE_CORE}: run `make axe` (npm ci in tests/browser; "
            "the browser tests' make rule does it where npm is installed)"
        )
    if not page.locator(selector).count():
        raise BrowserCheckError(f"no element matches {selector!r}: nothing to check")
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(AXE_CORE))
    return page.evaluate(AXE_RUN_JS, [selector, list(AXE_BLOCKING)])


def describe_violations(violations: list[dict[str, Any]]) -> str:
    """One line per violation and per element, for an assertion message.

    >>> print(describe_violations([{"id": "image-alt", "impact": "critical",
    ...     "help": "Images must have alternative text",
    ...     "nodes": [{"target": "img.attn-figure", "summary": "Fix any of ..."}]}]))
    image-alt (critical): Images must have alternative text
        img.attn-figure: Fix any of ...
    """
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']}")
        for node in violation["nodes"]:
            summary = " ".join(node["summary"].split())
            lines.append(f"    {node['target']}: {summary}")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The explorer, as found in the page
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Explorer:
    root: Locator
    main: Locator
    readout: Locator
    figure: Locator

    @classmethod
    def within(cls, root: Locator) -> Explorer:
        return cls(
            root=root,
            main=root.locator(f".{MAIN_CONTROL}").first,
            readout=root.locator(f".{READOUT}").first,
            figure=root.locator(f".{FIGURE}").first,
        )

    def kind(self) -> str:
        """'slider' or 'button' (or a description of what it found instead)."""
        return self.main.evaluate(
            """el => {
                if (el.querySelector('.noUi-handle')) return 'slider';
                if (el.tagName === 'BUTTON') return 'button';
                return 'unknown <' + el.tagName.toLowerCase() + ' class="' + el.className + '">';
            }"""
        )

    def handle(self) -> Locator:
        return self.main.locator(".noUi-handle").first

    def slider_state(self) -> dict[str, Any]:
        """aria value / min / max of the handle and the slider's readout text."""
        return self.main.evaluate(
            """el => {
                const h = el.querySelector('.noUi-handle');
                const r = el.querySelector('.widget-readout');
                const num = a => parseFloat(h.getAttribute(a));
                return {now: num('aria-valuenow'), min: num('aria-valuemin'),
                        max: num('aria-valuemax'),
                        text: r ? r.textContent.trim() : h.getAttribute('aria-valuetext')};
            }"""
        )

    def figure_src(self) -> str:
        """A fingerprint of the image data on show ('' if there is no image).

        The figure is an ``<img>`` itself (ipywidgets ``Image``) or holds one
        (an ``Output`` with an inline-backend figure: the last ``<img>``). A
        ``data:`` src is its own fingerprint; a ``blob:`` src (``Image``) is new
        on every update even for the same bytes, so its bytes are hashed.
        """
        return self.figure.evaluate(FIGURE_FINGERPRINT_JS)

    def readout_text(self) -> str:
        return self.readout.inner_text().strip()

    def focus_is_on_main(self) -> bool:
        return self.main.evaluate(
            "el => !!document.activeElement && el.contains(document.activeElement)"
        )


# --------------------------------------------------------------------------
# Front ends
# --------------------------------------------------------------------------


class Frontend(Protocol):
    """What the checks need from a front end (JupyterLab, the Voila board page)."""

    name: str
    page: Page

    def open(self, notebook: str) -> None:
        """Show the notebook (a path relative to the server root)."""

    def run_all(self) -> None:
        """Run every cell and return when the kernel is idle again."""

    def error_outputs(self) -> list[str]:
        """Error outputs on the page (tracebacks), as short descriptions."""

    def unexecuted_cells(self) -> list[int]:
        """Code cells the run did not reach ([] where cells are not shown)."""

    def explorer(self) -> Explorer:
        """The main explorer (the first ``.attn-explorer``), visible."""

    def focus_by_keyboard(self, explorer: Explorer) -> int:
        """Move focus to the explorer's main control with the keys a keyboard
        user would press; return the number of Tab presses it took."""

    def callback_errors(self) -> list[str]:
        """Tracebacks of widget callbacks, which reach no cell (JupyterLab
        routes them to its Log Console), as short descriptions."""

    def close(self) -> None:
        """Close the page and stop kernels started for it."""


TRACEBACK_PATTERNS = [
    re.compile(r"Traceback \(most recent call last\)"),
    # IPython shows SyntaxError and friends without the Traceback header.
    re.compile(r"^\s*(\w+\.)*\w*(Error|Exception)(:|\s*$)", re.MULTILINE),
]


def looks_like_traceback(text: str) -> bool:
    """
    >>> looks_like_traceback("NameError  Traceback (most recent call last)")
    True
    >>> looks_like_traceback("Cell In[3], line 1\\n  x =\\n    ^\\nSyntaxError: invalid syntax")
    True
    >>> looks_like_traceback("RuntimeWarning: overflow encountered in exp")
    False
    """
    return any(p.search(text) for p in TRACEBACK_PATTERNS)


def _excerpt(text: str, lines: int = 4) -> str:
    """The last lines of a traceback (where the exception and message are)."""
    kept = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n    ".join(kept[-lines:])


_workspace_counter = itertools.count(1)

# Every cell of the notebook on show, in page order (= notebook order).
CELLS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')]
    .map(cell => {
        const prompt = cell.querySelector('.jp-InputArea-prompt');
        return {
            prompt: prompt ? prompt.textContent : '',
            stderr: [...cell.querySelectorAll(
                '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
                .map(o => o.textContent),
        };
    })"""
STATUS_JS = """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
    .map(e => e.textContent).join(' ')"""


class JupyterLabFrontend:
    """JupyterLab 4 in a Playwright page."""

    name = "jupyterlab"

    def __init__(self, context: BrowserContext, server: JupyterLabServer, guard: NetworkGuard):
        self.context = context
        self.server = server
        self.guard = guard
        self.page = context.new_page()
        self.page.set_default_timeout(PAGE_TIMEOUT)
        guard.attach_page(self.page)
        self.notebook: str | None = None
        self._facts: dict[str, set[int]] | None = None

    # -- protocol ---------------------------------------------------------

    def open(self, notebook: str) -> None:
        self.notebook = notebook
        self._facts = None
        # A workspace of its own per page, reset: nothing restored from an
        # earlier test (which would reopen its notebook and start its kernel).
        workspace = f"browser-test-{next(_workspace_counter)}"
        self.page.goto(
            f"{self.server.base_url}/lab/workspaces/{workspace}/tree/{notebook}"
            f"?reset&token={self.server.token}"
        )
        self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for()
        self._wait_idle(PAGE_TIMEOUT, require_run=False)

    def run_all(self) -> None:
        # Clear stored outputs first, so what we look at afterwards is what
        # this run produced (stored notebooks carry outputs and counts).
        self._menu("Edit", "Clear Outputs of All Cells")
        self.page.wait_for_function(
            """() => [...document.querySelectorAll(
                         '.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')]
                     .every(p => !/\\d/.test(p.textContent))"""
        )
        self._menu("Run", "Run All Cells")
        self._wait_idle(RUN_ALL_TIMEOUT, require_run=True)

    def error_outputs(self) -> list[str]:
        return self._errors(self._cells())

    def unexecuted_cells(self) -> list[int]:
        """Indices of non-empty code cells that show no execution count."""
        return self._unexecuted(self._cells())

    def explorer(self) -> Explorer:
        return find_explorer(
            self.page,
            ".jp-NotebookPanel",
            "appeared after Run All "
            f"(did the explorer cell display its VBox, with .add_class({EXPLORER!r})?)",
        )

    def focus_by_keyboard(self, explorer: Explorer) -> int:
        """Command mode, arrow keys to the explorer's cell, then Tab.

        That is the route a keyboard user has in JupyterLab: Escape leaves the
        editor, Up/Down select a cell (and focus it), Tab walks into its output.
        """
        page = self.page
        page.keyboard.press("Escape")
        target = explorer.root.evaluate(
            """el => [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')]
                     .findIndex(c => c.contains(el))"""
        )
        for _ in range(200):
            active = self._active_cell()
            if active == target:
                break
            page.keyboard.press("ArrowDown" if active < target else "ArrowUp")
        else:
            raise BrowserCheckError(f"arrow keys did not reach cell {target} (stuck at {active})")
        for presses in range(MAX_TABS + 1):
            if explorer.focus_is_on_main():
                return presses
            page.keyboard.press("Tab")
        raise BrowserCheckError(
            f"the main control was not reached with {MAX_TABS} Tab presses from its cell; "
            f"focus is on {self._describe_focus()}"
        )

    def callback_errors(self) -> list[str]:
        """What the Log Console holds for this notebook, if it looks like a
        traceback. The status bar's log item counts entries in its title; the
        console is opened (as a student clicking it would) only when it has any."""
        item = self.page.locator(".jp-LogConsoleStatusItem [title]").first
        if item.count() == 0:
            return []
        match = re.search(r"(\d+) log entries", item.get_attribute("title") or "")
        if not match or int(match.group(1)) == 0:
            return []
        panel = self.page.locator(".jp-LogConsolePanel")
        if not panel.is_visible():
            item.click()
        panel.locator(".jp-OutputArea-output").first.wait_for()
        texts = panel.locator(".jp-OutputArea-output").evaluate_all(
            "els => els.map(e => e.textContent)"
        )
        return [_excerpt(t) for t in texts if looks_like_traceback(t)]

    def close(self) -> None:
        self.guard.recording = False  # requests aborted by closing are not failures
        try:
            self.page.close()
        finally:
            self.server.shutdown_kernels()

    # -- helpers ----------------------------------------------------------

    def _menu(self, menu: str, item: str) -> None:
        self.page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{menu}$")).click()
        self.page.locator(".lm-Menu-item:visible", has_text=item).first.click()

    def _active_cell(self) -> int:
        return self.page.evaluate(
            """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')]
                     .findIndex(c => c.classList.contains('jp-mod-active'))"""
        )

    def _describe_focus(self) -> str:
        return self.page.evaluate(
            """() => { const e = document.activeElement;
                       return e ? `<${e.tagName.toLowerCase()} class="${e.className}">`
                                : 'nothing'; }"""
        )

    def _cells(self) -> list[dict[str, Any]]:
        """Per cell in page order: its prompt text and its stderr outputs."""
        return self.page.evaluate(CELLS_JS)

    def _errors(self, cells: list[dict[str, Any]]) -> list[str]:
        exempt = self._source_facts()["raises_exception"]
        return [
            f"cell {i}: {_excerpt(text)}"
            for i, cell in enumerate(cells)
            if i not in exempt
            for text in cell["stderr"]
            if looks_like_traceback(text)
        ]

    def _unexecuted(self, cells: list[dict[str, Any]]) -> list[int]:
        code = self._source_facts()["code"]
        return [
            i
            for i, cell in enumerate(cells)
            if i in code and not re.search(r"\[\d+\]", cell["prompt"])
        ]

    def _wait_idle(self, timeout: int, require_run: bool) -> None:
        """Kernel idle, no cell queued or running ([*]), and (after Run All)
        every code cell run or an error output that stopped the run; the same
        still half a second later. (The kernel is briefly idle between the
        cells of a Run All, so idleness alone proves nothing.)"""
        deadline = time.monotonic() + timeout / 1000
        settled_since = None
        while True:
            dialog = self.page.locator(".jp-Dialog")
            if dialog.count():
                # e.g. "Select Kernel" when the notebook names a kernel that is
                # not installed: nothing runs until a person answers.
                raise BrowserCheckError(
                    "JupyterLab shows a dialog instead of running the notebook: "
                    + repr(" ".join(dialog.first.inner_text().split())[:300])
                )
            status = self.page.evaluate(STATUS_JS)
            cells = self._cells()
            settled = (
                re.search(r"\|\s*Idle", status) is not None
                and not any("*" in cell["prompt"] for cell in cells)
                and (not require_run or not self._unexecuted(cells) or bool(self._errors(cells)))
            )
            now = time.monotonic()
            if not settled:
                settled_since = None
            elif settled_since is None:
                settled_since = now
            elif now - settled_since >= 0.5:
                return
            if now > deadline:
                raise BrowserCheckError(
                    f"kernel did not settle within {timeout / 1000:.0f} s: status {status!r}, "
                    f"code cells not run: {self._unexecuted(cells)}"
                )
            self.page.wait_for_timeout(150)

    def _source_facts(self) -> dict[str, set[int]]:
        if self._facts is None:
            self._facts = notebook_facts(self.server.root / self.notebook)
        return self._facts


def find_explorer(page: Page, container: str, missing: str) -> Explorer:
    """The first explorer inside ``container`` (a CSS selector), scrolled into
    view; ``missing`` ends the error message when there is none."""
    root = page.locator(f"{container} .{EXPLORER}").first
    try:
        root.wait_for(state="attached", timeout=CHANGE_TIMEOUT)
    except Exception as exc:  # playwright TimeoutError
        raise BrowserCheckError(f"no element with class {EXPLORER!r} {missing}") from exc
    root.scroll_into_view_if_needed()
    return Explorer.within(root)


def notebook_facts(path: Path) -> dict[str, set[int]]:
    """From the notebook file: which cells are non-empty code cells and which
    are tagged raises-exception (an error there is the lesson), by index."""
    cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])

    def source(cell):
        src = cell.get("source", "")
        return "".join(src) if isinstance(src, list) else src

    def tags(cell):
        return cell.get("metadata", {}).get("tags", [])

    return {
        "code": {
            i for i, c in enumerate(cells) if c.get("cell_type") == "code" and source(c).strip()
        },
        "raises_exception": {i for i, c in enumerate(cells) if "raises-exception" in tags(c)},
    }


# --------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Expectation:
    """What a notebook's main explorer promises (see notebook_registry.py)."""

    control: str = "slider"  # "slider" or "button"
    readout_shows_value: bool = True  # slider only: readout contains the slider's readout text
    has_explorer: bool = True
    reason: str = ""  # why an entry deviates from the defaults


@dataclasses.dataclass
class Change:
    how: str
    before: dict[str, str]
    after: dict[str, str]


def _state(explorer: Explorer, kind: str) -> dict[str, str]:
    state = {"src": explorer.figure_src(), "readout": explorer.readout_text()}
    if kind == "slider":
        state["value"] = str(explorer.slider_state()["text"])
    return state


def _short(state: dict[str, str]) -> dict[str, str]:
    return {
        k: (f"<{len(v)} chars ...{v[-16:]}>" if k == "src" and v else v) for k, v in state.items()
    }


def _await_change(
    frontend: Frontend,
    explorer: Explorer,
    kind: str,
    before: dict[str, str],
    how: str,
    expect: Expectation,
) -> Change:
    """Wait until the figure and the readout both differ from ``before`` and
    have stopped changing (a slider with continuous_update=True redraws on
    its way), then check the new state."""
    page = frontend.page
    deadline = time.monotonic() + CHANGE_TIMEOUT / 1000
    after = before
    start = time.monotonic()
    while time.monotonic() < deadline:
        after = _state(explorer, kind)
        if after["src"] and after["src"] != before["src"] and after["readout"] != before["readout"]:
            after = _settled_state(page, explorer, kind, after, deadline)
            break
        if time.monotonic() - start > 1.0:
            # Not changed yet: a callback that raised will never change it. Its
            # traceback is in the figure Output (raised inside `with out:`) or,
            # in JupyterLab, in the Log Console (raised outside).
            errors = frontend.error_outputs() + frontend.callback_errors()
            if errors:
                raise BrowserCheckError(
                    f"after {how}: the widget callback raised:\n    " + "\n    ".join(errors)
                )
        page.wait_for_timeout(100)
    problems = []
    if kind == "slider" and after.get("value") == before.get("value"):
        problems.append(f"the slider's value did not change ({before.get('value')!r})")
    if not after["src"]:
        problems.append("the figure shows no image")
    elif after["src"] == before["src"]:
        problems.append("the figure image did not change (same image data)")
    if after["readout"] == before["readout"]:
        problems.append(f"the readout did not change ({before['readout']!r})")
    elif (
        kind == "slider"
        and expect.readout_shows_value
        and not shows_value(after["readout"], after["value"])
    ):
        problems.append(
            f"the readout {after['readout']!r} does not show the slider's value {after['value']!r}"
        )
    if problems:
        raise BrowserCheckError(
            f"after {how}: "
            + "; ".join(problems)
            + f"\n  before: {_short(before)}\n  after:  {_short(after)}"
        )
    return Change(how, before, after)


def _await_figure(frontend: Frontend, explorer: Explorer) -> None:
    deadline = time.monotonic() + CHANGE_TIMEOUT / 1000
    while not explorer.figure_src():
        if time.monotonic() > deadline:
            raise BrowserCheckError(f"the explorer's {FIGURE} shows no image")
        frontend.page.wait_for_timeout(100)


def _settled_state(
    page: Page, explorer: Explorer, kind: str, state: dict[str, str], deadline: float
) -> dict[str, str]:
    stable_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - stable_since < SETTLE_SECONDS:
        page.wait_for_timeout(100)
        now = _state(explorer, kind)
        if now != state:
            state, stable_since = now, time.monotonic()
    return state


def shows_value(readout: str, value: str) -> bool:
    """Does the readout text show this value (as a whole number, not a part)?

    >>> shows_value("n = 4", "4"), shows_value("n = 40", "4"), shows_value("d_k = 4.", "4")
    (True, False, True)
    >>> shows_value("scale 0.50, entropy 1.2", "0.50"), shows_value("scale 10.50", "0.50")
    (True, False)

    ipywidgets' slider readout writes negatives with U+2212 (the minus sign);
    a readout made with an f-string has the ASCII hyphen. Both count:

    >>> shows_value("angle -130°", "\u2212130"), shows_value("angle -130°", "130")
    (True, False)

    A log slider's readout formats numbers its own way ("1e-6"); the readout
    may write the same number differently ("1e-06"), which counts too:

    >>> shows_value("h = 1e-06: ...", "1e-6"), shows_value("h = 1e-05", "1e-6")
    (True, False)
    """
    value, readout = (t.replace("\u2212", "-") for t in (value, readout))
    if re.search(rf"(?<![\d.-]){re.escape(value)}(?!\.?\d)", readout):
        return True
    if "e" not in value.lower():
        return False
    number = float(value)
    written = re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", readout)
    return any(math.isclose(float(token), number, rel_tol=1e-9) for token in written)


def _drag_slider(page: Page, explorer: Explorer) -> None:
    state = explorer.slider_state()
    handle = explorer.handle()
    handle.scroll_into_view_if_needed()
    hbox = handle.bounding_box()
    track = explorer.main.locator(".noUi-target").first.bounding_box()
    assert hbox and track, "slider handle or track has no box on screen"
    x0 = hbox["x"] + hbox["width"] / 2
    y0 = hbox["y"] + hbox["height"] / 2
    toward_max = state["now"] <= (state["min"] + state["max"]) / 2
    x1 = track["x"] + track["width"] * (0.85 if toward_max else 0.15)
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y0, steps=12)
    page.mouse.up()


def check_explorer(
    frontend: Frontend,
    notebook: str,
    expect: Expectation,
    screenshot: Path | None = None,
    opened: bool = False,
) -> list[Change]:
    """Everything a student does with a notebook's main explorer; raises
    BrowserCheckError on the first thing that does not work. ``opened``: the
    caller has opened the notebook and run it (and looked at the page first)."""
    changes: list[Change] = []
    try:
        if not opened:
            frontend.open(notebook)
            frontend.run_all()
        errors = frontend.error_outputs()
        if errors:
            raise BrowserCheckError("error output after Run All:\n" + "\n".join(errors))
        unexecuted = frontend.unexecuted_cells()
        if unexecuted:
            raise BrowserCheckError(f"code cells not executed by Run All: {unexecuted}")
        if not expect.has_explorer:
            return changes
        explorer = frontend.explorer()
        kind = explorer.kind()
        if kind != expect.control:
            raise BrowserCheckError(
                f"main control ({MAIN_CONTROL}) is a {kind}, the registry expects a "
                f"{expect.control}: fix the notebook or its entry in notebook_registry.py"
            )
        _await_figure(frontend, explorer)
        page = frontend.page

        # Keyboard: reach the control with Tab, then operate it.
        tabs = frontend.focus_by_keyboard(explorer)
        if kind == "slider":
            state = explorer.slider_state()
            key = "ArrowRight" if state["now"] < state["max"] else "ArrowLeft"
            before = _state(explorer, kind)
            page.keyboard.press(key)
            changes.append(
                _await_change(frontend, explorer, kind, before, f"Tab x{tabs} + {key}", expect)
            )
        else:
            for key in ("Enter", "Space"):
                if not explorer.focus_is_on_main():
                    raise BrowserCheckError(f"focus left the button before {key}")
                before = _state(explorer, kind)
                page.keyboard.press(key)
                changes.append(
                    _await_change(frontend, explorer, kind, before, f"Tab x{tabs} + {key}", expect)
                )

        # Mouse.
        before = _state(explorer, kind)
        if kind == "slider":
            _drag_slider(page, explorer)
            how = "dragging the slider handle"
        else:
            explorer.main.click()
            how = "clicking the button"
        changes.append(_await_change(frontend, explorer, kind, before, how, expect))

        errors = frontend.error_outputs()
        if errors:
            raise BrowserCheckError("error output after using the explorer:\n" + "\n".join(errors))
        errors = frontend.callback_errors()
        if errors:
            raise BrowserCheckError("a widget callback raised:\n    " + "\n    ".join(errors))
        return changes
    finally:
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            try:
                frontend.page.screenshot(path=str(screenshot))
            except Exception:  # a failed screenshot must not hide the real failure
                pass


@contextmanager
def guarded(guard: NetworkGuard) -> Iterator[NetworkGuard]:
    """Reset the guard, run the block, then fail on what it recorded."""
    guard.reset()
    yield guard
    problems = guard.problems()
    if problems:
        raise BrowserCheckError(
            "network / console problems (allow-list benign ones in "
            "browser_harness.ALLOWED_NOISE with a reason):\n  " + "\n  ".join(problems)
        )


def launch_chromium(playwright: Any, user_data_dir: Path) -> BrowserContext:
    """Debian's Chromium with a fresh profile; the flags of FIELD-NOTES."""
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_FLAGS,
        viewport=VIEWPORT,
        service_workers="block",
    )


def missing_browser_tools() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    import importlib.util

    problems = []
    if importlib.util.find_spec("playwright") is None:
        problems.append("the 'playwright' Python package is not installed (pip install playwright)")
    if not os.access(CHROMIUM, os.X_OK):
        problems.append(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    return "; ".join(problems) or None
