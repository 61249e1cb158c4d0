"""Property-based tests over random shapes, values and masks (hypothesis)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attention_lib import attention_forward

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def attention_inputs(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    t_q, t_k = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    d_k, d_v = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    Q = draw(arrays(np.float64, (*batch, t_q, d_k), elements=finite))
    K = draw(arrays(np.float64, (*batch, t_k, d_k), elements=finite))
    V = draw(arrays(np.float64, (*batch, t_k, d_v), elements=finite))
    mask = draw(st.none() | arrays(np.bool_, (*batch, t_q, t_k)))
    return Q, K, V, mask


@given(attention_inputs())
def test_weights_are_a_distribution_over_allowed_keys(inputs):
    Q, K, V, mask = inputs
    _, cache = attention_forward(Q, K, V, mask, return_cache=True)
    weights = cache.weights
    allowed = np.ones(weights.shape, bool) if mask is None else mask
    assert np.all(weights >= 0.0)
    assert np.all(weights[~allowed] == 0.0)
    row_sums = weights.sum(axis=-1)
    expected = np.where(allowed.any(axis=-1), 1.0, 0.0)
    np.testing.assert_allclose(row_sums, expected, atol=1e-12)


@given(attention_inputs())
def test_each_output_row_lies_in_the_hull_of_its_allowed_values(inputs):
    Q, K, V, mask = inputs
    output = attention_forward(Q, K, V, mask)
    allowed = np.ones(output.shape[:-1] + K.shape[-2:-1], bool) if mask is None else mask
    # per coordinate, a convex combination lies between the smallest and largest allowed value
    values = np.broadcast_to(V[..., None, :, :], allowed.shape + V.shape[-1:])
    low = np.where(allowed[..., None], values, np.inf).min(axis=-2)
    high = np.where(allowed[..., None], values, -np.inf).max(axis=-2)
    readable = allowed.any(axis=-1)
    tol = 1e-9 * (1 + np.abs(V).max())
    assert np.all(output[readable] >= low[readable] - tol)
    assert np.all(output[readable] <= high[readable] + tol)
    assert np.all(output[~readable] == 0.0)


@given(attention_inputs(), st.randoms(use_true_random=False))
def test_permuting_key_value_rows_together_leaves_the_output_unchanged(inputs, random):
    Q, K, V, mask = inputs
    order = list(range(K.shape[-2]))
    random.shuffle(order)
    permuted_mask = None if mask is None else mask[..., order]
    np.testing.assert_allclose(
        attention_forward(Q, K[..., order, :], V[..., order, :], permuted_mask),
        attention_forward(Q, K, V, mask),
        rtol=1e-10,
        atol=1e-10 * (1 + np.abs(V).max()),
    )
