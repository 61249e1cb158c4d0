"""Exercise 19.3: the backward pass of one softmax row, for rows along the last axis.

The answer is compared with central finite differences of
:func:`attention_lib.masked_softmax` and with :func:`attention_lib.softmax_backward`
on float64 rows of several shapes, and on float32 rows, each row with a masked
key whose gradient must be exactly 0. A wrong answer is matched against the
models of the usual mistakes, each computed from the library's own result.
"""

from __future__ import annotations

import numpy as np

from .. import pitfalls
from ..attention import masked_softmax, softmax_backward
from ..gradcheck import numerical_gradient, relative_error
from ._harness import (
    FLOAT32_TOLERANCE,
    FLOAT64_TOLERANCE,
    Stop,
    as_result,
    constant_factor,
    first_match,
    near_miss,
    note_float32_answers,
    require_callable,
    run,
    tolerance,
)
from ._report import Finding

__all__ = ["check_exercise_19_3"]

_HINT = "chapter 19.3, eq. 19.4; notebook 04_backward.ipynb (the softmax step)"
# Shapes probed in float64: non-square, square (a row term broadcast along the wrong axis
# stays silent there), batched, and a single row. Rows are always the last axis.
SOFTMAX_PROBE_SHAPES = ((3, 5), (4, 4), (2, 3, 6), (6,))
FLOAT32_PROBE_SHAPE = (3, 5)


def softmax_probe(shape, seed, dtype=np.float64):
    """Scores, mask, weights and an upstream gradient; the last key of every row is masked."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(shape).astype(dtype)
    mask = np.ones(shape, dtype=bool)
    mask[..., -1] = False  # a masked key in every row: its weight, and gradient, are 0
    weights = masked_softmax(scores, mask)
    grad_weights = rng.standard_normal(shape).astype(dtype)
    return scores, mask, weights, grad_weights


def softmax_truth(scores, mask, grad_weights):
    """grad_scores by central differences of sum(grad_weights * softmax(scores)), in float64."""
    grad_weights = grad_weights.astype(np.float64)

    def loss(scores):
        return float(np.sum(grad_weights * masked_softmax(scores, mask)))

    return numerical_gradient(loss, {"scores": scores}, "scores")


def softmax_backward_models(weights, grad_weights):
    """(name, grad_scores) for each typical mistake, each one step away from eq. 19.4."""
    weights, grad_weights = weights.astype(np.float64), grad_weights.astype(np.float64)
    product = grad_weights * weights
    row_dot = np.sum(product, axis=-1, keepdims=True)
    models = [
        ("row_term_sign", pitfalls.softmax_backward_sign_error(weights, grad_weights)),
        ("row_term_missing", weights * grad_weights),
        ("grad_weights_missing", weights * (1 - row_dot)),
        ("factors_swapped", grad_weights * (weights - row_dot)),
        ("weights_factor_missing", grad_weights - row_dot),
        ("row_term_mean", weights * (grad_weights - np.mean(product, axis=-1, keepdims=True))),
        (
            "row_term_without_weights",
            weights * (grad_weights - np.sum(grad_weights, axis=-1, keepdims=True)),
        ),
        ("jacobian_diagonal_only", weights * (1 - weights) * grad_weights),
        ("returned_an_input", grad_weights),
        ("returned_an_input", weights),
    ]
    for axis in range(weights.ndim - 1):
        other = np.sum(product, axis=axis, keepdims=True)
        models.append(("row_term_wrong_axis", weights * (grad_weights - other)))
    if weights.ndim > 1:  # one row: every axis is the row's
        models.append(("row_term_all_axes", weights * (grad_weights - np.sum(product))))
    if weights.ndim >= 2 and weights.shape[-1] == weights.shape[-2]:
        # Mistakes that run only on square rows (elsewhere they fail to broadcast): the row
        # sums without keepdims broadcast along the rows instead of the columns, and a
        # matrix product pairs row i with every row j instead of with itself.
        models.append(
            ("missing_keepdims", weights * (grad_weights - row_dot[..., 0][..., None, :]))
        )
        transposed = np.swapaxes(weights, -1, -2), np.swapaxes(grad_weights, -1, -2)
        for product in (
            weights @ transposed[1],
            grad_weights @ transposed[0],
            grad_weights @ weights,
            weights @ grad_weights,
        ):
            models.append(("row_term_matmul", weights * (grad_weights - product)))
    return models


# Mistakes that only a square input lets run; a 2-D one that is not square raises instead.
_SQUARE_ONLY = ("missing_keepdims", "row_term_matmul")


_MISTAKES = {
    "row_term_sign": "the row term is added instead of subtracted: you compute "
    "`A * (grad_A + rowsum(grad_A * A))`. Each row of a right grad_scores sums to zero, because "
    "adding a constant to a row of scores leaves its softmax unchanged.",
    "row_term_missing": "the row term is missing: you compute `A * grad_A`. The weights of a row "
    "share one denominator, so raising one score lowers every other weight; "
    "`rowsum(grad_A * A)` is that shared effect.",
    "weights_factor_missing": "the factor A is missing: you compute `grad_A - rowsum(grad_A * A)`. "
    "The Jacobian of softmax is `diag(a) - a aᵀ`, so every entry is scaled by its weight (and "
    "a masked key, weight 0, gets gradient 0).",
    "row_term_mean": "the row term is a mean, not a sum: `np.mean(grad_A * A, ...)` divides "
    "`rowsum(grad_A * A)` by the row length. The chain rule adds the effect of a score on every "
    "weight of its row: use np.sum.",
    "row_term_without_weights": "the row term lacks the weights: you subtract `rowsum(grad_A)`, "
    "where eq. 19.4 subtracts `rowsum(grad_A * A)`, the upstream gradient averaged with the "
    "weights.",
    "jacobian_diagonal_only": "you use only the diagonal of the softmax Jacobian, "
    "`a_i (1 - a_i)`: grad_scores = `A * (1 - A) * grad_A`. Its off-diagonal entries `-a_i a_j` "
    "carry the shared denominator; together they give `A * (grad_A - rowsum(grad_A * A))`.",
    "returned_an_input": "your function returns one of its arguments unchanged (weights or "
    "grad_weights), not grad_scores.",
    "grad_weights_missing": "the first term lacks grad_A: you compute "
    "`A * (1 - rowsum(grad_A * A))`. eq. 19.4 is `A * (grad_A - rowsum(grad_A * A))`: each "
    "score's own upstream gradient, minus the row's weighted average of them.",
    "row_term_all_axes": "the row term sums over every axis at once (`np.sum(grad_A * A)` "
    "without axis=), so all rows share one number. Each row has its own: "
    "`np.sum(grad_A * A, axis=-1, keepdims=True)`.",
    "factors_swapped": "the two factors are swapped: you compute "
    "`grad_A * (A - rowsum(grad_A * A))`; eq. 19.4 is `A * (grad_A - rowsum(grad_A * A))`, the "
    "weight outside the bracket and the upstream gradient inside.",
    "row_term_matmul": "the row term is a matrix product (`weights @ grad_weights.T`, "
    "`np.dot(grad_weights, weights)`, ...), which pairs row i of one array with every row j of "
    "the other (and fails when the rows are not square). The row term pairs each row with "
    "itself: `np.sum(grad_weights * weights, axis=-1, keepdims=True)`.",
    "missing_keepdims": "the row sum has lost its axis: `np.sum(grad_A * A, axis=-1)` has shape "
    "(..., T) minus its last axis, so it lines up with the KEYS instead of the rows (and fails "
    "to broadcast when a row is not square). Keep the axis: `keepdims=True` (or "
    "`[..., None]`).",
}


def _wrong_axis(failing_shape):
    message = (
        "the row term is summed over the wrong axis: `rowsum(grad_A * A)` must run over the "
        "last axis, the keys of one row, with keepdims=True so that it subtracts along that row."
    )
    if len(failing_shape) > 2:
        message += (
            f" Your answer is right for 2-D weights but not for shape {failing_shape}: with a "
            "leading batch axis, use axis=-1 (axis=1 is the last axis only for 2-D input)."
        )
    return Finding("row_term_wrong_axis", message, _HINT)


def _only_2d(shape, what, hint):
    return Finding(
        "only_2d",
        f"{what}\nYour function works for 2-D weights but not for shape {shape}: rows are the "
        "last axis, and there may be any number of leading axes (or none). Use axis=-1 and "
        "keepdims=True, or reshape to (-1, T) and back.",
        hint,
    )


def _call(student, softmax_row_backward, weights, grad_weights):
    student.forget()
    student.hand_out("softmax_row_backward", weights=weights, grad_weights=grad_weights)
    value = student.call(
        softmax_row_backward,
        "softmax_row_backward",
        weights,
        grad_weights,
        label=f"for weights of shape {weights.shape}",
    )
    what = f"softmax_row_backward(weights, grad_weights) for weights of shape {weights.shape}"
    return as_result(value, what, weights.shape)


def _square_only(student, softmax_row_backward, error, shape):
    """The mistake that raised on a 2-D probe, named from a square probe, or None."""
    if not isinstance(error, ValueError) or len(shape) != 2 or shape[0] == shape[1]:
        return None
    _, _, weights, grad_weights = softmax_probe((4, 4), seed=194)
    try:
        answer = _call(student, softmax_row_backward, weights, grad_weights)
    except Stop:
        return None
    models = [m for m in softmax_backward_models(weights, grad_weights) if m[0] in _SQUARE_ONLY]
    return first_match(answer, models, tolerance(answer))


def _diagnose(answer, weights, grad_weights, shape, passed_shapes, tol, error):
    mistake = first_match(answer, softmax_backward_models(weights, grad_weights), tol)
    if mistake == "row_term_wrong_axis":
        return _wrong_axis(shape)
    if mistake is not None:
        return Finding(mistake, _MISTAKES[mistake], _HINT)
    if not np.any(answer):
        return Finding(
            "returned_zeros",
            f"for weights of shape {shape} your grad_scores is all zeros: is it a placeholder? "
            "A right answer is zero only where the weight is zero (a masked key) and is not "
            "zero elsewhere.",
            _HINT,
        )
    factor = constant_factor(answer, softmax_backward(weights, grad_weights), tol)
    if factor is not None:
        return Finding(
            "scaled_by_constant",
            f"your grad_scores is {factor:.3g} times the right one: eq. 19.4 has no constant "
            "factor, `A * (grad_A - rowsum(grad_A * A))`.",
            _HINT,
        )
    if weights.dtype == np.float32:
        return Finding(
            "float32_inaccurate",
            f"your grad_scores is right for float64 weights but not for float32 ones of shape "
            f"{shape} (relative error {error:.2g}, tolerance {tol:.0e}): float32 keeps about 7 "
            "digits, plenty for 1e-4, so something loses more (float16 on the way, or a "
            "rounding?).",
            _HINT,
        )
    if passed_shapes and len(shape) != 2:
        return _only_2d(shape, f"your grad_scores is wrong (relative error {error:.2g})", _HINT)
    rows = _wrong_rows(answer, softmax_backward(weights, grad_weights), tol)
    if rows is not None:
        return rows
    imprecise = near_miss(f"for weights of shape {shape}, your grad_scores", error, _HINT)
    if imprecise is not None:
        return imprecise
    row_sums = np.abs(np.sum(answer, axis=-1)).max()
    sums = (
        "Each row of your answer sums to zero, as a right one does."
        if row_sums < 1e-6 * np.abs(answer).max()
        else "A right answer's rows sum to zero; yours do not."
    )
    return Finding(
        "wrong_gradient",
        f"for weights of shape {shape}, grad_scores differs from finite differences (relative "
        f"error {error:.2g}, tolerance {tol:.0e}) and matches none of the usual mistakes. {sums}",
        _HINT,
    )


def _wrong_rows(answer, right, tol):
    """A finding when some rows are right and the others wrong (a loop that misses rows)."""
    answer, right = answer.reshape(-1, answer.shape[-1]), right.reshape(-1, right.shape[-1])
    wrong = [row for row in range(len(right)) if relative_error(answer[row], right[row]) >= tol]
    if not wrong or len(wrong) == len(right):
        return None
    untouched = " (all zero)" if not np.any(answer[wrong]) else ""
    rows = (
        f"row {wrong[0]} of your grad_scores is"
        if len(wrong) == 1
        else (f"rows {', '.join(map(str, wrong))} of your grad_scores are")
    )
    return Finding(
        "some_rows_wrong",
        f"{rows} wrong{untouched}, the other rows right (rows counted over the flattened "
        "leading axes): does a loop miss some, or stop one row early (`range(n - 1)`)? Every "
        "row gets the same formula.",
        _HINT,
    )


def _check_probe(student, softmax_row_backward, shape, seed, passed_shapes, dtype=np.float64):
    scores, mask, weights, grad_weights = softmax_probe(shape, seed, dtype)
    try:
        answer = _call(student, softmax_row_backward, weights, grad_weights)
    except Stop as stop:
        mistake = _square_only(student, softmax_row_backward, stop.error, shape)
        if mistake is not None:
            raise Stop(Finding(mistake, _MISTAKES[mistake], _HINT)) from None
        if stop.error is not None and passed_shapes and len(shape) != 2:
            finding = stop.findings[0]
            raise Stop(_only_2d(shape, finding.message, finding.hint)) from None
        raise
    tol = tolerance(answer)
    truth = softmax_truth(scores, mask, grad_weights)
    error = relative_error(answer, truth)
    if error >= tol or relative_error(answer, softmax_backward(weights, grad_weights)) >= tol:
        raise Stop(_diagnose(answer, weights, grad_weights, shape, passed_shapes, tol, error))
    leaked = answer[~mask]
    if np.any(leaked != 0):
        raise Stop(
            Finding(
                "masked_not_zero",
                f"a masked key (weight exactly 0) gets gradient {np.abs(leaked).max():.1g} "
                "instead of exactly 0, for weights of shape "
                f"{shape}. eq. 19.4 multiplies by the weight, and 0 times a finite number is "
                "exactly 0; something adds a little to the weights or to the result (an "
                "epsilon?).",
                _HINT,
            )
        )
    return answer


def _findings(student, softmax_row_backward):
    require_callable(softmax_row_backward, "softmax_row_backward")
    passed = []
    for number, shape in enumerate(SOFTMAX_PROBE_SHAPES):
        answer = _check_probe(student, softmax_row_backward, shape, 193 + number, passed)
        note_float32_answers(student, {"grad_scores": answer}, np.float64)
        passed.append(str(shape))
    answer = _check_probe(
        student, softmax_row_backward, FLOAT32_PROBE_SHAPE, 1932, passed, np.float32
    )
    float32_line = f"float32 weights of shape {FLOAT32_PROBE_SHAPE}: within {FLOAT32_TOLERANCE:.0e}"
    if answer.dtype == np.float32:
        float32_line += ", and returned as float32"
    else:
        student.note(
            "float32_promoted",
            f"for float32 weights your grad_scores comes back as {answer.dtype}. NumPy turns a "
            "float32 array into float64 when it meets a float64 array or a NumPy float64 scalar "
            "(`np.float64(1)`, `np.sqrt(4)`); a Python float keeps float32. It passes, but a "
            "float32 model would silently run in float64.",
        )
    return [
        f"agrees with central finite differences and with attention_lib.softmax_backward for "
        f"float64 weights of shapes {', '.join(passed)} (relative error below "
        f"{FLOAT64_TOLERANCE:.0e}; {FLOAT32_TOLERANCE:.0e} if you compute in float32)",
        float32_line,
        "a masked key (weight exactly 0) gets gradient exactly 0",
        "weights and grad_weights are left unchanged",
    ]


def check_exercise_19_3(softmax_row_backward):
    """Check ``softmax_row_backward(weights, grad_weights) -> grad_scores`` (exercise 19.3).

    Rows are the last axis: ``weights`` and ``grad_weights`` have shape
    ``(..., T)`` and each ``weights[..., :]`` is one softmax row. The answer
    is compared with central finite differences of the softmax and with the
    library's :func:`attention_lib.softmax_backward`, on float64 inputs of a
    non-square, a square, a batched and a one-row shape and on float32 input,
    each with a masked (zero-weight) key whose gradient must be exactly 0; the
    inputs must come back unchanged. A wrong answer is matched against the
    usual mistakes: the row term's sign, the row term missing, a mean instead
    of the sum, the row term without the weights, the factor ``a`` missing,
    the row sum over the wrong axis or without keepdims, among others.

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
        "softmax row backward",
        lambda student: _findings(student, softmax_row_backward),
    )
