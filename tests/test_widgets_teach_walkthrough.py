"""The board walkthrough explorer (notebook 06), driven headless: buttons, fields, slider."""

import io

import ipywidgets
import matplotlib.pyplot as plt
import pytest
from explorer_asserts import assert_frames_match_fresh_drawings, assert_same_state
from PIL import Image

from attention_lib import plots
from attention_lib.walkthrough import DEFAULT_CARDS, N_STEPS, make_cards, walkthrough_step
from attention_lib.widgets import BACK_CLASS, NEXT_CLASS, Explorer, available_explorers
from attention_lib.widgets import teach_walkthrough as tw


@pytest.fixture
def explorer():
    explorer = tw.teach_walkthrough_explorer(style="board")
    yield explorer
    explorer.close()
    plt.close("all")


def png_size(png):
    return Image.open(io.BytesIO(png)).size


def visible_texts(fig):
    """Every visible, non-empty text of ``fig``, in drawing order."""
    return [t.get_text() for t in fig.axes[0].texts if t.get_visible() and t.get_text()] + [
        fig.axes[0].get_title(loc="left")
    ]


def test_next_is_the_first_control_and_the_explorer_starts_at_step_1(explorer):
    assert type(explorer) is Explorer
    next_button, back_button, reset_button = explorer.buttons.values()
    assert explorer.main_control is next_button and next_button.description == "Next ▶"
    assert "attn-main-control" in next_button._dom_classes
    assert "attn-explorer" in explorer.widget._dom_classes
    assert "attn-figure" in explorer.figure._dom_classes
    row = explorer.controls_row.children
    assert list(row[:4]) == [
        next_button,
        back_button,
        reset_button,
        explorer.controls["query_position"],
    ]
    assert all(not isinstance(w, ipywidgets.Button) for w in row[3:-1])  # the step shows nowhere
    # a presenter's clicker presses them (the page-side front end looks for these classes)
    assert NEXT_CLASS in next_button._dom_classes and BACK_CLASS in back_button._dom_classes
    assert_same_state(explorer.state, walkthrough_step(DEFAULT_CARDS, 1, 2))
    assert explorer.readout.value.startswith("<b>Step 1 / 6</b>")
    assert back_button.disabled and not next_button.disabled


def test_next_and_back_step_through_all_six_and_stop_at_the_ends(explorer):
    next_button, back_button = explorer.buttons["next"], explorer.buttons["back"]
    pngs = [explorer.png]
    for step in range(2, N_STEPS + 1):
        next_button.click()  # what the browser's click does
        assert explorer.state.step == step
        assert explorer.readout.value.startswith(f"<b>Step {step} / 6</b>")
        pngs.append(explorer.png)
    assert len(set(pngs)) == N_STEPS  # every step draws something new
    assert next_button.disabled
    assert explorer.press("next").step == N_STEPS  # stays at the last step
    back_button.click()
    assert explorer.state.step == N_STEPS - 1 and not next_button.disabled
    for _ in range(10):
        explorer.press("back")
    assert explorer.state.step == 1 and back_button.disabled
    assert explorer.png == pngs[0]  # the same picture as at the start


def test_editing_a_card_field_recomputes_the_step_on_screen(explorer):
    explorer.set(step=5)
    editor = explorer.controls["cards"]
    before = explorer.png
    editor._fields["k", 2][0].value = 0.0  # card 3's key: [2, 0, 1, 1] -> [0, 0, 1, 1]
    keys = DEFAULT_CARDS.keys.copy()
    keys[2, 0] = 0.0
    expected = walkthrough_step(make_cards(DEFAULT_CARDS.query, keys, DEFAULT_CARDS.values), 5, 2)
    assert_same_state(explorer.state, expected)
    assert explorer.state.board[0].cells == ("2", "0", "1")
    assert explorer.png != before
    assert "1" in explorer.table.value and explorer.state.output_text in explorer.table.value


def test_card_fields_round_to_what_the_card_prints(explorer):
    editor = explorer.controls["cards"]
    editor._fields["q", 0][1].value = 1.26
    assert explorer.state.cards.query.tolist() == [1.0, 1.3, 1.0, 0.0]
    assert editor._fields["q", 0][1].value == 1.3  # the field shows what is computed
    assert "[1.0, 1.3, 1.0, 0.0]" in visible_texts(explorer.fig)  # and so does the card


def test_query_position_moves_what_the_mask_erases(explorer):
    explorer.set(step=6)
    for position, erased in ((1, [False, True, True]), (3, [False, False, False])):
        state = explorer.set(query_position=position)
        assert state.erased.tolist() == erased
        assert f"position {position}" in explorer.readout.value
        assert visible_texts(explorer.fig).count("future:\nerased") == sum(erased)


def test_reset_goes_back_to_the_start(explorer):
    explorer.set(step=6, query_position=3)
    explorer.controls["cards"]._fields["v", 0][0].value = 9.0
    explorer.buttons["reset"].click()
    assert_same_state(explorer.state, walkthrough_step(DEFAULT_CARDS, 1, 2))
    assert explorer.controls["cards"]._fields["v", 0][0].value == 1.0
    assert explorer.controls["query_position"].value == 2
    assert explorer.buttons["back"].disabled


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"step": 0}, "step must be at least 1; got 0"),
        ({"step": N_STEPS + 1}, f"step must lie between 1 and {N_STEPS}; got {N_STEPS + 1}"),
        ({"cards": make_cards([1, 0], [[1, 0]], [[1.0]])}, "cards must have the card fields'"),
        ({"step": 4, "query_position": 9}, "query_position must be a whole number from 1 to 3"),
    ],
)
def test_a_refused_change_changes_nothing_and_says_what_fits(explorer, change, said):
    explorer.set(step=3)
    before = (explorer.values, explorer.state, explorer.png, explorer.readout.value)
    fields = [f.value for fs in explorer.controls["cards"]._fields.values() for f in fs]
    with pytest.raises(ValueError, match=said):
        explorer.set(**change)
    assert explorer.values["step"] == 3 and explorer.state is before[1]
    assert_same_state(explorer.values, before[0])
    assert (explorer.png, explorer.readout.value) == before[2:]
    assert [f.value for fs in explorer.controls["cards"]._fields.values() for f in fs] == fields
    assert not explorer.buttons["back"].disabled and not explorer.buttons["next"].disabled


@pytest.mark.parametrize("style", ["default", "board"])
def test_figure_is_rendered_at_the_width_it_is_shown(style):
    explorer = tw.teach_walkthrough_explorer(style=style)
    # with the controls and readout, under the 959 px of the notebook panel's visible height
    assert png_size(explorer.png) == (plots.DISPLAY_WIDTH_PX, 600)
    # 1484 CSS px of notebook column at 1920 x 1080: stretched at most 1.05x
    assert 1484 / plots.DISPLAY_WIDTH_PX <= 1.05
    explorer.close()


def test_style_defaults_to_the_environment(monkeypatch):
    monkeypatch.setenv("ATTENTION_STYLE", "board")
    explorer = tw.teach_walkthrough_explorer()
    assert explorer.style == "board"
    explorer.close()
    monkeypatch.delenv("ATTENTION_STYLE")
    explorer = tw.teach_walkthrough_explorer()
    assert explorer.style == "default"
    explorer.close()


def test_the_drawing_shows_the_numbers_of_the_step():
    fig, _ = plots.new_figure(0, figsize=tw.BOARD_FIGSIZE, style="board", pyplot=False)
    scene = tw.draw(fig, tw.update(6))
    shown = [[cell.get_text() for cell in cells if cell.get_visible()] for _, cells in scene.rows]
    assert shown == [["2", "0", "3"], ["1", "0", "−∞"], ["0.73", "0.27", "0"]]
    assert scene.output_text.get_text() == "[0.73, 0.27]"
    assert [cover.get_visible() and label.get_visible() for cover, label in scene.covers] == [
        False,
        False,
        True,
    ]
    assert scene.caption.get_text().startswith("Step 6 / 6: causal mask")
    assert "card 3 is erased" in scene.caption.get_text()
    tw.refresh(scene, tw.update(2))
    assert [label.get_visible() for label, _ in scene.rows] == [True, False, False]
    assert not any(cover.get_visible() for cover, _ in scene.covers)
    assert not any(bar.get_visible() for pair in scene.bars for bar in pair)
    assert scene.output_text.get_text() == "?"
    plt.close(fig)


def test_the_live_figure_shows_the_step(explorer):
    explorer.set(step=6)
    texts = visible_texts(explorer.fig)
    assert {"0.73", "0.27", "[0.73, 0.27]"} <= set(texts) and texts.count("future:\nerased") == 1
    assert texts[-1].startswith("Step 6 / 6: causal mask")
    explorer.press("back")
    texts = visible_texts(explorer.fig)
    assert "future:\nerased" not in texts and texts[-1].startswith("Step 5 / 6")


def test_static_figure_of_any_step(explorer):
    fig = explorer.draw_static(tw.update(4))
    assert fig.axes[0].get_title(loc="left").startswith("Step 4 / 6: softmax")
    assert tuple(fig.get_size_inches()) == tw.BOARD_FIGSIZE
    plt.close(fig)


@pytest.mark.parametrize("style", ["default", "board"])
def test_stepping_and_editing_show_what_a_fresh_drawing_shows(style):
    """Steps blit over the still cards; an edit draws anew: each frame equals a fresh drawing."""
    explorer = tw.teach_walkthrough_explorer(style=style)
    edited = make_cards([1, 0.5, 1, 0], DEFAULT_CARDS.keys, DEFAULT_CARDS.values)
    changes = [
        {"step": 6},
        {"step": 2},
        {"cards": edited},  # a full drawing of new cards
        {"step": 5, "query_position": 1},
        {"cards": DEFAULT_CARDS},  # the first cards again: their frozen drawing
        {"step": 4},
    ]
    assert_frames_match_fresh_drawings(explorer, tw.EXPLORER, changes)
    explorer.close()


def test_an_edited_card_redraws_the_cards_themselves():
    explorer = tw.teach_walkthrough_explorer(style="default")
    explorer.set(step=3)
    explorer.controls["cards"]._fields["k", 0][0].value = 3.0
    texts = visible_texts(explorer.fig)
    assert "[3, 0, 1, 0]" in texts and "[1, 0, 1, 0]" in texts  # card 1's new key; the query
    assert explorer.state.board[0].cells[0] == "4" and "4" in texts
    explorer.close()


def test_factory_checks_its_input():
    with pytest.raises(ValueError, match="query_position must lie between 1 and the number"):
        tw.teach_walkthrough_explorer(query_position=5)
    with pytest.raises(TypeError, match="cards must be Cards"):
        tw.teach_walkthrough_explorer(cards=[[1, 0]])


def test_registered_with_the_explorers():
    spec = available_explorers()["teach_walkthrough"]
    assert spec is tw.EXPLORER and spec.factory is tw.teach_walkthrough_explorer
