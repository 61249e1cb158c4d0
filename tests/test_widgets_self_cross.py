"""The self/cross explorer of notebook 05: pure update() first, then the headless shell."""

import numpy as np
import pytest
from explorer_asserts import assert_same_state

from attention_lib import attention_forward, causal_mask
from attention_lib.widgets import self_cross as sc


def test_cross_mode_shapes():
    state = sc.update(T_q=3, T_k=7, d_k=2, d_v=5, mode="cross")
    assert state.shapes == {
        "X_q": (3, sc.D_MODEL),
        "X_kv": (7, sc.D_MODEL),
        "W_q": (sc.D_MODEL, 2),
        "W_k": (sc.D_MODEL, 2),
        "W_v": (sc.D_MODEL, 5),
        "Q": (3, 2),
        "K": (7, 2),
        "V": (7, 5),
        "scores": (3, 7),
        "weights": (3, 7),
        "output": (3, 5),
    }
    assert state.query_tokens == sc.DECODER_TOKENS[:3]
    assert state.key_tokens == sc.ENCODER_TOKENS[:7]
    assert state.mask is None


def test_self_mode_ignores_T_k_and_reads_its_own_tokens():
    state = sc.update(T_q=4, T_k=9, mode="self")
    assert state.weights.shape == (4, 4)
    assert state.key_tokens == state.query_tokens == sc.DECODER_TOKENS[:4]
    assert state.X_kv is state.X_q


def test_causal_mask_in_self_mode():
    state = sc.update(T_q=5, mode="self", causal=True)
    np.testing.assert_array_equal(state.mask, causal_mask(5))
    assert np.all(state.weights[~causal_mask(5)] == 0.0)
    np.testing.assert_allclose(state.weights.sum(axis=-1), 1.0)


def test_causal_refused_in_cross_mode():
    with pytest.raises(ValueError, match="mode='self'"):
        sc.update(mode="cross", causal=True)


def test_state_matches_attention_forward():
    state = sc.update(T_q=4, T_k=6, d_k=3, d_v=2, mode="cross")
    np.testing.assert_array_equal(state.output, attention_forward(state.Q, state.K, state.V))
    np.testing.assert_allclose(state.weights.sum(axis=-1), 1.0)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"T_q": 0}, ValueError),
        ({"T_k": sc.MAX_LENGTH + 1}, ValueError),
        ({"d_k": 0}, ValueError),
        ({"d_v": sc.MAX_WIDTH + 1}, ValueError),
        ({"d_k": 2.0}, TypeError),
        ({"mode": "both"}, ValueError),
    ],
)
def test_bad_controls_are_refused(kwargs, error):
    with pytest.raises(error):
        sc.update(**kwargs)


@pytest.mark.parametrize("mode", ["self", "cross"])
@pytest.mark.parametrize(
    "sizes",
    [(1, 1, 1, 1), (sc.MAX_LENGTH, sc.MAX_LENGTH, sc.MAX_WIDTH, sc.MAX_WIDTH), (1, 10, 8, 1)],
)
def test_extreme_sizes_do_not_raise(mode, sizes):
    T_q, T_k, d_k, d_v = sizes
    state = sc.update(T_q, T_k, d_k, d_v, mode=mode, causal=mode == "self")
    assert np.all(np.isfinite(state.output))
    assert state.output.shape == (T_q, d_v)


# --- the live explorer, headless: set controls as a user would ---------------------------


@pytest.fixture
def explorer():
    explorer = sc.self_cross_explorer()
    yield explorer
    explorer.close()


def test_explorer_starts_in_the_documented_state(explorer):
    assert next(iter(explorer.controls)) == "T_q"  # the main control comes first
    assert_same_state(explorer.state, sc.update())
    assert explorer.controls["causal"].disabled  # cross mode: no causal mask
    assert not explorer.controls["T_k"].disabled
    assert repr(explorer) == "<self/cross explorer: run the notebook to interact>"


@pytest.mark.parametrize(
    ("values", "weights", "output"),
    [
        ({"T_q": 7}, (7, 6), (7, 3)),
        ({"T_k": 2}, (4, 2), (4, 3)),
        ({"d_v": 8}, (4, 6), (4, 8)),
        ({"d_k": 1}, (4, 6), (4, 3)),
        ({"mode": "self"}, (4, 4), (4, 3)),
    ],
)
def test_changing_a_control_recomputes_and_redraws(explorer, values, weights, output):
    before = explorer.png
    state = explorer.set(**values)
    assert state.weights.shape == weights
    assert state.output.shape == output
    assert explorer.png != before
    assert f"weights {weights[0]}×{weights[1]}" in explorer.readout.value


def test_self_mode_T_k_follows_T_q_and_causal_becomes_available(explorer):
    explorer.set(mode="self")
    assert explorer.controls["T_k"].disabled and not explorer.controls["causal"].disabled
    state = explorer.set(T_q=6)
    assert explorer.controls["T_k"].value == 6
    assert state.weights.shape == (6, 6)
    state = explorer.set(causal=True)
    np.testing.assert_array_equal(state.mask, causal_mask(6))
    # back to cross: causal is switched off for the computation and the box is disabled
    state = explorer.set(mode="cross", T_k=9)
    assert state.mask is None and state.weights.shape == (6, 9)
    assert explorer.controls["causal"].disabled and not explorer.controls["causal"].value
    assert_same_state(state, sc.update(**explorer.values))  # the controls stay consistent


def test_explorer_extremes_do_not_raise(explorer):
    for mode in sc.MODES:
        explorer.set(mode=mode)
        state = explorer.set(T_q=1, T_k=1, d_k=1, d_v=1)
        assert state.output.shape == (1, 1)
        state = explorer.set(
            T_q=sc.MAX_LENGTH, T_k=sc.MAX_LENGTH, d_k=sc.MAX_WIDTH, d_v=sc.MAX_WIDTH
        )
        assert state.output.shape == (sc.MAX_LENGTH, sc.MAX_WIDTH)
    explorer.set(causal=True)
    assert explorer.png[:4] == b"\x89PNG"


def test_table_lists_every_shape(explorer):
    html = explorer.table.value
    for name, shape in explorer.state.shapes.items():
        assert f"{name}</th><td>{'×'.join(map(str, shape))}</td>" in html
