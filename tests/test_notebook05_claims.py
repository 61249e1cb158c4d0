"""Every claim notebook 05 (self- and cross-attention, chapter 19.4) makes, checked."""

import numpy as np
import pytest

from attention_lib import attention_forward, causal_mask, padding_mask, valid_from_lengths
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


def test_claim3_d_v_sets_the_output_width_and_d_k_does_not():
    for d_v in range(1, sc.MAX_WIDTH + 1):
        shapes = {sc.update(T_q=4, T_k=6, d_k=d_k, d_v=d_v).output.shape for d_k in (1, 4, 8)}
        assert shapes == {(4, d_v)}
    narrow, wide = sc.update(d_k=1), sc.update(d_k=8)
    assert narrow.scores.shape == wide.scores.shape  # d_k is summed away in the scores
    assert not np.allclose(narrow.weights, wide.weights)  # ...but it changes what they are


def test_claim2_same_function_only_the_source_of_K_and_V_differs():
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


# Claims added with the corrections of issue 13.

TRANSLATION = {"le": "the", "chat": "cat", "noir": "black", "dort": "sleeps", "sur": "on"}


def _self_weights(W_k, T=6, d_k=4, d_v=3):
    X = sc.token_vectors(sc.DECODER_TOKENS[:T])
    W = sc.projections(d_k, d_v)
    _, cache = attention_forward(X @ W.W_q, X @ W_k, X @ W.W_v, causal_mask(T), return_cache=True)
    return cache.weights


def test_the_self_attention_diagonal_comes_from_W_k_close_to_W_q():
    even_split = np.mean([1 / (i + 1) for i in range(1, 6)])
    demo = np.diag(_self_weights(sc.projections(4, 3).W_k))[1:].mean()
    independent = [
        np.diag(_self_weights(rng.standard_normal((sc.D_MODEL, 4)) / np.sqrt(sc.D_MODEL)))[
            1:
        ].mean()
        for rng in map(np.random.default_rng, range(1000, 1200))
    ]
    # an independent W_k gives, on average, what an even split over the readable keys gives,
    # and not one of 200 draws reaches the demo's diagonal
    assert np.mean(independent) == pytest.approx(even_split, abs=0.05)
    assert demo > 2 * even_split and demo > max(independent)


def test_in_this_demo_more_scoring_directions_put_more_weight_on_the_translation():
    decoder, encoder = sc.DECODER_TOKENS[:6], sc.ENCODER_TOKENS[:8]
    shares = []
    for d_k in range(1, sc.MAX_WIDTH + 1):
        weights = sc.update(6, 8, d_k, 3, mode="cross").weights
        per_word = [
            weights[i, [j for j, word in enumerate(encoder) if word == TRANSLATION[token]]].sum()
            for i, token in enumerate(decoder)
            if token in TRANSLATION
        ]
        shares.append(np.mean(per_word))
    assert np.all(np.diff(shares) > 0)
    assert shares[0] == pytest.approx(0.17, abs=0.005) and shares[-1] == pytest.approx(
        0.73, abs=0.005
    )


def test_encoder_side_padding_blocks_padded_source_keys_for_every_decoder_query():
    W = sc.projections(4, 3)
    X_dec = sc.token_vectors(sc.DECODER_TOKENS[:6])
    X_enc = sc.token_vectors(sc.ENCODER_TOKENS[:8])
    X_src = np.stack([X_enc, X_enc])
    X_src[1, 5:] = np.random.default_rng(9).standard_normal((3, sc.D_MODEL))
    mask = padding_mask(valid_from_lengths(np.array([8, 5]), 8))
    assert mask.shape == (2, 1, 8)
    Q = np.stack([X_dec, X_dec]) @ W.W_q
    out, cache = attention_forward(Q, X_src @ W.W_k, X_src @ W.W_v, mask, return_cache=True)
    assert np.all(cache.weights[1][:, 5:] == 0.0) and np.all(cache.weights[0] > 0.0)
    alone = attention_forward(X_dec @ W.W_q, X_enc[:5] @ W.W_k, X_enc[:5] @ W.W_v)
    np.testing.assert_allclose(out[1], alone, rtol=1e-12, atol=1e-15)
    X_src[1, 5:] *= -7.0  # other padding vectors: nothing may move
    moved = attention_forward(Q, X_src @ W.W_k, X_src @ W.W_v, mask)
    np.testing.assert_array_equal(moved, out)


def test_encoder_self_attention_needs_the_padding_mask_that_causal_decoding_does_without():
    W = sc.projections(4, 3)
    X = sc.token_vectors(sc.ENCODER_TOKENS[:8])
    X[5:] = np.random.default_rng(9).standard_normal((3, sc.D_MODEL))  # padding after 5 tokens
    Q, K, V = X @ W.W_q, X @ W.W_k, X @ W.W_v
    mask = padding_mask(valid_from_lengths(np.array([5]), 8))[0]  # (1, 8) against (8, 8)
    _, causal = attention_forward(Q, K, V, causal_mask(8), return_cache=True)
    _, bidirectional = attention_forward(Q, K, V, return_cache=True)
    out, masked = attention_forward(Q, K, V, mask, return_cache=True)
    assert np.all(causal.weights[:5, 5:] == 0.0)  # the real tokens' future holds the padding
    assert np.all(bidirectional.weights[:5, 5:] > 0.0)
    assert np.all(masked.weights[:, 5:] == 0.0) and masked.weights.shape == (8, 8)
    np.testing.assert_allclose(out[:5], attention_forward(Q[:5], K[:5], V[:5]), rtol=1e-12)


def test_a_causal_mask_alone_lets_real_tokens_read_left_padding():
    W = sc.projections(4, 3)
    X = sc.token_vectors(sc.ENCODER_TOKENS[:8])
    X[:3] = np.random.default_rng(9).standard_normal((3, sc.D_MODEL))  # 3 pads, then 5 tokens
    _, causal = attention_forward(
        X @ W.W_q, X @ W.W_k, X @ W.W_v, causal_mask(8), return_cache=True
    )
    assert np.all(causal.weights[3:, :3] > 0.0)  # every real token reads every pad
    valid = valid_from_lengths(np.array([8]), 8) & (np.arange(8) >= 3)
    both = causal_mask(8) & padding_mask(valid)[0]
    _, masked = attention_forward(X @ W.W_q, X @ W.W_k, X @ W.W_v, both, return_cache=True)
    assert np.all(masked.weights[3:, :3] == 0.0)


def test_check_question_cross_attention_shapes():
    rng = np.random.default_rng(0)
    Q, K, V = (
        rng.standard_normal((10, 16)),
        rng.standard_normal((7, 16)),
        rng.standard_normal((7, 32)),
    )
    out, cache = attention_forward(Q, K, V, return_cache=True)
    assert cache.weights.shape == (10, 7) and out.shape == (10, 32)
