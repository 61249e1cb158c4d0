"""The board walkthrough explorer (notebook 06), driven headless: buttons, fields, slider."""

import io

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from attention_lib.walkthrough import DEFAULT_CARDS, N_STEPS, make_cards, walkthrough_step
from attention_lib.widgets import available_explorers
from attention_lib.widgets import teach_walkthrough as tw


@pytest.fixture
def explorer():
    explorer = tw.teach_walkthrough_explorer(style="board")
    yield explorer
    explorer.close()
    plt.close("all")


def assert_same_state(state, expected):
    """Two walkthrough steps are equal field by field (the cards compared array by array)."""
    assert type(state) is type(expected)
    for field, value in zip(state._fields, state, strict=True):
        other = getattr(expected, field)
        if field == "cards":
            for mine, theirs in zip(value, other, strict=True):
                np.testing.assert_array_equal(mine, theirs, err_msg=field)
        elif isinstance(value, np.ndarray) or value is None:
            np.testing.assert_array_equal(value, other, err_msg=field)
        else:
            assert value == other, field


def png_size(png):
    return Image.open(io.BytesIO(png)).size


def test_next_is_the_first_control_and_the_explorer_starts_at_step_1(explorer):
    next_button = explorer.main_control
    assert isinstance(next_button, ipywidgets.Button) and next_button.description == "Next ▶"
    assert "attn-main-control" in next_button._dom_classes
    assert "attn-explorer" in explorer.widget._dom_classes
    assert "attn-figure" in explorer.figure._dom_classes
    row = explorer.controls_row
    assert list(row.children[:3]) == [next_button, explorer.back_button, explorer.reset_button]
    # a presenter's clicker presses them (the page-side front end looks for these classes)
    assert "attn-next" in next_button._dom_classes
    assert "attn-back" in explorer.back_button._dom_classes
    assert_same_state(explorer.state, walkthrough_step(DEFAULT_CARDS, 1, 2))
    assert explorer.readout.value.startswith("<b>Step 1 / 6</b>")
    assert explorer.back_button.disabled and not next_button.disabled


def test_next_and_back_step_through_all_six_and_stop_at_the_ends(explorer):
    pngs = [explorer.png]
    for step in range(2, N_STEPS + 1):
        explorer.main_control.click()  # what the browser's click does
        assert explorer.state.step == step
        assert explorer.readout.value.startswith(f"<b>Step {step} / 6</b>")
        pngs.append(explorer.png)
    assert len(set(pngs)) == N_STEPS  # every step draws something new
    assert explorer.main_control.disabled
    assert explorer.next().step == N_STEPS  # stays at the last step
    explorer.back_button.click()
    assert explorer.state.step == N_STEPS - 1 and not explorer.main_control.disabled
    for _ in range(10):
        explorer.back()
    assert explorer.state.step == 1 and explorer.back_button.disabled
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


def test_query_position_moves_what_the_mask_erases(explorer):
    explorer.set(step=6)
    for position, erased in ((1, [False, True, True]), (3, [False, False, False])):
        state = explorer.set(query_position=position)
        assert state.erased.tolist() == erased
        assert f"position {position}" in explorer.readout.value


def test_reset_goes_back_to_the_start(explorer):
    explorer.set(step=6, query_position=3)
    explorer.controls["cards"]._fields["v", 0][0].value = 9.0
    explorer.reset_button.click()
    assert_same_state(explorer.state, walkthrough_step(DEFAULT_CARDS, 1, 2))
    assert explorer.controls["cards"]._fields["v", 0][0].value == 1.0
    assert explorer.controls["query_position"].value == 2


@pytest.mark.parametrize("style", ["default", "board"])
def test_figure_is_rendered_at_the_width_it_is_shown(style):
    explorer = tw.teach_walkthrough_explorer(style=style)
    assert png_size(explorer.png) == (tw.DISPLAY_WIDTH_PX, tw.DISPLAY_HEIGHT_PX)
    # 1484 CSS px of notebook column at 1920 x 1080: stretched at most 1.05x
    assert 1484 / tw.DISPLAY_WIDTH_PX <= 1.05
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


def shown(fig):
    """gid -> text (or True for a patch) of every visible artist the board named."""
    ax = fig.axes[0]
    found = {}
    for artist in (*ax.texts, *ax.patches, *fig.texts):
        if artist.get_gid() and artist.get_visible():
            found[artist.get_gid()] = artist.get_text() if hasattr(artist, "get_text") else True
    return found


def test_the_figure_shows_the_numbers_of_the_step(explorer):
    explorer.set(step=6)
    board = shown(explorer.fig)
    assert [board[f"cell-2-{i}"] for i in range(3)] == ["0.73", "0.27", "0"]
    assert board["output-text"] == "[0.73, 0.27]"
    assert sorted(gid for gid in board if gid.startswith("erased-")) == [
        "erased-2",
        "erased-label-2",
    ]
    assert board["caption"].startswith("Step 6 / 6: causal mask")
    assert "card 3 is erased" in board["caption"]
    explorer.back()
    board = shown(explorer.fig)
    assert not any(gid.startswith("erased") for gid in board)
    explorer.set(step=2)
    board = shown(explorer.fig)
    assert "cell-1-0" not in board and "bar-0" not in board and board["output-text"] == "?"


def test_static_figure_of_any_step(explorer):
    fig = explorer.draw_static(tw.update(4))
    assert shown(fig)["caption"].startswith("Step 4 / 6: softmax")
    assert tuple(fig.get_size_inches()) == tw.figure_geometry("board")[0]
    plt.close(fig)


@pytest.mark.parametrize("path", [[6, 2, 5], [4, 1], [3, 6], [5]])
def test_blitted_steps_match_a_plain_drawing(path):
    """Stepping around (blitting over the still cards) shows what one plain draw() shows."""
    from attention_lib import plots
    from attention_lib.widgets import render_png

    live = tw.teach_walkthrough_explorer(style="default")
    for step in path:
        live.set(step=step)
    figsize, dpi = tw.figure_geometry("default")
    fig, _ = plots.new_figure(0, figsize=figsize, dpi=dpi, pyplot=False)
    with plots.series_style("default"):
        tw.draw(fig, live.state)
        plain = render_png(fig)
    pixels = [np.asarray(Image.open(io.BytesIO(png))).astype(int) for png in (live.png, plain)]
    assert np.mean(np.any(pixels[0] != pixels[1], axis=-1)) < 1e-4
    live.close()


def test_an_edited_card_redraws_the_cards_themselves():
    explorer = tw.teach_walkthrough_explorer(style="default")
    explorer.set(step=3)
    explorer.controls["cards"]._fields["k", 0][0].value = 3.0
    texts = [t.get_text() for t in explorer.fig.axes[0].texts]
    assert "[3, 0, 1, 0]" in texts and "[1, 0, 1, 0]" in texts  # card 1's new key; the query
    assert shown(explorer.fig)["cell-0-0"] == "4"
    explorer.close()


def test_factory_and_geometry_check_their_input():
    with pytest.raises(ValueError, match="query_position must lie between 1 and the number"):
        tw.teach_walkthrough_explorer(query_position=5)
    with pytest.raises(TypeError, match="cards must be Cards"):
        tw.teach_walkthrough_explorer(cards=[[1, 0]])
    with pytest.raises(ValueError, match="style must be one of"):
        tw.figure_geometry("poster")


def test_registered_with_the_explorers():
    spec = available_explorers()["teach_walkthrough"]
    assert spec.update is tw.update and spec.factory is tw.teach_walkthrough_explorer
