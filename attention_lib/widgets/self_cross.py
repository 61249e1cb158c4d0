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

from typing import NamedTuple

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.patches import Rectangle

from .. import plots
from ..attention import attention_forward, attention_scores
from ..masks import causal_mask
from ._shell import ExplorerSpec, html_table

__all__ = [
    "EXPLORER",
    "Projections",
    "SelfCrossState",
    "draw",
    "projections",
    "readout",
    "refresh",
    "self_cross_explorer",
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

#: Figure size of the explorer (inches): the shapes strip on top, the weights below.
FIGSIZE = (8.0, 6.4)
# The series' colours (attention_lib.plots.COLORS): queries vermillion, keys blue,
# values green, output purple; the weights grey.
_BLOCK_COLORS = {
    "Q": plots.COLORS["query"],
    "Kᵀ": plots.COLORS["key"],
    "A": plots.COLORS["neutral"],  # the weights are drawn in full by the heatmap below
    "V": plots.COLORS["value"],
    "O": plots.COLORS["output"],
}


_GAP = 2.6  # between two slots of the shapes strip, where the operator sits
_MARGINS = {"left": 0.13, "right": 0.98, "top": 0.94, "bottom": 0.07, "hspace": 0.3}


def _blocks(state):
    """``(name, x, rows, cols)`` of each block of the shapes strip, left to right.

    Each block sits at the left of a slot as wide as the block can ever get, so
    slots and labels never move and one square is the same size in every state.
    """
    T_q, d_k = state.Q.shape
    T_k, d_v = state.V.shape
    sizes = [("Q", T_q, d_k), ("Kᵀ", d_k, T_k), ("A", T_q, T_k), ("V", T_k, d_v), ("O", T_q, d_v)]
    blocks, x = [], 0.0
    for (name, rows, cols), slot in zip(sizes, _SLOTS, strict=True):
        blocks.append((name, x, rows, cols))
        x += slot + _GAP
    return blocks


_SLOTS = (MAX_WIDTH, MAX_LENGTH, MAX_LENGTH, MAX_WIDTH, MAX_WIDTH)

# Tags of the artists refresh moves (found again with plots.artist, in drawing order).
BLOCK_GID = "sc-block"  # one rectangle per block of the shapes strip
GRID_GID = "sc-grid"
SIZE_GID = "sc-size"
QUERY_LABEL_GID = "sc-query"  # MAX_LENGTH token labels per axis, "" where unused
KEY_LABEL_GID = "sc-key"
FRAME_GID = "sc-frame"  # the dashed outline of the largest grid, on top of the weights
_OPERATORS = ("·", "→", "·", "=")


def _grid_segments(x, rows, cols):
    """Faint lines between neighbouring entries of a block, so the squares can be counted."""
    vertical = [[(x + k, -rows), (x + k, 0.0)] for k in range(1, cols)]
    horizontal = [[(x, -k), (x + cols, -k)] for k in range(1, rows)]
    return vertical + horizontal


def _strip_title(state):
    kind = "self-attention" if state.mode == "self" else "cross-attention"
    return f"{kind}: shapes (one square per number; A = softmax(Q Kᵀ / √d_k))"


def _draw_shapes(ax, state, spec):
    """Each array as a rectangle of its true shape, top-left aligned in a fixed slot."""
    for i, (name, x, rows, cols) in enumerate(_blocks(state)):
        color = _BLOCK_COLORS[name]
        ax.add_patch(
            Rectangle(
                (x, -rows),
                cols,
                rows,
                facecolor=color,
                alpha=0.35,
                edgecolor=color,
                linewidth=2,
                gid=BLOCK_GID,
            )
        )
        ax.add_collection(
            LineCollection(
                _grid_segments(x, rows, cols), colors="white", linewidths=0.8, gid=GRID_GID
            )
        )
        ax.text(
            x,
            0.6,
            f"{name}  {rows}×{cols}",
            ha="left",
            va="bottom",
            fontsize=spec["annotation"] + 1,
            weight="bold",
            gid=SIZE_GID,
        )
        if i < len(_OPERATORS):
            ax.text(
                x + _SLOTS[i] + _GAP / 2,
                -0.5,
                _OPERATORS[i],
                ha="center",
                va="center",
                fontsize=spec["label"],
            )
    ax.set_xlim(-0.5, sum(_SLOTS) + _GAP * (len(_SLOTS) - 1) + 0.5)
    ax.set_ylim(-MAX_LENGTH - 0.5, 2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(_strip_title(state))


def _refresh_shapes(ax, state):
    moved = []
    count = len(_SLOTS)
    found = (plots.artist(ax, gid, count=count) for gid in (BLOCK_GID, GRID_GID, SIZE_GID))
    for (name, x, rows, cols), block, grid, size in zip(_blocks(state), *found, strict=True):
        block.set_bounds(x, -rows, cols, rows)
        grid.set_segments(_grid_segments(x, rows, cols))
        size.set_text(f"{name}  {rows}×{cols}")
        moved += [block, grid, size]
    ax.title.set_text(_strip_title(state))
    return [*moved, ax.title]


def _padded(state):
    """Weights and mask on the fixed ``MAX_LENGTH x MAX_LENGTH`` grid (NaN = no such pair)."""
    T_q, T_k = state.weights.shape
    weights = np.full((MAX_LENGTH, MAX_LENGTH), np.nan)
    weights[:T_q, :T_k] = state.weights
    mask = np.ones((MAX_LENGTH, MAX_LENGTH), dtype=bool)
    if state.mask is not None:
        mask[:T_q, :T_k] = state.mask
    return weights, mask


def _heat_title(state):
    T_q, T_k = state.weights.shape
    kind = "square" if T_q == T_k else "rectangular"
    source = "encoder tokens" if state.mode == "cross" else "the same tokens"
    return f"weights A: {T_q}×{T_k} ({kind}); keys from {source}"


def _place_token_labels(ax, state):
    """Row labels (query tokens) left of the grid, column labels (key tokens) under the last row."""
    T_q = state.weights.shape[0]
    query_labels = plots.artist(ax, QUERY_LABEL_GID, count=MAX_LENGTH)
    key_labels = plots.artist(ax, KEY_LABEL_GID, count=MAX_LENGTH)
    for i, label in enumerate(query_labels):
        label.set_text(state.query_tokens[i] if i < len(state.query_tokens) else "")
    for j, label in enumerate(key_labels):
        label.set_text(state.key_tokens[j] if j < len(state.key_tokens) else "")
        label.set_position((j, T_q - 0.5 + 0.15))
    return [*query_labels, *key_labels]


def _draw_heatmap(ax, state, spec, style):
    weights, mask = _padded(state)
    image = plots.attention_heatmap(
        weights, ax=ax, mask=mask, annotate=True, title=_heat_title(state), style=style
    )
    # pairs that do not exist at this T_q, T_k: white, unlike blocked (grey, hatched) ones
    image.set_cmap(image.get_cmap().with_extremes(bad="white"))
    ax.add_patch(
        Rectangle(
            (-0.5, -0.5),
            MAX_LENGTH,
            MAX_LENGTH,
            fill=False,
            edgecolor=plots.COLORS["guide"],
            linestyle="--",
            linewidth=0.8,
            clip_on=False,
            zorder=3,
            gid=FRAME_GID,
        )
    )
    # Token labels are texts, not tick labels, so that a change can move them (blitting).
    ax.set_xticks([])
    ax.set_yticks([])
    for i in range(MAX_LENGTH):
        ax.text(
            -0.65,
            i,
            "",
            ha="right",
            va="center",
            fontsize=spec["tick"],
            clip_on=False,
            gid=QUERY_LABEL_GID,
        )
        ax.text(
            i,
            0.0,
            "",
            ha="right",
            va="top",
            rotation=35,
            rotation_mode="anchor",
            fontsize=spec["tick"],
            gid=KEY_LABEL_GID,
        )
    _place_token_labels(ax, state)
    ax.set_xlabel("key")
    ax.set_ylabel("query (decoder token)", labelpad=48)


def draw(fig, state):
    """Draw the shapes strip and the weights heatmap (token labels on both axes).

    The heatmap is a fixed ``MAX_LENGTH x MAX_LENGTH`` grid with the weights in
    its top-left corner (white = no such query/key pair at these lengths), so
    that, like the shapes strip, it never changes size and a change of the
    controls only moves artists.

    Returns
    -------
    tuple of matplotlib.axes.Axes
        ``(shapes_axes, weights_axes)``.

    Examples
    --------
    >>> fig, _ = plots.new_figure(0, figsize=FIGSIZE, pyplot=False)
    >>> shapes, heat = draw(fig, update(T_q=3, T_k=5, mode="cross"))
    >>> [t.get_text() for t in plots.artist(heat, KEY_LABEL_GID, count=MAX_LENGTH)][:6]
    ['the', 'black', 'cat', 'sleeps', 'on', '']
    """
    style = plots.figure_style(fig)
    spec = plots.STYLES[style]
    # Fixed margins instead of a layout engine: room for every token label, and no
    # layout pass on any redraw.
    fig.set_layout_engine("none")
    shapes, heat = fig.subplots(2, 1, height_ratios=(1, 1.9), gridspec_kw=dict(_MARGINS))
    _draw_shapes(shapes, state, spec)
    _draw_heatmap(heat, state, spec, style)
    return shapes, heat


def refresh(fig, state):
    """Move what :func:`draw` drew on ``fig`` to ``state``; return the moved artists.

    Examples
    --------
    >>> fig, _ = plots.new_figure(0, figsize=FIGSIZE, pyplot=False)
    >>> shapes, heat = draw(fig, update(T_q=3, T_k=5, mode="cross"))
    >>> moved = refresh(fig, update(T_q=2, mode="self", causal=True))
    >>> heat.get_title()
    'weights A: 2×2 (square); keys from the same tokens'
    """
    shapes, heat = fig.axes[:2]
    weights, mask = _padded(state)
    heat.title.set_text(_heat_title(state))
    return [
        *_refresh_shapes(shapes, state),
        *plots.update_attention_heatmap(heat, weights, mask),
        plots.artist(heat, FRAME_GID),  # blitting draws in list order: the outline on top
        heat.title,
        *_place_token_labels(heat, state),
    ]


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


def _agree(controls):
    """Make the controls a valid :func:`update` call: T_k = T_q in self mode, causal only there.

    In self mode the keys are the query tokens, so the T_k slider shows T_q and is
    disabled; in cross mode every decoder position may read the whole encoder
    sentence, so the causal box is off and disabled.
    """
    self_mode = controls["mode"].value == "self"
    controls["T_k"].disabled = self_mode
    controls["causal"].disabled = not self_mode
    if self_mode:
        controls["T_k"].value = controls["T_q"].value
    elif controls["causal"].value:
        controls["causal"].value = False


def self_cross_explorer(T_q=4, T_k=6, d_k=4, d_v=3, mode="cross", causal=False, *, style=None):
    """The live explorer: T_q (main control), T_k, d_k, d_v, the self/cross switch, causal.

    In self mode the T_k slider follows T_q and is disabled; in cross mode the
    causal box is disabled.

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

    _agree(controls)  # the starting values, before the first update
    follow = {key: lambda _change: _agree(controls) for key in ("T_q", "T_k", "mode", "causal")}
    return EXPLORER.explorer(controls, follow=follow, style=style)


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
)
