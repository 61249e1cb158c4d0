"""The tiny attention layer: its data, its gradients (finite differences) and that it learns."""

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


def test_batch_encodes_distinct_keys_and_the_asked_pair():
    batch = lookup_batch(50, 4, 6, 3, np.random.default_rng(0))
    keys = batch.pairs[:, :, :6].argmax(axis=2)
    assert all(len(set(row)) == 4 for row in keys)
    assert np.all(batch.pairs.sum(axis=2) == 2) and np.all(batch.queries.sum(axis=2) == 1)
    rows = np.arange(50)
    asked = batch.queries[:, 0, :6].argmax(axis=1)
    np.testing.assert_array_equal(keys[rows, batch.answer_positions], asked)
    values = batch.pairs[rows, batch.answer_positions, 6:].argmax(axis=1)
    np.testing.assert_array_equal(values, batch.targets)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layer_gradients_match_finite_differences(seed):
    rng = np.random.default_rng(seed)
    batch = lookup_batch(5, 3, 5, 4, rng)
    params = init_params(9, 3, 4, rng, scale=1.0)
    loss, grads, weights = layer_loss_and_gradients(params, batch)
    assert loss == pytest.approx(layer_loss(params, batch), rel=1e-15)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    report = gradient_check(lambda **p: layer_loss(p, batch), params, grads, tolerance=1e-7)
    assert report.passed, report


def test_training_solves_held_out_lookups_and_sharpens_attention():
    rng = np.random.default_rng(0)
    probe = lookup_batch(6, 4, 8, 4, rng)
    run = train(
        init_params(12, 8, 4, rng),
        lambda: lookup_batch(64, 4, 8, 4, rng),
        probe,
        300,
        learning_rate=0.01,
        snapshot_every=25,
    )
    on_answer = run.snapshot_weights[:, np.arange(6), probe.answer_positions].mean(axis=1)
    assert on_answer[0] < 0.3 and on_answer[-1] > 0.95
    held_out = lookup_batch(500, 4, 8, 4, np.random.default_rng(99))
    assert layer_loss(run.params, held_out) < 0.1
    assert np.mean(predict(run.params, held_out) == held_out.targets) > 0.99


def test_train_does_not_modify_its_starting_params():
    rng = np.random.default_rng(0)
    params = init_params(9, 4, 4, rng)
    before = {name: p.copy() for name, p in params.items()}
    train(params, lambda: lookup_batch(8, 3, 5, 4, rng), lookup_batch(2, 3, 5, 4, rng), 5)
    for name in before:
        np.testing.assert_array_equal(params[name], before[name])


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="n_pairs must be at most n_keys"):
        lookup_batch(2, 6, 5, 4, np.random.default_rng(0))
    with pytest.raises(TypeError, match="steps"):
        train(init_params(9, 4, 4, np.random.default_rng(0)), None, None, 2.5)


def test_snapshots_keep_the_probe_and_its_loss_at_each_saved_step():
    rng = np.random.default_rng(3)
    probe = lookup_batch(4, 3, 5, 4, rng)
    start = init_params(9, 4, 4, rng)
    run = train(start, lambda: lookup_batch(16, 3, 5, 4, rng), probe, 7, snapshot_every=3)
    assert run.probe is probe
    assert run.snapshot_steps.tolist() == [0, 3, 6, 7]
    first_loss, _, first_weights = layer_loss_and_gradients(start, probe)
    assert run.snapshot_losses[0] == first_loss
    np.testing.assert_array_equal(run.snapshot_weights[0], first_weights)
    last_loss, _, last_weights = layer_loss_and_gradients(run.params, probe)
    assert run.snapshot_losses[-1] == last_loss
    np.testing.assert_array_equal(run.snapshot_weights[-1], last_weights)
