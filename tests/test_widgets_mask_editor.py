"""The mask editor (notebook 03): its pure update, then its shell, headless."""

import itertools

import numpy as np
import pytest

from attention_lib import attention_forward, causal_mask
from attention_lib.widgets import mask_editor


def test_default_is_full_causal():
    state = mask_editor.update(4)
    assert state.lengths == (4, 4) and state.blocked == frozenset()
    np.testing.assert_array_equal(state.mask, np.broadcast_to(causal_mask(4), (2, 4, 4)))
    np.testing.assert_allclose(state.row_sums, 1.0)


def test_mask_is_and_of_causal_padding_and_cells():
    state = mask_editor.update(5, causal=True, lengths=[5, 3], blocked={(4, 0), (2, 1)})
    expected = causal_mask(5)[None] & (np.arange(5) < np.array([5, 3])[:, None])[:, None, :]
    expected[:, 4, 0] = expected[:, 2, 1] = False
    np.testing.assert_array_equal(state.mask, expected)
    assert np.all(state.weights[~state.mask] == 0.0)
    assert np.all(np.isneginf(state.masked_scores[~state.mask]))
    np.testing.assert_array_equal(state.masked_scores[state.mask], state.scores[state.mask])


def test_weights_and_output_are_the_librarys():
    state = mask_editor.update(6, causal=False, lengths=[2, 6], blocked={(0, 0)})
    Q, K, V = mask_editor.example_inputs(6)
    np.testing.assert_array_equal(state.output, attention_forward(Q, K, V, mask=state.mask))


def test_changing_length_keeps_the_tokens():
    short, long = mask_editor.update(3, causal=False), mask_editor.update(6, causal=False)
    np.testing.assert_allclose(long.scores[:, :3, :3], short.scores, rtol=1e-12)


def test_lengths_are_clipped_and_cells_outside_ignored():
    state = mask_editor.update(3, lengths=[7, -1], blocked={(5, 5), (0, 0)})
    assert state.lengths == (3, 0) and state.blocked == frozenset({(0, 0)})


@pytest.mark.parametrize("causal", [False, True])
def test_every_key_masked_gives_zero_rows_not_nan(causal):
    grid = set(itertools.product(range(4), range(4)))
    for state in (
        mask_editor.update(4, causal, lengths=[0, 0]),
        mask_editor.update(4, causal, lengths=[4, 2], blocked=grid),
    ):
        assert state.empty_rows.all()
        assert np.all(state.weights == 0.0) and np.all(state.output == 0.0)
        np.testing.assert_array_equal(state.row_sums, 0.0)


def test_length_one():
    state = mask_editor.update(1, True, lengths=[1, 0])
    np.testing.assert_array_equal(state.weights[:, 0, 0], [1.0, 0.0])
    np.testing.assert_array_equal(state.empty_rows[:, 0], [False, True])


def test_bad_length():
    with pytest.raises(ValueError, match="length must be a whole number >= 1"):
        mask_editor.update(0)
