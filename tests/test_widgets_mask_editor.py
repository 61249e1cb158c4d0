"""The mask editor (notebook 03): its pure update, then its shell, headless."""

import itertools

import numpy as np
import pytest
from explorer_asserts import assert_frames_match_fresh_drawings, pixels

from attention_lib import attention_forward, causal_mask
from attention_lib.widgets import mask_editor


def test_default_is_full_causal():
    state = mask_editor.update(4)
    assert state.lengths == (4, 4) and state.blocked == frozenset()
    np.testing.assert_array_equal(state.mask, np.broadcast_to(causal_mask(4), (2, 4, 4)))
    np.testing.assert_allclose(state.row_sums, 1.0)


def test_mask_is_and_of_causal_padding_and_cells():
    state = mask_editor.update(5, causal=True, lengths=[5, 3], blocked={(4, 0), (2, 1)})
    expected = causal_mask(5)[None] & (np.arange(5) < np.array([5, 3])[:, None])[:, None, :]
    expected[:, 4, 0] = expected[:, 2, 1] = False
    np.testing.assert_array_equal(state.mask, expected)
    assert np.all(state.weights[~state.mask] == 0.0)
    assert np.all(np.isneginf(state.masked_scores[~state.mask]))
    np.testing.assert_array_equal(state.masked_scores[state.mask], state.scores[state.mask])


def test_weights_and_output_are_the_librarys():
    state = mask_editor.update(6, causal=False, lengths=[2, 6], blocked={(0, 0)})
    Q, K, V = mask_editor.example_inputs(6)
    np.testing.assert_array_equal(state.output, attention_forward(Q, K, V, mask=state.mask))


def test_changing_length_keeps_the_tokens():
    short, long = mask_editor.update(3, causal=False), mask_editor.update(6, causal=False)
    np.testing.assert_allclose(long.scores[:, :3, :3], short.scores, rtol=1e-12)


def test_lengths_are_clipped_and_cells_outside_ignored():
    state = mask_editor.update(3, lengths=[7, -1], blocked={(5, 5), (0, 0)})
    assert state.lengths == (3, 0) and state.blocked == frozenset({(0, 0)})


@pytest.mark.parametrize("causal", [False, True])
def test_every_key_masked_gives_zero_rows_not_nan(causal):
    grid = set(itertools.product(range(4), range(4)))
    for state in (
        mask_editor.update(4, causal, lengths=[0, 0]),
        mask_editor.update(4, causal, lengths=[4, 2], blocked=grid),
    ):
        assert state.empty_rows.all()
        assert np.all(state.weights == 0.0) and np.all(state.output == 0.0)
        np.testing.assert_array_equal(state.row_sums, 0.0)


def test_length_one():
    state = mask_editor.update(1, True, lengths=[1, 0])
    np.testing.assert_array_equal(state.weights[:, 0, 0], [1.0, 0.0])
    np.testing.assert_array_equal(state.empty_rows[:, 0], [False, True])


def test_bad_length():
    with pytest.raises(ValueError, match="length must be a whole number >= 1"):
        mask_editor.update(0)


# --- the live explorer, driven headlessly -------------------------------------------


@pytest.fixture
def editor():
    editor = mask_editor.mask_editor_explorer()
    yield editor
    editor.close()


def count_frames(editor):
    """Record every new PNG the explorer hands to the browser."""
    frames = []
    editor.figure.observe(lambda change: frames.append(change["new"]), names="value")
    return frames


def test_editor_starts_causal_with_one_padded_example(editor):
    assert list(editor.controls) == ["length", "causal", "lengths", "blocked"]
    main = editor.main_control
    assert main.continuous_update is False and "attn-main-control" in main._dom_classes
    state = editor.state
    assert (state.length, state.causal, state.lengths) == (5, True, (5, 3))
    assert state.blocked == frozenset()
    assert "T = 5" in editor.readout.value
    assert repr(editor) == "<mask editor explorer: run the notebook to interact>"


def test_clicking_a_cell_blocks_it_and_redraws(editor):
    grid = editor.controls["blocked"]
    button = grid.buttons[3, 1]
    assert button.description == "·" and "click to block" in button.tooltip
    before = editor.png
    button.value = True  # what a click (or Space on the focused button) does
    assert editor.state.blocked == {(3, 1)} and not editor.state.mask[:, 3, 1].any()
    assert button.description == "✕" and "click to allow" in button.tooltip
    assert editor.png != before
    button.value = False
    assert editor.state.blocked == frozenset()


def test_controls_change_state_and_figure(editor):
    for change, check in [
        ({"causal": False}, lambda s: s.mask[0].all()),
        ({"lengths": (5, 1)}, lambda s: s.lengths == (5, 1)),
        ({"blocked": ((0, 0),)}, lambda s: s.empty_rows[1, 0] and not s.empty_rows[0, 0]),
    ]:
        before = editor.png
        assert check(editor.set(**change))
        assert editor.png != before
    assert "blocked" in editor.table.value


def test_length_moves_the_dependent_controls_with_one_redraw(editor):
    editor.set(blocked=((4, 0), (1, 1)))
    frames = count_frames(editor)
    state = editor.set(length=3)
    assert len(frames) == 1
    assert state.lengths == (3, 3) and state.blocked == {(1, 1)}
    assert [slider.max for slider in editor.controls["lengths"].children] == [3, 3]
    assert editor.controls["blocked"].value == ((1, 1),)
    assert len(editor.controls["blocked"].buttons) == 9
    state = editor.set(length=8)
    assert state.lengths == (8, 8)  # both examples were full at T = 3: they stay full
    editor.controls["lengths"].children[1].value = 2  # as a user drags it
    state = editor.set(length=6)
    assert state.lengths == (6, 2)  # a padded example keeps its length


def test_length_one_and_every_key_masked_do_not_raise(editor):
    state = editor.set(length=1)
    assert state.weights.shape == (2, 1, 1)
    state = editor.set(lengths=(0, 0))
    assert state.empty_rows.all() and np.all(state.output == 0.0)
    editor.set(length=4, lengths=(4, 4))
    every_cell = tuple((q, k) for q in range(4) for k in range(4))
    before = editor.png
    state = editor.set(blocked=every_cell)
    assert state.empty_rows.all() and np.all(state.weights == 0.0)
    assert editor.png != before
    assert "0.000" in editor.table.value


@pytest.mark.parametrize(
    ("changes", "new_drawings"),
    [
        # same T throughout: every change blits
        (
            [
                {"causal": False},
                {"blocked": ((2, 1),)},
                {"lengths": (5, 1)},
                {"causal": True},
                {"lengths": (2, 1)},
            ],
            0,
        ),
        # a new T is drawn from scratch, the changes at that T blit
        ([{"length": 6}, {"blocked": ((2, 1), (5, 0))}, {"lengths": (6, 2)}, {"causal": False}], 1),
        # T = 8: no numbers in the cells
        ([{"length": 8}, {"lengths": (3, 3)}, {"blocked": ((7, 7),)}, {"causal": False}], 1),
        # row 0 empties (its row sum label changes): drawn from scratch; it refills:
        # back to the first layout, which the explorer kept frozen
        ([{"blocked": ((0, 0),)}, {"lengths": (5, 4)}, {"blocked": ()}], 1),
    ],
    ids=["same-T", "new-T-then-same-T", "T-8", "empty-row"],
)
def test_fast_path_frames_match_a_fresh_editor_and_a_fresh_drawing(
    monkeypatch, changes, new_drawings
):
    drawings = []
    spec = mask_editor.EXPLORER

    def counting_draw(fig, state):
        drawings.append(state.length)
        return spec.draw(fig, state)

    monkeypatch.setattr(mask_editor, "EXPLORER", spec._replace(draw=counting_draw))
    live = mask_editor.mask_editor_explorer()
    frame = assert_frames_match_fresh_drawings(live, spec, changes)
    assert len(drawings) == 1 + new_drawings  # the first drawing, then only where expected

    fresh = mask_editor.mask_editor_explorer(**live.values)
    assert fresh.state.lengths == live.state.lengths
    np.testing.assert_array_equal(frame, pixels(fresh.png))
    live.close()
    fresh.close()


def test_a_new_length_is_one_update_and_one_redraw(monkeypatch):
    """T moves the sliders and rebuilds the grid inside one batch: one update in all."""
    calls = []
    update = mask_editor.update

    def counting_update(**values):
        calls.append(values)
        return update(**values)

    monkeypatch.setattr(
        mask_editor, "EXPLORER", mask_editor.EXPLORER._replace(update=counting_update)
    )
    editor = mask_editor.mask_editor_explorer(blocked=((4, 0), (1, 1)))
    frames = count_frames(editor)
    calls.clear()
    editor.controls["length"].value = 3  # the slider, as a user drags it: no batch around it
    assert len(calls) == 1 and len(frames) == 1
    assert calls[0] == {
        "length": 3,
        "causal": True,
        "lengths": (3, 3),
        "blocked": ((1, 1),),
    }
    editor.set(causal=False, lengths=(3, 1), blocked=((0, 0),))  # three controls, one batch
    assert len(calls) == 2 and len(frames) == 2
    assert editor.state.lengths == (3, 1) and editor.state.blocked == {(0, 0)}
    editor.close()


def test_static_key_changes_with_length_and_row_sums_only():
    key = mask_editor.static_key
    base = mask_editor.update(4, True, (4, 2))
    for same in (
        mask_editor.update(4, False, (4, 2)),
        mask_editor.update(4, True, (3, 1)),
        mask_editor.update(4, True, (4, 2), {(3, 0), (2, 2)}),
    ):
        assert key(same) == key(base)
    for other in (
        mask_editor.update(5, True, (4, 2)),
        mask_editor.update(4, True, (4, 0)),
        mask_editor.update(4, True, (4, 2), {(0, 0)}),
    ):
        assert key(other) != key(base)


def test_static_figure():
    import matplotlib.pyplot as plt

    editor = mask_editor.mask_editor_explorer(8, lengths=(8, 2), blocked=((7, 0),))
    fig = editor.draw_static()
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert labels[-1] == "q7  Σ=1.00"
    plt.close(fig)
    editor.close()


def test_board_style_uses_the_larger_figure():
    import matplotlib.pyplot as plt

    editor = mask_editor.mask_editor_explorer(style="board")
    assert editor.png[:8] == b"\x89PNG\r\n\x1a\n"
    fig = editor.draw_static()
    assert tuple(fig.get_size_inches()) == mask_editor.BOARD_FIGSIZE
    plt.close(fig)
    editor.close()


def test_factory_checks_its_arguments():
    with pytest.raises(ValueError, match="length must lie between 1 and 8"):
        mask_editor.mask_editor_explorer(9)
    with pytest.raises(ValueError, match="lengths must give 2 examples"):
        mask_editor.mask_editor_explorer(lengths=(3,))
