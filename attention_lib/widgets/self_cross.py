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

import numpy as np

from ..attention import attention_forward, attention_scores
from ..masks import causal_mask

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


def token_vectors(tokens, *, seed=5):
    """One fixed vector of width :data:`D_MODEL` per token; equal words get equal vectors.

    Examples
    --------
    >>> X = token_vectors(("the", "cat", "the"))
    >>> X.shape, bool(np.all(X[0] == X[2]))
    ((3, 8), True)
    """
    vocabulary = sorted(set(DECODER_TOKENS) | set(ENCODER_TOKENS))
    table = np.random.default_rng(seed).standard_normal((len(vocabulary), D_MODEL))
    unknown = [token for token in tokens if token not in vocabulary]
    if unknown:
        raise ValueError(f"unknown toy tokens {unknown}; the vocabulary is {vocabulary}.")
    return table[[vocabulary.index(token) for token in tokens]]


class Projections(NamedTuple):
    """Fixed projection matrices ``W_q, W_k (D_MODEL, d_k)`` and ``W_v (D_MODEL, d_v)``."""

    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray


def projections(d_k, d_v, *, seed=6):
    """The first ``d_k`` (or ``d_v``) columns of three fixed seeded matrices.

    Taking leading columns of one fixed matrix (rather than drawing a new one)
    means that growing ``d_k`` adds scoring directions and keeps the old ones.
    Entries have variance ``1 / D_MODEL``, so projected entries have variance
    about 1.

    Examples
    --------
    >>> W = projections(3, 5)
    >>> W.W_q.shape, W.W_k.shape, W.W_v.shape
    ((8, 3), (8, 3), (8, 5))
    >>> bool(np.all(projections(2, 5).W_q == W.W_q[:, :2]))
    True
    """
    d_k, d_v = _width(d_k, "d_k"), _width(d_v, "d_v")
    full = np.random.default_rng(seed).standard_normal((3, D_MODEL, MAX_WIDTH))
    full /= np.sqrt(D_MODEL)
    return Projections(full[0][:, :d_k], full[1][:, :d_k], full[2][:, :d_v])


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
