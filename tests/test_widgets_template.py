"""Every explorer module follows the one contract, and its fast frames equal fresh drawings.

The contract is written in ``docs/architecture.md`` ("The explorer contract");
each of its rules is checked here for every explorer the registry finds.
"""

import ast
import importlib
import inspect
import math
import pkgutil
import re

import ipywidgets
import pytest
from explorer_asserts import (
    assert_frames_match_fresh_drawings,
    assert_same_state,
    default_frame_changes,
)
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from attention_lib import plots, widgets
from attention_lib.widgets import Explorer, ExplorerSpec, HiddenControl, _shell, available_explorers
from attention_lib.widgets._shell import HOOKS, _scene_artists

#: Per explorer, control changes that move every artist its refresh moves, in the
#: default and the board style. Each frame must equal a fresh drawing pixel for pixel.
#: An explorer not listed walks ``default_frame_changes`` (each control moved once).
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
    "online_softmax_steps": [{"block": 3}, {"block": 4}, {"block": 1}, {"block": 2}],
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

#: name -> its explorer as the factory builds it, shared by the tests that only read it
#: and by the failed changes (each must leave it as it was): one build per test process.
_AS_BUILT = {}


def _as_built(name):
    if name not in _AS_BUILT:
        _AS_BUILT[name] = SPECS[name].factory()
    return _AS_BUILT[name]


@pytest.fixture(scope="module", autouse=True)
def _close_the_shared_explorers():
    yield
    while _AS_BUILT:
        _AS_BUILT.popitem()[1].close()


def _module(spec):
    return importlib.import_module(spec.factory.__module__)


def test_the_registry_finds_every_explorer_module():
    modules = [m.name for m in pkgutil.iter_modules(widgets.__path__) if m.name[0] != "_"]
    assert modules, "no explorer module found"
    assert sorted(SPECS) == sorted(modules), "every public module of widgets/ is an explorer"


def frame_changes(name):
    """The explorer's own frame changes, else the default: each control moved once."""
    return FRAME_CHANGES.get(name) or default_frame_changes(_as_built(name))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_explorer_gets_frame_changes_that_fit_it(name):
    assert set(FRAME_CHANGES) <= set(SPECS), "frame changes for an explorer that is gone"
    # two in the explorer's style, at least one after the trip to the other style (below)
    assert len(frame_changes(name)) >= 3
    explorer = SPECS[name].factory()
    for change in default_frame_changes(explorer):  # every explorer's default fits it
        explorer.set(**change)
        assert {key: explorer.values[key] for key in change} == change
    explorer.close()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_spec_holds_the_modules_functions(name):
    spec = SPECS[name]
    module = _module(spec)
    assert module.EXPLORER is spec and spec.name == name
    for hook in HOOKS:
        assert getattr(spec, hook) is getattr(module, hook), hook
    assert spec.factory is getattr(module, f"{name}_explorer")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_spec_is_made_from_the_module_by_name(name):
    spec = SPECS[name]
    found = ExplorerSpec.from_module(
        _module(spec).__name__,
        title=spec.title,
        figsize=spec.figsize,
        board_figsize=spec.board_figsize,
        display_width_px=spec.display_width_px,
    )
    assert found == spec


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_explorer_is_built_through_its_spec_never_a_rebuilt_one(name):
    explorer = _as_built(name)
    assert explorer.spec is SPECS[name]
    assert isinstance(explorer.fig, Figure)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_explorer_is_the_shells_with_its_buttons_declared(name):
    explorer = _as_built(name)
    assert type(explorer) is Explorer  # no subclass
    shown = [w for w in explorer.controls_row.children if isinstance(w, ipywidgets.Button)]
    assert shown == list(explorer.buttons.values()), "a button is declared in the spec's call"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_all_is_the_factory_the_spec_update_and_the_state_type(name):
    spec = SPECS[name]
    module = _module(spec)
    state_type = type(_as_built(name).state)
    assert getattr(module, state_type.__name__) is state_type
    assert set(module.__all__) == {spec.factory.__name__, "EXPLORER", "update", state_type.__name__}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_docstrings_teach_the_factory_and_update_and_name_the_hooks(name):
    spec = SPECS[name]
    for function in (spec.factory, spec.update):
        doc = inspect.getdoc(function)
        assert "Examples\n--------" in doc and ">>> " in doc, function.__name__
    for hook in (spec.draw, spec.refresh, spec.table, spec.readout, spec.static_key):
        if hook is not None:
            assert len(inspect.getdoc(hook).splitlines()) == 1, f"{hook.__name__}: one line"


def _shell_work(source):
    """What an explorer module's ``source`` does that the shell does for it, one string each."""
    tree = ast.parse(source)
    found = []
    for top in tree.body:
        for node in ast.walk(top):
            where = f"line {getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.ClassDef) and any(
                getattr(base, "id", getattr(base, "attr", None)) == "Explorer"
                for base in node.bases
            ):
                found.append(f"{where}: a subclass of Explorer")
            if isinstance(node, ast.keyword) and node.arg == "gid":
                found.append(f"{where}: a gid (the builders return their artists)")
            if isinstance(node, ast.Name | ast.Attribute):
                name = node.id if isinstance(node, ast.Name) else node.attr
                if "dpi" in name.lower():
                    found.append(f"{where}: {name} (the shell sets the resolution)")
                if name in ("margins", "set_layout_engine", "subplots_adjust", "add_axes"):
                    found.append(f"{where}: {name} (the shell lays the figure out)")
                if name in ("Explorer", "_replace", "artist"):
                    found.append(f"{where}: {name} (built through its spec, scene from draw)")
            is_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if is_call and node.func.attr == "observe" and isinstance(top, ast.FunctionDef):
                found.append(f"{where}: .observe in {top.name} (use follow)")
    return found


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_module_leaves_wiring_layout_and_resolution_to_the_shell(name):
    assert _shell_work(inspect.getsource(_module(SPECS[name]))) == []


def test_the_source_check_finds_what_it_looks_for():
    source = (
        "def f(fig, controls):\n"
        "    controls['a'].observe(print, names='value')\n"
        "    fig.set_layout_engine('none')\n"
        "    ax.plot([0], gid='dot')\n"
        "    return Explorer(1, dpi=DPI)\n"
        "class Board(Explorer):\n"
        "    def __init__(self):\n"
        "        self.observe(print)  # a control's own wiring: allowed\n"
    )
    lines = {int(found.split(":")[0].split()[1]) for found in _shell_work(source)}
    assert lines == {2, 3, 4, 5, 6}, _shell_work(source)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_draw_returns_the_scene_and_refresh_moves_it(name):
    spec = SPECS[name]
    state = _as_built(name).state
    fig, _ = plots.new_figure(0, figsize=spec.figsize, pyplot=False)
    scene = spec.draw(fig, state)
    artists = _scene_artists(scene)
    assert artists and not any(isinstance(a, Axes) for a in artists)
    assert spec.refresh(scene, state) is None


def _bad_values(control):
    if isinstance(control, HiddenControl) and not isinstance(control.value, int | float):
        return  # an object the factory binds (a training run): not a value a user types
    yield None
    if isinstance(getattr(control, "value", None), int | float) and not isinstance(
        control.value, bool
    ):
        yield math.nan


#: The failed changes issue 22 names, besides None and NaN on every control.
FAILED_CHANGES = [
    ("teach_walkthrough", {"step": 0}),
    ("backward_step", {"h": 0.3}),  # a number between the slider's steps
    ("training_steps", {"step_index": 31}),  # one past the last snapshot
    ("mask_editor", {"lengths": (1,)}),
    ("mask_editor", {"blocked": ((0,),)}),
]


def _failed_changes():
    for name in SPECS:
        for key, control in _as_built(name).controls.items():
            for value in _bad_values(control):
                yield name, {key: value}
    yield from FAILED_CHANGES


@pytest.mark.parametrize(("name", "change"), list(_failed_changes()))
def test_a_failed_change_leaves_everything_as_it_was_and_says_why(name, change):
    explorer = _as_built(name)
    before = (explorer.values, explorer.png, explorer.readout.value, explorer.table.value)
    state = explorer.state
    with pytest.raises(ValueError) as error:
        explorer.set(**change)
    after = (explorer.values, explorer.png, explorer.readout.value, explorer.table.value)
    assert explorer.state is state
    assert_same_state(after[0], before[0], "values")
    assert after[1:] == before[1:]
    (key,) = change
    said = str(error.value)  # "<key> must be ..." or a trait's "expected a tuple"
    assert key in said and re.search(r"\bmust\b|\bexpected an? ", said), said


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_update_of_the_control_values_is_the_explorer_state(name):
    """What the benchmark's redraw relies on: ``spec.update(**values)`` is the state."""
    spec = SPECS[name]
    explorer = spec.factory()
    for change in frame_changes(name):
        explorer.set(**change)
        assert_same_state(spec.update(**explorer.values), explorer.state)
    explorer.close()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_batch_ends_in_one_state_that_every_part_shows(name):
    spec = SPECS[name]
    explorer = spec.factory()
    frames = []
    explorer.figure.observe(lambda change: frames.append(change["new"]), names="value")
    with explorer.batch():
        for change in frame_changes(name)[:3]:
            for key, value in change.items():
                explorer.controls[key].value = value
    values = explorer.values
    assert len(frames) <= 1
    assert_same_state(explorer.state, spec.update(**values))
    assert explorer.readout.value == spec.readout(values, explorer.state)
    assert explorer.table.value == spec.table(explorer.state)
    explorer.close()


@pytest.mark.parametrize("style", ["default", "board"])
@pytest.mark.parametrize("name", sorted(SPECS))
def test_refreshed_frames_equal_fresh_drawings_and_do_not_depend_on_the_way_there(name, style):
    """Every frame change shows a fresh drawing of its state, pixel for pixel: the first two
    in ``style``, the rest in the other style (a trip there), and once back in ``style`` a
    fresh explorer set to the same values shows the same frame: the layout of a frozen
    drawing depends on its key only."""
    spec = SPECS[name]
    walked = spec.factory(style=style)
    assert plots.figure_style(walked.fig) == style
    other = "board" if style == "default" else "default"
    assert_frames_match_fresh_drawings(walked, spec, frame_changes(name)[:2])
    walked.set_style(other)
    assert_frames_match_fresh_drawings(walked, spec, frame_changes(name)[2:])
    walked.set_style(style)
    fresh = spec.factory(style=style)
    fresh.set(**walked.values)
    assert fresh.png == walked.png
    walked.close()
    fresh.close()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_figure_text_says_what_the_readout_says_and_follows_each_change(name):
    """The page sets ``frontend.description`` as the figure's alt: the explorer's
    title, then the readout's words (its rounding), for the state on show."""
    spec = SPECS[name]
    explorer = spec.factory()
    said = []
    for change in [{}, *frame_changes(name)[:2]]:
        explorer.set(**change)
        text = explorer.frontend.description
        readout = spec.readout(explorer.values, explorer.state)
        assert text == f"{spec.title} figure: {_shell._plain_text(readout)}"
        assert not re.search(r"<|&\w+;", text), f"markup left in {text!r}"
        said.append(text)
    assert len(set(said)) > 1, f"the figure's text never changed: {said}"
    explorer.close()
