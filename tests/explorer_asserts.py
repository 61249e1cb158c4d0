"""Assertions shared by the explorer tests (imported; pytest does not collect this file)."""

from io import BytesIO

import numpy as np
from PIL import Image

from attention_lib import plots
from attention_lib.widgets import HiddenControl, render_png


def assert_same_state(state, expected, where="state"):
    """Two explorer states (NamedTuples of arrays, numbers, strings, nested tuples) are equal."""
    assert type(state) is type(expected), where
    if hasattr(state, "_fields"):
        for field in state._fields:
            assert_same_state(getattr(state, field), getattr(expected, field), f"{where}.{field}")
    elif isinstance(state, tuple | list):
        assert len(state) == len(expected), where
        for i, (value, other) in enumerate(zip(state, expected, strict=True)):
            assert_same_state(value, other, f"{where}[{i}]")
    else:
        np.testing.assert_array_equal(state, expected, err_msg=where)


def pixels(png):
    """RGB pixels of PNG bytes, as ints (differences do not wrap around)."""
    return np.asarray(Image.open(BytesIO(png)).convert("RGB"), dtype=int)


def drawn_from_scratch(spec, state, style="default"):
    """PNG of ``state`` drawn by the spec on a new figure, no blitting: the reference frame."""
    with plots.series_style(style):  # the style the shell renders in
        return render_png(spec.figure(state, style=style))


def assert_frames_match_fresh_drawings(explorer, spec, changes):
    """After each change, the frame the explorer shows equals a fresh drawing, pixel for pixel.

    The explorer's frames come from ``refresh`` and blitting (or a full redraw
    when its static key changes); a builder and its in-place updater that
    disagree in any detail (a marker size, a colour, a label) show up here.
    Returns the last frame.
    """
    frame = None
    for change in changes:
        explorer.set(**change)
        frame = pixels(explorer.png)
        expected = pixels(drawn_from_scratch(spec, explorer.state, explorer.style))
        different = np.any(frame != expected, axis=-1)
        assert not different.any(), (
            f"after {change}, {int(different.sum())} pixels differ from a fresh drawing "
            f"(first at row, column {tuple(int(i) for i in np.argwhere(different)[0])})"
        )
    return frame


def default_frame_changes(explorer):
    """One change per control, in order, each to a value it does not hold: what an
    explorer's frame tests walk when they list none of their own.

    A slider goes to an end, a switch flips, a selection takes another option; a
    control no widget shows (a hidden one, a grid of its own) is left alone. The main
    control then goes back, so every explorer gets at least three changes.
    """
    changes = []
    for key, control in explorer.controls.items():
        value = control.value
        if isinstance(control, HiddenControl) or isinstance(value, tuple):
            continue
        if isinstance(value, bool):
            changes.append({key: not value})
        elif hasattr(control, "options"):
            options = list(control._options_values)
            changes.append({key: options[-1] if value != options[-1] else options[0]})
        elif hasattr(control, "min") and hasattr(control, "max"):
            low, high = control.min, control.max
            if hasattr(control, "base"):  # FloatLogSlider: min and max are exponents
                low, high = control.base**low, control.base**high
            changes.append({key: high if value != high else low})
    key = next(iter(changes[0]))
    changes.append({key: explorer.values[key]})  # and back
    while len(changes) < 3:
        changes.append(changes[-2])
    return changes
