"""The board walkthrough's pure step function (notebook 06), against independent oracles.

Oracles: numbers worked out by hand for the default cards (whole-number keys,
d_k = 4, so the scale halves the scores), closed forms (equal keys give equal
weights; two cards give a logistic weight), and attention_forward with a
causal mask for random edited cards at every query position.
"""

import math

import numpy as np
import pytest

from attention_lib import attention_forward, causal_mask, masked_softmax
from attention_lib.walkthrough import (
    DEFAULT_CARDS,
    N_STEPS,
    STEP_TITLES,
    BoardRow,
    make_cards,
    walkthrough_step,
)

# Worked by hand for DEFAULT_CARDS: q = [1, 0, 1, 0]; keys [1,0,1,0], [0,1,0,1], [2,0,1,1].
HAND_DOTS = [2.0, 0.0, 3.0]
HAND_SCORES = [1.0, 0.0, 1.5]  # divided by sqrt(4) = 2
_E = [math.exp(s) for s in HAND_SCORES]
HAND_WEIGHTS = [e / sum(_E) for e in _E]
# values [1, 0], [0, 1], [2, 2]
HAND_OUTPUT = [HAND_WEIGHTS[0] + 2 * HAND_WEIGHTS[2], HAND_WEIGHTS[1] + 2 * HAND_WEIGHTS[2]]
# step 6, query at position 2: card 3 erased, softmax of [1, 0] alone
HAND_MASKED = [math.e / (math.e + 1), 1 / (math.e + 1), 0.0]


def random_cards(seed, n=3, d_k=4, d_v=2):
    rng = np.random.default_rng(seed)
    return make_cards(
        rng.normal(size=d_k), rng.normal(size=(n, d_k)), rng.normal(scale=2, size=(n, d_v))
    )


def test_step_1_shows_only_the_cards():
    state = walkthrough_step(DEFAULT_CARDS, 1)
    assert (state.step, state.n_steps, state.title) == (1, N_STEPS, "the cards")
    assert state.dots is state.scores is state.weights is state.output is None
    assert state.board == () and state.output_text is None
    assert not state.erased.any()
    assert state.cards is DEFAULT_CARDS and state.d_k == 4 and state.scale == 2.0


def test_step_2_dot_products():
    state = walkthrough_step(DEFAULT_CARDS, 2)
    np.testing.assert_array_equal(state.dots, HAND_DOTS)
    assert state.scores is None and state.weights is None
    assert state.board == (BoardRow("q · k", ("2", "0", "3")),)
    assert "card 3 matches best (q · k = 3)" in state.caption


def test_step_3_divide_by_sqrt_d_k():
    state = walkthrough_step(DEFAULT_CARDS, 3)
    np.testing.assert_array_equal(state.scores, HAND_SCORES)
    assert state.board[1] == BoardRow("÷ √d_k", ("1", "0", "1.5"))
    assert "√4 = 2" in state.caption and state.weights is None


def test_step_4_softmax_weights():
    state = walkthrough_step(DEFAULT_CARDS, 4)
    np.testing.assert_allclose(state.weights, HAND_WEIGHTS, rtol=1e-14)
    assert state.weights.sum() == pytest.approx(1.0, abs=1e-15)
    assert state.board[2] == BoardRow("weight", ("0.33", "0.12", "0.55"))
    assert "card 3 gets 0.55" in state.caption and state.output is None


def test_step_5_output_is_the_weighted_values():
    state = walkthrough_step(DEFAULT_CARDS, 5)
    np.testing.assert_allclose(state.output, HAND_OUTPUT, rtol=1e-14)
    expected = attention_forward(
        DEFAULT_CARDS.query[None], DEFAULT_CARDS.keys, DEFAULT_CARDS.values
    )
    np.testing.assert_allclose(state.output, expected[0], rtol=1e-13)
    assert state.output_text == "[1.42, 1.22]"  # 0.331 + 2 * 0.547, 0.122 + 2 * 0.547
    assert not state.erased.any()


def test_step_6_erases_the_future_before_softmax():
    state = walkthrough_step(DEFAULT_CARDS, 6, query_position=2)
    assert state.erased.tolist() == [False, False, True]
    np.testing.assert_array_equal(state.dots, HAND_DOTS)  # the dot product is still taken
    assert state.scores[2] == -np.inf and state.scores[:2].tolist() == HAND_SCORES[:2]
    np.testing.assert_allclose(state.weights, HAND_MASKED, rtol=1e-14)
    assert state.weights[2] == 0.0 and state.weights.sum() == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(state.output, [HAND_MASKED[0], HAND_MASKED[1]], rtol=1e-14)
    assert state.board[1].cells == ("1", "0", "−∞")
    assert state.board[2].cells == ("0.73", "0.27", "0")
    assert state.output_text == "[0.73, 0.27]"
    assert "card 3 is erased before softmax" in state.caption


@pytest.mark.parametrize("position", [1, 2, 3])
def test_step_6_matches_attention_forward_with_a_causal_mask(position):
    """Query at position p reads keys 1..p: row p - 1 of a causal mask, for any cards."""
    for seed in range(5):
        cards = random_cards(seed)
        state = walkthrough_step(cards, 6, position)
        mask = causal_mask(3)[position - 1 : position]
        expected = attention_forward(cards.query[None], cards.keys, cards.values, mask=mask)
        np.testing.assert_allclose(state.output, expected[0], rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(state.weights, masked_softmax(state.dots / 2.0, mask[0]))
        assert state.erased.tolist() == [k >= position for k in range(3)]


def test_the_last_position_erases_nothing():
    masked = walkthrough_step(DEFAULT_CARDS, 6, query_position=3)
    unmasked = walkthrough_step(DEFAULT_CARDS, 5, query_position=3)
    assert not masked.erased.any()
    np.testing.assert_array_equal(masked.weights, unmasked.weights)
    assert "no card lies in its future" in masked.caption


def test_position_one_erases_two_cards():
    state = walkthrough_step(DEFAULT_CARDS, 6, query_position=1)
    assert state.weights.tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_array_equal(state.output, DEFAULT_CARDS.values[0])
    assert "cards 2 and 3 are erased" in state.caption


@pytest.mark.parametrize("step", range(1, N_STEPS))
def test_query_position_changes_nothing_before_the_mask(step):
    first, last = (walkthrough_step(DEFAULT_CARDS, step, p) for p in (1, 3))
    assert first.board == last.board and first.caption == last.caption
    assert first.query_position == 1 and last.query_position == 3


@pytest.mark.parametrize("seed", range(8))
def test_edited_cards_recompute_every_step(seed):
    rng = np.random.default_rng(100 + seed)
    n, d_k, d_v = (int(x) for x in rng.integers(1, 6, size=3))
    cards = random_cards(seed, n, d_k, d_v)
    for step in range(1, N_STEPS + 1):
        state = walkthrough_step(cards, step, query_position=n)
        assert state.title == STEP_TITLES[step - 1] and len(state.board) == min(step - 1, 3)
        for row in state.board:
            assert len(row.cells) == n
    full = walkthrough_step(cards, 5, query_position=n)
    np.testing.assert_allclose(full.dots, cards.keys @ cards.query, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(full.scores, full.dots / math.sqrt(d_k), rtol=1e-14)
    expected = attention_forward(cards.query[None], cards.keys, cards.values)
    np.testing.assert_allclose(full.output, expected[0], rtol=1e-12, atol=1e-14)
    for value, text in zip(full.weights, full.board[2].cells, strict=True):
        assert text == "<0.01" or float(text) == pytest.approx(value, abs=0.005)


def test_an_edit_moves_exactly_the_numbers_it_should():
    """Edit card 3's key: its dot product moves; edit its value: only the output moves."""
    before = walkthrough_step(DEFAULT_CARDS, 5)
    keys = DEFAULT_CARDS.keys.copy()
    keys[2] = [0, 0, 0, 0]
    new_key = walkthrough_step(make_cards(DEFAULT_CARDS.query, keys, DEFAULT_CARDS.values), 5)
    assert new_key.board[0].cells == ("2", "0", "0")
    assert not np.allclose(new_key.weights, before.weights)
    values = DEFAULT_CARDS.values * 10
    new_values = walkthrough_step(make_cards(DEFAULT_CARDS.query, DEFAULT_CARDS.keys, values), 5)
    np.testing.assert_array_equal(new_values.weights, before.weights)
    np.testing.assert_allclose(new_values.output, 10 * before.output, rtol=1e-14)


def test_closed_forms():
    # equal keys: equal weights 1/n whatever the query, output = mean of the values
    cards = make_cards([3, -1], [[1, 2]] * 4, [[0.0], [4.0], [8.0], [-4.0]])
    state = walkthrough_step(cards, 5)
    np.testing.assert_allclose(state.weights, 0.25, rtol=1e-15)
    np.testing.assert_allclose(state.output, [2.0], rtol=1e-15)
    # two cards: weight of card 1 = logistic(score difference)
    cards = make_cards([1, 1], [[2, 0], [0, 0]], [[1.0], [0.0]])
    state = walkthrough_step(cards, 5)
    difference = 2 / math.sqrt(2)
    assert state.weights[0] == pytest.approx(1 / (1 + math.exp(-difference)), rel=1e-14)
    assert state.output[0] == pytest.approx(state.weights[0], rel=1e-14)


def test_board_numbers_are_rounded_never_hiding_a_small_weight():
    cards = make_cards([10, 0], [[1, 0], [-1, 0]], [[1.0], [0.0]])  # scores +-7.07
    state = walkthrough_step(cards, 4)
    assert state.weights[1] > 0 and state.board[2].cells == ("1", "<0.01")
    coarse = walkthrough_step(DEFAULT_CARDS, 4, decimals=1)
    assert coarse.board[2].cells == ("0.3", "0.1", "0.5")


def test_cards_are_frozen_copies():
    query = np.array([1.0, 0.0])
    cards = make_cards(query, [[1, 0]], [[2.0]])
    query[0] = 99.0
    assert cards.query[0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        cards.keys[0, 0] = 5.0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"step": 0}, ValueError, "step must be at least 1; got 0"),
        ({"step": 7}, ValueError, "step must lie between 1 and 6; got 7"),
        ({"step": 2.0}, TypeError, "step must be a whole number"),
        ({"step": 6, "query_position": 4}, ValueError, r"between 1 and the number of cards \(3\)"),
        ({"step": 6, "query_position": 0}, ValueError, "query_position must be at least 1"),
        ({"step": 2, "decimals": -1}, ValueError, "decimals must be at least 0"),
    ],
)
def test_bad_steps_and_positions_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        walkthrough_step(DEFAULT_CARDS, **kwargs)


def test_cards_must_be_cards():
    with pytest.raises(TypeError, match=r"cards must be Cards .*got tuple"):
        walkthrough_step(tuple(DEFAULT_CARDS), 1)


@pytest.mark.parametrize(
    ("query", "keys", "values", "message"),
    [
        ([[1, 0]], [[1, 0]], [[1.0]], r"query must be one vector of shape \(d_k,\)"),
        ([1, 0], [[1, 0, 0]], [[1.0]], r"keys must have shape \(n, 2\)"),
        ([1, 0], np.zeros((0, 2)), np.zeros((0, 1)), r"keys must have shape \(n, 2\)"),
        ([1, 0], [[1, 0], [0, 1]], [[1.0]], r"one row per key \(n = 2\); got \(1, 1\)"),
        ([1, np.nan], [[1, 0]], [[1.0]], "query contains 1 non-finite"),
        ([1, 0], [1, 0], [[1.0]], "keys must have at least 2 dimension"),
    ],
)
def test_make_cards_names_the_bad_argument(query, keys, values, message):
    with pytest.raises(ValueError, match=message):
        make_cards(query, keys, values)
