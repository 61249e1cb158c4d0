"""The widget benchmark's scripted control changes fit the explorers they drive."""

import pathlib
import runpy

import pytest

from attention_lib.widgets import available_explorers

BENCH_PATH = pathlib.Path(__file__).parents[1] / "benchmarks" / "bench_widgets.py"
SCRIPTED_CHANGES = runpy.run_path(str(BENCH_PATH))["SCRIPTED_CHANGES"]


def test_scripts_name_registered_explorers():
    assert set(SCRIPTED_CHANGES) <= set(available_explorers())


@pytest.mark.parametrize("name", sorted(SCRIPTED_CHANGES))
def test_scripted_changes_are_valid_control_values(name):
    explorer = available_explorers()[name].factory()
    start = explorer.values
    for change in SCRIPTED_CHANGES[name]:
        assert set(change) <= set(explorer.controls), change
        explorer.set(**change)
        assert {key: explorer.values[key] for key in change} == change  # nothing clipped
    if name == "mask_editor":  # a session that ends where it started, so repeats are alike
        assert explorer.values == start
    explorer.close()
