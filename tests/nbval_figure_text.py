"""Under ``pytest --nbval``: every static figure's text is at least 14 CSS px (issue 12).

nbval runs each notebook in its own kernel, and a notebook's static figures are
the PNGs the inline backend prints there. So the check rides along: before a
notebook's first cell, its kernel loads ``tests/figure_text.py`` and notes the
text of every figure it prints; after the last cell, this plugin asks for the
report and fails the notebook (an error at the teardown of its last cell) if a
text is under ``MIN_TEXT_PX`` where JupyterLab shows it, or if the kernel
printed a different number of figures than the cells it ran store PNGs (then
some stored figure was not measured: a stale notebook, or a figure that does not
come from matplotlib).

Nothing runs twice: the figures are measured as nbval draws them. Loaded by the
root ``conftest.py``; without ``--nbval`` it does nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nbval.plugin import IPyNbCell

FIGURE_TEXT = Path(__file__).with_name("figure_text.py")
# Runs in the notebook's kernel. It leaves no name behind in the notebook's namespace.
_WATCH = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_figure_text", {str(FIGURE_TEXT)!r})
sys.modules["_figure_text"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sys.modules["_figure_text"])
sys.modules["_figure_text"].watch_printed_figures()
del importlib, sys, spec
"""
_REPORT = """
import json, sys
print(json.dumps(sys.modules["_figure_text"].printed_report()))
del json, sys
"""


def run_in_kernel(kernel, code, timeout=60):
    """Run ``code`` in an nbval kernel between two cells; return what it printed.

    An error there is raised here, with the kernel's message.
    """
    msg_id = kernel.execute_cell_input(code, allow_stdin=False)
    printed = []
    while True:
        msg = kernel.get_message(stream="iopub", timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            raise RuntimeError(f"figure text check: {msg['content']['evalue']}")
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(printed)


def stored_figures(cells):
    """PNG outputs stored by the cells nbval ran (selected, not tagged nbval-skip)."""
    ran = [cell.cell for cell in cells if not cell.options["skip"]]
    return sum("image/png" in out.get("data", {}) for cell in ran for out in cell.outputs)


@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item):
    """Once nbval has started a notebook's kernel, have it note every figure it prints."""
    notebook = item.parent
    if isinstance(item, IPyNbCell) and not getattr(notebook, "watches_figure_text", False):
        run_in_kernel(notebook.kernel, _WATCH)
        notebook.watches_figure_text = True


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """After a notebook's last cell, before nbval stops its kernel: check what it printed."""
    notebook = item.parent
    last_cell = isinstance(item, IPyNbCell) and getattr(nextitem, "parent", None) is not notebook
    report = None
    if last_cell and getattr(notebook, "watches_figure_text", False) and notebook.kernel.is_alive():
        report = json.loads(run_in_kernel(notebook.kernel, _REPORT))
    yield
    if report is None:
        return
    name = Path(str(notebook.fspath)).name
    stored = stored_figures([cell for cell in item.session.items if cell.parent is notebook])
    problems = []
    if report["figures"] != stored:
        problems.append(
            f"{name} stores {stored} PNG figures, but its kernel printed {report['figures']} "
            "matplotlib figures under nbval: every stored figure must be one that was measured "
            "(re-execute the notebook with `make execute` if it is stale)"
        )
    if report["too_small"]:
        problems.append(
            f"{name}: text under {report['min_px']} CSS px where JupyterLab shows it, as "
            f"(figure number, text, px): {report['too_small'][:10]}"
        )
    assert not problems, "\n".join(problems)
