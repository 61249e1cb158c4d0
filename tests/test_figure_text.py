"""Text in every figure is at least 14 CSS pixels where JupyterLab shows it (issue 12).

The live explorers are measured here, in both styles. The static figures of every
notebook are measured under nbval, in each notebook's own kernel as the inline
backend prints them (``tests/nbval_figure_text.py``); the last test here proves
that this check catches a planted small text.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from figure_text import COLUMN_PX, MIN_TEXT_PX, shown_text, too_small

from attention_lib import plots
from attention_lib.widgets import available_explorers

ROOT = Path(__file__).resolve().parents[1]


def test_the_check_sees_small_text():
    fig, ax = plots.new_figure(pyplot=False, figsize=(6.0, 3.0), dpi=100)
    ax.set_title("tiny", fontsize=6)
    sizes = dict(shown_text(fig))
    assert sizes["tiny"] == pytest.approx(6 * 100 / 72)
    wide, ax = plots.new_figure(pyplot=False, figsize=(20.0, 3.0), dpi=150)
    ax.set_title("shrunk", fontsize=10)  # 3000 px wide: JupyterLab shows it 1484 wide
    assert dict(shown_text(wide))["shrunk"] == pytest.approx(10 * 150 / 72 * COLUMN_PX / 3000)


@pytest.mark.parametrize("style", ["default", "board"])
@pytest.mark.parametrize("name", sorted(available_explorers()))
def test_live_figure_text_is_readable(name, style):
    explorer = available_explorers()[name].factory(style=style)
    small = too_small(shown_text(explorer.fig))
    explorer.close()
    assert not small, f"{name} ({style}): text under {MIN_TEXT_PX} CSS px: {small[:8]}"


PLANTED = [
    "%matplotlib inline\nimport matplotlib.pyplot as plt",
    "fig, ax = plt.subplots(figsize=(6, 3), dpi=150)\n_ = ax.set_title('readable', fontsize=12)",
    "fig, ax = plt.subplots(figsize=(6, 3), dpi=150)\n_ = ax.set_title('planted', fontsize=5)",
]


def test_the_nbval_run_catches_a_small_text_and_a_figure_it_did_not_measure(tmp_path):
    """A notebook with one 25 px and one 10 px title, run by nbval as `make test` runs it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in PLANTED]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = tmp_path / "planted.ipynb"
    nbformat.write(nb, path)  # no stored outputs: nbval compares nothing, the check still runs
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", str(path)]
        + ["-p", "tests.nbval_figure_text", "-p", "no:cacheprovider", "-c", "pyproject.toml"],
        cwd=ROOT,  # where `tests.nbval_figure_text` imports from, as the root conftest.py does
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = run.stdout
    assert run.returncode == 1 and "3 passed, 1 error" in report, report
    assert "(figure number, text, px): [[2, 'planted', 10.4]]" in report, report
    assert "stores 0 PNG figures, but its kernel printed 2" in report, report
