"""Running a student's code for a checker: no exception escapes, nothing handed out may change.

A checker creates one :class:`Student` per run and calls every student
function through :meth:`Student.call`. The call runs the function on a thread
of its own under a time limit, silences floating-point warnings (the checker
looks at the values), turns an exception into a finding that quotes the
student's own lines, tells an untouched scaffold (its ``raise
NotImplementedError()``) from a case not written yet, and afterwards compares
every array the checker handed out with a private copy: a student's function
that writes into its caller's array is named, even when its results are right.
So is one that seeds or draws from NumPy's global generator, which every other
cell shares (its state is put back).

**The time limit.** A call that has used ``TIME_LIMIT`` (10) seconds of its
thread's own CPU time, or ``WALL_LIMIT`` (60) seconds on the clock, is stopped:
the checker raises :class:`StudentTimedOut` inside the student's thread (a
``SystemExit``, so ``except Exception`` does not catch it; it is raised again
every 10 ms until the thread ends), reports ``timed_out`` naming the function,
and returns; the kernel stays usable. CPU time, not the clock, so that thirty
kernels checking at once on two cores do not stop right answers. What cannot be
stopped at once: a single NumPy call runs to its end first (the exception lands
when it returns), and so does code that catches ``BaseException`` in a loop; the
report then says the function may still be running. A kernel interrupt while
the checker waits stops the student's thread too.

Findings carry fixed names. Each checker keeps **one table of its mistakes**
(:class:`Mistakes`, one :class:`Mistake` record each: name, title, message,
hint, and the model answer the mistake gives, when there is one); the names the
harness gives itself (``raised``, ``modified_input``, ...) are in ``SHARED``.
Every table lists its records as :class:`Diagnosis` entries, which the package
collects into ``DIAGNOSES``.
"""

from __future__ import annotations

import contextvars
import ctypes
import inspect
import itertools
import linecache
import math
import queue
import re
import sys
import sysconfig
import threading
import time
import tomllib
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import report_sinks
from ..gradcheck import relative_error
from ._report import Diagnosis, ExerciseReport, Finding

FLOAT64_TOLERANCE = 1e-6
FLOAT32_TOLERANCE = 1e-4
TIME_LIMIT = 10.0  # seconds of CPU time of the student's thread, per call
WALL_LIMIT = 60.0  # seconds on the clock, per call: a function that sleeps or waits
GENERIC_DIAGNOSES = frozenset(
    {"wrong_output", "wrong_gradient", "wrong_estimate", "unreadable_answer"}
)

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
# Serialises starting a student's thread with stopping another: an ident is reused only
# by a thread started after the old one ended.
_THREADS = threading.Lock()


class NotAttempted(Exception):
    """The answer is still the scaffold; the message says which function and what to do."""


class Stop(Exception):
    """Stop checking: the answer is wrong in a way that makes further probes meaningless."""

    def __init__(self, *findings, error=None):
        super().__init__(findings)
        self.findings = findings
        self.error = error  # the student's exception, when one was raised


class StudentTimedOut(SystemExit):
    """Raised in a student's thread that ran out of time (a SystemExit: threads end quietly)."""


class Mistake(NamedTuple):
    """One named mistake, as the catalogue has it: name, title, message template, hint; and
    its model, what the mistake gives on a probe, when the checker can compute it."""

    name: str
    title: str
    message: str = ""
    hint: str = ""
    model: Callable | None = None


def _text(template):
    """A catalogue message: whitespace folded, a blank line kept as a line break."""
    return "\n".join(" ".join(paragraph.split()) for paragraph in template.split("\n\n"))


CATALOGUE = tomllib.loads((Path(__file__).parent / "catalogue.toml").read_text(encoding="utf-8"))


def _records(section, default_hint):
    hints = CATALOGUE["hints"]
    return {
        row["name"]: Mistake(
            row["name"],
            row["title"],
            _text(row.get("message", "")),
            "" if row.get("hint") == "" else hints.get(row.get("hint"), default_hint),
        )
        for row in CATALOGUE[section]
    }


SHARED = _records("shared", "")
HINTS = CATALOGUE["hints"]  # where to read, by topic
NOTES = frozenset(
    {"float64_demoted", "float32_promoted", "own_pair_judged", "own_pair_not_attempted"}
    | {"own_pair_not_judged"}
)


class Mistakes(dict):
    """One checker's table of mistakes by name: its part of the catalogue, with the models.

    ``exercise`` and ``part`` pick the catalogue's records (``"19.4"``, ``"a"``); a
    checker gives a mistake its model, what it gives on a probe, with :meth:`models`:
    an array, a tuple of arrays, a list of such ways to make it, or None (or False) when
    the probe cannot show it.
    """

    def __init__(self, exercise, part):
        section = exercise.replace(".", "_") + part
        settings = CATALOGUE["parts"][section]
        self.exercise, self.part = exercise, part
        self.hint, self.shared = CATALOGUE["hints"][settings["hint"]], settings["shared"]
        super().__init__(_records(section, self.hint))

    def models(self, **models):
        """Give the named mistakes their models."""
        for name, model in models.items():
            self[name] = self[name]._replace(model=model)

    def finding(self, name, message=None, **context):
        """The finding ``name``, its message filled with ``context`` (or ``message`` as is)."""
        record = self.get(name) or SHARED[name]
        text = record.message.format(**context) if message is None else message
        return Finding(name, text, record.hint)

    def stop(self, name, message=None, **context):
        return Stop(self.finding(name, message, **context))

    def checked(self, section="", **context):
        """The ✓ lines of a passing report, filled with ``context``."""
        key = self.exercise.replace(".", "_") + self.part + section
        return [_text(line).format(**context) for line in CATALOGUE["checked"][key]]

    def match(self, answer, probe, tol, names=None):
        """The first mistake whose model ``answer`` matches on ``probe`` (within ``tol``)."""
        several = isinstance(answer, tuple)
        for record in self.values():
            if record.model is None or (names is not None and record.name not in names):
                continue
            with np.errstate(all="ignore"):
                model = record.model(probe)
            for candidate in model if isinstance(model, list) else [model]:
                if (
                    candidate is None
                    or candidate is False
                    or isinstance(candidate, tuple) != several
                ):
                    continue
                pairs = zip(answer, candidate, strict=True) if several else [(answer, candidate)]
                if (not several or len(candidate) == len(answer)) and all(
                    matches(a, m, tol) for a, m in pairs
                ):
                    return record.name
        return None

    def diagnoses(self):
        """The catalogue's entries for this checker: its own mistakes and the shared names."""
        records = [*self.values(), *(SHARED[name] for name in self.shared)]
        return tuple(
            Diagnosis(self.exercise, self.part, r.name, r.title, r.hint, r.name in NOTES)
            for r in records
        )


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


# --------------------------------------------------------------------------------------
# A student's function on a thread of its own, under the time limit


def _quietly(function, args, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _stop(thread, grace=0.5):
    """Raise StudentTimedOut in the runner ``thread`` every 10 ms until it ends; True when it
    did within ``grace`` seconds."""

    def again():
        while thread.is_alive():
            with _THREADS:
                if thread.is_alive():
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(thread.ident), ctypes.py_object(StudentTimedOut)
                    )
            thread.join(0.01)

    threading.Thread(target=again, name="stops a student's thread", daemon=True).start()
    thread.close()  # a thread already back at its queue ends there
    thread.join(grace)
    return not thread.is_alive()


class _Runner(threading.Thread):
    """The thread that runs one checker run's calls of the student's code, one at a time.

    One thread for all of a run's calls: starting a thread per call costs about
    0.3 ms, and 19.2 makes some 700 calls. A call that runs out of time takes the
    thread with it; the next call starts a new one.
    """

    def __init__(self):
        super().__init__(name="student code", daemon=True)
        self.jobs, self.done, self.outcome = queue.SimpleQueue(), threading.Event(), {}
        self.clock = None
        with _THREADS:
            self.start()

    def run(self):
        try:  # the CPU clock of this thread, read by the checker's thread
            self.clock = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):  # none on this system: the wall clock serves
            self.clock = None
        while (job := self.jobs.get()) is not None:
            function, args, kwargs, context, profile = job
            sys.setprofile(profile)
            try:
                self.outcome = {"result": context.run(_quietly, function, args, kwargs)}
            except BaseException as error:  # handed to the checker's thread
                self.outcome = {"error": error}
            finally:
                sys.setprofile(None)
                self.done.set()
            if isinstance(self.outcome.get("error"), StudentTimedOut):
                return

    def used(self):
        """Seconds of CPU time this thread has used so far (or of the wall clock)."""
        if self.clock is None:
            return time.monotonic()
        try:
            return time.clock_gettime(self.clock)
        except OSError:  # the thread has ended
            return math.inf

    def call(self, function, args, kwargs, profile=None):
        """``(True, result)``, the exception raised, or ``(False, stopped)`` out of time."""
        self.done.clear()
        started, cpu = time.monotonic(), self.used()
        self.jobs.put((function, args, kwargs, contextvars.copy_context(), profile))
        try:
            while not self.done.wait(0.02):
                if self.used() - cpu > TIME_LIMIT or time.monotonic() - started > WALL_LIMIT:
                    return False, _stop(self)
        except BaseException:  # the kernel was interrupted while waiting: stop the student too
            _stop(self, grace=0)
            raise
        if "error" in self.outcome and not isinstance(self.outcome["error"], StudentTimedOut):
            raise self.outcome["error"]
        return True, self.outcome.get("result")

    def close(self):
        self.jobs.put(None)


class Student:
    """A student's functions, called for one run of a checker.

    ``functions`` lists the functions the checker called, each once, in the order
    of their first call (a report sink tells the student's from the library's by
    their module). ``hand_out`` registers the arrays a checker passes to the
    student (with the name of the function that receives them); after every call
    each one is compared with its private copy. ``notes`` collects remarks that
    do not fail the answer.
    """

    def __init__(self):
        self.functions = []
        self.notes = []
        self._answered = set()
        self._handed_out = {}
        self._profile = None
        self._runner = None

    def close(self):
        """Let the thread that ran the student's calls end."""
        if self._runner is not None:
            self._runner.close()
            self._runner = None

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

    def call(self, function, name, *args, label="", explain=None, **kwargs):
        """``function(*args, **kwargs)``; a problem raises :class:`Stop` or :class:`NotAttempted`.

        ``label`` says which probe it is, for the messages; ``explain(name, message,
        error)``, when given, words an exception for that probe (or returns None).
        """
        if not any(function is known for known in self.functions):
            self.functions.append(function)
        global_rng = np.random.get_state()  # noqa: NPY002 - to see whether the student used it
        where = f" ({label})" if label else ""
        if self._runner is None or not self._runner.is_alive():
            self._runner = _Runner()
        try:
            returned, result = self._runner.call(function, args, kwargs, self._profile)
        except NotImplementedError as error:
            raise self._not_implemented(error, function, name, label) from None
        except Exception as error:
            message = f"{name} raised {type(error).__name__}: {str(error).strip()}{where}"
            lines = _where(_student_frames(error))
            if lines:
                message += "\n" + "\n".join(f"  at {line}" for line in lines[-3:])
            hint = (
                "the lines above are in your code; call it on a small input for the full traceback"
            )
            raise stop("raised", message, explain, error, hint) from None
        if not returned:
            self._runner = None
            own = function_name(function, name)
            what = f"`{name}`" if own in (name, "<lambda>") else f"`{own}` (your `{name}`)"
            raise Stop(_timed_out(what, where, still_running=not result))
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

        saved, self._handed_out, self._profile = self._handed_out, {}, profile
        try:
            run()
        except Exception:  # the failure is known already; only the lines are wanted
            pass
        finally:
            self._handed_out, self._profile = saved, None
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
            if _REVERSES_AXES.search(line.split("#", 1)[0]):
                return function, line
        return None


def _timed_out(what, where, still_running):
    limit = f"{TIME_LIMIT:g} s of computing (or {WALL_LIMIT:g} s of waiting)"
    after = (
        "It may still be running in the background (inside one long NumPy call, or catching "
        "every exception): if the notebook slows down, restart the kernel."
        if still_running
        else "The checker stopped it; the kernel is free again."
    )
    return Finding(
        "timed_out",
        f"{what} did not return within {limit}{where}: a loop that never ends (a `while` "
        f"whose condition never changes, an index that is never advanced?). {after}",
    )


# --------------------------------------------------------------------------------------
# What the student returned


def stop(name, message, explain=None, error=None, hint=""):
    """Stop with the shared finding ``name``, or with what ``explain`` makes of it for the probe."""
    finding = explain(name, message, error) if explain is not None else None
    return Stop(finding or Finding(name, message, hint), error=error)


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


def as_result(value, what, expected_shape, explain=None):
    """The student's returned array, or a finding when it is None, not numeric or misshapen
    (``explain`` as in :meth:`Student.call`)."""
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
        message = f"{what} has shape {array.shape}, expected {tuple(expected_shape)}."
        if array.shape == tuple(n for n in expected_shape if n != 1):
            message += " Its axes of length 1 are gone (`np.squeeze`?): keep every axis."
        raise stop("wrong_shape", message, explain)
    if not np.all(np.isfinite(array)):
        count = int(np.sum(~np.isfinite(array)))
        message = f"{what} contains NaN or inf (at {count} of {array.size} entries)."
        raise stop("not_finite", message, explain)
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


# --------------------------------------------------------------------------------------
# How a wrong answer relates to the right one


def wrong_rows(answer, truth, tol):
    """Boolean over ``answer.shape[:-1]``: the rows (last axis) that differ from ``truth``.

    A row is wrong when its error is at least ``tol`` times its own size, or times
    a hundredth of an average row's size for rows that are nearly 0."""
    answer, truth = np.asarray(answer, np.float64), np.asarray(truth, np.float64)
    error = np.linalg.norm(answer - truth, axis=-1)
    size = np.linalg.norm(answer, axis=-1) + np.linalg.norm(truth, axis=-1)
    floor = 1e-2 * (np.linalg.norm(answer) + np.linalg.norm(truth)) / math.sqrt(max(size.size, 1))
    return error >= tol * np.maximum(size, max(floor, 1e-300))


def error(answer, truth, floor=0.0):
    """``relative_error`` with a floor under its denominator: where the right answer is 0 (a
    gradient that cancels exactly), rounding noise counts against ``floor``, the size the
    answer would have, not against its own size."""
    answer, truth = np.asarray(answer, np.float64), np.asarray(truth, np.float64)
    scale = np.linalg.norm(answer) + np.linalg.norm(truth)
    return float(np.linalg.norm(answer - truth) / max(scale, floor, 1e-300))


def relation(answer, truth, tol, groups=()):
    """How a wrong ``answer`` relates to ``truth`` (same shape): ``(kind, words)`` or None.

    ``kind`` is one of ``"zero"`` (all zeros), ``"sign"`` (the right answer negated),
    ``"factor"`` (a constant multiple), ``"transposed"`` (the last two axes
    swapped), ``"rows"`` (wrong in a named set of rows, or in whole batch elements),
    ``"some_rows"`` (wrong in some rows, listed), ``"cells"`` (wrong only in a named
    set of entries). ``groups`` are ``(words, where)`` pairs: ``where`` is a boolean over
    the rows for a named set of them ("the queries whose mask blocks a key"), and
    when the wrong rows are exactly that set the words say so; or a boolean of the
    answer's own shape, a set of entries ("the keys whose weight is below 0.01"),
    named when it holds 90% of the squared error. A leading index whose rows are all
    wrong (or all right) is named as a batch element. ``words`` completes
    "your ... ".
    """
    answer, truth = np.asarray(answer, np.float64), np.asarray(truth, np.float64)
    if not np.any(answer):
        return "zero", "is all zeros"
    factor = constant_factor(answer, truth, tol)
    if factor is not None and math.isclose(factor, -1, rel_tol=1e-3):
        return "sign", "is the right one with the opposite sign"
    if factor is not None:
        return "factor", f"is {factor:.3g} times the right one"
    if answer.ndim >= 2 and answer.shape[-1] == answer.shape[-2]:
        if matches(answer, np.swapaxes(truth, -1, -2), tol):
            return "transposed", "is the right one transposed (its last two axes swapped)"
    if answer.ndim < 2:
        return None
    squared = (answer - truth) ** 2
    for words, where in groups:  # most of the error in a few named entries
        share = squared[where].sum() / squared.sum() if np.shape(where) == answer.shape else 0
        if share >= 0.9 and np.mean(where) <= 0.5:
            return "cells", f"is wrong almost only ({share:.0%} of the error) at {words}"
    bad = wrong_rows(answer, truth, tol)
    if bad.all() or not bad.any():
        return None
    for words, rows in groups:
        if np.ndim(rows) < answer.ndim and np.array_equal(bad, np.broadcast_to(rows, bad.shape)):
            return "rows", f"is wrong for {words} and right everywhere else"
    if answer.ndim > 2:
        per_element = bad.reshape(-1, bad.shape[-1])
        if np.all(per_element.all(axis=-1) | ~per_element.any(axis=-1)):
            wrong = [np.unravel_index(i, bad.shape[:-1]) for i in np.flatnonzero(per_element[:, 0])]
            names = ", ".join(str(tuple(int(j) for j in index)) for index in wrong[:4])
            return "rows", (
                f"is wrong for the batch element{'s' * (len(wrong) > 1)} at leading index "
                f"{names}{' ...' * (len(wrong) > 4)} and right for the other "
                f"{per_element.shape[0] - len(wrong)}"
            )
    flat = np.flatnonzero(bad.reshape(-1))
    rows = ", ".join(map(str, flat[:6])) + (" ..." if flat.size > 6 else "")
    zero = " (all zero)" * (not np.any(answer[bad]))
    return "some_rows", (
        f"is wrong in row{'s' * (flat.size > 1)} {rows}{zero} and right in the other "
        f"{bad.size - flat.size} (rows counted over the flattened leading axes)"
    )


def run(exercise, part, title, check, tolerance_note=""):
    """Run ``check(student)``, which returns the ✓ lines, and turn what happens into a report."""
    student = Student()
    try:
        report = ExerciseReport(
            exercise,
            title,
            checked=tuple(check(student)),
            tolerance_note=tolerance_note,
            notes=tuple(student.notes),
            part=part,
        )
    except NotAttempted as scaffold:
        finding = Finding("not_attempted", str(scaffold))
        report = ExerciseReport(exercise, title, (finding,), attempted=False, part=part)
    except Stop as stop:
        report = ExerciseReport(
            exercise,
            title,
            stop.findings,
            tolerance_note=tolerance_note,
            notes=tuple(student.notes),
            part=part,
        )
    except Exception as error:  # an answer too odd for the checks above: still no traceback
        finding = Finding(
            "unreadable_answer",
            f"the checker could not judge this answer ({type(error).__name__}: {error}). Check "
            "that it returns what the exercise asks for, in the types and shapes it states.",
        )
        report = ExerciseReport(
            exercise, title, (finding,), tolerance_note=tolerance_note, part=part
        )
    finally:
        student.close()
    report_sinks.deliver(report, student.functions)
    return report
