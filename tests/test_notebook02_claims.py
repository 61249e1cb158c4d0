"""Every claim notebook 02 (why divide by sqrt(d_k)) makes, checked against attention_lib.

Tolerances are derived from the sample counts, not picked by eye:

* the mean of all n_q * n_k scores of a random score matrix is
  (sum of queries) . (sum of keys) / (n_q n_k), whose variance is d / (n_q n_k);
* the sample variance of n independent dot products s has standard error
  sqrt((E[s^4] - d^2) / n) with E[s^4] = 3 d^2 + 6 d, i.e. d * sqrt((2 + 6/d) / n).

Each check allows 5 standard errors.
"""

import numpy as np
import pytest

from attention_lib import (
    attention_forward,
    attention_scores,
    dot_product_variance,
    masked_softmax,
    random_scores,
    saturation_stats,
    softmax_entropy,
    variance_standard_error,
)

WIDTHS = [1, 4, 16, 64, 256, 1024]
SAMPLES = 10_000  # what the notebook uses
Z = 5.0


@pytest.mark.parametrize("d", WIDTHS)
def test_claim1_unscaled_mean_zero_and_variance_d(d):
    scores = random_scores(d, 64, 64, scaled=False, seed=0)
    assert abs(scores.mean()) <= Z * np.sqrt(d / scores.size)
    variance = dot_product_variance(d, samples=SAMPLES, seed=19)
    assert abs(variance - d) <= Z * variance_standard_error(d, SAMPLES)


@pytest.mark.parametrize("d", [*WIDTHS, 4096])
def test_claim2_scaled_variance_is_one_for_every_width(d):
    # (q . k / sqrt(d)) has variance Var(q . k) / d: the same samples, divided.
    samples = 2_000 if d == 4096 else SAMPLES
    scaled_variance = dot_product_variance(d, samples=samples, seed=19) / d
    assert abs(scaled_variance - 1.0) <= Z * variance_standard_error(d, samples) / d
    # and the score matrix the explorer shows, divided in the library, agrees
    stats = saturation_stats(d, scaled=True)
    assert 0.7 < stats.score_var < 1.3


def test_claim3_unscaled_softmax_saturates_scaled_stays_put():
    widths = [4**i for i in range(7)]  # 1, 4, ..., 4096
    unscaled = [saturation_stats(d, scaled=False) for d in widths]
    scaled = [saturation_stats(d, scaled=True) for d in widths]
    max_weight = [s.max_weight for s in unscaled]
    entropy = [s.entropy for s in unscaled]
    assert all(np.diff(max_weight) > 0) and max_weight[-1] > 0.98
    assert all(np.diff(entropy) < 0) and entropy[-1] < 0.05
    # The gradient is largest at moderate spread; from d_k = 16 on it only shrinks
    # and at 4096 it is a tenth of the scaled layer's.
    jac = [s.jacobian_norm for s in unscaled[2:]]
    assert all(np.diff(jac) < 0) and jac[-1] < 0.1 * scaled[-1].jacobian_norm
    for s in scaled:
        assert 3.5 < s.entropy < np.log(64)
        assert s.max_weight < 0.15
        assert 0.15 < s.jacobian_norm < 0.2


def test_claim4_a_fixed_temperature_cannot_undo_the_growth():
    """A temperature tau tuned for one width is wrong for every other width."""
    tau = 8.0  # right for d_k = 64
    for d in (4, 64, 1024):
        variance = np.var(random_scores(d, 64, 64, scaled=False) / tau)
        assert variance == pytest.approx(d / tau**2, rel=0.15)
    # Only tau = sqrt(d_k), a function of the width, gives unit variance: that is the scale.
    for d in (4, 64, 1024):
        np.testing.assert_allclose(
            random_scores(d, 8, 8, scaled=False) / np.sqrt(d), random_scores(d, 8, 8), rtol=1e-12
        )


def test_claim4_temperature_changes_sharpness_at_a_fixed_width():
    """What a temperature does: at one d_k, smaller tau sharpens, larger tau flattens."""
    scores = random_scores(64, 64, 64)
    entropies = [softmax_entropy(masked_softmax(scores / tau)).mean() for tau in (0.25, 1, 4)]
    assert entropies[0] < entropies[1] < entropies[2]


def test_claim4_the_scale_is_fixed_by_the_width_not_the_data():
    rng = np.random.default_rng(2)
    for d in (1, 64, 4096):
        scales = set()
        for loc in (0.0, 10.0):  # very different data, same width
            Q, K, V = (loc + rng.standard_normal((3, d)) for _ in range(3))
            scales.add(attention_forward(Q, K, V, return_cache=True)[1].scale)
        assert scales == {1.0 / np.sqrt(d)}


def test_pitfall_sqrt_d_model_makes_scores_sqrt_h_too_small_and_weights_flatter():
    from attention_lib import attention_scores, pitfalls

    d_model, heads, T = 512, 8, 32
    d_k = d_model // heads
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((heads, T, d_k)) for _ in range(3))
    _, right = attention_forward(Q, K, V, return_cache=True)
    _, wrong_weights = pitfalls.scale_by_sqrt_d_model(Q, K, V, d_model, return_weights=True)
    right_scores = attention_scores(Q, K)
    wrong_scores = attention_scores(Q, K, scaled=False) / np.sqrt(d_model)
    np.testing.assert_allclose(right_scores / wrong_scores, np.sqrt(heads), rtol=1e-12)
    # the pitfall's weights are the softmax of exactly those too-small scores
    np.testing.assert_allclose(wrong_weights, masked_softmax(wrong_scores), rtol=1e-12)
    assert abs(wrong_scores.var() * heads - right_scores.var()) < 1e-9
    assert softmax_entropy(wrong_weights).mean() > softmax_entropy(right.weights).mean()
    assert wrong_weights.max(axis=-1).mean() < right.weights.max(axis=-1).mean()
    # with one head the bug is invisible
    _, one_head = pitfalls.scale_by_sqrt_d_model(Q, K, V, d_k, return_weights=True)
    np.testing.assert_allclose(one_head, right.weights, rtol=1e-12)


# Claims added with the corrections of issue 13.


def _scaled_pair_scores(d, n, seed):
    """n independent scaled scores q.k / sqrt(d), computed by the library, one 1 x 1 matrix each."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((n, 1, d)), rng.standard_normal((n, 1, d))
    return attention_scores(q, k)[:, 0, 0]


@pytest.mark.parametrize("d", WIDTHS)
def test_scores_scaled_by_attention_scores_have_variance_one(d):
    scores = _scaled_pair_scores(d, SAMPLES, seed=1000 + d)
    assert abs(np.var(scores) - 1.0) <= Z * variance_standard_error(d, SAMPLES) / d


def test_reveal_the_scaled_layers_largest_weight_is_about_a_tenth_not_one_over_64():
    for d in (4, 16, 64, 256, 1024, 4096):
        top = saturation_stats(d, scaled=True).max_weight
        assert 0.09 <= top <= 0.15
        assert top > 5 / 64


def test_tau_equal_to_sqrt_d_gives_variance_one_at_each_width():
    for d in (4, 64, 1024):
        variance = np.var(random_scores(d, 64, 64, scaled=False) / np.sqrt(d))
        assert variance == pytest.approx(1.0, rel=0.15)


def test_check_question_entries_of_variance_four_give_scaled_variance_four():
    d, n = 64, SAMPLES
    rng = np.random.default_rng(3)
    q, k = 2.0 * rng.standard_normal((n, 1, d)), rng.standard_normal((n, 1, d))
    variance = np.var(attention_scores(q, k)[:, 0, 0])
    assert abs(variance - 4.0) <= Z * 4.0 * variance_standard_error(d, n) / d


def test_check_question_dividing_by_d_k_gives_nearly_uniform_rows():
    d = 256
    scores = random_scores(d, 64, 64, scaled=False) / d
    assert np.var(scores) == pytest.approx(1 / d, rel=0.15)
    weights = masked_softmax(scores)
    assert weights.max() < 2 / 64
    assert softmax_entropy(weights).min() > 0.99 * np.log(64)


def test_check_question_a_one_percent_rule_would_fail_a_correct_estimate_often():
    d, n = 64, SAMPLES
    assert 0.013 < variance_standard_error(1024, n) / 1024 < 0.015
    misses_1pc = sum(abs(dot_product_variance(d, n, seed) - d) > 0.01 * d for seed in range(30))
    misses_5se = sum(
        abs(dot_product_variance(d, n, seed) - d) > Z * variance_standard_error(d, n)
        for seed in range(30)
    )
    assert misses_1pc >= 6 and misses_5se == 0


@pytest.mark.parametrize("width", [1, 8, 20])
def test_while_one_chunk_holds_every_sample_the_library_returns_listing_19_2s_estimate(width):
    rng = np.random.default_rng(19)  # listing 19.2, with its defaults: 50,000 samples, seed 19
    Q, K = rng.standard_normal((50_000, width)), rng.standard_normal((50_000, width))
    listing = float(np.var(np.sum(Q * K, axis=1)))
    assert dot_product_variance(width) == pytest.approx(listing, rel=1e-12)
