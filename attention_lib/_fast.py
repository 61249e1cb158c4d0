"""The fast path: the chapter's attention passes, tiled and run on every core.

:func:`attention_lib.attention_forward` and ``attention_backward`` hand an
input to this module when its weights, all heads together, take at least
``attention.FAST_PATH_MIN_BYTES`` (4 MiB, one float32 head at T = 1024),
or whenever :func:`attention_lib.attention_path` ``("fast")`` asks for it;
``attention_path("readable")`` keeps every size out of here.

The contract is the readable path's: the same checked arrays in, the same
output, :class:`~attention_lib.AttentionCache` and gradients out, equal to
rounding (tests/test_paths.py). Three changes buy the speed without changing
the mathematics:

* the big ``(T_q, T_k)`` arrays are updated in place instead of allocating a
  new temporary per step;
* the backward pass takes the row term from ``rowsum(grad_weights * weights)
  == rowsum(grad_output * output)``, a ``T x d`` product instead of a ``T x T``
  one (FlashAttention-2 relies on the same identity);
* the batch runs part by part, whole heads on every core and rows in
  cache-sized tiles (:mod:`attention_lib._heads`), which is why each pass is
  written for one ``part``. Without a cache the forward pass never holds the
  full weights, only one tile per part.
"""

from __future__ import annotations

import numpy as np

from ._contract import AttentionCache, output_shape_of, sum_to_shape, weights_shape_of
from ._heads import for_each_part, row_tiles


def _softmax_in_place(scores, mask):
    """Row-wise softmax of ``scores`` (modified in place) with blocked entries at -inf."""
    if mask is not None:
        np.copyto(scores, -np.inf, where=~mask)
    row_max = scores.max(axis=-1, keepdims=True)
    row_max[np.isneginf(row_max)] = 0.0  # fully blocked rows: exp(-inf - 0) = 0, no NaN
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


def attention_forward(Q, K, V, mask, return_cache):
    """``attention_forward`` on checked input and a mask broadcast-checked against the weights."""
    scale = 1.0 / np.sqrt(Q.shape[-1])
    weights_shape = weights_shape_of(Q, K)
    output_shape = output_shape_of(Q, K, V)
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
            tile_rows = tiles[0].stop if tiles else 0  # no tiles when there are no queries
            buffer = np.empty(part_shape[:-2] + (tile_rows, part_shape[-1]), Q.dtype)
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


def attention_backward(grad_output, cache):
    """``attention_backward`` on a checked ``grad_output`` in the cache's dtype."""
    Q, K, V, weights, scale, _, output = cache
    # The gradients take the full broadcast batch shape first; sum_to_shape folds them back.
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
        # rowsum(grad_weights * weights) == rowsum(grad_output * output): T x d, not T x T.
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
        sum_to_shape(grad_Q, Q.shape),
        sum_to_shape(grad_K, K.shape),
        sum_to_shape(grad_V, V.shape),
    )
