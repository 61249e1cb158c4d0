"""Exercise 19.4 (c): the student's own gradient check, by central differences.

The student writes ``central_difference(f, X, h=None)``, the numerical
gradient of a scalar function ``f`` at the array ``X`` (``h=None``: a default
step of their choosing), and ``gradient_errors(forward, backward, Q, K, V,
mask, grad_output)``, the relative error of each gradient a backward pass
returns against ``central_difference``. The checker needs neither part (a)
nor a working attention of the student's.

It hands ``central_difference`` functions of its own that record every array
they are called with, so it sees where ``f`` was evaluated, not only what came
back: each entry moved by ``+h`` and ``-h`` (a central difference) or by one of
them (one-sided); one entry at a time or several; the step used against the
step given; float32 or float64; and whether ``X`` comes back as it was. The
values are compared with :func:`attention_lib.numerical_gradient` on smooth
functions and on the attention loss ``sum(G * attention_forward(Q, K, V,
mask))``, where the library's :func:`attention_lib.attention_backward` must
pass and :func:`attention_lib.pitfalls.attention_backward_with_sign_error`
must fail.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import pitfalls
from ..attention import attention_backward, attention_forward
from ..gradcheck import numerical_gradient, relative_error
from ..masks import causal_mask
from ._harness import (
    FLOAT64_TOLERANCE,
    NotAttempted,
    Stop,
    as_result,
    constant_factor,
    first_match,
    require_callable,
    run,
)
from ._report import Finding

__all__ = ["check_exercise_19_4c"]

STEP_RANGE = (1e-7, 1e-3)
GIVEN_STEPS = (1e-4, 1e-5)
_CAUGHT = 1e-2  # the planted sign error's relative error is 0.2-0.6 on the probe
_HINT = "chapter 19.3 (the tests check against finite differences); notebook 04_backward.ipynb"


class _WrongShape(ValueError):
    """``f`` was called with an array that is not of ``X``'s shape."""


class _Recorder:
    """A scalar function that keeps a copy of every array it is evaluated at."""

    def __init__(self, function, shape):
        self.function, self.shape, self.calls = function, shape, []

    def __call__(self, X):
        array = np.asarray(X)
        self.calls.append(array.copy())
        if array.shape != self.shape:
            raise _WrongShape(f"f expects an array of shape {self.shape}, got {array.shape}")
        return float(self.function(array.astype(np.float64)))


def _attention_inputs():
    rng = np.random.default_rng(1949)
    Q, K = rng.standard_normal((2, 5, 4))
    V, grad_output = rng.standard_normal((2, 5, 3))
    return Q, K, V, causal_mask(5), grad_output


def _attention_loss(name):
    Q, K, V, mask, grad_output = _attention_inputs()
    arrays = {"Q": Q, "K": K, "V": V}

    def loss(X):
        return np.sum(grad_output * attention_forward(**{**arrays, name: X}, mask=mask))

    return loss, arrays[name]


def _smooth_functions():
    rng = np.random.default_rng(1940)
    weights = 0.5 * rng.standard_normal((3, 5))
    scale = rng.standard_normal((2, 3, 2))
    return {
        "sin(x) + x²/2": (
            lambda x: np.sum(np.sin(x)) + 0.5 * np.sum(x**2),
            rng.standard_normal(4),
        ),
        "log(sum(exp(W * X)))": (
            lambda X: np.log(np.sum(np.exp(weights * X))),
            rng.standard_normal((3, 5)),
        ),
        "sum(c * tanh(X)²)": (
            lambda X: np.sum(scale * np.tanh(X) ** 2),
            rng.standard_normal((2, 3, 2)),
        ),
    }


@functools.cache
def _probes():
    """(name, function, X, the library's numerical gradient) for every probe."""
    functions = dict(_smooth_functions())
    functions.update({f"the attention loss in {name}": _attention_loss(name) for name in "QKV"})
    return tuple(
        (name, function, X, numerical_gradient(lambda X, f=function: float(f(X)), {"X": X}, "X"))
        for name, (function, X) in functions.items()
    )


# --------------------------------------------------------------------------------------
# Where f was evaluated


def _roundoff(X, h):
    """How far ``x + h - h`` (and the like) may land from x: a few units in the last place."""
    return 8 * np.finfo(np.float64).eps * (np.abs(X) + h)


def _nudges(calls, X):
    """Each evaluation point minus X, in float64, with round-off of earlier nudges set to 0."""
    offsets = [call.astype(np.float64) - X for call in calls]
    moved = [np.abs(offset[offset != 0]) for offset in offsets]
    step = max((float(np.max(m)) for m in moved if m.size), default=0.0)
    return [np.where(np.abs(offset) <= _roundoff(X, step), 0.0, offset) for offset in offsets]


def _structure_finding(calls, X, label):
    """A finding about where f was evaluated, or None when each entry moved by +h and -h alone."""
    if not calls:
        return Finding(
            "f_not_called",
            f"central_difference never calls f ({label}): the numerical gradient comes from the "
            "values f(X + h e_i) and f(X - h e_i).",
            _HINT,
        )
    dtypes = {call.dtype for call in calls}
    if dtypes != {np.dtype(np.float64)}:
        return _float32(f"f is called with arrays of dtype {', '.join(map(str, dtypes))}")
    offsets = _nudges(calls, X)
    moved = [np.flatnonzero(offset) for offset in offsets]
    several = [
        (offset, entries)
        for offset, entries in zip(offsets, moved, strict=True)
        if entries.size > 1
    ]
    if several:
        offset, entries = several[0]
        if entries.size == X.size and not any(m.size == 1 for m in moved):
            return Finding(
                "all_entries_at_once",
                f"central_difference moves every entry of X at once ({label}): f(X + h) - f(X - h) "
                "is the slope along the diagonal, the same number for every entry. Move one "
                "entry at a time (for index in np.ndindex(X.shape)).",
                _HINT,
            )
        rows = {index[0] for index in zip(*np.unravel_index(entries, X.shape), strict=True)}
        if X.ndim > 1 and len(rows) == 1 and entries.size == X[0].size:
            return Finding(
                "whole_row_nudged",
                f"central_difference moves a whole row of X at once ({label}): for a 2-D or "
                "larger X, `X[i] += h` moves every entry of row i. Index one entry, "
                "`X[index]` with index from np.ndindex(X.shape) (or use X.flat / X.reshape(-1)).",
                _HINT,
            )
        return Finding(
            "not_restored",
            f"an entry is not put back after its nudge ({label}): f is evaluated where earlier "
            "entries are still moved, so every later entry's difference is taken at another "
            "point, and X comes back changed. Save the entry, nudge it, then write the saved "
            "value back.",
            _HINT,
        )
    signs = {}
    for offset, entries in zip(offsets, moved, strict=True):
        if entries.size == 1:
            signs.setdefault(int(entries[0]), set()).add(np.sign(offset.flat[entries[0]]))
    if not signs:
        return Finding(
            "aliased_copies",
            f"f is only ever evaluated at X itself ({label}): every nudge is undone before f "
            "sees it. `X_plus = X` makes no copy, so X_plus and X_minus are one array with X; "
            "use `X.copy()`, or nudge, evaluate, and only then move on.",
            _HINT,
        )
    if len(signs) < X.size:
        return Finding(
            "entries_skipped",
            f"only {len(signs)} of the {X.size} entries of X are nudged ({label}): visit every "
            "index of X, whatever its number of axes (np.ndindex(X.shape)).",
            _HINT,
        )
    if any(len(entry_signs) < 2 for entry_signs in signs.values()):
        return Finding(
            "one_sided",
            f"the difference is one-sided ({label}): f is evaluated at X and at X + h e_i (or "
            "X - h e_i), not at both X + h e_i and X - h e_i. A one-sided difference has an "
            "error that shrinks like h, a central one like h² (notebook 04's explorer draws "
            "both): `(f(X + h e_i) - f(X - h e_i)) / (2 h)`.",
            _HINT,
        )
    return None


def _steps_used(calls, X):
    """The smallest and the largest nudge of an entry (round-off of x + h - x aside)."""
    offsets = [np.abs(o[o != 0]) for o in _nudges(calls, X)]
    sizes = np.concatenate([o for o in offsets if o.size == 1] or [np.zeros(1)])
    return float(sizes.min()), float(sizes.max())


def _float32(what):
    return Finding(
        "float32_arithmetic",
        f"{what}: central differences need float64. A difference of two nearly equal losses "
        "keeps only the digits the losses do not share, fewer the smaller h is: float32 "
        "(eps 1.2e-7) has about 7 to lose, hardly one left at h = 1e-6; float64 (eps 2.2e-16) "
        "keeps about 10 there.",
        _HINT,
    )


def _restored(X_after, X, h, label):
    """X must come back exactly as it was; round-off of x + h - h has its own finding."""
    if X_after.shape == X.shape and np.array_equal(X_after, X):
        return
    if X_after.shape != X.shape:  # X.shape = ... or X.resize(...) in place
        change = np.full(X.shape, np.inf)
    else:
        change = np.abs(X_after.astype(np.float64) - X)
    if np.all(change <= _roundoff(X, h)):
        raise Stop(
            Finding(
                "restored_with_roundoff",
                f"X comes back changed in its last bits at {np.count_nonzero(change)} of its "
                f"{X.size} entries ({label}): `X[i] += h` then `X[i] -= h` does not always give "
                "X[i] back in floating point (0.1 + 1e-5 - 1e-5 is not 0.1), and X must come "
                "back exactly as it was given: the caller's Q, K or V would drift a little with "
                "every check. Save the entry, nudge it, then write the saved value back.",
                _HINT,
            )
        )
    raise Stop(
        Finding(
            "not_restored",
            f"X comes back changed ({label}, by up to {np.max(change):.1g}): an entry is "
            "not put back after its nudge. A caller's array must not change: save "
            "the entry, nudge it, evaluate f, then write the saved value back.",
            _HINT,
        )
    )


def _value_models(function, X, h):
    """(name, gradient) that the usual arithmetic mistakes give with step ``h``."""

    def f(X):
        return float(function(X))

    central = numerical_gradient(f, {"X": X}, "X", eps=h)
    forward = np.zeros_like(X)
    rounded = np.zeros_like(X)
    base = f(X)
    for index in np.ndindex(X.shape):
        moved = X.copy()
        moved[index] += h
        plus = f(moved)
        moved[index] -= 2 * h
        minus = f(moved)
        forward[index] = (plus - base) / h
        rounded[index] = (float(np.float32(plus)) - float(np.float32(minus))) / (2 * h)
    return [
        ("divided_by_h", 2 * central),
        ("sign_flipped", -central),
        ("one_sided", forward),
        ("float32_arithmetic", rounded),
        ("not_divided_by_h", central * h),
        ("operator_precedence", central * h * h),
    ]


_VALUE_MISTAKES = {
    "divided_by_h": "the difference is divided by h instead of 2h: f(X + h e_i) and "
    "f(X - h e_i) lie 2h apart, so `(f(X + h e_i) - f(X - h e_i)) / (2 h)`.",
    "sign_flipped": "the sign is flipped: it is f(X + h e_i) - f(X - h e_i), the value after "
    "the step up minus the value after the step down.",
    "one_sided": "the difference is one-sided, `(f(X + h e_i) - f(X)) / h`: its error shrinks "
    "like h, a central one's like h². Use `(f(X + h e_i) - f(X - h e_i)) / (2 h)`.",
    "not_divided_by_h": "the difference is divided by 2, not by 2h: a slope is a rise over a "
    "run, and the run from X - h e_i to X + h e_i is 2h.",
    "operator_precedence": "the difference is divided by 2 and then multiplied by h: "
    "`(...) / 2 * h` is `((...) / 2) * h` in Python. Write `(...) / (2 * h)`.",
}


def _check_one(student, central_difference, name, function, X, reference, h):
    label = f"on f(X) = {name}, X of shape {X.shape}" + ("" if h is None else f", h = {h:g}")
    recorder = _Recorder(function, X.shape)
    given = X.copy()
    arguments = (recorder, given) if h is None else (recorder, given, h)
    try:
        value = student.call(central_difference, "central_difference", *arguments, label=label)
    except Stop as stop:
        if isinstance(stop.error, _WrongShape):
            raise Stop(
                Finding(
                    "f_called_with_wrong_shape",
                    f"f is called with an array of shape {recorder.calls[-1].shape} ({label}): "
                    "call it with an array of X's own shape, one entry changed.",
                    _HINT,
                )
            ) from None
        if (
            isinstance(stop.error, TypeError)
            and h is None
            and any(word in str(stop.error) for word in ("argument", "NoneType"))
        ):
            raise Stop(
                Finding(
                    "no_default_step",
                    f"central_difference(f, X) without a step, so with h=None, fails: "
                    f"{stop.findings[0].message.split(' raised ', 1)[-1]}\nGive h a default: "
                    "`def central_difference(f, X, h=None):` and `if h is None: h = ...` "
                    "inside, with your step.",
                    _HINT,
                )
            ) from None
        if isinstance(stop.error, IndexError) and X.ndim > 1:
            raise Stop(
                Finding(
                    "flat_index",
                    f"{stop.findings[0].message}\nFor X of shape {X.shape}, `X[i]` with i up to "
                    "X.size is a row, not an entry, and runs out of rows: use "
                    "`for index in np.ndindex(X.shape)` (or X.flat / X.reshape(-1)).",
                    _HINT,
                )
            ) from None
        raise
    structure = _structure_finding(recorder.calls, X, label)
    if structure is not None:
        raise Stop(structure)
    smallest, step = _steps_used(recorder.calls, X)
    _restored(given, X, step, label)
    result = as_result(value, f"central_difference(f, X) {label}", X.shape)
    if result.dtype.kind in "iu":
        raise Stop(
            Finding(
                "integer_result",
                f"central_difference returns {result.dtype} ({label}): the gradient array was "
                "made with an integer dtype (`np.zeros(X.shape, dtype=int)`?), so every entry is "
                "cut to a whole number as it is stored. Make it float64: `np.zeros(X.shape)`.",
                _HINT,
            )
        )
    if result.dtype != np.float64:
        raise Stop(_float32(f"central_difference returns {result.dtype} ({label})"))
    if not math.isclose(smallest, step, rel_tol=1e-3):
        raise Stop(
            Finding(
                "uneven_step",
                f"central_difference moves the entries by different amounts, from "
                f"{smallest:.2g} to {step:.2g} ({label}): move every entry by the same h "
                "(a step scaled by |x| is another method, not the one asked for here).",
                _HINT,
            )
        )
    if h is not None and not math.isclose(step, h, rel_tol=1e-3):
        raise Stop(
            Finding(
                "ignores_h",
                f"central_difference moves each entry by {step:.1g} when it is given h = {h:g} "
                f"({label}): use the step it is given, and your own only when h is None.",
                _HINT,
            )
        )
    error = relative_error(result, reference)
    if h is None and not STEP_RANGE[0] <= step <= STEP_RANGE[1]:
        too_large = step > STEP_RANGE[1]
        raise Stop(
            Finding(
                "step_too_large" if too_large else "step_too_small",
                f"your default step h = {step:.1g} lies {'above' if too_large else 'below'} "
                f"{STEP_RANGE[1 if too_large else 0]:.0e}, outside the range the exercise "
                f"states ({label}; relative error {error:.1g} against the library's, which may "
                "be small on this f and not on another): in float64 a central difference's "
                "truncation error grows like h², and its round-off error like 1e-16 |f| / h; "
                "about 1e-6 to 1e-5 balances the two (notebook 04's explorer).",
                _HINT,
            )
        )
    if error >= FLOAT64_TOLERANCE:
        mistake = first_match(result, _value_models(function, X, step), FLOAT64_TOLERANCE)
        if mistake == "float32_arithmetic":
            raise Stop(_float32(f"the values of f are rounded to float32 ({label})"))
        if mistake is not None:
            raise Stop(Finding(mistake, f"{_VALUE_MISTAKES[mistake]} ({label})", _HINT))
        factor = constant_factor(result, reference, FLOAT64_TOLERANCE)
        if factor is not None:
            raise Stop(
                Finding(
                    "off_by_factor",
                    f"your gradient is {factor:.3g} times the right one ({label}): "
                    "`(f(X + h e_i) - f(X - h e_i)) / (2 h)` has no other factor.",
                    _HINT,
                )
            )
        raise Stop(
            Finding(
                "wrong_gradient",
                f"your gradient differs from attention_lib's numerical_gradient ({label}; "
                f"relative error {error:.2g}) and matches none of the usual mistakes.",
                _HINT,
            )
        )
    return result, step


def _check_central_difference(student, central_difference):
    require_callable(central_difference, "central_difference")
    steps = []
    probes = _probes()
    given = dict(zip((name for name, *_ in probes[1:3]), GIVEN_STEPS, strict=True))
    results = {}
    for name, function, X, reference in probes:
        result, step = _check_one(
            student, central_difference, name, function, X, reference, given.get(name)
        )
        results[name] = result
        if name not in given:
            steps.append(step)
    Q, K, V, mask, grad_output = _attention_inputs()
    _, cache = attention_forward(Q, K, V, mask, return_cache=True)
    numeric = [results[f"the attention loss in {name}"] for name in "QKV"]
    right = attention_backward(grad_output, cache)
    planted = pitfalls.attention_backward_with_sign_error(grad_output, cache)
    passes = all(
        relative_error(a, n) < FLOAT64_TOLERANCE for a, n in zip(right, numeric, strict=True)
    )
    catches = min(relative_error(a, n) for a, n in zip(planted[:2], numeric[:2], strict=True))
    # Implied by the agreement above, up to its tolerance; checked, since the line says so.
    if not passes or catches <= _CAUGHT:
        raise Stop(
            Finding(
                "misjudges_attention",
                "with your central_difference on the attention loss, attention_backward (right) "
                "must agree to 1e-6 and pitfalls.attention_backward_with_sign_error (wrong) must "
                "not; here one of them does not, although it agrees with the library on each "
                "probe: look at its precision.",
                _HINT,
            )
        )
    shapes = ", ".join(str(X.shape) for _, _, X, _ in probes[:3])
    return [
        f"agrees with attention_lib's numerical_gradient (relative error below "
        f"{FLOAT64_TOLERANCE:.0e}) on smooth functions of arrays of shapes {shapes} and on the "
        "attention loss, where it passes attention_backward and catches "
        "pitfalls.attention_backward_with_sign_error",
        "central: each entry is moved by +h and by -h, one at a time",
        f"uses the step h it is given ({', '.join(f'{h:g}' for h in GIVEN_STEPS)}); its default "
        f"step, {steps[0]:.0e}, lies within {STEP_RANGE[0]:.0e}..{STEP_RANGE[1]:.0e}",
        "computes in float64",
        "X comes back exactly as it was given",
    ]


# --------------------------------------------------------------------------------------
# gradient_errors, the judge, and the student's own pair


def _library_forward(Q, K, V, mask=None):
    return attention_forward(Q, K, V, mask, return_cache=True)


def _errors(student, gradient_errors, backward, label, scale=1.0):
    Q, K, V, mask, grad_output = (
        None if a is None else np.array(a, copy=True) for a in _attention_inputs()
    )
    grad_output = grad_output * scale
    student.forget()
    student.hand_out("gradient_errors", Q=Q, K=K, V=V, mask=mask, grad_output=grad_output)
    value = student.call(
        gradient_errors,
        "gradient_errors",
        _library_forward,
        backward,
        Q,
        K,
        V,
        mask,
        grad_output,
        label=label,
    )
    errors = _read_errors(value, label)
    if not np.all(np.isfinite(errors)) or np.any(errors < 0):
        raise Stop(
            Finding(
                "not_finite",
                f"gradient_errors {label} returns {errors.tolist()}: relative errors are "
                "finite and at least 0 (a 0 / 0 for an all-zero gradient?).",
            )
        )
    return errors


def _read_errors(value, label):
    """gradient_errors' three numbers (a dict keyed Q, K, V is read too), or a Stop."""
    if isinstance(value, dict) and set(value) == set("QKV"):
        value = [value[key] for key in "QKV"]
    is_sequence = isinstance(value, tuple | list) or (
        isinstance(value, np.ndarray) and value.ndim > 0
    )
    items = list(value) if is_sequence else []
    if any(isinstance(item, bool | np.bool_) for item in items):
        raise Stop(
            Finding(
                "returns_verdicts",
                f"gradient_errors {label} returns True/False verdicts (np.allclose?), not the "
                "relative errors: return the three numbers, and compare them with a tolerance "
                "where you judge them.",
                _HINT,
            )
        )
    if len(items) == 3 and all(np.ndim(item) == 0 for item in items):
        try:
            return np.array([float(item) for item in items])
        except (TypeError, ValueError):
            pass
    got = type(value).__name__
    if items and any(np.ndim(item) for item in items):
        shapes = ", ".join(str(np.shape(item)) for item in items)
        got += f" of arrays of shapes {shapes}: reduce each comparison to one number, a norm-wise"
        got += " relative error over the whole gradient"
    elif items:
        got += f" of length {len(items)}"
    raise Stop(
        Finding(
            "wrong_type",
            f"gradient_errors {label} should return three numbers, the relative errors of "
            f"(grad_Q, grad_K, grad_V), got {got}.",
        )
    )


def _check_gradient_errors(student, gradient_errors):
    require_callable(gradient_errors, "gradient_errors")
    planted = pitfalls.attention_backward_with_sign_error
    right = _errors(student, gradient_errors, attention_backward, "for attention_backward")
    if np.any(right >= FLOAT64_TOLERANCE):
        raise Stop(
            Finding(
                "rejects_correct_backward",
                "gradient_errors rejects attention_backward, which is right: it returns "
                f"{', '.join(f'{e:.2g}' for e in right)} for (grad_Q, grad_K, grad_V). Is the "
                "loss whose numerical gradient you take `sum(grad_output * output)`, the one "
                "whose gradient backward returns, and do you compare each gradient with the "
                "numerical gradient of its own input?",
                _HINT,
            )
        )
    wrong = _errors(student, gradient_errors, planted, "for the planted sign error")
    if wrong[0] < FLOAT64_TOLERANCE and min(wrong[1:]) > _CAUGHT:
        raise Stop(
            Finding(
                "errors_wrong_order",
                "gradient_errors returns its errors in another order: for the planted sign "
                f"error it gives {', '.join(f'{e:.2g}' for e in wrong)}, but grad_V is the one "
                "gradient it gets right. Return (error of grad_Q, of grad_K, of grad_V), in the "
                "order backward returns them.",
                _HINT,
            )
        )
    if np.any(wrong[:2] <= _CAUGHT) or wrong[2] >= FLOAT64_TOLERANCE:
        raise Stop(
            Finding(
                "misses_planted_bug",
                "gradient_errors does not single out pitfalls.attention_backward_with_sign_error: "
                f"it returns {', '.join(f'{e:.2g}' for e in wrong)} for (grad_Q, grad_K, grad_V), "
                "where grad_Q and grad_K are wrong (relative errors 0.2-0.6) and grad_V is right. "
                "Compare the gradients backward returns with the numerical ones.",
                _HINT,
            )
        )
    scaled = _errors(
        student, gradient_errors, planted, "for the planted sign error, loss times 1e6", 1e6
    )
    if not np.allclose(scaled[:2], wrong[:2], rtol=1e-3):
        raise Stop(
            Finding(
                "not_relative",
                "gradient_errors is not a relative error: with the loss multiplied by 1e6 its "
                f"errors for the planted bug change from {wrong[0]:.2g} to {scaled[0]:.2g} "
                "(grad_Q). A relative error, such as ||a - n|| / (||a|| + ||n||) "
                "(attention_lib.relative_error), does not change when the loss is scaled, so one "
                "tolerance serves every problem.",
                _HINT,
            )
        )
    return [
        "gradient_errors: attention_backward below 1e-06 for each gradient; the planted sign "
        "error caught in grad_Q and grad_K, with grad_V right; the errors are relative "
        "(unchanged when the loss is scaled by 1e6)",
        "gradient_errors leaves Q, K, V, mask and grad_output unchanged",
    ]


def _judge_own(student, gradient_errors, forward, backward):
    """A note with what the student's gradient_errors says of their own part (a)."""
    Q, K, V, mask, grad_output = _attention_inputs()
    student.forget()
    try:
        value = student.call(
            gradient_errors, "gradient_errors", forward, backward, Q, K, V, mask, grad_output
        )
        errors = _read_errors(value, "on your pair")
    except (NotAttempted, Stop) as problem:
        # gradient_errors has run before, so part (a)'s scaffold shows up as "unfinished"
        if isinstance(problem, Stop) and problem.findings[0].diagnosis == "unfinished":
            student.note(
                "own_pair_not_attempted",
                "your forward and backward of part (a) are not written yet, so only the "
                "library's and the planted pass were judged.",
            )
        else:
            student.note(
                "own_pair_not_judged",
                "your gradient_errors could not judge your own forward and backward of part "
                "(a) (they raise or return something else); run 19.4 (a)'s checker.",
            )
        return
    text = ", ".join(
        f"{name} {'below 1e-06' if error < FLOAT64_TOLERANCE else f'{error:.2g}'}"
        for name, error in zip(("grad_Q", "grad_K", "grad_V"), errors, strict=True)
    )
    verdict = (
        "they agree with finite differences"
        if np.all(errors < FLOAT64_TOLERANCE)
        else "your backward is wrong where the error is large (19.4 (a)'s checker names it)"
    )
    student.note(
        "own_pair_judged",
        f"your gradient_errors on your forward and backward of part (a): {text}: {verdict}.",
    )


def _findings(student, central_difference, gradient_errors, forward, backward):
    checked = _check_central_difference(student, central_difference)
    if gradient_errors is not None:
        checked += _check_gradient_errors(student, gradient_errors)
        if forward is not None and backward is not None:
            _judge_own(student, gradient_errors, forward, backward)
    return checked


def check_exercise_19_4c(central_difference, gradient_errors=None, *, forward=None, backward=None):
    """Check a student's own gradient check (exercise 19.4 (c)).

    ``central_difference(f, X, h=None)`` must return the numerical gradient of
    the scalar function ``f`` at the float64 array ``X``: each entry moved by
    ``+h`` and by ``-h`` in turn and put back, ``(f(X + h e_i) - f(X - h
    e_i)) / (2 h)``, with a default step of the student's choosing when ``h``
    is None. It is checked against :func:`attention_lib.numerical_gradient` on
    smooth functions and on the attention loss (where it must pass the
    library's backward and catch the planted sign error), for where it
    evaluates ``f``, the step it uses, its dtype, and ``X`` coming back as it
    was. ``gradient_errors(forward, backward, Q, K, V, mask, grad_output)``,
    if given, must return the relative errors of backward's
    ``(grad_Q, grad_K, grad_V)`` against central differences of the loss
    ``sum(grad_output * forward(Q, K, V, mask)[0])``; the library's backward
    must pass, the planted sign error fail. ``forward`` and ``backward`` of
    part (a), if given, are judged by the student's ``gradient_errors`` in a
    note; they do not count (part (c) is checked without part (a)).

    Parameters
    ----------
    central_difference : callable
    gradient_errors : callable, optional
    forward, backward : callable, optional

    Returns
    -------
    ExerciseReport
        Names the mistake: a one-sided difference, an entry not restored,
        float32 arithmetic, a default step outside 1e-7..1e-3, a step given
        but ignored, every entry moved at once, a division by h instead of 2h,
        an error that is not relative, among others.

    Examples
    --------
    >>> def central_difference(f, X, h=None):
    ...     return numerical_gradient(lambda X: f(X), {"X": X}, "X", eps=h or 1e-6)
    >>> check_exercise_19_4c(central_difference).passed
    True
    >>> def forward_difference(f, X, h=None):
    ...     h, grad = h or 1e-6, np.zeros_like(X)
    ...     for index in np.ndindex(X.shape):
    ...         moved = X.copy()
    ...         moved[index] += h
    ...         grad[index] = (f(moved) - f(X)) / h
    ...     return grad
    >>> check_exercise_19_4c(forward_difference).diagnoses
    ('one_sided',)
    """
    return run(
        "19.4 (c)",
        "your own gradient check",
        lambda student: _findings(student, central_difference, gradient_errors, forward, backward),
    )
