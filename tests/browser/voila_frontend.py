"""The board page (Voila with the board template) as a front end of the harness.

``VoilaFrontend`` implements ``browser_harness.Frontend``, so ``check_explorer``
drives an explorer on the board page exactly as it does in JupyterLab: the
widget DOM is the same. What differs:

- Voila runs the notebook while it sends the page, so ``open`` waits for the
  page to finish and every output to be rendered, and ``run_all`` does nothing.
- There are no prompts; a cell the run did not reach (Voila stops at the first
  error) is one whose ``cell-index`` block is missing from the page.
- Keyboard focus starts at the explorer's cell (made focusable for the test),
  the way a presenter who clicked beside the widget would start, then Tab.
- A widget callback that raises reaches no cell and Voila shows it nowhere;
  the kernel still sends it as an ``error`` message on the page's kernel
  websocket, which the front end reads.
- ``close`` shuts the page's kernel down the way Voila's own ``beforeunload``
  handler means to (a POST to ``voila/api/shutdown/<id>``), so idle kernels do
  not pile up on two cores, and fails if Voila refuses.

Beyond the protocol it answers the board's own questions: is any code on the
page, is the text readable against the page (contrast), is the page dark, and
does the explorer fit on one screen.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .browser_harness import (
    MAX_TABS,
    MESSAGE_LOG_JS,
    NEXT_FRAMES_JS,
    PAGE_TIMEOUT,
    RUN_ALL_TIMEOUT,
    BrowserCheckError,
    Explorer,
    NetworkGuard,
    _excerpt,
    find_explorer,
    looks_like_traceback,
    notebook_facts,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from playwright.sync_api import BrowserContext, WebSocket

    from .voila_server import VoilaServer

#: A projector: what the board is for (the issue asks for 1920x1080).
BOARD_VIEWPORT = {"width": 1920, "height": 1080}

# Voila's cell outputs travel in these scripts; its front end replaces each by
# the rendered output, so none left means every output is on the page.
PENDING_OUTPUTS = 'script[type="application/vnd.voila.cell-output+json"]'

# Every figure Voila put on the page decoded (what the load event would also have waited for).
FIGURES_DECODED_JS = """() => [...document.querySelectorAll('#rendered_cells img')]
    .every(img => img.complete)"""

# How far an unfinished page got: the cell blocks it has (0-based) and its state.
UNFINISHED_JS = """() => ({readyState: document.readyState,
    cells: [...document.querySelectorAll('#rendered_cells [cell-index]')]
        .map(c => parseInt(c.getAttribute('cell-index'), 10) - 1)})"""

# Per cell block of the page (board template: div[cell-index], 1-based), the
# stderr outputs shown in it.
CELLS_JS = """() => [...document.querySelectorAll('#rendered_cells [cell-index]')]
    .map(cell => ({
        index: parseInt(cell.getAttribute('cell-index'), 10) - 1,
        stderr: [...cell.querySelectorAll(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
            .map(o => o.textContent),
    }))"""

# What Voila's own beforeunload handler sends to stop the page's kernel. Its
# form carries the page's _xsrf cookie, which Voila 0.5.13 never sets, so the
# server refuses it (403); the test sets one first (tornado's double-submit
# check only compares the cookie with the form field).
SHUTDOWN_JS = """async () => {
    const config = document.getElementById('jupyter-config-data');
    if (!config) return null;
    const {baseUrl, kernelId} = JSON.parse(config.textContent);
    if (!kernelId) return null;
    const xsrf = crypto.randomUUID().replaceAll('-', '');
    document.cookie = `_xsrf=${xsrf}; path=/`;
    const form = new FormData();
    form.append('_xsrf', xsrf);
    const response = await fetch(`${baseUrl}voila/api/shutdown/${kernelId}`,
                                 {method: 'POST', body: form});
    return response.status;
}"""

# Code of the notebook as it would look on the page: editors, highlighted
# sources, input areas. The board template sends none of them.
CODE_SELECTORS = (
    ".jp-CodeCell .jp-InputArea, .jp-InputArea-editor, .jp-CodeMirrorEditor, .cm-editor"
)

# WCAG 2 contrast of the first paragraph's text against the page behind it.
CONTRAST_JS = """() => {
    const rgb = s => (s.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
    const background = el => {
        for (; el; el = el.parentElement) {
            const c = rgb(getComputedStyle(el).backgroundColor);
            if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
        }
        return [255, 255, 255];
    };
    const luminance = ([r, g, b]) => {
        const lin = v => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    };
    const p = document.querySelector('#rendered_cells .jp-RenderedMarkdown p');
    if (!p) return null;
    const [l1, l2] = [luminance(rgb(getComputedStyle(p).color)), luminance(background(p))];
    return {contrast: (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05),
            background_luminance: luminance(background(p))};
}"""


def code_lines(notebook: Path, min_length: int = 25) -> list[str]:
    """Lines of the notebook's code cells long and code-like enough that
    finding one in the page's text means the code is on show.

    >>> import json, tempfile
    >>> cells = [{"cell_type": "code", "metadata": {}, "outputs": [],
    ...           "source": "x = 1\\nexplorer = sqrt_dk.explorer(style=style)\\n# a comment line"}]
    >>> path = Path(tempfile.mkdtemp()) / "nb.ipynb"
    >>> _ = path.write_text(json.dumps({"cells": cells}))
    >>> code_lines(path)
    ['explorer = sqrt_dk.explorer(style=style)']
    """
    cells = json.loads(Path(notebook).read_text(encoding="utf-8")).get("cells", [])

    def source_of(cell):
        source = cell.get("source", "")
        return "".join(source) if isinstance(source, list) else source

    # A line the prose itself quotes (07 tells students to replace
    # `raise NotImplementedError()`) is text on the page, not code on show.
    prose = "\n".join(source_of(c) for c in cells if c.get("cell_type") == "markdown")
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        for line in source_of(cell).splitlines():
            line = line.strip()
            if (
                len(line) >= min_length
                and not line.startswith("#")
                and re.search(r"[(=]", line)
                and line not in prose
            ):
                lines.append(line)
    return lines


_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_ERROR_CONTENT = re.compile(rf'"ename":\s*({_JSON_STRING})\s*,\s*"evalue":\s*({_JSON_STRING})')


def kernel_errors_in_frame(payload: str | bytes) -> list[str]:
    """``ename: evalue`` of the kernel ``error`` messages in one websocket frame.

    Frames are JSON (Jupyter's plain websocket protocol) or binary with the
    same JSON parts inside (the v1 protocol); the parts are found either way.

    >>> frame = json.dumps({"header": {"msg_type": "error"}, "msg_type": "error",
    ...     "content": {"ename": "NameError", "evalue": "name 'drow' is not defined"}})
    >>> kernel_errors_in_frame(frame)
    ["NameError: name 'drow' is not defined"]
    >>> kernel_errors_in_frame(b'{"msg_type": "stream"}')
    []
    """
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    if not re.search(r'"msg_type":\s*"error"', text):
        return []
    return [
        f"{json.loads(ename)}: {json.loads(evalue)}"
        for ename, evalue in _ERROR_CONTENT.findall(text)
    ]


class VoilaFrontend:
    """A board page (Voila, board template) in a Playwright page at 1920x1080."""

    name = "voila"

    def __init__(
        self,
        context: BrowserContext,
        server: VoilaServer,
        guard: NetworkGuard,
        theme: str = "light",
    ):
        self.server = server
        self.guard = guard
        self.theme = theme
        self.page = context.new_page()
        self.page.set_viewport_size(BOARD_VIEWPORT)
        self.page.set_default_timeout(PAGE_TIMEOUT)
        self.page.add_init_script(MESSAGE_LOG_JS)
        guard.attach_page(self.page)
        self.page.on("websocket", self._watch_kernel)
        self._open_requests: set[str] = set()  # what the page still waits for (a hang's report)
        self.page.on("request", lambda r: self._open_requests.add(r.url[:120]))
        for done in ("requestfinished", "requestfailed"):
            self.page.on(done, lambda r: self._open_requests.discard(r.url[:120]))
        self.kernel_errors: list[str] = []
        self.notebook: str | None = None
        self._facts: dict[str, set[int]] | None = None

    # -- protocol ---------------------------------------------------------

    def open(self, notebook: str) -> None:
        self.notebook = notebook
        self._facts = None
        log_start = len(self.server.log_text())
        # The page arrives while Voila runs the notebook: the end of its HTML
        # (DOMContentLoaded) comes after the last cell, so the whole run is inside
        # this wait. Not the load event: that also waits for every subresource, and
        # what the checks need of those (figures decoded) is waited for below.
        self.page.goto(self.server.render_url(notebook, self.theme), wait_until="commit")
        try:
            self.page.wait_for_load_state("domcontentloaded", timeout=RUN_ALL_TIMEOUT)
        except Exception as exc:  # playwright TimeoutError
            raise BrowserCheckError(self._unfinished(log_start)) from exc
        self.page.locator("#rendered_cells").wait_for(state="visible")
        self.page.wait_for_function(f"() => !document.querySelector({json.dumps(PENDING_OUTPUTS)})")
        self.page.wait_for_function(FIGURES_DECODED_JS)

    def run_all(self) -> None:
        """Nothing to do: Voila ran every cell before the page finished loading."""

    def error_outputs(self) -> list[str]:
        exempt = self._source_facts()["raises_exception"]
        return [
            f"cell {cell['index']}: {_excerpt(text)}"
            for cell in self.page.evaluate(CELLS_JS)
            if cell["index"] not in exempt
            for text in cell["stderr"]
            if looks_like_traceback(text)
        ]

    def unexecuted_cells(self) -> list[int]:
        """Code cells with no block on the page: Voila stopped before them."""
        shown = {cell["index"] for cell in self.page.evaluate(CELLS_JS)}
        return sorted(self._source_facts()["code"] - shown)

    def explorer(self) -> Explorer:
        return find_explorer(
            self.page,
            "#rendered_cells",
            "on the board page "
            "(is the explorer's cell tagged board-hide, or inside a hidden answer?)",
        )

    def focus_by_keyboard(self, explorer: Explorer) -> int:
        explorer.root.evaluate(
            """el => { const cell = el.closest('[cell-index]') || el;
                       cell.tabIndex = -1; cell.focus(); }"""
        )
        for presses in range(MAX_TABS + 1):
            if explorer.focus_is_on_main():
                return presses
            self.page.keyboard.press("Tab")
        raise BrowserCheckError(
            f"the main control was not reached with {MAX_TABS} Tab presses from its cell"
        )

    def callback_errors(self) -> list[str]:
        return list(self.kernel_errors)

    def close(self) -> None:
        self.guard.recording = False  # requests aborted by closing are not failures
        try:
            status = None if self.page.is_closed() else self.page.evaluate(SHUTDOWN_JS)
        finally:
            self.page.close()
        if status not in (None, 204):
            raise BrowserCheckError(f"Voila refused to shut the page's kernel down: HTTP {status}")

    # -- the board's own questions ----------------------------------------

    def code_on_page(self) -> list[str]:
        """Code the page shows: input areas, or a line of the notebook's code
        cells anywhere in the page's text (revealed or not)."""
        found = []
        inputs = self.page.locator(CODE_SELECTORS).count()
        if inputs:
            found.append(f"{inputs} code input area(s) ({CODE_SELECTORS})")
        text = self.page.evaluate("() => document.getElementById('rendered_cells').textContent")
        found += [
            f"code line {line!r}"
            for line in code_lines(self.server.root / self.notebook)
            if line in text
        ]
        return found

    def readability(self) -> dict[str, float] | None:
        """Contrast of body text against the page, and the page's luminance
        (0 black, 1 white); None when the page has no paragraph."""
        return self.page.evaluate(CONTRAST_JS)

    def explorer_box(self, explorer: Explorer) -> dict[str, Any]:
        """The explorer's size on the page, in CSS pixels."""
        box = explorer.root.bounding_box()
        if box is None:
            raise BrowserCheckError("the explorer has no box on the page (hidden?)")
        return box

    def screenshot_at(self, explorer: Explorer | None, path: Path) -> None:
        """One screen of the page, with the explorer (if any) at its top."""
        if explorer is not None:
            explorer.root.evaluate("el => el.scrollIntoView({block: 'start'})")
            self.page.evaluate(NEXT_FRAMES_JS)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path))

    # -- helpers ----------------------------------------------------------

    def _watch_kernel(self, websocket: WebSocket) -> None:
        if "/api/kernels/" in websocket.url:
            websocket.on(
                "framereceived",
                lambda payload: self.kernel_errors.extend(kernel_errors_in_frame(payload)),
            )

    def _unfinished(self, log_start: int) -> str:
        """Why the page did not finish: how far Voila got, what the page still
        waits for, and what Voila logged meanwhile."""
        page = self.page.evaluate(UNFINISHED_JS)
        code = self._source_facts()["code"]
        reached = sorted(code & {i for i in page["cells"]})
        log = self.server.log_text()[log_start:].strip()
        return (
            f"Voila's page of {self.notebook} did not finish in {RUN_ALL_TIMEOUT / 1000:.0f} s: "
            f"{len(reached)} of {len(code)} code cells on the page, document "
            f"{page['readyState']!r}; requests still open: {sorted(self._open_requests) or 'none'}"
            f"\nVoila's log meanwhile:\n{log[-3000:] or '(nothing)'}"
        )

    def _source_facts(self) -> dict[str, set[int]]:
        if self._facts is None:
            self._facts = notebook_facts(self.server.root / self.notebook)
        return self._facts
