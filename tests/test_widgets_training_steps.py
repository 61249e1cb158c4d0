"""The training-steps explorer shows the history tiny_layer's training saved, step by step."""

import numpy as np
import pytest
from explorer_asserts import assert_same_state
from layout_asserts import assert_texts_inside_and_apart, drawn_figure, smallest_font_px
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle
from matplotlib.spines import Spine

from attention_lib import plots
from attention_lib.tiny_layer import (
    init_params,
    layer_loss,
    layer_loss_and_gradients,
    lookup_batch,
    predict,
    train,
)
from attention_lib.widgets import training_steps as ts


def _rerun(steps):
    """``example_run``'s training, stopped after ``steps`` updates (same seed, same batches)."""
    rng = np.random.default_rng(0)
    probe = lookup_batch(ts.PROBE_SIZE, ts.N_PAIRS, ts.N_KEYS, ts.N_VALUES, rng)
    return train(
        init_params(ts.N_KEYS + ts.N_VALUES, ts.D_K, ts.N_VALUES, rng),
        lambda: lookup_batch(ts.BATCH_SIZE, ts.N_PAIRS, ts.N_KEYS, ts.N_VALUES, rng),
        probe,
        steps,
        learning_rate=ts.LEARNING_RATE,
        snapshot_every=ts.SNAPSHOT_EVERY,
    )


def test_weights_start_uniform():
    start = ts.update(0)
    assert start.step == 0
    np.testing.assert_allclose(start.weights, 1 / ts.N_PAIRS, atol=0.02)
    assert start.mean_weight_on_answer == pytest.approx(0.25, abs=0.01)
    # Small weights give near-uniform answers too: the loss of a guess among 4 values.
    assert start.probe_loss == pytest.approx(np.log(ts.N_VALUES), abs=0.1)


def test_weight_on_the_answer_grows_and_the_loss_falls():
    states = [ts.update(i) for i in range(len(ts.example_run().snapshot_steps))]
    on_answer = np.array([s.mean_weight_on_answer for s in states])
    losses = np.array([s.probe_loss for s in states])
    assert np.all(np.diff(on_answer[2:]) > 0), "after a few steps it only grows"
    assert on_answer[10] > 0.75 and on_answer[-1] > 0.95
    assert np.all(np.diff(losses) < 0)
    assert losses[-1] < 0.1
    # Sharp: every probe query puts almost all its weight on its own answer's pair.
    last = states[-1]
    assert np.all(last.weights.argmax(axis=1) == last.answer_positions)
    assert last.weight_on_answer.min() > 0.95


@pytest.mark.parametrize("steps", [10, 40, 130])
def test_each_snapshot_is_what_tiny_layer_computes_for_the_parameters_at_that_step(steps):
    """Training stopped after ``steps`` updates gives the snapshot the explorer shows there."""
    shorter = _rerun(steps)
    state = ts.update(steps // ts.SNAPSHOT_EVERY)
    assert state.step == steps
    loss, _, weights = layer_loss_and_gradients(shorter.params, shorter.probe)
    np.testing.assert_array_equal(state.weights, weights)
    assert state.probe_loss == loss == layer_loss(shorter.params, shorter.probe)
    rows = np.arange(len(weights))
    answers = shorter.probe.answer_positions
    assert state.mean_weight_on_answer == pytest.approx(weights[rows, answers].mean(), rel=1e-15)
    np.testing.assert_array_equal(state.training_losses[:steps], shorter.losses)


def test_the_last_snapshot_is_the_trained_layer():
    run = ts.example_run()
    state = ts.update(len(run.snapshot_steps) - 1)
    _, _, weights = layer_loss_and_gradients(run.params, run.probe)
    np.testing.assert_array_equal(state.weights, weights)
    held_out = lookup_batch(500, ts.N_PAIRS, ts.N_KEYS, ts.N_VALUES, np.random.default_rng(5))
    assert np.mean(predict(run.params, held_out) == held_out.targets) > 0.99


def test_the_asked_key_and_the_answer_are_read_from_the_probe():
    run = ts.example_run()
    state = ts.update(0)
    rows = np.arange(len(state.answer_positions))
    pair_keys = run.probe.pairs[:, :, : ts.N_KEYS].argmax(axis=2)
    np.testing.assert_array_equal(pair_keys[rows, state.answer_positions], state.asked_keys)


def test_the_example_run_cannot_be_changed_by_a_caller():
    run = ts.example_run()
    assert ts.example_run() is run
    with pytest.raises(ValueError, match="read-only"):
        ts.update(0).weights[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        run.params["W_Q"][0, 0] = 1.0


def test_answers_are_outlined_and_the_step_marked():
    fig, _ = plots.new_figure(0, pyplot=False)
    state = ts.update(12)
    _, _, stem, marker, _ = ts.draw(fig, state)
    heat_ax, loss_ax = fig.axes
    outlines = [patch for patch in heat_ax.patches if isinstance(patch, Rectangle)]
    centres = [(r.get_x() + r.get_width() / 2, r.get_y() + r.get_height() / 2) for r in outlines]
    assert centres == [(float(c), float(row)) for row, c in enumerate(state.answer_positions)]
    assert list(marker.get_xdata()) == [120] and list(marker.get_ydata()) == [state.probe_loss]
    assert list(stem.get_xdata()) == [120, 120] and stem.get_ydata()[1] == state.probe_loss
    assert stem.get_ydata()[0] == loss_ax.get_ylim()[0]  # from the x axis up


def test_readout_and_table_say_the_step_and_the_weight_on_the_answer():
    state = ts.update(10)
    text = ts.readout({"step_index": 10}, state)
    assert "step <b>100</b> of 300" in text
    assert f"<b>{state.probe_loss:.3f}</b>" in text
    assert f"<b>{state.mean_weight_on_answer:.2f}</b>" in text
    html = ts.table(state)
    assert html.count("<tr>") == 1 + ts.PROBE_SIZE
    assert "after 100 of 300 training steps" in html


def test_explorer_shows_a_run_of_ones_own():
    run = _rerun(60)
    explorer = ts.training_steps_explorer(run, step_index=6)
    assert explorer.state.step == 60
    assert explorer.main_control.options[-1] == ("60", 6)
    state = explorer.set(step_index=3)
    assert_same_state(state, ts.update(3, run=run))
    assert state.training_losses.shape == (60,)
    explorer.close()


@pytest.mark.parametrize("style", ["default", "board"])
@pytest.mark.parametrize("step_index", [0, 10, 30])
def test_layout_text_inside_apart_and_large_enough(style, step_index):
    fig = drawn_figure(ts.EXPLORER, ts.update(step_index), style)
    assert_texts_inside_and_apart(fig)
    assert smallest_font_px(fig) >= 14


def test_figure_fits_one_screen_in_both_styles():
    # Displayed 1480 px wide: at most about 700 px tall leaves room for the controls,
    # the readout and the numbers within the 959 px of a 1920 x 1080 notebook panel.
    for style in ("default", "board"):
        width, height = ts.EXPLORER.figsize_for(style)
        assert plots.DISPLAY_WIDTH_PX * height / width <= 700


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="step_index must be between 0 and 30"):
        ts.update(31)
    with pytest.raises(ValueError, match="step_index must be at least 0"):
        ts.update(-1)
    with pytest.raises(TypeError, match="step_index must be a whole number"):
        ts.update(2.0)
    with pytest.raises(TypeError, match="run must be the TrainingRun"):
        ts.update(0, run={"losses": []})
    with pytest.raises(ValueError, match="step_index must be between 0 and 30"):
        ts.training_steps_explorer(step_index=40)


def test_a_step_redraws_the_stem_and_marker_alone_not_the_legend_or_spines():
    explorer = ts.training_steps_explorer(style="default")
    explorer.set(step_index=3)
    blitted = explorer._frozen[explorer._shown].blitted
    assert not [a for a in blitted if isinstance(a, Legend | Spine)]
