"""The explorer shell: classes, redraw on change, PNG bytes, static figure, stable repr."""

import io

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from attention_lib import plots
from attention_lib.widgets import (
    FROZEN_LAYOUTS,
    Explorer,
    ExplorerSpec,
    available_explorers,
    html_table,
    live_dpi,
    render_png,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _update(angle, scale=1.0):
    return {"angle": angle, "point": scale * np.array([np.cos(angle), np.sin(angle)])}


def _draw(fig, state):
    ax = fig.subplots()
    plots.arrows_2d(ax, [[1.0, 0.0]], query=state["point"], limit=2.5)


def _controls():
    return {
        "angle": ipywidgets.FloatSlider(0.0, min=-3.0, max=3.0, continuous_update=False),
        "scale": ipywidgets.FloatSlider(1.0, min=0.0, max=2.0, continuous_update=False),
    }


def _explorer(**kwargs):
    return Explorer(
        "toy",
        _controls(),
        _update,
        _draw,
        table=lambda s: html_table([["x", s["point"][0]], ["y", s["point"][1]]], ["", "value"]),
        readout=lambda values, s: f"angle = {values['angle']:.2f}",
        figsize=(3.0, 2.5),
        **kwargs,
    )


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
    fig = explorer._fig
    for angle in (0.5, 1.0, -2.0):
        explorer.set(angle=angle)
    assert explorer._fig is fig
    assert set(plt.get_fignums()) == pyplot_figures  # never a pyplot figure per change
    image = Image.open(io.BytesIO(explorer.png))
    assert image.format == "PNG"
    # as wide as JupyterLab shows it at 1920 x 1080, the aspect of the figure's inches
    assert image.size == (plots.DISPLAY_WIDTH_PX, int(2.5 / 3.0 * plots.DISPLAY_WIDTH_PX))
    assert len(fig.axes) == 1  # cleared before each draw, not stacked


def test_sliders_must_not_update_continuously():
    with pytest.raises(ValueError, match="continuous_update=False"):
        Explorer(
            "bad",
            {"x": ipywidgets.FloatSlider()},
            lambda x: x,
            lambda fig, s: None,
            lambda s: "",
            lambda v, s: "",
        )
    with pytest.raises(ValueError, match="at least one control"):
        Explorer("bad", {}, lambda: 0, lambda fig, s: None, lambda s: "", lambda v, s: "")


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
    board = explorer.draw_static(style="board")
    assert plots.figure_style(board) == "board"


def test_board_style_explorer_renders_larger_text():
    explorer = _explorer(style="board")
    assert plots.figure_style(explorer._fig) == "board"
    assert explorer._fig.axes[0].xaxis.label.get_fontsize() == plots.STYLES["board"]["label"]


def test_render_png_encodes_fast_settings_and_html_table_escapes():
    fig, _ax = plots.new_figure(pyplot=False, figsize=(2, 1), dpi=40)
    png = render_png(fig)
    assert Image.open(io.BytesIO(png)).size == (80, 40)
    table = html_table([["<k>", 0.12345]], ["key", "weight"], caption="c", decimals=2)
    assert "&lt;k&gt;" in table and "<td>0.12</td>" in table and "<caption>c</caption>" in table


def test_registry_lists_explorer_specs():
    specs = available_explorers()
    assert isinstance(specs, dict)
    assert all(isinstance(s, ExplorerSpec) and s.name == name for name, s in specs.items())


def test_refresh_path_moves_artists_without_new_axes_or_layout():
    calls = []

    def refresh(fig, state):
        calls.append(state["angle"])
        plots.update_arrows_2d(fig.axes[0], state["point"])

    controls = {"angle": ipywidgets.FloatSlider(0.0, min=-3, max=3, continuous_update=False)}
    explorer = Explorer(
        "moving",
        controls,
        _update,
        _draw,
        lambda s: "",
        lambda v, s: "",
        refresh=refresh,
        figsize=(3.0, 2.5),
    )
    axes = list(explorer._fig.axes)
    position = axes[0].get_position().bounds
    first = explorer.png
    explorer.set(angle=1.0)
    assert calls == [0.0, 1.0]  # once to learn the moving artists, then per change
    assert explorer._fig.axes == axes  # same axes: nothing was cleared
    assert axes[0].get_position().bounds == position  # frozen layout
    assert type(explorer._fig.get_layout_engine()).__name__ in (
        "NoneType",
        "PlaceHolderLayoutEngine",
    )
    assert explorer.png != first
    assert explorer._background is None  # refresh returned nothing: full frozen redraw
    # draw_static still draws from scratch, with its own layout.
    fig = explorer.draw_static(state=explorer.state)
    assert fig is not explorer._fig and len(fig.axes) == 1


def test_blitted_png_matches_a_full_render_of_the_same_state():
    def refresh(fig, state):
        return plots.update_arrows_2d(fig.axes[0], state["point"])

    controls = {"angle": ipywidgets.FloatSlider(0.0, min=-3, max=3, continuous_update=False)}
    explorer = Explorer(
        "blit",
        controls,
        _update,
        _draw,
        lambda s: "",
        lambda v, s: "",
        refresh=refresh,
        figsize=(3.0, 2.5),
    )
    assert explorer._background is not None
    for angle in (1.0, 2.5, -0.5):
        explorer.set(angle=angle)
    blitted = np.asarray(Image.open(io.BytesIO(explorer.png)).convert("RGB"), dtype=int)

    fig, _ = plots.new_figure(0, figsize=(3.0, 2.5), pyplot=False, dpi=live_dpi((3.0, 2.5)))
    _draw(fig, explorer.state)
    full = np.asarray(Image.open(io.BytesIO(render_png(fig))).convert("RGB"), dtype=int)
    assert blitted.shape == full.shape
    differing = np.any(np.abs(blitted - full) > 40, axis=-1).mean()
    assert differing < 0.01  # the same picture (antialiasing aside)


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)


def _counting_update(calls):
    def update(angle, scale):
        calls.append((angle, scale))
        return _update(angle, scale)

    return update


def test_batch_and_set_run_one_update_and_one_redraw_per_batch():
    calls = []
    explorer = Explorer(
        "toy",
        _controls(),
        _counting_update(calls),
        _draw,
        lambda s: "",
        lambda v, s: "",
        figsize=(3.0, 2.5),
    )
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

    with pytest.raises(RuntimeError), explorer.batch():
        explorer.controls["angle"].value = -1.0
        raise RuntimeError
    assert calls[2:] == [(-1.0, 0.5)]  # the control did change: the figure shows it anyway


def test_follow_moves_dependent_controls_within_the_same_update():
    calls = []
    controls = _controls()

    def follow_angle(change):  # e.g. a range that follows the main control
        controls["scale"].value = abs(change["new"]) / 2

    explorer = Explorer(
        "toy",
        controls,
        _counting_update(calls),
        _draw,
        lambda s: "",
        lambda v, s: "",
        follow={"angle": follow_angle},
        figsize=(3.0, 2.5),
    )
    calls.clear()
    controls["angle"].value = 1.5  # as the slider does: no batch around it
    assert calls == [(1.5, 0.75)]
    controls["scale"].value = 2.0  # a dependent control on its own: no follow
    assert calls[1:] == [(1.5, 2.0)] and explorer.values["angle"] == 1.5
    with pytest.raises(KeyError, match="unknown control"):
        Explorer(
            "bad",
            _controls(),
            _update,
            _draw,
            lambda s: "",
            lambda v, s: "",
            follow={"colour": follow_angle},
        )


def test_a_new_static_key_draws_in_full_and_freezes_again():
    """Zooming out needs new axis limits (static); turning only moves the arrow (blitted)."""
    draws = []

    def update(angle, scale):
        return {**_update(angle, scale), "limit": 2.5 if scale <= 1.0 else 5.0}

    def draw(fig, state):
        draws.append(state["limit"])
        ax = fig.subplots()
        plots.arrows_2d(ax, [[1.0, 0.0]], query=state["point"], limit=state["limit"])

    def refresh(fig, state):
        return plots.update_arrows_2d(fig.axes[0], state["point"])

    explorer = Explorer(
        "zoom",
        _controls(),
        update,
        draw,
        lambda s: "",
        lambda v, s: "",
        refresh=refresh,
        static_key=lambda s: s["limit"],
        figsize=(3.0, 2.5),
    )
    explorer.set(angle=1.0)
    explorer.set(scale=0.5)  # same limit: blitted
    assert draws == [2.5]
    first_background = explorer._background
    explorer.set(scale=2.0)  # new limit: drawn again from scratch, frozen again
    assert draws == [2.5, 5.0]
    assert explorer._background is not None and explorer._background is not first_background
    explorer.set(angle=2.5)  # blitted on the new drawing
    assert draws == [2.5, 5.0] and len(explorer._fig.axes) == 1

    # What a new figure shows for this state, with the constrained layout the figure
    # started with (the freeze had switched it off; the new drawing got it back).
    fig, _ = plots.new_figure(0, figsize=(3.0, 2.5), pyplot=False, dpi=live_dpi((3.0, 2.5)))
    draw(fig, explorer.state)
    full = render_png(fig)
    assert explorer._fig.axes[0].get_position().bounds == pytest.approx(
        fig.axes[0].get_position().bounds
    )
    differing = np.any(_pixels(explorer.png) != _pixels(full), axis=-1)
    assert differing.mean() < 1e-3  # the same picture, a few antialiased pixels aside


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
    explorer = _explorer(board_figsize=(6.0, 4.0), style="default")
    default_png = explorer.png
    assert "attn-board" not in explorer.widget._dom_classes
    explorer.board_toggle.value = True
    assert explorer.style == "board" and plots.figure_style(explorer._fig) == "board"
    assert "attn-board" in explorer.widget._dom_classes  # large readout (_frontend.css)
    tick = explorer._fig.axes[0].xaxis.get_ticklabels()[0]
    assert tick.get_fontsize() == plots.STYLES["board"]["rc"]["xtick.labelsize"]
    # same pixel width, the board figure's aspect: larger type on the same pixels
    assert Image.open(io.BytesIO(explorer.png)).size == (
        plots.DISPLAY_WIDTH_PX,
        int(4.0 / 6.0 * plots.DISPLAY_WIDTH_PX),  # Agg truncates
    )
    explorer.set(angle=2.0)  # controls keep working in the board style
    assert plots.figure_style(explorer._fig) == "board"
    explorer.board_toggle.value = False
    explorer.set(angle=0.0)
    assert explorer.style == "default" and "attn-board" not in explorer.widget._dom_classes
    assert _pixels(explorer.png).shape == _pixels(default_png).shape
    assert not np.any(_pixels(explorer.png) != _pixels(default_png))  # the same frame again
    with pytest.raises(ValueError, match="style must be one of"):
        explorer.set_style("poster")


def test_recent_layouts_are_kept_and_recalled_without_drawing():
    draws = []

    def draw(fig, state):
        draws.append(state["limit"])
        ax = fig.subplots()
        ax.set_xlim(-state["limit"], state["limit"])
        ax.plot([0.0], [0.0], "o", gid="dot")

    def refresh(fig, state):
        dot = plots.artist(fig.axes[0], "dot")
        dot.set_data([state["x"]], [0.0])
        return [dot]

    explorer = Explorer(
        "dot",
        {
            "x": ipywidgets.FloatSlider(0.0, min=-5.0, max=5.0, continuous_update=False),
            "limit": ipywidgets.IntSlider(1, min=1, max=20, continuous_update=False),
        },
        lambda x, limit: {"x": x, "limit": limit},
        draw,
        lambda s: "",
        lambda v, s: "",
        refresh=refresh,
        static_key=lambda s: s["limit"],
        figsize=(3.0, 2.0),
    )
    first = explorer.png
    explorer.set(limit=2)
    explorer.set(limit=1)  # recalled: no new drawing, the first frame again
    assert draws == [1, 2]
    assert not np.any(_pixels(explorer.png) != _pixels(first))
    for limit in range(3, 4 + FROZEN_LAYOUTS):  # more sizes than are kept
        explorer.set(limit=limit)
    assert len(explorer._frozen) == FROZEN_LAYOUTS
    explorer.set(limit=1)  # forgotten: drawn again
    assert draws[-1] == 1 and draws.count(1) == 2


def test_a_control_beside_a_narrower_figure():
    """``beside_figure`` moves a control next to the figure; ``display_width_px`` narrows it."""
    explorer = _explorer(display_width_px=1100, beside_figure=("scale",))
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
    explorer.set(scale=2.0)  # still a control of update
    assert explorer.state["point"][0] == pytest.approx(2.0)
    assert explorer.draw_static().dpi == pytest.approx(1100 / 3.0)
    with pytest.raises(KeyError, match="beside_figure names unknown control"):
        _explorer(beside_figure=("zoom",))


def test_spec_passes_its_display_width_to_the_explorer():
    spec = ExplorerSpec(
        "toy", "toy", None, _update, _draw, lambda fig, s: None, lambda s: "",
        lambda values, s: "", figsize=(3.0, 2.5), display_width_px=900,
    )  # fmt: skip
    explorer = spec.explorer(_controls(), beside_figure=("scale",))
    assert explorer.display_width_px == 900 and explorer.figure_dpi == pytest.approx(300.0)
    assert spec._replace(display_width_px=None).explorer(_controls()).display_width_px == (
        plots.DISPLAY_WIDTH_PX
    )


def test_switching_style_back_and_forth_blits_after_the_first_switch_each_way():
    draws = []

    def draw(fig, state):
        draws.append(plots.figure_style(fig))
        ax = fig.subplots()
        ax.set_xlim(-1.0, 1.0)
        ax.plot([0.0], [0.0], "o", gid="dot")

    def refresh(fig, state):
        dot = plots.artist(fig.axes[0], "dot")
        dot.set_data([state], [0.0])
        return [dot]

    explorer = Explorer(
        "dot",
        {"x": ipywidgets.FloatSlider(0.0, min=-1.0, max=1.0, continuous_update=False)},
        lambda x: x,
        draw,
        lambda s: "",
        lambda v, s: "",
        refresh=refresh,
        figsize=(3.0, 2.0),
        board_figsize=(4.0, 3.0),
        style="default",
    )
    explorer.board_toggle.value = True
    explorer.set(x=0.5)
    explorer.board_toggle.value = False
    default_frame = explorer.png
    explorer.board_toggle.value = True
    assert draws == ["default", "board"]  # the two later switches recalled frozen layouts
    assert plots.figure_style(explorer._fig) == "board"
    assert _pixels(explorer.png).shape != _pixels(default_frame).shape  # the board aspect
