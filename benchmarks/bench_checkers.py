"""CPU time of one run of each exercise checker, on the model answers, cold and warm.

A class runs the checkers all at once ("run it now"): thirty kernels on two
cores share the CPU, so what a run costs in CPU seconds is what matters. For each
checker this prints:

* **cold**: the first run in a fresh process (it builds its probes and their right
  answers, cached for the kernel's later runs), CPU seconds of the whole process;
* **warm**: the median of the next runs;
* **answer**: the CPU the model answer itself spent inside those warm runs (its
  functions are wrapped and timed on their own thread), the baseline measured in
  the same run: a checker cannot cost less than the code it runs;
* the target from issue 32: at most 0.5 s for 19.1, 19.3 and 19.4, 1.5 s for 19.2.

``--class N`` then starts N processes at once, each running every checker once,
cold, as N kernels told to run the checkers do, and prints how long the last took
on the clock, and the CPU they used together.

Usage::

    python benchmarks/bench_checkers.py            # 7 warm runs each, then a class of 30
    python benchmarks/bench_checkers.py --smoke    # one warm run each, a class of 2 (CI)
    python benchmarks/record.py bench_checkers.py  # the results page, docs/results/
"""

from __future__ import annotations

import argparse
import functools
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from attention_lib import (
    attention_backward,
    attention_forward,
    check_exercise_19_1,
    check_exercise_19_2,
    check_exercise_19_3,
    check_exercise_19_4,
    check_exercise_19_4c,
    numerical_gradient,
    relative_error,
    softmax_backward,
)

TARGETS = {"19.1": 0.5, "19.2": 1.5, "19.3": 0.5, "19.4 (a)": 0.5, "19.4 (c)": 0.5}


def estimate_score_variance(width, samples, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, width))
    k = rng.standard_normal((samples, width))
    return float(np.var(np.sum(q * k, axis=1)))


def forward(Q, K, V, mask=None):
    return attention_forward(Q, K, V, mask, return_cache=True)


def central_difference(f, X, h=None):
    return numerical_gradient(lambda X: f(X), {"X": X}, "X", eps=1e-6 if h is None else h)


def gradient_errors(forward, backward, Q, K, V, mask, grad_output):
    grads = backward(grad_output, forward(Q, K, V, mask)[1])
    inputs = {"Q": Q, "K": K, "V": V}

    def loss(**arrays):
        return float(np.sum(grad_output * forward(**arrays, mask=mask)[0]))

    return tuple(
        relative_error(grad, numerical_gradient(loss, inputs, name))
        for grad, name in zip(grads, inputs, strict=True)
    )


class Timed:
    """The answer's functions, each wrapped to add its own thread's CPU time to ``spent``."""

    def __init__(self):
        self.spent = 0.0

    def __call__(self, function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.spent += time.thread_time() - start

        return timed


def checkers(timed):
    """(name, a run of the checker on the model answer) for each exercise part."""
    letters = {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "c"}
    return [
        ("19.1", lambda: check_exercise_19_1(timed(lambda: letters))),
        ("19.2", lambda: check_exercise_19_2(timed(estimate_score_variance))),
        ("19.3", lambda: check_exercise_19_3(timed(softmax_backward))),
        ("19.4 (a)", lambda: check_exercise_19_4(timed(forward), timed(attention_backward))),
        (
            "19.4 (c)",
            lambda: check_exercise_19_4c(timed(central_difference), timed(gradient_errors)),
        ),
    ]


def measure(runs):
    rows = []
    for name, check in checkers(timed := Timed()):
        cold = time.process_time()
        assert check().passed, name
        cold = time.process_time() - cold
        warm, answer = [], []
        for _ in range(runs):
            timed.spent, start = 0.0, time.process_time()
            assert check().passed, name
            warm.append(time.process_time() - start)
            answer.append(timed.spent)
        rows.append((name, cold, statistics.median(warm), statistics.median(answer)))
    return rows


def one_student():
    """What one kernel of the class runs: every checker once, cold."""
    for name, check in checkers(Timed()):
        assert check().passed, name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one warm run, a class of 2")
    parser.add_argument("--runs", type=int, default=7, help="warm runs per checker")
    parser.add_argument("--class", dest="students", type=int, default=30)
    parser.add_argument("--student", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.student:
        return one_student()
    runs, students = (1, 2) if args.smoke else (args.runs, args.students)
    print(f"## One checker run, CPU seconds (median of {runs} warm runs)\n")
    print("| checker | cold | warm | the answer itself | target | warm / target |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, cold, warm, answer in measure(runs):
        target = TARGETS[name]
        print(
            f"| {name} | {cold:.3f} | {warm:.3f} | {answer:.3f} | {target} | {warm / target:.2f} |"
        )
    print(f"\n## A class of {students} running every checker at once\n")
    start, cpu = time.monotonic(), time.process_time()
    processes = [subprocess.Popen([sys.executable, __file__, "--student"]) for _ in range(students)]
    codes = [process.wait() for process in processes]
    wall = time.monotonic() - start
    parent = time.process_time() - cpu
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the students', all waited for
    print(f"- every student's checkers passed: {all(code == 0 for code in codes)}")
    print(f"- the last student finished after {wall:.1f} s on the clock")
    print(
        f"- CPU used by the students together: {used.ru_utime + used.ru_stime:.1f} s "
        f"({(used.ru_utime + used.ru_stime) / students:.2f} s each, interpreter start-up and "
        f"imports included); the parent: {parent:.2f} s"
    )
    return 0 if all(code == 0 for code in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
