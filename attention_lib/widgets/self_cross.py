"""Explorer for notebook 05 (chapter 19.4): self-attention next to cross-attention.

Toy "token" vectors go through small fixed projection matrices to become
queries, keys and values:

* self-attention: ``Q``, ``K`` and ``V`` are all projections of the decoder
  tokens, so ``T_k = T_q``, the weights are square and a causal mask applies;
* cross-attention: ``Q`` comes from the decoder tokens, ``K`` and ``V`` from
  the encoder tokens, so the weights are ``T_q x T_k``.

The same :func:`attention_lib.attention_forward` serves both; only the source
of the keys and values changes. ``d_k`` is the width of the scoring space (the
columns of ``W_q`` and ``W_k``), ``d_v`` the width of the output (the columns
of ``W_v``).

:func:`update` is pure NumPy (no matplotlib, no ipywidgets) so tests can assert
on it.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Rectangle
from matplotlib.textpath import TextPath

from .. import plots
from ..attention import attention_forward, attention_scores
from ..masks import causal_mask
from ._shell import ExplorerSpec, html_table

__all__ = [
    "EXPLORER",
    "Projections",
    "SelfCrossLayout",
    "SelfCrossState",
    "draw",
    "figure_layout",
    "projections",
    "readout",
    "refresh",
    "self_cross_explorer",
    "static_key",
    "strip_positions",
    "table",
    "token_vectors",
    "update",
]

#: Target-side tokens (the decoder reads these, one position at a time).
DECODER_TOKENS = ("<s>", "le", "chat", "noir", "dort", "sur", "le", "tapis", "chaud", ".")
#: Source-side tokens (the encoder has read the whole sentence).
ENCODER_TOKENS = ("the", "black", "cat", "sleeps", "on", "the", "warm", "mat", "today", ".")
#: Width of the token vectors.
D_MODEL = 8
#: Largest allowed T_q, T_k (number of toy tokens) and d_k, d_v (columns of the projections).
MAX_LENGTH = len(DECODER_TOKENS)
MAX_WIDTH = D_MODEL
MODES = ("self", "cross")


#: The meaning each toy token stands for: a French token and its English translation
#: share one meaning vector, so cross-attention has something to find.
MEANINGS = {
    "<s>": "<start>",
    "le": "the",
    "chat": "cat",
    "noir": "black",
    "dort": "sleeps",
    "sur": "on",
    "tapis": "mat",
    "chaud": "warm",
}
#: Size of each token's own part, next to its meaning vector.
TOKEN_NOISE = 0.3


def token_vectors(tokens, *, seed=26):
    """One fixed vector of width :data:`D_MODEL` per token; equal words get equal vectors.

    A vector is its token's meaning vector plus a small part of its own
    (:data:`TOKEN_NOISE`), so "chat" and "cat" are close but not equal.

    Examples
    --------
    >>> X = token_vectors(("the", "cat", "the", "chat"))
    >>> X.shape, bool(np.all(X[0] == X[2]))
    ((4, 8), True)
    >>> cosine = X[1] @ X[3] / np.linalg.norm(X[1]) / np.linalg.norm(X[3])
    >>> bool(cosine > 0.8)
    True
    """
    vocabulary = sorted(set(DECODER_TOKENS) | set(ENCODER_TOKENS))
    unknown = [token for token in tokens if token not in vocabulary]
    if unknown:
        raise ValueError(f"unknown toy tokens {unknown}; the vocabulary is {vocabulary}.")
    meanings = sorted({MEANINGS.get(token, token) for token in vocabulary})
    rng = np.random.default_rng(seed)
    meaning_table = rng.standard_normal((len(meanings), D_MODEL))
    own_table = TOKEN_NOISE * rng.standard_normal((len(vocabulary), D_MODEL))
    rows = [
        meaning_table[meanings.index(MEANINGS.get(token, token))]
        + own_table[vocabulary.index(token)]
        for token in tokens
    ]
    return np.array(rows).reshape(len(tokens), D_MODEL)


class Projections(NamedTuple):
    """Fixed projection matrices ``W_q, W_k (D_MODEL, d_k)`` and ``W_v (D_MODEL, d_v)``."""

    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray


def projections(d_k, d_v, *, seed=26):
    """The first ``d_k`` (or ``d_v``) columns of three fixed seeded matrices.

    Taking leading columns of one fixed matrix (rather than drawing a new one)
    means that growing ``d_k`` adds scoring directions and keeps the old ones.
    Entries of ``W_q`` and ``W_v`` have variance ``1 / D_MODEL``, so projected
    entries have variance about 1; ``W_k`` is ``W_q`` plus a smaller part of its own.

    Examples
    --------
    >>> W = projections(3, 5)
    >>> W.W_q.shape, W.W_k.shape, W.W_v.shape
    ((8, 3), (8, 3), (8, 5))
    >>> bool(np.all(projections(2, 5).W_q == W.W_q[:, :2]))
    True
    """
    d_k, d_v = _width(d_k, "d_k"), _width(d_v, "d_v")
    rng = np.random.default_rng(seed)
    W_q, noise, W_v = rng.standard_normal((3, D_MODEL, MAX_WIDTH)) / np.sqrt(D_MODEL)
    # W_k is W_q plus a little of its own: a query then scores highest the keys
    # whose tokens mean what its own token means.
    W_k = W_q + 0.3 * noise
    return Projections(W_q[:, :d_k], W_k[:, :d_k], W_v[:, :d_v])


def _whole(value, name, largest):
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int; got {value!r}.")
    if not 1 <= value <= largest:
        raise ValueError(f"{name} must be in 1..{largest}; got {value}.")
    return int(value)


def _width(value, name):
    return _whole(value, name, MAX_WIDTH)


class SelfCrossState(NamedTuple):
    """Everything the self/cross explorer shows for one setting of the controls."""

    mode: str
    causal: bool
    query_tokens: tuple
    key_tokens: tuple
    X_q: np.ndarray
    X_kv: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray | None
    scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray

    @property
    def shapes(self):
        """``{name: shape}`` for every array, in the order the forward pass makes them."""
        names = ("X_q", "X_kv", "W_q", "W_k", "W_v", "Q", "K", "V", "scores", "weights", "output")
        return {name: getattr(self, name).shape for name in names}

    @property
    def output_width(self):
        """The output's last axis: always ``d_v``."""
        return self.output.shape[-1]


def update(T_q=4, T_k=6, d_k=4, d_v=3, mode="cross", causal=False):
    """Build Q, K, V from toy tokens and run attention, in self or cross mode.

    Parameters
    ----------
    T_q : int
        Number of query (decoder) positions, 1..MAX_LENGTH.
    T_k : int
        Number of encoder positions in cross mode; ignored in self mode, where
        ``T_k = T_q`` because keys and values come from the same tokens.
    d_k, d_v : int
        Widths of the query/key space and of the values, 1..MAX_WIDTH.
    mode : {"self", "cross"}
    causal : bool, default False
        Self mode only: query ``i`` may read keys ``0..i``.

    Returns
    -------
    SelfCrossState

    Examples
    --------
    >>> update(T_q=3, T_k=5, mode="cross").weights.shape
    (3, 5)
    >>> state = update(T_q=3, T_k=5, d_v=2, mode="self", causal=True)
    >>> state.weights.shape, state.output_width  # T_k follows T_q in self mode
    ((3, 3), 2)
    """
    T_q = _whole(T_q, "T_q", MAX_LENGTH)
    T_k = _whole(T_k, "T_k", MAX_LENGTH)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}.")
    if causal and mode != "self":
        raise ValueError(
            "causal=True needs mode='self': a causal mask orders positions of one sequence; "
            "in cross-attention every decoder position may read the whole encoder sentence."
        )
    W = projections(d_k, d_v)
    query_tokens = DECODER_TOKENS[:T_q]
    key_tokens = query_tokens if mode == "self" else ENCODER_TOKENS[:T_k]
    X_q = token_vectors(query_tokens)
    X_kv = X_q if mode == "self" else token_vectors(key_tokens)
    Q, K, V = X_q @ W.W_q, X_kv @ W.W_k, X_kv @ W.W_v
    mask = causal_mask(T_q) if causal else None
    output, cache = attention_forward(Q, K, V, mask, return_cache=True)
    return SelfCrossState(
        mode=mode,
        causal=bool(causal),
        query_tokens=query_tokens,
        key_tokens=key_tokens,
        X_q=X_q,
        X_kv=X_kv,
        W_q=W.W_q,
        W_k=W.W_k,
        W_v=W.W_v,
        Q=Q,
        K=K,
        V=V,
        mask=mask,
        scores=attention_scores(Q, K),
        weights=cache.weights,
        output=output,
    )


# ---------------------------------------------------------------------------
# Drawing, table, readout and the explorer (the thin part around update()).
#
# The figure is laid out for the shape on show (figure_layout): on the left the
# weights as a heatmap with the tokens on its rows and columns, on the right the
# shapes strip, every array a block of its true shape, in two lines "Q • Kᵀ → A"
# and "A • V = O". A new T_q, T_k or mode is a new layout (one full draw, which the
# shell keeps frozen for a return to it); d_k, d_v and the causal mask only move
# artists.

#: Figure width in inches per style. The shell renders every figure
#: DISPLAY_WIDTH_PX wide, so the width sets the type size; the height follows the data.
FIGURE_WIDTHS = {"default": 10.5, "board": 16.5}
#: Side of one square of the shapes strip in displayed pixels, the same in both
#: styles: the squares show a shape and hold no text.
SQUARE_PX = 15
# The series' colours (attention_lib.plots.COLORS): queries vermillion, keys blue,
# values green, output purple; the weights grey.
_BLOCK_COLORS = {
    "Q": plots.COLORS["query"],
    "Kᵀ": plots.COLORS["key"],
    "A": plots.COLORS["neutral"],
    "V": plots.COLORS["value"],
    "O": plots.COLORS["output"],
}
#: The operators of the strip: near-black and bold, as large as two titles, so they
#: read from the back of a room (a thin grey "·" did not).
OPERATOR_COLOR = "#111111"
OPERATOR_SCALE = 2.0  # operator size / title size
_LINES = (("Q", "Kᵀ", "A"), ("A", "V", "O"))  # the strip's two lines, left to right
_OPERATORS = (("•", "→"), ("•", "="))  # between the blocks of each line

# Tags of the artists refresh moves (found again with plots.artist, in drawing order).
BLOCK_GID = "sc-block"  # one rectangle per block of the shapes strip
GRID_GID = "sc-grid"
SIZE_GID = "sc-size"
OPERATOR_GID = "sc-operator"  # they move with the blocks when d_k or d_v changes


def _points(size):
    """Inches of ``size`` points."""
    return size / 72.0


@functools.lru_cache(maxsize=1024)
def _text_width(text, size, weight="normal"):
    """Width in inches of ``text`` set at ``size`` points, from the glyph outlines (no renderer)."""
    path = TextPath((0, 0), text, size=size, prop=FontProperties(weight=weight))
    return path.get_extents().width / 72.0


class SelfCrossLayout(NamedTuple):
    """Where :func:`draw` puts everything, in inches from the figure's top-left corner.

    Boxes are ``(left, top, width, height)``. The strip's blocks follow d_k and
    d_v (see :func:`strip_positions`); the layout reserves room for the widest
    and keeps the top of each line of blocks (``line_tops``), the side of a
    square and the width of the gap that holds an operator.
    """

    width: float
    height: float
    heat: tuple
    strip: tuple
    title_top: float
    xlabel_top: float
    square: float
    gap: float
    label_size: float
    line_tops: tuple


def _shape_label(name, rows, cols):
    return f"{name} {rows}×{cols}"


def _heat_title(T_q, T_k):
    kind = "square" if T_q == T_k else "rectangular"
    return f"weights A: {T_q}×{T_k} ({kind})"


def _heat_caption(mode):
    keys = "encoder tokens" if mode == "cross" else "the same tokens"
    return f"rows: decoder queries; columns: {keys}"


_STRIP_TITLE = "shapes: one square per number"
_KEY_LABEL_ANGLE = 40.0  # degrees: the longest tokens do not fit a column


def figure_layout(T_q, T_k, mode, style="default"):
    """The figure's size and boxes for weights of ``T_q x T_k`` in ``mode``, in ``style``.

    Cells of a fixed size in each style (a heatmap cell fits its number, a strip
    square is :data:`SQUARE_PX` pixels), margins from the style's font sizes: the
    figure is as tall as this shape needs and no taller. In self mode pass
    ``T_k = T_q``. Pure arithmetic (text widths come from the glyph outlines),
    so the tests can check every size against the screen without drawing.

    Returns
    -------
    SelfCrossLayout

    Examples
    --------
    >>> small, large = figure_layout(2, 3, "cross"), figure_layout(10, 10, "cross")
    >>> small.width == large.width == FIGURE_WIDTHS["default"], small.height < large.height
    (True, True)
    >>> round(large.height / large.width * plots.DISPLAY_WIDTH_PX)  # displayed px
    515
    """
    T_q, T_k = _whole(T_q, "T_q", MAX_LENGTH), _whole(T_k, "T_k", MAX_LENGTH)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}.")
    if mode == "self" and T_k != T_q:
        raise ValueError(f"self mode needs T_k = T_q; got T_q = {T_q}, T_k = {T_k}.")
    spec = plots.STYLES[plots.figure_style(None, style)]
    tick, label, title = spec["tick"], spec["label"], spec["title"]
    width = FIGURE_WIDTHS[style]
    pad = _points(0.8 * label)
    title_height = _points(1.8 * title)
    query_tokens = DECODER_TOKENS[:T_q]
    key_tokens = query_tokens if mode == "self" else ENCODER_TOKENS[:T_k]

    # The heatmap: a cell holds its widest number ("<0.01", see plots.format_weight)
    # with room to spare; rotated key labels below it.
    annotation = spec["annotation"]
    cell_width = _text_width(plots.format_weight(1e-9), annotation) + _points(0.5 * annotation)
    cell_height = _points(1.9 * annotation)
    row_labels = max(_text_width(token, tick) for token in query_tokens) + _points(0.8 * tick)
    angle = np.radians(_KEY_LABEL_ANGLE)
    key_labels = max(
        _text_width(token, tick) * np.sin(angle) + _points(tick) * np.cos(angle)
        for token in key_tokens
    ) + _points(0.8 * tick)
    heat = (pad + row_labels, pad + title_height, T_k * cell_width, T_q * cell_height)
    xlabel_top = heat[1] + heat[3] + key_labels
    heat_bottom = xlabel_top + _points(1.6 * label) + pad
    heat_right = heat[0] + max(
        heat[2],
        _text_width(_heat_title(T_q, T_k), title, "bold"),
        _text_width(_heat_caption(mode), label),
    )

    # The strip: room for its widest and tallest blocks (d_k = d_v = MAX_WIDTH).
    square = SQUARE_PX * width / plots.DISPLAY_WIDTH_PX
    label_height = _points(1.7 * label)
    widest = _shapes(T_q, T_k, MAX_WIDTH, MAX_WIDTH)
    line_tops, top = [], pad + title_height
    for names in _LINES:
        line_tops.append(top + label_height)
        top = line_tops[-1] + max(widest[name][0] for name in names) * square + _points(label)
    geometry = dict(square=square, gap=_points(OPERATOR_SCALE * title), label_size=label)
    blocks, operators = _line_positions(widest, line_tops, **geometry)
    strip_width = max(
        *(x + cols * square for _, x, _, _, cols in blocks),
        *(x + geometry["gap"] / 2 for _, x, _ in operators),
        _text_width(_STRIP_TITLE, title, "bold"),
    )
    # the bottom: under the last blocks, and under the operators (they are larger)
    bottom = max(
        top - _points(label), *(y + _points(0.6 * OPERATOR_SCALE * title) for _, _, y in operators)
    )
    height = float(max(heat_bottom, bottom + pad))
    return SelfCrossLayout(
        width=width,
        height=height,
        heat=heat,
        strip=(heat_right + _points(1.5 * label), 0.0, float(strip_width), height),
        title_top=pad,
        xlabel_top=float(xlabel_top),
        line_tops=tuple(line_tops),
        **geometry,
    )


def _shapes(T_q, T_k, d_k, d_v):
    """``{name: (rows, cols)}`` of every block of the strip."""
    return {"Q": (T_q, d_k), "Kᵀ": (d_k, T_k), "A": (T_q, T_k), "V": (T_k, d_v), "O": (T_q, d_v)}


def _line_positions(shapes, line_tops, *, square, gap, label_size):
    """Blocks ``(name, x, top, rows, cols)`` and operators ``(symbol, x, y)`` of the strip.

    Left to right in each line, each block as wide as its squares or its label,
    then a gap with the operator, centred on the first rows (where the eye meets
    the matrices).
    """
    blocks, operators = [], []
    for names, symbols, top in zip(_LINES, _OPERATORS, line_tops, strict=True):
        x = 0.0
        for i, name in enumerate(names):
            rows, cols = shapes[name]
            blocks.append((name, x, top, rows, cols))
            label = _text_width(_shape_label(name, rows, cols), label_size, "bold")
            x += max(cols * square, label)
            if i < len(symbols):
                operators.append(
                    (symbols[i], x + gap / 2, top + min(shapes[names[0]][0], 2) * square / 2)
                )
                x += gap
    return blocks, operators


def strip_positions(state, layout):
    """Blocks and operators of the strip for ``state``, in ``layout`` (see :func:`draw`).

    Examples
    --------
    >>> layout = figure_layout(3, 5, "cross")
    >>> blocks, operators = strip_positions(update(T_q=3, T_k=5, d_k=2), layout)
    >>> [(name, rows, cols) for name, _, _, rows, cols in blocks][:2]
    [('Q', 3, 2), ('Kᵀ', 2, 5)]
    >>> [symbol for symbol, _, _ in operators]
    ['•', '→', '•', '=']
    """
    (T_q, d_k), (T_k, d_v) = state.Q.shape, state.V.shape
    return _line_positions(
        _shapes(T_q, T_k, d_k, d_v),
        layout.line_tops,
        square=layout.square,
        gap=layout.gap,
        label_size=layout.label_size,
    )


def _layout_of(state, style):
    T_q, T_k = state.weights.shape
    return figure_layout(T_q, T_k, state.mode, style)


def static_key(state):
    """What the layout depends on: the weights' shape and the mode (the key tokens).

    Examples
    --------
    >>> static_key(update(T_q=3, T_k=5, d_k=2)) == static_key(update(T_q=3, T_k=5, d_k=7))
    True
    """
    return state.weights.shape, state.mode


def _grid_segments(x, top, rows, cols, square):
    """Lines between neighbouring entries of a block, so the squares can be counted."""
    bottom, right = top + rows * square, x + cols * square
    vertical = [[(x + k * square, top), (x + k * square, bottom)] for k in range(1, cols)]
    horizontal = [[(x, top + k * square), (right, top + k * square)] for k in range(1, rows)]
    return vertical + horizontal


def _figure_box(layout, box):
    """A ``(left, top, width, height)`` box in inches as a figure-fraction rectangle."""
    left, top, width, height = box
    return [
        left / layout.width,
        1 - (top + height) / layout.height,
        width / layout.width,
        height / layout.height,
    ]


def _draw_strip(ax, state, layout, spec):
    _, _, strip_width, height = layout.strip
    ax.set_xlim(0, strip_width)
    ax.set_ylim(height, 0)  # inches from the top, like the layout
    ax.axis("off")
    ax.text(0, layout.title_top, _STRIP_TITLE, va="top", fontsize=spec["title"], weight="bold")
    blocks, operators = strip_positions(state, layout)
    for name, _, _, _, _ in blocks:
        color = _BLOCK_COLORS[name]
        # thin edges: a thick one would hide a 1 x 1 block's only square
        ax.add_patch(
            Rectangle(
                (0, 0),
                1,
                1,
                facecolor=color,
                alpha=0.35,
                edgecolor=color,
                linewidth=spec["line"] / 2,
                gid=BLOCK_GID,
            )
        )
        ax.add_collection(
            LineCollection([], colors="white", linewidths=spec["line"] / 2, gid=GRID_GID)
        )
        ax.text(0, 0, "", va="bottom", fontsize=spec["label"], weight="bold", gid=SIZE_GID)
    for symbol, _, _ in operators:
        ax.text(
            0,
            0,
            symbol,
            ha="center",
            va="center",
            fontsize=OPERATOR_SCALE * spec["title"],
            weight="bold",
            color=OPERATOR_COLOR,
            gid=OPERATOR_GID,
        )
    _place_strip(ax, state, layout)


def _place_strip(ax, state, layout):
    """Put the strip's blocks, labels and operators where ``state`` needs them; return them."""
    blocks, operators = strip_positions(state, layout)
    found = (plots.artist(ax, gid, count=len(blocks)) for gid in (BLOCK_GID, GRID_GID, SIZE_GID))
    moved = []
    for (name, x, top, rows, cols), block, grid, size in zip(blocks, *found, strict=True):
        block.set_bounds(x, top, cols * layout.square, rows * layout.square)
        grid.set_segments(_grid_segments(x, top, rows, cols, layout.square))
        size.set_text(_shape_label(name, rows, cols))
        size.set_position((x, top - _points(0.3 * layout.label_size)))
        moved += [block, grid, size]
    symbols = plots.artist(ax, OPERATOR_GID, count=len(operators))
    for (_, x, y), symbol in zip(operators, symbols, strict=True):
        symbol.set_position((x, y))
    return moved + symbols


def draw(fig, state):
    """Size ``fig`` for the state's shape; draw the weights heatmap and the shapes strip.

    The figure keeps its width and takes the height :func:`figure_layout`
    gives, so that a small matrix gets a small figure, not the corner of one
    laid out for the largest.

    Returns
    -------
    tuple of matplotlib.axes.Axes
        ``(weights_axes, strip_axes)``.

    Examples
    --------
    >>> fig, _ = plots.new_figure(0, figsize=FIGSIZE, pyplot=False)
    >>> heat, strip = draw(fig, update(T_q=3, T_k=5, mode="cross"))
    >>> [t.get_text() for t in heat.get_xticklabels()]
    ['the', 'black', 'cat', 'sleeps', 'on']
    >>> bool(fig.get_size_inches()[1] == figure_layout(3, 5, "cross").height)
    True
    """
    style = plots.figure_style(fig)
    spec = plots.STYLES[style]
    layout = _layout_of(state, style)
    # Fixed positions instead of a layout engine: no layout pass on any redraw.
    fig.set_layout_engine("none")
    fig.set_size_inches(layout.width, layout.height)
    heat = fig.add_axes(_figure_box(layout, layout.heat))
    heat.legacy_heatmap = plots.attention_heatmap(  # LEGACY: phase 2
        state.weights,
        ax=heat,
        mask=state.mask,
        query_labels=state.query_tokens,
        key_labels=state.key_tokens,
        annotate=True,
        colorbar=False,
        style=style,
    )
    heat.set_xlabel("")
    heat.set_ylabel("")
    heat.tick_params(pad=0.4 * spec["tick"])
    for token in heat.get_xticklabels():
        token.set(rotation=_KEY_LABEL_ANGLE, ha="right", rotation_mode="anchor")
    T_q, T_k = state.weights.shape
    left, title_top = layout.heat[0] / layout.width, 1 - layout.title_top / layout.height
    fig.text(
        left, title_top, _heat_title(T_q, T_k), va="top", fontsize=spec["title"], weight="bold"
    )
    fig.text(
        left,
        1 - layout.xlabel_top / layout.height,
        _heat_caption(state.mode),
        va="top",
        fontsize=spec["label"],
    )
    strip = fig.add_axes(_figure_box(layout, layout.strip))
    _draw_strip(strip, state, layout, spec)
    return heat, strip


def refresh(fig, state):
    """Move what :func:`draw` drew on ``fig`` to ``state`` (same layout); return the moved artists.

    Examples
    --------
    >>> fig, _ = plots.new_figure(0, figsize=FIGSIZE, pyplot=False)
    >>> heat, strip = draw(fig, update(T_q=3, mode="self"))
    >>> moved = refresh(fig, update(T_q=3, d_v=7, mode="self", causal=True))
    >>> [t.get_text() for t in plots.artist(strip, SIZE_GID, count=6)][-2:]
    ['V 3×7', 'O 3×7']
    """
    heat, strip = fig.axes[:2]
    layout = _layout_of(state, plots.figure_style(fig))
    return [
        *_legacy_update_heatmap(heat, state),
        *_place_strip(strip, state, layout),
    ]


def _legacy_update_heatmap(heat, state):  # LEGACY (issue 22, phase 2 removes it)
    plots.update_attention_heatmap(heat.legacy_heatmap, state.weights, state.mask)
    return [heat.legacy_heatmap.image, heat.legacy_heatmap.masked, *heat.legacy_heatmap.texts]


_SOURCES = {
    "X_q": "decoder tokens",
    "W_q": "fixed projection",
    "W_k": "fixed projection",
    "W_v": "fixed projection",
    "Q": "X_q W_q",
    "scores": "Q Kᵀ / √d_k",
    "weights": "row-wise softmax",
    "output": "A V",
}


def table(state):
    """Every array's shape and where it comes from, as a small HTML table.

    Examples
    --------
    >>> "encoder tokens" in table(update(mode="cross"))
    True
    """
    kv_source = "decoder tokens (same as X_q)" if state.mode == "self" else "encoder tokens"
    sources = {**_SOURCES, "X_kv": kv_source, "K": "X_kv W_k", "V": "X_kv W_v"}
    rows = [
        [name, "×".join(map(str, shape)), sources[name]] for name, shape in state.shapes.items()
    ]
    return html_table(rows, ["array", "shape", "made from"], caption=f"{state.mode}-attention")


def readout(values, state):
    """Control values and the key facts: the weights' shape and the output width.

    Examples
    --------
    >>> text = readout({}, update(3, 5, 4, 2, "cross"))
    >>> text.split(": ")[1]
    'weights 3×5, output 3×2 (width d_v = 2)'
    """
    T_q, T_k = state.weights.shape
    d_k, d_v = state.Q.shape[-1], state.output_width
    if state.mode == "self":
        head = f"<b>self-attention</b> (T_k = T_q = {T_q}{', causal' if state.causal else ''})"
    else:
        head = f"<b>cross-attention</b> (T_q = {T_q}, T_k = {T_k})"
    return (
        f"{head}, d_k = {d_k}, d_v = {d_v}: weights {T_q}×{T_k}, "
        f"output {T_q}×{d_v} (width d_v = {d_v})"
    )


def _other_length(T_q):
    """A cross-attention T_k unlike ``T_q``: two more, or two fewer near the top of the range."""
    return T_q + 2 if T_q + 2 <= MAX_LENGTH else T_q - 2


class _ModeFollower:
    """Keeps the controls a valid :func:`update` call, and T_k per mode.

    In self mode the keys are the query tokens: the T_k slider shows T_q and is
    disabled, and the causal box is available. In cross mode every decoder
    position may read the whole encoder sentence: the causal box is off and
    disabled, and T_k returns to the encoder length last used in cross mode, so
    a switch from self to cross shows a rectangle again, never a leftover square.
    """

    def __init__(self, controls):
        self.controls = controls
        T_q, T_k = controls["T_q"].value, controls["T_k"].value
        starts_in_self = controls["mode"].value == "self"
        self.cross_T_k = _other_length(T_q) if starts_in_self and T_k == T_q else T_k
        self.agree()

    @property
    def follow(self):
        """The shell's ``follow`` callbacks (one batch per user change)."""
        return {
            "T_q": self.agree,
            "T_k": self._on_T_k,
            "mode": self._on_mode,
            "causal": self.agree,
        }

    def agree(self, _change=None):
        self_mode = self.controls["mode"].value == "self"
        self.controls["T_k"].disabled = self_mode
        self.controls["causal"].disabled = not self_mode
        if self_mode:
            self.controls["T_k"].value = self.controls["T_q"].value
        elif self.controls["causal"].value:
            self.controls["causal"].value = False

    def _on_T_k(self, change):
        if self.controls["mode"].value == "cross":
            self.cross_T_k = change["new"]
        else:  # set from outside while it shows T_q: back to T_q
            self.agree()

    def _on_mode(self, change):
        if change["new"] == "cross":
            self.controls["T_k"].value = self.cross_T_k
        self.agree()


def self_cross_explorer(T_q=4, T_k=6, d_k=4, d_v=3, mode="cross", causal=False, *, style=None):
    """The live explorer: T_q (main control), T_k, d_k, d_v, the self/cross switch, causal.

    In self mode the T_k slider shows T_q and is disabled; in cross mode the
    causal box is disabled. T_k is remembered per mode: back in cross mode it
    returns to the last encoder length used there (at the start ``T_k``, or,
    when starting in self mode with ``T_k == T_q``, a length unlike ``T_q``),
    so cross-attention stays rectangular unless you make it square.

    Returns
    -------
    attention_lib.widgets.Explorer

    Examples
    --------
    >>> explorer = self_cross_explorer()
    >>> explorer
    <self/cross explorer: run the notebook to interact>
    >>> explorer.set(mode="self").weights.shape, explorer.controls["T_k"].value
    ((4, 4), 4)
    >>> explorer.set(mode="cross").weights.shape  # T_k back to its cross value
    (4, 6)
    """

    def slider(value, largest, description):
        # a fixed width: the shell lays the controls out in one row, where slider
        # tracks would otherwise shrink to a few pixels
        return widgets.IntSlider(
            value=value,
            min=1,
            max=largest,
            description=description,
            continuous_update=False,
            layout={"min_width": "220px", "width": "220px"},
            style={"description_width": "2.5em"},
        )

    controls = {
        "T_q": slider(T_q, MAX_LENGTH, "T_q"),
        "T_k": slider(T_k, MAX_LENGTH, "T_k"),
        "d_k": slider(d_k, MAX_WIDTH, "d_k"),
        "d_v": slider(d_v, MAX_WIDTH, "d_v"),
        "mode": widgets.ToggleButtons(
            options=list(MODES),
            value=mode,
            description="attention",
            style={"button_width": "5.5em", "description_width": "initial"},
            layout={"width": "19em", "min_width": "19em"},  # both buttons side by side
        ),
        "causal": widgets.Checkbox(
            value=causal, description="causal mask", indent=False, layout={"width": "auto"}
        ),
    }
    follower = _ModeFollower(controls)  # the starting values agree before the first update
    return EXPLORER.explorer(controls, follow=follower.follow, style=style)


#: Nominal figure sizes (inches): the widths set the type size; draw() gives the
#: figure the height of the shape on show (figure_layout).
FIGSIZE = (FIGURE_WIDTHS["default"], 4.0)
BOARD_FIGSIZE = (FIGURE_WIDTHS["board"], 6.0)

EXPLORER = ExplorerSpec(
    name="self_cross",
    title="self/cross",
    factory=self_cross_explorer,
    update=update,
    draw=draw,
    refresh=refresh,
    table=table,
    readout=readout,
    figsize=FIGSIZE,
    board_figsize=BOARD_FIGSIZE,
    static_key=static_key,
    legacy=True,  # issue 22: not yet on the scene contract
)
