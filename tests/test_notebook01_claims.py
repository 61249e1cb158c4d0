"""Every claim notebook 01 (the soft lookup, chapter 19.1) makes, tested on attention_lib."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_lib import attention_forward, attention_scores, masked_softmax
from attention_lib.widgets.soft_lookup import example_cards, query_from_polar

PROPERTY = settings(deadline=None, max_examples=40)


def _qkv(seed, t_q=4, t_k=6, d_k=8, d_v=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(t_q, d_k)), rng.normal(size=(t_k, d_k)), rng.normal(size=(t_k, d_v))


def _weights(Q, K, V, mask=None):
    return attention_forward(Q, K, V, mask, return_cache=True)[1].weights


def test_hand_sized_example_step_by_step_equals_attention_forward():
    keys, values, _ = example_cards()
    query = np.array([[1.0, 0.0]])
    scores = attention_scores(query, keys)
    np.testing.assert_allclose(scores, [[2.0, 1.5, -1.0]] / np.sqrt(2))
    weights = masked_softmax(scores)
    np.testing.assert_allclose(weights @ values, attention_forward(query, keys, values))


@PROPERTY
@given(st.integers(0, 10_000), st.integers(1, 6), st.integers(1, 7))
def test_claim1_rows_of_the_weights_sum_to_one(seed, t_q, t_k):
    Q, K, V = _qkv(seed, t_q, t_k)
    np.testing.assert_allclose(_weights(Q, K, V).sum(axis=-1), 1.0, rtol=1e-12)


@PROPERTY
@given(st.integers(0, 10_000))
def test_claim2_each_output_row_is_a_convex_combination_of_the_values(seed):
    Q, K, V = _qkv(seed, d_v=2)
    output, cache = attention_forward(Q, K, V, return_cache=True)
    assert np.all(cache.weights >= 0)
    np.testing.assert_allclose(output, cache.weights @ V)
    # so every coordinate lies between the values' smallest and largest
    assert np.all(output >= V.min(axis=0) - 1e-12) and np.all(output <= V.max(axis=0) + 1e-12)


def test_claim2_in_the_plane_the_output_lies_inside_the_triangle_of_the_values():
    keys, values, _ = example_cards()
    for angle in range(-180, 180, 10):
        q = query_from_polar(angle, 2.5)[None]
        out, cache = attention_forward(q, keys, values, return_cache=True)
        # barycentric coordinates of the output in the triangle = the weights, all > 0
        system = np.vstack([values.T, np.ones(3)])
        coords = np.linalg.solve(system, np.append(out[0], 1.0))
        np.testing.assert_allclose(coords, cache.weights[0], atol=1e-10)
        assert np.all(coords > 0)


@PROPERTY
@given(st.integers(0, 10_000))
def test_claim3_every_unmasked_key_gets_a_positive_weight(seed):
    Q, K, V = _qkv(seed)
    assert np.all(_weights(Q, K, V) > 0)
    mask = np.random.default_rng(seed).random((4, 6)) < 0.7
    weights = _weights(Q, K, V, mask)
    assert np.all(weights[mask] > 0) and np.all(weights[~mask] == 0)


def test_claim3_a_key_far_from_the_query_still_gets_a_positive_weight():
    keys, values, _ = example_cards()
    q = -keys[0][None] * 2.0  # pointing away from "cat"
    weights = _weights(q, keys, values)[0]
    assert 0 < weights[0] < 0.01


def test_claim4_equal_scores_give_the_plain_average_of_the_values():
    keys, values, _ = example_cards()
    zero_query = np.zeros((1, 2))  # every score is 0
    np.testing.assert_allclose(attention_forward(zero_query, keys, values), [values.mean(axis=0)])
    Q, _, V = _qkv(3)
    same_keys = np.tile(np.random.default_rng(4).normal(size=(1, 8)), (6, 1))
    np.testing.assert_allclose(attention_forward(Q, same_keys, V), np.tile(V.mean(axis=0), (4, 1)))


def test_claim5_values_change_the_output_never_the_weights():
    Q, K, V = _qkv(5)
    V2 = V + np.random.default_rng(6).normal(size=V.shape)
    out1, cache1 = attention_forward(Q, K, V, return_cache=True)
    out2, cache2 = attention_forward(Q, K, V2, return_cache=True)
    np.testing.assert_array_equal(cache1.weights, cache2.weights)
    assert not np.allclose(out1, out2)


def test_claim5_queries_and_keys_change_the_weights():
    Q, K, V = _qkv(7)
    base = _weights(Q, K, V)
    Q2, K2 = Q.copy(), K.copy()
    Q2[0] += 0.5
    K2[2] += 0.5
    assert not np.allclose(_weights(Q2, K, V)[0], base[0])
    np.testing.assert_array_equal(_weights(Q2, K, V)[1:], base[1:])  # only query 0's row
    assert not np.allclose(_weights(Q, K2, V), base)


@PROPERTY
@given(st.integers(0, 10_000), st.permutations(range(6)))
def test_claim6_permuting_key_value_rows_together_leaves_the_output_unchanged(seed, perm):
    Q, K, V = _qkv(seed)
    perm = list(perm)
    out, cache = attention_forward(Q, K, V, return_cache=True)
    out_p, cache_p = attention_forward(Q, K[perm], V[perm], return_cache=True)
    np.testing.assert_allclose(out_p, out, atol=1e-12)
    np.testing.assert_allclose(cache_p.weights, cache.weights[:, perm])  # weights move along


def test_claim6_without_positions_order_is_invisible_with_positions_it_is_not():
    Q, K, V = _qkv(8)
    swap = [1, 0, 2, 3, 4, 5]
    # no positional information: swapping tokens 0 and 1 changes nothing
    np.testing.assert_allclose(attention_forward(Q, K[swap], V[swap]), attention_forward(Q, K, V))
    # positions added to the keys: swapping the tokens (positions stay put) changes the output
    positions = np.random.default_rng(9).normal(size=K.shape)
    with_pos = attention_forward(Q, K + positions, V)
    swapped = attention_forward(Q, K[swap] + positions, V[swap])
    assert not np.allclose(with_pos, swapped)


# Claims added with the corrections of issue 13.


@PROPERTY
@given(st.integers(0, 10_000), st.integers(2, 16))
def test_for_unit_vectors_the_dot_product_is_minus_half_the_squared_distance_plus_one(seed, d):
    rng = np.random.default_rng(seed)
    q, keys = rng.normal(size=(1, d)), rng.normal(size=(9, d))
    q /= np.linalg.norm(q)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    dots = (keys @ q[0]).astype(float)
    closeness = -0.5 * ((q - keys) ** 2).sum(axis=1)
    np.testing.assert_allclose(dots - 1.0, closeness, atol=1e-12)
    assert list(np.argsort(-dots)) == list(np.argsort(-closeness))
    # softmax ignores a shift of the whole row: the same weights from either score
    np.testing.assert_allclose(
        masked_softmax(attention_scores(q, keys)),
        masked_softmax(closeness[None] / np.sqrt(d)),
        atol=1e-12,
    )


def test_for_keys_of_other_lengths_dot_product_and_distance_disagree():
    q = np.array([[1.0, 0.0]])
    near, long = np.array([1.0, 0.0]), np.array([3.0, 0.0])  # same direction, lengths 1 and 3
    keys = np.stack([near, long])
    assert np.argmax(attention_scores(q, keys)[0]) == 1  # the longer key scores higher
    assert np.argmin(((q - keys) ** 2).sum(axis=1)) == 0  # the unit key is nearer


@PROPERTY
@given(st.integers(0, 10_000), st.integers(0, 5))
def test_moving_one_key_changes_every_querys_row_of_weights(seed, key):
    Q, K, V = _qkv(seed)
    moved = K.copy()
    moved[key] += 0.5
    before, after = _weights(Q, K, V), _weights(Q, moved, V)
    # A changed score of key j moves every weight of row i unless q_i is orthogonal to
    # the shift, which has probability 0 for random queries.
    for i in range(Q.shape[0]):
        assert not np.allclose(after[i], before[i])


def test_a_longer_query_hardens_the_weights_and_shrinks_the_softmax_jacobian():
    keys, _, _ = example_cards()
    norms, top = [], []
    for length in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0):
        scores = keys @ query_from_polar(0.0, length) / np.sqrt(2)
        a = np.exp(scores - scores.max())
        a /= a.sum()
        norms.append(np.linalg.norm(np.diag(a) - np.outer(a, a)))
        top.append(a[0])
    assert np.all(np.diff(top) > 0) and top[-1] > 0.99
    assert np.all(np.diff(norms) < 0) and norms[-1] < 0.02 * norms[0]


def test_check_question_doubling_the_values_doubles_the_output_not_the_weights():
    Q, K, V = _qkv(3)
    np.testing.assert_array_equal(_weights(Q, K, 2 * V), _weights(Q, K, V))
    np.testing.assert_allclose(attention_forward(Q, K, 2 * V), 2 * attention_forward(Q, K, V))


def test_check_question_identical_keys_always_get_identical_weights():
    Q, K, V = _qkv(5)
    K[3] = K[1]
    weights = _weights(Q, K, V)
    np.testing.assert_array_equal(weights[:, 3], weights[:, 1])
