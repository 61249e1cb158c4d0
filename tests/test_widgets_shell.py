"""The explorer shell: wiring, scenes and blitting, frozen layouts, failed changes, buttons."""

import io

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from attention_lib import plots
from attention_lib.widgets import (
    FROZEN_LAYOUTS,
    Button,
    ExplorerSpec,
    HiddenControl,
    available_explorers,
    html_table,
    render_png,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _update(angle, scale=1.0):
    return {"angle": angle, "point": scale * np.array([np.cos(angle), np.sin(angle)])}


def _draw(fig, state):
    return plots.arrows_2d(fig.subplots(), [[1.0, 0.0]], query=state["point"], limit=2.5)


def _refresh(scene, state):
    plots.update_arrows_2d(scene, state["point"])


def _table(state):
    return html_table([["x", state["point"][0]], ["y", state["point"][1]]], ["", "value"])


def _readout(values, state):
    return f"angle = {values['angle']:.2f}"


def _spec(update=_update, draw=_draw, refresh=_refresh, readout=_readout, **kwargs):
    return ExplorerSpec(
        "toy",
        "toy",
        None,
        update,
        draw,
        refresh,
        _table,
        readout,
        **{"figsize": (3.0, 2.5), **kwargs},
    )


def _controls():
    return {
        "angle": ipywidgets.FloatSlider(0.0, min=-3.0, max=3.0, continuous_update=False),
        "scale": ipywidgets.FloatSlider(1.0, min=0.0, max=2.0, continuous_update=False),
    }


def _explorer(spec=None, **kwargs):
    return (spec or _spec()).explorer(_controls(), **kwargs)


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)


def _counting(update, calls):
    def counted(**values):
        calls.append(tuple(values.values()))
        return update(**values)

    return counted


def test_layout_and_css_classes():
    explorer = _explorer()
    assert "attn-explorer" in explorer.widget._dom_classes
    assert explorer.main_control is explorer.controls["angle"]
    assert "attn-main-control" in explorer.main_control._dom_classes
    assert "attn-readout" in explorer.readout._dom_classes
    assert isinstance(explorer.figure, ipywidgets.Image)
    assert "attn-figure" in explorer.figure._dom_classes
    # Front-end helper, controls row, readout, figure, collapsible numbers: no Output widget.
    frontend, row, readout, figure, numbers = explorer.widget.children
    assert frontend is explorer.frontend and "attn-frontend" in frontend._dom_classes
    assert list(row.children) == [*explorer.controls.values(), explorer.board_toggle]
    assert readout is explorer.readout and figure is explorer.figure
    assert isinstance(numbers, ipywidgets.Accordion) and numbers.selected_index is None
    assert numbers.children[0] is explorer.table


def test_changing_a_control_recomputes_and_redraws():
    explorer = _explorer()
    first_png, first_state = explorer.png, explorer.state
    np.testing.assert_allclose(first_state["point"], [1.0, 0.0])
    explorer.controls["angle"].value = 1.5  # observers fire synchronously, as in a kernel
    np.testing.assert_allclose(explorer.state["point"], [np.cos(1.5), np.sin(1.5)])
    assert explorer.png != first_png
    assert explorer.readout.value == "angle = 1.50"
    assert f"{np.sin(1.5):.3f}" in explorer.table.value
    assert explorer.first_state is first_state

    state = explorer.set(scale=2.0)
    np.testing.assert_allclose(state["point"], 2 * np.array([np.cos(1.5), np.sin(1.5)]))
    with pytest.raises(KeyError, match="unknown control"):
        explorer.set(colour=1)


def test_png_is_the_display_width_and_the_figure_is_reused():
    pyplot_figures = set(plt.get_fignums())
    explorer = _explorer()
    fig = explorer.fig
    for angle in (0.5, 1.0, -2.0):
        explorer.set(angle=angle)
    assert explorer.fig is fig
    assert set(plt.get_fignums()) == pyplot_figures  # never a pyplot figure per change
    image = Image.open(io.BytesIO(explorer.png))
    assert image.format == "PNG"
    # as wide as JupyterLab shows it at 1920 x 1080, the aspect of the figure's inches
    assert image.size == (plots.DISPLAY_WIDTH_PX, int(2.5 / 3.0 * plots.DISPLAY_WIDTH_PX))
    assert len(fig.axes) == 1  # cleared before each draw, not stacked


def test_sliders_must_not_update_continuously():
    with pytest.raises(ValueError, match="continuous_update=False"):
        _spec().explorer({"angle": ipywidgets.FloatSlider()})
    with pytest.raises(ValueError, match="at least one control"):
        _spec().explorer({})


def test_repr_is_short_and_stable_and_the_bundle_carries_the_widget():
    explorer = _explorer()
    explorer.set(angle=2.0)
    assert repr(explorer) == "<toy explorer: run the notebook to interact>"
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == repr(explorer)
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == explorer.widget.model_id


def test_draw_static_draws_the_first_state_as_a_pyplot_figure():
    explorer = _explorer()
    explorer.set(angle=1.0)
    fig = explorer.draw_static()
    assert fig.number in plt.get_fignums()
    assert fig.get_size_inches().tolist() == [3.0, 2.5]
    # the query arrow of the first state points along +x
    query_arrow = fig.axes[0].patches[-1]
    assert query_arrow.get_xy()[:, 0].max() == pytest.approx(1.0, abs=0.05)
    # laid out once and frozen, as the live figure is
    assert type(fig.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine"
    board = explorer.draw_static(style="board")
    assert plots.figure_style(board) == "board"


def test_board_style_explorer_renders_larger_text():
    explorer = _explorer(style="board")
    assert plots.figure_style(explorer.fig) == "board"
    assert explorer.fig.axes[0].xaxis.label.get_fontsize() == plots.STYLES["board"]["label"]


def test_render_png_encodes_fast_settings_and_html_table_escapes():
    fig, _ax = plots.new_figure(pyplot=False, figsize=(2, 1), dpi=40)
    png = render_png(fig)
    assert Image.open(io.BytesIO(png)).size == (80, 40)
    table = html_table([["<k>", 0.12345]], ["key", "weight"], caption="c", decimals=2)
    assert "&lt;k&gt;" in table and "<td>0.12</td>" in table and "<caption>c</caption>" in table


def test_registry_lists_explorer_specs():
    specs = available_explorers()
    assert specs, "no explorer found"
    assert all(isinstance(s, ExplorerSpec) and s.name == name for name, s in specs.items())


def test_a_spec_is_made_from_its_module_by_name_and_says_what_is_missing():
    from attention_lib.widgets import soft_lookup

    spec = soft_lookup.EXPLORER
    assert (spec.update, spec.refresh, spec.factory) == (
        soft_lookup.update,
        soft_lookup.refresh,
        soft_lookup.soft_lookup_explorer,
    )
    with pytest.raises(AttributeError, match="defines no update, draw, refresh"):
        ExplorerSpec.from_module(__name__, title="tests", figsize=(1, 1))


def test_refresh_moves_the_scene_without_new_axes_or_layout():
    calls = []

    def refresh(scene, state):
        calls.append(state["angle"])
        _refresh(scene, state)

    explorer = _explorer(_spec(refresh=refresh))
    axes = list(explorer.fig.axes)
    position = axes[0].get_position().bounds
    first = explorer.png
    explorer.set(angle=1.0)
    assert calls == [0.0, 1.0]  # once after the layout pass, then per change
    assert explorer.fig.axes == axes  # same axes: nothing was cleared
    assert axes[0].get_position().bounds == position  # frozen layout
    assert type(explorer.fig.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine"
    assert explorer.png != first
    # draw_static still draws from scratch, with its own layout.
    fig = explorer.draw_static(state=explorer.state)
    assert fig is not explorer.fig and len(fig.axes) == 1


def test_blitted_frames_equal_a_fresh_drawing_of_the_same_state():
    spec = _spec()
    explorer = _explorer(spec)
    for angle in (1.0, 2.5, -0.5):
        explorer.set(angle=angle)
        fresh = render_png(spec.figure(explorer.state))
        assert not np.any(_pixels(explorer.png) != _pixels(fresh))


def test_the_shell_blits_in_z_order_with_the_still_artists_drawn_on_top():
    """A moving bar under a still line and a spine: both are drawn again, above it."""

    def draw(fig, state):
        ax = fig.subplots()
        (bar,) = ax.bar([0], [state["angle"]], color="C0", zorder=1)
        ax.axhline(0.5, color="black", linewidth=6, zorder=2)  # across the bar
        ax.set_title("still, above the panel")
        ax.set_xlim(-1, 3)
        ax.set_ylim(0, 3)
        return bar

    def refresh(bar, state):
        bar.set_height(state["angle"])

    spec = _spec(draw=draw, refresh=refresh)
    explorer = _explorer(spec)
    frozen = explorer._frozen[explorer._shown]
    ax = explorer.fig.axes[0]
    assert frozen.blitted[0] is ax.patches[0]
    assert ax.lines[0] in frozen.blitted and ax.spines["bottom"] in frozen.blitted
    assert ax.title not in frozen.blitted and ax.xaxis not in frozen.blitted
    explorer.set(angle=2.5)
    assert not np.any(_pixels(explorer.png) != _pixels(render_png(spec.figure(explorer.state))))


def test_a_scene_holds_artists_not_axes():
    def draw(fig, state):
        return fig.subplots()

    with pytest.raises(TypeError, match="not whole axes"):
        _explorer(_spec(draw=draw, refresh=lambda scene, state: None))


def test_batch_and_set_run_one_update_and_one_redraw_per_batch():
    calls = []
    explorer = _explorer(_spec(update=_counting(_update, calls)))
    frames = []
    explorer.figure.observe(lambda change: frames.append(change["new"]), names="value")
    calls.clear()
    with explorer.batch():
        explorer.controls["angle"].value = 1.0
        with explorer.batch():  # nested: the outermost block decides
            explorer.controls["scale"].value = 2.0
        assert calls == [] and frames == []
    assert calls == [(1.0, 2.0)] and len(frames) == 1

    state = explorer.set(angle=2.0, scale=0.5)
    assert calls[1:] == [(2.0, 0.5)] and len(frames) == 2
    np.testing.assert_allclose(state["point"], 0.5 * np.array([np.cos(2.0), np.sin(2.0)]))

    with explorer.batch():
        explorer.set(angle=2.0)  # the value it already has: nothing changed, nothing redrawn
    assert len(calls) == 2 and len(frames) == 2


def test_a_batch_that_fails_is_undone():
    calls = []
    explorer = _explorer(_spec(update=_counting(_update, calls)))
    before = (explorer.values, explorer.state, explorer.png, explorer.readout.value)
    with pytest.raises(RuntimeError), explorer.batch():
        explorer.controls["angle"].value = -1.0
        raise RuntimeError
    assert (explorer.values, explorer.state, explorer.png, explorer.readout.value) == before
    assert calls == [(0.0, 1.0)]  # nothing computed for the undone change


def test_a_failed_set_leaves_controls_state_and_figure_as_they_were():
    def update(angle, scale=1.0):
        if scale > 1.25:
            raise ValueError(f"scale must be at most 1.25; got {scale}.")
        return _update(angle, scale)

    controls = _controls()

    def follow_angle(change):  # a dependent control, moved inside the same change
        controls["scale"].value = abs(change["new"]) / 2

    explorer = _spec(update=update).explorer(controls, follow={"angle": follow_angle})
    explorer.set(angle=1.0)
    before = (explorer.values, explorer.state, explorer.png, explorer.readout.value)
    artists = [a.get_path().vertices.copy() for a in explorer.fig.axes[0].patches]
    with pytest.raises(ValueError, match=r"angle=3\.0 refused, nothing changed: scale must be"):
        explorer.set(angle=3.0)  # scale follows to 1.5, which update refuses
    assert (explorer.values, explorer.state, explorer.png, explorer.readout.value) == before
    assert all(
        np.array_equal(a, b.get_path().vertices)
        for a, b in zip(artists, explorer.fig.axes[0].patches, strict=True)
    )
    with pytest.raises(ValueError, match="angle must be a number from -3 to 3; got nan"):
        explorer.set(angle=float("nan"))
    with pytest.raises(ValueError, match="scale must be a number from 0 to 2; got 5"):
        explorer.set(scale=5)  # ipywidgets would clip it to 2 without a word
    assert (explorer.values, explorer.state, explorer.png) == before[:3]


def test_a_failed_change_in_the_page_is_undone_and_said_under_the_readout():
    def update(angle, scale=1.0):
        if angle > 2.0:
            raise ValueError(f"angle must be at most 2; got {angle}.")
        return _update(angle, scale)

    explorer = _explorer(_spec(update=update))
    state, png = explorer.state, explorer.png
    explorer.controls["angle"].value = 2.5  # as a slider does: no exception reaches the page
    assert explorer.values["angle"] == 0.0 and explorer.state is state and explorer.png == png
    assert explorer.readout.value == "angle = 0.00<br>angle must be at most 2; got 2.5."
    explorer.set(angle=1.0)
    assert explorer.readout.value == "angle = 1.00"


def test_follow_moves_dependent_controls_within_the_same_update():
    calls = []
    controls = _controls()

    def follow_angle(change):  # e.g. a range that follows the main control
        controls["scale"].value = abs(change["new"]) / 2

    explorer = _spec(update=_counting(_update, calls)).explorer(
        controls, follow={"angle": follow_angle}
    )
    calls.clear()
    controls["angle"].value = 1.5  # as the slider does: no batch around it
    assert calls == [(1.5, 0.75)]
    controls["scale"].value = 2.0  # a dependent control on its own: no follow
    assert calls[1:] == [(1.5, 2.0)] and explorer.values["angle"] == 1.5
    with pytest.raises(KeyError, match="unknown control"):
        _explorer(follow={"colour": follow_angle})


def test_notes_read_the_state_the_change_ends_in():
    explorer = _explorer()

    def note(state):
        return f"point x {state['point'][0]:.2f}"

    with explorer.batch():
        explorer.controls["angle"].value = np.pi / 2
        explorer.note(note)  # the state is still the old one here: the note waits for it
    assert explorer.readout.value == "angle = 1.57<br>point x 0.00"
    explorer.note(note)  # outside a batch: at once, under the readout
    assert explorer.readout.value == "angle = 1.57<br>point x 0.00"
    explorer.set(scale=0.5)  # the next change's readout replaces it
    assert explorer.readout.value == "angle = 1.57"


def test_buttons_are_declared_press_through_set_and_switch_off_at_their_ends():
    def update(step, scale):
        return {"step": step, "point": np.array([scale * step / 3, 0.0])}

    start = {"step": 1, "scale": 1.0}
    buttons = {
        "next": Button(
            "Next", lambda v: {"step": v["step"] + 1}, lambda v: v["step"] < 3, primary=True
        ),
        "back": Button("Back", lambda v: {"step": v["step"] - 1}, lambda v: v["step"] > 1),
        "reset": Button("Reset", lambda v: start),
    }
    spec = _spec(update=update, readout=lambda values, s: f"step {s['step']}")
    controls = {
        "step": HiddenControl(1),
        "scale": ipywidgets.FloatSlider(1.0, min=0.5, max=2.0, continuous_update=False),
    }
    explorer = spec.explorer(controls, buttons=buttons)
    next_button, back_button, reset_button = explorer.buttons.values()
    assert explorer.main_control is next_button and "attn-main-control" in next_button._dom_classes
    assert list(explorer.controls_row.children) == [
        next_button,
        back_button,
        reset_button,
        controls["scale"],  # the hidden step shows nowhere
        explorer.board_toggle,
    ]
    assert "attn-next" in next_button._dom_classes and "attn-back" in back_button._dom_classes
    assert next_button.button_style == "primary" and back_button.disabled
    next_button.click()
    assert explorer.press("next")["step"] == 3 and next_button.disabled
    assert not back_button.disabled and explorer.readout.value == "step 3"
    explorer.set(scale=2.0)
    reset_button.click()
    assert explorer.values == start and back_button.disabled and not next_button.disabled


def test_a_value_the_factory_binds_is_a_hidden_control_that_reaches_update():
    def update(angle, scale, *, offset):
        return {**_update(angle, scale), "offset": offset}

    explorer = _spec(update=update).explorer({**_controls(), "offset": HiddenControl(7)})
    assert explorer.set(angle=1.0)["offset"] == 7 and explorer.values["offset"] == 7
    assert explorer.set(offset=8)["offset"] == 8
    assert all(not isinstance(w, HiddenControl) for w in explorer.controls_row.children)


def test_a_new_static_key_draws_in_full_and_freezes_again():
    """Zooming out needs new axis limits (static); turning only moves the arrow (blitted)."""
    draws = []

    def update(angle, scale):
        return {**_update(angle, scale), "limit": 2.5 if scale <= 1.0 else 5.0}

    def draw(fig, state):
        draws.append(state["limit"])
        return plots.arrows_2d(fig.subplots(), [[1.0, 0.0]], state["point"], limit=state["limit"])

    spec = _spec(update=update, draw=draw, static_key=lambda s: s["limit"])
    explorer = _explorer(spec)
    explorer.set(angle=1.0)
    explorer.set(scale=0.5)  # same limit: blitted
    assert draws == [2.5]
    first = explorer._frozen[explorer._shown]
    explorer.set(scale=2.0)  # new limit: drawn again from scratch, frozen again
    assert draws == [2.5, 5.0] and explorer._frozen[explorer._shown] is not first
    explorer.set(angle=2.5)  # blitted on the new drawing
    assert draws == [2.5, 5.0] and len(explorer.fig.axes) == 1
    fresh = spec.figure(explorer.state)
    assert explorer.fig.axes[0].get_position().bounds == fresh.axes[0].get_position().bounds
    assert not np.any(_pixels(explorer.png) != _pixels(render_png(fresh)))


def test_figure_is_shown_at_its_own_width_never_stretched():
    explorer = _explorer()
    layout = explorer.figure.layout
    assert (layout.width, layout.max_width, layout.height) == (
        f"{plots.DISPLAY_WIDTH_PX}px",
        "100%",
        "auto",
    )
    assert Image.open(io.BytesIO(explorer.png)).size[0] == plots.DISPLAY_WIDTH_PX


def test_board_toggle_redraws_in_the_board_style_and_back():
    explorer = _explorer(_spec(board_figsize=(6.0, 4.0)), style="default")
    default_png = explorer.png
    assert "attn-board" not in explorer.widget._dom_classes
    explorer.board_toggle.value = True
    assert explorer.style == "board" and plots.figure_style(explorer.fig) == "board"
    assert "attn-board" in explorer.widget._dom_classes  # large readout (_frontend.css)
    tick = explorer.fig.axes[0].xaxis.get_ticklabels()[0]
    assert tick.get_fontsize() == plots.STYLES["board"]["rc"]["xtick.labelsize"]
    # same pixel width, the board figure's aspect: larger type on the same pixels
    assert Image.open(io.BytesIO(explorer.png)).size == (
        plots.DISPLAY_WIDTH_PX,
        int(4.0 / 6.0 * plots.DISPLAY_WIDTH_PX),  # Agg truncates
    )
    explorer.set(angle=2.0)  # controls keep working in the board style
    assert plots.figure_style(explorer.fig) == "board"
    explorer.board_toggle.value = False
    explorer.set(angle=0.0)
    assert explorer.style == "default" and "attn-board" not in explorer.widget._dom_classes
    assert not np.any(_pixels(explorer.png) != _pixels(default_png))  # the same frame again
    with pytest.raises(ValueError, match="style must be one of"):
        explorer.set_style("poster")


def _dot_spec(draws):
    def draw(fig, state):
        draws.append((plots.figure_style(fig), state["limit"]))
        ax = fig.subplots()
        ax.set_xlim(-state["limit"], state["limit"])
        (dot,) = ax.plot([0.0], [0.0], "o")
        return dot

    return ExplorerSpec(
        "dot", "dot", None, lambda x, limit: {"x": x, "limit": limit}, draw,
        lambda dot, state: dot.set_data([state["x"]], [0.0]), lambda s: "", lambda v, s: "",
        figsize=(3.0, 2.0), board_figsize=(4.0, 3.0), static_key=lambda s: s["limit"],
    )  # fmt: skip


def test_recent_layouts_are_kept_and_recalled_without_drawing():
    draws = []
    explorer = _dot_spec(draws).explorer(
        {
            "x": ipywidgets.FloatSlider(0.0, min=-5.0, max=5.0, continuous_update=False),
            "limit": ipywidgets.IntSlider(1, min=1, max=20, continuous_update=False),
        },
        style="default",
    )
    first = explorer.png
    explorer.set(limit=2)
    explorer.set(limit=1)  # recalled: no new drawing, the first frame again
    assert draws == [("default", 1), ("default", 2)]
    assert not np.any(_pixels(explorer.png) != _pixels(first))
    for limit in range(3, 4 + FROZEN_LAYOUTS):  # more sizes than are kept
        explorer.set(limit=limit)
    assert len(explorer._frozen) == FROZEN_LAYOUTS
    explorer.set(limit=1)  # forgotten: drawn again
    assert draws[-1] == ("default", 1) and draws.count(("default", 1)) == 2


def test_switching_style_back_and_forth_blits_after_the_first_switch_each_way():
    draws = []
    explorer = _dot_spec(draws).explorer(
        {
            "x": ipywidgets.FloatSlider(0.0, min=-1.0, max=1.0, continuous_update=False),
            "limit": ipywidgets.IntSlider(1, min=1, max=2, continuous_update=False),
        },
        style="default",
    )
    explorer.board_toggle.value = True
    explorer.set(x=0.5)
    explorer.board_toggle.value = False
    default_frame = explorer.png
    explorer.board_toggle.value = True
    assert draws == [("default", 1), ("board", 1)]  # the later switches recalled them
    assert plots.figure_style(explorer.fig) == "board"
    assert _pixels(explorer.png).shape != _pixels(default_frame).shape  # the board aspect


def test_a_control_beside_a_narrower_figure():
    """``beside_figure`` moves a control next to the figure; ``display_width_px`` narrows it."""
    explorer = _explorer(_spec(display_width_px=1100), beside_figure=("scale",))
    _, row, readout, figure_row, _ = explorer.widget.children
    assert readout is explorer.readout
    assert list(row.children) == [explorer.controls["angle"], explorer.board_toggle]
    beside, figure = figure_row.children
    assert list(beside.children) == [explorer.controls["scale"]] and figure is explorer.figure
    # a narrow page shrinks the figure beside the control; the row never scrolls on its own
    assert (beside.layout.flex, explorer.figure.layout.min_width) == ("0 0 auto", "0")
    assert figure_row.layout.overflow == "visible"
    assert explorer.figure.layout.width == "1100px"
    assert Image.open(io.BytesIO(explorer.png)).size[0] == 1100
    assert explorer.figure_dpi == pytest.approx(1100 / 3.0)
    explorer.set(scale=2.0)  # still a control of update
    assert explorer.state["point"][0] == pytest.approx(2.0)
    assert explorer.draw_static().dpi == pytest.approx(1100 / 3.0)
    with pytest.raises(KeyError, match="beside_figure names unknown control"):
        _explorer(beside_figure=("zoom",))
    assert _explorer().display_width_px == plots.DISPLAY_WIDTH_PX


def test_the_layout_depends_on_the_frozen_key_not_on_the_state_that_first_drew_it():
    """A moving title with taller or wider glyphs must not move the axes: the layout pass
    sees each text of the scene as its lines only."""

    def update(angle, scale):
        title = "short" if angle < 1 else "a much wider title √Åg ‖J‖\nand a second line"
        return {**_update(angle, scale), "title": title}

    def draw(fig, state):
        ax = fig.subplots()
        ax.set_title(state["title"] if "\n" in state["title"] else state["title"] + "\n")
        return _draw_on(ax, state), ax.title

    def _draw_on(ax, state):
        return plots.arrows_2d(ax, [[1.0, 0.0]], query=state["point"], limit=2.5)

    def refresh(scene, state):
        arrows, title = scene
        plots.update_arrows_2d(arrows, state["point"])
        title.set_text(state["title"] if "\n" in state["title"] else state["title"] + "\n")

    spec = _spec(update=update, draw=draw, refresh=refresh)
    first_short = _explorer(spec)
    first_wide = spec.explorer(
        {
            "angle": ipywidgets.FloatSlider(2.0, min=-3.0, max=3.0, continuous_update=False),
            "scale": ipywidgets.FloatSlider(1.0, min=0.0, max=2.0, continuous_update=False),
        }
    )
    first_short.set(angle=2.0)
    assert first_short.png == first_wide.png
    assert first_short.fig.axes[0].get_position().bounds == (
        first_wide.fig.axes[0].get_position().bounds
    )


def test_an_axis_of_the_scene_keeps_the_room_of_the_tick_labels_draw_gave_it():
    """The mask editor's key labels gain and lose "·pad": drawn at their widest, they fit."""
    wide = ["a long key label", "and another"]

    def draw(fig, state):
        ax = fig.subplots()
        ax.set_xticks([0, 1], wide, rotation=90)
        return ax.xaxis

    def refresh(axis, state):
        axis.set_ticklabels(wide if state["angle"] > 0 else ["k0", "k1"])

    explorer = _explorer(_spec(draw=draw, refresh=refresh))
    explorer.set(angle=1.0)
    fig = explorer.fig
    renderer = fig.canvas.get_renderer()
    labels = fig.axes[0].get_xticklabels()
    assert [label.get_text() for label in labels] == wide
    assert min(label.get_window_extent(renderer).y0 for label in labels) >= 0


def test_a_forgotten_drawing_is_drawn_again_as_a_fresh_one(monkeypatch):
    # The mask editor's T is its static key; with more of them than are kept frozen,
    # going back to one drawn before draws it in full again: the same pixels as a
    # fresh explorer draws.
    from attention_lib.widgets import _shell
    from attention_lib.widgets.mask_editor import MAX_LENGTH, mask_editor_explorer

    monkeypatch.setattr(_shell, "FROZEN_LAYOUTS", 3)  # fewer than the editor's T
    lengths = range(1, MAX_LENGTH + 1)
    editor = mask_editor_explorer(length=1, style="board")
    for length in [*lengths, *lengths]:
        editor.set(length=length)
    assert len(editor._frozen) == 3
    fresh = mask_editor_explorer(length=1, style="board")
    fresh.set(length=MAX_LENGTH)
    assert not np.any(_pixels(editor.png) != _pixels(fresh.png))
