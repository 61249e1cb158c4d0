"""The readable path and the fast path keep one contract, checked against oracles of their own.

Every input here is forced through each path in turn (``attention_path("readable")``
or ``attention_path("fast")``, with tiles of two query rows so that the fast path
really tiles). The oracles belong to neither path: a loop-by-loop float64
reference written below, central finite differences of that reference, and
cases whose answer is known in closed form. That the two paths also agree with
each other to rounding, on these masks and broadcasts and with several tiles per
head, is tests/test_scheduling.py's first test.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from attention_lib import (
    _fast,
    _heads,
    attention,
    attention_backward,
    attention_forward,
    attention_path,
    causal_mask,
    combine_masks,
    padding_mask,
    valid_from_lengths,
)

PATHS = ["readable", "fast"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """Send every call of the test through one path."""
    if request.param == "fast":
        monkeypatch.setattr(_heads, "TILE_BYTES", 2 * 8 * 8)  # two rows of 8 float64 keys
    with attention_path(request.param):
        yield request.param


# ---------------------------------------------------------------- the oracle


def loop_attention(Q, K, V, mask=None):
    """Attention one query at a time in float64 Python arithmetic: weights and output."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, d_k, T_k, d_v = Q.shape[-2], Q.shape[-1], K.shape[-2], V.shape[-1]
    weight_batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    allowed = np.ones((T_q, T_k), bool) if mask is None else mask
    allowed = np.broadcast_to(allowed, weight_batch + (T_q, T_k))
    weights = np.zeros(batch + (T_q, T_k))
    output = np.zeros(batch + (T_q, d_v))
    for b in np.ndindex(*batch):
        q = np.broadcast_to(Q, batch + Q.shape[-2:])[b]
        k = np.broadcast_to(K, batch + K.shape[-2:])[b]
        v = np.broadcast_to(V, batch + V.shape[-2:])[b]
        may_read = np.broadcast_to(allowed, batch + (T_q, T_k))[b]
        for i in range(T_q):
            keys = [j for j in range(T_k) if may_read[i, j]]
            scores = {j: sum(q[i, c] * k[j, c] for c in range(d_k)) / math.sqrt(d_k) for j in keys}
            top = max(scores.values(), default=0.0)
            total = sum(math.exp(s - top) for s in scores.values())
            for j in keys:
                weights[b + (i, j)] = math.exp(scores[j] - top) / total
                for c in range(d_v):
                    output[b + (i, c)] += weights[b + (i, j)] * v[j, c]
    return weights, output


def central_differences(loss, arrays, eps=1e-6):
    """d loss / d array for every array, one entry at a time, in float64."""
    grads = []
    for array in arrays:
        grad = np.zeros_like(array)
        for index in np.ndindex(*array.shape):
            saved = array[index]
            array[index] = saved + eps
            up = loss()
            array[index] = saved - eps
            down = loss()
            array[index] = saved
            grad[index] = (up - down) / (2 * eps)
        grads.append(grad)
    return grads


def inputs(shape_q, shape_k, d_v, seed=0):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=shape_q)
    K = rng.normal(size=shape_k)
    V = rng.normal(size=shape_k[:-1] + (d_v,))
    return Q, K, V


SOME_ROWS_BLOCKED = np.tril(np.ones((5, 5), bool))
SOME_ROWS_BLOCKED[[1, 3]] = False

CASES = {
    "no mask": ((2, 5, 3), (2, 5, 3), 2, None),
    "causal, heads": ((2, 2, 5, 3), (2, 2, 5, 3), 2, causal_mask(5)),
    "causal and padding": (
        (2, 2, 5, 3),
        (2, 2, 5, 3),
        2,
        combine_masks(causal_mask(5), padding_mask(valid_from_lengths([5, 2], 5), heads=True)),
    ),
    "cross attention": ((2, 3, 3), (2, 6, 3), 4, causal_mask(3, 6)),
    "fully masked rows": ((2, 5, 3), (2, 5, 3), 2, SOME_ROWS_BLOCKED),
    "keys shared by the batch": ((3, 5, 3), (5, 3), 2, None),
    # K and V of shape (1, 5, .) read by a batch of two: their gradients sum back to 1.
    "keys stretched from a batch of one": ((2, 5, 4), (1, 5, 4), 3, causal_mask(5)),
    "queries shared by the batch": ((5, 3), (2, 5, 3), 2, causal_mask(5)),
    "values add batch axes": ((5, 3), (5, 3), 2, None),
}


def case_inputs(case, seed=0):
    shape_q, shape_k, d_v, mask = CASES[case]
    Q, K, V = inputs(shape_q, shape_k, d_v, seed)
    if case == "values add batch axes":
        V = np.stack([V, -2 * V])
    return Q, K, V, mask


# ---------------------------------------------------------------- each path against the oracle


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_forward_matches_the_loop_reference(case, dtype, path):
    Q, K, V, mask = case_inputs(case)
    expected_weights, expected_output = loop_attention(Q, K, V, mask)
    arrays = [a.astype(dtype) for a in (Q, K, V)]
    output, cache = attention_forward(*arrays, mask, return_cache=True)
    tolerance = 1e-12 if dtype == np.float64 else 2e-6
    assert output.dtype == cache.weights.dtype == dtype
    np.testing.assert_allclose(output, expected_output, rtol=tolerance, atol=tolerance)
    weights = np.broadcast_to(cache.weights, expected_weights.shape)
    np.testing.assert_allclose(weights, expected_weights, rtol=tolerance, atol=tolerance)
    # Without a cache the fast path works in tile buffers; the output stays the same.
    np.testing.assert_allclose(attention_forward(*arrays, mask), output, rtol=tolerance)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradients_match_central_differences_of_the_loop_reference(case, dtype, path):
    Q, K, V, mask = case_inputs(case, seed=1)
    upstream = np.random.default_rng(2).normal(size=loop_attention(Q, K, V, mask)[1].shape)
    expected = central_differences(
        lambda: float(np.sum(upstream * loop_attention(Q, K, V, mask)[1])), (Q, K, V)
    )
    arrays = [a.astype(dtype) for a in (Q, K, V)]
    _, cache = attention_forward(*arrays, mask, return_cache=True)
    grads = attention_backward(upstream.astype(dtype), cache)
    tolerance = 1e-7 if dtype == np.float64 else 1e-4
    for name, got, want, array in zip("QKV", grads, expected, (Q, K, V), strict=True):
        assert got.shape == array.shape and got.dtype == dtype, name
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=name)


# ---------------------------------------------------------------- closed-form cases


def test_one_key_is_read_with_weight_one_and_nothing_flows_to_queries_or_keys(path):
    Q, K, V = inputs((2, 4, 3), (2, 1, 3), 5)
    upstream = np.random.default_rng(1).normal(size=(2, 4, 5))
    output, cache = attention_forward(Q, K, V, return_cache=True)
    np.testing.assert_array_equal(cache.weights, np.ones((2, 4, 1)))
    np.testing.assert_allclose(output, np.broadcast_to(V, (2, 4, 5)), rtol=1e-15)
    grad_Q, grad_K, grad_V = attention_backward(upstream, cache)
    # A softmax over one score is 1 whatever the score: Q and K cannot move the loss.
    np.testing.assert_allclose(grad_Q, 0.0, atol=1e-15)
    np.testing.assert_allclose(grad_K, 0.0, atol=1e-15)
    np.testing.assert_allclose(grad_V, upstream.sum(axis=1, keepdims=True), rtol=1e-14)


def test_equal_keys_give_uniform_weights_and_the_mean_of_the_values(path):
    rng = np.random.default_rng(5)
    Q = rng.normal(size=(3, 4))
    K = np.tile(rng.normal(size=(1, 4)), (6, 1))  # six copies of one key
    V = rng.normal(size=(6, 2))
    upstream = rng.normal(size=(3, 2))
    output, cache = attention_forward(Q, K, V, return_cache=True)
    np.testing.assert_allclose(cache.weights, 1 / 6, rtol=1e-15)
    np.testing.assert_allclose(output, np.tile(V.mean(axis=0), (3, 1)), rtol=1e-14)
    grad_Q, _, grad_V = attention_backward(upstream, cache)
    # Moving a query changes every score by the same amount: the weights stay uniform.
    np.testing.assert_allclose(grad_Q, 0.0, atol=1e-15)
    np.testing.assert_allclose(grad_V, np.tile(upstream.sum(axis=0) / 6, (6, 1)), rtol=1e-14)


def test_two_keys_follow_the_logistic_function(path):
    # Scores s and 0 give weights sigmoid(s) and 1 - sigmoid(s); d output / d s is
    # sigmoid'(s) (v0 - v1), and s = q . k0 / sqrt(2) moves with q by k0 / sqrt(2).
    q = np.array([[0.8, -0.3]])
    K = np.array([[1.5, 0.5], [0.0, 0.0]])
    V = np.array([[2.0], [-1.0]])
    s = float(q[0] @ K[0]) / math.sqrt(2)
    sigmoid = 1 / (1 + math.exp(-s))
    output, cache = attention_forward(q, K, V, return_cache=True)
    np.testing.assert_allclose(output, [[2.0 * sigmoid - (1 - sigmoid)]], rtol=1e-15)
    grad_Q, _, _ = attention_backward(np.ones((1, 1)), cache)
    expected = sigmoid * (1 - sigmoid) * 3.0 * K[0] / math.sqrt(2)
    np.testing.assert_allclose(grad_Q, [expected], rtol=1e-14)


# ---------------------------------------------------------------- which path runs


def test_student_sized_inputs_run_the_readable_path(monkeypatch):
    def refuse(*args):
        raise AssertionError("the fast path ran")

    monkeypatch.setattr(_fast, "attention_forward", refuse)
    monkeypatch.setattr(_fast, "attention_backward", refuse)
    # The largest notebook-like input: 8 heads of 256 x 256 float32 weights, 2 MB.
    Q, K, V = (a.astype(np.float32) for a in inputs((8, 256, 16), (8, 256, 16), 16))
    output, cache = attention_forward(Q, K, V, causal_mask(256), return_cache=True)
    attention_backward(np.ones_like(output), cache)


@pytest.fixture
def fast_calls(monkeypatch):
    """The names of the fast path's passes, in the order they run."""
    calls = []

    def record(name, function):
        def spy(*args):
            calls.append(name)
            return function(*args)

        return spy

    monkeypatch.setattr(_fast, "attention_forward", record("forward", _fast.attention_forward))
    monkeypatch.setattr(_fast, "attention_backward", record("backward", _fast.attention_backward))
    return calls


def forward_and_backward(Q, K, V):
    output, cache = attention_forward(Q, K, V, return_cache=True)
    attention_backward(np.ones_like(output), cache)


def test_the_fast_path_takes_over_at_the_threshold(fast_calls):
    threshold_rows = attention.FAST_PATH_MIN_BYTES // (512 * 8)  # float64 weights, T_k = 512
    Q, K, V = inputs((threshold_rows - 1, 2), (512, 2), 1)
    forward_and_backward(Q, K, V)
    assert fast_calls == []
    Q = np.concatenate([Q, Q[:1]])  # one more query row: exactly the threshold
    forward_and_backward(Q, K, V)
    assert fast_calls == ["forward", "backward"]


def test_attention_path_forces_one_path_in_its_block_and_only_there(fast_calls):
    tiny = inputs((3, 2), (4, 2), 1)
    large = inputs((attention.FAST_PATH_MIN_BYTES // (512 * 8), 2), (512, 2), 1)
    with attention_path("fast"):
        forward_and_backward(*tiny)
        with attention_path("readable"):  # blocks nest
            forward_and_backward(*large)
        assert fast_calls == ["forward", "backward"]
        forward_and_backward(*tiny)  # the outer block's choice is back
    assert fast_calls == ["forward", "backward"] * 2
    forward_and_backward(*tiny)  # outside every block: "auto" again
    with attention_path("auto"):
        forward_and_backward(*large)
    assert fast_calls == ["forward", "backward"] * 3


def test_attention_path_is_undone_by_an_exception_and_refuses_unknown_paths(fast_calls):
    with pytest.raises(RuntimeError, match="inside"), attention_path("fast"):
        raise RuntimeError("inside the block")
    forward_and_backward(*inputs((3, 2), (4, 2), 1))
    assert fast_calls == []
    for wrong in ("slow", "Fast", None, 0):
        with pytest.raises(ValueError, match=r"one of 'auto', 'readable', 'fast'; got"):
            with attention_path(wrong):
                pass


# ---------------------------------------------------------------- no queries


@pytest.mark.parametrize("mask", [None, np.ones((0, 5), bool)], ids=["no mask", "mask"])
@pytest.mark.parametrize("return_cache", [False, True])
def test_no_queries_give_an_empty_output_and_empty_gradients(path, return_cache, mask):
    Q, K, V = inputs((2, 0, 3), (2, 5, 3), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = attention_forward(Q, K, V, mask, return_cache=return_cache)
        output = result[0] if return_cache else result
        assert output.shape == (2, 0, 4)
        if return_cache:
            grad_Q, grad_K, grad_V = attention_backward(np.ones((2, 0, 4)), result[1])
            assert grad_Q.shape == (2, 0, 3)
            for grad, array in ((grad_K, K), (grad_V, V)):  # no query reads them
                np.testing.assert_array_equal(grad, np.zeros_like(array))


def test_the_loop_reference_itself_gives_rows_of_one_and_empty_rows_of_zero():
    Q, K, V, mask = case_inputs("fully masked rows")
    weights, output = loop_attention(Q, K, V, mask)
    assert not weights[:, [1, 3]].any() and not output[:, [1, 3]].any()
    row_sums = np.delete(weights, [1, 3], axis=1).sum(axis=-1)
    np.testing.assert_allclose(row_sums, 1.0, rtol=1e-15)
