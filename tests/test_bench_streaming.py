"""The streaming benchmark's verdicts, on made-up measurements.

`make test` runs the benchmark at smoke sizes without torch, which reaches
neither the T = 8192 memory verdict nor the torch verdicts; they are checked here.
"""

import pytest

BENCHMARK = "bench_streaming"  # the ``bench`` fixture (tests/conftest.py) loads it


def test_memory_verdict_at_the_target_length(bench):
    assert "11.7 MiB (target <= 16 MiB: met), dense 800 MiB" in bench.memory_verdict(
        [(4096, 5.0, 200.0), (8192, 11.7, 800.0)]
    )
    assert "16.5 MiB (target <= 16 MiB: MISSED)" in bench.memory_verdict([(8192, 16.5, 800.0)])
    assert "no verdict" in bench.memory_verdict([(64, 0.2, 0.1)])


def test_speed_verdicts_use_the_median_ratio_and_show_the_spread(bench):
    rounds = {"streaming": [12.0, 14.0, 16.0, 30.0], "dense": [20.0] * 4, "torch": [10.0] * 4}
    row = {"shape": (1, 4, 4096, 64), "causal": True, "rounds": rounds, **bench.medians(rounds)}
    (line,) = bench.speed_verdicts([row])
    assert "(1, 4, 4096, 64), causal: streaming/torch 1.50x" in line
    assert "target <= 1.25x: MISSED" in line
    assert "middle half of the rounds 1.35-1.95x" in line
    rounds["streaming"] = [11.0, 12.0, 12.0, 12.0]
    row.update(rounds=rounds, **bench.medians(rounds))
    assert "1.20x (target <= 1.25x: met" in bench.speed_verdicts([row])[0]
    row.pop("torch")
    assert bench.speed_verdicts([row]) == []  # no torch installed: no verdict


def test_the_contenders_agree_and_the_check_catches_a_difference(bench):
    args = bench.random_inputs((1, 2, 40, 8))
    streaming = bench.streaming_pass(True, block_size=16)(*args)
    bench.assert_same(streaming, bench.dense_pass(True)(*args), "dense")
    with pytest.raises(AssertionError, match="relative to the largest entry"):
        bench.assert_same(streaming, bench.dense_pass(False)(*args), "not causal")
