"""Mask before or after softmax (notebook 06, misconception 3): pure update, then the shell."""

import numpy as np
import pytest

from attention_lib import attention_forward, causal_mask
from attention_lib.walkthrough import DEFAULT_CARDS
from attention_lib.widgets import available_explorers, render_png
from attention_lib.widgets import mask_order as mo

SWEEP = np.arange(-4.0, 6.5, 0.5)


def test_right_order_matches_attention_forward_and_never_moves():
    outputs = []
    for first in SWEEP:
        state = mo.update(first)
        mask = causal_mask(3)[mo.QUERY_POSITION - 1 : mo.QUERY_POSITION]
        expected = attention_forward(
            state.cards.query[None], state.cards.keys, state.cards.values, mask=mask
        )[0]
        np.testing.assert_allclose(state.right_output, expected, rtol=1e-13)
        assert state.right_weights.sum() == pytest.approx(1.0)
        outputs.append(state.right_output)
    assert np.ptp(outputs, axis=0).max() == 0.0


def test_wrong_order_leaks_and_loses_weight():
    states = [mo.update(first) for first in SWEEP]
    sums = [s.wrong_sum for s in states]
    assert all(np.diff(sums) < 0)  # a better-matching future card takes more of the row
    assert max(sums) < 0.95 and min(sums) < 0.11
    outputs = np.array([s.wrong_output for s in states])
    assert np.ptp(outputs, axis=0).max() > 0.5
    for s in states:
        assert s.wrong_weights[2] == 0.0
        # same ratios as the right weights: only the normaliser is wrong
        np.testing.assert_allclose(s.wrong_weights / s.wrong_sum, s.right_weights, rtol=1e-12)


def test_update_edits_only_card_3s_first_key_entry():
    state = mo.update(-1.5)
    assert state.future_key.tolist() == [-1.5, 0.0, 1.0, 1.0]
    np.testing.assert_array_equal(state.cards.keys[:2], DEFAULT_CARDS.keys[:2])
    np.testing.assert_array_equal(state.cards.values, DEFAULT_CARDS.values)


def test_explorer_slider_redraws_and_readout_follows():
    explorer = mo.mask_order_explorer(style="board")
    main = explorer.main_control
    assert main is explorer.controls["future_first"] and not main.continuous_update
    before = explorer.png
    state = explorer.set(future_first=5.0)
    assert explorer.png != before
    assert f"row sum <b>{state.wrong_sum:.2f}</b>" in explorer.readout.value
    assert "[5.00, 0.00, 1.00, 1.00]" in explorer.readout.value
    assert f"{state.wrong_sum:.2f}" in explorer.table.value
    explorer.close()


def test_refresh_shows_what_a_fresh_draw_shows():
    explorer = mo.mask_order_explorer()
    explorer.set(future_first=-4.0)
    explorer.set(future_first=5.0)
    fresh = render_png(mo.EXPLORER.figure(mo.update(5.0)))
    assert explorer.png == fresh
    explorer.close()


def test_registered_with_the_explorers():
    spec = available_explorers()["mask_order"]
    assert spec.update is mo.update and spec.factory is mo.mask_order_explorer
