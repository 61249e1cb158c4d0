"""Assertions shared by the explorer tests (imported; pytest does not collect this file)."""

from io import BytesIO

import numpy as np
from PIL import Image

from attention_lib import plots
from attention_lib.widgets import render_png


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
