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
    middle = explorer.fig.axes[1]
    np.testing.assert_allclose([p.get_height() for p in middle.patches], explorer.state.weights)
    star = explorer.fig.axes[2].lines[-1]
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
        "softmax weights",
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
    assert explorer.fig.axes[0].title.get_fontsize() == plots.STYLES["board"]["title"]


def test_readout_reports_ties_as_ties():
    explorer = soft_lookup_explorer()
    explorer.set(length=0.0)  # every score 0: three equal weights
    assert "cat, dog and car tie at 0.33" in explorer.readout.value
    assert "most weight" not in explorer.readout.value
    explorer.set(length=1.5)
    assert "gets the most weight" in explorer.readout.value and "tie" not in explorer.readout.value


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ([0.2, 0.5, 0.3], (["dog"], "0.50")),
        ([0.499, 0.501, 0.0], (["cat", "dog"], "0.50")),  # the same on screen: a tie
        ([0.494, 0.506, 0.0], (["dog"], "0.51")),  # 0.49 and 0.51 on screen: no tie
        ([1 / 3, 1 / 3, 1 / 3], (["cat", "dog", "car"], "0.33")),
    ],
)
def test_heaviest_keys_ties_what_the_screen_cannot_tell_apart(weights, expected):
    assert sl.heaviest_keys(weights, ["cat", "dog", "car"]) == expected


def test_heaviest_keys_refuses_mismatched_labels():
    with pytest.raises(ValueError, match="one entry per weight"):
        sl.heaviest_keys([0.5, 0.5], ["cat"])


def _segment_pixels(ax, ends, count=40):
    t = np.linspace(0.0, 1.0, count)[:, None]
    return np.vstack([ax.transData.transform(t * np.asarray(end)) for end in ends])


@pytest.mark.parametrize("style", ["default", "board"])
def test_labels_never_cover_an_arrow_another_label_or_the_output(style):
    """The "q" used to hide behind the dog arrow (issue 12): no label may sit on anything."""
    explorer = soft_lookup_explorer(style=style)
    fig = explorer.fig
    renderer = fig.canvas.get_renderer()
    left, _, right = fig.axes[:3]
    keys, _, _ = sl.example_cards()
    for angle in range(-180, 180, 30):
        for length in (0.0, 0.6, 1.5, 4.0):
            state = explorer.set(angle=float(angle), length=length)
            where = f"angle {angle}, length {length}, {style}"
            # Left: key names and "q" against each other and every arrow's centre line.
            boxes = [t.get_window_extent(renderer) for t in left.texts]
            arrows = [*keys, *([state.query] if length > 0 else [])]
            points = _segment_pixels(left, arrows)
            for i, box in enumerate(boxes):
                assert left.bbox.contains(box.x0, box.y0) and left.bbox.contains(box.x1, box.y1)
                assert not box.shrunk(0.9, 0.9).count_contains(points), (left.texts[i], where)
                for other in boxes[i + 1 :]:
                    assert not box.overlaps(other), where
            # Right: the values' labels stay off the output star and each other.
            star = right.lines[-1].get_window_extent(renderer)
            labels = [t.get_window_extent(renderer) for t in right.texts]
            for i, box in enumerate(labels):
                assert not box.overlaps(star), (right.texts[i].get_text(), where)
                assert right.bbox.contains(box.x0, box.y0) and right.bbox.contains(box.x1, box.y1)
                for other in labels[i + 1 :]:
                    assert not box.overlaps(other), where
    explorer.close()


@pytest.mark.parametrize("style", ["default", "board"])
def test_fits_one_screen_with_text_of_at_least_14_css_pixels(style):
    explorer = soft_lookup_explorer(style=style)
    width, height = sl.EXPLORER.figsize_for(style)
    assert plots.DISPLAY_WIDTH_PX * height / width <= 560  # figure: under 60 % of 959 px
    texts = explorer.fig.findobj(lambda artist: hasattr(artist, "get_fontsize"))
    smallest = min(text.get_fontsize() for text in texts)
    assert smallest * explorer.figure_dpi / 72 >= 14
    explorer.close()
