"""Checkers for the chapter's exercises 19.1-19.4 that name the mistake.

Each checker takes the student's answer (a dict of choices, or the functions
the exercise asks for), runs it on fixed, seeded probes and returns an
:class:`ExerciseReport`: ``.passed``, a list of :class:`Finding` (each with a
diagnosis name, what is wrong and why, and where to read about it), and a
plain-text display for the notebook. A checker never lets the student's
exception escape: it reports the exception with the line of the student's code
that raised it. An untouched scaffold (``raise NotImplementedError()``) is
reported as "not attempted yet".

How a mistake is named: the checker computes the right answer from the
library (or from central finite differences) and, when the student's answer
differs, the answers that each typical mistake would give on the same probe
(several of them from :mod:`attention_lib.pitfalls`). A mistake is named when
the student's answer matches its model within the same tolerance a right
answer must meet. Printed numbers are rounded to what the verdict needs, so a
report reads the same on every machine.

Tolerances, relative and norm-wise (:func:`attention_lib.relative_error`):

* ``1e-6`` for float64 answers: central differences with a step of ``1e-6``
  agree with an exact float64 gradient to about ``1e-9``;
* ``1e-4`` for float32 answers: about 800 times float32's machine epsilon
  (``1.2e-7``), room for the rounding of a few products and a row sum, and
  still two orders of magnitude below the smallest error any listed mistake
  makes on the probes (tests/test_exercises.py measures it);
* 19.2 accepts an estimate within four standard errors of ``d_k``, the
  standard error following from the sample count
  (:func:`attention_lib.variance_standard_error`).
"""

from __future__ import annotations

import itertools
import linecache
import re
import sysconfig
import textwrap
import traceback
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import pitfalls
from .attention import attention_forward, masked_softmax, softmax_backward
from .gradcheck import numerical_gradient, relative_error
from .masks import causal_mask
from .variance import variance_standard_error

__all__ = [
    "ExerciseReport",
    "Finding",
    "check_exercise_19_1",
    "check_exercise_19_2",
    "check_exercise_19_3",
    "check_exercise_19_4",
]

FLOAT64_TOLERANCE = 1e-6
FLOAT32_TOLERANCE = 1e-4
STANDARD_ERRORS = 4.0  # 19.2: |estimate - d_k| must stay below this many standard errors
WIDTH = 88  # characters per line of a report


class Finding(NamedTuple):
    """One thing a checker found wrong.

    ``diagnosis`` is a short fixed name (for example ``"no_scaling"``) that
    tests and graders can rely on; ``message`` says what is wrong and why;
    ``hint`` says where the chapter and the series explain it.
    """

    diagnosis: str
    message: str
    hint: str = ""


@dataclass(frozen=True)
class ExerciseReport:
    """What a checker found: ``.passed``, ``.findings`` and a readable display.

    ``attempted`` is False when the answer is still the untouched scaffold
    (then the one finding, ``not_attempted``, says which part);
    ``checked`` lists what a passing answer was checked against.
    """

    exercise: str
    title: str
    findings: tuple = ()
    checked: tuple = ()
    attempted: bool = True
    tolerance_note: str = field(default="", compare=False)

    @property
    def passed(self):
        """True when the answer was attempted and nothing is wrong."""
        return self.attempted and not self.findings

    @property
    def diagnoses(self):
        """The diagnosis names of the findings, in order."""
        return tuple(finding.diagnosis for finding in self.findings)

    def __str__(self):
        head = f"Exercise {self.exercise} · {self.title}: "
        if not self.attempted:
            lines = [head + "not attempted yet"]
            lines += [line for finding in self.findings for line in _wrap(finding.message, "  ")]
        elif self.passed:
            lines = [head + "passed"]
            lines += [line for note in self.checked for line in _wrap(note, "  ✓ ", "    ")]
        else:
            count = len(self.findings)
            lines = [head + f"not yet ({count} problem{'s' if count > 1 else ''})"]
            for finding in self.findings:
                lines += _wrap(f"{finding.message} [{finding.diagnosis}]", "  ✗ ", "    ")
                if finding.hint:
                    lines += _wrap("Read: " + finding.hint, "    ")
        if self.tolerance_note and self.attempted:
            lines += _wrap(self.tolerance_note, "  ")
        return "\n".join(lines)

    def __repr__(self):
        return str(self)


_NOT_ATTEMPTED = (
    "{what} still raises NotImplementedError. Replace `# YOUR CODE HERE` and the `raise` line "
    "with your answer, run that cell, then run this one again."
)


_CODE_SPAN = re.compile(r"`[^`]*`")


def _wrap(text, first_indent, later_indent=None):
    """Wrap ``text`` to WIDTH columns, never inside a `code span`."""
    later_indent = first_indent if later_indent is None else later_indent
    # Spaces inside code spans become no-break spaces while wrapping, then spaces again.
    text = _CODE_SPAN.sub(lambda span: span[0].replace(" ", "\xa0"), text)
    paragraphs = text.split("\n")
    lines = []
    for number, paragraph in enumerate(paragraphs):
        indent = first_indent if number == 0 else later_indent
        lines += textwrap.wrap(
            paragraph,
            WIDTH,
            initial_indent=indent,
            subsequent_indent=later_indent,
            break_on_hyphens=False,
        ) or [indent.rstrip()]
    return [line.replace("\xa0", " ") for line in lines]


# --------------------------------------------------------------------------------------
# Calling the student's code safely

_LIBRARY_DIR = Path(__file__).resolve().parent
_SYSTEM_DIRS = tuple(
    {
        str(Path(path).resolve())
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_paths().get(key))
    }
)


class _NotAttempted(Exception):
    """The answer is still the scaffold; the message says which part and what to do."""


class _Stop(Exception):
    """Stop checking: the answer is wrong in a way that makes further probes meaningless."""

    def __init__(self, *findings):
        super().__init__(findings)
        self.findings = findings


def _is_students(filename):
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return True
    if path.is_relative_to(_LIBRARY_DIR):
        return False
    return not any(str(path).startswith(system) for system in _SYSTEM_DIRS)


def _where(error):
    """The student's frames of ``error``'s traceback, as 'line N in f: source' lines."""
    frames = traceback.extract_tb(error.__traceback__)[1:]  # [0] is the checker's call
    lines = []
    for frame in frames:
        if not _is_students(frame.filename):
            continue
        source = frame.line or linecache.getline(frame.filename, frame.lineno).strip()
        lines.append(f"line {frame.lineno} in {frame.name}" + (f": {source}" if source else ""))
    return lines


def _call(function, name, *args, **kwargs):
    """Call the student's ``function``; its exceptions become findings, warnings are silenced.

    Floating-point warnings are switched off: the checker looks at the values
    (an overflow shows up as inf or NaN and is diagnosed by name).
    """
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return function(*args, **kwargs)
    except NotImplementedError:
        what = f"`{getattr(function, '__name__', name)}`"
        raise _NotAttempted(_NOT_ATTEMPTED.format(what=what)) from None
    except Exception as error:
        where = _where(error)
        detail = f"{type(error).__name__}: {error}"
        message = f"{name} raised {detail}"
        if where:
            message += "\n" + "\n".join(f"  at {line}" for line in where[-3:])
        hint = "the lines above are in your code; call it on a small input for the full traceback"
        raise _Stop(Finding("raised", message, hint)) from None


def _require_callable(value, name):
    if not callable(value):
        raise _Stop(
            Finding(
                "not_a_function",
                f"{name} should be a function, got {type(value).__name__}. Pass the function "
                f"itself, without calling it: check(f), not check(f()).",
            )
        )


def _as_result(value, what, expected_shape):
    """The student's returned array, or a finding when it is None, not numeric or misshapen."""
    if value is None:
        raise _Stop(
            Finding(
                "returned_none",
                f"{what} is None: the function computes something but does not return it "
                "(a missing `return`?).",
            )
        )
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        array = None
    if array is None or array.dtype == object:
        raise _Stop(
            Finding("wrong_type", f"{what} should be a NumPy array, got {type(value).__name__}.")
        )
    if array.dtype.kind not in "fiu" or array.dtype == np.float16:
        raise _Stop(
            Finding(
                "wrong_dtype",
                f"{what} has dtype {array.dtype}; expected float64 or float32 "
                "(float16 is too coarse for a gradient check).",
            )
        )
    if array.shape != tuple(expected_shape):
        raise _Stop(
            Finding(
                "wrong_shape",
                f"{what} has shape {array.shape}, expected {tuple(expected_shape)}.",
            )
        )
    if not np.all(np.isfinite(array)):
        raise _Stop(
            Finding(
                "not_finite",
                f"{what} contains NaN or inf (at {int(np.sum(~np.isfinite(array)))} of "
                f"{array.size} entries) on ordinary inputs.",
            )
        )
    return array


def _tolerance(*arrays):
    dtypes = [np.asarray(array).dtype for array in arrays]
    return FLOAT32_TOLERANCE if np.float32 in dtypes else FLOAT64_TOLERANCE


def _matches(answer, model, tolerance):
    model = np.asarray(model)
    if model.shape != np.shape(answer) or not np.all(np.isfinite(model)):
        return False
    return relative_error(answer, model) < tolerance


def _first_match(answer, models, tolerance):
    """Name of the first mistake model ``answer`` matches, or None."""
    for name, model in models:
        if _matches(answer, model, tolerance):
            return name
    return None


def _run(exercise, title, check, tolerance_note=""):
    try:
        checked = check()
    except _NotAttempted as scaffold:
        finding = Finding("not_attempted", str(scaffold))
        return ExerciseReport(exercise, title, (finding,), attempted=False)
    except _Stop as stop:
        return ExerciseReport(exercise, title, stop.findings, tolerance_note=tolerance_note)
    except Exception as error:  # an answer too odd for the checks above: still no traceback
        finding = Finding(
            "unreadable_answer",
            f"the checker could not judge this answer ({type(error).__name__}: {error}). Check "
            "that it returns what the exercise asks for, in the types and shapes it states.",
        )
        return ExerciseReport(exercise, title, (finding,), tolerance_note=tolerance_note)
    return ExerciseReport(exercise, title, checked=tuple(checked), tolerance_note=tolerance_note)


# --------------------------------------------------------------------------------------
# Exercise 19.1: the soft lookup, a self-check

ROLE_CHOICES = {
    "a": "the rows that are mixed into the output, in proportions set by the weights",
    "b": "what one position is looking for; it is compared with every key",
    "c": "what a position offers to be found by; it is compared with the query and "
    "never reaches the output",
}
VALUES_DOUBLED_CHOICES = {
    "a": "the weights stay the same and the output doubles",
    "b": "the weights double and the output grows four times",
    "c": "the weights move towards the keys whose values are largest",
    "d": "nothing changes, because softmax normalises",
}
EQUAL_SCORES_CHOICES = {
    "a": "the value row of the first key",
    "b": "the sum of the four value rows",
    "c": "the average of the four value rows",
    "d": "a row of zeros",
}

_HINT_19_1 = "chapter 19.1; notebook 01_soft_lookup.ipynb"

# For each question: the right choice, and why each wrong choice is wrong.
_QUESTIONS_19_1 = {
    "query": (
        "b",
        {
            "a": "Queries never reach the output (O = A V has no Q in it). A query only "
            "decides, through its scores with the keys, how much of each value to take.",
            "c": "That describes a key. Query and key meet in the score q·k, but the query is "
            "the side that asks: one row per output position.",
        },
    ),
    "key": (
        "c",
        {
            "a": "Keys only enter the scores Q Kᵀ; they never reach the output. The rows that "
            "are mixed are the values.",
            "b": "That is the query, the side that asks. A key is what a position can be found by.",
        },
    ),
    "value": (
        "a",
        {
            "b": "Values take no part in the scores, so they cannot be what is compared; "
            "they are what is handed over: O = A V.",
            "c": "Values take no part in the scores: changing V never changes the weights. "
            "They are exactly what reaches the output: O = A V.",
        },
    ),
    "values_doubled": (
        "a",
        {
            "b": "The weights are a softmax of the scores, which come from Q and K alone, so "
            "they do not change; each row still sums to 1.",
            "c": "That is the misconception 'the values decide the weights'. The scores, hence "
            "the weights, come from Q and K only.",
            "d": "Softmax normalises the weights, not the output. O = A V is linear in V: "
            "twice the values, twice the output.",
        },
    ),
    "equal_scores": (
        "c",
        {
            "a": "That would be a hard lookup (argmax). Softmax of four equal scores gives four "
            "equal weights, 1/4 each.",
            "b": "The weights of a row sum to 1, so each of four equal weights is 1/4, not 1.",
            "d": "Zeros come only from a row with no readable key (fully masked). Equal scores "
            "give `exp(s) / (4 exp(s))` = 1/4 per key.",
        },
    ),
}
_CHOICES_19_1 = {
    "query": ROLE_CHOICES,
    "key": ROLE_CHOICES,
    "value": ROLE_CHOICES,
    "values_doubled": VALUES_DOUBLED_CHOICES,
    "equal_scores": EQUAL_SCORES_CHOICES,
}


def _findings_19_1(answers):
    if callable(answers):
        answers = _call(answers, "your answers function")
    if not isinstance(answers, Mapping):
        raise _Stop(
            Finding(
                "wrong_type",
                f"the answers should be a dict such as {{'query': 'b', ...}}, got "
                f"{type(answers).__name__}.",
            )
        )
    unknown = sorted(map(str, set(answers) - set(_QUESTIONS_19_1)))
    if all(answers.get(question) is None for question in _QUESTIONS_19_1) and not unknown:
        raise _NotAttempted("No question has an answer yet: give each one a letter.")
    findings = [
        Finding(
            "unknown_question",
            f"there is no question {name!r}; the questions are {', '.join(_QUESTIONS_19_1)}.",
        )
        for name in unknown
    ]
    for question, (right, explanations) in _QUESTIONS_19_1.items():
        choice = answers.get(question)
        choices = _CHOICES_19_1[question]
        if choice is None:
            findings.append(Finding("not_answered", f"{question}: not answered yet."))
            continue
        choice = str(choice).strip().lower()
        if choice not in choices:
            findings.append(
                Finding(
                    "invalid_choice",
                    f"{question}: {choice!r} is not one of the choices {', '.join(choices)}.",
                )
            )
        elif choice != right:
            findings.append(
                Finding(
                    f"{question}_choice",
                    f"{question}: you chose ({choice}) {choices[choice]}. {explanations[choice]}",
                    _HINT_19_1,
                )
            )
    if findings:
        raise _Stop(*findings)
    return [
        "the query asks, the key is what is found, the value is what is handed over",
        "doubling the values doubles the output and leaves the weights alone",
        "equal scores give equal weights: the output is the average of the values",
    ]


def check_exercise_19_1(answers):
    """Check the soft-lookup self-check of exercise 19.1.

    Parameters
    ----------
    answers : dict or callable
        ``{"query": ..., "key": ..., "value": ..., "values_doubled": ...,
        "equal_scores": ...}``, each a choice letter (see ``ROLE_CHOICES``,
        ``VALUES_DOUBLED_CHOICES``, ``EQUAL_SCORES_CHOICES``); or a function
        returning that dict. ``None`` marks a question not answered yet.

    Returns
    -------
    ExerciseReport
        One finding per wrong choice, explaining why it is wrong.

    Examples
    --------
    >>> report = check_exercise_19_1({"query": "b", "key": "c", "value": "c",
    ...                               "values_doubled": "a", "equal_scores": "c"})
    >>> report.passed, report.diagnoses
    (False, ('value_choice',))
    """
    return _run("19.1", "soft lookup", lambda: _findings_19_1(answers))


# --------------------------------------------------------------------------------------
# Exercise 19.2: the variance of a dot product, by Monte Carlo

VARIANCE_WIDTHS = (1, 8, 64, 512)
SPREAD_WIDTH = 16
SPREAD_SEEDS = 8
# Four standard errors must stay within 10% of d_k at every width, or the check cannot
# tell d_k from a nearby wrong value. The standard error is largest relative to d_k at
# width 1: 4 * sqrt(8 / n) <= 0.1 needs n >= 12,800.
MIN_RELATIVE_PRECISION = 0.1
_HINT_19_2 = "chapter 19.2, eq. 19.2; notebook 02_why_sqrt_dk.ipynb"


def _call_estimate(estimate, width, samples, seed):
    value = _call(estimate, "your estimate", width, samples, seed)
    if value is None:
        raise _Stop(
            Finding(
                "returned_none",
                f"estimate({width}, {samples}, {seed}) returned None: a missing `return`?",
            )
        )
    try:
        number = float(np.asarray(value).reshape(()))
    except (TypeError, ValueError):
        raise _Stop(
            Finding(
                "wrong_type",
                f"estimate({width}, {samples}, {seed}) should return one number, got "
                f"{type(value).__name__} of shape {np.shape(value)}.",
            )
        ) from None
    if not np.isfinite(number):
        raise _Stop(Finding("not_finite", f"estimate({width}, {samples}, {seed}) is {number}."))
    return number


def _variance_models(width, samples):
    """(name, expected value, tolerance) for the right answer and each typical mistake.

    Each tolerance is four standard errors of that answer's own estimate (the
    delta method for the transformed ones).
    """
    error = STANDARD_ERRORS * variance_standard_error(width, samples)
    if width == 1:
        wrong_axis = (0.0, 1e-9 * samples)  # the variance of a single sum is 0
    else:
        # Summing over the samples gives `width` numbers of variance `samples`; the
        # variance of those few numbers is itself noisy: sd about samples * sqrt(2 / width).
        wrong_axis = ((width - 1) / width * samples, 5 * samples * np.sqrt(2 / width))
    return [
        ("right", width, error),
        ("std_instead_of_variance", np.sqrt(width), error / (2 * np.sqrt(width))),
        ("divided_by_d_k", 1 / width, error / width**2),
        ("divided_by_sqrt_d_k", 1.0, error / width),
        ("sum_over_wrong_axis", *wrong_axis),
    ]


_VARIANCE_MISTAKES = {
    "std_instead_of_variance": "your estimates are close to sqrt(d_k), the standard deviation of "
    "q·k, not its variance d_k (np.std instead of np.var?).",
    "divided_by_d_k": "your estimates are close to 1/d_k: the dot products were divided by d_k "
    "(or averaged over the width with np.mean) before taking the variance. The exercise asks "
    "for the variance of the raw sum q·k.",
    "divided_by_sqrt_d_k": "your estimates are close to 1 at every width: that is the variance of "
    "the SCALED score `q·k / sqrt(d_k)`. The exercise asks for the raw q·k, whose variance d_k "
    "is what the scale corrects.",
    "sum_over_wrong_axis": "your estimates track the sample count, not d_k: the products were "
    "summed over the samples instead of over the width (axis=0 instead of axis=1 for arrays "
    "of shape (samples, width)).",
}


def _findings_19_2(estimate, samples, widths, seed):
    _require_callable(estimate, "estimate")
    worst = max(variance_standard_error(width, samples) / width for width in widths)
    if STANDARD_ERRORS * worst > MIN_RELATIVE_PRECISION:
        needed = max(
            int(np.ceil((2 + 6 / width) * (STANDARD_ERRORS / MIN_RELATIVE_PRECISION) ** 2))
            for width in widths
        )
        raise _Stop(
            Finding(
                "too_few_samples",
                f"with {samples:,} samples the estimate's standard error is up to "
                f"{100 * worst:.0f}% of d_k, so four standard errors cannot tell d_k from a "
                f"value 10% away. Use at least {needed:,} samples.",
                "variance_standard_error(width, samples) in attention_lib.variance",
            )
        )
    estimates = {width: _call_estimate(estimate, width, samples, seed) for width in widths}
    if _call_estimate(estimate, widths[-1], samples, seed) != estimates[widths[-1]]:
        raise _Stop(
            Finding(
                "not_reproducible",
                "two calls with the same seed gave different estimates: draw the numbers from "
                "np.random.default_rng(seed), so that Restart and Run All gives the same result.",
            )
        )
    within = {}
    for width in widths:
        for name, expected, tolerance in _variance_models(width, samples):
            inside = abs(estimates[width] - expected) <= tolerance
            within[name] = within.get(name, True) and inside
    if not within["right"]:
        for name, message in _VARIANCE_MISTAKES.items():
            if within[name]:
                raise _Stop(Finding(name, message, _HINT_19_2))
    spread_seeds = range(seed + 1, seed + 1 + SPREAD_SEEDS)
    spread = np.std(
        [_call_estimate(estimate, SPREAD_WIDTH, samples, s) for s in spread_seeds], ddof=1
    )
    expected_spread = variance_standard_error(SPREAD_WIDTH, samples)
    # With 8 seeds the sample sd of a right estimate exceeds 3x its standard error with
    # probability below 1e-9 (chi-square with 7 degrees of freedom above 63).
    if spread > 3 * expected_spread:
        raise _Stop(
            Finding(
                "too_few_samples",
                f"at d_k = {SPREAD_WIDTH} your estimates vary from seed to seed "
                f"{spread / expected_spread:.0f} times more than {samples:,} samples allow: "
                "the function draws fewer samples than it is asked for (is the `samples` "
                "argument used?).",
                _HINT_19_2,
            )
        )
    if not within["right"]:
        table = ", ".join(f"d_k={w}: {estimates[w]:.3g}" for w in widths)
        raise _Stop(
            Finding(
                "wrong_estimate",
                f"your estimates ({table}) are not within four standard errors of d_k, and "
                "they match none of the usual mistakes. Estimate Var(q·k) for q, k with "
                "independent standard-normal entries.",
                _HINT_19_2,
            )
        )
    return [
        f"within four standard errors of d_k at d_k = {', '.join(map(str, widths))} "
        f"({samples:,} samples)",
        f"varies from seed to seed as much as {samples:,} samples should",
        "the same seed gives the same estimate",
    ]


def check_exercise_19_2(estimate, *, samples=20_000, widths=VARIANCE_WIDTHS, seed=0):
    """Check a Monte Carlo estimate of ``Var(q · k)`` (exercise 19.2).

    ``estimate(width, samples, seed)`` must return the variance of ``q · k``
    over ``samples`` pairs of vectors with ``width`` independent
    standard-normal entries, drawn from ``np.random.default_rng(seed)``.

    The estimate passes when it lies within four standard errors of ``d_k``
    at every width, the standard error following from ``samples``
    (:func:`attention_lib.variance_standard_error`); when it varies from seed
    to seed as a ``samples``-sized estimate should; and when one seed gives
    one answer. Otherwise the usual mistakes are named: the standard
    deviation instead of the variance, the sum over the wrong axis, a
    division by ``d_k`` or ``sqrt(d_k)``, too few samples.

    Parameters
    ----------
    estimate : callable
        ``estimate(width, samples, seed) -> float``.
    samples : int, default 20_000
        Passed to ``estimate``; at least 12,800 at width 1, or the check
        cannot tell ``d_k`` from a value 10% away (reported as too few).
    widths : tuple of int, default (1, 8, 64, 512)
    seed : int, default 0

    Returns
    -------
    ExerciseReport

    Examples
    --------
    >>> def std_by_mistake(width, samples, seed):
    ...     rng = np.random.default_rng(seed)
    ...     q, k = rng.standard_normal((2, samples, width))
    ...     return float(np.std(np.sum(q * k, axis=1)))
    >>> check_exercise_19_2(std_by_mistake, widths=(1, 8, 64)).diagnoses
    ('std_instead_of_variance',)
    """
    samples = _whole(samples, "samples", minimum=2)
    seed = _whole(seed, "seed", minimum=0)
    widths = tuple(_whole(width, "widths", minimum=1) for width in widths)
    if not widths:
        raise ValueError("widths must name at least one width, got an empty tuple.")
    note = (
        "Tolerance: four standard errors, d_k * sqrt((2 + 6 / d_k) / samples); a right estimate "
        "fails with probability below 1e-4 per width."
    )
    return _run(
        "19.2",
        "dot-product variance",
        lambda: _findings_19_2(estimate, samples, widths, seed),
        note,
    )


def _whole(value, name, *, minimum):
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be a whole number, got {type(value).__name__} {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}.")
    return int(value)


# --------------------------------------------------------------------------------------
# Exercise 19.3: the softmax row backward

_HINT_19_3 = "chapter 19.3, eq. 19.4; notebook 04_backward.ipynb (the softmax step)"
# Shapes probed: non-square, square (a row term broadcast along the wrong axis stays
# silent there), batched, and a single row. Rows are always the last axis.
SOFTMAX_PROBE_SHAPES = ((3, 5), (4, 4), (2, 3, 6), (6,))


def _softmax_probe(shape, seed):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(shape)
    mask = np.ones(shape, dtype=bool)
    mask[..., -1] = False  # a masked key in every row: its weight, and gradient, are 0
    weights = masked_softmax(scores, mask)
    grad_weights = rng.standard_normal(shape)
    return scores, mask, weights, grad_weights


def _softmax_truth(scores, mask, grad_weights):
    """grad_scores by central differences of sum(grad_weights * softmax(scores))."""

    def loss(scores):
        return float(np.sum(grad_weights * masked_softmax(scores, mask)))

    return numerical_gradient(loss, {"scores": scores}, "scores")


def _softmax_jacobian_product(weights, grad_weights):
    """grad_scores from the full Jacobian diag(a) - a aᵀ of each row (symmetric)."""
    rows = weights.reshape(-1, weights.shape[-1])
    grads = grad_weights.reshape(rows.shape)
    out = np.stack([(np.diag(a) - np.outer(a, a)) @ g for a, g in zip(rows, grads, strict=True)])
    return out.reshape(weights.shape)


def _softmax_backward_models(weights, grad_weights):
    row_dot = np.sum(grad_weights * weights, axis=-1, keepdims=True)
    models = [
        ("row_term_sign", pitfalls.softmax_backward_sign_error(weights, grad_weights)),
        ("row_term_missing", weights * grad_weights),
        ("weights_factor_missing", grad_weights - row_dot),
    ]
    for axis in range(weights.ndim - 1):
        other = np.sum(grad_weights * weights, axis=axis, keepdims=True)
        models.append(("row_term_wrong_axis", weights * (grad_weights - other)))
    if weights.ndim >= 2 and weights.shape[-1] == weights.shape[-2]:
        # the row sums without keepdims broadcast along the rows instead of the columns
        flat = np.sum(grad_weights * weights, axis=-1)[..., None, :]
        models.append(("row_term_wrong_axis", weights * (grad_weights - flat)))
    return models


_SOFTMAX_MISTAKES = {
    "row_term_sign": "the row term is added instead of subtracted: you compute "
    "`A * (grad_A + rowsum(grad_A * A))`. Each row of a right grad_scores sums to zero, because "
    "adding a constant to a row of scores leaves its softmax unchanged.",
    "row_term_missing": "the row term is missing: you compute `A * grad_A`. The weights of a row "
    "share one denominator, so raising one score lowers every other weight; "
    "`rowsum(grad_A * A)` is that shared effect.",
    "weights_factor_missing": "the factor A is missing: you compute `grad_A - rowsum(grad_A * A)`. "
    "The Jacobian of softmax is `diag(a) - a aᵀ`, so every entry is scaled by its weight (and "
    "a masked key, weight 0, gets gradient 0).",
    "row_term_wrong_axis": "the row term is summed over the wrong axis: `rowsum(grad_A * A)` "
    "must run over the last axis (the keys of one row), with keepdims=True so that it "
    "subtracts along that row.",
}


def _findings_19_3(softmax_row_backward):
    _require_callable(softmax_row_backward, "softmax_row_backward")
    checked_shapes = []
    for number, shape in enumerate(SOFTMAX_PROBE_SHAPES):
        scores, mask, weights, grad_weights = _softmax_probe(shape, seed=193 + number)
        answer = _as_result(
            _call(
                softmax_row_backward, "softmax_row_backward", weights.copy(), grad_weights.copy()
            ),
            f"softmax_row_backward(weights, grad_weights) for weights of shape {shape}",
            shape,
        )
        tolerance = _tolerance(answer)
        truth = _softmax_truth(scores, mask, grad_weights)
        error = relative_error(answer, truth)
        jacobian_error = relative_error(answer, _softmax_jacobian_product(weights, grad_weights))
        if error >= tolerance or jacobian_error >= tolerance:
            mistake = _first_match(
                answer, _softmax_backward_models(weights, grad_weights), tolerance
            )
            if mistake is not None:
                raise _Stop(Finding(mistake, _SOFTMAX_MISTAKES[mistake], _HINT_19_3))
            row_sums = np.abs(np.sum(answer, axis=-1)).max()
            raise _Stop(
                Finding(
                    "wrong_gradient",
                    f"for weights of shape {shape}, grad_scores differs from finite differences "
                    f"(relative error {error:.2g}, tolerance {tolerance:.0e}). "
                    + (
                        "Each row of your answer sums to zero, as it should; look at the "
                        "product with the weights."
                        if row_sums < 1e-6
                        else "A right answer's rows sum to zero; yours do not."
                    ),
                    _HINT_19_3,
                )
            )
        checked_shapes.append(str(shape))
    return [
        f"agrees with central finite differences and with the full Jacobian `diag(a) - a aᵀ` for "
        f"weights of shapes {', '.join(checked_shapes)} (relative error below "
        f"{FLOAT64_TOLERANCE:.0e} in float64, {FLOAT32_TOLERANCE:.0e} in float32)",
        "a masked key (weight 0) gets gradient 0",
    ]


def check_exercise_19_3(softmax_row_backward):
    """Check ``softmax_row_backward(weights, grad_weights) -> grad_scores`` (exercise 19.3).

    Rows are the last axis: ``weights`` and ``grad_weights`` have shape
    ``(..., T)`` and each ``weights[..., :]`` is one softmax row. The answer
    is compared with central finite differences of the softmax and with the
    full Jacobian ``diag(a) - a aᵀ``, on a non-square, a square, a batched
    and a one-row input, each with a masked (zero-weight) key. A wrong answer
    is matched against the usual mistakes: the row term's sign, the row term
    missing, the factor ``a`` missing, the row term over the wrong axis.

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
    return _run("19.3", "softmax row backward", lambda: _findings_19_3(softmax_row_backward))


# --------------------------------------------------------------------------------------
# Exercise 19.4: masked attention, forward and backward, gradient-checked

_HINT_FORWARD = "chapter 19.1-19.2, eq. 19.1 and listing 19.1; notebooks 01 and 03"
_HINT_MASK = "chapter 19.2 (masks); notebook 03_masks.ipynb"
_HINT_BACKWARD = "chapter 19.3, eqs. 19.3-19.5; notebook 04_backward.ipynb"


def _softmax_any_axis(scores, axis):
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    exp = np.exp(shifted)
    return exp / np.sum(exp, axis=axis, keepdims=True)


def _forward_models(Q, K, V, mask):
    """Outputs that each typical forward-pass mistake gives on these inputs."""
    d_k = Q.shape[-1]
    raw = Q @ np.swapaxes(K, -1, -2)
    mask = np.ones(raw.shape, dtype=bool) if mask is None else mask
    scaled = raw / np.sqrt(d_k)
    blocked = np.where(mask, scaled, -np.inf)
    with np.errstate(invalid="ignore"):
        wrong_axis = np.nan_to_num(_softmax_any_axis(blocked, axis=-2))
    return [
        ("no_scaling", masked_softmax(raw, mask) @ V),
        ("scaled_by_d_k", masked_softmax(raw / d_k, mask) @ V),
        ("softmax_wrong_axis", wrong_axis @ V),
        ("softmax_wrong_axis", _softmax_any_axis(scaled, axis=-2) * mask @ V),
        ("mask_after_softmax", pitfalls.mask_after_softmax(scaled, mask) @ V),
        ("mask_inverted", masked_softmax(scaled, ~mask) @ V),
        ("mask_inverted", masked_softmax(scaled, np.swapaxes(mask, -1, -2)) @ V),
        ("mask_ignored", masked_softmax(scaled) @ V),
    ]


_FORWARD_MISTAKES = {
    "no_scaling": "the scores are not scaled: you compute `softmax(Q Kᵀ) V`. Divide the scores by "
    "sqrt(d_k) so that their variance stays near 1 whatever the width.",
    "scaled_by_d_k": "the scores are divided by d_k instead of sqrt(d_k). The variance of q·k is "
    "d_k, so its standard deviation, the right divisor, is sqrt(d_k).",
    "softmax_wrong_axis": "the softmax runs over the wrong axis: the weights of each QUERY (a row, "
    "the last axis) must sum to 1, not the weights each key receives (a column).",
    "mask_after_softmax": "the mask is applied after the softmax: blocked keys still take their "
    "share of the denominator, so the rows sum to less than 1 and the future leaks into the "
    "normaliser. Set blocked scores to -inf before the softmax.",
    "mask_inverted": "the mask is inverted: queries read the keys the mask blocks (the future) "
    "and skip the ones it allows. True in the mask means 'may read'.",
    "mask_ignored": "the mask is not applied: every query reads every key, the future included.",
}

_BACKWARD_MISTAKES = {
    "row_term_sign": "the softmax row term has the wrong sign: grad_scores = "
    "`A * (grad_A + rowsum(grad_A * A))` instead of `A * (grad_A - rowsum(grad_A * A))`.",
    "row_term_missing": "the softmax row term is missing: grad_scores = `A * grad_A`. Subtract "
    "`rowsum(grad_A * A)` first.",
    "grad_K_not_transposed": "grad_K is not transposed: it must be `grad_Sᵀ Q / sqrt(d_k)` (key j "
    "collects the gradient of column j of the scores), not `grad_S Q / sqrt(d_k)`.",
    "grad_K_missing_scale": "grad_K misses the scale: the scores are `Q Kᵀ / sqrt(d_k)`, so "
    "grad_K = `grad_Sᵀ Q / sqrt(d_k)`.",
    "grad_Q_missing_scale": "grad_Q misses the scale: the scores are `Q Kᵀ / sqrt(d_k)`, so "
    "grad_Q = `grad_S K / sqrt(d_k)`.",
    "grad_V_not_transposed": "grad_V must be `Aᵀ grad_O` (value j collects from every query that "
    "read it), not `A grad_O`.",
}


def _backward_models(Q, K, V, mask, grad_output):
    """(name, (grad_Q, grad_K, grad_V)) that each typical backward mistake gives."""
    _, cache = attention_forward(Q, K, V, mask, return_cache=True)
    weights, scale = cache.weights, cache.scale
    grad_V = np.swapaxes(weights, -1, -2) @ grad_output
    grad_weights = grad_output @ np.swapaxes(V, -1, -2)
    grad_scores = softmax_backward(weights, grad_weights)
    grad_Q = grad_scores @ K * scale
    grad_K = np.swapaxes(grad_scores, -1, -2) @ Q * scale
    no_row_term = weights * grad_weights
    return [
        ("row_term_sign", pitfalls.attention_backward_with_sign_error(grad_output, cache)),
        (
            "row_term_missing",
            (no_row_term @ K * scale, np.swapaxes(no_row_term, -1, -2) @ Q * scale, grad_V),
        ),
        ("grad_K_not_transposed", (grad_Q, grad_scores @ Q * scale, grad_V)),
        ("grad_K_missing_scale", (grad_Q, grad_K / scale, grad_V)),
        ("grad_Q_missing_scale", (grad_Q / scale, grad_K, grad_V)),
        ("grad_V_not_transposed", (grad_Q, grad_K, weights @ grad_output)),
    ]


def _reference(Q, K, V, mask, grad_output):
    """Output and gradients of the library's pass; the gradients by central differences."""
    output = attention_forward(Q, K, V, mask)
    inputs = {"Q": Q, "K": K, "V": V}

    def loss(Q, K, V):
        return float(np.sum(grad_output * attention_forward(Q, K, V, mask)))

    grads = tuple(numerical_gradient(loss, inputs, name) for name in ("Q", "K", "V"))
    return output, grads


def _call_forward(forward, Q, K, V, mask):
    """Call the student's forward on copies: an in-place edit must not change our probe."""
    mask = None if mask is None else mask.copy()
    return _call(forward, "forward", Q.copy(), K.copy(), V.copy(), mask=mask)


def _shape_of(value):
    try:
        return np.shape(value)
    except ValueError:  # a ragged list has no shape
        return None


def _first_array(result):
    """``result[0]`` as a float array, or None when it is not one (judged later, with a finding)."""
    if not isinstance(result, tuple | list) or not result:
        return None
    try:
        array = np.asarray(result[0])
    except ValueError:
        return None
    return array if array.dtype.kind == "f" else None


def _require_tuple(result, length, expectation):
    if isinstance(result, tuple | list) and len(result) == length:
        return
    if result is None:
        raise _Stop(Finding("returned_none", f"{expectation}, got None (a missing `return`?)."))
    got = type(result).__name__
    if isinstance(result, tuple | list):
        got += f" of length {len(result)}"
    raise _Stop(Finding("wrong_type", f"{expectation}, got {got}."))


def _run_forward(forward, Q, K, V, mask, label):
    result = _call_forward(forward, Q, K, V, mask)
    _require_tuple(result, 2, "forward should return the pair (output, cache)")
    output_shape = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2]) + (
        Q.shape[-2],
        V.shape[-1],
    )
    output = _as_result(result[0], f"the output of forward {label}", output_shape)
    return output, result[1]


_GRAD_NAMES = ("grad_Q", "grad_K", "grad_V")


def _run_backward(backward, grad_output, cache, inputs, label):
    result = _call(backward, "backward", grad_output.copy(), cache)
    _require_tuple(result, 3, "backward should return the triple (grad_Q, grad_K, grad_V)")
    shapes = [_shape_of(value) for value in result]
    expected = [array.shape for array in inputs]
    reordered = any(
        [shapes[i] for i in order] == expected for order in itertools.permutations(range(3))
    )
    # Shapes that fit only in another order: keep each array as it is; _check_gradients
    # tells from the values which order it is (Q and K often share a shape).
    return tuple(
        _as_result(value, f"{name} from backward {label}", shape if reordered else array.shape)
        for name, value, array, shape in zip(_GRAD_NAMES, result, inputs, shapes, strict=True)
    )


def _wrong_order(order, label):
    """``order[j]`` is the position at which gradient j was returned (None: unknown)."""
    if order is None:
        returned = "the shapes fit (grad_Q, grad_K, grad_V) only in another order"
    else:
        names = ", ".join(_GRAD_NAMES[order.index(i)] for i in range(3))
        returned = f"it returns ({names})"
    return Finding(
        "gradients_wrong_order",
        f"backward {label} returns the gradients in the wrong order: {returned}. The order is "
        "(grad_Q, grad_K, grad_V), like the arguments of forward(Q, K, V).",
        _HINT_BACKWARD,
    )


def _probe_inputs(batch, T_q, T_k, d_k, d_v, seed, score_size=1.0):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((*batch, T_q, d_k)) * score_size
    K = rng.standard_normal((*batch, T_k, d_k)) * score_size
    V = rng.standard_normal((*batch, T_k, d_v))
    grad_output = rng.standard_normal((*batch, T_q, d_v))
    return Q, K, V, grad_output


def _diagnose_forward(output, Q, K, V, mask, tolerance, label):
    mistake = _first_match(output, _forward_models(Q, K, V, mask), tolerance)
    if mistake is not None:
        hint = _HINT_MASK if mistake.startswith("mask") else _HINT_FORWARD
        return Finding(mistake, _FORWARD_MISTAKES[mistake], hint)
    return Finding(
        "wrong_output",
        f"the output of forward {label} differs from `softmax(Q Kᵀ / sqrt(d_k)) V` with the mask "
        f"(relative error {relative_error(output, attention_forward(Q, K, V, mask)):.2g}) and "
        "matches none of the usual mistakes.",
        _HINT_FORWARD,
    )


def _check_gradients(grads, truth, tolerance, Q, K, V, mask, grad_output, label, leak_probe=None):
    """Compare with the truth; when wrong, name the mistake (order, models, then a leak)."""
    errors = [
        relative_error(g, t) if g.shape == t.shape else np.inf
        for g, t in zip(grads, truth, strict=True)
    ]
    if max(errors) < tolerance:
        return
    for order in itertools.permutations(range(3)):
        if order != (0, 1, 2) and all(
            _matches(grads[i], truth[j], tolerance) for j, i in enumerate(order)
        ):
            raise _Stop(_wrong_order(order, label))
    if np.isinf(max(errors)):  # shapes that fit only in another order, values in none
        raise _Stop(_wrong_order(None, label))
    for name, model in _backward_models(Q, K, V, mask, grad_output):
        if all(
            _matches(grad, model_grad, tolerance)
            for grad, model_grad in zip(grads, model, strict=True)
        ):
            raise _Stop(Finding(name, _BACKWARD_MISTAKES[name], _HINT_BACKWARD))
    if leak_probe is not None:
        leak_probe()
    wrong = ", ".join(
        f"{name} (relative error {error:.2g})"
        for name, error in zip(_GRAD_NAMES, errors, strict=True)
        if error >= tolerance
    )
    raise _Stop(
        Finding(
            "wrong_gradient",
            f"backward {label}: {wrong} disagree with central finite differences (tolerance "
            f"{tolerance:.0e}) and match none of the usual mistakes.",
            _HINT_BACKWARD,
        )
    )


def _check_no_leak(forward, backward, T, d_k, d_v):
    """Only rows 0-1 of grad_output are nonzero: keys 2.. must get exactly no gradient."""
    Q, K, V, grad_output = _probe_inputs((), T, T, d_k, d_v, seed=1941)
    grad_output[2:] = 0.0
    label = f"with mask=causal_mask({T})"
    _, cache = _run_forward(forward, Q, K, V, causal_mask(T), label)
    grads = _run_backward(backward, grad_output, cache, (Q, K, V), label)
    leaked = [
        name
        for name, grad in zip(_GRAD_NAMES, grads, strict=True)
        if np.any(np.abs(grad[2:]) > _tolerance(grad) * np.abs(grad[:2]).max())
    ]
    if leaked:
        raise _Stop(
            Finding(
                "gradient_into_masked",
                f"gradient flows into masked positions: with the causal mask and an output "
                f"gradient only on queries 0 and 1, keys 2-{T - 1} cannot change the loss, yet "
                f"{' and '.join(leaked)} is nonzero there. A masked score has weight 0, so its "
                "score gradient A * (...) must be 0.",
                _HINT_BACKWARD,
            )
        )


def _check_fully_masked_row(forward, backward, T, d_k, d_v):
    Q, K, V, grad_output = _probe_inputs((), T, T, d_k, d_v, seed=1942)
    mask = causal_mask(T)
    mask[2] = False  # query 2 may read nothing
    label = "with a mask whose row 2 is all False"
    raw_output = _first_array(_call_forward(forward, Q, K, V, mask))
    if raw_output is not None and raw_output.shape == (T, d_v):
        if np.isnan(raw_output[2]).any():
            raise _Stop(
                Finding(
                    "masked_row_nan",
                    "a query with no readable key gives NaN: its scores are all -inf, so the row "
                    "maximum is -inf and `-inf - (-inf)` is NaN. Such a row must give weights 0 "
                    "and output 0 (for example, subtract 0 instead of an infinite maximum).",
                    _HINT_MASK,
                )
            )
        if np.allclose(raw_output[2], V.mean(axis=0)):
            raise _Stop(
                Finding(
                    "masked_row_uniform",
                    "a query with no readable key averages every value uniformly: the blocked "
                    "scores were filled with a large negative number instead of -inf, so a "
                    "fully blocked row holds equal scores. It must give output 0.",
                    _HINT_MASK,
                )
            )
    output, cache = _run_forward(forward, Q, K, V, mask, label)
    if np.abs(output[2]).max() > 0:
        raise _Stop(
            Finding(
                "masked_row_not_zero",
                "a query with no readable key must give an output row of zeros (as the library "
                "and PyTorch do); yours is not zero.",
                _HINT_MASK,
            )
        )
    reference, truth = _reference(Q, K, V, mask, grad_output)
    tolerance = _tolerance(output)
    if relative_error(output, reference) >= tolerance:
        raise _Stop(_diagnose_forward(output, Q, K, V, mask, tolerance, label))
    grads = _run_backward(backward, grad_output, cache, (Q, K, V), label)
    _check_gradients(grads, truth, _tolerance(*grads), Q, K, V, mask, grad_output, label)


def _check_large_scores(forward, T, d_k, d_v):
    # Entries of size 30 give scores q·k / sqrt(d_k) of several hundred to a few
    # thousand: exp overflows (above ~709 in float64) unless the row maximum is
    # subtracted first.
    Q, K, V, _ = _probe_inputs((), T, T, d_k, d_v, seed=1943, score_size=30.0)
    mask = causal_mask(T)
    output = _first_array(_call_forward(forward, Q, K, V, mask))
    if output is not None and not np.all(np.isfinite(output)):
        raise _Stop(
            Finding(
                "no_max_subtraction",
                "with large scores (several hundred) the output is NaN: exp overflows to inf and "
                "inf / inf is NaN. Subtract each row's maximum score before exp; softmax does "
                "not change when a row is shifted.",
                "chapter 19.2; notebook 02 and attention_lib.pitfalls."
                "softmax_without_max_subtraction",
            )
        )
    output, _ = _run_forward(forward, Q, K, V, mask, "with scores of several hundred")
    # Scores of size ~1e3 carry absolute rounding errors of ~1e3 * eps, which the softmax
    # turns into relative errors of the same size: 1e-3 leaves float32 room for that.
    if relative_error(output, attention_forward(Q, K, V, mask)) >= 1e-3:
        raise _Stop(
            _diagnose_forward(output, Q, K, V, mask, 1e-3, "with scores of several hundred")
        )


def _findings_19_4(forward, backward):
    _require_callable(forward, "forward")
    _require_callable(backward, "backward")
    T, d_k, d_v = 5, 4, 3
    label = f"with mask=causal_mask({T})"
    Q, K, V, grad_output = _probe_inputs((), T, T, d_k, d_v, seed=194)
    mask = causal_mask(T)
    output, cache = _run_forward(forward, Q, K, V, mask, label)
    reference, truth = _reference(Q, K, V, mask, grad_output)
    tolerance = _tolerance(output)
    if relative_error(output, reference) >= tolerance:
        raise _Stop(_diagnose_forward(output, Q, K, V, mask, tolerance, label))
    grads = _run_backward(backward, grad_output, cache, (Q, K, V), label)

    # A backward pass that leaks into masked keys is wrong on this probe too; the leak
    # probe names it when no model of a mistake matches, and confirms its absence after.
    def leak_probe():
        _check_no_leak(forward, backward, T, d_k, d_v)

    _check_gradients(
        grads, truth, _tolerance(*grads), Q, K, V, mask, grad_output, label, leak_probe
    )
    leak_probe()
    _check_large_scores(forward, T, d_k, d_v)
    _check_fully_masked_row(forward, backward, T, d_k, d_v)
    for batch, T_q, T_k, masked in (((), 3, 6, True), ((2,), T, T, True), ((), T, T, False)):
        Q, K, V, grad_output = _probe_inputs(batch, T_q, T_k, d_k, d_v, seed=1944)
        mask = causal_mask(T_q, T_k) if masked else None
        mask_text = f"causal_mask({T_q}, {T_k})" if masked else "None"
        label = f"with Q {Q.shape}, K {K.shape}, V {V.shape}, mask={mask_text}"
        _check_shapes_and_values(forward, backward, Q, K, V, mask, grad_output, label)
    return [
        f"output equals `softmax(Q Kᵀ / sqrt(d_k)) V` with mask=causal_mask({T})",
        f"gradients agree with central finite differences in float64 (relative error below "
        f"{FLOAT64_TOLERANCE:.0e} for float64 answers, {FLOAT32_TOLERANCE:.0e} for float32)",
        "no gradient reaches a key that no query with an output gradient may read",
        "a query with no readable key gives zeros, and no NaN",
        "scores of several hundred do not overflow",
        "rectangular inputs (T_q=3, T_k=6, causal_mask(3, 6)), a leading batch axis and "
        "mask=None work",
    ]


def _check_shapes_and_values(forward, backward, Q, K, V, mask, grad_output, label):
    try:
        output, cache = _run_forward(forward, Q, K, V, mask, label)
        grads = _run_backward(backward, grad_output, cache, (Q, K, V), label)
    except _Stop as stop:
        if Q.ndim > 2 and stop.findings[0].diagnosis in ("raised", "wrong_shape"):
            raise _Stop(
                Finding(
                    "batch_axes",
                    stop.findings[0].message + "\nWith a leading batch axis, transpose the last "
                    "two axes only: np.swapaxes(K, -1, -2), not K.T (which reverses every axis).",
                    _HINT_FORWARD,
                )
            ) from None
        raise
    reference, truth = _reference(Q, K, V, mask, grad_output)
    tolerance = _tolerance(output)
    if relative_error(output, reference) >= tolerance:
        raise _Stop(_diagnose_forward(output, Q, K, V, mask, tolerance, label))
    _check_gradients(grads, truth, _tolerance(*grads), Q, K, V, mask, grad_output, label)


def check_exercise_19_4(forward, backward):
    """Check a masked attention forward/backward pair by finite differences (exercise 19.4).

    ``forward(Q, K, V, mask=None) -> (output, cache)`` must apply exactly the
    mask it is given (True = may read; no mask: plain attention) and give a
    query with no readable key an output row of zeros;
    ``backward(grad_output, cache) -> (grad_Q, grad_K, grad_V)``. The checker
    passes ``mask=causal_mask(T)`` explicitly, compares the gradients with
    central finite differences in float64, and probes: an output gradient on
    the first queries only (no gradient may reach a masked key), a fully
    masked row, scores of several hundred, rectangular inputs with
    ``causal_mask(T_q, T_k)`` and a leading batch axis. float32 answers pass
    within ``1e-4``.

    Parameters
    ----------
    forward, backward : callable

    Returns
    -------
    ExerciseReport
        Names the mistake: no scaling, ``d_k`` instead of ``sqrt(d_k)``,
        softmax over the wrong axis, mask after softmax, mask inverted, no max
        subtraction, the row term's sign, ``grad_K`` not transposed or missing
        the scale, gradient into masked positions, gradients in the wrong
        order or shape, among others.

    Examples
    --------
    >>> def forward(Q, K, V, mask=None):
    ...     return attention_forward(Q, K, V, mask, return_cache=True)
    >>> check_exercise_19_4(forward, attention_backward).passed
    True
    >>> from attention_lib import pitfalls
    >>> check_exercise_19_4(forward, pitfalls.attention_backward_with_sign_error).diagnoses
    ('row_term_sign',)
    """
    return _run(
        "19.4",
        "masked attention, forward and backward",
        lambda: _findings_19_4(forward, backward),
    )
