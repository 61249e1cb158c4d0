"""The backward-step explorer of notebook 04: pure update() first, then the headless shell."""

import numpy as np
import pytest
from explorer_asserts import assert_same_state

from attention_lib import attention_backward, attention_forward, plots
from attention_lib.widgets import backward_step as bs


def test_gradient_entry_is_the_library_gradient():
    problem = bs.example_problem()
    _, cache = attention_forward(problem.Q, problem.K, problem.V, problem.mask, True)
    grads = dict(zip("QKV", attention_backward(problem.upstream, cache), strict=True))
    for array in "QKV":
        for row in range(4):
            for col in range(3):
                state = bs.update(array, row, col)
                assert state.gradient == grads[array][row, col]
                assert state.index == (row, col)
                assert state.value == getattr(problem, array)[row, col]


def test_small_steps_follow_the_tangent_large_steps_bend_away():
    small = bs.update("Q", 3, 2, h=1e-4)
    large = bs.update("Q", 3, 2, h=1.0)
    assert small.prediction_error < 1e-3
    assert large.prediction_error > 10 * small.prediction_error
    np.testing.assert_allclose(small.central_difference, small.gradient, rtol=1e-6)


def test_loss_is_linear_in_the_values():
    state = bs.update("V", 1, 2, h=1.0)
    np.testing.assert_allclose(state.actual_change, state.predicted_change, atol=1e-12)
    np.testing.assert_allclose(state.curve, state.offsets * state.gradient, atol=1e-12)


def test_error_curve_shows_truncation_then_round_off():
    state = bs.update("Q", 3, 2)
    errors = dict(zip(np.round(np.log10(state.steps), 2), state.central_errors, strict=True))
    assert errors[-5.0] < errors[-2.0] < errors[0.0]  # truncation: shrinks with h
    assert errors[-5.0] < errors[-9.0] < errors[-12.0]  # round-off: grows as h shrinks
    assert 1e-8 <= state.best_step <= 1e-3
    assert state.central_errors.min() < 1e-9
    # the one-sided difference is worse where truncation dominates (error ~ h, not h**2)
    middle = (state.steps >= 1e-6) & (state.steps <= 1e-2)
    assert np.all(state.forward_errors[middle] > state.central_errors[middle])


def test_entry_no_query_can_see_has_zero_gradient_and_zero_change():
    state = bs.update("Q", 0, 1, h=0.5)  # query 0 reads only key 0 under the causal mask
    assert state.actual_change == 0.0
    assert abs(state.gradient) < 1e-14
    free = bs.update("Q", 0, 1, h=0.5, causal=False)
    assert abs(free.actual_change) > 1e-6


def test_another_backward_can_be_probed():
    def wrong(grad_output, cache):
        grad_Q, grad_K, grad_V = attention_backward(grad_output, cache)
        return -grad_Q, grad_K, grad_V

    right = bs.update("Q", 3, 2, h=1e-4)
    state = bs.update("Q", 3, 2, h=1e-4, backward=wrong)
    assert state.gradient == -right.gradient
    assert state.actual_change == right.actual_change
    assert state.prediction_error > 0.5


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"array": "O"}, ValueError),
        ({"row": 4}, ValueError),
        ({"col": -1}, ValueError),
        ({"row": 1.0}, TypeError),
        ({"h": 0.0}, ValueError),
        ({"h": 2.0}, ValueError),
        ({"h": float("nan")}, ValueError),
    ],
)
def test_bad_controls_are_refused_with_a_message(kwargs, error):
    with pytest.raises(error):
        bs.update(**kwargs)


@pytest.mark.parametrize("h", [1e-12, 1.0])
@pytest.mark.parametrize("array", ["Q", "K", "V"])
def test_extreme_steps_do_not_raise(array, h):
    state = bs.update(array, 3, 2, h=h)
    assert np.all(np.isfinite(state.curve))
    assert np.all(np.isfinite(state.central_errors))


# --- the live explorer, headless: set controls as a user would ---------------------------


@pytest.fixture
def explorer():
    explorer = bs.backward_step_explorer()
    yield explorer
    explorer.close()


def test_explorer_starts_in_the_documented_state(explorer):
    assert next(iter(explorer.controls)) == "h"  # the main control comes first
    assert_same_state(explorer.state, bs.update())
    assert "Q[3, 0]" in explorer.readout.value
    assert repr(explorer) == "<backward step explorer: run the notebook to interact>"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"h": 1e-6}, {"h": 1e-6}),
        ({"array": "V", "row": 1, "col": 2}, {"array": "V", "index": (1, 2)}),
        ({"array": "K", "row": 0}, {"array": "K", "index": (0, 0)}),
        ({"causal": False}, {}),
    ],
)
def test_changing_a_control_recomputes_and_redraws(explorer, values, expected):
    before = explorer.png
    state = explorer.set(**values)
    for field, value in expected.items():
        if isinstance(value, float):
            assert getattr(state, field) == pytest.approx(value)
        else:
            assert getattr(state, field) == value
    assert_same_state(
        state,
        bs.update(
            explorer.values["array"],
            explorer.values["row"],
            explorer.values["col"],
            explorer.values["h"],
            causal=explorer.values["causal"],
        ),
    )
    assert explorer.png != before
    assert explorer.state is state


@pytest.mark.parametrize("h", [1e-12, 1.0])
def test_explorer_extremes_do_not_raise(explorer, h):
    for array in bs.ARRAYS:
        state = explorer.set(h=h, array=array, row=3, col=2)
        assert state.h == pytest.approx(h)
    explorer.set(row=0, col=0, causal=True)  # zero gradient: the log axes must cope
    assert explorer.png[:4] == b"\x89PNG"


def test_table_lists_the_numbers_shown(explorer):
    explorer.set(h=1e-3)
    html = explorer.table.value
    assert f"{explorer.state.gradient:.3e}" in html
    assert f"{explorer.state.actual_change:.3e}" in html


# --- one format for h, a slider that returns to its start, words for a flat row, no overlaps --


def test_the_slider_steps_through_the_start_and_back(explorer):
    slider = explorer.controls["h"]
    values = [value for _, value in slider.options]
    assert slider.value == 0.5 and 0.5 in values and values == sorted(values)
    start = slider.index
    slider.index = start - 1  # what the left arrow key does
    assert explorer.state.h == 0.2
    slider.index = start + 1
    slider.index = start
    assert explorer.state.h == 0.5  # exactly the start again
    with pytest.raises(ValueError, match="one of the slider's steps"):
        bs.backward_step_explorer(h=10**-0.25)


@pytest.mark.parametrize("h", [0.5, 1e-3, 2e-7, 1e-12, 1.0])
def test_h_is_written_one_way_everywhere(explorer, h):
    explorer.set(h=h)
    slider = explorer.controls["h"]
    shown = slider.label  # what the slider's readout shows
    assert shown == bs.format_step(h)
    assert f"h = {shown}:" in explorer.readout.value
    assert f"<td>{shown}</td>" in explorer.table.value
    assert explorer.fig.axes[0].get_title().endswith(f"h = {shown}")


def test_a_query_that_reads_one_key_says_why_it_is_flat(explorer):
    state = explorer.set(row=0, col=1)  # query 0 reads only key 0 under the causal mask
    assert state.only_key == 0
    assert "query 0 reads only key 0" in explorer.readout.value
    (note,) = [t for t in explorer.fig.axes[0].texts if "reads only key 0" in t.get_text()]
    assert note.get_text().startswith("flat: query 0 reads only key 0")
    for change in ({"causal": False}, {"causal": True, "row": 1}, {"array": "K", "row": 0}):
        state = explorer.set(**change)
        assert state.only_key is None and note.get_text() == ""
        assert "reads only" not in explorer.readout.value


def _curve_pixels(ax, line, count=20):
    """Pixels along a drawn line (its points and between them), inside the axes."""
    xy = np.column_stack(line.get_data())
    if ax.get_xscale() == "log":
        xy = np.log10(xy)
    t = np.linspace(0.0, 1.0, count)[None, :, None]
    dense = (xy[:-1, None, :] + t * (xy[1:] - xy[:-1])[:, None, :]).reshape(-1, 2)
    if ax.get_xscale() == "log":
        dense = 10.0**dense
    return ax.transData.transform(dense)


@pytest.mark.parametrize("style", ["default", "board"])
def test_no_curve_runs_through_a_legend_or_a_label(style):
    explorer = bs.backward_step_explorer(style=style)
    fig = explorer.fig
    renderer = fig.canvas.get_renderer()
    tangent, errors = fig.axes[:2]
    regime_labels = [t for t in errors.texts if "→" in t.get_text() or "←" in t.get_text()]
    assert len(regime_labels) == 2
    # the curves: the lines with a legend entry (the lines t = h, h and 0 have none and
    # run through everything by design)
    curves = {ax: [ln for ln in ax.lines if not ln.get_label().startswith("_")] for ax in fig.axes}
    assert [len(curves[ax]) for ax in (tangent, errors)] == [3, 2]
    for causal in (True, False):
        for array in bs.ARRAYS:
            for row in range(4):
                for h in (1.0, 0.5, 1e-3, 1e-12):
                    explorer.set(causal=causal, array=array, row=row, col=row % 3, h=h)
                    where = f"{array}[{row}], h {h}, causal {causal}, {style}"
                    for ax in (tangent, errors):
                        legend = ax.get_legend().get_window_extent(renderer)
                        for line in curves[ax]:
                            assert not legend.count_contains(_curve_pixels(ax, line)), where
                    for label in regime_labels:  # below the axes: nothing is drawn there
                        assert label.get_window_extent(renderer).y1 < errors.bbox.y0, where
    explorer.close()


@pytest.mark.parametrize("style", ["default", "board"])
def test_fits_one_screen_with_text_of_at_least_14_css_pixels(style):
    explorer = bs.backward_step_explorer(style=style)
    width, height = bs.EXPLORER.figsize_for(style)
    assert plots.DISPLAY_WIDTH_PX * height / width <= 660
    texts = explorer.fig.findobj(lambda artist: hasattr(artist, "get_fontsize"))
    assert min(text.get_fontsize() for text in texts) * explorer.figure_dpi / 72 >= 14
    explorer.close()
