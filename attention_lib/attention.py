"""Scaled dot-product attention, forward and backward (chapter 19, eqs. 19.1-19.5).

    S = Q K^T / sqrt(d_k),   A = softmax(S) row by row,   O = A V

Shapes follow ``(..., T, d)``: ``Q (..., T_q, d_k)``, ``K (..., T_k, d_k)``,
``V (..., T_k, d_v)``; the leading axes broadcast. Masks are boolean (True =
may read) and act on the scores before softmax. A query row with no readable
key gets all-zero weights, a zero output and zero gradients, like PyTorch's
``scaled_dot_product_attention``.

The code reads like the chapter's listings, with three changes for speed that
do not change the mathematics: the big ``(T_q, T_k)`` arrays are updated in
place instead of allocating a new temporary per step; the backward pass uses
``rowsum(grad_A * A) == rowsum(grad_O * O)`` (a ``T x d`` product instead of a
``T x T`` one; FlashAttention-2 relies on the same identity); and large inputs
run part by part (whole heads on every core, rows in cache-sized tiles, see
:mod:`attention_lib._heads`), which is why the passes are written per ``part``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._heads import for_each_part, row_tiles
from ._validation import as_float_array, broadcast_mask, require_finite


class AttentionCache(NamedTuple):
    """What :func:`attention_backward` needs from the forward pass.

    It unpacks like the chapter's tuple ``(Q, K, V, weights, scale, mask)``
    plus the ``output``, which the backward pass reuses for the row-sum term.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    weights: np.ndarray
    scale: float
    mask: np.ndarray | None
    output: np.ndarray


def _softmax_in_place(scores, mask):
    """Row-wise softmax of ``scores`` (modified in place) with blocked entries at -inf."""
    if mask is not None:
        # -inf, not a large negative number: exp(-inf) is exactly 0, so a
        # blocked key can never receive weight, whatever the other scores are.
        np.copyto(scores, -np.inf, where=~mask)
    row_max = scores.max(axis=-1, keepdims=True)
    # A row with every key blocked has max -inf; shifting by 0 instead keeps
    # exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
    row_max[np.isneginf(row_max)] = 0.0
    scores -= row_max
    np.exp(scores, out=scores)
    # The row sums as a matrix-vector product: BLAS computes them about three
    # times faster than NumPy's pairwise sum (1% of forward+backward).
    row_sum = scores @ np.ones((scores.shape[-1], 1), scores.dtype)
    row_sum[row_sum == 0.0] = 1.0  # fully blocked rows stay all-zero
    scores /= row_sum
    return scores


def _batch_to_split(weights_shape, output_shape):
    """The batch axes along which the passes may be split into parts.

    When V alone adds batch axes (rare), one head of weights serves several
    heads of output; those inputs keep a single vectorised call.
    """
    return weights_shape[:-2] if output_shape[:-2] == weights_shape[:-2] else ()


def _head_bytes(weights_shape, itemsize):
    return weights_shape[-2] * weights_shape[-1] * itemsize


def _part_shape(shape, part):
    """Shape of ``array[part]`` for an array of ``shape`` (``part``: ``...`` or an index tuple)."""
    return shape if part is Ellipsis else shape[len(part) :]


def _part(array, part, batch):
    """Part of an input array: an index into ``batch`` after broadcasting (``...``: all)."""
    if part is Ellipsis:
        return array
    return np.broadcast_to(array, batch + array.shape[-2:])[part]


def masked_softmax(scores, mask=None):
    """Softmax over the last axis, reading only the keys the mask allows.

    Blocked scores are set to -inf before the softmax and each row's maximum
    is subtracted first, so scores as large as 1e4 do not overflow. Rows with
    no allowed key come out as all zeros (no NaN, no warning).

    Parameters
    ----------
    scores : array_like, shape (..., T_q, T_k)
        Finite float scores (integers are promoted to float64).
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
    if mask is not None:
        mask = broadcast_mask(mask, scores.shape)
    return _softmax_in_place(scores.copy(), mask)


def _check_qkv(Q, K, V):
    Q = as_float_array(Q, "Q", layout="(..., T_q, d_k)", check_finite=False)
    K = as_float_array(K, "K", layout="(..., T_k, d_k)", check_finite=False)
    V = as_float_array(V, "V", layout="(..., T_k, d_v)", check_finite=False)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            "Q and K must share their last axis d_k (each score is a dot product of a "
            f"query with a key): got Q of shape {Q.shape} (d_k={Q.shape[-1]}) and K of "
            f"shape {K.shape} (d_k={K.shape[-1]})."
        )
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            "K and V must have the same length T_k (one value per key, second-to-last "
            f"axis): got K of shape {K.shape} and V of shape {V.shape}."
        )
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch/head) axes of Q {Q.shape[:-2]}, K {K.shape[:-2]} and "
            f"V {V.shape[:-2]} do not broadcast together; expected equal axes or 1s."
        ) from None
    dtype = np.result_type(Q, K, V)
    for name, array in (("Q", Q), ("K", K), ("V", V)):
        require_finite(array, name)
    return Q.astype(dtype, copy=False), K.astype(dtype, copy=False), V.astype(dtype, copy=False)


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
    Q, K, _ = _check_qkv(Q, K, K)
    scale = 1.0 / np.sqrt(Q.shape[-1]) if scaled else 1.0
    return (Q * Q.dtype.type(scale)) @ np.swapaxes(K, -1, -2)


def attention_forward(Q, K, V, mask=None, return_cache=False):
    """Scaled dot-product attention: ``softmax(Q K^T / sqrt(d_k)) V``.

    Parameters
    ----------
    Q : array_like, shape (..., T_q, d_k)
        Queries: what each position is looking for.
    K : array_like, shape (..., T_k, d_k)
        Keys: what each position offers to be found by.
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
    Inputs with 4 MB of weights or more run head by head on as many threads as
    NumPy's BLAS may use; ``threadpoolctl.threadpool_limits(1)`` (or
    ``OPENBLAS_NUM_THREADS=1``) keeps them on one core. The backward pass follows
    the same rule. Without ``return_cache`` the full ``(T_q, T_k)`` weights are
    never held at once: rows are computed in tiles of about 4 MB.

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
    Q, K, V = _check_qkv(Q, K, V)
    scale = 1.0 / np.sqrt(Q.shape[-1])
    weights_shape = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (Q.shape[-2], K.shape[-2])
    output_shape = np.broadcast_shapes(weights_shape[:-2], V.shape[:-2]) + (
        Q.shape[-2],
        V.shape[-1],
    )
    if mask is not None:
        mask = broadcast_mask(mask, weights_shape)
    # Without a cache nobody reads the weights afterwards: each part then works in
    # one tile-sized buffer instead of the full T_q x T_k array.
    weights = np.empty(weights_shape, Q.dtype) if return_cache else None
    output = np.empty(output_shape, Q.dtype)
    K_t = np.swapaxes(K, -1, -2)
    full_mask = None if mask is None else np.broadcast_to(mask, weights_shape)
    split_batch = _batch_to_split(weights_shape, output_shape)

    def forward_part(part):
        part_V = _part(V, part, split_batch)
        # BLAS multiplies by a contiguous copy of K^T (only T_k x d_k) faster than by
        # the transposed view: 2-7% on this product, 2% of forward+backward at T = 4096.
        part_K_t = np.ascontiguousarray(_part(K_t, part, split_batch))
        # Scaling Q (T_q x d_k) is cheaper than scaling the T_q x T_k scores.
        part_Q = _part(Q, part, split_batch) * Q.dtype.type(scale)
        part_shape = _part_shape(weights_shape, part)
        tiles = row_tiles(part_shape, Q.itemsize)
        if not return_cache:
            buffer = np.empty(part_shape[:-2] + (tiles[0].stop, part_shape[-1]), Q.dtype)
        for rows in tiles:
            if return_cache:
                scores = weights[part][..., rows, :]
            else:
                scores = buffer[..., : rows.stop - rows.start, :]
            np.matmul(part_Q[..., rows, :], part_K_t, out=scores)
            tile_mask = None if mask is None else full_mask[part][..., rows, :]
            _softmax_in_place(scores, tile_mask)  # the scores turn into weights in place
            np.matmul(scores, part_V, out=output[part][..., rows, :])

    for_each_part(forward_part, split_batch, _head_bytes(weights_shape, Q.itemsize))
    if not return_cache:
        return output
    return output, AttentionCache(Q, K, V, weights, float(scale), mask, output)


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
    row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
    return weights * (grad_weights - row_dot)


def _sum_to_shape(grad, shape):
    """Undo broadcasting: sum ``grad`` over the axes that broadcasting added or stretched."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def _check_cache(cache):
    if not isinstance(cache, AttentionCache):
        raise TypeError(
            "cache must be the AttentionCache returned by "
            "attention_forward(Q, K, V, mask, return_cache=True); got "
            f"{type(cache).__name__}. A hand-made tuple cannot be checked for consistency."
        )
    Q, K, V, weights, output = cache.Q, cache.K, cache.V, cache.weights, cache.output
    expected_weights = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (Q.shape[-2], K.shape[-2])
    expected_output = np.broadcast_shapes(expected_weights[:-2], V.shape[:-2]) + (
        Q.shape[-2],
        V.shape[-1],
    )
    if weights.shape != expected_weights or output.shape != expected_output:
        raise ValueError(
            f"cache is inconsistent: weights {weights.shape} and output {output.shape} do "
            f"not belong to Q {Q.shape}, K {K.shape}, V {V.shape} (expected weights "
            f"{expected_weights} and output {expected_output}); pass the cache exactly "
            "as attention_forward returned it."
        )


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

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 4, 2))
    >>> out, cache = attention_forward(Q, K, V, mask=causal_mask(4), return_cache=True)
    >>> grad_Q, grad_K, grad_V = attention_backward(np.ones_like(out), cache)
    >>> grad_V.sum(axis=0)  # each output row spreads weight 1 over the values
    array([4., 4.])
    """
    _check_cache(cache)
    grad_output = as_float_array(grad_output, "grad_output", layout="(..., T_q, d_v)")
    if grad_output.shape != cache.output.shape:
        raise ValueError(
            f"grad_output must have the shape of the forward output {cache.output.shape}; "
            f"got {grad_output.shape}."
        )
    Q, K, V, weights, scale, _, output = cache
    grad_output = grad_output.astype(output.dtype, copy=False)
    # The gradients take the full broadcast batch shape first; _sum_to_shape folds them back.
    batch = output.shape[:-2]
    grad_Q = np.empty(batch + Q.shape[-2:], output.dtype)
    grad_K = np.empty(batch + K.shape[-2:], output.dtype)
    grad_V = np.empty(batch + V.shape[-2:], output.dtype)
    V_t = np.swapaxes(V, -1, -2)
    scale = output.dtype.type(scale)
    split_batch = _batch_to_split(weights.shape, output.shape)

    def backward_part(part):
        part_Q, part_K = (_part(array, part, split_batch) for array in (Q, K))
        part_V_t = np.ascontiguousarray(_part(V_t, part, split_batch))  # as K^T forward
        grad_K[part] = 0  # each core zeroes the rows it accumulates into
        grad_V[part] = 0
        # rowsum(grad_A * A) == rowsum(grad_O * O): a T x d product instead of a T x T one.
        row_dot = np.sum(grad_output[part] * output[part], axis=-1, keepdims=True)
        for rows in row_tiles(weights[part].shape, weights.itemsize):
            tile_weights = weights[part][..., rows, :]
            tile_grad_output = grad_output[part][..., rows, :]
            grad_V[part] += np.swapaxes(tile_weights, -1, -2) @ tile_grad_output
            grad_scores = tile_grad_output @ part_V_t  # grad_weights, turned in place...
            grad_scores -= row_dot[..., rows, :]
            grad_scores *= tile_weights  # ...into grad_scores: zero where the weight is zero
            np.matmul(grad_scores, part_K, out=grad_Q[part][..., rows, :])
            grad_K[part] += np.swapaxes(grad_scores, -1, -2) @ part_Q[..., rows, :]
        grad_Q[part] *= scale
        grad_K[part] *= scale

    for_each_part(backward_part, split_batch, _head_bytes(weights.shape, weights.itemsize))
    return (
        _sum_to_shape(grad_Q, Q.shape),
        _sum_to_shape(grad_K, K.shape),
        _sum_to_shape(grad_V, V.shape),
    )
