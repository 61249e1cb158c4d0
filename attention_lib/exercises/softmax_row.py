"""Exercise 19.3: the backward pass of one softmax row, for rows along the last axis.

The student's ``softmax_row_backward(weights, grad_weights) -> grad_scores`` runs
on ``PROBES``, fixed and seeded, generated to reach every value of ``AXES``:

=================  ===================================================================
axis               values the probes cover
=================  ===================================================================
leading axes       none, one (3 to 7), two (2 x 1, 2 x 2, 2 x 3, 5 x 64)
T (row length)     1, 2, 3, 4, 5, 6, 8, 64; square (T rows of T) and not
dtype              float64, float32
weights            a masked key (weight exactly 0) in every row, none masked, a mixed
                   pattern with rows that have one readable key; ordinary, saturated
                   (one weight near 1) and nearly uniform rows
layout             contiguous, and a view that is not (a transposed array)
=================  ===================================================================

Each answer is compared with central finite differences of
:func:`attention_lib.masked_softmax` and with :func:`attention_lib.softmax_backward`,
to 1e-6 for float64 answers and 1e-4 for float32 ones; a masked key's gradient
must be exactly 0. A wrong answer is named, on the first probe where it fails,
by a record of ``MISTAKES`` whose model it matches, else by what that probe
adds to the ones it passed (leading axes, another row length, float32), else by
its relation to the right answer (zeros, a constant factor, the transpose, some
rows only, a wrong row term), with the smallest probe on which it fails.
"""

from __future__ import annotations

import functools
import zlib
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from .. import pitfalls
from ..attention import masked_softmax, softmax_backward
from ..gradcheck import numerical_gradient
from ._harness import (
    Mistakes,
    Stop,
    as_result,
    error,
    near_miss,
    note_float32_answers,
    relation,
    require_callable,
    run,
    tolerance,
)

__all__ = ["check_exercise_19_3"]


class Spec(NamedTuple):
    """One probe: its shape, dtype, which keys are masked, how peaked the rows are, layout."""

    shape: tuple
    dtype: str = "float64"
    masked: str = "last key"
    rows: str = "ordinary"
    layout: str = "contiguous"


PROBES = (
    Spec((3, 5)),
    Spec((3, 5), rows="nearly uniform"),  # a shape seen before, with new values
    Spec((4, 4)),
    Spec((2, 3, 6)),
    Spec((6,)),
    Spec((3, 5), "float32"),
    Spec((4, 1), masked="none"),
    Spec((1,), masked="none"),
    Spec((5, 2), rows="nearly uniform"),
    Spec((2, 2, 8), masked="mixed", rows="saturated"),
    Spec((7, 64), masked="mixed"),
    Spec((3, 3), masked="none", rows="saturated"),
    Spec((6, 3), layout="transposed view"),
    Spec((5, 64, 4), "float32", "mixed", layout="transposed view"),
    Spec((2, 3, 6), "float32", rows="saturated"),
    Spec((4, 8), masked="none"),
    Spec((2, 1, 4), masked="mixed"),
)
AXES = {
    "leading axes": ((), (3,), (4,), (5,), (6,), (7,), (2, 1), (2, 2), (2, 3), (5, 64)),
    "T": (1, 2, 3, 4, 5, 6, 8, 64),
    "dtype": ("float64", "float32"),
    "masked": ("last key", "none", "mixed"),
    "rows": ("ordinary", "saturated", "nearly uniform"),
    "layout": ("contiguous", "transposed view"),
}
_SCALE = {"ordinary": 1.0, "saturated": 30.0, "nearly uniform": 1e-3}


class Probe:
    """Scores, mask, weights and an upstream gradient; the right grad_scores."""

    def __init__(self, spec):
        rng = np.random.default_rng(zlib.crc32(repr(spec).encode()))
        shape = spec.shape
        if spec.layout == "transposed view":  # made the other way round, handed out as .T-like
            shape = shape[:-2] + shape[-1:] + shape[-2:-1]
        scores = rng.standard_normal(shape) * _SCALE[spec.rows]
        grad_weights = rng.standard_normal(shape)
        if spec.layout == "transposed view":
            scores, grad_weights = np.swapaxes(scores, -1, -2), np.swapaxes(grad_weights, -1, -2)
        mask = np.ones(spec.shape, dtype=bool)
        if spec.masked == "last key" and spec.shape[-1] > 1:
            mask[..., -1] = False  # its weight, and gradient, are exactly 0
        elif spec.masked == "mixed":
            mask = rng.random(spec.shape) < 0.6
            mask[..., 0] = True  # every row reads a key
            mask.reshape(-1, spec.shape[-1])[0, 1:] = False  # and the first reads one only
        self.spec, self.scores, self.mask = spec, scores.astype(spec.dtype), mask
        self.weights = masked_softmax(self.scores, mask)
        self.grad_weights = grad_weights.astype(spec.dtype)
        gw64 = self.grad_weights.astype(np.float64)

        def loss(scores):
            return float(np.sum(gw64 * masked_softmax(scores, mask)))

        self.truth = numerical_gradient(loss, {"scores": self.scores}, "scores")
        self.right = softmax_backward(self.weights.astype(np.float64), gw64)
        self.step = SimpleNamespace(weights=self.weights.astype(np.float64), grad_weights=gw64)
        self.floor = 1e-2 * np.linalg.norm(self.step.weights * gw64)  # rows of one key: 0
        self.label = (
            f"for weights of shape {spec.shape}"
            + ", float32" * (spec.dtype == "float32")
            + {"ordinary": "", "saturated": ", rows with one weight near 1"}.get(
                spec.rows, ", nearly uniform rows"
            )
            + ", a view that is not contiguous" * (spec.layout != "contiguous")
        )


@functools.cache
def probe(spec):
    return Probe(spec)


def softmax_backward_of(step):
    """The right grad_scores for ``step.weights`` and ``step.grad_weights``."""
    return softmax_backward(step.weights, step.grad_weights)


def _row_dot(s, axis=-1):
    return np.sum(s.grad_weights * s.weights, axis=axis, keepdims=True)


def _row_sum(array):
    return np.sum(array, axis=-1, keepdims=True)


def _square(function):
    return lambda s: (
        function(s) if s.weights.ndim >= 2 and s.weights.shape[-1] == s.weights.shape[-2] else None
    )


def _matmuls(s):
    w, g = s.weights, s.grad_weights
    wt, gt = np.swapaxes(w, -1, -2), np.swapaxes(g, -1, -2)
    return [w * (g - product) for product in (w @ gt, g @ wt, g @ w, w @ g)]


MISTAKES = Mistakes("19.3", "b")
MISTAKES.models(
    row_term_sign=lambda s: pitfalls.softmax_backward_sign_error(s.weights, s.grad_weights),
    row_term_missing=lambda s: s.weights * s.grad_weights,
    grad_weights_missing=lambda s: s.weights * (1 - _row_dot(s)),
    factors_swapped=lambda s: s.grad_weights * (s.weights - _row_dot(s)),
    weights_factor_missing=lambda s: s.grad_weights - _row_dot(s),
    row_term_not_weighted=lambda s: s.weights * s.grad_weights - _row_dot(s),
    rows_wrong_length=lambda s: [
        softmax_backward(s.weights.reshape(-1, n), s.grad_weights.reshape(-1, n)).reshape(
            s.weights.shape
        )
        for n in set(s.weights.shape[:-1]) - {s.weights.shape[-1]}
        if s.weights.size % n == 0
    ],
    row_term_mean=lambda s: s.weights * (s.grad_weights - _row_dot(s) / s.weights.shape[-1]),
    row_term_without_weights=lambda s: s.weights * (s.grad_weights - _row_sum(s.grad_weights)),
    jacobian_diagonal_only=lambda s: s.weights * (1 - s.weights) * s.grad_weights,
    returned_an_input=lambda s: [s.grad_weights, s.weights],
    row_term_wrong_axis=lambda s: [
        s.weights * (s.grad_weights - _row_dot(s, axis)) for axis in range(s.weights.ndim - 1)
    ],
    row_term_all_axes=lambda s: (
        s.weights.ndim > 1 and s.weights * (s.grad_weights - np.sum(s.weights * s.grad_weights))
    ),
    missing_keepdims=_square(
        lambda s: s.weights * (s.grad_weights - _row_dot(s)[..., 0][..., None, :])
    ),
    row_term_matmul=_square(_matmuls),
)
_RELATIONS = {
    "zero": "returned_zeros",
    "sign": "scaled_by_constant",
    "factor": "scaled_by_constant",
    "transposed": "transposed_result",
    "rows": "some_rows_wrong",
    "some_rows": "some_rows_wrong",
    "cells": "some_entries_wrong",
    "row_factors": "rows_scaled",
    "row_term": "row_term_wrong",
}


def _topic(spec, passed):
    """What probe ``spec`` adds to the ones passed, when that names a failure there."""
    if spec.dtype == "float32" and not any(s.dtype == "float32" for s in passed) and passed:
        return "float32_inaccurate"
    ndims = {len(s.shape) for s in passed}
    if len(spec.shape) not in ndims and 2 in ndims:
        return "only_2d"
    return None


def _explain(student, function, passed, p, name, message, error):
    if name not in ("raised", "wrong_shape"):
        return None
    shape = p.spec.shape
    if isinstance(error, ValueError) and len(shape) == 2 and shape[0] != shape[1]:
        # mistakes that run on square rows only: named from what a square probe gives
        square = probe(Spec((4, 4)))
        try:
            answer = _call(student, function, square, None)
        except Stop:
            answer = None
        names = ("missing_keepdims", "row_term_matmul")
        named = answer is not None and MISTAKES.match(answer, square.step, tolerance(answer), names)
        if named:
            return MISTAKES.finding(named, message=MISTAKES[named].message + ".")
    topic = _topic(p.spec, passed or [])
    if topic == "only_2d":
        return MISTAKES.finding(topic, relation=message, label=p.label)
    return None


def _row_term(answer, p, tol):
    """Words when the answer is ``A * (grad_A - c)`` with a per-row c that is not the row term."""
    w, g = p.step.weights, p.step.grad_weights
    with np.errstate(all="ignore"):
        c = np.where(w > 0, g - answer / w, np.nan)
    spread = np.nanmax(c, axis=-1) - np.nanmin(c, axis=-1)
    if not np.all(np.isfinite(spread)) or np.any(spread > 1e-6 * (1 + np.nanmax(np.abs(c)))):
        return None
    used, right = np.nanmean(c, axis=-1), _row_dot(p.step)[..., 0]
    ratio = used / np.where(right == 0, np.nan, right)
    same = np.nanmax(ratio) - np.nanmin(ratio) < 1e-6 if np.isfinite(ratio).any() else False
    what = f"{np.nanmean(ratio):.3g} times the right one" if same else "another number"
    return (
        f"is `A * (grad_A - c)` with one c per row, as eq. 19.4 has, but your c is {what}: the "
        "row term must be `rowsum(grad_A * A)`, the upstream gradient averaged with the row's "
        "weights"
    )


def _diagnose(answer, p, tol, passed, student, function):
    name = MISTAKES.match(answer, p.step, tol)
    if name == "row_term_wrong_axis":
        batch = (
            f". Your answer is right for 2-D weights but not {p.label}: with a leading batch axis, "
            "use axis=-1 (axis=1 is the last axis only for 2-D input)"
        ) * (len(p.spec.shape) > 2)
        return MISTAKES.finding(name, batch=batch)._replace(
            message=MISTAKES.finding(name, batch=batch).message + "."
        )
    if name is not None:
        return MISTAKES.finding(name, message=MISTAKES[name].message + ".")
    size = error(answer, p.truth, p.floor)
    groups = (
        ("the keys whose weight is below 0.01 but not 0", (p.weights > 0) & (p.weights < 1e-2)),
    )
    kind, words = relation(answer, p.right, tol, groups) or (None, None)
    if kind is None:
        words = _row_term(answer, p, tol)
        kind = "row_term" if words else None
    sums = np.abs(np.sum(answer, axis=-1)).max() < 1e-6 * np.abs(answer).max()
    words = words or (
        f"differs from finite differences (relative error {size:.2g}, tolerance {tol:.0e}) and "
        "matches none of the usual mistakes. "
        + (
            "Each row of your answer sums to zero, as a right one does"
            if sums
            else "A right answer's rows sum to zero; yours do not"
        )
    )
    words = f"your grad_scores {p.label} {words}"
    topic = _topic(p.spec, passed)
    if topic is not None and kind not in ("zero",):
        return MISTAKES.finding(topic, relation=words + ".", label=p.label)
    imprecise = kind in (None, "some_rows") and near_miss(
        f"{p.label[4:]}, your grad_scores", size, MISTAKES.hint
    )
    if imprecise:
        return imprecise
    smallest = _smallest(student, function, p.spec)
    tail = (
        ""
        if smallest == p.spec
        else f". The smallest probe tried on which it fails: {probe(smallest).label[4:]}"
    )
    return MISTAKES.finding(_RELATIONS.get(kind, "wrong_gradient"), relation=words + tail + ".")


def _call(student, function, p, passed):
    student.forget()
    weights, grad_weights = p.weights.copy(), p.grad_weights.copy()
    if p.spec.layout != "contiguous":  # the same numbers as a view that is not contiguous
        weights, grad_weights = (
            np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2) for a in (weights, grad_weights)
        )
    student.hand_out("softmax_row_backward", weights=weights, grad_weights=grad_weights)
    explain = functools.partial(_explain, student, function, passed, p)
    value = student.call(
        function, "softmax_row_backward", weights, grad_weights, label=p.label, explain=explain
    )
    what = f"softmax_row_backward(weights, grad_weights) {p.label}"
    return as_result(value, what, p.spec.shape, explain)


def _smallest(student, function, spec):
    """The smallest spec (fewer rows, shorter rows, fewer axes) on which the answer still fails."""
    for shape in ((1,), (2,), (3,), (1, 2), (2, 2), (2, 3), (3, 2), (2, 1, 3), (2, 2, 2)):
        smaller = spec._replace(shape=shape, layout="contiguous")
        if len(shape) > len(spec.shape) or np.prod(shape) >= np.prod(spec.shape):
            continue
        try:
            p = probe(smaller)
            answer = _call(student, function, p, [])
            if error(answer, p.truth, p.floor) >= tolerance(answer):
                return smaller
        except Stop:
            return smaller
    return spec


def _check(student, function, spec, passed):
    p = probe(spec)
    answer = _call(student, function, p, passed)
    tol = tolerance(answer)
    if error(answer, p.truth, p.floor) >= tol or error(answer, p.right, p.floor) >= tol:
        raise Stop(_diagnose(answer, p, tol, passed, student, function))
    leaked = answer[~p.mask]
    if np.any(leaked != 0):
        raise MISTAKES.stop("masked_not_zero", largest=np.abs(leaked).max(), label=p.label)
    return answer


def _findings(student, function):
    require_callable(function, "softmax_row_backward")
    passed, float32 = [], True
    for spec in PROBES:
        answer = _check(student, function, spec, passed)
        if spec.dtype == "float64":
            note_float32_answers(student, {"grad_scores": answer}, np.float64)
        elif answer.dtype != np.float32:
            float32 = False
        passed.append(spec)
    if not float32:
        student.note(
            "float32_promoted",
            "for float32 weights your grad_scores comes back as float64. NumPy turns a float32 "
            "array into float64 when it meets a float64 array or a NumPy float64 scalar "
            "(`np.float64(1)`, `np.sqrt(4)`); a Python float keeps float32. It passes, but a "
            "float32 model would silently run in float64.",
        )
    return MISTAKES.checked(probes=len(PROBES), returned=", and returned as float32" * float32)


def check_exercise_19_3(softmax_row_backward):
    """Check ``softmax_row_backward(weights, grad_weights) -> grad_scores`` (exercise 19.3).

    Rows are the last axis: ``weights`` and ``grad_weights`` have shape
    ``(..., T)`` and each ``weights[..., :]`` is one softmax row. The answer
    is compared with central finite differences of the softmax and with the
    library's :func:`attention_lib.softmax_backward` on every probe of
    ``PROBES`` (the module docstring's table), each masked key's gradient
    must be exactly 0 and the inputs must come back unchanged. A wrong answer
    is matched against the usual mistakes: the row term's sign, the row term
    missing, a mean instead of the sum, the row term without the weights, the
    factor ``a`` missing, the row sum over the wrong axis or without keepdims,
    among others.

    Parameters
    ----------
    softmax_row_backward : callable
        ``softmax_row_backward(weights, grad_weights) -> grad_scores``.

    Returns
    -------
    ExerciseReport

    Examples
    --------
    >>> from attention_lib import pitfalls
    >>> check_exercise_19_3(softmax_backward).passed
    True
    >>> check_exercise_19_3(pitfalls.softmax_backward_sign_error).diagnoses
    ('row_term_sign',)
    """
    return run(
        "19.3",
        "b",
        "softmax row backward",
        lambda student: _findings(student, softmax_row_backward),
    )
