"""A tiny single-head attention layer that learns W_Q, W_K, W_V on a lookup task.

The task: a sequence holds ``n_pairs`` (key, value) pairs, each pair one token
``[one_hot(key), one_hot(value)]``, and a query token ``[one_hot(key), 0]``
asks for the value paired with that key. The layer attends from the query
token to the pair tokens: ``Q = x_q W_Q``, ``K = X W_K``, ``V = X W_V`` and
the output (one number per possible value) is read as logits of a softmax
cross-entropy. It solves the task only if W_Q and W_K learn to match the
query's key with the pair's key, and W_V to copy the pair's value.

Gradients: the loss's gradient with respect to the output goes through
:func:`attention_lib.attention_backward` to ``grad_Q``, ``grad_K``,
``grad_V``, and then through the projections: ``grad_W_Q = x_q^T grad_Q``
summed over the batch, and the same for W_K and W_V. NumPy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validation import require_whole_number
from .attention import attention_backward, attention_forward

__all__ = [
    "LookupBatch",
    "TrainingRun",
    "init_params",
    "layer_loss",
    "layer_loss_and_gradients",
    "lookup_batch",
    "predict",
    "train",
]

PARAM_NAMES = ("W_Q", "W_K", "W_V")


class LookupBatch(NamedTuple):
    """A batch of lookup sequences, encoded for the layer."""

    queries: np.ndarray  # (B, 1, d_model) the query tokens
    pairs: np.ndarray  # (B, n_pairs, d_model) the (key, value) tokens
    targets: np.ndarray  # (B,) index of the value paired with the query's key
    answer_positions: np.ndarray  # (B,) which pair holds the answer


def lookup_batch(batch_size, n_pairs, n_keys, n_values, rng):
    """Random lookup sequences: distinct keys per sequence, random values, one asked key.

    Parameters
    ----------
    batch_size, n_pairs, n_keys, n_values : int
        ``n_pairs <= n_keys`` (the keys of one sequence are distinct).
    rng : numpy.random.Generator

    Returns
    -------
    LookupBatch
        Tokens of width ``d_model = n_keys + n_values``.

    Examples
    --------
    >>> batch = lookup_batch(2, 3, 5, 4, np.random.default_rng(0))
    >>> batch.queries.shape, batch.pairs.shape
    ((2, 1, 9), (2, 3, 9))
    >>> i = batch.answer_positions[0]
    >>> bool(np.argmax(batch.pairs[0, i, 5:]) == batch.targets[0])
    True
    """
    batch_size = require_whole_number(batch_size, "batch_size")
    n_pairs = require_whole_number(n_pairs, "n_pairs")
    n_keys = require_whole_number(n_keys, "n_keys")
    n_values = require_whole_number(n_values, "n_values")
    if n_pairs > n_keys:
        raise ValueError(
            f"n_pairs must be at most n_keys (keys of one sequence are distinct); got "
            f"n_pairs={n_pairs} and n_keys={n_keys}."
        )
    keys = np.argsort(rng.random((batch_size, n_keys)), axis=1)[:, :n_pairs]
    values = rng.integers(0, n_values, size=(batch_size, n_pairs))
    answer_positions = rng.integers(0, n_pairs, size=batch_size)
    rows = np.arange(batch_size)
    pairs = np.zeros((batch_size, n_pairs, n_keys + n_values))
    pair_index = np.arange(n_pairs)
    pairs[rows[:, None], pair_index, keys] = 1.0
    pairs[rows[:, None], pair_index, n_keys + values] = 1.0
    queries = np.zeros((batch_size, 1, n_keys + n_values))
    queries[rows, 0, keys[rows, answer_positions]] = 1.0
    return LookupBatch(queries, pairs, values[rows, answer_positions], answer_positions)


def init_params(d_model, d_k, n_values, rng, scale=0.1):
    """Small random W_Q, W_K (d_model x d_k) and W_V (d_model x n_values).

    Parameters
    ----------
    d_model : int
        Width of a token.
    d_k : int
        Width of the queries and keys.
    n_values : int
        How many values there are (the output's width: one logit each).
    rng : numpy.random.Generator
    scale : float, default 0.1
        Standard deviation of the entries.

    Returns
    -------
    dict of str to numpy.ndarray
        ``W_Q`` and ``W_K`` of shape (d_model, d_k), ``W_V`` of shape (d_model, n_values).

    Examples
    --------
    >>> params = init_params(9, 4, 4, np.random.default_rng(0))
    >>> {name: array.shape for name, array in params.items()}
    {'W_Q': (9, 4), 'W_K': (9, 4), 'W_V': (9, 4)}
    """
    return {
        "W_Q": scale * rng.normal(size=(d_model, d_k)),
        "W_K": scale * rng.normal(size=(d_model, d_k)),
        "W_V": scale * rng.normal(size=(d_model, n_values)),
    }


def _forward(params, batch):
    Q = batch.queries @ params["W_Q"]
    K = batch.pairs @ params["W_K"]
    V = batch.pairs @ params["W_V"]
    logits, cache = attention_forward(Q, K, V, return_cache=True)
    logits = logits[:, 0, :]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return log_probs, cache


def predict(params, batch):
    """The value the layer answers for each sequence (the largest logit).

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        ``W_Q``, ``W_K`` and ``W_V``, as :func:`init_params` makes them.
    batch : LookupBatch

    Returns
    -------
    numpy.ndarray of int, shape (B,)
        The index of the value each sequence is answered with.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> predict(init_params(9, 4, 4, rng), lookup_batch(3, 3, 5, 4, rng)).shape
    (3,)
    """
    log_probs, _ = _forward(params, batch)
    return log_probs.argmax(axis=1)


def layer_loss(params, batch):
    """Mean cross-entropy of the layer's answer (its output read as logits).

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        ``W_Q``, ``W_K`` and ``W_V``, as :func:`init_params` makes them.
    batch : LookupBatch

    Returns
    -------
    float

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> batch = lookup_batch(8, 3, 5, 4, rng)
    >>> loss = layer_loss(init_params(9, 4, 4, rng), batch)
    >>> bool(abs(loss - np.log(4)) < 0.1)  # small weights: about uniform over 4 values
    True
    """
    log_probs, _ = _forward(params, batch)
    return float(-log_probs[np.arange(len(batch.targets)), batch.targets].mean())


def layer_loss_and_gradients(params, batch):
    """The loss, its gradients for W_Q, W_K, W_V, and the attention weights.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        ``W_Q``, ``W_K`` and ``W_V``, as :func:`init_params` makes them.
    batch : LookupBatch

    Returns
    -------
    loss : float
    grads : dict of str to numpy.ndarray
    weights : numpy.ndarray, shape (B, n_pairs)
        How much each query token reads each pair.

    Examples
    --------
    >>> from attention_lib.gradcheck import gradient_check
    >>> rng = np.random.default_rng(1)
    >>> batch = lookup_batch(4, 3, 5, 4, rng)
    >>> params = init_params(9, 4, 4, rng, scale=1.0)
    >>> loss, grads, weights = layer_loss_and_gradients(params, batch)
    >>> gradient_check(lambda **p: layer_loss(p, batch), params, grads).passed
    True
    """
    log_probs, cache = _forward(params, batch)
    n = len(batch.targets)
    loss = float(-log_probs[np.arange(n), batch.targets].mean())
    grad_logits = np.exp(log_probs)
    grad_logits[np.arange(n), batch.targets] -= 1.0
    grad_logits /= n
    grad_Q, grad_K, grad_V = attention_backward(grad_logits[:, None, :], cache)
    # Each projection is shared by every sequence of the batch: sum over it.
    grads = {
        "W_Q": np.einsum("bti,btj->ij", batch.queries, grad_Q),
        "W_K": np.einsum("bti,btj->ij", batch.pairs, grad_K),
        "W_V": np.einsum("bti,btj->ij", batch.pairs, grad_V),
    }
    return loss, grads, cache.weights[:, 0, :]


class TrainingRun(NamedTuple):
    """What :func:`train` returns: final parameters, the loss curve and saved snapshots.

    A snapshot at step ``s`` is taken after ``s`` updates, on the fixed ``probe``
    batch, so snapshot 0 shows the starting parameters and the last one the final.
    """

    params: dict
    losses: np.ndarray  # (steps,) loss of the training batch at each step, before its update
    snapshot_steps: np.ndarray  # (n_snapshots,)
    snapshot_weights: np.ndarray  # (n_snapshots, B_probe, n_pairs) on the probe batch
    snapshot_losses: np.ndarray  # (n_snapshots,) loss on the probe batch
    probe: LookupBatch  # the batch the snapshots watch


def train(params, make_batch, probe, steps, learning_rate=0.05, snapshot_every=50):
    """Adam on the layer's loss, a fresh batch per step; weights on ``probe`` saved as it learns.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        Starting W_Q, W_K, W_V (not modified).
    make_batch : callable
        ``make_batch() -> LookupBatch``, a new training batch per step.
    probe : LookupBatch
        A fixed batch whose attention weights are saved every ``snapshot_every`` steps.
    steps : int
    learning_rate : float
    snapshot_every : int

    Returns
    -------
    TrainingRun

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> probe = lookup_batch(4, 3, 5, 4, rng)
    >>> run = train(init_params(9, 8, 4, rng), lambda: lookup_batch(32, 3, 5, 4, rng), probe, 100)
    >>> run.losses.shape, run.snapshot_steps.tolist(), run.snapshot_weights.shape
    ((100,), [0, 50, 100], (3, 4, 3))
    >>> bool(run.losses[-10:].mean() < run.losses[:10].mean())
    True
    """
    steps = require_whole_number(steps, "steps")
    snapshot_every = require_whole_number(snapshot_every, "snapshot_every")
    params = {name: np.array(params[name], dtype=np.float64) for name in PARAM_NAMES}
    first = {name: np.zeros_like(p) for name, p in params.items()}
    second = {name: np.zeros_like(p) for name, p in params.items()}
    beta1, beta2, tiny = 0.9, 0.999, 1e-8
    losses, snapshot_steps, snapshot_losses, snapshots = [], [], [], []
    for step in range(steps + 1):
        if step % snapshot_every == 0 or step == steps:
            probe_loss, _, probe_weights = layer_loss_and_gradients(params, probe)
            snapshot_steps.append(step)
            snapshot_losses.append(probe_loss)
            snapshots.append(probe_weights)
        if step == steps:
            break
        loss, grads, _ = layer_loss_and_gradients(params, make_batch())
        losses.append(loss)
        for name, grad in grads.items():
            first[name] = beta1 * first[name] + (1 - beta1) * grad
            second[name] = beta2 * second[name] + (1 - beta2) * grad**2
            unbiased_first = first[name] / (1 - beta1 ** (step + 1))
            unbiased_second = second[name] / (1 - beta2 ** (step + 1))
            params[name] -= learning_rate * unbiased_first / (np.sqrt(unbiased_second) + tiny)
    return TrainingRun(
        params,
        np.array(losses),
        np.array(snapshot_steps),
        np.array(snapshots),
        np.array(snapshot_losses),
        probe,
    )
