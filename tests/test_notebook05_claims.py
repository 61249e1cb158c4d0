"""Every claim notebook 05 (self- and cross-attention, chapter 19.4) makes, checked."""

import numpy as np
import pytest

from attention_lib import attention_forward, causal_mask
from attention_lib.widgets import self_cross as sc


@pytest.mark.parametrize("T", [1, 4, sc.MAX_LENGTH])
def test_claim1_self_attention_is_square_and_takes_a_causal_mask(T):
    state = sc.update(T_q=T, mode="self", causal=True)
    assert state.weights.shape == (T, T)
    assert np.all(state.weights[~causal_mask(T)] == 0.0)
    np.testing.assert_allclose(state.weights.sum(axis=-1), 1.0)


@pytest.mark.parametrize(("T_q", "T_k"), [(3, 7), (6, 2), (1, 10)])
def test_claim1_cross_attention_is_T_q_by_T_k(T_q, T_k):
    state = sc.update(T_q=T_q, T_k=T_k, mode="cross")
    assert state.weights.shape == (T_q, T_k)


def test_claim2_d_v_sets_the_output_width_and_d_k_does_not():
    for d_v in range(1, sc.MAX_WIDTH + 1):
        shapes = {sc.update(T_q=4, T_k=6, d_k=d_k, d_v=d_v).output.shape for d_k in (1, 4, 8)}
        assert shapes == {(4, d_v)}
    narrow, wide = sc.update(d_k=1), sc.update(d_k=8)
    assert narrow.scores.shape == wide.scores.shape  # d_k is summed away in the scores
    assert not np.allclose(narrow.weights, wide.weights)  # ...but it changes what they are


def test_claim3_same_function_only_the_source_of_K_and_V_differs():
    W = sc.projections(4, 3)
    X_dec = sc.token_vectors(sc.DECODER_TOKENS[:5])
    X_enc = sc.token_vectors(sc.ENCODER_TOKENS[:7])
    cross = sc.update(T_q=5, T_k=7, d_k=4, d_v=3, mode="cross")
    self_ = sc.update(T_q=5, d_k=4, d_v=3, mode="self")
    np.testing.assert_array_equal(
        cross.output, attention_forward(X_dec @ W.W_q, X_enc @ W.W_k, X_enc @ W.W_v)
    )
    np.testing.assert_array_equal(
        self_.output, attention_forward(X_dec @ W.W_q, X_dec @ W.W_k, X_dec @ W.W_v)
    )
    # same queries, same projections: only the keys and values changed
    np.testing.assert_array_equal(cross.Q, self_.Q)
    for name in ("W_q", "W_k", "W_v"):
        np.testing.assert_array_equal(getattr(cross, name), getattr(self_, name))
