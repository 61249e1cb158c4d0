"""Run one benchmark and keep what it printed as the latest results, dated, with the machine.

Usage::

    python benchmarks/record.py bench_streaming.py --only memory
    python benchmarks/record.py bench_widgets.py --style board

runs ``benchmarks/bench_streaming.py --only memory`` as it would run alone,
shows its output as it comes, and when it succeeds writes
``docs/results/bench_streaming.md``: the command, the date, the machine (CPU,
cores, the load average before and after: these machines are shared), how long
it took, and the output itself, its Markdown tables as tables and the rest as
text. docs/performance.md links to those files, so the figures it talks about
are the last ones measured, never numbers copied into prose.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
RESULTS = BENCHMARKS.parent / "docs" / "results"


def cpu_name():
    """The CPU's model name on Linux, else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit():
    """This checkout's HEAD, short, and whether tracked files differ from it."""
    try:
        git = ["git", "-C", str(BENCHMARKS.parent)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" + changes not committed" if changed.stdout.strip() else "")


def as_markdown(output):
    """Benchmark output as Markdown: runs of table rows stay tables, other runs text blocks."""
    blocks, run, in_table = [], [], None
    for line in [*output.splitlines(), ""]:
        is_row = line.startswith("|")
        if not line.strip() or (run and is_row != in_table):
            if run:
                blocks.append(
                    "\n".join(run) if in_table else "```text\n" + "\n".join(run) + "\n```"
                )
            run = [line] if line.strip() else []
        else:
            run.append(line)
        in_table = is_row
    return "\n\n".join(blocks) + "\n"


def results_page(command, started, seconds, loads, output):
    when = started.strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"# {command[0]}: the latest results\n\n"
        f"Written by `python benchmarks/record.py {' '.join(command)}` on {when}. Do not edit "
        "it by hand: run that command again. What the benchmark measures and how to read it: "
        "[performance.md](../performance.md).\n\n"
        f"- commit: {commit()}\n"
        f"- machine: {cpu_name()}, {os.cpu_count()} logical cores, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}\n"
        f"- load average over 1 minute: {loads[0]:.1f} before, {loads[1]:.1f} after "
        "(other work on the machine slows every timed contender)\n"
        f"- the run took {seconds:.0f} s\n\n" + as_markdown(output)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmark", help="a script in benchmarks/, e.g. bench_attention.py")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="passed on to the script")
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    script = BENCHMARKS / args.benchmark
    if not (script.name.startswith("bench_") and script.suffix == ".py" and script.is_file()):
        known = ", ".join(sorted(p.name for p in BENCHMARKS.glob("bench_*.py")))
        parser.error(f"{args.benchmark!r} is not a benchmark here; known: {known}")
    if "--smoke" in args.arguments:
        parser.error("a --smoke run is too short for its figures to mean anything; not recorded")
    started = datetime.datetime.now(datetime.UTC)
    load_before, tic = os.getloadavg()[0], time.perf_counter()
    lines = []
    with subprocess.Popen(
        [sys.executable, str(script), *args.arguments], stdout=subprocess.PIPE, text=True
    ) as run:
        for line in run.stdout:
            sys.stdout.write(line)
            lines.append(line)
    if run.returncode != 0:
        sys.exit(f"{script.name} failed (exit status {run.returncode}): nothing recorded")
    command = [script.name, *args.arguments]
    loads = (load_before, os.getloadavg()[0])
    page = results_page(command, started, time.perf_counter() - tic, loads, "".join(lines))
    args.results.mkdir(parents=True, exist_ok=True)
    target = args.results / f"{script.stem}.md"
    target.write_text(page, encoding="utf-8")
    print(f"recorded in {target}")


if __name__ == "__main__":
    main()
