"""Scaled dot-product attention as chapter 19 writes it, forward and backward.

The forward pass (eq. 19.1, listing 19.1)::

    scores  = Q K^T / sqrt(d_k)
    weights = softmax(scores), row by row, blocked keys at -inf
    output  = weights V

The backward pass (eqs. 19.3-19.5, listing 19.4) undoes those steps, last first::

    output  = weights V           grad_V       = weights^T grad_output
                                  grad_weights = grad_output V^T            (19.3)
    weights = softmax(scores)     row_dot      = rowsum(grad_weights * weights)
                                  grad_scores  = weights * (grad_weights - row_dot)  (19.4)
    scores  = Q K^T / sqrt(d_k)   grad_Q = grad_scores K / sqrt(d_k)
                                  grad_K = grad_scores^T Q / sqrt(d_k)     (19.5)

Shapes follow ``(..., T, d)``: ``Q (..., T_q, d_k)``, ``K (..., T_k, d_k)``,
``V (..., T_k, d_v)``; the leading axes broadcast. Masks are boolean (True =
may read) and act on the scores before softmax. A query row with no readable
key gets all-zero weights, a zero output and zero gradients, like PyTorch's
``scaled_dot_product_attention``.

Two paths, one contract. Each public function checks its input at the door
(:mod:`attention_lib._validation`) and then runs the plain code written right
below it: ``_masked_softmax``, ``_readable_forward``, ``_softmax_backward`` and
``_readable_backward`` are the chapter's listings, step for step. Every notebook
and explorer runs this code. Only an input whose weights, all heads together,
take at least ``_FAST_PATH_MIN_BYTES`` (4 MB: one float32 head at T = 1024) is
handed to :mod:`attention_lib._fast`, which computes the same equations tiled
and on every core, with the same results to rounding. That constant is the
switch: tests set it to 0 or to a huge number to force one path, and the speed
benchmark calls ``_readable_forward`` and ``_readable_backward`` directly as
its baseline.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._validation import (
    as_float_array,
    broadcast_mask,
    check_grad_output,
    check_qkv,
    weights_shape_of,
)

# Weights of this many bytes or more (all heads together) go to the fast path.
_FAST_PATH_MIN_BYTES = 1 << 22


def _runs_fast(weights_shape, dtype):
    return math.prod(weights_shape) * np.dtype(dtype).itemsize >= _FAST_PATH_MIN_BYTES


class AttentionCache(NamedTuple):
    """What :func:`attention_backward` needs from the forward pass.

    It unpacks like the chapter's tuple ``(Q, K, V, weights, scale, mask)``
    plus the ``output``, which the fast path reuses for the row term.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    weights: np.ndarray
    scale: float
    mask: np.ndarray | None
    output: np.ndarray


def attention_scores(Q, K, *, scaled=True):
    """Scores ``Q K^T / sqrt(d_k)`` (or ``Q K^T`` with ``scaled=False``).

    Examples
    --------
    >>> Q = np.array([[1.0, 0.0, 0.0, 0.0]])
    >>> K = np.array([[2.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    >>> attention_scores(Q, K)
    array([[1., 0.]])
    >>> attention_scores(Q, K, scaled=False)
    array([[2., 0.]])
    """
    Q, K, _ = check_qkv(Q, K, K)
    scores = Q @ np.swapaxes(K, -1, -2)
    return scores * (1.0 / math.sqrt(Q.shape[-1])) if scaled else scores


def masked_softmax(scores, mask=None):
    """Softmax over the last axis, reading only the keys the mask allows.

    Blocked scores are set to -inf before the softmax and each row's maximum
    is subtracted first, so scores as large as 1e4 do not overflow. Rows with
    no allowed key come out as all zeros (no NaN, no warning).

    Parameters
    ----------
    scores : array_like, shape (..., T_q, T_k)
        Finite float scores (integers are promoted to float64), T_k >= 1.
    mask : array_like of bool, optional
        Broadcastable to ``scores.shape`` without enlarging it; True = keep.

    Returns
    -------
    numpy.ndarray, same shape and dtype as ``scores``
        Non-negative weights; each row sums to 1, or to 0 if fully masked.

    Examples
    --------
    >>> masked_softmax(np.array([[0.0, 0.0, 0.0]]))
    array([[0.33333333, 0.33333333, 0.33333333]])
    >>> masked_softmax(np.array([[1.0, 2.0, 3.0]]), mask=np.array([[True, True, False]]))
    array([[0.26894142, 0.73105858, 0.        ]])
    >>> masked_softmax(np.array([[1.0, 2.0]]), mask=np.array([[False, False]]))
    array([[0., 0.]])
    """
    scores = as_float_array(scores, "scores", min_ndim=1, layout="(..., T_k)")
    if scores.shape[-1] == 0:
        raise ValueError(
            f"scores has no keys: got shape {scores.shape}, whose last axis (T_k) is 0; "
            "a softmax shares weight 1 over at least one entry per row."
        )
    if mask is not None:
        mask = broadcast_mask(mask, scores.shape)
    return _masked_softmax(scores, mask)


def _masked_softmax(scores, mask=None):
    """:func:`masked_softmax` on checked input (the forward pass calls it directly)."""
    if mask is not None:
        # -inf, not a large negative number: exp(-inf) is exactly 0, so a
        # blocked key never receives weight, whatever the other scores are.
        scores = np.where(mask, scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    if mask is not None:
        # A row with every key blocked has max -inf; shifted by 0 instead, it
        # becomes exp(-inf) = 0 everywhere rather than exp(-inf + inf) = NaN.
        row_max[np.isneginf(row_max)] = 0.0
    exp = np.exp(scores - row_max)  # every exponent <= 0: nothing overflows
    row_sum = exp.sum(axis=-1, keepdims=True)
    return exp / np.where(row_sum > 0.0, row_sum, 1.0)  # a fully blocked row stays 0


def attention_forward(Q, K, V, mask=None, return_cache=False):
    """Scaled dot-product attention: ``softmax(Q K^T / sqrt(d_k)) V``.

    Parameters
    ----------
    Q : array_like, shape (..., T_q, d_k)
        Queries: what each position is looking for.
    K : array_like, shape (..., T_k, d_k)
        Keys: what each position offers to be found by (T_k >= 1, d_k >= 1).
    V : array_like, shape (..., T_k, d_v)
        Values: what each position hands over when it is read.
    mask : array_like of bool, optional
        True where a query may read a key; broadcastable to ``(..., T_q, T_k)``
        without enlarging it (see :mod:`attention_lib.masks`).
    return_cache : bool, default False
        Also return the :class:`AttentionCache` for :func:`attention_backward`.

    Returns
    -------
    output : numpy.ndarray, shape (..., T_q, d_v)
    cache : AttentionCache
        Only when ``return_cache`` is True.

    Notes
    -----
    The computation is ``_readable_forward``, right below. Inputs with 4 MB of
    weights or more run in :mod:`attention_lib._fast` instead: head by head on
    as many threads as NumPy's BLAS may use (``threadpoolctl.threadpool_limits(1)``
    or ``OPENBLAS_NUM_THREADS=1`` keeps them on one core), and without
    ``return_cache`` never holding the full ``(T_q, T_k)`` weights at once.

    Examples
    --------
    >>> Q = np.array([[1.0, 0.0]])
    >>> K = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> V = np.array([[10.0], [20.0]])
    >>> out, cache = attention_forward(Q, K, V, return_cache=True)
    >>> np.round(cache.weights, 3)
    array([[0.67, 0.33]])
    >>> np.round(out, 2)
    array([[13.3]])
    """
    Q, K, V = check_qkv(Q, K, V)
    weights_shape = weights_shape_of(Q, K)
    if mask is not None:
        mask = broadcast_mask(mask, weights_shape)
    if _runs_fast(weights_shape, Q.dtype):
        from . import _fast  # imported on first use: it builds on this module

        return _fast.attention_forward(Q, K, V, mask, return_cache)
    return _readable_forward(Q, K, V, mask, return_cache)


def _readable_forward(Q, K, V, mask=None, return_cache=False):
    """Listing 19.1 on checked input (the benchmark's baseline calls it directly)."""
    scale = 1.0 / math.sqrt(Q.shape[-1])  # a Python float: float32 stays float32
    scores = (Q @ np.swapaxes(K, -1, -2)) * scale
    weights = _masked_softmax(scores, mask)
    output = weights @ V
    if not return_cache:
        return output
    return output, AttentionCache(Q, K, V, weights, scale, mask, output)


def softmax_backward(weights, grad_weights):
    """Gradient of the loss with respect to softmax scores, row by row (eq. 19.4).

    ``grad_scores = A * (grad_A - rowsum(grad_A * A))``. Entries with zero
    weight (masked keys) get exactly zero gradient.

    Examples
    --------
    >>> weights = np.array([[0.5, 0.5, 0.0]])
    >>> softmax_backward(weights, np.array([[1.0, 0.0, 7.0]]))
    array([[ 0.25, -0.25,  0.  ]])
    """
    weights = as_float_array(weights, "weights", min_ndim=1, layout="(..., T_k)")
    grad_weights = as_float_array(grad_weights, "grad_weights", min_ndim=1, layout="(..., T_k)")
    if weights.shape != grad_weights.shape:
        raise ValueError(
            f"weights and grad_weights must have the same shape; got {weights.shape} "
            f"and {grad_weights.shape}."
        )
    return _softmax_backward(weights, grad_weights)


def _softmax_backward(weights, grad_weights):
    """:func:`softmax_backward` on checked input (the backward pass calls it directly).

    The chapter's listing also zeroes ``grad_scores`` where the mask blocks; no
    step does it here because a blocked key's weight, the first factor, is 0.
    """
    row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
    return weights * (grad_weights - row_dot)


def attention_backward(grad_output, cache):
    """Gradients of a scalar loss with respect to Q, K and V (eqs. 19.3-19.5).

    Parameters
    ----------
    grad_output : array_like, shape of the forward output (..., T_q, d_v)
        Gradient of the loss with respect to the attention output.
    cache : AttentionCache
        From ``attention_forward(..., return_cache=True)``.

    Returns
    -------
    grad_Q, grad_K, grad_V : numpy.ndarray
        Same shapes as ``Q``, ``K`` and ``V`` (summed over any axes that
        broadcasting stretched in the forward pass). Masked positions and
        fully masked rows contribute exactly zero.

    Notes
    -----
    The computation is ``_readable_backward``, right below; inputs with 4 MB
    of weights or more run in :mod:`attention_lib._fast`, like the forward pass.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 4, 2))
    >>> out, cache = attention_forward(Q, K, V, mask=causal_mask(4), return_cache=True)
    >>> grad_Q, grad_K, grad_V = attention_backward(np.ones_like(out), cache)
    >>> grad_V.sum(axis=0)  # each output row spreads weight 1 over the values
    array([4., 4.])
    """
    grad_output = check_grad_output(grad_output, cache, AttentionCache)
    if _runs_fast(cache.weights.shape, cache.weights.dtype):
        from . import _fast  # imported on first use: it builds on this module

        return _fast.attention_backward(grad_output, cache)
    return _readable_backward(grad_output, cache)


def _readable_backward(grad_output, cache, softmax_step=_softmax_backward):
    """Listing 19.4 on checked input: each step undoes one forward step, last first.

    ``softmax_step`` is eq. 19.4; :mod:`attention_lib.pitfalls` passes a wrong one.
    """
    Q, K, V, weights, scale, _, _ = cache
    # output = weights @ V (eq. 19.3)
    grad_V = np.swapaxes(weights, -1, -2) @ grad_output
    grad_weights = grad_output @ np.swapaxes(V, -1, -2)
    # weights = softmax(scores), row by row (eq. 19.4)
    grad_scores = softmax_step(weights, grad_weights)
    # scores = (Q @ K^T) * scale (eq. 19.5)
    grad_Q = (grad_scores @ K) * scale
    grad_K = (np.swapaxes(grad_scores, -1, -2) @ Q) * scale
    return (
        _sum_to_shape(grad_Q, Q.shape),
        _sum_to_shape(grad_K, K.shape),
        _sum_to_shape(grad_V, V.shape),
    )


def _sum_to_shape(grad, shape):
    """Undo broadcasting: an input used several times gets the sum of the gradients of its uses."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad
