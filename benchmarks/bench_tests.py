"""How long the test commands take: a contributor's ``make test-fast`` and CI's ``.ci/run``.

Usage::

    python benchmarks/record.py bench_tests.py            # both, into docs/results/
    python benchmarks/bench_tests.py --only fast           # make test-fast in this checkout
    python benchmarks/bench_tests.py --only ci             # .ci/run in a clean clone of HEAD
    python benchmarks/bench_tests.py --smoke               # make -n: the steps it would time

``fast`` runs ``make test-fast`` in this checkout, as a contributor does between
changes (its venv already set up). ``ci`` clones this checkout's HEAD (committed
work only) into a temporary folder and runs ``CI=true bash .ci/run`` there: the
clean clone CI starts from, the installs included. Each prints one row per command
and one per pytest run inside it (what pytest reported, in the seconds it counted),
and each whole command's time as a share of its budget (issue 22: ``make
test-fast`` under 3 minutes on two cores, ``.ci/run`` at most 12). The figures
are the machine's: record them with ``record.py``, which notes the machine and
its load; the docs link to that page instead of quoting them.

The output of the commands themselves is kept out of the table; a failing command
prints its last lines and the run exits 1.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S = {"fast": 180, "ci": 12 * 60}
#: pytest's last line: "==== 1954 passed, 2 skipped in 148.58s (0:02:28) ===="
SUMMARY = re.compile(r"^=+ (?P<counts>.+?) in (?P<seconds>[\d.]+)s\b")
#: a pytest command as make echoes it, e.g. ".venv/bin/python -m pytest -m browser -n 2"
PYTEST_COMMAND = re.compile(r"-m pytest (?P<arguments>.*?)\s*\\?$")
#: the class benchmark's verdict, "bench_class: passed (237 s)"
CLASS_VERDICT = re.compile(r"^bench_class: (?P<counts>\w+) \((?P<seconds>\d+) s\)")


def steps(lines):
    """(what, result, seconds) of each pytest run and class smoke in a command's output."""
    found, command = [], "pytest"
    for line in lines:
        echoed = PYTEST_COMMAND.search(line)
        if echoed:
            command = "pytest " + echoed["arguments"]
        summary, verdict = SUMMARY.match(line), CLASS_VERDICT.match(line)
        if summary:
            found.append((command, summary["counts"], float(summary["seconds"])))
        elif verdict:
            found.append(("bench_class.py --smoke", verdict["counts"], float(verdict["seconds"])))
    return found


def timed(command, cwd, env=None):
    """Run ``command``; return its wall time in seconds and its output's lines."""
    tic = time.perf_counter()
    run = subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seconds = time.perf_counter() - tic
    lines = run.stdout.splitlines()
    if run.returncode != 0:
        print("\n".join(lines[-40:]))
        sys.exit(f"{' '.join(command)} failed (exit status {run.returncode})")
    return seconds, lines


def report(label, budget_s, seconds, lines):
    print(
        f"| `{label}` | whole command | {seconds:.0f} | {seconds / budget_s:.2f} of {budget_s} s |"
    )
    for command, counts, step_seconds in steps(lines):
        print(f"| `{command}` | {counts} | {step_seconds:.0f} | |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(BUDGET_S), action="append")
    parser.add_argument(
        "--smoke", action="store_true", help="make -n test: the pytest runs a real run would time"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        _, lines = timed(["make", "-n", "test"], ROOT)
        found = [echoed["arguments"] for echoed in map(PYTEST_COMMAND.search, lines) if echoed]
        print("make test runs pytest with", *found, sep="\n  ")
        return 0 if found else 1
    print("| command | result | seconds | share of the budget |")
    print("| --- | --- | --- | --- |")
    only = args.only or sorted(BUDGET_S, reverse=True)
    if "fast" in only:
        report("make test-fast", BUDGET_S["fast"], *timed(["make", "test-fast"], ROOT))
    if "ci" in only:
        with tempfile.TemporaryDirectory() as folder:
            clone = Path(folder) / "clone"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            # what a CI machine has: no PYTHONPATH or venv of this checkout's
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
            ci = timed(["bash", ".ci/run"], clone, env={**env, "CI": "true"})
            report(".ci/run (clean clone)", BUDGET_S["ci"], *ci)
    return 0


if __name__ == "__main__":
    sys.exit(main())
