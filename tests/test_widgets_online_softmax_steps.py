"""The online-softmax explorer shows the trace the library computes, block by block."""

import numpy as np
import pytest
from layout_asserts import assert_texts_inside_and_apart, drawn_figure, smallest_font_px
from matplotlib.colors import to_rgba

from attention_lib import plots
from attention_lib.widgets.online_softmax_steps import (
    EXPLORER,
    draw,
    example_row,
    online_softmax_steps_explorer,
    readout,
    table,
    update,
)


def test_only_the_block_with_the_larger_score_rescales():
    trace = update(4).trace
    assert trace.rescale[0] == 1.0 and trace.rescale[1] == 1.0 and trace.rescale[3] == 1.0
    assert trace.rescale[2] == pytest.approx(np.exp(1.5 - 3.0))
    assert "a larger score" in readout({"block": 3}, update(3))
    assert "nothing rescaled" in readout({"block": 2}, update(2))


def test_last_block_reaches_the_whole_row_output():
    state = update(4)
    np.testing.assert_allclose(state.trace.partial_output[-1, 0], state.dense_output, rtol=1e-12)
    assert not np.isclose(update(2).trace.partial_output[1, 0], state.dense_output)


def test_bars_are_coloured_by_what_has_been_read():
    fig, _ = plots.new_figure(0, pyplot=False)
    draw(fig, update(2))
    colors = [plots.COLORS["key"]] * 4 + [plots.COLORS["query"]] * 4 + [plots.COLORS["guide"]] * 8
    drawn = [patch.get_facecolor() for patch in fig.axes[0].patches]
    assert drawn == [to_rgba(c) for c in colors]


def test_table_lists_the_blocks_read_and_the_explorer_steps():
    assert table(update(3)).count("<tr>") == 4  # header + 3 blocks
    explorer = online_softmax_steps_explorer()
    assert explorer.set(block=4).block == 4
    explorer.close()


def test_bad_block_is_refused_by_name():
    with pytest.raises(ValueError, match="block must be between 1 and 4"):
        update(0)
    scores, values = example_row()
    assert update(1, scores=scores[:6], values=values[:6]).trace.block_starts.tolist() == [0, 4]


@pytest.mark.parametrize("style", ["default", "board"])
@pytest.mark.parametrize("block", [1, 2, 3, 4])
def test_layout_text_inside_apart_and_large_enough(style, block):
    fig = drawn_figure(EXPLORER, update(block), style)
    assert_texts_inside_and_apart(fig)
    assert smallest_font_px(fig) >= 14
    width, height = EXPLORER.figsize_for(style)
    assert plots.DISPLAY_WIDTH_PX * height / width <= 700  # one screen with its controls
