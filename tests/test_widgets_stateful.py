"""Explorers never inconsistent: random sessions against every explorer, checked step by step.

A Hypothesis state machine plays a user on each explorer the registry finds:
it moves the widgets a page shows (sliders, toggles, number fields, a grid's
cells, the board toggle, the buttons), alone or several in one ``batch()``,
and calls ``set`` with values that fit and values that do not. After every
step:

* nothing raised but the expected ``ValueError`` of a refused ``set``, which
  names the control, and after which nothing changed (values, state, PNG,
  readout, table, what every widget shows);
* nothing was logged (a button's callback that fails is logged, not raised);
* the figure (pixel for pixel), the table, the readout and every widget equal
  those of a fresh explorer showing the same values: built with them (what its
  factory takes; any other control then set). The readout may add notes
  after the fresh one's (a click the mask refuses says why).

The machine knows no explorer by name: it reads the widget tree and the
controls, so an explorer added or converted later is covered as it lands.
"""

import hashlib
import inspect
import logging
import math
from typing import NamedTuple

import ipywidgets
import numpy as np
import pytest
from explorer_asserts import assert_same_state, pixels
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from attention_lib.widgets import HiddenControl, available_explorers

SPECS = available_explorers()

#: Sessions per explorer and steps per session: at most 2 minutes for all nine explorers
#: on two quiet cores (a fresh explorer per new set of values is most of the cost). No
#: shrinking: it took minutes on a session of a dozen steps; a failure prints its steps.
SESSION = settings(
    max_examples=5,
    stateful_step_count=12,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_SELECTIONS = (ipywidgets.widgets.widget_selection._Selection,)
_NUMBERS = (ipywidgets.IntSlider, ipywidgets.FloatSlider, ipywidgets.BoundedIntText)
_FIELDS = (ipywidgets.FloatText, ipywidgets.IntText)
_SWITCHES = (ipywidgets.Checkbox, ipywidgets.ToggleButton)
#: What a widget shows besides its value, compared with a fresh explorer's.
_SHOWN = ("description", "disabled", "button_style", "tooltip", "icon", "min", "max", "options")


def _hidden(widget):
    layout = getattr(widget, "layout", None)
    return layout is not None and (layout.display == "none" or layout.visibility == "hidden")


def _leaves(widget, reachable=True):
    """The widgets a user can work in ``widget``'s tree, in page order.

    With ``reachable``, only those shown and enabled (what a click can reach).
    """
    if reachable and _hidden(widget):
        return []
    if isinstance(widget, ipywidgets.Box | ipywidgets.Accordion):
        return [leaf for child in widget.children for leaf in _leaves(child, reachable)]
    kinds = (ipywidgets.Button, *_SELECTIONS, *_NUMBERS, *_FIELDS, *_SWITCHES)
    if not isinstance(widget, kinds) or (reachable and widget.disabled):
        return []
    return [widget]


def _canonical(value):
    """A hashable, comparable form of a control value or state (arrays by bytes)."""
    if isinstance(value, np.ndarray | np.generic):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return tuple((key, _canonical(v)) for key, v in value.items())
    if isinstance(value, tuple | list):
        return (type(value).__name__, *(_canonical(v) for v in value))
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def _widget_view(explorer):
    """What every widget of the explorer shows: kind, value and look, in page order."""
    return [
        (type(w).__name__, _canonical(getattr(w, "value", None)), hidden)
        + tuple(_canonical(getattr(w, name, None)) for name in _SHOWN)
        for w in _leaves(explorer.widget, reachable=False)
        for hidden in [_hidden(w)]
    ]


class _Shown(NamedTuple):
    """Everything a user can see of an explorer, and its state.

    The figure by its PNG's SHA-256: equal digests are equal bytes, and a few
    hundred cached drawings then hold 32 bytes each instead of a PNG each.
    """

    values: tuple
    state: object
    png: bytes
    readout: str
    table: str
    widgets: list

    @classmethod
    def of(cls, explorer):
        return cls(
            _canonical(explorer.values),
            explorer.state,
            hashlib.sha256(explorer.png).digest(),
            explorer.readout.value,
            explorer.table.value,
            _widget_view(explorer),
        )


#: (explorer, style, values) -> what a fresh explorer showing those values shows; a
#: fresh explorer is a function of them, so sessions share what they have drawn. Kept
#: for one explorer's sessions only (its key names it): emptied after each test.
_FRESH = {}


def _fresh_key(spec, style, values):
    return (spec.name, style, _canonical(values))


def _fresh(spec, style, values, png=False):
    """What a fresh explorer showing ``values`` shows; with ``png``, also its PNG bytes
    (drawn again: only a failing comparison wants the pixels)."""
    key = _fresh_key(spec, style, values)
    if key not in _FRESH or png:
        # Built with the values its factory takes (one drawing instead of two), the rest set.
        taken = inspect.signature(spec.factory).parameters
        explorer = spec.factory(style=style, **{k: v for k, v in values.items() if k in taken})
        try:
            explorer.set(**{k: v for k, v in values.items() if k not in taken})
            _FRESH[key] = _Shown.of(explorer)
            drawn = explorer.png
        finally:
            explorer.close()
        if png:
            return _FRESH[key], drawn
    return _FRESH[key]


def _invalid_values(control):
    """Values ``control`` can never take: each must be refused with a clear ValueError.

    None known for an object a factory binds in a hidden control (a training run).
    """
    if isinstance(control, HiddenControl) and not isinstance(control.value, int | float):
        return []
    bad = [None]
    if isinstance(control, _SELECTIONS):
        bad.append("not one of the options")
    elif isinstance(control, _SWITCHES):
        bad.append("yes")
    elif isinstance(control, _NUMBERS):
        step = control.step or 1
        bad += [control.max + step, control.min - step, "3"]
        if isinstance(control, ipywidgets.FloatSlider):
            bad += [math.nan, math.inf]
        else:
            bad.append(control.min + 0.5)
    return bad


def _user_value(widget):
    """A strategy for a value a page can give ``widget`` (what its input allows)."""
    if isinstance(widget, _SWITCHES):
        return st.booleans()
    if isinstance(widget, _SELECTIONS):
        return st.integers(0, len(widget.options) - 1)  # an index, as the page sends
    if isinstance(widget, _NUMBERS):
        step = widget.step or 1
        top = round((widget.max - widget.min) / step)
        return st.integers(0, top).map(lambda k: min(widget.max, widget.min + k * step))
    return st.integers(-40, 40).map(lambda k: k / 4)  # a number field: a typed number


def _move(explorer, data):
    """One thing a user does: click a button, or give a widget a value.

    First what to work (a control, a button, the board toggle), then which of
    its widgets: a control of many fields (cards, a grid) gets no more turns
    than a slider.
    """
    groups = [_leaves(c) for c in explorer.controls.values() if isinstance(c, ipywidgets.Widget)]
    groups += [_leaves(b) for b in (*explorer.buttons.values(), explorer.board_toggle)]
    group = data.draw(st.sampled_from([g for g in groups if g]))
    widget = data.draw(st.sampled_from(group), label="widget")
    if isinstance(widget, ipywidgets.Button):
        for _ in range(data.draw(st.integers(1, 5), label="clicks")):  # a presenter's clicker
            if not widget.disabled:
                widget.click()
    elif isinstance(widget, _SELECTIONS):
        widget.index = data.draw(_user_value(widget))
    else:
        widget.value = data.draw(_user_value(widget))


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def _session(spec):
    """A state machine that plays a user on ``spec``'s explorer."""

    class Session(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.explorer = None
            self.seen = {}  # control -> the values it has held, for set()
            self.log = _Records()
            for name in ("", "traitlets"):
                logging.getLogger(name).addHandler(self.log)

        @initialize(style=st.sampled_from(["default", "board"]))
        def open(self, style):
            self.explorer = spec.factory(style=style)
            self._remember()
            # Just built, it is a fresh explorer showing its own values: the reference for them.
            key = _fresh_key(spec, style, self.explorer.values)
            _FRESH.setdefault(key, _Shown.of(self.explorer))

        def _remember(self):
            for key, value in self.explorer.values.items():
                self.seen.setdefault(key, {}).setdefault(_canonical(value), value)

        def _a_value(self, data, key):
            """A value for control ``key`` that a user could give it (it may not fit now)."""
            control = self.explorer.controls[key]
            known = list(self.seen[key].values())
            if isinstance(control, _SELECTIONS):
                known += list(control._options_values)
            elif isinstance(control, _NUMBERS + _SWITCHES):
                known.append(data.draw(_user_value(control)))
            elif type(control.value) is int:  # a hidden count (a step): jump a few either way
                known.append(data.draw(st.integers(control.value - 2, control.value + 5)))
            return data.draw(st.sampled_from(known))

        def _refused(self, before, error, key):
            assert isinstance(error, ValueError), f"{type(error).__name__}: {error}"
            assert key in str(error), f"the error does not name {key!r}: {error}"
            after = _Shown.of(self.explorer)
            for field, old, new in zip(_Shown._fields, before, after, strict=True):
                assert new is old if field == "state" else new == old, (
                    f"a refused change ({error}) changed the {field}"
                )

        @rule(data=st.data())
        def work_a_widget(self, data):
            _move(self.explorer, data)

        @rule(data=st.data(), count=st.integers(2, 3))
        def work_widgets_in_one_batch(self, data, count):
            before = _Shown.of(self.explorer)
            try:
                with self.explorer.batch():
                    for _ in range(count):  # what a change shows or hides counts at once
                        _move(self.explorer, data)
            except ValueError as error:
                self._refused(before, error, "")

        @rule(data=st.data())
        def set_values(self, data):
            keys = data.draw(
                st.lists(st.sampled_from(list(self.explorer.controls)), min_size=1, unique=True)
            )
            values = {key: self._a_value(data, key) for key in keys}
            before = _Shown.of(self.explorer)
            try:
                self.explorer.set(**values)
            except ValueError as error:
                self._refused(before, error, "")

        @rule(data=st.data())
        def set_a_value_that_never_fits(self, data):
            controls = self.explorer.controls
            key = data.draw(st.sampled_from([k for k in controls if _invalid_values(controls[k])]))
            bad = data.draw(st.sampled_from(_invalid_values(controls[key])))
            others = data.draw(st.sets(st.sampled_from(list(self.explorer.controls))))
            values = {k: self._a_value(data, k) for k in others - {key}}
            values[key] = bad
            before = _Shown.of(self.explorer)
            with pytest.raises(ValueError) as refused:
                self.explorer.set(**values)
            self._refused(before, refused.value, key)

        @rule()
        def toggle_the_board(self):
            self.explorer.board_toggle.value = not self.explorer.board_toggle.value

        @invariant()
        def shows_what_a_fresh_explorer_shows(self):
            if self.explorer is None:
                return
            assert not self.log.records, self.log.format(self.log.records[0])
            self._remember()
            shown = _Shown.of(self.explorer)
            fresh = _fresh(spec, self.explorer.style, self.explorer.values)
            assert shown.values == fresh.values, "the fresh explorer ended on other values"
            assert_same_state(shown.state, fresh.state)
            assert shown.table == fresh.table
            assert shown.readout == fresh.readout or shown.readout.startswith(
                fresh.readout + "<br>"
            ), (shown.readout, fresh.readout)
            assert shown.widgets == fresh.widgets, "a widget shows something else"
            if shown.png != fresh.png:
                again, png = _fresh(spec, self.explorer.style, self.explorer.values, png=True)
                assert again.png == fresh.png, "two fresh explorers drew these values differently"
                frame, expected = pixels(self.explorer.png), pixels(png)
                assert frame.shape == expected.shape, "the PNG changed size"
                different = np.any(frame != expected, axis=-1)
                assert not different.any(), (
                    f"{int(different.sum())} pixels differ from a fresh explorer's "
                    f"(first at row, column {tuple(int(i) for i in np.argwhere(different)[0])})"
                )

        def teardown(self):
            for name in ("", "traitlets"):
                logging.getLogger(name).removeHandler(self.log)
            if self.explorer is not None:
                self.explorer.close()

    Session.__name__ = f"{spec.name}_session"
    return Session


@pytest.fixture
def _fresh_drawings_for_one_test():
    yield
    _FRESH.clear()  # no other test asks for this explorer's drawings


def test_the_registry_is_not_empty():
    assert SPECS, "no explorer found: the sessions below would test nothing"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_random_sessions_keep_the_explorer_consistent(name, _fresh_drawings_for_one_test):
    run_state_machine_as_test(_session(SPECS[name]), settings=SESSION)
