"""The contract both attention paths keep: the shapes they produce, the cache, the broadcasting sum.

:mod:`attention_lib.attention` (the chapter's readable code) and
:mod:`attention_lib._fast` (the tiled pass for large inputs) both build on this
module and on nothing of each other's, so ``attention`` can import ``_fast`` at
the top and hand it large inputs. It imports nothing from the library.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class AttentionCache(NamedTuple):
    """What :func:`~attention_lib.attention_backward` needs from the forward pass.

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


def weights_shape_of(Q, K):
    """Shape ``(..., T_q, T_k)`` of the weights of queries ``Q`` against keys ``K``."""
    return np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (Q.shape[-2], K.shape[-2])


def output_shape_of(Q, K, V):
    """Shape ``(..., T_q, d_v)`` of the attention output (V may add batch axes)."""
    return np.broadcast_shapes(weights_shape_of(Q, K)[:-2], V.shape[:-2]) + (
        Q.shape[-2],
        V.shape[-1],
    )


def sum_to_shape(grad, shape):
    """Undo broadcasting: an input used several times gets the sum of the gradients of its uses.

    Axes that broadcasting added in front are summed away; an axis of size 1 that
    it stretched (a K of shape (1, T, d) read by a batch of two) is summed back to 1.
    """
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad
