"""Fixtures of the browser tests: one JupyterLab, one Voila (board template)
and one Chromium per session; each server starts only if a test asks for it.

Without Chromium or Playwright the tests skip with the reason, unless
ATTENTION_REQUIRE_BROWSER=1 (set by .ci/run), which turns that into a failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .browser_harness import (
    JupyterLabFrontend,
    NetworkGuard,
    guarded,
    launch_chromium,
    missing_browser_tools,
)
from .lab_server import JupyterLabServer, LocalJupyterServer
from .notebook_registry import FIXTURES, NOTEBOOKS, REPO
from .voila_frontend import VoilaFrontend
from .voila_server import VoilaServer

ARTIFACTS = REPO / "artifacts" / "browser"
REQUIRE_ENV = "ATTENTION_REQUIRE_BROWSER"


def require_browser() -> None:
    problem = missing_browser_tools()
    if problem is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(
            f"browser tests are mandatory here ({REQUIRE_ENV}=1) but cannot run: {problem}",
            pytrace=False,
        )
    pytest.skip(
        f"browser tests skipped: {problem}. Install what is missing to run them; "
        f"{REQUIRE_ENV}=1 makes this a failure (CI)."
    )


def _running(server: LocalJupyterServer) -> Iterator[LocalJupyterServer]:
    """Start the server, hand it out, stop it whatever happened meanwhile."""
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    """A JupyterLab serving temporary copies of notebooks/ and the fixtures."""
    require_browser()
    yield from _running(
        JupyterLabServer(
            tmp_path_factory.mktemp("jupyterlab"),
            sources={"notebooks": NOTEBOOKS, "fixtures": FIXTURES},
            pythonpath=REPO,
        )
    )


@pytest.fixture(scope="session")
def voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VoilaServer]:
    """Voila with the board template (as `make board` runs it) serving
    temporary copies of notebooks/ and the fixtures."""
    require_browser()
    yield from _running(
        VoilaServer(
            tmp_path_factory.mktemp("voila"),
            sources={"notebooks": NOTEBOOKS, "fixtures": FIXTURES},
            share=REPO / "share" / "jupyter",
            pythonpath=REPO,
        )
    )


@pytest.fixture(scope="session")
def network_guard() -> NetworkGuard:
    return NetworkGuard()


@pytest.fixture(scope="session")
def playwright_session():
    """The worker's one Playwright: a second sync_playwright in the same process fails."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="session")
def chromium(
    playwright_session, network_guard: NetworkGuard, tmp_path_factory: pytest.TempPathFactory
):
    """A browser context of Debian's Chromium with a fresh profile."""
    context = launch_chromium(playwright_session, tmp_path_factory.mktemp("chromium-profile"))
    try:
        network_guard.attach_context(context)
        yield context
    finally:
        context.close()


@pytest.fixture
def lab(chromium, jupyterlab: JupyterLabServer, network_guard: NetworkGuard):
    """A fresh JupyterLab page; fails the test on offline / console problems."""
    with guarded(network_guard):
        frontend = JupyterLabFrontend(chromium, jupyterlab, network_guard)
        try:
            yield frontend
        finally:
            frontend.close()


def _board(chromium, voila: VoilaServer, network_guard: NetworkGuard, theme: str):
    with guarded(network_guard):
        frontend = VoilaFrontend(chromium, voila, network_guard, theme=theme)
        try:
            yield frontend
        finally:
            frontend.close()


@pytest.fixture
def board(chromium, voila: VoilaServer, network_guard: NetworkGuard):
    """A fresh board page (light theme), 1920x1080; fails the test on offline /
    console problems."""
    yield from _board(chromium, voila, network_guard, "light")


@pytest.fixture
def board_dark(chromium, voila: VoilaServer, network_guard: NetworkGuard):
    """The same in Voila's dark theme (?theme=dark)."""
    yield from _board(chromium, voila, network_guard, "dark")


@pytest.fixture
def screenshot_path(request: pytest.FixtureRequest) -> Path:
    name = re.sub(r"[^\w.-]+", "_", request.node.name).strip("_")
    return ARTIFACTS / f"{name}.png"


def pytest_sessionfinish(session):
    """On a pytest-xdist worker: hand the explorers' summary to the controller, which
    prints it (tests/conftest.py: the controller collects nothing, so never loads this)."""
    if hasattr(session.config, "workeroutput"):
        from .explorer_measures import RESULTS, summary_lines

        session.config.workeroutput["explorer_summary"] = summary_lines(RESULTS)


def pytest_terminal_summary(terminalreporter):
    """The explorers' numbers (test_browser_every_explorer.py), when it ran."""
    from .explorer_measures import RESULTS, summary_lines

    if RESULTS:
        terminalreporter.section("explorers: height / panel, image scale, fill, latency")
        for line in summary_lines(RESULTS):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"all numbers: {ARTIFACTS}/latency.json and fit.json")
