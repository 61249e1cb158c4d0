"""Finite-difference gradient checks, in float64.

The error between an analytic gradient ``a`` and a numerical one ``n`` is
norm-wise and relative::

    error = ||a - n|| / max(||a|| + ||n||, tiny)

It lies in [0, 1]: 0 when they agree, 1 when they point in opposite
directions. ``tiny`` (the smallest normal float64) keeps an all-zero pair, as in
a fully masked row, at error 0 instead of 0/0. Central differences have a
truncation error of order ``eps**2`` and a round-off error of order
``1e-16 / eps``; ``eps = 1e-6`` balances the two for smooth functions of O(1)
inputs. A correct float64 gradient of such a function therefore has an error
below 1e-8 (notebook 04 asserts it for attention), a hundred times under the
default tolerance of 1e-6; its exact digits depend on the BLAS kernel, which is
why a report prints no digits for a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

from ._validation import as_float_array
from .attention import attention_backward, attention_forward

_TINY = np.finfo(np.float64).tiny


def relative_error(analytic, numeric):
    """Norm-wise relative error ``||a - n|| / max(||a|| + ||n||, tiny)``.

    Parameters
    ----------
    analytic, numeric : array_like
        Two gradients of the same shape.

    Returns
    -------
    float
        Between 0 (equal) and 1 (opposite directions); 0 for two zero arrays.

    Examples
    --------
    >>> relative_error(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    0.0
    >>> relative_error(np.zeros(3), np.zeros(3))  # fully masked: no 0/0
    0.0
    >>> relative_error(np.array([1.0]), np.array([-1.0]))
    1.0
    """
    analytic = np.asarray(analytic, dtype=np.float64)
    numeric = np.asarray(numeric, dtype=np.float64)
    if analytic.shape != numeric.shape:
        raise ValueError(
            f"analytic and numeric gradients must have the same shape; got "
            f"{analytic.shape} and {numeric.shape}."
        )
    scale = max(np.linalg.norm(analytic) + np.linalg.norm(numeric), _TINY)
    return float(np.linalg.norm(analytic - numeric) / scale)


def _as_float64_inputs(inputs):
    if not isinstance(inputs, Mapping) or not inputs:
        raise TypeError(
            "inputs must be a non-empty mapping of name -> array, e.g. "
            f"{{'Q': Q, 'K': K}}; got {type(inputs).__name__}."
        )
    return {
        name: as_float_array(value, name, min_ndim=0, layout="any shape").astype(np.float64)
        for name, value in inputs.items()
    }


def numerical_gradient(loss: Callable[..., float], inputs, name, eps=1e-6):
    """Central-difference gradient of ``loss(**inputs)`` with respect to ``inputs[name]``.

    Each entry is perturbed by ``+eps`` and ``-eps`` in float64:
    ``(loss(x + eps) - loss(x - eps)) / (2 eps)``.

    Parameters
    ----------
    loss : callable
        ``loss(**inputs)`` returns a scalar.
    inputs : mapping of str to array_like
        The point at which to differentiate; copied to float64.
    name : str
        The input to differentiate with respect to.
    eps : float, default 1e-6
        The finite-difference step.

    Returns
    -------
    numpy.ndarray
        Float64, the shape of ``inputs[name]``.

    Examples
    --------
    >>> grad = numerical_gradient(lambda x: float(np.sum(x**3)), {"x": np.array([1.0, 2.0])}, "x")
    >>> np.round(grad, 6)
    array([ 3., 12.])
    """
    arrays = _as_float64_inputs(inputs)
    if name not in arrays:
        raise KeyError(f"no input named {name!r}; inputs are {sorted(arrays)}.")
    if not (isinstance(eps, float | int) and eps > 0):
        raise ValueError(f"eps must be a positive number; got {eps!r}.")
    x = arrays[name]
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + eps
        loss_plus = float(loss(**arrays))
        x[index] = original - eps
        loss_minus = float(loss(**arrays))
        x[index] = original
        grad[index] = (loss_plus - loss_minus) / (2.0 * eps)
    return grad


class GradCheckReport(NamedTuple):
    """Result of :func:`gradient_check`: the relative error of each input's gradient."""

    errors: dict
    tolerance: float

    @property
    def passed(self):
        """True when every input's error is below the tolerance."""
        return all(error < self.tolerance for error in self.errors.values())

    @property
    def worst(self):
        """``(name, error)`` of the input with the largest error."""
        return max(self.errors.items(), key=lambda item: item[1])

    def __str__(self):
        # A passing error is printed only as "below the tolerance" and a failing
        # one with two digits (failures are large): the text must not change
        # with the BLAS kernel. The exact values are in .errors.
        verdict = "passed" if self.passed else "FAILED"
        lines = [f"gradient check {verdict} (relative error tolerance {self.tolerance:.0e})"]
        for name, error in self.errors.items():
            if error < self.tolerance:
                lines.append(f"  {name:>8}: below {self.tolerance:.0e}  ok")
            else:
                lines.append(f"  {name:>8}: {error:.2g}  WRONG")
        return "\n".join(lines)

    __repr__ = __str__


def gradient_check(loss, inputs, analytic, *, eps=1e-6, tolerance=1e-6):
    """Compare analytic gradients with central finite differences, input by input.

    Parameters
    ----------
    loss : callable
        ``loss(**inputs)`` returns a scalar.
    inputs : mapping of str to array_like
        The point at which to check; copied to float64.
    analytic : mapping of str to array_like
        The gradient claimed for each input (same keys and shapes).
    eps : float, default 1e-6
        Finite-difference step.
    tolerance : float, default 1e-6
        An input passes when its relative error (see :func:`relative_error`)
        is below this.

    Returns
    -------
    GradCheckReport
        ``.errors`` per input, ``.worst``, ``.passed``; prints as a short table.

    Examples
    --------
    >>> x = np.array([1.0, -2.0])
    >>> report = gradient_check(lambda x: float(np.sum(x**2)), {"x": x}, {"x": 2 * x})
    >>> report.passed
    True
    >>> gradient_check(lambda x: float(np.sum(x**2)), {"x": x}, {"x": -2 * x}).passed
    False
    """
    arrays = _as_float64_inputs(inputs)
    if not isinstance(analytic, Mapping) or set(analytic) != set(arrays):
        got = sorted(analytic) if isinstance(analytic, Mapping) else type(analytic).__name__
        raise ValueError(
            f"analytic must map the same names as inputs ({sorted(arrays)}); got {got}."
        )
    errors = {}
    for name in arrays:
        claimed = np.asarray(analytic[name], dtype=np.float64)
        if claimed.shape != arrays[name].shape:
            raise ValueError(
                f"analytic gradient for {name!r} has shape {claimed.shape}, but the input "
                f"has shape {arrays[name].shape}; a gradient has its input's shape."
            )
        errors[name] = relative_error(claimed, numerical_gradient(loss, arrays, name, eps))
    return GradCheckReport(errors=errors, tolerance=float(tolerance))


def _default_forward(Q, K, V, mask=None):
    return attention_forward(Q, K, V, mask, return_cache=True)


def check_attention_gradients(
    Q, K, V, mask=None, *, forward=None, backward=None, seed=0, eps=1e-6, tolerance=1e-6
):
    """Gradient-check an attention forward/backward pair on the loss ``sum(G * O)``.

    ``G`` is a fixed random upstream gradient, so every entry of the output
    matters to the loss. By default the library's own pair is checked; pass
    ``forward(Q, K, V, mask) -> (output, cache)`` and
    ``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)`` to check yours.

    Parameters
    ----------
    Q, K, V : array_like
        The point at which to check, as for ``attention_forward``; copied to float64.
    mask : array_like of bool, optional
        Passed to ``forward``.
    forward : callable, optional
        ``forward(Q, K, V, mask) -> (output, cache)``; the library's by default.
    backward : callable, optional
        ``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)``; the library's
        by default.
    seed : int, default 0
        Seed of the upstream gradient ``G``.
    eps, tolerance : float, default 1e-6
        As for :func:`gradient_check`.

    Returns
    -------
    GradCheckReport
        The relative error of each of ``grad_Q``, ``grad_K``, ``grad_V``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> Q, K, V = rng.normal(size=(3, 4, 3))
    >>> check_attention_gradients(Q, K, V, mask=causal_mask(4)).passed
    True
    """
    forward = forward or _default_forward
    backward = backward or attention_backward
    inputs = _as_float64_inputs({"Q": Q, "K": K, "V": V})
    output, cache = forward(inputs["Q"], inputs["K"], inputs["V"], mask)
    upstream = np.random.default_rng(seed).standard_normal(np.shape(output))
    grad_Q, grad_K, grad_V = backward(upstream, cache)

    def loss(Q, K, V):
        return float(np.sum(upstream * forward(Q, K, V, mask)[0]))

    analytic = {"Q": grad_Q, "K": grad_K, "V": grad_V}
    return gradient_check(loss, inputs, analytic, eps=eps, tolerance=tolerance)
