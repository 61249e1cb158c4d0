"""Each pitfall differs from the right function exactly in the documented way."""

import numpy as np
import pytest

import attention_lib
from attention_lib import (
    attention_backward,
    attention_forward,
    causal_mask,
    check_attention_gradients,
    masked_softmax,
    pitfalls,
    softmax_backward,
)

RNG = np.random.default_rng(19)


def test_pitfalls_are_not_exported_from_the_top_level():
    for name in pitfalls.__all__:
        assert name not in attention_lib.__all__
        assert not hasattr(attention_lib, name)
    for name in pitfalls.__all__:
        doc = getattr(pitfalls, name).__doc__
        assert doc.lstrip().startswith("WRONG"), name
        assert "Right call" in doc and "Why it is wrong" in doc, name


def test_mask_after_softmax_leaves_rows_short_and_lets_the_future_leak():
    scores = RNG.normal(size=(4, 4))
    mask = causal_mask(4)
    wrong = pitfalls.mask_after_softmax(scores, mask)
    right = masked_softmax(scores, mask)
    np.testing.assert_allclose(right.sum(axis=-1), 1.0)
    assert np.all(wrong.sum(axis=-1)[:-1] < 1 - 1e-6)  # every row with a masked key is short
    np.testing.assert_allclose(wrong[-1], right[-1])  # the unmasked last row agrees
    # Changing a future (masked) score changes row 0's weight in the wrong version only.
    bumped = scores.copy()
    bumped[0, 3] += 5.0
    assert not np.allclose(pitfalls.mask_after_softmax(bumped, mask)[0], wrong[0])
    np.testing.assert_array_equal(masked_softmax(bumped, mask)[0], right[0])


def test_large_negative_fill_gives_uniform_weights_on_a_fully_masked_row():
    scores = RNG.normal(size=(3, 5))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    mask[2, 3:] = False
    wrong = pitfalls.large_negative_fill(scores, mask)
    right = masked_softmax(scores, mask)
    np.testing.assert_allclose(wrong[1], np.full(5, 0.2))
    np.testing.assert_array_equal(right[1], np.zeros(5))
    np.testing.assert_allclose(wrong[[0, 2]], right[[0, 2]], atol=1e-12)  # partial rows agree
    for fill in (-9e15, -1e6):
        np.testing.assert_allclose(pitfalls.large_negative_fill(scores, mask, fill)[1], 0.2)


def test_large_negative_fill_overflows_and_gives_nan_in_float16():
    scores = RNG.normal(size=(2, 4)).astype(np.float16)
    mask = np.array([[True, True, False, False], [False, False, False, False]])
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        pitfalls.large_negative_fill(scores, mask)  # -1e9 does not fit in float16
    with np.errstate(over="ignore", invalid="ignore"):
        wrong = pitfalls.large_negative_fill(scores, mask)
        assert np.isneginf(np.asarray(-1e9, dtype=np.float16))
    assert wrong.dtype == np.float16
    assert np.all(np.isnan(wrong[1]))
    assert np.all(np.isfinite(wrong[0]))
    # The library refuses float16 with advice rather than returning NaN.
    with pytest.raises(TypeError, match="float32"):
        masked_softmax(scores, mask)


def test_softmax_without_max_subtraction_overflows_where_the_library_does_not():
    scores = np.array([[1000.0, 999.0, 0.0], [1.0, 2.0, 3.0]])
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        pitfalls.softmax_without_max_subtraction(scores)
    with np.errstate(over="ignore", invalid="ignore"):
        wrong = pitfalls.softmax_without_max_subtraction(scores)
    assert np.all(np.isnan(wrong[0, :2]))  # inf / inf
    np.testing.assert_allclose(wrong[1], masked_softmax(scores)[1])  # small scores agree
    assert np.all(np.isfinite(masked_softmax(scores)))
    # float32 overflows much earlier (about 88).
    with np.errstate(over="ignore", invalid="ignore"):
        wrong32 = pitfalls.softmax_without_max_subtraction(np.array([[100.0, 90.0]], np.float32))
    assert np.all(np.isnan(wrong32))


def test_scale_by_sqrt_d_model_flattens_weights_by_the_number_of_heads():
    heads, d_k = 4, 16
    Q = RNG.normal(size=(heads, 6, d_k))
    K = RNG.normal(size=(heads, 6, d_k))
    V = RNG.normal(size=(heads, 6, 3))
    out_wrong, w_wrong = pitfalls.scale_by_sqrt_d_model(
        Q, K, V, d_model=heads * d_k, return_weights=True
    )
    out_right, cache = attention_forward(Q, K, V, return_cache=True)
    # Equivalent to the right attention on queries shrunk by sqrt(heads).
    np.testing.assert_allclose(
        w_wrong, attention_forward(Q / np.sqrt(heads), K, V, return_cache=True)[1].weights
    )
    assert w_wrong.max(axis=-1).mean() < cache.weights.max(axis=-1).mean()  # flatter
    assert not np.allclose(out_wrong, out_right)
    # One head: d_model == d_k and the bug is invisible.
    np.testing.assert_allclose(pitfalls.scale_by_sqrt_d_model(Q, K, V, d_model=d_k), out_right)


def test_causal_mask_triu_lets_position_zero_read_the_future():
    wrong, right = pitfalls.causal_mask_triu(5), causal_mask(5)
    assert wrong[0].all() and right[0].sum() == 1  # position 0 reads every key
    assert wrong[-1].sum() == 1 and right[-1].all()  # the last reads only itself
    np.testing.assert_array_equal(wrong, right.T)
    # Consequence: changing a future value changes output 0 with triu, not with tril.
    Q, K, V = RNG.normal(size=(3, 5, 4))
    V2 = V.copy()
    V2[4] += 1.0
    for mask, leaks in ((wrong, True), (right, False)):
        changed = not np.allclose(
            attention_forward(Q, K, V, mask)[0], attention_forward(Q, K, V2, mask)[0]
        )
        assert changed == leaks
    assert pitfalls.causal_mask_triu(2, 4).shape == (2, 4)


def test_softmax_backward_sign_error_breaks_the_zero_row_sum():
    weights = masked_softmax(RNG.normal(size=(3, 4)))
    grad_weights = RNG.normal(size=(3, 4))
    right = softmax_backward(weights, grad_weights)
    wrong = pitfalls.softmax_backward_sign_error(weights, grad_weights)
    np.testing.assert_allclose(right.sum(axis=-1), 0.0, atol=1e-12)
    assert np.all(np.abs(wrong.sum(axis=-1)) > 1e-3)
    # The difference is exactly twice the row term.
    row = np.sum(grad_weights * weights, axis=-1, keepdims=True)
    np.testing.assert_allclose(wrong - right, 2 * weights * row)


def test_attention_backward_with_sign_error_is_caught_by_the_gradient_check():
    Q, K, V = RNG.normal(size=(3, 2, 5, 4))
    mask = causal_mask(5)
    report = check_attention_gradients(
        Q, K, V, mask, backward=pitfalls.attention_backward_with_sign_error
    )
    assert not report.passed
    assert report.errors["V"] < 1e-6  # grad_V does not pass through the softmax
    assert report.errors["Q"] > 1e-2 and report.errors["K"] > 1e-2
    out, cache = attention_forward(Q, K, V, mask, return_cache=True)
    g = RNG.normal(size=out.shape)
    wrong = pitfalls.attention_backward_with_sign_error(g, cache)
    right = attention_backward(g, cache)
    np.testing.assert_allclose(wrong[2], right[2])
    assert [w.shape for w in wrong] == [Q.shape, K.shape, V.shape]
    with pytest.raises(TypeError, match="AttentionCache"):
        pitfalls.attention_backward_with_sign_error(g, tuple(cache))
