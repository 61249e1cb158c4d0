"""Running a student's code for a checker: no exception escapes, nothing handed out may change.

A checker creates one :class:`Student` per run and calls every student
function through :meth:`Student.call`. The call silences floating-point
warnings (the checker looks at the values), turns an exception into a finding
that quotes the student's own lines, tells an untouched scaffold (its
``raise NotImplementedError()``) from a case not written yet, and afterwards
compares every array the checker handed out with a private copy: a student's
function that writes into its caller's array is named, even when its results
are right.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import re
import sys
import sysconfig
import traceback
import warnings
from pathlib import Path

import numpy as np

from ..gradcheck import relative_error
from ._report import ExerciseReport, Finding

FLOAT64_TOLERANCE = 1e-6
FLOAT32_TOLERANCE = 1e-4

_LIBRARY_DIR = Path(__file__).resolve().parent.parent
_SYSTEM_DIRS = tuple(
    {
        str(Path(path).resolve())
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_paths().get(key))
    }
)
# `.T`, `np.transpose(x)` and `x.transpose()` without axes reverse every axis.
_REVERSES_AXES = re.compile(r"\.T\b|\b(?:np|numpy)\.transpose\([^,()]+\)|\.transpose\(\s*\)")


class NotAttempted(Exception):
    """The answer is still the scaffold; the message says which function and what to do."""


class Stop(Exception):
    """Stop checking: the answer is wrong in a way that makes further probes meaningless."""

    def __init__(self, *findings, error=None):
        super().__init__(findings)
        self.findings = findings
        self.error = error  # the student's exception, when one was raised


def is_students(filename):
    """True for a file outside the library and outside Python's own folders (a notebook cell)."""
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return True
    if path.is_relative_to(_LIBRARY_DIR):
        return False
    return not any(str(path).startswith(system) for system in _SYSTEM_DIRS)


def _student_frames(error):
    return [
        frame for frame in traceback.extract_tb(error.__traceback__) if is_students(frame.filename)
    ]


def _where(frames):
    """'line N in f: source' for each frame."""
    lines = []
    for frame in frames:
        source = frame.line or linecache.getline(frame.filename, frame.lineno).strip()
        lines.append(f"line {frame.lineno} in {frame.name}" + (f": {source}" if source else ""))
    return lines


def function_name(function, fallback):
    return getattr(function, "__name__", fallback)


class Student:
    """A student's functions, called for one run of a checker.

    ``hand_out`` registers the arrays a checker passes to the student (with
    the name of the function that receives them); after every call each one is
    compared with its private copy. ``notes`` collects remarks that do not fail
    the answer.
    """

    def __init__(self):
        self.notes = []
        self._answered = set()
        self._handed_out = {}

    def hand_out(self, receiver, **arrays):
        for name, array in arrays.items():
            if array is not None:
                self._handed_out[name] = (receiver, array, np.array(array, copy=True))

    def forget(self):
        """The arrays of the last probe are the student's to keep from now on."""
        self._handed_out = {}

    def note(self, diagnosis, message, hint=""):
        if diagnosis not in (note.diagnosis for note in self.notes):
            self.notes.append(Finding(diagnosis, message, hint))

    def call(self, function, name, *args, label="", **kwargs):
        """``function(*args, **kwargs)``; a problem raises :class:`Stop` or :class:`NotAttempted`.

        ``label`` says which probe it is, for the messages.
        """
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = function(*args, **kwargs)
        except NotImplementedError as error:
            raise self._not_implemented(error, function, name, label) from None
        except Exception as error:
            message = f"{name} raised {type(error).__name__}: {str(error).strip()}" + (
                f" ({label})" if label else ""
            )
            where = _where(_student_frames(error))
            if where:
                message += "\n" + "\n".join(f"  at {line}" for line in where[-3:])
            hint = (
                "the lines above are in your code; call it on a small input for the full traceback"
            )
            raise Stop(Finding("raised", message, hint), error=error) from None
        self._answered.add(name)
        self._require_unchanged(name, label)
        return result

    def _not_implemented(self, error, function, name, label):
        frames = _student_frames(error)
        raiser = frames[-1].name if frames else function_name(function, name)
        caller = function_name(function, name)
        if name in self._answered:
            return Stop(
                Finding(
                    "unfinished",
                    f"`{caller}` raises NotImplementedError {label}: that case is not written yet.",
                )
            )
        if raiser in (caller, "<module>", "<lambda>"):
            what = f"`{caller}` still raises NotImplementedError."
        else:
            what = (
                f"`{raiser}`, which `{caller}` calls, still raises NotImplementedError: finish "
                f"`{raiser}` first, or write that step in `{caller}` itself."
            )
        return NotAttempted(
            what + " Replace `# YOUR CODE HERE` and the `raise` line with your answer, run that "
            "cell, then run this one again."
        )

    def _require_unchanged(self, caller, label):
        for name, (receiver, given, pristine) in self._handed_out.items():
            same = given.shape == pristine.shape and np.array_equal(
                given, pristine, equal_nan=given.dtype.kind in "fc"
            )
            if same:
                continue
            if receiver == caller:
                what = f"`{caller}` changed its argument `{name}` in place"
            else:
                what = (
                    f"`{caller}` changed `{name}` in place, the array given to `{receiver}` "
                    "(your cache keeps it)"
                )
            raise Stop(
                Finding(
                    "modified_input",
                    f"{what}{f' ({label})' if label else ''}; a caller's array must not "
                    f"change. A line such as `{name} /= ...` or `{name}[...] = ...` writes into "
                    f"it; `{name} = {name} / ...` makes a new array instead.",
                )
            )

    def lines_run(self, run):
        """The source lines of every student function that runs during ``run()``.

        Used only to explain a failure (``run`` repeats a call that failed), so
        the cost of the profiler is paid once.
        """
        codes = {}

        def profile(frame, event, arg):
            if event == "call" and is_students(frame.f_code.co_filename):
                codes.setdefault(frame.f_code, None)

        saved, self._handed_out = self._handed_out, {}
        sys.setprofile(profile)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run()
        except Exception:  # the failure is known already; only the lines are wanted
            pass
        finally:
            sys.setprofile(None)
            self._handed_out = saved
        lines = []
        for code in codes:
            try:
                source, _ = inspect.getsourcelines(code)
            except (OSError, TypeError):
                continue
            lines += [(code.co_name, line.strip()) for line in source if line.strip()]
        return list(dict.fromkeys(lines))

    def axis_reversing_line(self, run):
        """(function, line) of a student line that reverses every axis (`.T`), or None."""
        for function, line in self.lines_run(run):
            code = line.split("#", 1)[0]
            if _REVERSES_AXES.search(code):
                return function, line
        return None


def require_callable(value, name):
    if not callable(value):
        raise Stop(
            Finding(
                "not_a_function",
                f"{name} should be a function, got {type(value).__name__}. Pass the function "
                f"itself, without calling it: check({name}), not check({name}()).",
            )
        )


def require_tuple(result, length, expectation):
    if isinstance(result, tuple | list) and len(result) == length:
        return
    if result is None:
        raise Stop(Finding("returned_none", f"{expectation}, got None (a missing `return`?)."))
    got = type(result).__name__
    if isinstance(result, tuple | list):
        got += f" of length {len(result)}"
    raise Stop(Finding("wrong_type", f"{expectation}, got {got}."))


def as_result(value, what, expected_shape):
    """The student's returned array, or a finding when it is None, not numeric or misshapen."""
    if value is None:
        raise Stop(
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
        raise Stop(
            Finding("wrong_type", f"{what} should be a NumPy array, got {type(value).__name__}.")
        )
    if array.dtype.kind not in "fiu" or array.dtype == np.float16:
        raise Stop(
            Finding(
                "wrong_dtype",
                f"{what} has dtype {array.dtype}; expected float64 or float32 "
                "(float16 is too coarse for a gradient check).",
            )
        )
    if array.shape != tuple(expected_shape):
        raise Stop(
            Finding(
                "wrong_shape",
                f"{what} has shape {array.shape}, expected {tuple(expected_shape)}.",
            )
        )
    if not np.all(np.isfinite(array)):
        raise Stop(
            Finding(
                "not_finite",
                f"{what} contains NaN or inf (at {int(np.sum(~np.isfinite(array)))} of "
                f"{array.size} entries).",
            )
        )
    return array


def tolerance(*arrays):
    """1e-4 when any of the arrays is float32, else 1e-6."""
    dtypes = [np.asarray(array).dtype for array in arrays]
    return FLOAT32_TOLERANCE if np.float32 in dtypes else FLOAT64_TOLERANCE


def matches(answer, model, tol):
    model = np.asarray(model)
    if model.shape != np.shape(answer) or not np.all(np.isfinite(model)):
        return False
    return relative_error(answer, model) < tol


def first_match(answer, models, tol):
    """Name of the first model ``answer`` matches, or None."""
    for name, model in models:
        if matches(answer, model, tol):
            return name
    return None


def constant_factor(answer, truth, tol):
    """c when ``answer`` is ``c * truth`` to within ``tol`` for some c other than 0 and 1."""
    answer, truth = np.asarray(answer, np.float64), np.asarray(truth, np.float64)
    if answer.shape != truth.shape or not np.any(truth):
        return None
    factor = float(np.vdot(truth, answer) / np.vdot(truth, truth))
    if factor == 0 or abs(factor - 1) < tol or relative_error(answer, factor * truth) >= tol:
        return None
    return factor


def permuted_match(answers, truths, tol):
    """The order in which ``answers`` holds ``truths`` when it is not the given one, or None."""
    for order in itertools.permutations(range(len(truths))):
        if order != tuple(range(len(truths))) and all(
            matches(answers[i], truths[j], tol) for j, i in enumerate(order)
        ):
            return order
    return None


def shape_of(value):
    try:
        return np.shape(value)
    except ValueError:  # a ragged list has no shape
        return None


def accepts_keyword(function, keyword):
    """False only when the signature is known and takes no ``keyword`` (nor ``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        parameter.kind is parameter.VAR_KEYWORD
        or (parameter.name == keyword and parameter.kind is not parameter.POSITIONAL_ONLY)
        for parameter in parameters
    )


def run(exercise, title, check, tolerance_note=""):
    """Run ``check(student)``, which returns the ✓ lines, and turn what happens into a report."""
    student = Student()
    try:
        checked = check(student)
    except NotAttempted as scaffold:
        finding = Finding("not_attempted", str(scaffold))
        return ExerciseReport(exercise, title, (finding,), attempted=False)
    except Stop as stop:
        return ExerciseReport(
            exercise,
            title,
            stop.findings,
            tolerance_note=tolerance_note,
            notes=tuple(student.notes),
        )
    except Exception as error:  # an answer too odd for the checks above: still no traceback
        finding = Finding(
            "unreadable_answer",
            f"the checker could not judge this answer ({type(error).__name__}: {error}). Check "
            "that it returns what the exercise asks for, in the types and shapes it states.",
        )
        return ExerciseReport(exercise, title, (finding,), tolerance_note=tolerance_note)
    return ExerciseReport(
        exercise,
        title,
        checked=tuple(checked),
        tolerance_note=tolerance_note,
        notes=tuple(student.notes),
    )
