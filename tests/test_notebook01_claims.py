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
