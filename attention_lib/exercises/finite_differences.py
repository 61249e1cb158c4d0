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
from types import SimpleNamespace

import numpy as np

from .. import pitfalls
from ..attention import attention_backward, attention_forward
from ..gradcheck import numerical_gradient, relative_error
from ..masks import causal_mask
from ._attention_probes import Spec, inputs
from ._harness import (
    FLOAT64_TOLERANCE,
    Mistakes,
    NotAttempted,
    Stop,
    as_result,
    relation,
    require_callable,
    run,
)

__all__ = ["check_exercise_19_4c"]

STEP_RANGE = (1e-7, 1e-3)
_GRAD_NAMES = ("grad_Q", "grad_K", "grad_V")
_CAUGHT = 1e-2  # the planted sign error's relative error is 0.2-0.6 on the probe


MISTAKES = Mistakes("19.4", "c")
MISTAKES.models(
    one_sided=lambda d: d.forward,
    float32_arithmetic=lambda d: d.rounded,
    divided_by_h=lambda d: 2 * d.central,
    sign_flipped=lambda d: -d.central,
    not_divided_by_h=lambda d: d.central * d.h,
    operator_precedence=lambda d: d.central * d.h * d.h,
)


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


def _attention_inputs(problem="causal"):
    """Q, K, V, mask and an output gradient (float64) for one of ``GRADIENT_PROBLEMS``."""
    return inputs(GRADIENT_PROBLEMS[problem])


GRADIENT_PROBLEMS = {
    "causal": Spec((), 5, 5, 4, 3),
    "rectangular": Spec((), 3, 6, 4, 2),
    "padding": Spec((2, 2), 3, 4, 4, 3, "padding"),
    "no mask": Spec((), 4, 4, 4, 5, "None"),
    "empty row": Spec((), 4, 4, 4, 3, "empty row"),
}


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
    row = 0.5 * rng.standard_normal((1, 5))
    column = rng.standard_normal((3, 4))
    return {
        "sin(x) + x²/2": (lambda x: np.sum(np.sin(x)) + 0.5 * np.sum(x**2), rng.standard_normal(4)),
        "log(sum(exp(W * X)))": (
            lambda X: np.log(np.sum(np.exp(weights * X))),
            rng.standard_normal((3, 5)),
        ),
        "sum(c * tanh(X)²)": (
            lambda X: np.sum(scale * np.tanh(X) ** 2),
            rng.standard_normal((2, 3, 2)),
        ),
        "exp(x) cos(x), X 0-d": (lambda x: float(np.exp(x) * np.cos(x)), np.array(0.7)),
        "log(sum(exp(w * X))), X (1, 5)": (
            lambda X: np.log(np.sum(np.exp(row * X))),
            rng.standard_normal((1, 5)),
        ),
        "sum(c * X³), X a transposed view": (
            lambda X: np.sum(column * X**3),
            rng.standard_normal((4, 3)).T,
        ),
    }


# How each probe passes h: left out, h=None, or a step given by keyword or by position
STEP_FORMS = ("omitted", 1e-4, ("positional", 1e-5), None, 3e-6, None, "omitted", None, "omitted")


@functools.cache
def _probes():
    """(name, function, X, the library's numerical gradient, how h is passed) for every probe."""
    functions = dict(_smooth_functions())
    functions.update({f"the attention loss in {name}": _attention_loss(name) for name in "QKV"})
    return tuple(
        (
            name,
            function,
            X,
            numerical_gradient(lambda X, f=function: float(f(X)), {"X": X}, "X"),
            step,
        )
        for (name, (function, X)), step in zip(functions.items(), STEP_FORMS, strict=True)
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
    finding = functools.partial(MISTAKES.finding, label=label, size=X.size)
    if not calls:
        return finding("f_not_called")
    dtypes = {call.dtype for call in calls}
    if dtypes != {np.dtype(np.float64)}:
        return finding("float32_arithmetic", what=f"f is called with arrays of {dtypes.pop()}")
    offsets = _nudges(calls, X)
    moved = [np.flatnonzero(offset) for offset in offsets]
    several = [entries for entries in moved if entries.size > 1]
    if several and several[0].size == X.size and not any(m.size == 1 for m in moved):
        return finding("all_entries_at_once")
    if several:
        rows = set(np.unravel_index(several[0], X.shape)[0]) if X.ndim else set()
        whole_row = X.ndim > 1 and len(rows) == 1 and several[0].size == X[0].size
        what = "f is evaluated where earlier entries are still moved"
        return finding("whole_row_nudged") if whole_row else finding("not_restored", what=what)
    signs = {}
    for offset, entries in zip(offsets, moved, strict=True):
        if entries.size == 1:
            signs.setdefault(int(entries[0]), set()).add(np.sign(offset.flat[entries[0]]))
    if not signs:
        return finding("aliased_copies")
    if len(signs) < X.size:
        return finding("entries_skipped", nudged=len(signs))
    if any(len(entry_signs) < 2 for entry_signs in signs.values()):
        return finding("one_sided")
    return None


def _steps_used(calls, X):
    """The smallest and the largest nudge of an entry (round-off of x + h - x aside)."""
    offsets = [np.abs(o[o != 0]) for o in _nudges(calls, X)]
    sizes = np.concatenate([o for o in offsets if o.size == 1] or [np.zeros(1)])
    return float(sizes.min()), float(sizes.max())


def _restored(X_after, X, h, label):
    """X must come back exactly as it was; round-off of x + h - h has its own finding."""
    if X_after.shape == X.shape and np.array_equal(X_after, X):
        return
    same_shape = X_after.shape == X.shape  # else: X.shape = ... or X.resize(...) in place
    change = np.abs(X_after.astype(np.float64) - X) if same_shape else np.full(X.shape, np.inf)
    if np.all(change <= _roundoff(X, h)):
        count = np.count_nonzero(change)
        raise MISTAKES.stop("restored_with_roundoff", count=count, size=X.size, label=label)
    what = f"X comes back changed, by up to {np.max(change):.1g}"
    raise MISTAKES.stop("not_restored", what=what, label=label)


def _differences(function, X, h):
    """What the usual arithmetic mistakes are built from, with step ``h``: the central,
    the one-sided and the float32-rounded differences."""

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
    return SimpleNamespace(central=central, forward=forward, rounded=rounded, h=h)


def _explain(recorder, X, h, label, name, message, error):
    """The student's exception on this probe, named by what the probe asks of the function."""
    if isinstance(error, _WrongShape):
        return MISTAKES.finding(
            "f_called_with_wrong_shape", shape=recorder.calls[-1].shape, label=label
        )
    if (
        isinstance(error, TypeError)
        and h is None
        and ("argument" in str(error) or "None" in str(error))
    ):
        return MISTAKES.finding(
            "no_default_step", label=label, error=message.split(" raised ", 1)[-1]
        )
    if isinstance(error, IndexError | TypeError):
        return MISTAKES.finding("flat_index", relation=message, ndim=X.ndim)
    return None


def _check_one(student, central_difference, name, function, X, reference, step_form):
    h = step_form[1] if isinstance(step_form, tuple) else step_form
    h = None if h == "omitted" else h
    shape = f"X of shape {X.shape}" + " (not contiguous)" * (not X.flags.c_contiguous)
    if step_form in ("omitted", None):
        passed = ", h left out" if step_form == "omitted" else ", h=None"
    else:
        passed = f", h = {h:g}" + " by position" * isinstance(step_form, tuple)
    label = f"on f(X) = {name}, {shape}{passed}"
    recorder = _Recorder(function, X.shape)
    given = X.copy(order="K") if X.flags.c_contiguous else np.asfortranarray(X)
    arguments = (recorder, given) + ((h,) if isinstance(step_form, tuple) else ())
    keywords = {} if step_form == "omitted" or isinstance(step_form, tuple) else {"h": h}
    explain = functools.partial(_explain, recorder, X, h, label)
    value = student.call(
        central_difference,
        "central_difference",
        *arguments,
        label=label,
        explain=explain,
        **keywords,
    )
    structure = _structure_finding(recorder.calls, X, label)
    if structure is not None:
        raise Stop(structure)
    smallest, step = _steps_used(recorder.calls, X)
    _restored(given, X, step, label)
    result = as_result(value, f"central_difference(f, X) {label}", X.shape)
    stop = functools.partial(MISTAKES.stop, label=label, step=step)
    if result.dtype != np.float64:
        if result.dtype.kind in "iu":
            raise stop("integer_result", dtype=result.dtype)
        raise stop("float32_arithmetic", what=f"central_difference returns {result.dtype}")
    if not math.isclose(smallest, step, rel_tol=1e-3):
        raise stop("uneven_step", smallest=smallest)
    if h is not None and not math.isclose(step, h, rel_tol=1e-3):
        raise stop("ignores_h", h=h)
    size = relative_error(result, reference)
    if h is None and not STEP_RANGE[0] <= step <= STEP_RANGE[1]:
        raise stop("step_too_large" if step > STEP_RANGE[1] else "step_too_small", error=size)
    if size >= FLOAT64_TOLERANCE:
        mistake = MISTAKES.match(result, _differences(function, X, step), FLOAT64_TOLERANCE)
        if mistake == "float32_arithmetic":
            raise stop(mistake, what="the values of f are rounded to float32")
        if mistake is not None:
            raise Stop(MISTAKES.finding(mistake, f"{MISTAKES[mistake].message} ({label})."))
        kind, words = relation(result, reference, FLOAT64_TOLERANCE) or (None, None)
        names = {"zero": "gradient_all_zero", "sign": "sign_flipped", "factor": "off_by_factor"}
        name = names.get(kind, "wrong_rows" if kind else "wrong_gradient")
        words = words or f"differs from the library's (relative error {size:.2g}), no known mistake"
        raise stop(name, relation=words)
    return result, step


def _check_central_difference(student, central_difference):
    require_callable(central_difference, "central_difference")
    steps, results = [], {}
    for name, function, X, reference, step_form in _probes():
        result, step = _check_one(
            student, central_difference, name, function, X, reference, step_form
        )
        results[name] = result
        if step_form in ("omitted", None):
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
        raise MISTAKES.stop("misjudges_attention")
    shapes = ", ".join(str(X.shape) for _, _, X, _, _ in _probes()[:6])
    return MISTAKES.checked(shapes=shapes, step=steps[0])


# --------------------------------------------------------------------------------------
# gradient_errors, the judge, and the student's own pair


def _library_forward(Q, K, V, mask=None):
    return attention_forward(Q, K, V, mask, return_cache=True)


def _errors(student, gradient_errors, backward, problem, label, scale=1.0):
    Q, K, V, mask, grad_output = (
        None if a is None else np.array(a, copy=True) for a in _attention_inputs(problem)
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
        raise MISTAKES.stop(
            "not_finite",
            f"gradient_errors {label} returns {errors.tolist()}: relative errors are finite and "
            "at least 0. A masked key's gradient is exactly 0 in both arrays: an error taken "
            "entry by entry divides 0 by 0 there; take one norm-wise error per gradient.",
        )
    return errors


def _grad_K_doubled_V_halved(grad_output, cache):
    """Planted: grad_Q right, grad_K twice and grad_V half what they should be (a verdict
    that skips one gradient, or lists them in another order, cannot match it)."""
    grad_Q, grad_K, grad_V = attention_backward(grad_output, cache)
    return grad_Q, 2 * grad_K, grad_V / 2


def _causal_forced(grad_output, cache):
    """Planted: a causal mask of its own on the cached weights (right for causal masks only)."""
    causal = causal_mask(*cache.weights.shape[-2:])
    return attention_backward(grad_output, cache._replace(weights=cache.weights * causal))


def _mask_ignored(grad_output, cache):
    """Planted: the weights recomputed without the mask."""
    return attention_backward(grad_output, _library_forward(cache.Q, cache.K, cache.V)[1])


PLANTED = {
    "attention_backward": attention_backward,
    "the planted sign error": pitfalls.attention_backward_with_sign_error,
    "a backward right in grad_Q alone (grad_K doubled, grad_V halved)": _grad_K_doubled_V_halved,
    "a backward that ignores the mask": _mask_ignored,
    "a backward that applies a causal mask of its own": _causal_forced,
}


@functools.cache
def _numerical(problem):
    """The library's central differences of the attention loss of ``problem``, in Q, K, V."""
    Q, K, V, mask, grad_output = _attention_inputs(problem)
    inputs = {"Q": Q, "K": K, "V": V}

    def loss(**arrays):
        return float(np.sum(grad_output * attention_forward(**arrays, mask=mask)))

    return tuple(numerical_gradient(loss, inputs, name) for name in inputs)


def _true_errors(problem, planted):
    """The relative errors of ``PLANTED[planted]`` on ``problem``; each lies far from 1e-6
    (below 1e-8 or above 1e-2, tests/test_exercises.py checks)."""
    Q, K, V, mask, grad_output = _attention_inputs(problem)
    grads = PLANTED[planted](grad_output, _library_forward(Q, K, V, mask)[1])
    return np.array([relative_error(g, n) for g, n in zip(grads, _numerical(problem), strict=True)])


def _read_errors(value, label):
    """gradient_errors' three numbers (a dict keyed Q, K, V is read too), or a Stop."""
    if isinstance(value, dict) and set(value) == set("QKV"):
        value = [value[key] for key in "QKV"]
    is_sequence = isinstance(value, tuple | list) or (
        isinstance(value, np.ndarray) and value.ndim > 0
    )
    items = list(value) if is_sequence else []
    if any(isinstance(item, bool | np.bool_) for item in items):
        raise MISTAKES.stop("returns_verdicts", label=label)
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
        MISTAKES.finding(
            "wrong_type",
            f"gradient_errors {label} should return three numbers, the relative errors of "
            f"(grad_Q, grad_K, grad_V), got {got}.",
        )
    )


def _verdicts(errors):
    return ", ".join(f"{n} {e:.2g}" for n, e in zip(_GRAD_NAMES, errors, strict=True))


def _check_gradient_errors(student, gradient_errors):
    """Each planted backward on each problem: the student's verdicts must be the true ones."""
    require_callable(gradient_errors, "gradient_errors")
    said = {}
    for problem in GRADIENT_PROBLEMS:
        for planted, backward in PLANTED.items():
            if "mask" in planted and problem == "no mask":
                continue
            label = f"for {planted}, on the {problem} problem"
            errors = said[problem, planted] = _errors(
                student, gradient_errors, backward, problem, label
            )
            truth = _true_errors(problem, planted)
            says, is_right = errors < FLOAT64_TOLERANCE, truth < FLOAT64_TOLERANCE
            if np.array_equal(says, is_right):
                continue
            stop = functools.partial(MISTAKES.stop, label=label, errors=_verdicts(errors))
            if planted == "attention_backward":
                raise stop("rejects_correct_backward")
            if any(
                np.array_equal(says[list(o)], is_right) for o in ((2, 1, 0), (1, 0, 2), (0, 2, 1))
            ):
                wrong = ", ".join(n for n, r in zip(_GRAD_NAMES, is_right, strict=True) if not r)
                raise stop("errors_wrong_order", wrong=wrong)
            raise stop("misses_planted_bug", planted=planted, truth=_verdicts(truth))
    error = said["causal", "the planted sign error"][0]
    label = "for the planted sign error, loss times 1e6"
    sign_error = PLANTED["the planted sign error"]
    scaled = _errors(student, gradient_errors, sign_error, "causal", label, 1e6)[0]
    if not math.isclose(scaled, error, rel_tol=1e-2):
        raise MISTAKES.stop("not_relative", scaled=scaled, error=error)
    return MISTAKES.checked("_gradient_errors", problems=", ".join(GRADIENT_PROBLEMS))


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
        unwritten = isinstance(problem, Stop) and problem.findings[0].diagnosis == "unfinished"
        name = "own_pair_not_attempted" if unwritten else "own_pair_not_judged"
        student.note(name, MISTAKES[name].message)
        return
    text = ", ".join(
        f"{name} {'below 1e-06' if error < FLOAT64_TOLERANCE else f'{error:.2g}'}"
        for name, error in zip(_GRAD_NAMES, errors, strict=True)
    )
    verdict = (
        "they agree with finite differences"
        if np.all(errors < FLOAT64_TOLERANCE)
        else "your backward is wrong where the error is large (19.4 (a)'s checker names it)"
    )
    student.note(
        "own_pair_judged", MISTAKES.finding("own_pair_judged", errors=text, verdict=verdict).message
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
        "19.4",
        "c",
        "your own gradient check",
        lambda student: _findings(student, central_difference, gradient_errors, forward, backward),
    )
