"""Why divide by sqrt(d_k): score variance and softmax saturation (chapter 19.2).

With independent, zero-mean, unit-variance entries, ``q . k`` has mean 0 and
variance ``d_k`` (eq. 19.2). Unscaled scores therefore spread out as ``d_k``
grows, the softmax saturates (one weight near 1, entropy near 0) and its
Jacobian shrinks: the weights stop responding to their scores. The functions
here measure each of those effects.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validation import as_float_array, require_whole_number
from .attention import attention_scores, masked_softmax

# Rows per chunk are chosen so that one chunk of Q (or K) holds about this many
# float64 numbers (8 MB): memory stays flat even at width 4096.
_CHUNK_ELEMENTS = 1 << 20


def dot_product_variance(width, samples=50_000, seed=19):
    """Monte Carlo estimate of ``Var(q . k)`` for independent standard-normal entries.

    The chapter's listing draws two ``(samples, width)`` arrays at once, which
    is 3.3 GB at width 4096. This version draws them in chunks of rows and
    merges the chunk statistics exactly (Chan et al.'s pairwise update), so the
    memory is bounded. While one chunk holds every sample (``samples <= 2**20 //
    width``: the default 50,000 samples up to width 20) it draws the listing's
    very pairs and agrees with it to the last digits. With more chunks the same
    random stream is cut into different pairs, so the estimate is another sample
    of the same distribution: it differs from the listing's by the order of one
    standard error (:func:`variance_standard_error`; 1.4 of them at width 64),
    not in the last digits.

    Parameters
    ----------
    width : int
        ``d_k``, the number of entries in each query and key (at least 1).
    samples : int, default 50_000
        Number of independent (q, k) pairs (at least 2).
    seed : int, default 19
        Seed for ``numpy.random.default_rng``.

    Returns
    -------
    float
        The sample variance (``ddof=0``, like ``np.var``); close to ``width``.

    Examples
    --------
    >>> v = dot_product_variance(64, samples=20_000, seed=0)
    >>> abs(v / 64 - 1) < 0.05
    True
    """
    width = require_whole_number(width, "width")
    samples = require_whole_number(samples, "samples", minimum=2)
    seed = require_whole_number(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // width)
    count, mean, sum_sq_dev = 0, 0.0, 0.0
    for start in range(0, samples, rows_per_chunk):
        rows = min(rows_per_chunk, samples - start)
        q = rng.standard_normal((rows, width))
        k = rng.standard_normal((rows, width))
        dots = np.einsum("ij,ij->i", q, k)
        chunk_mean = float(dots.mean())
        chunk_sum_sq_dev = float(np.sum((dots - chunk_mean) ** 2))
        delta = chunk_mean - mean
        total = count + rows
        mean += delta * rows / total
        sum_sq_dev += chunk_sum_sq_dev + delta**2 * count * rows / total
        count = total
    return sum_sq_dev / count


def variance_standard_error(width, samples):
    """Sampling standard deviation of :func:`dot_product_variance`'s estimate.

    For ``s = q . k`` with standard-normal entries, ``E[s^2] = d`` and
    ``E[s^4] = 3 d^2 + 6 d``, so ``Var(s^2) = 2 d^2 + 6 d`` and the variance
    estimated from ``n`` samples has standard error about
    ``d * sqrt((2 + 6 / d) / n)``. Tests and notebooks accept an estimate
    within a few of these: a tolerance that follows from the sample count
    instead of a guess.

    Parameters
    ----------
    width : int
        The vectors' width ``d``.
    samples : int
        How many dot products the estimate averages.

    Returns
    -------
    float
        The standard error of the estimated variance.

    Examples
    --------
    >>> round(variance_standard_error(64, 50_000), 3)
    0.414
    >>> round(variance_standard_error(1, 10_000), 4)  # sqrt(8 / 10_000)
    0.0283
    """
    width = require_whole_number(width, "width")
    samples = require_whole_number(samples, "samples", minimum=2)
    return width * float(np.sqrt((2.0 + 6.0 / width) / samples))


def random_scores(d_k, n_queries=64, n_keys=64, *, scaled=True, seed=0):
    """Scores of random standard-normal queries against random keys.

    Returns the ``(n_queries, n_keys)`` score matrix, divided by ``sqrt(d_k)``
    when ``scaled`` is True (the attention layer at initialisation).

    Parameters
    ----------
    d_k : int
        Width of the queries and keys.
    n_queries, n_keys : int, default 64
        How many of each.
    scaled : bool, default True
        Divide by ``sqrt(d_k)``.
    seed : int, default 0
        Seed of the random numbers, so that a notebook reproduces its output.

    Returns
    -------
    numpy.ndarray, shape (n_queries, n_keys)

    Examples
    --------
    >>> random_scores(16, 4, 5).shape
    (4, 5)
    """
    d_k = require_whole_number(d_k, "d_k")
    n_queries = require_whole_number(n_queries, "n_queries")
    n_keys = require_whole_number(n_keys, "n_keys")
    rng = np.random.default_rng(require_whole_number(seed, "seed", minimum=0))
    Q = rng.standard_normal((n_queries, d_k))
    K = rng.standard_normal((n_keys, d_k))
    return attention_scores(Q, K, scaled=scaled)


def softmax_entropy(weights):
    """Entropy (in nats) of each row of attention weights, with ``0 log 0 = 0``.

    ``log(T_k)`` means uniform attention; 0 means all weight on one key.

    Parameters
    ----------
    weights : array_like, shape (..., T_k)
        Rows of non-negative weights that sum to 1.

    Returns
    -------
    numpy.ndarray, shape (...)
        One entropy per row, between 0 and ``log(T_k)``.

    Examples
    --------
    >>> np.round(softmax_entropy(np.array([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]])), 4)
    array([1.3863, 0.    ])
    """
    weights = as_float_array(weights, "weights", min_ndim=1, layout="(..., T_k)")
    logs = np.log(weights, out=np.zeros_like(weights), where=weights > 0)
    return 0.0 - np.sum(weights * logs, axis=-1)  # 0.0 - x: a certain row gives 0, not -0


def softmax_jacobian_norm(weights):
    """Frobenius norm of the softmax Jacobian ``diag(a) - a a^T`` for each row ``a``.

    It measures how strongly the weights respond to the scores: nudge every
    score by a small independent random amount ``eps * z`` (``z`` standard
    normal) and the weight vector moves a distance ``eps * ||J||`` in root mean
    square. It vanishes when the softmax saturates on one key. Computed in closed form,
    ``||J||^2 = sum a^2 - 2 sum a^3 + (sum a^2)^2``, without building ``J``.

    Parameters
    ----------
    weights : array_like, shape (..., T_k)
        Rows of softmax weights.

    Returns
    -------
    numpy.ndarray, shape (...)
        One norm per row; 0 for one-hot weights.

    Examples
    --------
    >>> np.round(softmax_jacobian_norm(np.array([[0.5, 0.5], [1.0, 0.0]])), 4)
    array([0.5, 0. ])
    """
    weights = as_float_array(weights, "weights", min_ndim=1, layout="(..., T_k)")
    sum_sq = np.sum(weights**2, axis=-1)
    sum_cube = np.sum(weights**3, axis=-1)
    return np.sqrt(np.maximum(sum_sq - 2.0 * sum_cube + sum_sq**2, 0.0))


class SaturationStats(NamedTuple):
    """Row-averaged softmax statistics for random scores at one width."""

    d_k: int
    scaled: bool
    score_mean: float
    score_var: float
    entropy: float
    max_weight: float
    jacobian_norm: float


class SaturationRows(NamedTuple):
    """Random scores at one width and, row by row, how saturated their softmax is."""

    d_k: int
    scaled: bool
    scores: np.ndarray  #: (n_queries, n_keys)
    weights: np.ndarray  #: (n_queries, n_keys) softmax of each row
    entropy: np.ndarray  #: (n_queries,) nats
    max_weight: np.ndarray  #: (n_queries,)
    jacobian_norm: np.ndarray  #: (n_queries,)

    def averaged(self):
        """The same measures averaged over the rows, as a :class:`SaturationStats`.

        Examples
        --------
        >>> rows = saturation_rows(16, n_queries=4, n_keys=8)
        >>> rows.averaged() == saturation_stats(16, n_queries=4, n_keys=8)
        True
        """
        return SaturationStats(
            d_k=self.d_k,
            scaled=self.scaled,
            score_mean=float(self.scores.mean()),
            score_var=float(self.scores.var()),
            entropy=float(self.entropy.mean()),
            max_weight=float(self.max_weight.mean()),
            jacobian_norm=float(self.jacobian_norm.mean()),
        )


def saturation_rows(d_k, *, scaled=True, n_queries=64, n_keys=64, seed=0):
    """Random scores at width ``d_k`` and each row's entropy, largest weight and Jacobian norm.

    What :func:`saturation_stats` averages, row by row: for a figure of one
    query's weights next to the averages (the sqrt(d_k) explorer).

    Parameters
    ----------
    d_k : int
        Width of the random queries and keys.
    scaled : bool, default True
        Divide the scores by ``sqrt(d_k)``.
    n_queries, n_keys : int, default 64
        Rows and columns of the score matrix.
    seed : int, default 0
        Seed of the random numbers.

    Returns
    -------
    SaturationRows

    Examples
    --------
    >>> rows = saturation_rows(1024, scaled=False, n_queries=3)
    >>> rows.weights.shape, rows.entropy.shape
    ((3, 64), (3,))
    >>> bool(np.all(rows.max_weight == rows.weights.max(axis=-1)))
    True
    """
    scores = random_scores(d_k, n_queries, n_keys, scaled=scaled, seed=seed)
    weights = masked_softmax(scores)
    return SaturationRows(
        d_k=int(d_k),
        scaled=bool(scaled),
        scores=scores,
        weights=weights,
        entropy=softmax_entropy(weights),
        max_weight=weights.max(axis=-1),
        jacobian_norm=softmax_jacobian_norm(weights),
    )


def saturation_stats(d_k, *, scaled=True, n_queries=64, n_keys=64, seed=0):
    """How saturated the softmax of random scores is at width ``d_k``.

    Returns a :class:`SaturationStats` with the mean and variance of the
    scores and, averaged over rows, the weights' entropy, the largest weight
    and the softmax Jacobian norm (the rows themselves: :func:`saturation_rows`).

    Parameters
    ----------
    d_k : int
        Width of the random queries and keys.
    scaled : bool, default True
        Divide the scores by ``sqrt(d_k)``.
    n_queries, n_keys : int, default 64
        Rows and columns of the score matrix.
    seed : int, default 0
        Seed of the random numbers.

    Returns
    -------
    SaturationStats

    Examples
    --------
    >>> small, large = saturation_stats(1024, scaled=False), saturation_stats(1024)
    >>> bool(small.max_weight > 0.9 and large.max_weight < 0.2)
    True
    """
    rows = saturation_rows(d_k, scaled=scaled, n_queries=n_queries, n_keys=n_keys, seed=seed)
    return rows.averaged()
