"""Every notebook of the series with a live widget, driven in JupyterLab.

Which notebooks: notebook_registry.notebooks_to_drive() - the registry plus
any notebook under notebooks/ that looks like it has a widget, so a newly
landed widget notebook is covered even before it is registered. Those with an
explorer are driven (``check_explorer``) by test_browser_frontend.py, after the
checks it makes on the same Run All; the others are run here.
"""

from __future__ import annotations

import dataclasses

import pytest

from .browser_harness import Expectation, check_explorer
from .notebook_registry import REGISTRY, REPO, looks_like_widget_notebook, notebooks_to_drive

PLAN = notebooks_to_drive()


def _params(paths, empty_reason):
    if not paths:
        # A skipped placeholder (set up no browser) rather than pytest's
        # "empty parameter set", so the reason shows in the summary.
        return [pytest.param(None, id="none", marks=pytest.mark.skip(reason=empty_reason))]
    return [pytest.param(p, id=p.removeprefix("notebooks/")) for p in paths]


@pytest.mark.parametrize(
    "path", _params(sorted(REGISTRY), "the registry is empty: no widget notebook has landed yet")
)
def test_registry_entry_is_sound(path):
    """An entry for a renamed or removed notebook would silently test nothing."""
    notebook = REPO / path
    assert notebook.is_file(), f"notebook_registry.REGISTRY lists {path}, which does not exist"
    expect = REGISTRY[path]
    assert expect.control in {"slider", "button"}, f"{path}: control must be slider or button"
    assert not expect.has_explorer or looks_like_widget_notebook(notebook), (
        f"{path} is registered with an explorer but shows no sign of a widget"
    )
    if dataclasses.replace(expect, reason="") != Expectation():
        assert expect.reason, f"{path}: an entry that deviates from the defaults needs a reason"


@pytest.mark.browser
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "path",
    _params(
        sorted(p for p, expect in PLAN.items() if not expect.has_explorer),
        "every widget notebook has an explorer: test_browser_frontend.py drives them",
    ),
)
def test_notebook_without_explorer_runs(path, lab, screenshot_path):
    check_explorer(lab, path, PLAN[path], screenshot_path)
