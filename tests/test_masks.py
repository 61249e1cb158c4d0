"""Causal and padding masks: shapes, alignment, combination and broadcasting."""

import numpy as np
import pytest

from attention_lib import (
    attention_forward,
    causal_mask,
    combine_masks,
    packed_causal_mask,
    padding_mask,
    valid_from_lengths,
    validate_mask,
)


@pytest.mark.parametrize(("t_q", "t_k"), [(1, 1), (4, 4), (3, 6), (6, 3)])
def test_causal_mask_is_top_left_aligned_like_pytorch_is_causal(t_q, t_k):
    np.testing.assert_array_equal(causal_mask(t_q, t_k), np.tril(np.ones((t_q, t_k), bool)))


def test_causal_mask_lets_position_t_read_only_up_to_t():
    mask = causal_mask(5)
    for t in range(5):
        assert mask[t].nonzero()[0].tolist() == list(range(t + 1))


def test_padding_mask_shapes_for_3d_and_4d_inputs():
    valid = valid_from_lengths([3, 1], 4)
    assert padding_mask(valid).shape == (2, 1, 4)
    assert padding_mask(valid, heads=True).shape == (2, 1, 1, 4)


def test_valid_from_lengths():
    np.testing.assert_array_equal(
        valid_from_lengths([0, 2, 3], 3),
        [[False, False, False], [True, True, False], [True, True, True]],
    )


def test_padding_mask_blocks_the_same_keys_for_every_query():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((2, 4, 3)) for _ in range(3))
    valid = valid_from_lengths([4, 2], 4)
    _, cache = attention_forward(Q, K, V, padding_mask(valid), return_cache=True)
    assert np.all(cache.weights[1, :, 2:] == 0.0)
    assert np.all(cache.weights[1, :, :2] > 0.0)
    assert np.all(cache.weights[0] > 0.0)


def test_b1t_padding_mask_against_4d_inputs_lines_batch_up_with_heads():
    # The trap documented in masks.py: with B == H a (B, 1, T) mask broadcasts
    # silently against (B, H, T, T) weights and masks head h with example h's padding.
    rng = np.random.default_rng(1)
    B = H = 2
    Q, K, V = (rng.standard_normal((B, H, 3, 4)) for _ in range(3))
    valid = valid_from_lengths([3, 1], 3)
    _, wrong = attention_forward(Q, K, V, padding_mask(valid), return_cache=True)
    _, right = attention_forward(Q, K, V, padding_mask(valid, heads=True), return_cache=True)
    assert np.all(right.weights[1, :, :, 1:] == 0.0)  # example 1: only key 0 is real
    assert np.all(right.weights[0] > 0.0)
    assert np.all(wrong.weights[0, 1, :, 1:] == 0.0)  # example 0 head 1 wrongly padded
    assert np.any(wrong.weights[1, 0, :, 1:] > 0.0)  # example 1 head 0 reads padding


def test_combine_masks_is_logical_and_before_softmax():
    causal = causal_mask(3)
    padding = padding_mask(valid_from_lengths([2], 3))
    combined = combine_masks(causal, padding)
    np.testing.assert_array_equal(combined, causal & padding)
    rng = np.random.default_rng(2)
    Q, K, V = (rng.standard_normal((1, 3, 2)) for _ in range(3))
    _, cache = attention_forward(Q, K, V, combined, return_cache=True)
    assert np.all(cache.weights[~np.broadcast_to(combined, (1, 3, 3))] == 0.0)
    np.testing.assert_allclose(cache.weights.sum(-1), 1.0)


def test_combine_masks_skips_none():
    assert combine_masks() is None
    np.testing.assert_array_equal(combine_masks(None, causal_mask(2)), causal_mask(2))


def test_validate_mask_accepts_broadcastable_masks_unchanged():
    mask = causal_mask(4)
    assert validate_mask(mask, (2, 3, 4, 4)) is mask


def test_packed_causal_mask_matches_a_loop_over_positions():
    lengths = [3, 1, 4]
    mask = packed_causal_mask(lengths)
    starts = np.cumsum([0] + lengths[:-1])
    document = [d for d, n in enumerate(lengths) for _ in range(n)]
    for i in range(sum(lengths)):
        for j in range(sum(lengths)):
            expected = document[i] == document[j] and j <= i
            assert mask[i, j] == expected, (i, j)
    # each document's first token reads only itself
    assert all(mask[s].sum() == 1 for s in starts)


def test_packed_causal_mask_with_one_document_is_causal():
    np.testing.assert_array_equal(packed_causal_mask([5]), causal_mask(5))


@pytest.mark.parametrize(
    ("lengths", "error", "message"),
    [
        ([2, 0], ValueError, "at least one token"),
        ([], TypeError, "non-empty 1-D"),
        ([1.5, 2], TypeError, "whole numbers"),
        ([[1, 2]], TypeError, "shape \\(1, 2\\)"),
    ],
)
def test_packed_causal_mask_rejects_bad_lengths(lengths, error, message):
    with pytest.raises(error, match=message):
        packed_causal_mask(lengths)
