"""The checkers' harness: a time limit on the student's code, the functions it called, and the
catalogue of diagnoses, as data that matches what the checkers say.

The time limit is shortened to half a second here (``TIME_LIMIT`` is the harness's
module constant); the kernel test runs the real checker in a real Jupyter kernel.
"""

from __future__ import annotations

import _thread
import os
import sys
import threading
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

from attention_lib import attention_backward, pitfalls, softmax_backward
from attention_lib.exercises import (
    DIAGNOSES,
    GENERIC_DIAGNOSES,
    _attention_probes,
    _harness,
    check_exercise_19_2,
    check_exercise_19_3,
    check_exercise_19_4,
    finite_differences,
    masked_attention,
    score_variance,
    softmax_row,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(_harness, "TIME_LIMIT", 0.5)


def students_threads():
    return [t for t in threading.enumerate() if t.name == "student code" and t.is_alive()]


def ends_soon(seconds=5.0):
    deadline = time.monotonic() + seconds
    while students_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not students_threads()


def spins(weights, grad_weights):
    """Never returns, and keeps every Exception it meets."""
    while True:
        try:
            sum(range(1000))
        except Exception:
            pass


def spins_in_numpy(weights, grad_weights):
    """Never returns, and spends its time in NumPy calls."""
    x = np.ones(10_000)
    while True:
        x = np.sqrt(x + 1.0)


@pytest.mark.parametrize("answer", [spins, spins_in_numpy])
def test_a_function_that_never_returns_is_stopped_and_named(short_limit, answer):
    start = time.monotonic()
    report = check_exercise_19_3(answer)
    assert report.diagnoses == ("timed_out",)
    words = " ".join(str(report).split())
    assert f"`{answer.__name__}` (your `softmax_row_backward`) did not return within 0.5 s" in words
    assert "The checker stopped it" in words
    assert time.monotonic() - start < 10
    assert ends_soon()


def test_the_limit_holds_in_a_worker_thread(short_limit):
    reports = []
    worker = threading.Thread(target=lambda: reports.append(check_exercise_19_3(spins)))
    worker.start()
    worker.join(20)
    assert reports[0].diagnoses == ("timed_out",) and ends_soon()


def test_an_interrupt_while_the_checker_waits_stops_the_students_code_too():
    threading.Timer(0.3, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        check_exercise_19_3(spins)
    assert ends_soon()


def test_right_answers_are_far_from_the_limit(monkeypatch):
    """The model answers' longest single call takes a small share of the 10 s."""
    longest = []
    call = _harness._Runner.call

    def timed(self, *args, **kwargs):
        start = time.thread_time()
        try:
            return call(self, *args, **kwargs)
        finally:
            longest.append(time.thread_time() - start)

    monkeypatch.setattr(_harness._Runner, "call", timed)
    forward = _attention_probes.probe(_attention_probes.MAIN)  # builds the probes first
    assert forward is not None

    def estimate(width, samples, seed):
        rng = np.random.default_rng(seed)
        return float(np.var(np.sum(rng.standard_normal((2, samples, width)).prod(axis=0), 1)))

    assert check_exercise_19_2(estimate).passed
    assert check_exercise_19_3(softmax_backward).passed
    assert max(longest) < 0.05 * _harness.TIME_LIMIT


def test_the_kernel_stays_usable_after_a_stopped_function():
    """A real kernel: the checker stops a loop that catches Exception, and the next cell runs."""
    from jupyter_client.manager import start_new_kernel

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    try:
        outputs = []

        def run(code):
            reply = client.execute_interactive(
                code, timeout=60, output_hook=lambda m: outputs.append(m["content"])
            )
            return reply["content"]["status"]

        cell = (
            "from attention_lib.exercises import _harness, check_exercise_19_3\n"
            "_harness.TIME_LIMIT = 1.0\n"
            "def softmax_row_backward(weights, grad_weights):\n"
            "    while True:\n"
            "        try:\n"
            "            pass\n"
            "        except Exception:\n"
            "            pass\n"
            "print(check_exercise_19_3(softmax_row_backward).diagnoses)\n"
        )
        start = time.monotonic()
        assert run(cell) == "ok"
        assert time.monotonic() - start < 30
        assert run("print(sum(range(10)))") == "ok"
        printed = "".join(o.get("text", "") for o in outputs)
        assert "('timed_out',)" in printed and "45" in printed
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_the_student_keeps_the_functions_it_called_in_order():
    student = _harness.Student()
    first, second = (lambda: 1), softmax_backward
    for function in (first, second, first):
        student.call(function, "f", *([np.ones((1, 2))] * 2 if function is second else []))
    assert student.functions == [first, second]
    student.close()


def test_every_report_comes_from_the_one_return_of_run():
    """run() makes its report in one place, for the sinks issue 31 adds there."""
    source = Path(_harness.__file__).read_text(encoding="utf-8")
    body = source[source.index("\ndef run(") :]
    assert body.count("\n    return report\n") == 1 and body.count("    return ") == 1


# --------------------------------------------------------------------------------------
# The catalogue


def test_the_catalogue_is_data_with_one_record_per_name_and_part():
    data = tomllib.loads((ROOT / "attention_lib/exercises/catalogue.toml").read_text("utf-8"))
    keys = [(d.exercise, d.part, d.name) for d in DIAGNOSES]
    assert len(keys) == len(set(keys))
    assert {(e, p) for e, p, _ in keys} == {
        ("19.1", "b"),
        ("19.2", "b"),
        ("19.3", "b"),
        ("19.4", "a"),
        ("19.4", "c"),
    }
    assert all(d.title and d.title == d.title.strip() for d in DIAGNOSES)
    own = sum(len(data[part]) for part in data["parts"])
    assert len(DIAGNOSES) == own + sum(len(p["shared"]) for p in data["parts"].values())
    assert GENERIC_DIAGNOSES <= {d.name for d in DIAGNOSES}
    assert all(d.hint in data["hints"].values() or d.hint == "" for d in DIAGNOSES)


def test_every_model_belongs_to_a_catalogue_record():
    for module in (softmax_row, masked_attention):
        assert all(record.title for record in module.MISTAKES.values())
        modelled = [name for name, record in module.MISTAKES.items() if record.model]
        assert len(modelled) >= 14, module.__name__


# --------------------------------------------------------------------------------------
# The probes reach every value their table claims


def reached_19_4():
    reached = {axis: set() for axis in masked_attention.AXES}
    fields = {"lead": "leading axes", "grad": "output gradient"}
    for spec in (*masked_attention.PROBES, *_attention_probes.CACHE_PROBES):
        for field, value in spec._asdict().items():
            reached[fields.get(field, field)].add(value)
    return reached


def test_19_4_probes_reach_every_value_of_the_table_and_no_other():
    for axis, values in masked_attention.AXES.items():
        assert reached_19_4()[axis] == set(values), axis
    statement = masked_attention.AXES
    assert {1, 64} <= set(statement["d_k"]) and {2, 3, 5, 7} <= set(statement["d_k"])
    assert any(s.T_q < s.T_k for s in masked_attention.PROBES)
    assert any(s.T_q > s.T_k for s in masked_attention.PROBES)
    assert any(s.d_k != s.d_v for s in masked_attention.PROBES)
    # mask=None (or left out) with no, one and two leading axes
    assert {len(s.lead) for s in masked_attention.PROBES if s.mask in ("None", "omitted")} == {
        0,
        1,
        2,
    }


def test_19_3_probes_reach_every_value_of_the_table_and_no_other():
    reached = {axis: set() for axis in softmax_row.AXES}
    for spec in softmax_row.PROBES:
        reached["leading axes"].add(spec.shape[:-1])
        reached["T"].add(spec.shape[-1])
        for field in ("dtype", "masked", "rows", "layout"):
            reached[field].add(getattr(spec, field))
    for axis, values in softmax_row.AXES.items():
        assert reached[axis] == set(values), axis


def test_19_2_probes_cover_widths_that_are_not_powers_of_two_and_large_counts():
    widths = set(score_variance.VARIANCE_WIDTHS) | {w for w, _, _ in score_variance.SCATTER_PROBES}
    assert any(w & (w - 1) for w in widths)  # a width that is not a power of two
    assert max(n for _, n, _ in score_variance.SCATTER_PROBES) > 20_000  # beyond the mean's
    assert max(s for _, _, s in score_variance.SCATTER_PROBES) >= 512


def test_a_backward_that_keeps_its_cache_in_a_global_is_named():
    kept = {}

    def forward(Q, K, V, mask=None):
        output, kept["cache"] = masked_attention.attention_forward(Q, K, V, mask, True)
        return output, None

    def backward(grad_output, cache):
        return attention_backward(grad_output, kept["cache"])

    assert check_exercise_19_4(forward, backward).diagnoses == ("state_between_calls",)
    assert check_exercise_19_3(pitfalls.softmax_backward_sign_error).diagnoses == ("row_term_sign",)


def test_19_4c_planted_backwards_are_far_from_the_verdicts_line():
    """Each true error of a planted backward lies below 1e-8 or above 1e-2, so the verdict a
    right gradient_errors gives does not hang on its step or its relative error's formula."""
    for problem in finite_differences.GRADIENT_PROBLEMS:
        for planted in finite_differences.PLANTED:
            if "mask" in planted and problem == "no mask":
                continue
            errors = finite_differences._true_errors(problem, planted)
            assert np.all((errors < 1e-8) | (errors > 1e-2)), (problem, planted, errors)


def test_the_profiler_that_finds_the_students_lines_is_left_on_no_thread():
    """The lines of a wrong answer are found with a profiler on the student's thread; the
    checker's own thread never gets one, and none stays behind."""

    def wrong_row_term(weights, grad_weights):
        return weights * grad_weights

    student = _harness.Student()
    ones = np.ones((1, 2))
    lines = student.lines_run(lambda: student.call(wrong_row_term, "f", ones, ones))
    student.close()
    assert ("wrong_row_term", "return weights * grad_weights") in lines
    assert sys.getprofile() is None and threading.getprofile() is None
