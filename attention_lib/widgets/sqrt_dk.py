"""Explorer for notebook 02: why divide the scores by sqrt(d_k) (chapter 19.2).

Controls: ``d_k`` (log steps 1 ... 4096) and whether the scores are scaled.
The state holds random scores at initialisation (standard-normal queries and
keys), one row of softmax weights, and how saturated the softmax is: the row
entropy, the largest weight and the norm of the softmax Jacobian (how much a
nudge of the scores still moves the weights, i.e. how much gradient flows).

:func:`update` is pure (NumPy only); drawing and the widget shell live in
the functions below it and import matplotlib / ipywidgets lazily.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..attention import masked_softmax
from ..variance import random_scores, softmax_entropy, softmax_jacobian_norm

#: The slider's stops: powers of two from 1 to 4096.
D_K_CHOICES = tuple(2**i for i in range(13))

#: Default sizes: the same as :func:`attention_lib.saturation_stats`, so the
#: explorer's averages equal ``saturation_stats(d_k, scaled=...)``.
N_QUERIES = 64
N_KEYS = 64


class SqrtDkState(NamedTuple):
    """What the sqrt(d_k) explorer shows for one setting of its controls."""

    d_k: int
    scaled: bool
    scores: np.ndarray  #: (n_queries, n_keys) scores, divided by sqrt(d_k) if scaled
    row: int  #: index of the query row shown as a bar chart
    row_weights: np.ndarray  #: (n_keys,) softmax weights of that row
    score_mean: float
    score_std: float
    score_var: float
    row_entropy: float  #: entropy (nats) of the shown row
    row_max_weight: float
    row_jacobian_norm: float
    entropy: float  #: averaged over all rows, like saturation_stats
    max_weight: float
    jacobian_norm: float
    uniform_entropy: float  #: log(n_keys): the entropy of a perfectly flat row


def update(d_k, scaled=True, *, n_queries=N_QUERIES, n_keys=N_KEYS, row=0, seed=0):
    """Scores, one weight row and saturation numbers at width ``d_k``.

    Parameters
    ----------
    d_k : int
        Width of queries and keys (the slider offers :data:`D_K_CHOICES`,
        but any whole number >= 1 works).
    scaled : bool, default True
        Divide the scores by ``sqrt(d_k)`` (the attention layer) or not.
    n_queries, n_keys : int
        Size of the random score matrix.
    row : int
        Which query row to show as a bar chart.
    seed : int
        Seed of the random queries and keys; the same seed with and without
        scaling uses the same vectors, so the toggle only changes the scale.

    Examples
    --------
    >>> from attention_lib.widgets.sqrt_dk import update
    >>> flat, sharp = update(1024, scaled=True), update(1024, scaled=False)
    >>> bool(sharp.max_weight > 0.9 > 0.2 > flat.max_weight)
    True
    """
    scores = random_scores(d_k, n_queries, n_keys, scaled=scaled, seed=seed)
    if not 0 <= row < scores.shape[0]:
        raise ValueError(
            f"row must lie between 0 and n_queries - 1 = {scores.shape[0] - 1}; got {row}."
        )
    weights = masked_softmax(scores)
    entropy = softmax_entropy(weights)
    jacobian = softmax_jacobian_norm(weights)
    row_weights = weights[row]
    return SqrtDkState(
        d_k=int(d_k),
        scaled=bool(scaled),
        scores=scores,
        row=int(row),
        row_weights=row_weights,
        score_mean=float(scores.mean()),
        score_std=float(scores.std()),
        score_var=float(scores.var()),
        row_entropy=float(entropy[row]),
        row_max_weight=float(row_weights.max()),
        row_jacobian_norm=float(jacobian[row]),
        entropy=float(entropy.mean()),
        max_weight=float(weights.max(axis=-1).mean()),
        jacobian_norm=float(jacobian.mean()),
        uniform_entropy=float(np.log(scores.shape[-1])),
    )
