"""Running a student's code for a checker: no exception escapes, nothing handed out may change.

A checker creates one :class:`Student` per run and calls every student
function through :meth:`Student.call`. The call silences floating-point
warnings (the checker looks at the values), turns an exception into a finding
that quotes the student's own lines, tells an untouched scaffold (its
``raise NotImplementedError()``) from a case not written yet, and afterwards
compares every array the checker handed out with a private copy: a student's
function that writes into its caller's array is named, even when its results
are right. So is one that seeds or draws from NumPy's global generator, which
every other cell shares (its state is put back).
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import math
import re
import sys
import sysconfig
import traceback
import warnings
from pathlib import Path

import numpy as np

from .. import report_sinks
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
        global_rng = np.random.get_state()  # noqa: NPY002 - to see whether the student used it
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
        self._require_global_rng_untouched(name, global_rng)
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

    @staticmethod
    def _require_global_rng_untouched(caller, before):
        after = np.random.get_state()  # noqa: NPY002 - compared, never drawn from
        if before[2:] == after[2:] and np.array_equal(before[1], after[1]):
            return
        np.random.set_state(before)  # noqa: NPY002 - the other cells keep their random numbers
        raise Stop(
            Finding(
                "global_rng",
                f"`{caller}` draws from NumPy's global generator (`np.random.seed`, "
                "`np.random.randn`, `np.random.normal`, ...), which every other cell shares: "
                "seeding or drawing from it changes their random numbers too. Make a generator "
                "of your own from the seed, `rng = np.random.default_rng(seed)`, and draw from "
                "it (`rng.standard_normal(...)`).",
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
    try:  # a list or a tuple is not an array, even when it would convert to one
        array = None if isinstance(value, list | tuple) else np.asarray(value)
    except (ValueError, TypeError):
        array = None
    if array is None or array.dtype == object:
        got = type(value).__name__
        if isinstance(value, list | tuple):
            got += f" of length {len(value)}"
        raise Stop(Finding("wrong_type", f"{what} should be a NumPy array, got {got}."))
    if array.dtype.kind not in "fiu" or array.dtype == np.float16:
        coarse = " (float16 is too coarse for a gradient check)" * (array.dtype == np.float16)
        raise Stop(
            Finding(
                "wrong_dtype",
                f"{what} has dtype {array.dtype}; expected float64 or float32{coarse}.",
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


def note_float32_answers(student, answers, input_dtype):
    """Note the answers (a dict name: array) that came back float32 for float64 inputs."""
    names = [name for name, answer in answers.items() if answer.dtype == np.float32]
    if names and input_dtype == np.float64:
        student.note(
            "float64_demoted",
            f"for float64 inputs your {', '.join(names)} come back as float32: something "
            "converts to float32 (`.astype(np.float32)`, `dtype=np.float32`), which keeps about "
            "7 digits where float64 keeps 16. It passes at float32's tolerance, 1e-4, but a "
            "float64 model, or a gradient check, would silently lose those digits.",
        )


def near_miss(what, error, hint):
    """A finding for an answer right to a few digits only (float16, a rounding), or None."""
    if not error < 1e-2:
        return None
    return Finding(
        "imprecise",
        f"{what} is close to the right one but not close enough (relative error {error:.1g}): "
        f"right to about {max(1, round(-math.log10(error)))} digits, as float16 arithmetic, a "
        "rounding or an epsilon added somewhere gives. Compute in the inputs' dtype, and add "
        "nothing that the formula does not have.",
        hint,
    )


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
        report = ExerciseReport(exercise, title, (finding,), attempted=False)
    except Stop as stop:
        report = ExerciseReport(
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
        report = ExerciseReport(exercise, title, (finding,), tolerance_note=tolerance_note)
    else:
        report = ExerciseReport(
            exercise,
            title,
            checked=tuple(checked),
            tolerance_note=tolerance_note,
            notes=tuple(student.notes),
        )
    report_sinks.deliver(report, getattr(student, "functions", ()))
    return report
