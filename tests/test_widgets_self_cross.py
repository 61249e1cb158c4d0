"""The self/cross explorer of notebook 05: pure update() first, then the headless shell."""

import itertools

import numpy as np
import pytest
from explorer_asserts import assert_same_state
from layout_asserts import drawn_figure
from matplotlib.colors import to_rgba

from attention_lib import attention_forward, causal_mask, plots
from attention_lib.widgets import live_dpi
from attention_lib.widgets import self_cross as sc

#: Displayed height the figure may take (CSS px at 1920 x 1080): the notebook panel
#: shows about 959 px, and the controls, readout and "Numbers" accordion need the rest.
FIGURE_BUDGET_PX = 700
#: Smallest text on screen, CSS px (issue 12).
SMALLEST_TEXT_PX = 14


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


# --- state that matches the lesson: T_k per mode (issue 12) ------------------------------


def test_T_k_is_remembered_per_mode(explorer):
    explorer.set(T_k=8)
    for _ in range(2):  # self -> cross -> self -> cross
        state = explorer.set(mode="self")
        assert explorer.controls["T_k"].value == 4 and explorer.controls["T_k"].disabled
        assert state.weights.shape == (4, 4)
        state = explorer.set(mode="cross")
        assert explorer.controls["T_k"].value == 8 and not explorer.controls["T_k"].disabled
        assert state.weights.shape == (4, 8)
    # a new T_q in self mode moves T_k with it there, and leaves the cross length alone
    explorer.set(mode="self", T_q=7)
    assert explorer.controls["T_k"].value == 7
    assert explorer.set(mode="cross").weights.shape == (7, 8)
    assert_same_state(explorer.state, sc.update(**explorer.values))


def test_T_k_set_while_in_self_mode_snaps_back_to_T_q(explorer):
    explorer.set(mode="self")
    state = explorer.set(T_k=9)  # the disabled slider, set from code
    assert explorer.controls["T_k"].value == 4 and state.weights.shape == (4, 4)
    assert explorer.set(mode="cross").weights.shape == (4, 6)


@pytest.mark.parametrize("T_q", range(1, sc.MAX_LENGTH + 1))
def test_cross_attention_is_rectangular_by_default(T_q):
    """Started in either mode with default lengths, cross mode shows T_q != T_k."""
    for start in sc.MODES:
        explorer = sc.self_cross_explorer(T_q=T_q, T_k=T_q, mode=start)
        T_k = explorer.set(mode="cross").weights.shape[1]
        assert (T_k != T_q) == (start == "self"), start  # cross start: T_k as asked
        explorer.close()
    explorer = sc.self_cross_explorer(T_q=T_q, mode="self")
    state = explorer.set(mode="cross")
    assert state.weights.shape[0] != state.weights.shape[1]
    explorer.close()


def test_the_default_explorer_is_rectangular(explorer):
    assert explorer.state.mode == "cross"
    T_q, T_k = explorer.state.weights.shape
    assert T_q != T_k


# --- the figure: one screen, sized to the data, legible -------------------------------------


def _every_shape():
    for T_q in range(1, sc.MAX_LENGTH + 1):
        yield T_q, T_q, "self"
        for T_k in range(1, sc.MAX_LENGTH + 1):
            yield T_q, T_k, "cross"


def _drawn_height(state, style):
    """Inches tall the explorer draws ``state`` (draw sets the height; no layout needed)."""
    figsize = sc.EXPLORER.figsize_for(style)
    fig, _ = plots.new_figure(0, figsize=figsize, style=style, pyplot=False)
    with plots.series_style(style):
        sc.draw(fig, state)
    return fig.get_figheight()


@pytest.mark.parametrize("style", ["default", "board"])
def test_every_shape_fits_the_screen(style):
    width = sc.EXPLORER.figsize_for(style)[0]
    # the height draw gives the figure (drawing all 220 shapes took 50 s)
    fig, _ = plots.new_figure(0, figsize=sc.EXPLORER.figsize_for(style), style=style, pyplot=False)
    heights = {}
    for T_q, T_k, mode in _every_shape():
        height = sc._figure_height(fig, sc.update(T_q=T_q, T_k=T_k, mode=mode))
        assert height * plots.DISPLAY_WIDTH_PX / width <= FIGURE_BUDGET_PX, (T_q, T_k, mode)
        heights[T_q, T_k, mode] = height
    # sized to the data: more query rows never shrink the figure, and a small
    # matrix gets a clearly smaller figure than the largest
    for T_k in range(1, sc.MAX_LENGTH + 1):
        column = [heights[T_q, T_k, "cross"] for T_q in range(1, sc.MAX_LENGTH + 1)]
        assert column == sorted(column)
    assert heights[1, 1, "cross"] < 0.8 * heights[sc.MAX_LENGTH, sc.MAX_LENGTH, "cross"]


@pytest.mark.parametrize("style", ["default", "board"])
@pytest.mark.parametrize(
    "controls",
    [
        {"T_q": 4, "T_k": 6, "mode": "cross"},
        {"T_q": 1, "T_k": 1, "d_k": 1, "d_v": 1, "mode": "cross"},
        {"T_q": 10, "T_k": 10, "d_k": 8, "d_v": 8, "mode": "cross"},
        {"T_q": 10, "T_k": 1, "d_k": 8, "d_v": 1, "mode": "cross"},
        {"T_q": 1, "T_k": 10, "d_k": 1, "d_v": 8, "mode": "cross"},
        {"T_q": 6, "T_k": 6, "d_k": 8, "d_v": 8, "mode": "self", "causal": True},
    ],
)
def test_drawn_figure_has_large_text_and_no_overlaps(style, controls):
    """Every text at least 14 CSS px, inside the figure, overlapping no other text or block;
    the strip right of the heatmap and inside the figure."""
    state = sc.update(**controls)
    fig = drawn_figure(sc.EXPLORER, state, style)
    heat, strip = fig.axes
    assert fig.get_figwidth() == sc.EXPLORER.figsize_for(style)[0]
    assert fig.get_figheight() == _drawn_height(state, style)  # the layout kept the size
    renderer = fig.canvas.get_renderer()
    texts = [
        text
        for text in [
            heat.title,
            heat.xaxis.label,
            strip.title,
            *heat.texts,
            *strip.texts,
            *heat.get_xticklabels(),
            *heat.get_yticklabels(),
        ]
        if text.get_visible() and text.get_text()
    ]
    px_per_point = fig.dpi / 72  # shown at the width it is rendered
    assert fig.bbox.width == plots.DISPLAY_WIDTH_PX
    for text in texts:
        assert text.get_fontsize() * px_per_point >= SMALLEST_TEXT_PX, text.get_text()
    boxes = [text.get_window_extent(renderer) for text in texts]
    for text, box in zip(texts, boxes, strict=True):
        assert box.x0 >= 0 and box.y0 >= 0, text.get_text()
        assert box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, text.get_text()
    blocks = [patch.get_window_extent(renderer) for patch in strip.patches]
    assert len(blocks) == 6
    heat_right = max(
        heat.get_window_extent(renderer).x1,
        *(box.x1 for text, box in zip(texts, boxes, strict=True) if text.axes is heat),
    )
    for box in [*blocks, *(box for t, box in zip(texts, boxes, strict=True) if t.axes is strip)]:
        assert heat_right < box.x0 and box.x1 <= fig.bbox.width
    keys = heat.get_xticklabels()
    for (a, box_a), (b, box_b) in itertools.combinations(zip(texts, boxes, strict=True), 2):
        if a in keys and b in keys:
            continue  # slanted: their upright boxes overlap where the letters do not (below)
        assert not box_a.overlaps(box_b), (a.get_text(), b.get_text())
    # neighbouring slanted key labels: parallel bands, as far apart as a line of text is tall
    angle = np.radians(keys[0].get_rotation())
    column = heat.transData.transform([(1, 0)])[0, 0] - heat.transData.transform([(0, 0)])[0, 0]
    assert column * np.sin(angle) >= 1.2 * keys[0].get_fontsize() * fig.dpi / 72
    for text, box in zip(texts, boxes, strict=True):
        if text.axes is not heat:  # numbers sit inside their heatmap cells, not near blocks
            assert not any(box.overlaps(block) for block in blocks), text.get_text()


@pytest.mark.parametrize("style", ["default", "board"])
def test_operators_are_large_bold_and_dark(style):
    figsize = sc.EXPLORER.figsize_for(style)
    fig, _ = plots.new_figure(0, figsize=figsize, style=style, pyplot=False, dpi=live_dpi(figsize))
    with plots.series_style(style):
        *_, operators = sc.draw(fig, sc.update())  # the scene: the operators last
    assert [text.get_text() for text in operators] == ["•", "→", "•", "="]
    px_per_point = plots.DISPLAY_WIDTH_PX / figsize[0] / 72
    for text in operators:
        assert text.get_fontsize() * px_per_point >= 40
        assert text.get_fontweight() == "bold"
        red, green, blue, _ = to_rgba(text.get_color())
        assert 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.1  # near black on white


def test_a_size_change_redraws_once_and_a_return_blits(explorer):
    """New lengths are a new layout (static key); going back finds the frozen one."""
    first_figure = explorer.fig
    explorer.set(d_k=2)
    assert explorer.fig is first_figure  # widths only move artists
    explorer.set(T_k=9)
    assert explorer.fig is not first_figure
    assert explorer.fig.get_figheight() == _drawn_height(sc.update(T_k=9), "default")
    explorer.set(T_k=6)
    assert explorer.fig is first_figure
