"""Var(q . k) = d_k, the effect of scaling, and the saturation measures."""

import tracemalloc

import numpy as np
import pytest

from attention_lib import (
    dot_product_variance,
    masked_softmax,
    random_scores,
    saturation_stats,
    softmax_entropy,
    softmax_jacobian_norm,
    variance_standard_error,
)


@pytest.mark.parametrize("width", [1, 4, 16, 64, 256])
def test_dot_product_variance_is_close_to_width(width):
    samples = 20_000
    estimate = dot_product_variance(width, samples=samples, seed=width)
    assert abs(estimate - width) < 5 * variance_standard_error(width, samples)


def test_dot_product_variance_is_reproducible_and_seeded():
    assert dot_product_variance(32, samples=5000, seed=3) == dot_product_variance(
        32, samples=5000, seed=3
    )
    assert dot_product_variance(32, samples=5000, seed=3) != dot_product_variance(
        32, samples=5000, seed=4
    )


def test_chunked_variance_equals_np_var_of_the_same_draws():
    # 3000 rows at width 1024 are three chunks: the merged statistic must equal
    # np.var of the very same dot products, drawn chunk by chunk.
    width, samples, seed = 1024, 3000, 7
    rng = np.random.default_rng(seed)
    rows = (1 << 20) // width
    dots = []
    for start in range(0, samples, rows):
        n = min(rows, samples - start)
        q, k = rng.standard_normal((n, width)), rng.standard_normal((n, width))
        dots.append(np.sum(q * k, axis=1))
    expected = np.var(np.concatenate(dots))
    assert dot_product_variance(width, samples, seed) == pytest.approx(expected, rel=1e-12)


def test_memory_stays_bounded_at_width_4096():
    tracemalloc.start()
    dot_product_variance(4096, samples=2_000, seed=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 2**20  # the all-at-once version would need 131 MB here


@pytest.mark.parametrize("d_k", [1, 16, 256, 4096])
def test_scaled_scores_have_unit_variance(d_k):
    # Scores share their query and key vectors, so the estimate is noisier than
    # n_queries * n_keys independent samples would be: 512 x 512 keeps it within 0.15.
    scores = random_scores(d_k, 512, 512, scaled=True, seed=1)
    assert abs(scores.mean()) < 0.1
    assert scores.var() == pytest.approx(1.0, abs=0.15)
    unscaled = random_scores(d_k, 512, 512, scaled=False, seed=1)
    np.testing.assert_allclose(unscaled, scores * np.sqrt(d_k))


def test_unscaled_softmax_saturates_and_scaled_does_not():
    widths = [4, 64, 1024]
    unscaled = [saturation_stats(d, scaled=False) for d in widths]
    scaled = [saturation_stats(d, scaled=True) for d in widths]
    assert [s.max_weight for s in unscaled] == sorted(s.max_weight for s in unscaled)
    assert unscaled[-1].max_weight > 0.9 and unscaled[-1].entropy < 0.3
    assert unscaled[-1].jacobian_norm < unscaled[0].jacobian_norm / 2
    for stats in scaled:
        assert stats.max_weight < 0.25 and stats.entropy > 3.0
    spread = [s.jacobian_norm for s in scaled]
    assert max(spread) / min(spread) < 1.5


def test_entropy_limits():
    uniform = np.full((1, 8), 1 / 8)
    one_hot = np.eye(8)[:1]
    np.testing.assert_allclose(softmax_entropy(uniform), np.log(8))
    assert softmax_entropy(one_hot)[0] == 0.0


def test_jacobian_norm_matches_the_explicit_jacobian():
    weights = masked_softmax(np.random.default_rng(5).standard_normal((3, 6)))
    for row, norm in zip(weights, softmax_jacobian_norm(weights), strict=True):
        jacobian = np.diag(row) - np.outer(row, row)
        assert norm == pytest.approx(np.linalg.norm(jacobian))


def test_variance_standard_error_matches_the_spread_of_estimates():
    # 40 independent estimates at width 8: their spread is the standard error.
    width, samples = 8, 2_000
    estimates = [dot_product_variance(width, samples, seed=s) for s in range(40)]
    assert np.std(estimates) == pytest.approx(variance_standard_error(width, samples), rel=0.3)
