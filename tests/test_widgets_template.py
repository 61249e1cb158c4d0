"""Every explorer module follows the one template, and its fast frames equal fresh drawings.

The template (see ``attention_lib/widgets/__init__.py``): public ``update`` (pure,
one keyword per control), ``draw``, ``refresh``, ``table``, ``readout`` and
``EXPLORER = ExplorerSpec(...)`` built from them, listed in ``__all__``; the
factory builds its explorer with ``EXPLORER.explorer(controls, ...)``.
"""

import importlib

import pytest
from explorer_asserts import assert_frames_match_fresh_drawings, assert_same_state

from attention_lib import plots
from attention_lib.widgets import available_explorers

TEMPLATE_NAMES = ("EXPLORER", "draw", "readout", "refresh", "table", "update")

#: Per explorer, control changes that move every artist its refresh moves, in the
#: default and the board style. Each frame must equal a fresh drawing pixel for pixel.
FRAME_CHANGES = {
    "soft_lookup": [
        {"angle": -100.0},
        {"length": 3.3},
        {"angle": 170.0, "length": 0.0},  # zero query: only the dot
        {"length": 0.4},
        {"angle": 45.0, "length": 3.0},  # along the dog key: the key names make way
    ],
    "sqrt_dk": [{"d_k": 4096}, {"scaled": True}, {"d_k": 16}, {"scaled": False}, {"d_k": 1}],
    "mask_editor": [
        {"causal": False},
        {"blocked": ((2, 1), (4, 4))},
        {"lengths": (5, 1)},
        {"length": 6},  # a new T: a full redraw, then blitting again
        {"lengths": (2, 6)},
        {"lengths": (0, 6)},  # example 0 all padding: its rows empty, their sums turn 0
    ],
    "backward_step": [
        {"h": 1e-3},
        {"array": "K"},
        {"row": 1, "col": 2},
        {"h": 1e-10, "array": "V"},
        {"causal": False},
        {"row": 0, "array": "Q", "causal": True},  # the note on a flat row appears
        {"row": 2, "h": 0.5},  # and goes
    ],
    "self_cross": [
        {"T_k": 9},  # a new shape: a full draw
        {"d_k": 1, "d_v": 8},  # blocks and operators move
        {"mode": "self"},  # square, decoder tokens on both axes
        {"causal": True, "T_q": 10},
        {"d_k": 8, "causal": False},
        {"mode": "cross", "T_q": 1},  # T_k back to 9
        {"T_q": 4, "T_k": 6, "d_v": 3},  # the first shape again: its frozen layout
        {"d_k": 2},
    ],
    "teach_walkthrough": [
        {"step": 2},
        {"step": 4},
        {"query_position": 1},  # the causal step needs a mask moved in place
        {"step": 6},
        {"query_position": 3},
        {"step": 1},
    ],
    "online_softmax": [{"block": 3}, {"block": 4}, {"block": 1}, {"block": 2}],
    "mask_order": [{"future_first": -4.0}, {"future_first": 6.0}, {"future_first": 0.5}],
    # Half learned, sharp, uniform again (the stem beside the y axis), a little learned.
    "training_steps": [
        {"step_index": 10},
        {"step_index": 30},
        {"step_index": 0},
        {"step_index": 4},
    ],
}

SPECS = available_explorers()


def _module(spec):
    return importlib.import_module(spec.factory.__module__)


def test_every_explorer_has_frame_changes():
    assert set(FRAME_CHANGES) == set(SPECS), "list frame changes for each new explorer"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_module_follows_the_template(name):
    spec = SPECS[name]
    module = _module(spec)
    assert set(TEMPLATE_NAMES) <= set(module.__all__)
    assert spec.factory.__name__ in module.__all__
    assert module.EXPLORER is spec
    for field in ("update", "draw", "refresh", "table", "readout"):
        assert getattr(spec, field) is getattr(module, field), field


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_update_of_the_control_values_is_the_explorer_state(name):
    """What the benchmark's naive redraw relies on: ``spec.update(**explorer.values)``."""
    spec = SPECS[name]
    explorer = spec.factory()
    for change in FRAME_CHANGES[name]:
        explorer.set(**change)
        assert_same_state(spec.update(**explorer.values), explorer.state)
    explorer.close()


@pytest.mark.parametrize("style", ["default", "board"])
@pytest.mark.parametrize("name", sorted(SPECS))
def test_refreshed_frames_equal_fresh_drawings(name, style):
    spec = SPECS[name]
    explorer = spec.factory(style=style)
    assert plots.figure_style(explorer._fig) == style
    assert_frames_match_fresh_drawings(explorer, spec, FRAME_CHANGES[name])
    explorer.close()
