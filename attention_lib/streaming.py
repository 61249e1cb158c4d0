"""Exact attention in blocks, with an online softmax (FlashAttention's idea in NumPy).

The dense pass (:mod:`attention_lib.attention`) holds every weight of a head
at once: ``T_q x T_k`` numbers. This module computes the same output and the
same gradients while holding only one block of ``block_size x block_size``
scores per worker, so memory grows like ``T x d`` instead of ``T x T``
(Dao et al. 2022, 2023).

Forward. A query block visits the key blocks one after another and keeps, for
each of its rows, the largest score seen so far ``m``, the sum of
``exp(score - m)`` over the keys seen so far ``l``, and the partial output
``acc = sum exp(score - m) v``. When a new block brings a larger score, ``m``
grows and ``l`` and ``acc`` are rescaled by ``exp(m_old - m_new)`` first; after
the last block, ``output = acc / l``. The only thing kept for the backward
pass besides the output is each row's log-sum-exp ``m + log(l)``.

Backward. A block of weights is recomputed exactly from its scores and the
saved log-sum-exp, ``A = exp(S - lse)``; the softmax's row term comes from
``D = rowsum(grad_O * O)`` (a ``T x d`` product, equal to
``rowsum(grad_A * A)``), so a block of ``grad_S = A * (grad_A - D)`` is
finished without the rest of its row.

Blocks that no query may read are never computed: blocks entirely in the
future under ``causal=True``, blocks between two packed documents under
``document_lengths=``, and blocks an explicit mask blocks completely.

One row, traced. :func:`online_softmax_trace` runs the forward pass's
bookkeeping for a single row of scores and records it after each block of
keys (``m``, ``l``, the factor ``exp(m_old - m_new)`` and the partial output
``acc / l``), so that a notebook can show each step; after the last block it
equals the ordinary softmax over the whole row.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import _heads
from ._contract import sum_to_shape
from ._heads import blas_threads, for_each_part
from ._validation import (
    as_float_array,
    check_attention_inputs,
    check_grad_output_like,
    require_whole_number,
)
from .masks import document_ids

# 256 query rows x 256 keys of float32 is 256 KiB: a block of scores and one of
# grad_scores stay in this machine's L2 cache through the element-wise passes,
# and each matrix product is still large enough to run BLAS near full speed.
DEFAULT_BLOCK_SIZE = 256


class StreamingCache(NamedTuple):
    """What :func:`streaming_attention_backward` needs from the forward pass.

    It holds the inputs, the output and one number per query row, never the
    ``T_q x T_k`` weights: those are recomputed block by block.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    output: np.ndarray
    log_sum_exp: np.ndarray
    scale: float
    mask: np.ndarray | None
    causal: bool
    document_lengths: np.ndarray | None
    block_size: int


# ---------------------------------------------------------------- which blocks to visit


class _Access(NamedTuple):
    """Who may read what, besides an explicit mask: the causal flag and each position's document."""

    causal: bool
    document: np.ndarray | None

    def block(self, rows, cols, mask):
        """``(visit, block_mask)`` for one block of weights.

        ``visit`` is False when no query of ``rows`` may read any key of
        ``cols``; ``block_mask`` is None when every entry may be read, else a
        boolean array broadcastable to the block. ``mask`` is the explicit mask
        of the heads at hand, broadcast to their ``(..., T_q, T_k)`` (or None).
        """
        pieces = []
        if self.causal:
            if cols.start > rows.stop - 1:  # every key after every query: the future
                return False, None
            if cols.stop - 1 > rows.start:  # the block crosses the diagonal
                pieces.append(
                    np.arange(rows.start, rows.stop)[:, None]
                    >= np.arange(cols.start, cols.stop)[None, :]
                )
        if self.document is not None:
            query_docs, key_docs = self.document[rows], self.document[cols]
            if query_docs[-1] < key_docs[0] or key_docs[-1] < query_docs[0]:
                return False, None  # documents are contiguous: no shared document
            if not query_docs[0] == query_docs[-1] == key_docs[0] == key_docs[-1]:
                pieces.append(query_docs[:, None] == key_docs[None, :])
        if mask is not None:
            explicit = mask[..., rows, cols]
            if not explicit.any():
                return False, None
            if not explicit.all():
                pieces.append(explicit)
        if not pieces:
            return True, None
        combined = pieces[0]
        for piece in pieces[1:]:
            combined = combined & piece
        if len(pieces) > 1 and not combined.any():
            return False, None
        return True, combined


def _blocks(length, block_size, stripe=None, stripes=1):
    """Slices of ``block_size`` positions; with ``stripe``, every ``stripes``-th one from it."""
    starts = range(0, length, block_size)
    if stripe is not None:
        starts = starts[stripe::stripes]
    return [slice(start, min(start + block_size, length)) for start in starts]


# ---------------------------------------------------------------- scheduling


def _stripes(n_heads, n_blocks):
    """Into how many stripes of blocks each head is cut so that every core has work.

    Heads alone keep every core busy when there are at least as many as cores;
    with fewer heads, each is cut into interleaved stripes of blocks
    (interleaved, so that a causal pass's uneven rows are shared fairly).
    """
    workers = blas_threads()
    if n_heads >= workers:
        return 1
    return max(1, min(n_blocks, math.ceil(workers / n_heads)))


def _run(task, batch, stripes, stripe_bytes):
    """``task(heads, stripe)`` over the whole batch, on every core (see ``for_each_part``).

    ``heads`` indexes the leading batch axes (``...`` for all of them) and
    ``stripe`` is a stripe number, or None for every block.
    """

    def run_part(part):
        if part is Ellipsis:
            task(Ellipsis, None)
        elif len(part) > len(batch):
            task(part[:-1], part[-1])
        else:
            task(part, None)

    parts = batch + (stripes,)
    if math.prod(parts) * stripe_bytes < _heads.MIN_SPLIT_BYTES:
        task(Ellipsis, None)  # too small to be worth a thread pool
        return
    for_each_part(run_part, parts, stripe_bytes)


# ---------------------------------------------------------------- input checks


def _check_document_lengths(document_lengths, n_queries, n_keys):
    try:
        document = document_ids(document_lengths)
    except (TypeError, ValueError) as error:
        raise type(error)(f"document_lengths: {error}") from None
    if not n_queries == n_keys == document.size:
        raise ValueError(
            "document_lengths describe one packed row of self-attention, so they must sum "
            f"to T_q and to T_k; got lengths summing to {document.size} for T_q={n_queries} "
            f"and T_k={n_keys}."
        )
    return np.asarray(document_lengths), document


def _check_flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False; got {value!r} of type {type(value).__name__}."
        )
    return bool(value)


# ---------------------------------------------------------------- forward


def streaming_attention_forward(
    Q,
    K,
    V,
    mask=None,
    causal=False,
    return_cache=False,
    block_size=DEFAULT_BLOCK_SIZE,
    *,
    document_lengths=None,
):
    """Scaled dot-product attention computed block by block, without the ``T x T`` weights.

    Same output as :func:`attention_forward` (to rounding), in memory that
    grows like ``T x d``: each worker holds one ``block_size x block_size``
    block of scores at a time and an online softmax (running maximum and
    running sum per row) combines the blocks exactly.

    Parameters
    ----------
    Q : array_like, shape (..., T_q, d_k)
    K : array_like, shape (..., T_k, d_k)
    V : array_like, shape (..., T_k, d_v)
        As for :func:`attention_forward`; the leading axes broadcast.
    mask : array_like of bool, optional
        True where a query may read a key, broadcastable to ``(..., T_q, T_k)``
        without enlarging it. Blocks it blocks completely are skipped.
    causal : bool, default False
        Query ``i`` reads only keys ``j <= i`` (top-left aligned, like
        ``causal_mask(T_q, T_k)``), without building a dense mask: blocks
        entirely in the future are never computed. Combines with ``mask``.
    return_cache : bool, default False
        Also return the :class:`StreamingCache` for
        :func:`streaming_attention_backward`.
    block_size : int, default 256
        Rows and keys per block. Any size gives the same numbers to rounding.
    document_lengths : array_like of int, optional
        Several documents packed one after another into one row (self-attention,
        ``sum(document_lengths) == T_q == T_k``): a query reads only keys of its
        own document, and blocks between documents are never computed. With
        ``causal=True`` this is ``masks.packed_causal_mask(document_lengths)``.

    Returns
    -------
    output : numpy.ndarray, shape (..., T_q, d_v)
    cache : StreamingCache
        Only when ``return_cache`` is True: the inputs, the output and each
        row's log-sum-exp (``-inf`` for a row that may read no key).

    Notes
    -----
    Heads run on every core (threads, one BLAS thread each); a single head is
    cut into interleaved stripes of query blocks so that it uses every core too.
    A query row that may read no key gets a zero output, as in the dense pass.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 2, 10, 4))
    >>> out = streaming_attention_forward(Q, K, V, causal=True, block_size=4)
    >>> np.allclose(out, attention_forward(Q, K, V, mask=causal_mask(10)))
    True
    >>> out, cache = streaming_attention_forward(Q, K, V, return_cache=True, block_size=3)
    >>> cache.log_sum_exp.shape  # one number per query row, not a 10 x 10 block
    (2, 10)
    """
    Q, K, V, mask = check_attention_inputs(Q, K, V, mask)
    n_queries, n_keys = Q.shape[-2], K.shape[-2]
    causal = _check_flag(causal, "causal")
    return_cache = _check_flag(return_cache, "return_cache")
    block_size = require_whole_number(block_size, "block_size")
    document = None
    if document_lengths is not None:
        document_lengths, document = _check_document_lengths(document_lengths, n_queries, n_keys)

    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dtype = Q.dtype
    scale = dtype.type(1.0 / np.sqrt(Q.shape[-1]))
    Qb, Kb, Vb = (np.broadcast_to(a, batch + a.shape[-2:]) for a in (Q, K, V))
    full_mask = None if mask is None else np.broadcast_to(mask, batch + (n_queries, n_keys))
    access = _Access(causal, document)
    output = np.empty(batch + (n_queries, V.shape[-1]), dtype)
    log_sum_exp = np.empty(batch + (n_queries,), dtype)

    def forward_part(heads, stripe):
        part_Q, part_V = Qb[heads], Vb[heads]
        part_mask = None if full_mask is None else full_mask[heads]
        head_shape = part_Q.shape[:-2]
        # The scale goes into one copy of K^T (T x d numbers) instead of every score,
        # and BLAS multiplies by a contiguous K^T faster than by a transposed view.
        scaled_K_t = np.multiply(np.swapaxes(Kb[heads], -1, -2), scale, order="C")
        block_shape = (min(block_size, n_queries), min(block_size, n_keys))
        scores = np.empty(head_shape + block_shape, dtype)
        ones = np.ones((block_shape[1], 1), dtype)
        key_blocks = _blocks(n_keys, block_size)
        for rows in _blocks(n_queries, block_size, stripe, stripes):
            query = part_Q[..., rows, :]
            row_max = np.full(head_shape + (rows.stop - rows.start,), -np.inf, dtype)
            row_sum = np.zeros_like(row_max)
            acc = np.zeros(head_shape + (rows.stop - rows.start, V.shape[-1]), dtype)
            for cols in key_blocks:
                visit, block_mask = access.block(rows, cols, part_mask)
                if not visit:
                    continue
                block = scores[..., : rows.stop - rows.start, : cols.stop - cols.start]
                np.matmul(query, scaled_K_t[..., cols], out=block)
                if block_mask is not None:
                    np.copyto(block, -np.inf, where=~block_mask)
                new_max = shift = np.maximum(row_max, block.max(axis=-1))
                if block_mask is not None:
                    # A row that may read nothing yet keeps max -inf: shift it by 0, so
                    # that exp(-inf - 0) = 0 instead of exp(-inf + inf) = NaN. (Without a
                    # mask every row of the block may read all of it, so every max is finite.)
                    shift = np.where(np.isneginf(new_max), 0, new_max)
                block -= shift[..., None]
                np.exp(block, out=block)
                # The running sums and partial outputs were relative to the old
                # maximum: bring them to the new one (a factor <= 1, 0 at the start).
                rescale = np.exp(row_max - shift)
                row_sum *= rescale
                row_sum += (block @ ones[: block.shape[-1]])[..., 0]  # BLAS: 3x np.sum
                acc *= rescale[..., None]
                acc += block @ part_V[..., cols, :]
                row_max = new_max
            reads_any = row_sum > 0  # False only for rows that may read no key
            np.divide(acc, row_sum[..., None], out=acc, where=reads_any[..., None])
            output[heads][..., rows, :] = acc
            lse = np.log(row_sum, out=np.full_like(row_sum, -np.inf), where=reads_any)
            log_sum_exp[heads][..., rows] = lse + np.where(reads_any, row_max, 0)

    head_bytes = n_queries * n_keys * dtype.itemsize
    n_blocks = math.ceil(n_queries / block_size)
    stripes = _stripes(math.prod(batch), n_blocks)
    _run(forward_part, batch, stripes, head_bytes // stripes)
    if not return_cache:
        return output
    cache = StreamingCache(
        Q, K, V, output, log_sum_exp, float(scale), mask, causal, document_lengths, block_size
    )
    return output, cache


# ---------------------------------------------------------------- backward


def _check_cache(cache):
    if not isinstance(cache, StreamingCache):
        raise TypeError(
            "cache must be the StreamingCache returned by streaming_attention_forward(..., "
            f"return_cache=True); got {type(cache).__name__}. (An AttentionCache from "
            "attention_forward goes to attention_backward instead.)"
        )
    Q, K, V = cache.Q, cache.K, cache.V
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    expected_output = batch + (Q.shape[-2], V.shape[-1])
    if cache.output.shape != expected_output or cache.log_sum_exp.shape != expected_output[:-1]:
        raise ValueError(
            f"cache is inconsistent: output {cache.output.shape} and log_sum_exp "
            f"{cache.log_sum_exp.shape} do not belong to Q {Q.shape}, K {K.shape}, V {V.shape} "
            f"(expected {expected_output} and {expected_output[:-1]}); pass the cache exactly "
            "as streaming_attention_forward returned it."
        )


def streaming_attention_backward(grad_output, cache):
    """Gradients with respect to Q, K and V, recomputing the weights block by block.

    Same gradients as :func:`attention_backward` (to rounding). Each block of
    weights is recomputed exactly from its scores and the saved log-sum-exp,
    ``A = exp(S - lse)``; the softmax's row term is ``D = rowsum(grad_O * O)``,
    so no ``T_q x T_k`` array is ever held.

    Parameters
    ----------
    grad_output : array_like, shape of the forward output (..., T_q, d_v)
        Gradient of the loss with respect to the attention output.
    cache : StreamingCache
        From ``streaming_attention_forward(..., return_cache=True)``.

    Returns
    -------
    grad_Q, grad_K, grad_V : numpy.ndarray
        Same shapes as ``Q``, ``K`` and ``V`` (summed over any axes that
        broadcasting stretched). Keys nobody may read and rows that may read no key
        contribute exactly zero.

    Notes
    -----
    Heads run on every core; a single head is cut into interleaved stripes of
    key blocks. Each stripe owns the gradients of its keys and values, and
    adds its share of ``grad_Q`` into a buffer of its own, summed at the end
    in stripe order (so the result does not depend on thread timing).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 9, 4))
    >>> out, cache = streaming_attention_forward(Q, K, V, causal=True, return_cache=True,
    ...                                          block_size=4)
    >>> grads = streaming_attention_backward(np.ones_like(out), cache)
    >>> _, dense_cache = attention_forward(Q, K, V, mask=causal_mask(9), return_cache=True)
    >>> dense = attention_backward(np.ones_like(out), dense_cache)
    >>> all(np.allclose(g, e) for g, e in zip(grads, dense))
    True
    >>> grads[2].sum(axis=0)  # each output row spreads weight 1 over the values
    array([9., 9., 9., 9.])
    """
    _check_cache(cache)
    output = cache.output
    grad_output = check_grad_output_like(grad_output, output)
    Q, K, V, block_size = cache.Q, cache.K, cache.V, cache.block_size
    dtype = output.dtype
    scale = dtype.type(cache.scale)
    batch = output.shape[:-2]
    n_queries, n_keys = Q.shape[-2], K.shape[-2]
    Qb, Kb, Vb = (np.broadcast_to(a, batch + a.shape[-2:]) for a in (Q, K, V))
    full_mask = (
        None if cache.mask is None else np.broadcast_to(cache.mask, batch + (n_queries, n_keys))
    )
    document = None if cache.document_lengths is None else document_ids(cache.document_lengths)
    access = _Access(cache.causal, document)
    # Gradients over the full broadcast batch first; sum_to_shape folds them back.
    grad_Q = np.zeros(batch + Q.shape[-2:], dtype)
    grad_K = np.zeros(batch + K.shape[-2:], dtype)
    grad_V = np.zeros(batch + V.shape[-2:], dtype)
    # Stripes after the first add their share of grad_Q here, keyed by part.
    grad_Q_shares = {}

    def backward_part(heads, stripe):
        part_Q, part_K, part_V = Qb[heads], Kb[heads], Vb[heads]
        part_grad_output = grad_output[heads]
        part_mask = None if full_mask is None else full_mask[heads]
        head_shape = part_Q.shape[:-2]
        # rowsum(grad_A * A) == rowsum(grad_O * O): the row term from T x d arrays.
        row_dot = np.einsum("...ij,...ij->...i", part_grad_output, output[heads])
        lse = cache.log_sum_exp[heads]
        # A row that may read no key has lse -inf; its scores are all -inf too, so any
        # finite shift gives exp(-inf) = 0 there.
        shift = np.where(np.isneginf(lse), 0, lse)
        if stripe:
            part_grad_Q = np.zeros(head_shape + Q.shape[-2:], dtype)
            grad_Q_shares[(heads, stripe)] = part_grad_Q
        else:
            part_grad_Q = grad_Q[heads]
        weights = np.empty(
            head_shape + (min(block_size, n_queries), min(block_size, n_keys)), dtype
        )
        grad_scores = np.empty_like(weights)
        query_blocks = _blocks(n_queries, block_size)
        for cols in _blocks(n_keys, block_size, stripe, stripes):
            # The scale goes into this block of keys (both products that use it need it);
            # BLAS multiplies by contiguous K^T and V^T faster than by transposed views.
            key = part_K[..., cols, :] * scale
            key_t, value_t = (
                np.ascontiguousarray(np.swapaxes(a, -1, -2)) for a in (key, part_V[..., cols, :])
            )
            key_grad = grad_K[heads][..., cols, :]
            value_grad = grad_V[heads][..., cols, :]
            for rows in query_blocks:
                visit, block_mask = access.block(rows, cols, part_mask)
                if not visit:
                    continue
                shape = (rows.stop - rows.start, cols.stop - cols.start)
                block = weights[..., : shape[0], : shape[1]]
                query = part_Q[..., rows, :]
                block_grad_output = part_grad_output[..., rows, :]
                np.matmul(query, key_t, out=block)
                if block_mask is not None:
                    np.copyto(block, -np.inf, where=~block_mask)
                block -= shift[..., rows, None]
                np.exp(block, out=block)  # the weights A of this block, exactly
                value_grad += np.swapaxes(block, -1, -2) @ block_grad_output
                block_grad = grad_scores[..., : shape[0], : shape[1]]
                np.matmul(block_grad_output, value_t, out=block_grad)  # grad_A ...
                block_grad -= row_dot[..., rows, None]
                block_grad *= block  # ... turned into grad_S: zero where A is zero
                key_grad += np.swapaxes(block_grad, -1, -2) @ query
                part_grad_Q[..., rows, :] += block_grad @ key  # key was scaled
            key_grad *= scale

    head_bytes = n_queries * n_keys * dtype.itemsize
    stripes = _stripes(math.prod(batch), math.ceil(n_keys / block_size))
    _run(backward_part, batch, stripes, head_bytes // stripes)
    for (heads, _stripe), share in sorted(grad_Q_shares.items(), key=lambda item: item[0][1]):
        grad_Q[heads] += share
    return (
        sum_to_shape(grad_Q, Q.shape),
        sum_to_shape(grad_K, K.shape),
        sum_to_shape(grad_V, V.shape),
    )


# ---------------------------------------------------------------- one row, traced


class OnlineSoftmaxTrace(NamedTuple):
    """The running state of one row's online softmax after each block of keys."""

    block_starts: np.ndarray  # (n_blocks,) first key index of each block
    running_max: np.ndarray  # (n_blocks,) m after the block
    running_sum: np.ndarray  # (n_blocks,) l after the block, relative to that m
    rescale: np.ndarray  # (n_blocks,) exp(m_old - m_new) applied to l and acc; 1 if m kept
    partial_output: np.ndarray  # (n_blocks, d_v) acc / l: the output over the keys seen


def online_softmax_trace(scores_row, values, block_size):
    """Trace one row's online softmax over blocks of ``block_size`` keys.

    Parameters
    ----------
    scores_row : array_like, shape (T_k,)
        Finite scores of one query against every key.
    values : array_like, shape (T_k, d_v)
        The values the weights blend.
    block_size : int
        Keys per block (>= 1); the last block may be shorter.

    Returns
    -------
    OnlineSoftmaxTrace
        One entry per block. ``partial_output[-1]`` equals
        ``softmax(scores_row) @ values`` up to rounding.

    Examples
    --------
    >>> trace = online_softmax_trace([0.0, 1.0, 3.0, 2.0], np.eye(4), block_size=2)
    >>> trace.running_max
    array([1., 3.])
    >>> np.round(trace.rescale, 4)  # the second block's 3.0 shrinks the first block's sum
    array([1.    , 0.1353])
    >>> np.round(trace.partial_output[-1], 4)
    array([0.0321, 0.0871, 0.6439, 0.2369])
    """
    scores_row = as_float_array(scores_row, "scores_row", min_ndim=1, layout="(T_k,)")
    values = as_float_array(values, "values", min_ndim=2, layout="(T_k, d_v)")
    block_size = require_whole_number(block_size, "block_size")
    if scores_row.ndim != 1 or scores_row.shape[0] == 0:
        raise ValueError(
            f"scores_row must be one non-empty row of scores, shape (T_k,); got shape "
            f"{scores_row.shape}."
        )
    if values.ndim != 2 or values.shape[0] != scores_row.shape[0]:
        raise ValueError(
            f"values must have shape (T_k, d_v) with T_k = {scores_row.shape[0]} (one value "
            f"per score); got shape {values.shape}."
        )
    starts = np.arange(0, scores_row.shape[0], block_size)
    running_max, running_sum, rescale, partial = [], [], [], []
    m, total, acc = -np.inf, 0.0, np.zeros(values.shape[1], dtype=values.dtype)
    for start in starts:
        block = scores_row[start : start + block_size]
        m_new = max(m, float(block.max()))
        # exp(-inf) = 0 before the first block: nothing seen yet, nothing to shrink.
        shrink = float(np.exp(m - m_new)) if np.isfinite(m) else 1.0
        exps = np.exp(block - m_new)
        total = total * shrink + float(exps.sum())
        acc = acc * shrink + exps @ values[start : start + block_size]
        m = m_new
        running_max.append(m)
        running_sum.append(total)
        rescale.append(shrink)
        partial.append(acc / total)
    return OnlineSoftmaxTrace(
        block_starts=starts,
        running_max=np.array(running_max),
        running_sum=np.array(running_sum),
        rescale=np.array(rescale),
        partial_output=np.array(partial),
    )
