"""The traced online softmax agrees with the dense softmax after every block."""

import numpy as np
import pytest

from attention_lib import attention_forward, masked_softmax, online_softmax_trace


@pytest.mark.parametrize("block_size", [1, 3, 4, 7, 12, 50])
def test_each_partial_output_is_the_softmax_over_the_keys_seen(block_size):
    rng = np.random.default_rng(block_size)
    scores = rng.normal(scale=3.0, size=12)
    values = rng.normal(size=(12, 5))
    trace = online_softmax_trace(scores, values, block_size)
    for i, start in enumerate(trace.block_starts):
        seen = min(start + block_size, 12)
        expected = masked_softmax(scores[None, :seen])[0] @ values[:seen]
        np.testing.assert_allclose(trace.partial_output[i], expected, rtol=1e-12, atol=1e-14)
        assert trace.running_max[i] == scores[:seen].max()
        np.testing.assert_allclose(
            trace.running_sum[i], np.exp(scores[:seen] - scores[:seen].max()).sum(), rtol=1e-13
        )


def test_last_partial_output_equals_attention_forward():
    rng = np.random.default_rng(0)
    q, keys, values = rng.normal(size=(1, 4)), rng.normal(size=(10, 4)), rng.normal(size=(10, 3))
    scores = (q @ keys.T)[0] / 2.0
    trace = online_softmax_trace(scores, values, 4)
    np.testing.assert_allclose(
        trace.partial_output[-1], attention_forward(q, keys, values)[0], rtol=1e-12
    )


def test_rescale_is_below_one_exactly_when_the_max_grows():
    # blocks [5, 0], [1, 2], [9, 3]: only the third brings a larger score
    trace = online_softmax_trace([5.0, 0.0, 1.0, 2.0, 9.0, 3.0], np.ones((6, 1)), 2)
    np.testing.assert_array_equal(trace.running_max, [5.0, 5.0, 9.0])
    np.testing.assert_array_equal(trace.rescale[:2], [1.0, 1.0])
    assert trace.rescale[2] == pytest.approx(np.exp(-4.0))
    np.testing.assert_allclose(trace.partial_output, np.ones((3, 1)))


def test_huge_scores_do_not_overflow():
    trace = online_softmax_trace([1e4, 2e4, 0.0], np.eye(3), 1)
    assert np.all(np.isfinite(trace.partial_output))
    np.testing.assert_allclose(trace.partial_output[-1], [0.0, 1.0, 0.0])


@pytest.mark.parametrize(
    ("scores", "values", "block_size", "error", "words"),
    [
        ([[1.0, 2.0]], np.ones((2, 1)), 1, ValueError, "scores_row"),
        ([], np.ones((0, 1)), 1, ValueError, "scores_row"),
        ([1.0, 2.0], np.ones((3, 1)), 1, ValueError, "values"),
        ([1.0, np.nan], np.ones((2, 1)), 1, ValueError, "scores_row"),
        ([1.0, 2.0], np.ones((2, 1)), 0, ValueError, "block_size"),
        ([1.0, 2.0], np.ones((2, 1)), 1.5, TypeError, "block_size"),
    ],
)
def test_bad_input_names_the_argument(scores, values, block_size, error, words):
    with pytest.raises(error, match=words):
        online_softmax_trace(scores, values, block_size)
