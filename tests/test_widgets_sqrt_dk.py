"""The sqrt(d_k) explorer (notebook 02): its pure update, then its shell, headless."""

import numpy as np
import pytest

from attention_lib import saturation_stats
from attention_lib.widgets import sqrt_dk


@pytest.mark.parametrize("d_k", sqrt_dk.D_K_CHOICES)
@pytest.mark.parametrize("scaled", [False, True])
def test_update_matches_saturation_stats(d_k, scaled):
    state = sqrt_dk.update(d_k, scaled)
    stats = saturation_stats(d_k, scaled=scaled)
    assert state.d_k == d_k and state.scaled is scaled
    assert state.scores.shape == (sqrt_dk.N_QUERIES, sqrt_dk.N_KEYS)
    np.testing.assert_allclose(
        [state.score_mean, state.score_var, state.entropy, state.max_weight, state.jacobian_norm],
        [stats.score_mean, stats.score_var, stats.entropy, stats.max_weight, stats.jacobian_norm],
        rtol=1e-12,
        atol=1e-15,
    )
    assert np.all(np.isfinite(state.scores)) and np.all(np.isfinite(state.row_weights))
    assert state.row_weights.sum() == pytest.approx(1.0)
    assert 0.0 <= state.row_entropy <= state.uniform_entropy + 1e-12


def test_toggle_changes_only_the_scale():
    """Same seed, same vectors: scaled scores are the unscaled ones divided by sqrt(d_k)."""
    unscaled, scaled = sqrt_dk.update(256, False), sqrt_dk.update(256, True)
    np.testing.assert_allclose(scaled.scores * 16.0, unscaled.scores, rtol=1e-12)


def test_unscaled_row_saturates_scaled_row_does_not():
    small, large = sqrt_dk.update(1, False), sqrt_dk.update(4096, False)
    assert large.row_max_weight > 0.99 and large.row_entropy < 0.05
    assert small.row_max_weight < 0.2
    for d_k in (1, 4096):
        state = sqrt_dk.update(d_k, True)
        assert state.row_max_weight < 0.25 and state.row_entropy > 3.0


def test_row_is_checked():
    with pytest.raises(ValueError, match="row must lie between 0 and n_queries - 1"):
        sqrt_dk.update(4, row=64)


# --- the live explorer, driven headlessly -------------------------------------------


@pytest.fixture
def explorer():
    explorer = sqrt_dk.sqrt_dk_explorer()
    yield explorer
    explorer.close()


def test_explorer_starts_unscaled_at_256(explorer):
    main = explorer.main_control
    assert main is explorer.controls["d_k"] and main.continuous_update is False
    assert "attn-main-control" in main._dom_classes
    assert [value for _, value in main.options] == list(sqrt_dk.D_K_CHOICES)
    expected = sqrt_dk.update(256, False)
    assert explorer.state.d_k == 256 and explorer.state.scaled is False
    np.testing.assert_array_equal(explorer.state.row_weights, expected.row_weights)
    assert "d_k = 256" in explorer.readout.value and "unscaled" in explorer.readout.value
    assert explorer.png[:8] == b"\x89PNG\r\n\x1a\n"
    assert repr(explorer) == "<sqrt(d_k) explorer: run the notebook to interact>"


def test_slider_and_toggle_recompute_and_redraw(explorer):
    before = explorer.png
    state = explorer.set(d_k=4096)
    assert state.d_k == 4096 and state.row_max_weight > 0.99
    assert explorer.png != before
    assert "d_k = 4096" in explorer.readout.value  # the readout shows d_k itself, not an exponent
    before = explorer.png
    state = explorer.set(scaled=True)
    assert state.scaled and 0.8 < state.score_std < 1.2 and state.row_max_weight < 0.25
    assert explorer.png != before
    assert f"{state.row_entropy:.3f}" in explorer.table.value


@pytest.mark.parametrize("d_k", [1, 4096])
@pytest.mark.parametrize("scaled", [False, True])
def test_extreme_widths_do_not_raise(explorer, d_k, scaled):
    state = explorer.set(d_k=d_k, scaled=scaled)
    assert state.d_k == d_k and np.all(np.isfinite(state.row_weights))
    assert explorer.png[:8] == b"\x89PNG\r\n\x1a\n"


def test_static_figure_and_board_style():
    import matplotlib.pyplot as plt

    explorer = sqrt_dk.sqrt_dk_explorer(1024, True, style="board")
    fig = explorer.draw_static()
    assert tuple(fig.get_size_inches()) == sqrt_dk.BOARD_FIGSIZE
    assert len(fig.axes) == 2 and fig.axes[0].get_xlabel() == "|score| (log scale)"
    plt.close(fig)
    explorer.close()


@pytest.mark.parametrize(
    ("first", "second"), [((4, False), (1024, False)), ((4096, False), (1, True))]
)
def test_refresh_moves_the_artists_to_what_draw_would_show(first, second):
    """draw(A) then refresh(B) renders the same pixels as draw(B): blitting is safe."""
    from attention_lib import plots
    from attention_lib.widgets import render_png

    pngs = []
    for states in ([first, second], [second]):
        fig, _ = plots.new_figure(0, figsize=sqrt_dk.FIGSIZE, pyplot=False, dpi=50)
        scene = sqrt_dk.draw(fig, sqrt_dk.update(*states[0]))
        fig.set_layout_engine("none")
        for state in states[1:]:
            sqrt_dk.refresh(scene, sqrt_dk.update(*state))
        bars, *moving = scene
        assert len(bars) == len(sqrt_dk.MAGNITUDE_BINS) - 1 and len(moving) == 4
        pngs.append(render_png(fig))
    assert pngs[0] == pngs[1]


def test_histogram_counts_every_score():
    state = sqrt_dk.update(4096, False)
    assert sqrt_dk._magnitude_counts(state.scores).sum() == state.scores.size
    reference = sqrt_dk._normal_reference_counts(state.scores.size)
    assert reference.sum() == pytest.approx(state.scores.size, rel=1e-3)
    assert reference.max() < sqrt_dk._HIST_PEAK * state.scores.size


def test_factory_checks_d_k():
    with pytest.raises(ValueError, match="d_k must be one of"):
        sqrt_dk.sqrt_dk_explorer(100)


@pytest.mark.parametrize("style", ["default", "board"])
def test_legend_sits_off_the_data_and_text_is_large_enough(style):
    """The legend used to sit on the histogram (issue 12); now it has a row of its own."""
    from attention_lib import plots

    explorer = sqrt_dk.sqrt_dk_explorer(style=style)
    fig = explorer.fig
    renderer = fig.canvas.get_renderer()
    assert all(ax.get_legend() is None for ax in fig.axes)
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert [text.get_text() for text in legend.get_texts()] == [
        "|N(0, 1)|: the scaled target",
        "score std",
        "uniform 1/64",
    ]
    for ax in fig.axes:
        assert not box.overlaps(ax.get_tightbbox(renderer)), ax.get_title()
    assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
    width, height = sqrt_dk.EXPLORER.figsize_for(style)
    assert plots.DISPLAY_WIDTH_PX * height / width <= 680
    texts = fig.findobj(lambda artist: hasattr(artist, "get_fontsize"))
    assert min(text.get_fontsize() for text in texts) * explorer.figure_dpi / 72 >= 14
    explorer.close()
