"""Soft-lookup explorer, headless: set controls, check the state and the figure."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attention_lib import attention_forward, plots
from attention_lib.widgets import soft_lookup as sl
from attention_lib.widgets import soft_lookup_explorer


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_update_matches_attention_forward():
    keys, values, labels = sl.example_cards()
    state = sl.update(angle=45.0, length=2.0)
    q = 2.0 * np.array([np.cos(np.pi / 4), np.sin(np.pi / 4)])
    np.testing.assert_allclose(state.query, q)
    np.testing.assert_allclose(state.scores, keys @ q / np.sqrt(2))
    np.testing.assert_allclose(state.output, attention_forward(q[None], keys, values)[0])
    np.testing.assert_allclose(state.weights.sum(), 1.0)
    assert state.labels == tuple(labels)


def test_turning_the_query_moves_weights_towards_the_key_it_points_at():
    keys, _, _ = sl.example_cards()
    for i, key in enumerate(keys):
        angle = np.degrees(np.arctan2(key[1], key[0]))
        state = sl.update(angle=angle, length=3.0)
        assert int(np.argmax(state.weights)) == i
    # Longer query, same direction: sharper weights.
    short, long = sl.update(angle=0.0, length=0.5), sl.update(angle=0.0, length=4.0)
    assert long.weights.max() > short.weights.max()


def test_explorer_state_and_figure_follow_the_controls():
    explorer = soft_lookup_explorer()
    assert explorer.main_control is explorer.controls["angle"]
    assert all(not c.continuous_update for c in explorer.controls.values())
    first_png = explorer.png
    explorer.controls["angle"].value = 135.0
    np.testing.assert_allclose(explorer.state.query, 1.5 * np.array([-1.0, 1.0]) / np.sqrt(2))
    assert explorer.png != first_png
    assert "car gets the most weight" in explorer.readout.value
    # The figure's artists hold the new numbers.
    middle = explorer._fig.axes[1]
    np.testing.assert_allclose([p.get_height() for p in middle.patches], explorer.state.weights)
    star = explorer._fig.axes[2].lines[-1]
    np.testing.assert_allclose(star.get_xydata()[0], explorer.state.output)
    # The numbers table carries every weight, rounded.
    for w in explorer.state.weights:
        assert f"{w:.3f}" in explorer.table.value


@pytest.mark.parametrize(
    ("angle", "length"), [(-180.0, 4.0), (180.0, 4.0), (0.0, 0.0), (-180.0, 0.0), (90.0, 0.1)]
)
def test_extreme_values_do_not_raise(angle, length):
    explorer = soft_lookup_explorer()
    state = explorer.set(angle=angle, length=length)
    assert np.all(np.isfinite(state.weights)) and np.all(np.isfinite(state.output))
    np.testing.assert_allclose(state.weights.sum(), 1.0)
    assert explorer.png[:4] == b"\x89PNG"


def test_zero_length_query_gives_the_plain_average():
    explorer = soft_lookup_explorer()
    state = explorer.set(length=0.0)
    _, values, _ = sl.example_cards()
    np.testing.assert_allclose(state.weights, np.full(3, 1 / 3))
    np.testing.assert_allclose(state.output, values.mean(axis=0))


def test_static_figure_and_registry():
    explorer = soft_lookup_explorer(angle=60.0)
    explorer.set(angle=-30.0)
    fig = explorer.draw_static()
    assert [ax.get_title() for ax in fig.axes] == [
        "query and keys",
        "weights (softmax of the scores)",
        "values and output",
    ]
    np.testing.assert_allclose(
        [p.get_height() for p in fig.axes[1].patches], sl.update(angle=60.0).weights
    )
    assert repr(explorer) == "<soft lookup explorer: run the notebook to interact>"
    with pytest.raises(ValueError, match="length must be >= 0"):
        sl.update(length=-1.0)


def test_board_style_explorer():
    explorer = soft_lookup_explorer(style="board")
    assert explorer._fig.axes[0].title.get_fontsize() == plots.STYLES["board"]["title"]
