"""Explorer for notebook 03: build a mask, watch the attention weights (chapter 19.2).

Controls: the sequence length ``T`` (main control), causal on/off, each
example's number of real tokens (a batch of a few examples, padded to ``T``),
and single cells of a ``(T, T)`` grid that the student blocks by clicking.
The mask used is the logical and of the three: causal (``(T, T)``), padding
(``(B, 1, T)``: the same blocked keys for every query of an example) and the
clicked grid (``(T, T)``, shared by the batch). Nothing can un-block a cell
that another mask blocks; that is what "combine with logical and" means.

:func:`update` is pure (NumPy only); drawing and the widget shell import
matplotlib / ipywidgets lazily.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..attention import attention_forward, attention_scores
from ..masks import causal_mask, combine_masks, padding_mask, valid_from_lengths

#: Longest sequence the editor offers: a T x T grid of buttons stays clickable.
MAX_LENGTH = 8
#: Examples in the batch.
BATCH = 2
D_K = 4
D_V = 3


class MaskEditorState(NamedTuple):
    """What the mask editor shows for one setting of its controls (B examples, T tokens)."""

    length: int
    causal: bool
    lengths: tuple  #: real tokens per example, clipped to 0 ... length
    blocked: frozenset  #: (query, key) cells blocked by hand, inside the T x T grid
    causal_part: np.ndarray | None  #: (T, T) or None when causal is off
    padding_part: np.ndarray  #: (B, 1, T)
    cell_part: np.ndarray  #: (T, T), False at the blocked cells
    mask: np.ndarray  #: (B, T, T) the combined mask, True = may read
    scores: np.ndarray  #: (B, T, T) scaled scores before masking
    masked_scores: np.ndarray  #: (B, T, T) scores with -inf where the mask is False
    weights: np.ndarray  #: (B, T, T) softmax of the masked scores
    row_sums: np.ndarray  #: (B, T) 1 for a row with a readable key, 0 for an empty row
    empty_rows: np.ndarray  #: (B, T) True where the query may read no key at all
    output: np.ndarray  #: (B, T, d_v)


def example_inputs(length, *, batch=BATCH, d_k=D_K, d_v=D_V, seed=0):
    """Seeded ``Q, K, V`` of shapes ``(batch, length, d)``.

    They are the first ``length`` rows of fixed ``MAX_LENGTH``-long arrays (or
    longer, if ``length`` exceeds it), so changing ``T`` does not reshuffle
    the tokens that stay.
    """
    rows = max(int(length), MAX_LENGTH)
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((batch, rows, d_k))
    K = rng.standard_normal((batch, rows, d_k))
    V = rng.standard_normal((batch, rows, d_v))
    return Q[:, :length], K[:, :length], V[:, :length]


def update(length, causal=True, lengths=None, blocked=(), *, seed=0):
    """Mask, masked scores, weights, row sums and outputs for the editor's controls.

    Parameters
    ----------
    length : int
        Sequence length ``T`` (at least 1).
    causal : bool, default True
        Combine a causal mask (query ``t`` reads keys ``<= t``).
    lengths : sequence of int, optional
        Real tokens per example; the rest is padding. Values are clipped to
        ``0 ... length`` (a slider may still hold an old, larger value while
        ``T`` shrinks). Defaults to ``length`` for every example of the batch.
    blocked : iterable of (int, int)
        ``(query, key)`` cells blocked by hand, for every example. Cells outside
        the ``T x T`` grid are ignored.
    seed : int
        Seed for the random ``Q, K, V`` (see :func:`example_inputs`).

    Examples
    --------
    >>> from attention_lib.widgets.mask_editor import update
    >>> state = update(3, causal=True, lengths=[3, 2])
    >>> state.mask[1].astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    >>> state.row_sums
    array([[1., 1., 1.],
           [1., 1., 1.]])
    """
    if isinstance(length, bool) or int(length) != length or length < 1:
        raise ValueError(f"length must be a whole number >= 1; got {length!r}.")
    length = int(length)
    if lengths is None:
        lengths = [length] * BATCH
    lengths = tuple(int(min(max(n, 0), length)) for n in lengths)
    if not lengths:
        raise ValueError("lengths must name at least one example.")
    blocked = frozenset(
        (int(q), int(k)) for q, k in blocked if 0 <= q < length and 0 <= k < length
    )
    Q, K, V = example_inputs(length, batch=len(lengths), seed=seed)

    causal_part = causal_mask(length) if causal else None
    padding_part = padding_mask(valid_from_lengths(np.array(lengths), length))
    cell_part = np.ones((length, length), dtype=bool)
    for q, k in blocked:
        cell_part[q, k] = False
    mask = np.broadcast_to(
        combine_masks(causal_part, padding_part, cell_part), (len(lengths), length, length)
    ).copy()

    scores = attention_scores(Q, K)
    masked_scores = np.where(mask, scores, -np.inf)
    output, cache = attention_forward(Q, K, V, mask=mask, return_cache=True)
    return MaskEditorState(
        length=length,
        causal=bool(causal),
        lengths=lengths,
        blocked=blocked,
        causal_part=causal_part,
        padding_part=padding_part,
        cell_part=cell_part,
        mask=mask,
        scores=scores,
        masked_scores=masked_scores,
        weights=cache.weights,
        row_sums=cache.weights.sum(axis=-1),
        empty_rows=~mask.any(axis=-1),
        output=output,
    )
