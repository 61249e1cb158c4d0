"""The gradient checker must pass right gradients and catch wrong ones."""

import numpy as np
import pytest

from attention_lib import (
    attention_forward,
    causal_mask,
    check_attention_gradients,
    gradient_check,
    numerical_gradient,
    relative_error,
)


def test_relative_error_definition():
    assert relative_error(np.zeros(4), np.zeros(4)) == 0.0
    assert relative_error(np.array([3.0, 4.0]), np.array([3.0, 4.0])) == 0.0
    assert relative_error(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(
        np.sqrt(2) / 2
    )
    assert relative_error(np.array([1e-30]), np.array([-1e-30])) == 1.0  # scale-free


def test_numerical_gradient_of_a_known_function():
    x = np.array([[0.3, -1.2], [2.0, 0.5]])
    grad = numerical_gradient(lambda x: float(np.sum(np.sin(x))), {"x": x}, "x")
    np.testing.assert_allclose(grad, np.cos(x), atol=1e-9)


def test_gradient_check_names_the_wrong_input():
    x, y = np.array([1.0, 2.0]), np.array([-1.0, 0.5])

    def loss(x, y):
        return float(np.sum(x * y))

    report = gradient_check(loss, {"x": x, "y": y}, {"x": y, "y": -x})
    assert not report.passed
    assert report.worst[0] == "y"
    assert report.errors["x"] < 1e-9
    assert "WRONG" in str(report) and "y" in str(report)


def test_check_catches_a_sign_error_in_the_softmax_row_term():
    def forward(Q, K, V, mask=None):
        return attention_forward(Q, K, V, mask, return_cache=True)

    def backward_with_sign_error(grad_output, cache):
        # + rowsum instead of - rowsum in eq. 19.4
        weights = cache.weights
        grad_weights = grad_output @ np.swapaxes(cache.V, -1, -2)
        row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
        grad_scores = weights * (grad_weights + row_dot)
        grad_V = np.swapaxes(weights, -1, -2) @ grad_output
        return grad_scores @ cache.K * cache.scale, grad_scores.T @ cache.Q * cache.scale, grad_V

    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((3, 5, 4))
    good = check_attention_gradients(Q, K, V, causal_mask(5))
    bad = check_attention_gradients(
        Q, K, V, causal_mask(5), forward=forward, backward=backward_with_sign_error
    )
    assert good.passed
    assert not bad.passed and bad.errors["V"] < 1e-8 and bad.errors["Q"] > 1e-3


def test_report_prints_magnitudes_not_raw_numbers():
    rng = np.random.default_rng(0)
    report = check_attention_gradients(*rng.standard_normal((3, 4, 2)))
    text = str(report)
    assert text.startswith("gradient check (passed")
    assert "relative error < 1e-" in text
