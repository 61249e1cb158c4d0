"""Every claim notebook 03 (masks) makes, checked against attention_lib directly."""

import itertools

import numpy as np
import pytest

from attention_lib import (
    attention_backward,
    attention_forward,
    attention_scores,
    causal_mask,
    combine_masks,
    masked_softmax,
    packed_causal_mask,
    padding_mask,
    valid_from_lengths,
    validate_mask,
)
from attention_lib.pitfalls import large_negative_fill

RNG_SEED = 3


def qkv(*lead, T=5, d_k=4, d_v=3, seed=RNG_SEED):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((*lead, T, d_k)),
        rng.standard_normal((*lead, T, d_k)),
        rng.standard_normal((*lead, T, d_v)),
    )


def test_claim1_masked_scores_are_minus_inf_and_weights_exactly_zero():
    Q, K, _ = qkv(T=5)
    mask = causal_mask(5)
    scores = attention_scores(Q, K)
    masked = np.where(mask, scores, -np.inf)  # what masking does to the scores
    assert np.all(np.isneginf(masked[~mask]))
    assert np.all(np.exp(masked[~mask]) == 0.0)  # exp(-inf) is exactly 0
    weights = masked_softmax(scores, mask)
    assert np.all(weights[~mask] == 0.0)
    # the same weights as a softmax written out over the -inf scores
    shifted = np.exp(masked - masked.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(weights, shifted / shifted.sum(axis=-1, keepdims=True), rtol=1e-14)


def test_claim2_causal_position_t_reads_only_up_to_t():
    Q, K, V = qkv(T=6)
    out, cache = attention_forward(Q, K, V, mask=causal_mask(6), return_cache=True)
    assert np.all(np.triu(cache.weights, k=1) == 0.0)
    assert np.all(cache.weights[causal_mask(6)] > 0.0)
    for t in range(5):
        K2, V2 = K.copy(), V.copy()
        K2[t + 1 :] += 100.0  # change every future key and value...
        V2[t + 1 :] -= 50.0
        out2 = attention_forward(Q, K2, V2, mask=causal_mask(6))
        np.testing.assert_array_equal(out2[: t + 1], out[: t + 1])  # ...earlier outputs: unchanged
        assert not np.allclose(out2[t + 1 :], out[t + 1 :])


def test_claim3_padding_mask_blocks_the_same_keys_for_every_query():
    Q, K, V = qkv(2, T=5)
    valid = valid_from_lengths(np.array([5, 3]), 5)
    mask = padding_mask(valid)
    assert mask.shape == (2, 1, 5)
    _, cache = attention_forward(Q, K, V, mask=mask, return_cache=True)
    for b in range(2):
        blocked = ~valid[b]
        assert np.all(cache.weights[b][:, blocked] == 0.0)  # every query of example b
        assert np.all(cache.weights[b][:, ~blocked] > 0.0)
    np.testing.assert_allclose(cache.weights.sum(axis=-1), 1.0)


def test_claim4_causal_and_padding_combine_with_logical_and_before_softmax():
    Q, K, V = qkv(2, T=5)
    causal = causal_mask(5)
    pad = padding_mask(valid_from_lengths(np.array([5, 2]), 5))
    combined = combine_masks(causal, pad)
    np.testing.assert_array_equal(combined, causal & pad)
    assert combined.shape == (2, 5, 5)
    _, cache = attention_forward(Q, K, V, mask=combined, return_cache=True)
    assert np.all(cache.weights[~combined] == 0.0)
    # before softmax: every row that can read something still sums to one
    np.testing.assert_allclose(cache.weights.sum(axis=-1), 1.0)


def test_claim5_row_with_no_allowed_key_gives_zeros_not_nan():
    Q, K, V = qkv(2, T=4)
    mask = combine_masks(causal_mask(4), padding_mask(valid_from_lengths(np.array([4, 0]), 4)))
    out, cache = attention_forward(Q, K, V, mask=mask, return_cache=True)  # warnings are errors
    assert np.all(cache.weights[1] == 0.0) and np.all(out[1] == 0.0)
    assert np.all(np.isfinite(out))
    grads = attention_backward(np.ones_like(out), cache)
    for grad in grads:  # no gradient reaches the empty example's queries, keys or values
        assert np.all(np.isfinite(grad)) and np.all(grad[1] == 0.0)


@pytest.mark.parametrize(("t_q", "t_k"), [(1, 4), (3, 6), (5, 5)])
def test_rectangular_causal_masks_are_rows_of_the_square_one(t_q, t_k):
    np.testing.assert_array_equal(causal_mask(t_q, t_k), causal_mask(t_k)[:t_q])  # top-left
    bottom_right = np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)
    np.testing.assert_array_equal(bottom_right, causal_mask(t_k)[t_k - t_q :])


def test_bottom_right_mask_gives_the_newest_queries_their_outputs_in_the_whole_sequence():
    Q, K, V = qkv(T=7)
    whole = attention_forward(Q, K, V, mask=causal_mask(7))
    bottom_right = np.tril(np.ones((2, 7), dtype=bool), k=5)
    np.testing.assert_allclose(attention_forward(Q[5:], K, V, mask=bottom_right), whole[5:])
    assert not np.allclose(attention_forward(Q[5:], K, V, mask=causal_mask(2, 7)), whole[5:])


def test_pitfall_bh_mixup_is_silent_when_b_equals_h():
    """A (B, 1, T) mask against (B, H, T, T) weights pairs B with H; (B, 1, 1, T) is right."""
    B = H = 2
    Q, K, V = qkv(B, H, T=4)
    valid = valid_from_lengths(np.array([4, 2]), 4)
    wrong = padding_mask(valid)
    validate_mask(wrong, (B, H, 4, 4))  # no error: shapes broadcast
    _, bad = attention_forward(Q, K, V, mask=wrong, return_cache=True)
    _, good = attention_forward(Q, K, V, mask=padding_mask(valid, heads=True), return_cache=True)
    # example 0 has no padding, yet its head 1 got example 1's padding
    assert np.all(bad.weights[0, 1][:, 2:] == 0.0)
    assert np.all(good.weights[0, :, :, 2:] > 0.0)
    # and example 1's head 0 reads its padded keys
    assert np.all(bad.weights[1, 0][:, 2:] > 0.0)
    assert np.all(good.weights[1, :, :, 2:] == 0.0)


def test_pitfall_bh_mixup_raises_when_b_differs_from_h():
    Q, K, V = qkv(3, 2, T=4)
    with pytest.raises(ValueError, match="does not broadcast"):
        attention_forward(Q, K, V, mask=padding_mask(valid_from_lengths(np.array([4, 2, 1]), 4)))


def test_pitfall_pytorch_key_padding_mask_is_negated():
    key_padding_mask = np.array([[False, False, True]])  # PyTorch: True = ignore this key
    ours = padding_mask(~key_padding_mask)
    np.testing.assert_array_equal(ours, [[[True, True, False]]])


def test_pitfall_large_negative_fill_uniform_on_empty_rows_and_nan_in_float16():
    from attention_lib import pitfalls

    Q, K, _ = qkv(2, T=4)
    mask = combine_masks(causal_mask(4), padding_mask(valid_from_lengths(np.array([4, 0]), 4)))
    scores = attention_scores(Q, K)
    filled = pitfalls.large_negative_fill(scores, mask)
    np.testing.assert_allclose(filled[1], 0.25)  # the empty example reads every key equally
    np.testing.assert_allclose(filled[0], masked_softmax(scores, mask)[0], atol=1e-12)
    with np.errstate(over="ignore", invalid="ignore"):
        half = pitfalls.large_negative_fill(scores.astype(np.float16), mask)
    assert np.isnan(half[1]).all()
    with pytest.raises(TypeError, match="float16"):
        masked_softmax(scores.astype(np.float16), mask)


def test_pitfall_triu_reads_the_future():
    from attention_lib import pitfalls

    Q, K, V = qkv(T=6)
    wrong = pitfalls.causal_mask_triu(6)
    np.testing.assert_array_equal(~causal_mask(6), np.triu(np.ones((6, 6), dtype=bool), k=1))
    K2 = K.copy()
    K2[-1] += 100.0
    before = attention_forward(Q, K, V, mask=wrong)
    after = attention_forward(Q, K2, V, mask=wrong)
    assert not np.allclose(after[0], before[0])


def test_pitfall_mask_after_softmax_breaks_row_sums():
    from attention_lib import pitfalls

    Q, K, _ = qkv(2, T=5)
    both = combine_masks(causal_mask(5), padding_mask(valid_from_lengths(np.array([5, 2]), 5)))
    after = pitfalls.mask_after_softmax(attention_scores(Q, K), both)
    assert np.all(after[~both] == 0.0)
    assert after.sum(axis=-1).min() < 0.9 and np.all(after.sum(axis=-1) <= 1.0 + 1e-12)


def test_padding_queries_still_read_real_keys():
    """The notebook's predict-then-reveal: padding masks keys, not queries."""
    Q, K, V = qkv(2, T=5)
    _, cache = attention_forward(
        Q, K, V, mask=padding_mask(valid_from_lengths(np.array([5, 3]), 5)), return_cache=True
    )
    np.testing.assert_allclose(cache.weights[1, 3:].sum(axis=-1), 1.0)


# Claims added with the corrections of issue 13.


@pytest.mark.parametrize("lengths", [[3, 2, 4], [1, 1], [5], [2, 3]])
def test_packed_mask_is_causal_inside_each_document_and_blocked_between(lengths):
    T = sum(lengths)
    expected = np.zeros((T, T), dtype=bool)
    start = 0
    for length in lengths:  # one lower triangle per document, built by hand
        for i in range(length):
            expected[start + i, start : start + i + 1] = True
        start += length
    np.testing.assert_array_equal(packed_causal_mask(lengths), expected)


def test_packed_documents_get_their_own_outputs_and_do_not_see_each_other():
    lengths = [3, 2, 4]
    Q, K, V = qkv(T=sum(lengths), seed=11)
    mask = packed_causal_mask(lengths)
    out = attention_forward(Q, K, V, mask=mask)
    bounds = np.cumsum([0, *lengths])
    for doc, (start, stop) in enumerate(itertools.pairwise(bounds)):
        part = slice(start, stop)
        alone = attention_forward(Q[part], K[part], V[part], mask=causal_mask(stop - start))
        np.testing.assert_allclose(out[part], alone, rtol=1e-12, atol=1e-15)
        K2, V2 = K.copy(), V.copy()
        K2[part] += 100.0
        V2[part] -= 50.0
        moved = attention_forward(Q, K2, V2, mask=mask)
        others = np.ones(sum(lengths), dtype=bool)
        others[part] = False
        np.testing.assert_array_equal(moved[others], out[others])
        assert not np.allclose(moved[part], out[part]), doc


def test_packed_first_token_of_a_document_reads_only_itself():
    mask = packed_causal_mask([3, 2, 4])
    assert mask[5].sum() == 1 and causal_mask(9)[5].sum() == 6


def test_check_question_packed_position_3_reads_positions_2_and_3():
    assert list(np.flatnonzero(packed_causal_mask([2, 3])[3])) == [2, 3]


def test_a_minus_1e4_fill_in_float16_gives_uniform_weights_on_an_empty_row():
    scores = np.zeros((2, 4), dtype=np.float16)
    mask = np.array([[True, False, True, False], [False] * 4])
    weights = large_negative_fill(scores, mask, fill=-1e4)
    np.testing.assert_allclose(weights[1].astype(float), 0.25)
    np.testing.assert_allclose(weights[0].astype(float), [0.5, 0.0, 0.5, 0.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_question_large_fill_equals_minus_inf_on_rows_with_an_allowed_key(dtype):
    scores = np.random.default_rng(2).standard_normal((5, 5)).astype(dtype)
    mask = causal_mask(5)  # every row has at least one allowed key
    filled = large_negative_fill(scores, mask)
    assert np.all(filled[~mask] == 0.0)  # e^(-1e9 - max) underflows to exactly 0, as e^-inf
    rtol = 1e-6 if dtype == np.float32 else 1e-14  # the rest differs in summation order only
    np.testing.assert_allclose(filled, masked_softmax(scores, mask), rtol=rtol)


def test_attention_forward_matches_pytorch_sdpa_under_a_causal_mask():
    import torch  # requirements-torch.txt: make test installs it

    q, k, v = (torch.tensor(x) for x in np.random.default_rng(0).standard_normal((3, 1, 4, 4)))
    sdpa = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=torch.tensor(causal_mask(4))
    )
    ours = attention_forward(q.numpy(), k.numpy(), v.numpy(), causal_mask(4))
    np.testing.assert_allclose(sdpa.numpy(), ours, rtol=1e-12, atol=1e-14)


def test_a_row_with_no_readable_key_gives_what_pytorch_sdpa_gives():
    import torch  # requirements-torch.txt: make test installs it

    q, k, v = (torch.tensor(x) for x in np.random.default_rng(1).standard_normal((3, 1, 3, 4)))
    mask = np.array([[True, False, False], [False, False, False], [True, True, True]])
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(mask))
    ours = attention_forward(q.numpy(), k.numpy(), v.numpy(), mask)
    np.testing.assert_allclose(sdpa.numpy(), ours, rtol=1e-12, atol=1e-14)
    assert np.all(ours[0, 1] == 0.0)


@pytest.mark.parametrize(("t_q", "t_k"), [(2, 5), (5, 2)])
def test_pytorch_is_causal_is_causal_mask_aligned_top_left(t_q, t_k):
    import torch  # requirements-torch.txt: make test installs it

    rng = np.random.default_rng(2)
    q, k, v = (torch.tensor(rng.standard_normal((1, t, 4))) for t in (t_q, t_k, t_k))
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    ours = attention_forward(q.numpy(), k.numpy(), v.numpy(), mask=causal_mask(t_q, t_k))
    np.testing.assert_allclose(sdpa.numpy(), ours, rtol=1e-12, atol=1e-14)
