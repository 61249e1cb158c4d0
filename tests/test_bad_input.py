"""Every public function refuses bad input with a message that says what to do."""

import re

import numpy as np
import pytest

from attention_lib import (
    attention_backward,
    attention_forward,
    causal_mask,
    combine_masks,
    dot_product_variance,
    gradient_check,
    masked_softmax,
    numerical_gradient,
    padding_mask,
    random_scores,
    saturation_stats,
    softmax_backward,
    valid_from_lengths,
    validate_mask,
)

rng = np.random.default_rng(0)
Q = rng.standard_normal((2, 4, 3))
K = rng.standard_normal((2, 5, 3))
V = rng.standard_normal((2, 5, 6))


def raises(error, *fragments):
    """pytest.raises that also checks each fragment appears in the message."""
    pattern = "".join(f"(?=.*{re.escape(fragment)})" for fragment in fragments)
    return pytest.raises(error, match=re.compile(pattern, re.DOTALL))


def test_q_and_k_with_different_widths():
    with raises(ValueError, "Q and K", "d_k", "(2, 4, 3)", "(2, 5, 4)"):
        attention_forward(Q, rng.standard_normal((2, 5, 4)), V)


def test_k_and_v_with_different_lengths():
    with raises(ValueError, "K and V", "T_k", "(2, 5, 3)", "(2, 7, 6)"):
        attention_forward(Q, K, rng.standard_normal((2, 7, 6)))


@pytest.mark.parametrize("name", ["Q", "K", "V"])
def test_fewer_than_two_dimensions(name):
    arrays = {"Q": Q, "K": K, "V": V}
    arrays[name] = np.ones(3)
    with raises(ValueError, f"{name} must have at least 2", "(3,)", "(..., T"):
        attention_forward(**arrays)


def test_no_keys():
    with raises(ValueError, "K has no keys", "T_k = 0", "(2, 0, 3)", "(2, 0, 6)", "mask"):
        attention_forward(Q, K[:, :0], V[:, :0])


def test_keys_and_queries_of_width_zero():
    with raises(ValueError, "d_k = 0", "Q of shape (2, 4, 0)", "K of shape (2, 5, 0)"):
        attention_forward(Q[..., :0], K[..., :0], V)


def test_softmax_over_no_keys():
    with raises(ValueError, "scores has no keys", "(4, 0)", "T_k"):
        masked_softmax(np.zeros((4, 0)))


def test_batch_axes_that_do_not_broadcast():
    with raises(ValueError, "leading (batch/head) axes", "(3,)", "(2,)"):
        attention_forward(rng.standard_normal((3, 4, 3)), K, V)


def test_mask_that_does_not_broadcast():
    with raises(ValueError, "mask of shape (3, 5)", "weights of shape (2, 4, 5)"):
        attention_forward(Q, K, V, mask=np.ones((3, 5), bool))


def test_mask_that_would_enlarge_the_weights():
    with raises(ValueError, "(2, 1, 1, 5)", "(2, 4, 5)", "enlarge", "heads=True"):
        attention_forward(Q, K, V, mask=np.ones((2, 1, 1, 5), bool))


@pytest.mark.parametrize(
    ("mask", "hint"),
    [(np.ones((4, 5), int), "astype(bool)"), (np.zeros((4, 5)), "== 0")],
    ids=["zero-one ints", "additive float"],
)
def test_non_boolean_mask_explains_the_convention(mask, hint):
    with raises(TypeError, "boolean", "True where a query may read a key", hint):
        attention_forward(Q, K, V, mask=mask)


@pytest.mark.parametrize("bad", [np.complex128, object], ids=["complex", "object"])
def test_complex_and_object_arrays(bad):
    with raises(TypeError, "Q", "dtype"):
        attention_forward(Q.astype(bad), K, V)


def test_float16_is_refused_with_a_suggestion():
    with raises(TypeError, "float16", "astype(np.float32)"):
        attention_forward(Q.astype(np.float16), K, V)


@pytest.mark.parametrize("name", ["Q", "K", "V"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_inputs(name, value):
    arrays = {"Q": Q.copy(), "K": K.copy(), "V": V.copy()}
    arrays[name][1, 2, 0] = value
    with raises(ValueError, name, "non-finite", "(1, 2, 0)", "boolean mask"):
        attention_forward(**arrays)


def test_non_finite_scores_in_masked_softmax():
    with raises(ValueError, "scores", "non-finite"):
        masked_softmax(np.array([[0.0, -np.inf]]))


def test_cache_that_did_not_come_from_forward():
    output, cache = attention_forward(Q, K, V, return_cache=True)
    with raises(TypeError, "AttentionCache", "return_cache=True", "tuple"):
        attention_backward(np.ones_like(output), tuple(cache))
    for array in (output, cache.weights):  # the two arrays a student might pass instead
        with raises(TypeError, "AttentionCache", "NumPy array", str(array.shape), "pass cache"):
            attention_backward(np.ones_like(output), array)
    broken = cache._replace(weights=cache.weights[:, :2])
    with raises(ValueError, "cache is inconsistent", "(2, 2, 5)", "(2, 4, 5)"):
        attention_backward(np.ones_like(output), broken)


def test_grad_output_of_the_wrong_shape():
    _, cache = attention_forward(Q, K, V, return_cache=True)
    with raises(ValueError, "grad_output", "(2, 4, 6)", "(2, 4, 5)"):
        attention_backward(np.ones((2, 4, 5)), cache)


def test_grad_output_with_nan():
    output, cache = attention_forward(Q, K, V, return_cache=True)
    bad = np.ones_like(output)
    bad[0, 0, 0] = np.nan
    with raises(ValueError, "grad_output", "non-finite"):
        attention_backward(bad, cache)


@pytest.mark.parametrize(
    ("call", "error", "fragments"),
    [
        (lambda: causal_mask(0), ValueError, ("length", "at least 1", "0")),
        (lambda: causal_mask(2.5), TypeError, ("length", "whole number", "2.5")),
        (lambda: causal_mask(True), TypeError, ("length", "whole number")),
        (lambda: causal_mask(3, -1), ValueError, ("k_length", "at least 1")),
        (lambda: dot_product_variance(0), ValueError, ("width", "at least 1")),
        (lambda: dot_product_variance(8, samples=1), ValueError, ("samples", "at least 2")),
        (lambda: dot_product_variance(8, samples=1e4), TypeError, ("samples", "whole number")),
        (lambda: dot_product_variance(8, seed=-1), ValueError, ("seed", "at least 0")),
        (lambda: random_scores(-4), ValueError, ("d_k", "at least 1")),
        (lambda: saturation_stats(16, n_keys=0), ValueError, ("n_keys", "at least 1")),
        (lambda: valid_from_lengths([2, 5], 4), ValueError, ("lengths", "between 0", "[2, 5]")),
        (lambda: valid_from_lengths([1.5], 4), TypeError, ("lengths", "whole numbers")),
        (lambda: valid_from_lengths([1], 0), ValueError, ("length", "at least 1")),
    ],
)
def test_sizes_must_be_whole_numbers_of_the_right_sign(call, error, fragments):
    with raises(error, *fragments):
        call()


def test_padding_mask_input_checks():
    with raises(TypeError, "valid", "boolean", "astype(bool)"):
        padding_mask(np.ones((2, 3), int))
    with raises(ValueError, "valid", "(B, T)", "(3,)", "valid_from_lengths"):
        padding_mask(np.ones(3, bool))


def test_combine_masks_input_checks():
    with raises(TypeError, "masks[1]", "boolean"):
        combine_masks(causal_mask(3), np.ones((3, 3)))
    with raises(ValueError, "(3, 3)", "(4, 4)", "do not broadcast"):
        combine_masks(causal_mask(3), causal_mask(4))


def test_validate_mask_refuses_enlarging():
    with raises(ValueError, "enlarge"):
        validate_mask(np.ones((2, 1, 3), bool), (3, 3))


def test_softmax_backward_shapes_must_match():
    with raises(ValueError, "weights and grad_weights", "(2, 3)", "(3, 2)"):
        softmax_backward(np.ones((2, 3)) / 3, np.ones((3, 2)))


def test_gradcheck_input_checks():
    with raises(TypeError, "mapping"):
        gradient_check(np.sum, [np.ones(2)], [np.ones(2)])
    with raises(ValueError, "same names"):
        gradient_check(lambda x: float(np.sum(x)), {"x": np.ones(2)}, {"y": np.ones(2)})
    with raises(ValueError, "shape (3,)", "shape (2,)"):
        gradient_check(lambda x: float(np.sum(x)), {"x": np.ones(2)}, {"x": np.ones(3)})
    with raises(KeyError, "no input named 'z'"):
        numerical_gradient(lambda x: float(np.sum(x)), {"x": np.ones(2)}, "z")
    with raises(ValueError, "eps", "positive"):
        numerical_gradient(lambda x: float(np.sum(x)), {"x": np.ones(2)}, "x", eps=0.0)
