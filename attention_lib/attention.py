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
``scaled_dot_product_attention`` (torch 2.13 on the CPU; notebook 03 checks it).

Two paths, one contract. Each public function checks its input at the door
(:mod:`attention_lib._validation`), and then its body is the chapter's listing,
step for step. On the default path every notebook and explorer runs that code
(notebook 04 forces the fast path once, to compare the two). An input whose
weights, all heads together, take at least :data:`FAST_PATH_MIN_BYTES` (4 MB:
one float32 head at T = 1024) is handed, on the line after the check, to
:mod:`attention_lib._fast`, which computes the same equations tiled and on
every core, with the same results to rounding. :func:`attention_path` forces
one path for the calls inside a ``with`` block, whatever their size.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import numpy as np

from . import _fast
from ._contract import AttentionCache, sum_to_shape, weights_shape_of
from ._validation import (
    as_float_array,
    broadcast_mask,
    check_attention_inputs,
    check_grad_output,
    check_qkv,
)

__all__ = [
    "FAST_PATH_MIN_BYTES",
    "AttentionCache",
    "attention_backward",
    "attention_forward",
    "attention_path",
    "attention_scores",
    "masked_softmax",
    "softmax_backward",
]

#: Weights of this many bytes or more (all heads together) go to the fast path.
FAST_PATH_MIN_BYTES = 1 << 22
_PATHS = ("auto", "readable", "fast")
_chosen_path = contextvars.ContextVar("attention_path", default="auto")


@contextlib.contextmanager
def attention_path(path):
    """Run :func:`attention_forward` and :func:`attention_backward` on one path in a block.

    Parameters
    ----------
    path : {"readable", "fast", "auto"}
        ``"readable"``: the chapter's code, the body of each function, at every
        size. ``"fast"``: the tiled, multithreaded pass of
        :mod:`attention_lib._fast`, even for one small head. ``"auto"``, the
        default outside any block: the fast path for weights of at least
        :data:`FAST_PATH_MIN_BYTES` (4 MB, all heads together), the readable
        code below that.

    Notes
    -----
    Both paths give the same numbers to rounding (tests/test_paths.py); what
    differs is time and memory. The choice holds for the calls made inside the
    ``with`` block by this thread (a :mod:`contextvars` variable, so a block in
    one thread or asyncio task leaves the others alone) and is undone on leaving
    it, also on an exception; blocks nest.

    Returns
    -------
    context manager
        Enter it with ``with``; the previous choice is back when the block ends.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 2, 64, 8))  # 64 KB of weights: "auto" reads them readably
    >>> with attention_path("fast"):
    ...     fast = attention_forward(Q, K, V)
    >>> with attention_path("readable"):
    ...     readable = attention_forward(Q, K, V)
    >>> np.allclose(fast, readable, rtol=1e-12, atol=1e-12)
    True
    >>> with attention_path("slow"):
    ...     pass
    Traceback (most recent call last):
    ...
    ValueError: path must be one of 'auto', 'readable', 'fast'; got 'slow'.
    """
    if not isinstance(path, str) or path not in _PATHS:
        choices = ", ".join(repr(name) for name in _PATHS)
        raise ValueError(f"path must be one of {choices}; got {path!r}.")
    token = _chosen_path.set(path)
    try:
        yield
    finally:
        _chosen_path.reset(token)


def _runs_fast(Q, K):
    """Whether the attention of checked ``Q`` and ``K`` goes to the fast path."""
    path = _chosen_path.get()
    if path == "auto":
        weights_bytes = math.prod(weights_shape_of(Q, K)) * Q.dtype.itemsize
        return weights_bytes >= FAST_PATH_MIN_BYTES
    return path == "fast"


def attention_scores(Q, K, *, scaled=True):
    """Scores ``Q K^T / sqrt(d_k)`` (or ``Q K^T`` with ``scaled=False``).

    Parameters
    ----------
    Q : array_like, shape (..., T_q, d_k)
    K : array_like, shape (..., T_k, d_k)
        Queries and keys; the leading axes broadcast.
    scaled : bool, default True
        Divide by ``sqrt(d_k)`` (eq. 19.1); False gives the raw dot products.

    Returns
    -------
    numpy.ndarray, shape (..., T_q, T_k)
        One score per query and key, in the inputs' dtype.

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
    The body is listing 19.1. Inputs with 4 MB of weights or more run in
    :mod:`attention_lib._fast` instead (see :func:`attention_path`): head by
    head on as many threads as NumPy's BLAS may use
    (``threadpoolctl.threadpool_limits(1)`` or ``OPENBLAS_NUM_THREADS=1`` keeps
    them on one core), and without ``return_cache`` never holding the full
    ``(T_q, T_k)`` weights at once.

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
    Q, K, V, mask = check_attention_inputs(Q, K, V, mask)
    if _runs_fast(Q, K):  # 4 MB of weights or more: the same equations, tiled, on every core
        return _fast.attention_forward(Q, K, V, mask, return_cache)
    scale = 1.0 / math.sqrt(Q.shape[-1])  # a Python float: float32 stays float32
    scores = (Q @ np.swapaxes(K, -1, -2)) * scale
    weights = masked_softmax(scores, mask)
    output = weights @ V
    if not return_cache:
        return output
    return output, AttentionCache(Q, K, V, weights, scale, mask, output)


def softmax_backward(weights, grad_weights):
    """Gradient of the loss with respect to softmax scores, row by row (eq. 19.4).

    ``grad_scores = A * (grad_A - rowsum(grad_A * A))``. Entries with zero
    weight (masked keys) get exactly zero gradient.

    Parameters
    ----------
    weights : array_like, shape (..., T_k)
        The softmax's output ``A``, row by row.
    grad_weights : array_like, same shape as ``weights``
        The loss's gradient with respect to those weights, ``grad_A``.

    Returns
    -------
    numpy.ndarray, same shape as ``weights``
        ``grad_scores``; each row sums to zero (up to rounding), because adding a
        constant to a row of scores does not change its softmax.

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
    The body is listing 19.4, each step undoing one forward step, last first.
    Inputs with 4 MB of weights or more run in :mod:`attention_lib._fast`, like
    the forward pass (see :func:`attention_path`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 4, 2))
    >>> out, cache = attention_forward(Q, K, V, mask=causal_mask(4), return_cache=True)
    >>> grad_Q, grad_K, grad_V = attention_backward(np.ones_like(out), cache)
    >>> grad_V.sum(axis=0)  # each output row spreads weight 1 over the values
    array([4., 4.])
    """
    grad_output = check_grad_output(grad_output, cache)
    if _runs_fast(cache.Q, cache.K):  # as in the forward pass
        return _fast.attention_backward(grad_output, cache)
    Q, K, V, weights, scale, _, _ = cache
    # output = weights @ V (eq. 19.3)
    grad_V = np.swapaxes(weights, -1, -2) @ grad_output
    grad_weights = grad_output @ np.swapaxes(V, -1, -2)
    # weights = softmax(scores), row by row (eq. 19.4). The chapter's listing also
    # zeroes grad_scores where the mask blocks; a blocked weight is exactly 0, and
    # it is the first factor here, so that step would change nothing.
    row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
    grad_scores = weights * (grad_weights - row_dot)
    # scores = (Q @ K^T) * scale (eq. 19.5)
    grad_Q = (grad_scores @ K) * scale
    grad_K = (np.swapaxes(grad_scores, -1, -2) @ Q) * scale
    # An input that broadcasting stretched gets the sum of its uses' gradients.
    return (
        sum_to_shape(grad_Q, Q.shape),
        sum_to_shape(grad_K, K.shape),
        sum_to_shape(grad_V, V.shape),
    )
