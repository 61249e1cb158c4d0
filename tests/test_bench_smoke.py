"""Every benchmark runs at smoke sizes (``--smoke``), so none can rot unnoticed.

One subprocess each, as ``python benchmarks/<script> --smoke`` runs: as tests, they
share the cores with the others under pytest-xdist instead of running one after
another at the end. ``bench_class.py`` needs the hub: ``make test-browser`` runs it.
"""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parents[1]
SMOKED = sorted(
    p.name for p in (ROOT / "benchmarks").glob("bench_*.py") if p.name != "bench_class.py"
)


@pytest.mark.parametrize("script", SMOKED)
def test_the_benchmark_runs_at_smoke_sizes(script):
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, f"benchmarks/{script}", "--smoke"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
