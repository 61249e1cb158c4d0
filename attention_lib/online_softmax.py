"""One row's online softmax, block by block: the bookkeeping streaming attention does.

:mod:`attention_lib.streaming` runs this for every query row at once and keeps
nothing but the result. Here one row is traced so the notebook can show each
step: after each block of keys, the largest score seen so far ``m``, the sum
``l`` of ``exp(score - m)`` over the keys seen so far, the factor
``exp(m_old - m_new)`` by which the old sum and partial output were shrunk
when a larger score arrived, and the partial output ``acc / l`` (the attention
output over the keys seen so far). After the last block it equals the output
of the ordinary softmax over the whole row (Dao et al. 2022).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validation import as_float_array, require_whole_number

__all__ = ["OnlineSoftmaxTrace", "online_softmax_trace"]


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
    >>> import numpy as np
    >>> from attention_lib.online_softmax import online_softmax_trace
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
