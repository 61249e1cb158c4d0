"""Deliberately WRONG variants of attention, kept in one place to learn from.

Every function here reproduces a mistake people really make. Notebooks show
them next to the right call, tests pin down exactly how each one differs, and
the exercise checkers use them to recognise a student's bug. None of them is
exported from :mod:`attention_lib` itself, so nobody imports a wrong function
by accident: you must write ``from attention_lib import pitfalls``.

Each one changes one step of the library's readable code
(:mod:`attention_lib.attention`), on a line marked WRONG. Where the right steps
around it are a public function, it is called, not copied; the softmax
pitfalls and the backward pass with a sign error write out the few lines they
change, as the student whose mistake they are would. The softmax pitfalls skip
the library's input checks on purpose (``large_negative_fill`` must accept
float16 to show how it breaks), and none of them silences NumPy's
floating-point warnings: the warnings are part of what goes wrong.

========================================  ==========================================
wrong                                     right
========================================  ==========================================
:func:`mask_after_softmax`                ``masked_softmax(scores, mask)``
:func:`large_negative_fill`               ``masked_softmax(scores, mask)`` (-inf)
:func:`softmax_without_max_subtraction`   ``masked_softmax(scores)``
:func:`scale_by_sqrt_d_model`             ``attention_forward(Q, K, V)`` (sqrt(d_k))
:func:`causal_mask_triu`                  ``causal_mask(T)`` (lower triangle)
:func:`softmax_backward_sign_error`       ``softmax_backward(weights, grad_weights)``
:func:`attention_backward_with_sign_error` ``attention_backward(grad_output, cache)``
========================================  ==========================================
"""

from __future__ import annotations

import math

import numpy as np

from ._contract import sum_to_shape
from ._validation import check_grad_output
from .attention import attention_scores, masked_softmax

__all__ = [
    "attention_backward_with_sign_error",
    "causal_mask_triu",
    "large_negative_fill",
    "mask_after_softmax",
    "scale_by_sqrt_d_model",
    "softmax_backward_sign_error",
    "softmax_without_max_subtraction",
]


def _as_float(array):
    """Keep any float dtype (float16 included); promote everything else to float64."""
    array = np.asarray(array)
    return array if array.dtype.kind == "f" else array.astype(np.float64)


def mask_after_softmax(scores, mask):
    """WRONG: softmax over every key, then zero the blocked weights.

    Why it is wrong: the blocked keys have already taken their share of the
    softmax's denominator, so each row sums to less than one (the output
    shrinks towards zero), and the blocked scores still change the weights of
    the allowed keys: with a causal mask the future leaks into the past
    through the normaliser. Masking must act on the *scores*, before softmax.

    Right call: ``masked_softmax(scores, mask)``.

    Parameters
    ----------
    scores : array_like, shape (..., T_q, T_k)
    mask : array_like of bool
        True = may read; broadcastable to ``scores``.

    Returns
    -------
    numpy.ndarray
        Wrong weights: rows sum to less than one where anything is masked.

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> scores = np.array([[1.0, 2.0, 3.0]])
    >>> keep = np.array([[True, True, False]])
    >>> np.round(pitfalls.mask_after_softmax(scores, keep), 3)
    array([[0.09 , 0.245, 0.   ]])
    >>> np.round(masked_softmax(scores, keep), 3)  # right: the kept keys share all the weight
    array([[0.269, 0.731, 0.   ]])
    """
    weights = masked_softmax(scores)  # WRONG: every key takes part in the softmax...
    return weights * np.asarray(mask, dtype=bool)  # ...and only then are the blocked ones zeroed


def large_negative_fill(scores, mask, fill=-1e9):
    """WRONG: block keys by writing a large negative number instead of -inf.

    Why it is wrong: exp(-1e9 - max) is zero in practice, so partly masked
    rows look fine, but a row whose keys are *all* masked holds equal scores
    (all ``fill``) and softmax turns it into uniform weights: a query that
    may read nothing (an example that is all padding, or a row a query mask
    blocks) reads every blocked key. In float16 the fill does not even fit
    (float16 stops at 65504): it overflows to -inf with a warning, and a
    fully masked row becomes -inf - (-inf) = NaN. The same happens with
    -9e15 or d2l's -1e6 (-1e6 also overflows float16).

    Right call: ``masked_softmax(scores, mask)``: -inf, with fully masked rows
    defined as all-zero weights.

    Parameters
    ----------
    scores : array_like, shape (..., T_q, T_k)
        Any float dtype, float16 included (to show the overflow).
    mask : array_like of bool
    fill : float, default -1e9

    Returns
    -------
    numpy.ndarray, dtype of ``scores``

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> scores = np.array([[0.5, 1.0], [0.5, 1.0]])
    >>> keep = np.array([[True, False], [False, False]])  # row 1 reads nothing
    >>> pitfalls.large_negative_fill(scores, keep)
    array([[1. , 0. ],
           [0.5, 0.5]])
    >>> masked_softmax(scores, keep)  # right: the empty row stays empty
    array([[1., 0.],
           [0., 0.]])
    >>> with np.errstate(over="ignore", invalid="ignore"):
    ...     pitfalls.large_negative_fill(scores.astype(np.float16), keep)
    array([[ 1.,  0.],
           [nan, nan]], dtype=float16)
    """
    scores = _as_float(scores)
    # WRONG: a finite fill where masked_softmax writes -inf. The softmax after it is
    # masked_softmax's without a mask: it knows of no blocked key, so it takes none
    # of masked_softmax's care for rows with every key blocked.
    filled = np.where(np.asarray(mask, dtype=bool), scores, np.asarray(fill, dtype=scores.dtype))
    exp = np.exp(filled - filled.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def softmax_without_max_subtraction(scores, mask=None):
    """WRONG: ``exp(s) / sum(exp(s))`` without subtracting each row's maximum first.

    Why it is wrong: mathematically the same, numerically not. exp overflows
    to inf for scores above about 709 in float64 (about 88 in float32), and
    inf / inf is NaN. Scores that large are ordinary for unscaled dot
    products of wide vectors. Subtracting the row maximum changes nothing
    mathematically (softmax is shift-invariant) and keeps every exponent <= 0.

    Right call: ``masked_softmax(scores, mask)``.

    Parameters
    ----------
    scores : array_like, shape (..., T_k)
    mask : array_like of bool, optional
        Blocked entries are set to -inf first (this part is right).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> with np.errstate(over="ignore", invalid="ignore"):
    ...     pitfalls.softmax_without_max_subtraction(np.array([[1000.0, 999.0]]))
    array([[nan, nan]])
    >>> np.round(masked_softmax(np.array([[1000.0, 999.0]])), 3)
    array([[0.731, 0.269]])
    """
    scores = _as_float(scores)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    exp = np.exp(scores)  # WRONG: masked_softmax takes np.exp(scores - row_max)
    return exp / exp.sum(axis=-1, keepdims=True)


def scale_by_sqrt_d_model(Q, K, V, d_model, mask=None, return_weights=False):
    """WRONG: divide the scores by sqrt(d_model) instead of sqrt(d_k).

    Why it is wrong: the scale corrects the variance of a dot product of two
    ``d_k``-wide vectors, which is ``d_k``. With ``h`` heads, ``d_k = d_model /
    h``, so dividing by sqrt(d_model) shrinks every score by an extra
    sqrt(h): the scores' variance becomes ``1 / h`` instead of 1 and the
    weights come out flatter (closer to uniform) than intended. With one head
    (``d_model == d_k``) the two agree, which is why the bug survives tests
    that only use one head.

    Right call: ``attention_forward(Q, K, V, mask)``, which reads ``d_k`` from
    ``Q.shape[-1]``.

    Parameters
    ----------
    Q, K, V : array_like, shapes (..., T_q, d_k), (..., T_k, d_k), (..., T_k, d_v)
    d_model : int
        The model width (all heads together).
    mask : array_like of bool, optional
    return_weights : bool, default False
        Also return the (too flat) weights.

    Returns
    -------
    output : numpy.ndarray, shape (..., T_q, d_v)
    weights : numpy.ndarray, shape (..., T_q, T_k)
        Only when ``return_weights`` is True.

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> Q = np.array([[2.0, 0.0]])  # one head of width d_k = 2 out of d_model = 8
    >>> K = np.array([[2.0, 0.0], [0.0, 2.0]])
    >>> V = np.eye(2)
    >>> _, wrong = pitfalls.scale_by_sqrt_d_model(Q, K, V, d_model=8, return_weights=True)
    >>> np.round(wrong, 3)
    array([[0.804, 0.196]])
    >>> _, cache = attention_forward(Q, K, V, return_cache=True)
    >>> np.round(cache.weights, 3)  # right: sharper
    array([[0.944, 0.056]])
    """
    scores = attention_scores(Q, K, scaled=False) / math.sqrt(d_model)  # WRONG: sqrt(d_k)
    weights = masked_softmax(scores, mask)
    output = weights @ V
    return (output, weights) if return_weights else output


def causal_mask_triu(length, k_length=None):
    """WRONG: the upper triangle (``np.triu``) as a causal mask, instead of the lower.

    Why it is wrong: with True = may read, ``triu`` lets query ``i`` read keys
    ``j >= i``: position 0 reads the whole future and the last position reads
    only itself. Training looks great (the model copies the next token from
    the future) and generation fails. It is the right mask only under the
    opposite convention (True = block, with the diagonal removed:
    ``np.triu(ones, k=1)``), which is where the confusion comes from.

    Right call: ``causal_mask(length, k_length)`` (``np.tril``).

    Parameters
    ----------
    length : int
    k_length : int, optional

    Returns
    -------
    numpy.ndarray of bool, shape (length, k_length)

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> pitfalls.causal_mask_triu(3).astype(int)
    array([[1, 1, 1],
           [0, 1, 1],
           [0, 0, 1]])
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    k_length = length if k_length is None else k_length
    return np.triu(np.ones((length, k_length), dtype=bool))


def softmax_backward_sign_error(weights, grad_weights):
    """WRONG: the softmax row term added instead of subtracted.

    Computes ``A * (grad_A + rowsum(grad_A * A))``; the right formula (eq.
    19.4) is ``A * (grad_A - rowsum(grad_A * A))``. Why it is wrong: softmax
    is unchanged by adding a constant to a row of scores, so the right
    gradient of each row sums to zero; with the sign flipped it does not,
    and every gradient check fails. The shapes are right, so nothing crashes.

    Right call: ``softmax_backward(weights, grad_weights)``.

    Parameters
    ----------
    weights : array_like, shape (..., T_k)
    grad_weights : array_like, same shape as ``weights``

    Returns
    -------
    numpy.ndarray
        Wrong score gradients: their rows do not sum to zero.

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> weights = np.array([[0.5, 0.5]])
    >>> pitfalls.softmax_backward_sign_error(weights, np.array([[1.0, 0.0]]))
    array([[0.75, 0.25]])
    >>> softmax_backward(weights, np.array([[1.0, 0.0]]))  # right: the row sums to zero
    array([[ 0.25, -0.25]])
    """
    weights = np.asarray(weights, dtype=float)
    grad_weights = np.asarray(grad_weights, dtype=float)
    row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)  # right so far
    return weights * (grad_weights + row_dot)  # WRONG: softmax_backward subtracts it


def attention_backward_with_sign_error(grad_output, cache):
    """WRONG: the attention backward pass built on :func:`softmax_backward_sign_error`.

    Why it is wrong: the softmax row term has the wrong sign (see
    :func:`softmax_backward_sign_error`). ``grad_V`` is still right (it does not
    pass through the softmax), but ``grad_Q`` and ``grad_K`` are wrong. Shapes
    are right, so only a finite-difference check catches it:
    ``check_attention_gradients(Q, K, V, backward=attention_backward_with_sign_error)``
    reports large errors for Q and K and none for V.

    Right call: ``attention_backward(grad_output, cache)``.

    Parameters
    ----------
    grad_output : array_like, shape of the forward output
    cache : AttentionCache
        From ``attention_forward(..., return_cache=True)``.

    Returns
    -------
    grad_Q, grad_K, grad_V : numpy.ndarray

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 4, 2))
    >>> report = check_attention_gradients(
    ...     Q, K, V, backward=pitfalls.attention_backward_with_sign_error)
    >>> report.passed, report.errors["V"] < 1e-6, report.errors["Q"] > 1e-2
    (False, True, True)
    """
    grad_output = check_grad_output(grad_output, cache)
    Q, K, V, weights, scale, _, _ = cache
    grad_V = np.swapaxes(weights, -1, -2) @ grad_output  # right: attention_backward's steps...
    grad_weights = grad_output @ np.swapaxes(V, -1, -2)
    grad_scores = softmax_backward_sign_error(weights, grad_weights)  # WRONG: eq. 19.4's sign
    grad_Q = (grad_scores @ K) * scale  # ...and right again from here on
    grad_K = (np.swapaxes(grad_scores, -1, -2) @ Q) * scale
    return (
        sum_to_shape(grad_Q, Q.shape),
        sum_to_shape(grad_K, K.shape),
        sum_to_shape(grad_V, V.shape),
    )
