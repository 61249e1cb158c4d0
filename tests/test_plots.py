"""attention_lib.plots: one style, masked cells distinct, labels, board style."""

import io

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from attention_lib import causal_mask, plots
from attention_lib.widgets import render_png


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _pixel(fig, ax, x, y):
    """RGB of the rendered figure at data coordinates (x, y) of ``ax``."""
    png = render_png(fig)
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    px, py = ax.transData.transform((x, y))
    height = image.shape[0]
    return image[round(height - py), round(px)]


def test_masked_cells_are_drawn_distinct_from_zero_weight_cells():
    weights = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    mask = causal_mask(3)
    mask[2, 2] = True
    fig, ax = plots.new_figure(pyplot=False, dpi=80)
    hatched = plots.attention_heatmap(
        weights, ax=ax, mask=mask, annotate=False, colorbar=False
    ).masked
    assert hatched.get_hatch() == "//"
    squares = hatched.get_path().vertices.reshape(-1, 5, 2)[:, :4].mean(axis=1)  # cell centres
    assert sorted(map(tuple, squares[:, ::-1].tolist())) == [(0.0, 1.0), (0.0, 2.0), (1.0, 2.0)]

    # Rendered: the masked cell (0, 1) holds weight 0, yet it is grey/hatched,
    # not the colormap's colour for 0.
    masked_rgb = _pixel(fig, ax, 1.25, 0.0)  # off-centre to hit the hatch background
    zero_rgb = np.array(mpl.colormaps["viridis"](0.0)[:3]) * 255
    assert np.abs(masked_rgb.astype(float) - zero_rgb).max() > 60
    grey = np.array(mpl.colors.to_rgb(plots.MASKED_COLOR)) * 255
    hatch = np.array(mpl.colors.to_rgb("#6e6e6e")) * 255
    assert min(np.abs(masked_rgb - grey).max(), np.abs(masked_rgb - hatch).max()) < 40


def test_allowed_zero_weight_cell_uses_the_colormap_not_grey():
    weights = np.array([[1.0, 0.0], [0.0, 1.0]])
    fig, ax = plots.new_figure(pyplot=False, dpi=80)
    plots.attention_heatmap(
        weights, ax=ax, mask=np.array([[True, True], [False, True]]), annotate=False, colorbar=False
    )
    zero_allowed = _pixel(fig, ax, 1.0, 0.0).astype(float)
    masked = _pixel(fig, ax, 0.0, 1.0).astype(float)
    expected = np.array(mpl.colormaps["viridis"](0.0)[:3]) * 255
    assert np.abs(zero_allowed - expected).max() < 10
    assert np.abs(zero_allowed - masked).max() > 60


def test_heatmap_labels_annotations_and_colormap():
    weights = np.array([[0.123456, 0.876544], [0.5, 0.5]])
    _fig, ax = plots.new_figure(pyplot=False)
    image = plots.attention_heatmap(
        weights, ax=ax, query_labels=["the", "cat"], key_labels=["a", "b"], title="weights"
    ).image
    assert ax.get_xlabel() == "key" and ax.get_ylabel() == "query"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["the", "cat"]
    assert ax.get_title() == "weights"
    shown = sorted(t.get_text() for t in ax.texts if t.get_visible())
    assert shown == ["0.12", "0.50", "0.50", "0.88"]
    assert image.get_cmap().name.startswith("viridis")
    assert image.get_clim() == (0.0, 1.0)


def test_heatmap_annotates_only_small_matrices_by_default():
    _fig, axes = plots.new_figure(1, 2, pyplot=False)
    plots.attention_heatmap(np.full((4, 4), 0.25), ax=axes[0], colorbar=False)
    plots.attention_heatmap(np.full((20, 20), 0.05), ax=axes[1], colorbar=False)
    assert len(axes[0].texts) == 16
    assert len(axes[1].texts) == 0


def test_heatmap_rejects_bad_input_with_clear_messages():
    _fig, ax = plots.new_figure(pyplot=False)
    with pytest.raises(ValueError, match=r"2-D \(T_q, T_k\).*\(2, 3, 3\)"):
        plots.attention_heatmap(np.zeros((2, 3, 3)), ax=ax)
    with pytest.raises(ValueError, match="does not broadcast"):
        plots.attention_heatmap(np.zeros((3, 3)), ax=ax, mask=np.ones((2, 3), dtype=bool))
    with pytest.raises(TypeError, match="boolean"):
        plots.attention_heatmap(np.zeros((2, 2)), ax=ax, mask=np.ones((2, 2)))
    with pytest.raises(ValueError, match="key_labels must have 2"):
        plots.attention_heatmap(np.zeros((2, 2)), ax=ax, key_labels=["a"])


def test_board_style_is_larger_and_survives_rendering_outside_the_block():
    with plots.series_style("board"):
        board_fig, board_ax = plots.new_figure(pyplot=False)
        plots.variance_curve([1, 2, 4], [1.0, 2.0, 4.0], ax=board_ax, title="board")
    fig, ax = plots.new_figure(pyplot=False)
    plots.variance_curve([1, 2, 4], [1.0, 2.0, 4.0], ax=ax, title="default")
    render_png(board_fig)  # rendered outside the block: ticks are created now
    render_png(fig)
    board_tick = board_ax.get_xticklabels()[0].get_fontsize()
    tick = ax.get_xticklabels()[0].get_fontsize()
    assert board_tick >= 1.5 * tick
    assert board_ax.xaxis.label.get_fontsize() >= 1.5 * ax.xaxis.label.get_fontsize()
    assert board_ax.title.get_fontsize() >= 1.5 * ax.title.get_fontsize()
    assert board_ax.lines[0].get_linewidth() >= 2 * ax.lines[0].get_linewidth()
    assert plots.figure_style(board_fig) == "board" and plots.figure_style(fig) == "default"


def test_style_argument_equals_board_block_and_nothing_leaks():
    before = dict(mpl.rcParams)
    _fig, ax = plots.new_figure(style="board", pyplot=False)
    assert mpl.rcParams["font.size"] == before["font.size"]
    _other_fig, other_ax = plots.new_figure(pyplot=False)
    plots.weight_bars([0.2, 0.8], ax=other_ax, style="board")
    plots.weight_bars([0.2, 0.8], ax=ax)
    assert other_ax.texts[0].get_fontsize() == ax.texts[0].get_fontsize()
    assert dict(mpl.rcParams) == before
    with pytest.raises(ValueError, match="style must be one of"):
        plots.new_figure(style="projector", pyplot=False)


def test_new_figure_agg_figures_are_invisible_to_pyplot():
    before = set(plt.get_fignums())
    fig, _ax = plots.new_figure(pyplot=False)
    assert set(plt.get_fignums()) == before
    assert type(fig.canvas).__name__ == "FigureCanvasAgg"
    _fig2, axes = plots.new_figure(2, 2)
    assert len(plt.get_fignums()) == len(before) + 1
    assert axes.shape == (2, 2)


def test_kv_cards_show_keys_values_weights_query_and_output():
    _fig, ax = plots.new_figure(pyplot=False)
    drawn = plots.kv_cards(
        [[1, 0], [0, 1], [1, 1]],
        [[1.0], [2.0], [3.0]],
        ax=ax,
        weights=[0.5, 0.25, 0.25],
        query=[1, 0],
        output=[1.75],
        labels=["A", "B", "C"],
        title="three cards",
    )
    texts = [t.get_text() for t in ax.texts]
    assert len(drawn.cards) == 3
    assert [t.get_text() for t in drawn.vectors] == [
        "[1.0, 0.0]",
        "[1.0, 0.0]",
        "[1.0]",
        "[0.0, 1.0]",
        "[2.0]",
        "[1.0, 1.0]",
        "[3.0]",
        "[1.8]",
    ]
    assert {"card A", "key", "[1.0, 0.0]", "value", "[3.0]", "query", "output"} <= set(texts)
    assert "weight 0.25" in texts and "[1.8]" in texts
    with pytest.raises(ValueError, match="one entry per card"):
        plots.kv_cards([[1, 0]], [[1.0]], ax=ax, weights=[0.5, 0.5])
    with pytest.raises(ValueError, match="one row per card"):
        plots.kv_cards([[1, 0]], [[1.0], [2.0]], ax=ax)


def test_score_histogram_drops_masked_scores_and_labels_axes():
    _fig, ax = plots.new_figure(pyplot=False)
    scores = np.array([0.0, 1.0, 2.0, -np.inf, 3.0])
    bars = plots.score_histogram(scores, ax=ax, bins=4, density=False, label="scaled")
    assert sum(b.get_height() for b in bars) == 4
    assert ax.get_xlabel() == "score" and ax.get_ylabel() == "count"
    assert ax.get_legend() is not None


def test_variance_curve_is_log_log_with_the_reference_line():
    _fig, ax = plots.new_figure(pyplot=False)
    widths = np.array([1, 4, 16, 64])
    lines = plots.variance_curve(widths, widths * 1.01, ax=ax)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    np.testing.assert_array_equal(lines[1].get_ydata(), widths)
    assert ax.get_xlabel() == "width d_k"
    with pytest.raises(ValueError, match="same length"):
        plots.variance_curve([1, 2], [1.0], ax=ax)


def test_arrows_and_blend_plot_draw_the_given_vectors():
    fig, (left, right) = plots.new_figure(1, 2, pyplot=False)
    arrows = plots.arrows_2d(left, [[1.0, 0.0], [0.0, 2.0]], query=[0.0, 0.0])
    assert len(left.patches) == 3  # a zero query is drawn as a dot, not a degenerate arrow
    assert not arrows.query.get_visible() and [t.get_text() for t in arrows.key_labels] == [
        "k0",
        "k1",
    ]
    blend = plots.blend_plot(right, [[0, 0], [1, 0], [0, 1]], [0.2, 0.3], weights=[0.5, 0.2, 0.3])
    np.testing.assert_allclose(blend.output.get_xydata(), [[0.2, 0.3]])
    hull = right.patches[0].get_xy()
    assert len(hull) >= 3
    render_png(fig)


def test_format_weight_never_shows_a_positive_weight_as_zero():
    assert plots.format_weight(1e-300) == "<0.01"
    assert plots.format_weight(0.004, 3) == "0.004"
    assert plots.format_weight(0.0) == "0.00"
    assert plots.format_weight(0.995) == "0.99" or plots.format_weight(0.995) == "1.00"


def test_update_helpers_move_the_same_artists_in_place():
    fig, (left, middle, right) = plots.new_figure(1, 3, pyplot=False)
    arrows = plots.arrows_2d(left, [[1.0, 0.0]], query=[1.0, 1.0], limit=3)
    bars = plots.weight_bars([0.5, 0.5], ax=middle, scores=[0.0, 0.0])
    blend = plots.blend_plot(right, [[0, 0], [2, 0], [0, 2]], [1, 1], weights=[0.0, 0.5, 0.5])
    children = [list(ax.get_children()) for ax in (left, middle, right)]

    plots.update_arrows_2d(arrows, [0.0, 0.0])
    plots.update_weight_bars(bars, [0.8, 0.2], scores=[1.0, -0.4])
    plots.update_blend_plot(blend, [0.4, 0.2], weights=[0.8, 0.1, 0.1])
    assert [list(ax.get_children()) for ax in (left, middle, right)] == children

    assert not arrows.query.get_visible()  # a zero query is only a dot
    assert [p.get_height() for p in middle.patches] == [0.8, 0.2]
    assert [t.get_text() for t in middle.texts] == ["0.80\nscore 1.00", "0.20\nscore -0.40"]
    np.testing.assert_allclose(right.lines[-1].get_xydata(), [[0.4, 0.2]])
    assert right.texts[0].get_text() == "v0 (0.80)"
    with pytest.raises(ValueError, match=r"got 3 weights, not one per bar drawn \(2 bars\)"):
        plots.update_weight_bars(bars, [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="got 2 weights for the 3 values drawn"):
        plots.update_blend_plot(blend, [0.4, 0.2], weights=[0.5, 0.5])
    render_png(fig)


def test_update_attention_heatmap_moves_weights_mask_and_annotations():
    fig, ax = plots.new_figure(pyplot=False, dpi=80)
    heatmap = plots.attention_heatmap(np.full((3, 3), 1 / 3), ax=ax, colorbar=False)
    children = list(ax.get_children())
    weights = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    plots.update_attention_heatmap(heatmap, weights, mask=causal_mask(3))
    assert list(ax.get_children()) == children and len(heatmap.texts) == 9
    np.testing.assert_array_equal(ax.images[0].get_array().mask, ~causal_mask(3))
    assert [t.get_text() for t in ax.texts if t.get_visible()] == [
        "1.00",
        "0.50",
        "0.50",
        "0.20",
        "0.30",
        "0.50",
    ]
    masked = _pixel(fig, ax, 2.25, 0.0).astype(float)
    zero = np.array(mpl.colormaps["viridis"](0.0)[:3]) * 255
    assert np.abs(masked - zero).max() > 60  # the newly masked cell is grey now
    plots.update_attention_heatmap(heatmap, np.full((3, 3), 1 / 3))  # mask removed again
    assert len(ax.patches[0].get_path().vertices) == 1
    with pytest.raises(ValueError, match="Draw a new heatmap"):
        plots.update_attention_heatmap(heatmap, np.zeros((2, 3)))


def test_signed_heatmap_is_centred_at_zero_and_masked_cells_stay_hatched():
    fig, ax = plots.new_figure(pyplot=False)
    grad_scores = np.array([[0.0, 0.0], [0.3, -0.6]])
    image = plots.attention_heatmap(
        grad_scores, ax=ax, mask=causal_mask(2), signed=True, colorbar_label="∂L/∂S"
    ).image
    assert image.get_clim() == (-0.6, 0.6)
    assert image.get_cmap().name.startswith(plots.DIVERGING_CMAP)
    # an unmasked zero is white-ish, a masked cell is the grey "bad" colour
    zero_rgba = image.get_cmap()(image.norm(0.0))
    assert min(zero_rgba[:3]) > 0.9
    assert max(image.get_cmap().get_bad()[:3]) < 0.8  # MASKED_COLOR grey, darker than the zero
    assert fig.axes[-1].get_ylabel() == "∂L/∂S"


def test_default_style_comes_from_attention_style_and_an_explicit_style_wins(monkeypatch):
    from attention_lib.widgets import soft_lookup

    monkeypatch.setenv("ATTENTION_STYLE", "board")
    fig, _ = plots.new_figure(pyplot=False)
    assert plots.figure_style(fig) == "board"
    assert soft_lookup.soft_lookup_explorer().style == "board"
    assert soft_lookup.soft_lookup_explorer(style="default").style == "default"
    monkeypatch.delenv("ATTENTION_STYLE")
    assert plots.default_style() == "default"
    monkeypatch.setenv("ATTENTION_STYLE", "huge")
    with pytest.raises(ValueError, match="ATTENTION_STYLE must be one of"):
        plots.default_style()
