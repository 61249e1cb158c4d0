"""Explorer for notebook 04 (chapter 19.3): nudge one input entry, compare with the gradient.

Pick one entry ``x`` of ``Q``, ``K`` or ``V`` and a step ``h``. The loss is
``L = sum(G * O)`` for a fixed upstream gradient ``G``, so ``dL/dO = G``. The
explorer shows

* the actual change ``L(x + h) - L(x)`` next to the gradient's linear
  prediction ``h * dL/dx`` (and the loss along the line ``x + t`` for ``t`` in
  ``[-2h, 2h]``, with the tangent line the gradient promises);
* the error of a finite-difference estimate of ``dL/dx`` as the step shrinks,
  over a log range of steps: large steps suffer truncation (central
  differences: error ~ h**2, one-sided: ~ h), tiny steps suffer round-off
  (error ~ 1e-16 / h), and the best step sits between the two.

:func:`update` is pure NumPy (no matplotlib, no ipywidgets) so tests can assert
on it. By default the gradient comes from :func:`attention_lib.attention_backward`;
pass ``backward=`` (same signature) to probe another one, such as a planted bug.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..attention import attention_backward, attention_forward
from ..gradcheck import relative_error
from ..masks import causal_mask

ARRAYS = ("Q", "K", "V")
#: Steps of the finite-difference error curve: 10**-13 .. 10**0, four per decade.
STEPS = np.logspace(-13.0, 0.0, 53)
#: Offsets ``t / h`` at which the loss curve ``L(x + t) - L(x)`` is drawn.
CURVE_OFFSETS = np.linspace(-2.0, 2.0, 41)


class Problem(NamedTuple):
    """A small fixed attention problem: inputs, upstream gradient ``G`` and mask."""

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    upstream: np.ndarray
    mask: np.ndarray | None


def example_problem(*, length=4, width=3, causal=True, seed=4):
    """Seeded float64 inputs ``Q, K, V`` of shape ``(length, width)`` and ``G``.

    Examples
    --------
    >>> problem = example_problem()
    >>> problem.Q.shape, problem.upstream.shape, problem.mask.shape
    ((4, 3), (4, 3), (4, 4))
    >>> example_problem(causal=False).mask is None
    True
    """
    rng = np.random.default_rng(seed)
    Q, K, V, upstream = rng.standard_normal((4, length, width))
    mask = causal_mask(length) if causal else None
    return Problem(Q, K, V, upstream, mask)


def loss(problem, **replace):
    """``sum(G * attention_forward(Q, K, V, mask))``, with any of Q, K, V replaced.

    Examples
    --------
    >>> problem = example_problem()
    >>> loss(problem) == loss(problem, V=problem.V)
    True
    """
    arrays = {name: replace.get(name, getattr(problem, name)) for name in ARRAYS}
    output = attention_forward(arrays["Q"], arrays["K"], arrays["V"], problem.mask)
    return float(np.sum(problem.upstream * output))


class BackwardStepState(NamedTuple):
    """Everything the backward-step explorer shows for one choice of entry and step."""

    array: str
    index: tuple
    h: float
    value: float
    loss: float
    gradient: float
    actual_change: float
    predicted_change: float
    central_difference: float
    offsets: np.ndarray
    curve: np.ndarray
    steps: np.ndarray
    central_errors: np.ndarray
    forward_errors: np.ndarray
    best_step: float

    @property
    def prediction_error(self):
        """``|actual - predicted| / max(|actual| + |predicted|, tiny)`` (0 when both are 0)."""
        return relative_error(np.array([self.actual_change]), np.array([self.predicted_change]))


def _loss_along(problem, array, index, offsets):
    """``L(x + t) - L(x)`` for each ``t`` in ``offsets`` (x = ``array[index]``)."""
    base = getattr(problem, array)
    nudged = base.copy()
    reference = loss(problem)
    changes = np.empty(len(offsets))
    for i, t in enumerate(offsets):
        nudged[index] = base[index] + t
        changes[i] = loss(problem, **{array: nudged}) - reference
    return changes


def _errors(estimates, gradient):
    return np.array([relative_error(np.array([e]), np.array([gradient])) for e in estimates])


def update(array="Q", row=3, col=0, h=0.5, *, causal=True, problem=None, backward=None):
    """Nudge ``array[row, col]`` by ``h`` and compare the loss change with the gradient.

    Parameters
    ----------
    array : {"Q", "K", "V"}
        Which input holds the entry.
    row, col : int
        The entry (position, feature); counted from 0.
    h : float
        The perturbation, ``0 < h <= 1``.
    causal : bool, default True
        Use a causal mask in the example problem (ignored when ``problem`` is given).
    problem : Problem, optional
        Defaults to :func:`example_problem` with ``causal``.
    backward : callable, optional
        ``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)``; defaults to
        :func:`attention_lib.attention_backward`.

    Returns
    -------
    BackwardStepState

    Examples
    --------
    >>> state = update("V", 2, 1, h=0.5)
    >>> abs(state.actual_change - state.predicted_change) < 1e-12  # L is linear in V
    True
    >>> state = update("Q", 0, 0)  # query 0 reads only key 0 under the causal mask
    >>> state.actual_change, abs(state.gradient) < 1e-14
    (0.0, True)
    """
    if array not in ARRAYS:
        raise ValueError(f"array must be one of {ARRAYS}; got {array!r}.")
    problem = example_problem(causal=causal) if problem is None else problem
    base = getattr(problem, array)
    for name, value, size in (("row", row, base.shape[0]), ("col", col, base.shape[1])):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"{name} must be an int; got {value!r}.")
        if not 0 <= value < size:
            raise ValueError(f"{name} must be in 0..{size - 1} for {array} of shape {base.shape}")
    if not (np.isfinite(h) and 0 < h <= 1):
        raise ValueError(f"h must be a step in (0, 1]; got {h!r}.")
    index = (int(row), int(col))
    backward = attention_backward if backward is None else backward

    output, cache = attention_forward(problem.Q, problem.K, problem.V, problem.mask, True)
    grads = dict(zip(ARRAYS, backward(problem.upstream, cache), strict=True))
    gradient = float(grads[array][index])

    curve = _loss_along(problem, array, index, CURVE_OFFSETS * h)
    actual, minus = _loss_along(problem, array, index, np.array([h, -h]))
    plus_steps = _loss_along(problem, array, index, STEPS)
    minus_steps = _loss_along(problem, array, index, -STEPS)
    central_errors = _errors((plus_steps - minus_steps) / (2 * STEPS), gradient)
    forward_errors = _errors(plus_steps / STEPS, gradient)
    return BackwardStepState(
        array=array,
        index=index,
        h=float(h),
        value=float(base[index]),
        loss=float(np.sum(problem.upstream * output)),
        gradient=gradient,
        actual_change=float(actual),
        predicted_change=gradient * float(h),
        central_difference=float((actual - minus) / (2 * h)),
        offsets=CURVE_OFFSETS * h,
        curve=curve,
        steps=STEPS,
        central_errors=central_errors,
        forward_errors=forward_errors,
        best_step=float(STEPS[np.argmin(central_errors)]),
    )
