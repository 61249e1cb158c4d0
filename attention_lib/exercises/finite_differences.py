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
from ..masks import causal_mask, padding_mask
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
_HINT = "chapter 19.3 (the tests check against finite differences); notebook 04_backward.ipynb"


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
    """Q, K, V, mask and an output gradient for one of ``GRADIENT_PROBLEMS``."""
    rng = np.random.default_rng(1949 + GRADIENT_PROBLEMS.index(problem))
    lead, T_q, T_k, d_v = {
        "causal": ((), 5, 5, 3),
        "rectangular": ((), 3, 6, 2),
        "padding": ((2, 2), 3, 4, 3),
        "no mask": ((), 4, 4, 5),
        "empty row": ((), 4, 4, 3),
    }[problem]
    Q, K = rng.standard_normal((*lead, T_q, 4)), rng.standard_normal((*lead, T_k, 4))
    V, grad_output = rng.standard_normal((*lead, T_k, d_v)), rng.standard_normal((*lead, T_q, d_v))
    mask = causal_mask(T_q, T_k)
    if problem == "padding":
        mask = padding_mask(np.arange(T_k) < np.array([[T_k], [T_k - 2]]), heads=True)
    elif problem == "empty row":
        mask[1] = False
    return Q, K, V, None if problem == "no mask" else mask, grad_output


GRADIENT_PROBLEMS = ("causal", "rectangular", "padding", "no mask", "empty row")


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
    if not calls:
        return MISTAKES.finding(
            "f_not_called",
            f"central_difference never calls f ({label}): the numerical gradient comes from the "
            "values f(X + h e_i) and f(X - h e_i).",
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
            return MISTAKES.finding(
                "all_entries_at_once",
                f"central_difference moves every entry of X at once ({label}): f(X + h) - f(X - h) "
                "is the slope along the diagonal, the same number for every entry. Move one "
                "entry at a time (for index in np.ndindex(X.shape)).",
            )
        rows = {index[0] for index in zip(*np.unravel_index(entries, X.shape), strict=True)}
        if X.ndim > 1 and len(rows) == 1 and entries.size == X[0].size:
            return MISTAKES.finding(
                "whole_row_nudged",
                f"central_difference moves a whole row of X at once ({label}): for a 2-D or "
                "larger X, `X[i] += h` moves every entry of row i. Index one entry, "
                "`X[index]` with index from np.ndindex(X.shape) (or use X.flat / X.reshape(-1)).",
            )
        return MISTAKES.finding(
            "not_restored",
            f"an entry is not put back after its nudge ({label}): f is evaluated where earlier "
            "entries are still moved, so every later entry's difference is taken at another "
            "point, and X comes back changed. Save the entry, nudge it, then write the saved "
            "value back.",
        )
    signs = {}
    for offset, entries in zip(offsets, moved, strict=True):
        if entries.size == 1:
            signs.setdefault(int(entries[0]), set()).add(np.sign(offset.flat[entries[0]]))
    if not signs:
        return MISTAKES.finding(
            "aliased_copies",
            f"f is only ever evaluated at X itself ({label}): every nudge is undone before f "
            "sees it. `X_plus = X` makes no copy, so X_plus and X_minus are one array with X; "
            "use `X.copy()`, or nudge, evaluate, and only then move on.",
        )
    if len(signs) < X.size:
        return MISTAKES.finding(
            "entries_skipped",
            f"only {len(signs)} of the {X.size} entries of X are nudged ({label}): visit every "
            "index of X, whatever its number of axes (np.ndindex(X.shape)).",
        )
    if any(len(entry_signs) < 2 for entry_signs in signs.values()):
        return MISTAKES.finding(
            "one_sided",
            f"the difference is one-sided ({label}): f is evaluated at X and at X + h e_i (or "
            "X - h e_i), not at both X + h e_i and X - h e_i. A one-sided difference has an "
            "error that shrinks like h, a central one like h² (notebook 04's explorer draws "
            "both): `(f(X + h e_i) - f(X - h e_i)) / (2 h)`.",
        )
    return None


def _steps_used(calls, X):
    """The smallest and the largest nudge of an entry (round-off of x + h - x aside)."""
    offsets = [np.abs(o[o != 0]) for o in _nudges(calls, X)]
    sizes = np.concatenate([o for o in offsets if o.size == 1] or [np.zeros(1)])
    return float(sizes.min()), float(sizes.max())


def _float32(what):
    return MISTAKES.finding(
        "float32_arithmetic",
        f"{what}: central differences need float64. A difference of two nearly equal losses "
        "keeps only the digits the losses do not share, fewer the smaller h is: float32 "
        "(eps 1.2e-7) has about 7 to lose, hardly one left at h = 1e-6; float64 (eps 2.2e-16) "
        "keeps about 10 there.",
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
            MISTAKES.finding(
                "restored_with_roundoff",
                f"X comes back changed in its last bits at {np.count_nonzero(change)} of its "
                f"{X.size} entries ({label}): `X[i] += h` then `X[i] -= h` does not always give "
                "X[i] back in floating point (0.1 + 1e-5 - 1e-5 is not 0.1), and X must come "
                "back exactly as it was given: the caller's Q, K or V would drift a little with "
                "every check. Save the entry, nudge it, then write the saved value back.",
            )
        )
    raise Stop(
        MISTAKES.finding(
            "not_restored",
            f"X comes back changed ({label}, by up to {np.max(change):.1g}): an entry is "
            "not put back after its nudge. A caller's array must not change: save "
            "the entry, nudge it, evaluate f, then write the saved value back.",
        )
    )


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
            "f_called_with_wrong_shape",
            f"f is called with an array of shape {recorder.calls[-1].shape} ({label}): call it "
            "with an array of X's own shape, one entry changed.",
        )
    if (
        isinstance(error, TypeError)
        and h is None
        and any(w in str(error) for w in ("argument", "NoneType"))
    ):
        return MISTAKES.finding(
            "no_default_step",
            f"central_difference fails when h is None ({label}): {message.split(' raised ', 1)[-1]}"
            "\nGive h a default that applies to an explicit h=None too: "
            "`def central_difference(f, X, h=None):` and `if h is None: h = ...` inside.",
        )
    if isinstance(error, IndexError | TypeError):
        return MISTAKES.finding(
            "flat_index",
            f"{message}\nX may have any number of axes, here {X.ndim}: an index such as `X[i]` "
            "with i up to X.size, or a loop over X.shape[0] and X.shape[1], assumes one. Visit "
            "every entry with `for index in np.ndindex(X.shape)` (or X.flat).",
        )
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
    if result.dtype.kind in "iu":
        raise Stop(
            MISTAKES.finding(
                "integer_result",
                f"central_difference returns {result.dtype} ({label}): the gradient array was "
                "made with an integer dtype (`np.zeros(X.shape, dtype=int)`?), so every entry is "
                "cut to a whole number as it is stored. Make it float64: `np.zeros(X.shape)`.",
            )
        )
    if result.dtype != np.float64:
        raise Stop(_float32(f"central_difference returns {result.dtype} ({label})"))
    if not math.isclose(smallest, step, rel_tol=1e-3):
        raise Stop(
            MISTAKES.finding(
                "uneven_step",
                f"central_difference moves the entries by different amounts, from "
                f"{smallest:.2g} to {step:.2g} ({label}): move every entry by the same h "
                "(a step scaled by |x| is another method, not the one asked for here).",
            )
        )
    if h is not None and not math.isclose(step, h, rel_tol=1e-3):
        raise Stop(
            MISTAKES.finding(
                "ignores_h",
                f"central_difference moves each entry by {step:.1g} when it is given h = {h:g} "
                f"({label}): use the step it is given, and your own only when h is None.",
            )
        )
    error = relative_error(result, reference)
    if h is None and not STEP_RANGE[0] <= step <= STEP_RANGE[1]:
        too_large = step > STEP_RANGE[1]
        raise Stop(
            MISTAKES.finding(
                "step_too_large" if too_large else "step_too_small",
                f"your default step h = {step:.1g} lies {'above' if too_large else 'below'} "
                f"{STEP_RANGE[1 if too_large else 0]:.0e}, outside the range the exercise "
                f"states ({label}; relative error {error:.1g} against the library's, which may "
                "be small on this f and not on another): in float64 a central difference's "
                "truncation error grows like h², and its round-off error like 1e-16 |f| / h; "
                "about 1e-6 to 1e-5 balances the two (notebook 04's explorer).",
            )
        )
    if error >= FLOAT64_TOLERANCE:
        mistake = MISTAKES.match(result, _differences(function, X, step), FLOAT64_TOLERANCE)
        if mistake == "float32_arithmetic":
            raise Stop(_float32(f"the values of f are rounded to float32 ({label})"))
        if mistake is not None:
            raise Stop(MISTAKES.finding(mistake, MISTAKES[mistake].message + f" ({label})."))
        kind, words = relation(result, reference, FLOAT64_TOLERANCE) or (None, None)
        name = {"zero": "gradient_all_zero", "sign": "sign_flipped", "factor": "off_by_factor"}
        why = {
            "off_by_factor": "`(f(X + h e_i) - f(X - h e_i)) / (2 h)` has no other factor",
            "sign_flipped": "it is f(X + h e_i) - f(X - h e_i), the value after the step up "
            "minus the value after the step down",
        }
        name = name.get(kind, "wrong_rows" if kind else "wrong_gradient")
        words = words or (
            f"differs from attention_lib's numerical_gradient (relative error {error:.2g}) and "
            "matches none of the usual mistakes"
        )
        extra = why.get(
            name, "is every entry nudged by +h and -h, and each difference divided by 2h?"
        )
        raise MISTAKES.stop(name, f"your gradient {words} ({label}): {extra}.")
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
        raise Stop(
            MISTAKES.finding(
                "misjudges_attention",
                "with your central_difference on the attention loss, attention_backward (right) "
                "must agree to 1e-6 and pitfalls.attention_backward_with_sign_error (wrong) must "
                "not; here one of them does not, although it agrees with the library on each "
                "probe: look at its precision.",
            )
        )
    shapes = ", ".join(str(X.shape) for _, _, X, _, _ in _probes()[:6])
    return [
        f"agrees with attention_lib's numerical_gradient (relative error below "
        f"{FLOAT64_TOLERANCE:.0e}) on smooth functions of arrays of shapes {shapes} (the last "
        "a view that is not contiguous) and on the attention loss, where it passes "
        "attention_backward and catches pitfalls.attention_backward_with_sign_error",
        "central: each entry is moved by +h and by -h, one at a time",
        "uses the step h it is given (1e-4, 1e-5 and 3e-6, by keyword and by position); its "
        f"default step, {steps[0]:.0e} (h left out or h=None), lies within "
        f"{STEP_RANGE[0]:.0e}..{STEP_RANGE[1]:.0e}",
        "computes in float64",
        "X comes back exactly as it was given",
    ]


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


def _grad_V_halved(grad_output, cache):
    """Planted: right but for grad_V, which is half what it should be."""
    grad_Q, grad_K, grad_V = attention_backward(grad_output, cache)
    return grad_Q, grad_K, grad_V / 2


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
    "a backward wrong in grad_V alone (half of it)": _grad_V_halved,
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
        raise Stop(
            MISTAKES.finding(
                "returns_verdicts",
                f"gradient_errors {label} returns True/False verdicts (np.allclose?), not the "
                "relative errors: return the three numbers, and compare them with a tolerance "
                "where you judge them.",
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
        MISTAKES.finding(
            "wrong_type",
            f"gradient_errors {label} should return three numbers, the relative errors of "
            f"(grad_Q, grad_K, grad_V), got {got}.",
        )
    )


def _verdicts(errors):
    return ", ".join(
        f"{n} {e:.2g}" for n, e in zip(("grad_Q", "grad_K", "grad_V"), errors, strict=True)
    )


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
            if planted == "attention_backward":
                raise MISTAKES.stop(
                    "rejects_correct_backward",
                    f"gradient_errors rejects attention_backward, which is right ({label}): it "
                    f"returns {_verdicts(errors)}. Is the loss whose numerical gradient you take "
                    "`sum(grad_output * output)`, the one whose gradient backward returns, with "
                    "the mask it is given, and do you compare each gradient with the numerical "
                    "gradient of its own input?",
                )
            if any(
                np.array_equal(says[list(order)], is_right)
                for order in ((2, 1, 0), (1, 0, 2), (0, 2, 1))
            ):
                raise MISTAKES.stop(
                    "errors_wrong_order",
                    f"gradient_errors returns its errors in another order ({label}): it gives "
                    f"{_verdicts(errors)}, but the wrong gradients are "
                    f"{', '.join(n for n, r in zip(_GRAD_NAMES, is_right, strict=True) if not r)}. "
                    "Return (error of grad_Q, of grad_K, of grad_V), in the order backward "
                    "returns them.",
                )
            raise MISTAKES.stop(
                "misses_planted_bug",
                f"gradient_errors gets its verdicts on {planted} wrong ({label}): it returns "
                f"{_verdicts(errors)}, where the true relative errors are {_verdicts(truth)}. "
                "Compare the gradients backward returns with the numerical ones, each with its "
                "own input's.",
            )
    wrong = said["causal", "the planted sign error"]
    scaled = _errors(
        student,
        gradient_errors,
        PLANTED["the planted sign error"],
        "causal",
        "for the planted sign error, loss times 1e6",
        1e6,
    )
    if not np.allclose(scaled[:2], wrong[:2], rtol=1e-2):
        raise MISTAKES.stop(
            "not_relative",
            "gradient_errors is not a relative error: with the loss multiplied by 1e6 its errors "
            f"for the planted bug are {scaled[0]:.2g} for grad_Q, where they are {wrong[0]:.2g}. "
            "A relative error, such as ||a - n|| / (||a|| + ||n||) "
            "(attention_lib.relative_error), does not change when the loss is scaled, so one "
            "tolerance serves every problem.",
        )
    return [
        "gradient_errors gives the true verdict (below 1e-06 or not) for each gradient of "
        f"{len(PLANTED)} backward passes (attention_backward, the planted sign error, one wrong in "
        "grad_V alone, one that ignores the mask, one that applies a causal mask of its own) on "
        f"{len(GRADIENT_PROBLEMS)} problems "
        f"({', '.join(GRADIENT_PROBLEMS)}); the errors are relative (unchanged when the loss is "
        "scaled by 1e6)",
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
        "19.4",
        "c",
        "your own gradient check",
        lambda student: _findings(student, central_difference, gradient_errors, forward, backward),
    )
