"""Shared pytest setup: a Hypothesis profile that does not flake on busy CI machines,
the ``bench`` fixture that loads a benchmark script for its tests, and the browser
tests' explorer summary as their pytest-xdist workers send it back.

Profile "ci" (loaded by default; choose another with HYPOTHESIS_PROFILE=default):
Hypothesis' own CI settings (derandomized, so every run tries the same examples, no
example database) plus no per-example deadline, since the 200 ms default trips on
two shared cores, and print_blob so a failure can be replayed with @reproduce_failure.
"""

import importlib.util
import os
import pathlib
import sys

import pytest
from hypothesis import settings

BENCHMARKS = pathlib.Path(__file__).parents[1] / "benchmarks"
ARTIFACTS = pathlib.Path(__file__).parents[1] / "artifacts" / "browser"

settings.register_profile("ci", settings.get_profile("ci"), deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="module")
def bench(request):
    """The script ``benchmarks/<BENCHMARK>.py`` as a module, ``BENCHMARK`` named by the test file.

    Loaded once per test file; the benchmarks are scripts, not a package. What the
    script adds to ``sys.path`` (to share another benchmark's code) is taken off after.
    """
    name = request.module.BENCHMARK
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    path = list(sys.path)
    spec.loader.exec_module(module)
    yield module
    sys.path[:] = path


#: The explorers' summary lines the browser tests' pytest-xdist workers sent back
#: (tests/browser/conftest.py; make test-browser runs them on two workers).
_EXPLORER_SUMMARY: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _EXPLORER_SUMMARY.extend(getattr(node, "workeroutput", {}).get("explorer_summary", []))


def pytest_terminal_summary(terminalreporter):
    if _EXPLORER_SUMMARY:
        terminalreporter.section("explorers: height / panel, image scale, fill, latency")
        for line in sorted(_EXPLORER_SUMMARY):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"all numbers: {ARTIFACTS}/latency.json and fit.json")
