"""Every claim of notebook 08's "Attention that learns" section, checked on the notebook's own run.

The fixture repeats the section's code cells (same seed, same order of draws
from the generator), so these are the numbers the notebook shows.
"""

import numpy as np
import pytest

from attention_lib.gradcheck import gradient_check
from attention_lib.tiny_layer import (
    init_params,
    layer_loss,
    layer_loss_and_gradients,
    lookup_batch,
    predict,
    train,
)
from attention_lib.widgets.training_steps import example_run, training_steps_explorer, update

N_PAIRS, N_KEYS, N_VALUES, D_K = 4, 8, 4, 8


@pytest.fixture(scope="module")
def section():
    """The section's gradient-check inputs, probe and training run, as the notebook makes them."""
    rng = np.random.default_rng(0)
    check_batch = lookup_batch(5, N_PAIRS, N_KEYS, N_VALUES, rng)
    check_params = init_params(N_KEYS + N_VALUES, D_K, N_VALUES, rng, scale=1.0)
    rng = np.random.default_rng(0)  # the training cell starts a fresh generator
    probe = lookup_batch(6, N_PAIRS, N_KEYS, N_VALUES, rng)
    run = train(
        init_params(N_KEYS + N_VALUES, D_K, N_VALUES, rng),
        lambda: lookup_batch(64, N_PAIRS, N_KEYS, N_VALUES, rng),
        probe,
        steps=300,
        learning_rate=0.01,
        snapshot_every=10,
    )
    weight_on_answer = run.snapshot_weights[:, np.arange(6), probe.answer_positions]
    return {
        "check_batch": check_batch,
        "check_params": check_params,
        "run": run,
        "weight_on_answer": weight_on_answer,  # (snapshots, probe sequences)
    }


def test_claim_the_layer_gradients_pass_the_finite_difference_check(section):
    batch, params = section["check_batch"], section["check_params"]
    _, grads, _ = layer_loss_and_gradients(params, batch)
    report = gradient_check(lambda **p: layer_loss(p, batch), params, grads, tolerance=1e-7)
    assert report.passed, report


def test_claim_untrained_weights_are_about_a_quarter_and_the_loss_about_ln4(section):
    run = section["run"]
    np.testing.assert_allclose(run.snapshot_weights[0], 0.25, atol=0.01)
    assert run.snapshot_losses[0] == pytest.approx(np.log(4), abs=0.05)
    assert run.losses[0] == pytest.approx(np.log(4), abs=0.05)  # a training batch too


def test_claim_the_printed_lines_and_31_saved_steps(section):
    run, on_answer = section["run"], section["weight_on_answer"].mean(axis=1)
    assert len(run.snapshot_steps) == 31
    assert run.snapshot_steps[::10].tolist() == [0, 100, 200, 300]
    shown = zip(run.snapshot_losses[::10], on_answer[::10], strict=True)
    printed = [f"{loss:.2f} {weight:.2f}" for loss, weight in shown]
    assert printed == ["1.38 0.25", "0.41 0.90", "0.10 0.98", "0.05 0.99"]


def test_claim_little_happens_in_the_first_few_dozen_steps(section):
    run, on_answer = section["run"], section["weight_on_answer"].mean(axis=1)
    first_dozens = run.snapshot_steps <= 30
    assert np.all(on_answer[first_dozens] < 0.3)
    assert np.all(run.snapshot_losses[first_dozens] > 1.2)


def test_claim_loss_falls_fastest_where_the_weight_on_the_answer_grows_fastest(section):
    run, on_answer = section["run"], section["weight_on_answer"].mean(axis=1)
    fastest_fall = int(np.argmax(-np.diff(run.snapshot_losses)))
    fastest_growth = int(np.argmax(np.diff(on_answer)))
    assert abs(fastest_fall - fastest_growth) <= 1, "the same stretch of steps"
    for start in (fastest_fall, fastest_growth):
        assert 50 <= run.snapshot_steps[start] and run.snapshot_steps[start + 1] <= 100


def test_claim_most_weight_on_the_answer_by_step_100_nearly_all_by_300(section):
    run, weight_on_answer = section["run"], section["weight_on_answer"]
    at_100 = weight_on_answer[list(run.snapshot_steps).index(100)]
    assert np.all(at_100 > 0.5), "every query: most of its weight"
    assert np.all(weight_on_answer[-1] > 0.95), "every query: nearly all of it"


def test_claim_the_matrices_match_keys_and_carry_values(section):
    params = section["run"].params
    key_scores = params["W_Q"][:N_KEYS] @ params["W_K"][:N_KEYS].T
    assert np.all(key_scores.argmax(axis=1) == np.arange(N_KEYS))
    pair_rows = params["W_V"][:N_KEYS, None, :] + params["W_V"][None, N_KEYS:, :]
    assert np.all(pair_rows.argmax(axis=2) == np.arange(N_VALUES))


def test_claim_the_explorer_replays_this_very_run_and_starts_at_step_0(section):
    run, example = section["run"], example_run()
    for field in ("losses", "snapshot_steps", "snapshot_weights", "snapshot_losses"):
        np.testing.assert_array_equal(getattr(example, field), getattr(run, field), err_msg=field)
    for name, matrix in run.params.items():
        np.testing.assert_array_equal(example.params[name], matrix, err_msg=name)
    explorer = training_steps_explorer()
    assert explorer.state.step == 0
    assert explorer.state.mean_weight_on_answer == pytest.approx(0.25, abs=0.01)
    for index in (10, 30):
        state = explorer.set(step_index=index)
        np.testing.assert_array_equal(state.weights, update(index).weights)
        np.testing.assert_array_equal(state.weights, run.snapshot_weights[index])
    explorer.close()


def test_claim_held_out_accuracy(section):
    held_out = lookup_batch(1000, N_PAIRS, N_KEYS, N_VALUES, np.random.default_rng(2024))
    accuracy = np.mean(predict(section["run"].params, held_out) == held_out.targets)
    assert accuracy > 0.99
    assert f"{accuracy:.0%}" == "100%"
