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
from matplotlib.path import Path
from matplotlib.textpath import TextPath

from .. import plots
from .._validation import require_whole_number
from ..attention import attention_forward, attention_scores
from ..masks import causal_mask
from ._shell import ExplorerSpec, html_table

__all__ = ["EXPLORER", "SelfCrossState", "self_cross_explorer", "update"]

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


#: The decoder's tokens word for word in English: a French token and its translation
#: share one meaning vector, so cross-attention has something to find.
_WORD_FOR_WORD = ("<start>", "the", "cat", "black", "sleeps", "on", "the", "mat", "warm", ".")
#: The meaning each toy token stands for (a token missing here means itself).
MEANINGS = dict(zip(DECODER_TOKENS, _WORD_FOR_WORD, strict=True))
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
    d_k = require_whole_number(d_k, "d_k", maximum=MAX_WIDTH)
    d_v = require_whole_number(d_v, "d_v", maximum=MAX_WIDTH)
    rng = np.random.default_rng(seed)
    W_q, noise, W_v = rng.standard_normal((3, D_MODEL, MAX_WIDTH)) / np.sqrt(D_MODEL)
    # W_k is W_q plus a little of its own: a query then scores highest the keys
    # whose tokens mean what its own token means.
    W_k = W_q + 0.3 * noise
    return Projections(W_q[:, :d_k], W_k[:, :d_k], W_v[:, :d_v])


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
    T_q = require_whole_number(T_q, "T_q", maximum=MAX_LENGTH)
    T_k = require_whole_number(T_k, "T_k", maximum=MAX_LENGTH)
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
# Left, the weights as a heatmap with the tokens on its rows and columns; right, the
# shapes strip, every array a block of its true shape, in two lines "Q • Kᵀ → A" and
# "A • V = O". A new T_q, T_k or mode is a new drawing and layout (the static key, one
# full draw that the shell keeps frozen for a return to it); d_k, d_v and the causal
# mask only move artists.

#: Figure sizes in inches. The shell renders every figure DISPLAY_WIDTH_PX wide, so the
#: width sets the type size; draw() gives the figure the height its shape needs.
FIGSIZE = (10.5, 4.0)
BOARD_FIGSIZE = (16.5, 6.0)
#: Side of one square of the shapes strip in displayed pixels, the same in both
#: styles: the squares show a shape and hold no text.
SQUARE_PX = 15
#: A heatmap cell, in sizes of its numbers (width, height): room for the widest, "<0.01".
CELL_EMS = (3.37, 1.9)
#: What the layout takes from the figure's width besides the two panels (the row labels
#: and its pads), in tick-label sizes: the strip's panel is the rest.
MARGIN_EMS = 4.0
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
_OPERATORS = ("•", "→", "•", "=")  # between the blocks of each line
_KEY_LABEL_ANGLE = 40.0  # degrees: the longest tokens do not fit a column
_STRIP_TITLE = "shapes: one square per number"


@functools.lru_cache(maxsize=1024)  # refresh sizes six labels
def _ink_width(text, size, weight="normal"):
    """Points from the first to the last ink of ``text`` set at ``size`` points (its outline).

    The outline's points, not ``get_extents()``: the font has a point at each extreme
    of its curves, so they span the same width (equal on every text drawn here), and
    ``get_extents()`` solving every curve cost 3 ms a text, a tenth of a new shape's draw.
    """
    outline = TextPath((0, 0), text, size=size, prop=FontProperties(weight=weight))
    x = outline.vertices[outline.codes != Path.CLOSEPOLY, 0]
    return x.max() - x.min()


def _square(fig):
    """Side of a square of the strip in points: SQUARE_PX of the pixels the figure is shown at."""
    return SQUARE_PX * 72 * fig.get_figwidth() / plots.DISPLAY_WIDTH_PX


def _figure_height(fig, state):
    """Inches the shape needs: the taller of the heatmap with its labels and the strip.

    The heights of the hand layout before issue 22, so every PNG keeps its size: a
    pad and the titles above; the heatmap's rows, its slanted key labels (the
    outline of the widest) and its caption; or the strip's two lines of blocks, as
    tall as at d_k = d_v = MAX_WIDTH, and the operator beside the second.
    """
    spec = plots.STYLES[plots.figure_style(fig)]
    label, title, tick = spec["label"], spec["title"], spec["tick"]
    T_q, T_k = state.weights.shape
    square = _square(fig)
    angle = np.radians(_KEY_LABEL_ANGLE)
    widest = max(_ink_width(token, tick) for token in state.key_tokens)
    slanted = widest * np.sin(angle) + tick * np.cos(angle) + 0.8 * tick
    heat = CELL_EMS[1] * spec["annotation"] * T_q + slanted + 2.4 * label
    second_line = max(max(T_q, T_k) * square, min(T_q, 2) * square / 2 + 1.2 * title)
    strip = max(T_q, MAX_WIDTH) * square + second_line + 5.2 * label
    return (0.8 * label + 1.8 * title + max(heat, strip)) / 72


def static_key(state):
    """The weights' shape and the mode (the key tokens): what the drawing depends on."""
    return state.weights.shape, state.mode


def draw(fig, state):
    """The weights heatmap (left) and the shapes strip (right), the figure as tall as they need."""
    spec = plots.STYLES[plots.figure_style(fig)]
    T_q, T_k = state.weights.shape
    fig.set_figheight(_figure_height(fig, state))
    heat, strip = fig.subplots(1, 2)
    heatmap = plots.attention_heatmap(
        state.weights,
        ax=heat,
        mask=state.mask,
        query_labels=state.query_tokens,
        key_labels=state.key_tokens,
        annotate=True,
        colorbar=False,
    )
    for number in heatmap.texts:  # inside their cells: the layout need not measure them
        number.set_in_layout(False)
    kind = "square" if T_q == T_k else "rectangular"
    keys = "encoder tokens" if state.mode == "cross" else "the same tokens"
    title = heat.set_title(f"weights A: {T_q}×{T_k} ({kind})", loc="left", **_bold(spec["title"]))
    caption = heat.set_xlabel(f"rows: decoder queries; columns: {keys}", loc="left")
    heat.set_ylabel("")
    heat.tick_params(pad=0.4 * spec["tick"])
    for token in heat.get_xticklabels():
        token.set(rotation=_KEY_LABEL_ANGLE, ha="right", rotation_mode="anchor")
    # The heatmap's panel is as wide as its cells, or as its title or caption (then blank
    # on the right), so the strip keeps clear of them; the cells keep their shape.
    cell = CELL_EMS[0] * spec["annotation"]  # points
    texts = ((title, "bold"), (caption, "normal"))
    panel = max(T_k * cell, *(_ink_width(t.get_text(), t.get_fontsize(), w) for t, w in texts))
    heat.set_xlim(-0.5, panel / cell - 0.5)
    heat.set_aspect(CELL_EMS[1] / CELL_EMS[0], anchor="NW")
    rest = 72 * fig.get_figwidth() - panel - MARGIN_EMS * spec["tick"]
    heat.get_gridspec().set_width_ratios([panel, rest])

    strip.axis("off")
    strip.set(xticks=[], yticks=[])  # none drawn: the layout need not make and measure them
    strip.set_title(_STRIP_TITLE, loc="left", **_bold(spec["title"]))
    blocks, sizes = [], []
    for name in (name for names in _LINES for name in names):
        color = _BLOCK_COLORS[name]
        # thin edges: a thick one would hide a 1 x 1 block's only square
        block = Rectangle((0, 0), 1, 1, fc=color, ec=color, alpha=0.35, lw=spec["line"] / 2)
        blocks.append(strip.add_patch(block))
        sizes.append(strip.text(0, 0, "", va="bottom", **_bold(spec["label"])))
    # the lines between the squares of every block, drawn over all blocks (none overlap)
    grid = strip.add_collection(LineCollection([], colors="white", lw=spec["line"] / 2))
    operator = {"ha": "center", "va": "center", "color": OPERATOR_COLOR}
    operator.update(_bold(OPERATOR_SCALE * spec["title"]))
    operators = [strip.text(0, 0, symbol, **operator) for symbol in _OPERATORS]
    plots.raise_small_text(fig, 10)  # the cell numbers: 12.4 CSS px at 1366x768
    return heatmap, blocks, grid, sizes, operators


def _bold(size):
    return {"fontsize": size, "fontweight": "bold"}


def refresh(scene, state):
    """Move the heatmap to ``state``, and the strip's blocks, labels and operators to its widths."""
    heatmap, blocks, grid, sizes, operators = scene
    plots.update_attention_heatmap(heatmap, state.weights, state.mask)
    strip = blocks[0].axes
    # Units of one square, from the strip's top left corner (its size is the layout's).
    fig = strip.figure
    square = _square(fig)
    width, height = strip.get_position().size * fig.get_size_inches() * 72 / square
    strip.set_xlim(0, width)
    strip.set_ylim(height, 0)
    label, gap = (text.get_fontsize() / square for text in (sizes[0], operators[0]))
    shown = state.shapes
    shapes = {"Q": shown["Q"], "Kᵀ": shown["K"][::-1], "A": shown["weights"], "V": shown["V"]}
    shapes["O"] = shown["output"]
    # The second line starts below the tallest first line (d_k = MAX_WIDTH): it never moves.
    tops = (1.7 * label, max(len(state.Q), MAX_WIDTH) + 4.4 * label)
    parts = iter(zip(blocks, sizes, strict=True))
    symbols = iter(operators)
    segments = []
    for names, top in zip(_LINES, tops, strict=True):
        x = 0.0
        for name in names:
            rows, cols = shapes[name]
            block, size = next(parts)
            block.set_bounds(x, top, cols, rows)
            segments += [[(x + k, top), (x + k, top + rows)] for k in range(1, cols)]
            segments += [[(x, top + k), (x + cols, top + k)] for k in range(1, rows)]
            size.set_text(f"{name} {rows}×{cols}")
            size.set_position((x, top - 0.3 * label))
            x += max(cols, _ink_width(size.get_text(), size.get_fontsize(), "bold") / square)
            if name != names[-1]:  # the operator, level with the first rows of the line
                next(symbols).set_position((x + gap / 2, top + min(shapes[names[0]][0], 2) / 2))
                x += gap
    grid.set_segments(segments)


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
    """Every array's shape and where it comes from, as a small HTML table."""
    kv_source = "decoder tokens (same as X_q)" if state.mode == "self" else "encoder tokens"
    sources = {**_SOURCES, "X_kv": kv_source, "K": "X_kv W_k", "V": "X_kv W_v"}
    rows = [
        [name, "×".join(map(str, shape)), sources[name]] for name, shape in state.shapes.items()
    ]
    return html_table(rows, ["array", "shape", "made from"], caption=f"{state.mode}-attention")


def readout(values, state):
    """The mode and lengths, and the key facts: the weights' shape and the output width."""
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


def _mode_follower(controls):
    """The shell's ``follow`` callbacks that keep the controls a valid :func:`update` call.

    In self mode the keys are the query tokens: the T_k slider shows T_q and is
    disabled, and the causal box is available. In cross mode every decoder
    position may read the whole encoder sentence: the causal box is off and
    disabled, and T_k returns to the encoder length last used in cross mode, so
    a switch from self to cross shows a rectangle again, never a leftover square.
    The starting values agree before the first update.
    """
    names = ("T_q", "T_k", "mode", "causal")
    T_q, T_k, mode, causal = (controls[name] for name in names)
    starts_square = mode.value == "self" and T_k.value == T_q.value
    cross_T_k = _other_length(T_q.value) if starts_square else T_k.value

    def agree(change=None):
        nonlocal cross_T_k
        self_mode = mode.value == "self"
        if change is not None and change["owner"] is mode and not self_mode:
            T_k.value = cross_T_k
        elif change is not None and change["owner"] is T_k and not self_mode:
            cross_T_k = T_k.value
        T_k.disabled, causal.disabled = self_mode, not self_mode
        if self_mode:  # T_k set from outside while it shows T_q goes back to T_q
            T_k.value = T_q.value
        elif causal.value:
            causal.value = False

    agree()
    return dict.fromkeys(names, agree)


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
    return EXPLORER.explorer(controls, follow=_mode_follower(controls), style=style)


EXPLORER = ExplorerSpec.from_module(
    __name__, title="self/cross", figsize=FIGSIZE, board_figsize=BOARD_FIGSIZE
)
