"""benchmarks/record.py keeps a benchmark's output as a dated results page."""

import pytest

BENCHMARK = "record"  # the ``bench`` fixture (tests/conftest.py) loads it, as ``record``


@pytest.fixture
def record(bench):
    return bench


FAKE_BENCHMARK = """
import sys
print("numpy 2.4; BLAS: OpenBLAS")
print()
print("| T | ms |")
print("|---:|---:|")
print("| 1024 | " + sys.argv[1] + " |")
print("target met")
"""


def test_a_run_is_written_with_its_command_the_machine_and_tables(
    record, tmp_path, monkeypatch, capsys
):
    (tmp_path / "bench_fake.py").write_text(FAKE_BENCHMARK, encoding="utf-8")
    monkeypatch.setattr(record, "BENCHMARKS", tmp_path)
    record.main(["--results", str(tmp_path / "results"), "bench_fake.py", "12.5"])
    assert "| 1024 | 12.5 |" in capsys.readouterr().out  # shown as it runs
    page = (tmp_path / "results" / "bench_fake.md").read_text(encoding="utf-8")
    assert page.startswith("# bench_fake.py: the latest results\n")
    assert "`python benchmarks/record.py bench_fake.py 12.5`" in page
    assert "logical cores" in page and "load average over 1 minute" in page
    assert "- commit: unknown (not a git checkout)" in page  # tmp_path is in no repository
    # The table stays a table; the lines around it become text blocks.
    assert "```text\nnumpy 2.4; BLAS: OpenBLAS\n```" in page
    assert "\n\n| T | ms |\n|---:|---:|\n| 1024 | 12.5 |\n\n```text\ntarget met\n```\n" in page


def test_failed_smoke_and_unknown_runs_are_not_recorded(record, tmp_path, monkeypatch):
    (tmp_path / "bench_broken.py").write_text("raise SystemExit(3)", encoding="utf-8")
    monkeypatch.setattr(record, "BENCHMARKS", tmp_path)
    results = tmp_path / "results"
    with pytest.raises(SystemExit, match="exit status 3"):
        record.main(["--results", str(results), "bench_broken.py"])
    for argv in (["bench_broken.py", "--smoke"], ["bench_missing.py"], ["record.py"]):
        with pytest.raises(SystemExit):
            record.main(["--results", str(results), *argv])
    assert not results.exists()
