"""The sqrt(d_k) explorer (notebook 02): its pure update, then its shell, headless."""

import numpy as np
import pytest

from attention_lib import saturation_stats
from attention_lib.widgets import sqrt_dk


@pytest.mark.parametrize("d_k", sqrt_dk.D_K_CHOICES)
@pytest.mark.parametrize("scaled", [False, True])
def test_update_matches_saturation_stats(d_k, scaled):
    state = sqrt_dk.update(d_k, scaled)
    stats = saturation_stats(d_k, scaled=scaled)
    assert state.d_k == d_k and state.scaled is scaled
    assert state.scores.shape == (sqrt_dk.N_QUERIES, sqrt_dk.N_KEYS)
    np.testing.assert_allclose(
        [state.score_mean, state.score_var, state.entropy, state.max_weight, state.jacobian_norm],
        [stats.score_mean, stats.score_var, stats.entropy, stats.max_weight, stats.jacobian_norm],
        rtol=1e-12,
        atol=1e-15,
    )
    assert np.all(np.isfinite(state.scores)) and np.all(np.isfinite(state.row_weights))
    assert state.row_weights.sum() == pytest.approx(1.0)
    assert 0.0 <= state.row_entropy <= state.uniform_entropy + 1e-12


def test_toggle_changes_only_the_scale():
    """Same seed, same vectors: scaled scores are the unscaled ones divided by sqrt(d_k)."""
    unscaled, scaled = sqrt_dk.update(256, False), sqrt_dk.update(256, True)
    np.testing.assert_allclose(scaled.scores * 16.0, unscaled.scores, rtol=1e-12)


def test_unscaled_row_saturates_scaled_row_does_not():
    small, large = sqrt_dk.update(1, False), sqrt_dk.update(4096, False)
    assert large.row_max_weight > 0.99 and large.row_entropy < 0.05
    assert small.row_max_weight < 0.2
    for d_k in (1, 4096):
        state = sqrt_dk.update(d_k, True)
        assert state.row_max_weight < 0.25 and state.row_entropy > 3.0


def test_row_is_checked():
    with pytest.raises(ValueError, match="row must lie between 0 and n_queries - 1"):
        sqrt_dk.update(4, row=64)
