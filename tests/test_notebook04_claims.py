"""Every claim notebook 04 (the backward pass, chapter 19.3) makes, checked on the library."""

import numpy as np
import pytest

from attention_lib import (
    attention_backward,
    attention_forward,
    causal_mask,
    check_attention_gradients,
    gradient_check,
    masked_softmax,
    numerical_gradient,
    padding_mask,
    softmax_backward,
    valid_from_lengths,
)


@pytest.fixture
def problem():
    """The notebook's setting: T = 4, d_k = d_v = 3, causal mask, loss = sum(G * O)."""
    rng = np.random.default_rng(4)
    Q, K, V, G = (rng.standard_normal((4, 3)) for _ in range(4))  # drawn as the notebook draws them
    mask = causal_mask(4)
    output, cache = attention_forward(Q, K, V, mask, return_cache=True)
    return {"Q": Q, "K": K, "V": V, "G": G, "mask": mask, "O": output, "cache": cache}


def _pieces(p):
    A = p["cache"].weights
    grad_A = p["G"] @ p["V"].T
    grad_S = softmax_backward(A, grad_A)
    return A, grad_A, grad_S


def test_claim1_grad_V_and_grad_A(problem):
    p = problem
    A, grad_A, _ = _pieces(p)
    _, _, grad_V = attention_backward(p["G"], p["cache"])
    np.testing.assert_allclose(grad_V, A.T @ p["G"], rtol=1e-12, atol=1e-14)

    def loss_of_V(V):
        return float(np.sum(p["G"] * (A @ V)))

    def loss_of_A(A):
        return float(np.sum(p["G"] * (A @ p["V"])))

    assert gradient_check(loss_of_V, {"V": p["V"]}, {"V": A.T @ p["G"]}).passed
    assert gradient_check(loss_of_A, {"A": A}, {"A": grad_A}).passed


def test_claim2_grad_S_row_by_row(problem):
    p = problem
    A, grad_A, grad_S = _pieces(p)
    row_dot = np.sum(grad_A * A, axis=-1, keepdims=True)
    np.testing.assert_allclose(grad_S, A * (grad_A - row_dot), rtol=1e-12, atol=1e-15)
    for i in range(A.shape[0]):  # rows do not interact
        np.testing.assert_allclose(softmax_backward(A[i], grad_A[i]), grad_S[i], atol=1e-15)

    S = p["Q"] @ p["K"].T / np.sqrt(3)

    def loss_of_S(S):
        return float(np.sum(p["G"] * (masked_softmax(S, p["mask"]) @ p["V"])))

    assert gradient_check(loss_of_S, {"S": S}, {"S": grad_S}).passed


def test_claim2_one_row_jacobian_vector_product():
    a = masked_softmax(np.array([0.3, -1.2, 2.0, 0.5]))
    grad_a = np.array([1.0, -0.5, 0.25, 2.0])
    J = np.diag(a) - np.outer(a, a)  # J[i, j] = d a_i / d s_j
    np.testing.assert_allclose(J, J.T)
    np.testing.assert_allclose(J.T @ grad_a, softmax_backward(a, grad_a), atol=1e-15)
    numeric_J = np.stack(
        [
            numerical_gradient(lambda s, i=i: float(masked_softmax(s)[i]), {"s": np.log(a)}, "s")
            for i in range(4)
        ]
    )
    np.testing.assert_allclose(numeric_J, J, atol=1e-9)


def test_claim3_masked_positions_get_exactly_zero_score_gradient(problem):
    p = problem
    _, _, grad_S = _pieces(p)
    assert np.all(grad_S[~p["mask"]] == 0.0)
    S = p["Q"] @ p["K"].T / np.sqrt(3)

    def loss_of_S(S):
        return float(np.sum(p["G"] * (masked_softmax(S, p["mask"]) @ p["V"])))

    numeric = numerical_gradient(loss_of_S, {"S": S}, "S")
    assert np.all(numeric[~p["mask"]] == 0.0)  # nudging a blocked score changes nothing


def test_claim3_a_fully_masked_row_gets_zero_gradients(problem):
    p = problem
    mask = p["mask"].copy()
    mask[2] = False
    _, cache = attention_forward(p["Q"], p["K"], p["V"], mask, return_cache=True)
    grad_Q, _, _ = attention_backward(p["G"], cache)
    assert np.all(grad_Q[2] == 0.0)
    assert np.all(np.isfinite(grad_Q))


def test_claim4_grad_Q_and_grad_K(problem):
    p = problem
    _, _, grad_S = _pieces(p)
    grad_Q, grad_K, _ = attention_backward(p["G"], p["cache"])
    np.testing.assert_allclose(grad_Q, grad_S @ p["K"] / np.sqrt(3), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(grad_K, grad_S.T @ p["Q"] / np.sqrt(3), rtol=1e-10, atol=1e-14)

    def loss_of_QK(Q, K):
        return float(np.sum(p["G"] * attention_forward(Q, K, p["V"], p["mask"])))

    report = gradient_check(loss_of_QK, {"Q": p["Q"], "K": p["K"]}, {"Q": grad_Q, "K": grad_K})
    assert report.passed


def test_claim5_full_backward_passes_and_planted_sign_error_is_caught(problem):
    from attention_lib.pitfalls import attention_backward_with_sign_error

    p = problem
    report = check_attention_gradients(p["Q"], p["K"], p["V"], mask=p["mask"])
    assert report.passed and max(report.errors.values()) < 1e-8  # the bound gradcheck states
    planted = check_attention_gradients(
        p["Q"], p["K"], p["V"], mask=p["mask"], backward=attention_backward_with_sign_error
    )
    assert not planted.passed
    assert planted.errors["V"] < planted.tolerance  # V never goes through the softmax
    assert planted.errors["Q"] > 1e-2 and planted.errors["K"] > 1e-2


def test_rowsum_identity_used_by_flashattention_and_flashattention2(problem):
    p = problem
    A, grad_A, _ = _pieces(p)
    np.testing.assert_allclose(
        np.sum(grad_A * A, axis=-1), np.sum(p["G"] * p["O"], axis=-1), rtol=1e-12, atol=1e-14
    )


# Claims added with the corrections of issue 13.


@pytest.mark.parametrize("seed", range(5))
def test_softmax_backward_is_a_vector_jacobian_product_equal_to_jvp_by_symmetry(seed):
    rng = np.random.default_rng(seed)
    a = masked_softmax(rng.standard_normal(6))
    grad_a = rng.standard_normal(6)
    J = np.diag(a) - np.outer(a, a)
    # symmetry measured on the softmax itself: J as built is symmetric whatever a is
    J_numeric = np.stack(
        [
            numerical_gradient(lambda s, j=j: float(masked_softmax(s)[j]), {"s": np.log(a)}, "s")
            for j in range(6)
        ]
    )
    np.testing.assert_allclose(J_numeric, J_numeric.T, atol=1e-8)
    h = 1e-6  # J grad_a measured along grad_a alone, as notebook 04 does
    s = np.log(a)
    J_grad_a = (masked_softmax(s + h * grad_a) - masked_softmax(s - h * grad_a)) / (2 * h)
    np.testing.assert_allclose(J_grad_a, J_numeric.T @ grad_a, atol=1e-8)
    np.testing.assert_allclose(
        softmax_backward(a, grad_a), grad_a @ J, atol=1e-15
    )  # vector-Jacobian
    np.testing.assert_allclose(softmax_backward(a, grad_a), J @ grad_a, atol=1e-15)  # = J grad_a


def test_rows_of_the_score_gradient_sum_to_zero(problem):
    _, _, grad_S = _pieces(problem)
    np.testing.assert_allclose(grad_S.sum(axis=-1), 0.0, atol=1e-15)


def test_query_that_reads_one_key_gets_exactly_zero_gradient(problem):
    # the readable backward computes the row term as eq. 19.4 prints it: exact cancellation
    grad_Q, _, _ = attention_backward(problem["G"], problem["cache"])
    assert np.all(grad_Q[0] == 0.0)


def test_score_gradient_finished_block_by_block_with_the_row_term_up_front(problem):
    p = problem
    A, grad_A, grad_S = _pieces(p)
    D = np.sum(p["G"] * p["O"], axis=-1, keepdims=True)  # T x d_v arrays only
    for block in (1, 2, 3):
        pieces = []
        for start in range(0, 4, block):
            columns = slice(start, start + block)
            pieces.append(A[:, columns] * (p["G"] @ p["V"][columns].T - D))
        np.testing.assert_allclose(np.hstack(pieces), grad_S, rtol=1e-12, atol=1e-15)
    assert grad_A.shape == (4, 4)  # the T x T product itself is still formed, block by block


def test_check_question_a_padding_masked_key_has_zero_weight_and_zero_gradients():
    rng = np.random.default_rng(8)
    B, T, d = 2, 5, 3
    Q, K, V, G = (rng.standard_normal((B, T, d)) for _ in range(4))
    valid = valid_from_lengths(np.array([5, 3]), T)  # example 1: keys 3 and 4 are padding
    _, cache = attention_forward(Q, K, V, padding_mask(valid), return_cache=True)
    _, grad_K, grad_V = attention_backward(G, cache)
    grad_S = softmax_backward(cache.weights, G @ np.swapaxes(V, -1, -2))
    assert np.all(cache.weights[1][:, 3:] == 0.0)
    assert np.all(grad_S[1][:, 3:] == 0.0)
    assert np.all(grad_K[1, 3:] == 0.0) and np.all(grad_V[1, 3:] == 0.0)
    assert np.all(grad_K[1, :3] != 0.0) and np.all(grad_V[0] != 0.0)
