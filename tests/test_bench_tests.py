"""benchmarks/bench_tests.py reads each pytest run's result and seconds out of make's output."""

import pytest

BENCHMARK = "bench_tests"  # the ``bench`` fixture (tests/conftest.py) loads it

#: What ``make -j2 --output-sync=target test`` prints, cut down to the lines that matter.
MAKE_OUTPUT = """\
.venv/bin/ruff check .
All checks passed!
.venv/bin/python -m pytest -m "not browser and not hub" -n auto
bringing up nodes...
================= 1954 passed, 2 skipped in 148.58s (0:02:28) ==================
.venv/bin/python -m pytest --nbval notebooks/ --nbval-current-env -n auto --dist loadfile \\
  --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
============================= 153 passed in 16.12s =============================
.venv/bin/python -m pytest -m hub
===================== 12 passed, 1996 deselected in 36.08s =====================
.venv/bin/python benchmarks/bench_class.py --smoke
bench_class: passed (237 s)
.venv/bin/python -m pytest -m browser -n 2 --dist loadfile
======================== 1 failed, 39 passed in 377.16s ========================
"""


def test_every_pytest_run_and_the_class_smoke_is_a_step_with_its_own_seconds(bench):
    assert bench.steps(MAKE_OUTPUT.splitlines()) == [
        ('pytest -m "not browser and not hub" -n auto', "1954 passed, 2 skipped", 148.58),
        (
            "pytest --nbval notebooks/ --nbval-current-env -n auto --dist loadfile",
            "153 passed",
            16.12,
        ),
        ("pytest -m hub", "12 passed, 1996 deselected", 36.08),
        ("bench_class.py --smoke", "passed", 237.0),
        ("pytest -m browser -n 2 --dist loadfile", "1 failed, 39 passed", 377.16),
    ]


def test_a_failing_command_stops_the_run_with_its_last_lines(bench, tmp_path, capsys):
    with pytest.raises(SystemExit, match="exit status 3"):
        bench.timed(["bash", "-c", "echo the reason; exit 3"], tmp_path)
    assert "the reason" in capsys.readouterr().out
