"""Forward and backward pass: values, numerics, dtypes and gradients."""

import warnings

import numpy as np
import pytest

from attention_lib import (
    AttentionCache,
    attention_backward,
    attention_forward,
    attention_scores,
    causal_mask,
    check_attention_gradients,
    combine_masks,
    masked_softmax,
    padding_mask,
    softmax_backward,
    valid_from_lengths,
)


def qkv(shape_q, shape_k, d_v, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal(shape_q).astype(dtype)
    K = rng.standard_normal(shape_k).astype(dtype)
    V = rng.standard_normal((*shape_k[:-1], d_v)).astype(dtype)
    return Q, K, V


def chapter_forward(Q, K, V, mask=None):
    """Listing 19.1 transcribed with an explicit, unoptimised softmax (the reference)."""
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    shifted = scores - scores.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return (exp / exp.sum(axis=-1, keepdims=True)) @ V


# ---------------------------------------------------------------- forward values


def test_forward_matches_the_chapter_listing():
    Q, K, V = qkv((2, 3, 5, 4), (2, 3, 6, 4), 3)
    np.testing.assert_allclose(attention_forward(Q, K, V), chapter_forward(Q, K, V), rtol=1e-12)
    mask = causal_mask(5, 6)
    np.testing.assert_allclose(
        attention_forward(Q, K, V, mask), chapter_forward(Q, K, V, mask), rtol=1e-12
    )


def test_hand_computed_example():
    # one query, keys along the axes: scores [1, 0] / sqrt(2), softmax by hand
    Q = np.array([[1.0, 0.0]])
    K = np.array([[1.0, 0.0], [0.0, 1.0]])
    V = np.array([[10.0], [20.0]])
    a = np.exp(1 / np.sqrt(2)) / (np.exp(1 / np.sqrt(2)) + 1)
    np.testing.assert_allclose(attention_forward(Q, K, V), [[10 * a + 20 * (1 - a)]])


def test_scores_scaled_and_unscaled():
    Q, K, _ = qkv((3, 16), (4, 16), 2)
    np.testing.assert_allclose(attention_scores(Q, K, scaled=False), Q @ K.T)
    np.testing.assert_allclose(attention_scores(Q, K), Q @ K.T / 4.0)


def test_cache_fields_are_named_and_consistent():
    Q, K, V = qkv((2, 4, 3), (2, 5, 3), 6)
    mask = causal_mask(4, 5)
    output, cache = attention_forward(Q, K, V, mask, return_cache=True)
    assert isinstance(cache, AttentionCache)
    assert cache.weights.shape == (2, 4, 5)
    assert cache.scale == pytest.approx(1 / np.sqrt(3))
    assert cache.mask is not None and cache.output is output
    np.testing.assert_array_equal(cache.Q, Q)
    # the chapter's positional unpacking still works
    _, _, values, weights, scale, _ = cache[:6]
    assert scale == cache.scale
    np.testing.assert_allclose(weights @ values, output)


def test_inputs_are_not_modified():
    Q, K, V = qkv((3, 4), (5, 4), 2)
    copies = [a.copy() for a in (Q, K, V)]
    _, cache = attention_forward(Q, K, V, causal_mask(3, 5), return_cache=True)
    attention_backward(np.ones((3, 2)), cache)
    for original, copy in zip((Q, K, V), copies, strict=True):
        np.testing.assert_array_equal(original, copy)


# ---------------------------------------------------------------- numerics


def test_masked_scores_become_minus_inf_not_a_large_constant():
    # With -1e9 a fully masked row would become uniform; with -inf it is all zero,
    # and a blocked key gets exactly zero weight even next to scores of -1e4.
    scores = np.array([[-1e4, 0.0, 3.0], [1.0, 2.0, 3.0]])
    mask = np.array([[True, False, False], [False, False, False]])
    weights = masked_softmax(scores, mask)
    np.testing.assert_array_equal(weights, [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])


def test_huge_scores_do_not_overflow_or_warn():
    scores = np.array([[1e4, 0.0, -1e4], [1e4, 1e4, 1e4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weights = masked_softmax(scores)
        weights32 = masked_softmax(scores.astype(np.float32))
    np.testing.assert_allclose(weights, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(weights32, weights, rtol=1e-6)


def test_fully_masked_row_gives_zero_weights_output_and_gradients():
    Q, K, V = qkv((2, 4, 3), (2, 4, 3), 5)
    mask = np.ones((2, 4, 4), dtype=bool)
    mask[1, 2, :] = False  # example 1, query 2 may read nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        output, cache = attention_forward(Q, K, V, mask, return_cache=True)
        grad_Q, grad_K, grad_V = attention_backward(np.ones_like(output), cache)
    assert np.all(cache.weights[1, 2] == 0.0)
    assert np.all(output[1, 2] == 0.0)
    assert np.all(grad_Q[1, 2] == 0.0)
    assert all(np.isfinite(g).all() for g in (grad_Q, grad_K, grad_V))
    assert check_attention_gradients(Q, K, V, mask).passed


def test_masked_positions_get_exactly_zero_weight_and_score_gradient():
    Q, K, V = qkv((6, 4), (6, 4), 3)
    mask = causal_mask(6)
    _, cache = attention_forward(Q, K, V, mask, return_cache=True)
    assert np.all(cache.weights[~mask] == 0.0)
    grad_weights = np.random.default_rng(1).standard_normal(cache.weights.shape)
    grad_scores = softmax_backward(cache.weights, grad_weights)
    assert np.all(grad_scores[~mask] == 0.0)


def test_softmax_backward_matches_the_full_jacobian():
    rng = np.random.default_rng(3)
    a = masked_softmax(rng.standard_normal((1, 5)))[0]
    grad_a = rng.standard_normal(5)
    jacobian = np.diag(a) - np.outer(a, a)  # d a_i / d s_j
    np.testing.assert_allclose(softmax_backward(a, grad_a), jacobian.T @ grad_a, atol=1e-15)


def test_backward_identity_rowsum_gradA_A_equals_rowsum_gradO_O():
    Q, K, V = qkv((2, 5, 4), (2, 7, 4), 3)
    output, cache = attention_forward(Q, K, V, causal_mask(5, 7), return_cache=True)
    grad_output = np.random.default_rng(2).standard_normal(output.shape)
    grad_weights = grad_output @ np.swapaxes(V, -1, -2)
    np.testing.assert_allclose(
        np.sum(grad_weights * cache.weights, axis=-1), np.sum(grad_output * output, axis=-1)
    )


# ---------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_in_is_dtype_out(dtype):
    Q, K, V = qkv((2, 3, 4), (2, 5, 4), 2, dtype=dtype)
    output, cache = attention_forward(Q, K, V, causal_mask(3, 5), return_cache=True)
    grads = attention_backward(np.ones_like(output), cache)
    assert output.dtype == dtype and cache.weights.dtype == dtype
    assert all(g.dtype == dtype for g in grads)
    assert masked_softmax(np.zeros((2, 2), dtype=dtype)).dtype == dtype


def test_mixed_floats_follow_numpy_promotion():
    Q, K, V = qkv((3, 4), (5, 4), 2)
    output = attention_forward(Q.astype(np.float32), K, V.astype(np.float32))
    assert output.dtype == np.result_type(np.float32, np.float64) == np.float64


def test_integer_input_is_promoted_to_float64():
    Q = np.array([[1, 0], [0, 1]])
    output = attention_forward(Q, Q, Q)
    assert output.dtype == np.float64
    np.testing.assert_allclose(output, attention_forward(Q * 1.0, Q * 1.0, Q * 1.0))


# ---------------------------------------------------------------- gradients

GRADIENT_CASES = {
    "no mask": ((4, 3), (4, 3), 3, None),
    "causal": ((5, 3), (5, 3), 2, causal_mask(5)),
    "padding": ((2, 4, 3), (2, 4, 3), 2, padding_mask(valid_from_lengths([4, 2], 4))),
    "causal and padding": (
        (2, 4, 3),
        (2, 4, 3),
        2,
        combine_masks(causal_mask(4), padding_mask(valid_from_lengths([3, 2], 4))),
    ),
    "cross attention": ((3, 4), (6, 4), 5, causal_mask(3, 6)),
    "batched heads": (
        (2, 2, 4, 3),
        (2, 2, 4, 3),
        3,
        padding_mask(valid_from_lengths([4, 3], 4), heads=True),
    ),
    "fully masked row": ((3, 2), (3, 2), 2, np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1]], bool)),
    "broadcast keys": ((2, 3, 4), (3, 4), 2, None),
}


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=list(GRADIENT_CASES))
def test_gradients_agree_with_central_differences(case):
    shape_q, shape_k, d_v, mask = GRADIENT_CASES[case]
    Q, K, V = qkv(shape_q, shape_k, d_v, seed=len(case))
    report = check_attention_gradients(Q, K, V, mask, tolerance=1e-6)
    assert report.passed, str(report)
    assert report.worst[1] < 1e-6


def test_gradient_shapes_follow_broadcast_inputs():
    Q, K, V = qkv((2, 3, 4), (3, 4), 5)  # K and V shared by both batch entries
    output, cache = attention_forward(Q, K, V, return_cache=True)
    grad_Q, grad_K, grad_V = attention_backward(np.ones_like(output), cache)
    assert grad_Q.shape == Q.shape and grad_K.shape == K.shape and grad_V.shape == V.shape


def test_float32_gradients_are_close_to_float64():
    Q, K, V = qkv((2, 6, 8), (2, 6, 8), 4)
    grads64 = attention_backward(
        np.ones((2, 6, 4)), attention_forward(Q, K, V, causal_mask(6), return_cache=True)[1]
    )
    f32 = [a.astype(np.float32) for a in (Q, K, V)]
    grads32 = attention_backward(
        np.ones((2, 6, 4), np.float32),
        attention_forward(*f32, causal_mask(6), return_cache=True)[1],
    )
    for g32, g64 in zip(grads32, grads64, strict=True):
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5)
