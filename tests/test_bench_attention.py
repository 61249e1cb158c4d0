"""The speed benchmark's arithmetic and verdicts.

`make test` runs the benchmark at smoke sizes without torch, which never reaches
the torch verdicts (they need T >= 256 and torch), so they are checked here on
made-up timings.
"""

import pytest

BENCHMARK = "bench_attention"  # the ``bench`` fixture (tests/conftest.py) loads it


def _row(rounds, bench, shape=(2, 8, 1024, 64), dtype="float32", kind="fwd+bwd"):
    """A table row as ``run`` builds it, from per-round milliseconds."""
    row = {"dtype": dtype, "shape": shape, "kind": kind}
    row.update(bench.medians(rounds))
    row["torch_spread"] = bench.paired_spread(rounds["ours"], rounds["torch"])
    return row


def test_round_ms_times_every_function_in_every_round(bench):
    calls = []
    rounds = bench.round_ms(
        {"a": lambda x: calls.append(("a", x)), "b": lambda x: calls.append(("b", x))},
        (7,),
        repeats=3,
        budget_s=0.0,
        idle_s=0.0,
    )
    assert set(rounds) == {"a", "b"} and all(len(v) == 3 for v in rounds.values())
    assert all(t >= 0 for v in rounds.values() for t in v)
    # One untimed warm-up call and one timed call per function per round, in turn.
    assert calls == [("a", 7), ("a", 7), ("b", 7), ("b", 7)] * 3


def test_paired_spread_is_the_quartiles_of_the_per_round_ratios(bench):
    lower, upper = bench.paired_spread([10.0, 20.0, 30.0, 40.0], [10.0, 10.0, 10.0, 10.0])
    assert (lower, upper) == pytest.approx((1.75, 3.25))
    with pytest.raises(ValueError):
        bench.paired_spread([1.0, 2.0], [1.0])


def test_verdicts_name_the_target_and_the_spread(bench, capsys):
    missed = _row(
        {
            "ours": [102.0, 104.0, 101.0, 103.0, 106.0],
            "chapter": [410.0] * 5,
            "torch": [100.0, 99.0, 100.0, 101.0, 100.0],
        },
        bench,
    )
    met = _row(
        {
            "ours": [88.0, 90.0, 93.0, 91.0, 89.0],
            "chapter": [410.0] * 5,
            "torch": [100.0, 100.0, 101.0, 99.0, 100.0],
        },
        bench,
        shape=(4, 8, 256, 64),
    )
    level = {"ours": [1.0, 1.0], "chapter": [1.0, 1.0], "torch": [1.0, 1.0]}
    untargeted = [
        _row(level, bench, dtype="float64"),
        _row(level, bench, shape=(1, 1, 128, 64)),
        _row(level, bench, kind="forward"),
    ]
    bench.report_targets([missed, met, *untargeted])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0] == (
        "float32 (2, 8, 1024, 64) fwd+bwd: ours/chapter 0.25x (target <= 0.80x: met); "
        "ours/torch 1.03x (target <= 1.00x: MISSED; middle half of the rounds 1.02-1.05x)"
    )
    # Below T = 1024 only the torch target applies.
    assert lines[1] == (
        "float32 (4, 8, 256, 64) fwd+bwd: ours/torch 0.90x "
        "(target <= 1.00x: met; middle half of the rounds 0.89-0.92x)"
    )
