"""Every claim notebook 06 (teach it) makes, checked against attention_lib directly.

The three misconceptions of chapter 19.5, each with the numbers its demonstration
prints, and the check for understanding (a padding-masked key).
"""

import numpy as np
import pytest

from attention_lib import (
    attention_backward,
    attention_forward,
    causal_mask,
    masked_softmax,
    padding_mask,
    pitfalls,
    saturation_stats,
    softmax_backward,
)
from attention_lib.walkthrough import DEFAULT_CARDS, make_cards, walkthrough_step

ALLOWED_AT_2 = np.array([True, True, False])  # the query at position 2 may read cards 1 and 2


def with_key(cards, card, key):
    keys = cards.keys.copy()
    keys[card] = key
    return make_cards(cards.query, keys, cards.values)


# --- misconception 1: "the values decide the weights" -----------------------------------


def test_claim1_new_values_leave_the_weights_alone():
    before = walkthrough_step(DEFAULT_CARDS, 5)
    rng = np.random.default_rng(6)
    for _ in range(3):
        values = rng.normal(scale=5.0, size=DEFAULT_CARDS.values.shape)
        after = walkthrough_step(make_cards(DEFAULT_CARDS.query, DEFAULT_CARDS.keys, values), 5)
        np.testing.assert_array_equal(after.weights, before.weights)  # bit for bit
        np.testing.assert_allclose(after.output, after.weights @ values, rtol=1e-13)
        assert not np.allclose(after.output, before.output)


def test_claim1_one_new_key_moves_the_weights():
    before = walkthrough_step(DEFAULT_CARDS, 4)
    after = walkthrough_step(with_key(DEFAULT_CARDS, 1, [2, 0, 2, 0]), 4)  # card 2 now matches
    assert after.board[2].cells == ("0.19", "0.51", "0.31")
    assert before.board[2].cells == ("0.33", "0.12", "0.55")
    assert int(np.argmax(after.weights)) == 1 != int(np.argmax(before.weights))


# --- misconception 2: "the scale is arbitrary" ------------------------------------------


def test_claim2_without_the_scale_wide_rows_saturate():
    unscaled = [saturation_stats(d, scaled=False).max_weight for d in (4, 64, 1024, 4096)]
    scaled = [saturation_stats(d, scaled=True).max_weight for d in (4, 64, 1024, 4096)]
    assert all(np.diff(unscaled) > 0) and unscaled[0] < 0.5 and unscaled[-1] > 0.98
    assert max(scaled) < 0.15 and max(scaled) - min(scaled) < 0.05


# --- misconception 3: "a mask can be applied after softmax" -----------------------------


def test_claim3_masking_after_softmax_leaves_a_row_that_does_not_sum_to_one():
    scores = walkthrough_step(DEFAULT_CARDS, 3).scores
    wrong = pitfalls.mask_after_softmax(scores, ALLOWED_AT_2)
    right = walkthrough_step(DEFAULT_CARDS, 6, 2).weights
    assert round(float(wrong.sum()), 2) == 0.45 and right.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(wrong / wrong.sum(), right, rtol=1e-14)  # same ratios


@pytest.mark.parametrize("first_entry", [-2.0, 0.0, 4.0])
def test_claim3_a_future_key_leaks_into_the_earlier_output(first_entry):
    base_wrong = pitfalls.mask_after_softmax(
        walkthrough_step(DEFAULT_CARDS, 3).scores, ALLOWED_AT_2
    )
    base_right = walkthrough_step(DEFAULT_CARDS, 6, 2)
    edited = with_key(DEFAULT_CARDS, 2, [first_entry, 0, 1, 1])
    wrong = pitfalls.mask_after_softmax(walkthrough_step(edited, 3).scores, ALLOWED_AT_2)
    right = walkthrough_step(edited, 6, 2)
    np.testing.assert_array_equal(right.output, base_right.output)  # the future cannot reach it
    assert not np.allclose(wrong @ edited.values, base_wrong @ DEFAULT_CARDS.values)


def test_claim3_the_leak_in_a_causal_self_attention_layer():
    """The same leak in a whole layer: row t's output moves when a key after t moves."""
    rng = np.random.default_rng(6)
    Q, K, V = (rng.standard_normal((4, 4)) for _ in range(3))
    K2 = K.copy()
    K2[3] += 3.0
    for keys in (K, K2):
        wrong = pitfalls.mask_after_softmax(Q @ keys.T / 2.0, causal_mask(4))
        assert np.all(wrong.sum(axis=-1)[:3] < 1.0) and wrong.sum(axis=-1)[3] == pytest.approx(1)
    wrong_out = [pitfalls.mask_after_softmax(Q @ k.T / 2.0, causal_mask(4)) @ V for k in (K, K2)]
    right_out = [attention_forward(Q, k, V, mask=causal_mask(4)) for k in (K, K2)]
    assert not np.allclose(wrong_out[0][:3], wrong_out[1][:3])
    np.testing.assert_array_equal(right_out[0][:3], right_out[1][:3])


def renormalised(scores, allowed):
    weights = pitfalls.mask_after_softmax(scores, allowed)
    with np.errstate(invalid="ignore"):
        return weights / weights.sum(axis=-1, keepdims=True)


def test_claim3_renormalising_agrees_while_the_masked_score_is_not_far_above():
    scores = np.array([0.0, 1.0, 10.0])
    np.testing.assert_allclose(
        renormalised(scores, ALLOWED_AT_2), masked_softmax(scores, ALLOWED_AT_2), rtol=1e-12
    )


@pytest.mark.parametrize("blocked_score", [744.0, 800.0, 1e300])
def test_claim3_masking_before_softmax_ignores_a_blocked_score_far_above(blocked_score):
    # what renormalising does there (subnormal exps, then 0 / 0) is IEEE arithmetic, and
    # notebook 06 checks it visibly; the library's part is that masked_softmax never sees it
    right = masked_softmax(np.array([0.0, 1.0, blocked_score]), ALLOWED_AT_2)
    assert np.round(right, 2).tolist() == [0.27, 0.73, 0.0]
    np.testing.assert_array_equal(right, masked_softmax(np.array([0.0, 1.0, 0.0]), ALLOWED_AT_2))


def test_claim3_in_float32_renormalising_fails_near_a_difference_of_90():
    # notebook 06 measures where; here: the pitfall keeps float32, so its exps underflow
    # at float32's range, while masking first stays right in float32 at any difference
    def row(difference):
        return np.array([0.0, 1.0, difference], dtype=np.float32)

    right = masked_softmax(row(1e30), ALLOWED_AT_2)
    assert (
        right.dtype == np.float32
        and pitfalls.mask_after_softmax(row(0), ALLOWED_AT_2).dtype == np.float32
    )
    np.testing.assert_allclose(right, masked_softmax(row(0.0), ALLOWED_AT_2), rtol=1e-6)
    np.testing.assert_allclose(renormalised(row(80.0), ALLOWED_AT_2), right, rtol=1e-6)
    assert np.abs(renormalised(row(100.0), ALLOWED_AT_2) - right).max() > 1e-3
    assert np.isnan(renormalised(row(110.0), ALLOWED_AT_2)).all()


# --- check for understanding: a padding-masked key --------------------------------------


def test_check_padded_key_gets_zero_weight_and_zero_score_gradient():
    rng = np.random.default_rng(19)
    Q, K, V = (rng.standard_normal((1, 3, 4)) for _ in range(3))
    mask = padding_mask(np.array([[True, True, False]]))  # key 2, the third token, is padding
    output, cache = attention_forward(Q, K, V, mask=mask, return_cache=True)
    grad_output = rng.standard_normal(output.shape)
    grad_scores = softmax_backward(cache.weights, grad_output @ np.swapaxes(V, -1, -2))
    assert np.all(cache.weights[..., 2] == 0.0)
    assert np.all(grad_scores[..., 2] == 0.0) and np.any(grad_scores[..., :2] != 0.0)
    _, grad_K, grad_V = attention_backward(grad_output, cache)
    assert np.all(grad_K[:, 2] == 0.0) and np.all(grad_V[:, 2] == 0.0)
