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
    Q, K, V = mask_editor._example_inputs(6)
    np.testing.assert_array_equal(state.output, attention_forward(Q, K, V, mask=state.mask))


def test_changing_length_keeps_the_tokens():
    short, long = mask_editor.update(3, causal=False), mask_editor.update(6, causal=False)
    np.testing.assert_allclose(long.scores[:, :3, :3], short.scores, rtol=1e-12)


def test_lengths_are_clipped_and_cells_outside_ignored():
    state = mask_editor.update(3, lengths=[7, -1], blocked={(5, 5), (0, 0)})
    assert state.lengths == (3, 0) and state.blocked == frozenset({(0, 0)})
    assert state.requested == (7, -1)  # what was asked for stays in the state


def test_none_asks_for_no_padding_at_any_length():
    for length in (1, 4, 8):
        state = mask_editor.update(length, lengths=[None, 3])
        assert state.lengths == (length, min(3, length))
        assert state.padding_part[0].all()


@pytest.mark.parametrize("lengths", [[2.5, 1], [], ["2", 1], [True, 1], 3])
def test_bad_lengths(lengths):
    with pytest.raises(ValueError, match="lengths must give one or more examples, each a whole"):
        mask_editor.update(3, lengths=lengths)


@pytest.mark.parametrize("blocked", [[(0,)], [(0, 1, 2)], [(0, 0.5)], [(-1, 0)], [3], 3])
def test_bad_blocked_cells(blocked):
    with pytest.raises(ValueError, match=r"blocked must hold \(query, key\) cells, pairs of whole"):
        mask_editor.update(3, blocked=blocked)


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
    assert button.description == "✕"
    assert button.tooltip == "query 3, key 1: blocked by hand (click to allow)"
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
    sliders = editor.controls["lengths"].children
    assert [slider.max for slider in sliders] == [3, 3]
    assert [slider.value for slider in sliders] == [3, 3]  # shown clipped
    assert editor.controls["lengths"].value == (None, 3)  # what was asked for stays
    assert editor.controls["blocked"].value == ((1, 1), (4, 0))  # so does (4, 0), hidden
    assert len(editor.controls["blocked"].buttons) == 9
    state = editor.set(length=8)
    assert state.lengths == (8, 3)  # no padding stays no padding; 3 real tokens come back
    assert state.blocked == {(1, 1), (4, 0)}
    sliders[1].value = 2  # as a user drags it
    state = editor.set(length=6)
    assert state.lengths == (6, 2)
    sliders[1].value = 6  # the right end: no padding, whatever T
    assert editor.set(length=7).lengths == (7, 7)


def test_real_tokens_survive_t_down_to_one_and_back(editor):
    """Issue 12: example 1's 3 real tokens must not turn into 5 after a trip to T = 1."""
    assert editor.state.lengths == (5, 3)
    frames = count_frames(editor)
    for length in (4, 3, 2, 1):
        editor.controls["length"].value = length  # the slider, one step at a time
        assert editor.state.lengths == (length, min(3, length))
    assert "example 1 gets its 3 back when T ≥ 3" in editor.readout.value
    for length in (2, 3, 4, 5):
        editor.controls["length"].value = length
    assert len(frames) == 8  # one frame per step, nothing else redrawn
    assert editor.state.lengths == (5, 3) and editor.state.requested == (None, 3)
    assert [s.value for s in editor.controls["lengths"].children] == [5, 3]
    assert "gets its" not in editor.readout.value
    assert editor.state.padding_part[1, 0].tolist() == [True, True, True, False, False]


def test_grid_shows_what_the_masks_block(editor):
    grid = editor.controls["blocked"]  # T = 5, causal, real tokens (5, 3)
    for (q, k), button in grid.buttons.items():
        assert button.tooltip.startswith(f"query {q}, key {k}: ")  # its accessible name
        masked = "attn-cell-masked" in button._dom_classes
        if k > q:
            assert button.description == "◥" and masked
            assert button.tooltip == f"query {q}, key {k}: blocked by the causal mask"
        elif k >= 3:  # padding in example 1 only: still open in example 0
            assert button.description == "·" and not masked
            assert "attn-cell-partly-padded" in button._dom_classes
            assert f"key {k} is padding in example 1" in button.tooltip
        else:
            assert button.description == "·" and not masked
            assert button.tooltip == f"query {q}, key {k}: open (click to block)"
    editor.set(causal=False, lengths=(2, 1))
    assert grid.buttons[0, 4].description == "▒"  # padding in both examples now
    assert grid.buttons[0, 4].tooltip == (
        "query 0, key 4: blocked by padding (key 4 is padding in every example)"
    )
    assert grid.buttons[0, 1].description == "·"  # causal off: the future is open
    assert "attn-cell-partly-padded" in grid.buttons[0, 1]._dom_classes
    editor.set(length=2)  # the padding (2, 1) leaves key 1 padded in example 1 only
    assert set(grid.buttons) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert "attn-cell-masked" not in grid.buttons[1, 1]._dom_classes


def test_a_click_on_a_cell_a_mask_blocks_changes_nothing_and_says_why(editor):
    grid = editor.controls["blocked"]
    frames = count_frames(editor)
    state = editor.state
    grid.buttons[1, 3].value = True  # a click above the diagonal: the causal mask blocks it
    assert grid.buttons[1, 3].value is False  # it springs back
    assert grid.value == () and editor.state is state and frames == []
    assert editor.readout.value.endswith(
        "<br>query 1, key 3 is already blocked by the causal mask: the click changes nothing."
    )
    editor.set(lengths=(3, 3))
    assert "already blocked" not in editor.readout.value  # the next change clears the note
    grid.buttons[4, 4].value = True  # key 4 is padding in both examples
    assert grid.value == ()
    assert "blocked by padding (key 4 is padding in every example)" in editor.readout.value
    with editor.batch():  # a click the causal mask refuses, then causal off in the same batch
        grid.buttons[0, 2].value = True
        editor.controls["causal"].value = False
    assert grid.value == () and not editor.state.causal
    assert editor.readout.value.endswith(
        "<br>query 0, key 2 was blocked by a mask when clicked: the click changed nothing."
    )


def test_cells_blocked_by_hand_wait_hidden_for_a_longer_t(editor):
    grid = editor.controls["blocked"]
    editor.set(length=8, blocked=((7, 0), (1, 0)))
    editor.set(length=4)
    assert editor.state.blocked == {(1, 0)} and grid.value == ((1, 0), (7, 0))
    assert "1 cell(s) blocked by hand" in editor.readout.value
    assert (7, 0) not in grid.buttons and grid._all[7, 0].layout.display == "none"
    grid.buttons[2, 1].value = True  # a click at T = 4 keeps the hidden cell
    assert grid.value == ((1, 0), (2, 1), (7, 0))
    state = editor.set(length=8)
    assert state.blocked == {(1, 0), (2, 1), (7, 0)} and not state.mask[:, 7, 0].any()
    assert grid.buttons[7, 0].description == "✕"
    editor.set(length=4, blocked=((0, 0),))  # a new value replaces the hidden cells too
    assert editor.set(length=8).blocked == {(0, 0)}


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"lengths": (1,)}, "lengths must give 2 examples, each a whole number of real tokens"),
        ({"lengths": (None, 2.5)}, "lengths must give 2 examples"),
        ({"lengths": (None, "3")}, "lengths must give 2 examples"),
        ({"lengths": (None, 2, 3)}, "lengths must give 2 examples"),
        ({"blocked": ((0,),)}, r"blocked must hold \(query, key\) cells, pairs of whole numbers "),
        ({"blocked": ((8, 0),)}, "pairs of whole numbers from 0 to 7; got"),
        ({"blocked": ((0, -1),)}, "pairs of whole numbers from 0 to 7"),
        ({"blocked": (("a", "b"),)}, "pairs of whole numbers from 0 to 7"),
        ({"blocked": (3,)}, "pairs of whole numbers from 0 to 7"),
        ({"length": 3, "blocked": ((0, 9),)}, "pairs of whole numbers from 0 to 7"),
        ({"lengths": None}, "lengths must give 2 examples"),
        ({"blocked": None}, "pairs of whole numbers from 0 to 7; got None"),
    ],
)
def test_a_refused_value_leaves_every_widget_state_and_figure_as_they_were(editor, change, says):
    editor.set(blocked=((4, 0),), lengths=(4, 2))
    grid, sliders = editor.controls["blocked"], editor.controls["lengths"]

    def shown():
        return (
            editor.values,
            editor.png,
            editor.readout.value,
            editor.table.value,
            [(b.value, b.description, b.tooltip, b.layout.display) for b in grid._all.values()],
            [(s.value, s.max) for s in sliders.children],
        )

    before, state = shown(), editor.state
    with pytest.raises(ValueError, match=says):
        editor.set(**change)
    assert editor.state is state and shown() == before


def test_a_cell_blocked_by_hand_can_be_freed_under_a_mask(editor):
    grid = editor.controls["blocked"]
    editor.set(causal=False)
    grid.buttons[0, 2].value = True
    assert editor.state.blocked == {(0, 2)}
    editor.set(causal=True)  # now the causal mask blocks it too
    button = grid.buttons[0, 2]
    assert button.description == "✕" and "attn-cell-masked" in button._dom_classes
    assert button.tooltip == (
        "query 0, key 2: blocked by hand and by the causal mask (click to allow)"
    )
    button.value = False
    assert editor.state.blocked == frozenset() and button.description == "◥"


def test_the_grid_sits_beside_the_figure(editor):
    _, row, _, figure_row, _ = editor.widget.children
    assert editor.controls["blocked"] not in row.children
    assert list(figure_row.children[0].children) == [editor.controls["blocked"]]
    assert figure_row.children[1] is editor.figure
    assert editor.figure.layout.width == f"{mask_editor.DISPLAY_WIDTH_PX}px"


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


@pytest.fixture(scope="module")
def live_editor():
    """One editor for the fast-path cases, its drawings counted, and the values it starts at.

    Each case sets it back to those values first (T = 5 is recalled, not drawn again), so
    the four cases pay for one editor, not four, and still start where a new editor does.
    """
    drawings = []
    spec = mask_editor.EXPLORER

    def counting_draw(fig, state):
        drawings.append(state.length)
        return spec.draw(fig, state)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mask_editor, "EXPLORER", spec._replace(draw=counting_draw))
        live = mask_editor.mask_editor_explorer()
    assert drawings == [5]
    yield live, drawings, live.values
    live.close()


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
        # row 0 empties and refills: its row sum is refreshed, nothing drawn anew
        ([{"blocked": ((0, 0),)}, {"lengths": (5, 4)}, {"blocked": ()}], 0),
    ],
    ids=["same-T", "new-T-then-same-T", "T-8", "empty-row"],
)
def test_fast_path_frames_match_a_fresh_editor_and_a_fresh_drawing(
    live_editor, changes, new_drawings
):
    live, drawings, first_values = live_editor
    drawn = len(drawings)
    live.set(**first_values)  # back where a new editor starts, without drawing
    frame = assert_frames_match_fresh_drawings(live, mask_editor.EXPLORER, changes)
    assert len(drawings) == drawn + new_drawings  # drawn only where expected

    fresh = mask_editor.mask_editor_explorer(**live.values)
    assert fresh.state.lengths == live.state.lengths
    np.testing.assert_array_equal(frame, pixels(fresh.png))
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
        "lengths": (None, 3),
        "blocked": ((1, 1), (4, 0)),  # (4, 0) kept for a longer T
    }
    editor.set(causal=False, lengths=(3, 1), blocked=((0, 0),))  # three controls, one batch
    assert len(calls) == 2 and len(frames) == 2
    assert editor.state.lengths == (3, 1) and editor.state.blocked == {(0, 0)}
    editor.close()


def test_static_key_is_the_length_only():
    key = mask_editor.static_key
    base = mask_editor.update(4, True, (4, 2))
    for same in (
        mask_editor.update(4, False, (4, 2)),
        mask_editor.update(4, True, (3, 1)),
        mask_editor.update(4, True, (4, 0)),  # an empty row: refreshed, not redrawn
        mask_editor.update(4, True, (4, 2), {(3, 0), (0, 0)}),
    ):
        assert key(same) == key(base)
    assert key(mask_editor.update(5, True, (4, 2))) != key(base)


def test_static_figure():
    import matplotlib.pyplot as plt

    editor = mask_editor.mask_editor_explorer(8, lengths=(8, 2), blocked=((7, 0),))
    fig = editor.draw_static()
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    sums = [
        t.get_text() for t in fig.axes[1].texts if t.get_text()[0] == "Σ" and t.get_alpha() != 0
    ]
    assert labels[-1] == "q7" and sums == ["Σ=1"] * 8
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


@pytest.mark.parametrize("style", ["default", "board"])
def test_every_text_is_at_least_14_css_px(style):
    editor = mask_editor.mask_editor_explorer(4, lengths=(None, 2), style=style)  # numbers on
    fig = editor.fig
    assert fig.get_size_inches()[0] * fig.dpi == pytest.approx(mask_editor.DISPLAY_WIDTH_PX)
    texts = [t for t in fig.findobj(lambda a: hasattr(a, "get_fontsize")) if t.get_text()]
    assert len(texts) > 40  # titles, ticks, cell numbers, row sums, colour bar
    smallest = min(t.get_fontsize() for t in texts) * fig.dpi / 72
    assert smallest >= 14, f"{smallest:.1f} CSS px"
    editor.close()


def test_every_cell_button_is_named_even_when_hidden(editor):
    """The page lists all 64 buttons (those beyond T hidden): each needs a name."""
    grid = editor.controls["blocked"]
    assert len(grid._all) == mask_editor.MAX_LENGTH**2
    for (q, k), button in grid._all.items():
        assert button.tooltip.startswith(f"query {q}, key {k}: ") and button.description
        assert (button.layout.display == "none") == ((q, k) not in grid.buttons)


@pytest.mark.parametrize("style", ["default", "board"])
@pytest.mark.parametrize(
    "controls",
    [
        {"length": 1, "lengths": (None, 0)},
        {"length": 3, "lengths": (1, 0)},  # the widest upright key labels
        {"length": 4, "lengths": (None, 2), "blocked": {(0, 0)}},  # numbers, an empty row
        {"length": 5, "lengths": (None, 3)},  # the first state
        {"length": 8, "lengths": (8, 0), "causal": False},  # padding labels on every key
    ],
    ids=["T1", "T3", "T4", "T5", "T8"],
)
def test_drawn_figure_keeps_its_texts_inside_and_apart(style, controls):
    import matplotlib.pyplot as plt
    from layout_asserts import assert_texts_inside_and_apart, drawn_figure

    fig = drawn_figure(mask_editor.EXPLORER, mask_editor.update(**controls), style)
    assert_texts_inside_and_apart(fig)
    plt.close(fig)


def test_a_click_in_the_batch_that_restyled_its_cell_reads_the_batchs_state():
    """Issue 22's case: board style, causal off, T = 8; then causal on and a click on (2, 6)."""
    editor = mask_editor.mask_editor_explorer(style="board")
    editor.set(causal=False, length=8)
    with editor.batch():
        editor.controls["causal"].value = True
        editor.controls["blocked"].buttons[2, 6].value = True  # the causal mask blocks it now
    assert editor.values["blocked"] == () and editor.state.causal
    assert editor.readout.value.endswith(
        "<br>query 2, key 6 is already blocked by the causal mask: the click changes nothing."
    )
    editor.close()
