"""Large inputs run in the fast path, part by part (heads, then row tiles) on a thread pool.

Every number must be the one the readable path gives, whatever the split; the
BLAS thread limit taken during the split must always be given back. Tiny
inputs, cheap to check by finite differences, are sent to the fast path by
``attention_path("fast")``, with tiles shrunk to a few rows so that each head
has several.
"""

from __future__ import annotations

import threading
import time
import tracemalloc

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from attention_lib import (
    _heads,
    attention_backward,
    attention_forward,
    attention_path,
    causal_mask,
    check_attention_gradients,
    combine_masks,
    padding_mask,
    valid_from_lengths,
)


def split_everything(monkeypatch, tile_rows=2):
    """The fast path for every input inside ``with``, ``tile_rows`` rows per tile of a head.

    The tiles are sized for one float64 head of 8 keys.
    """
    monkeypatch.setattr(_heads, "TILE_BYTES", tile_rows * 8 * 8)
    return attention_path("fast")


def blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def inputs(shape_q, shape_k, d_v, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=shape_q)
    K = rng.normal(size=shape_k)
    V = rng.normal(size=shape_k[:-1] + (d_v,))
    batch = np.broadcast_shapes(shape_q[:-2], shape_k[:-2])
    grad_output = rng.normal(size=batch + (shape_q[-2], d_v))
    return tuple(a.astype(dtype) for a in (Q, K, V, grad_output))


SOME_ROWS_BLOCKED = np.tril(np.ones((8, 8), bool))
SOME_ROWS_BLOCKED[[2, 5]] = False

CASES = {
    "heads, no mask": ((2, 3, 8, 4), (2, 3, 8, 4), 5, None),
    "heads, causal": ((2, 3, 8, 4), (2, 3, 8, 4), 5, causal_mask(8)),
    "heads, causal and padding": (
        (2, 3, 8, 4),
        (2, 3, 8, 4),
        5,
        combine_masks(causal_mask(8), padding_mask(valid_from_lengths([8, 3], 8), heads=True)),
    ),
    "cross attention, ragged last tile": ((3, 7, 4), (3, 8, 4), 2, causal_mask(7, 8)),
    "keys shared by the batch": ((4, 8, 4), (8, 4), 3, None),
    "queries shared by the batch": ((8, 4), (2, 8, 4), 3, causal_mask(8)),
    "fully masked rows": ((2, 8, 4), (2, 8, 4), 3, SOME_ROWS_BLOCKED),
    "values add batch axes": ((8, 4), (8, 4), 3, None),
}


def forward_backward(Q, K, V, grad_output, mask):
    output, cache = attention_forward(Q, K, V, mask, return_cache=True)
    # Without a cache the forward pass works in tile buffers: same output.
    np.testing.assert_array_equal(attention_forward(Q, K, V, mask), output)
    return (output, cache.weights, *attention_backward(grad_output, cache))


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fast_split_computation_gives_the_readable_whole_batch_numbers(case, dtype, monkeypatch):
    shape_q, shape_k, d_v, mask = CASES[case]
    Q, K, V, grad_output = inputs(shape_q, shape_k, d_v, dtype=dtype)
    if case == "values add batch axes":
        V = np.stack([V, 2 * V])
        grad_output = np.stack([grad_output, grad_output])
    with attention_path("readable"):  # one vectorised call on the whole batch
        expected = forward_backward(Q, K, V, grad_output, mask)
    with split_everything(monkeypatch):
        got = forward_backward(Q, K, V, grad_output, mask)
    tolerance = 1e-12 if dtype == np.float64 else 1e-5
    names = ("output", "weights", "grad_Q", "grad_K", "grad_V")
    for name, g, e in zip(names, got, expected, strict=True):
        assert g.dtype == e.dtype == dtype and g.shape == e.shape, name
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_split_gradients_agree_with_central_differences(case, monkeypatch):
    shape_q, shape_k, d_v, mask = CASES[case]
    Q, K, V, _ = inputs(shape_q, shape_k, d_v, seed=3)
    with split_everything(monkeypatch):
        report = check_attention_gradients(Q, K, V, mask, tolerance=1e-6)
    assert report.passed, str(report)


def test_forward_without_cache_never_builds_the_full_weights():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(1, 2, 2048, 16)).astype(np.float32) for _ in range(3))
    weights_bytes = 2 * 2048 * 2048 * 4  # 32 MB, in tiles of about 4 MB
    mask = causal_mask(2048)
    tracemalloc.start()
    output = attention_forward(Q, K, V, mask)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < weights_bytes / 2, f"peak {peak / 2**20:.1f} MB"
    expected, _ = attention_forward(Q, K, V, mask, return_cache=True)
    np.testing.assert_array_equal(output, expected)


def test_fully_masked_rows_stay_zero_when_split(monkeypatch):
    Q, K, V, grad_output = inputs((2, 8, 4), (2, 8, 4), 3)
    with split_everything(monkeypatch):
        output, weights, grad_Q, *_ = forward_backward(Q, K, V, grad_output, SOME_ROWS_BLOCKED)
    assert not weights[:, [2, 5]].any() and not output[:, [2, 5]].any()
    assert not grad_Q[:, [2, 5]].any()
    assert np.isfinite(output).all()


def test_parts_keep_small_heads_together_and_split_large_ones(monkeypatch):
    monkeypatch.setattr(_heads, "TILE_BYTES", 1000)
    monkeypatch.setattr(_heads, "blas_threads", lambda: 2)
    seen = []
    lock = threading.Lock()

    def record(part):
        with lock:
            seen.append(part)

    _heads.for_each_part(record, (4, 8), head_bytes=100)  # 8 heads of 100 bytes fit a tile
    assert sorted(seen) == [(0,), (1,), (2,), (3,)]
    seen.clear()
    _heads.for_each_part(record, (2, 8), head_bytes=500)  # they do not: one head per part
    assert sorted(seen) == sorted(np.ndindex(2, 8))
    seen.clear()
    _heads.for_each_part(record, (1, 4), head_bytes=100)  # at least one part per worker
    assert sorted(seen) == [(0, 0), (0, 1), (0, 2), (0, 3)]


def test_inputs_without_batch_axes_are_one_call():
    calls = []
    _heads.for_each_part(calls.append, (), head_bytes=1 << 30)
    assert calls == [Ellipsis]


def test_row_tiles_cover_every_row_once(monkeypatch):
    monkeypatch.setattr(_heads, "TILE_BYTES", 3 * 10 * 8)
    tiles = _heads.row_tiles((2, 7, 10), itemsize=8)  # 2 heads: 160 bytes a row, one row a tile
    assert [(s.start, s.stop) for s in tiles] == [(i, i + 1) for i in range(7)]
    tiles = _heads.row_tiles((7, 10), itemsize=8)  # 80 bytes a row: three rows a tile
    assert [(s.start, s.stop) for s in tiles] == [(0, 3), (3, 6), (6, 7)]


def test_blas_threads_are_given_back_after_a_split_call(monkeypatch):
    before = blas_threads()
    fast_path = split_everything(monkeypatch)
    monkeypatch.setattr(_heads, "blas_threads", lambda: 2)  # force the pool, whatever the CPU
    Q, K, V, grad_output = inputs((2, 3, 8, 4), (2, 3, 8, 4), 5)
    observed = []

    def spy(part):
        observed.append(blas_threads())

    _heads.for_each_part(spy, (2, 3), head_bytes=8)
    assert observed and all(threads == [1] * len(before) for threads in observed)
    with fast_path:
        forward_backward(Q, K, V, grad_output, causal_mask(8))
    assert blas_threads() == before


def test_blas_threads_are_given_back_when_a_part_fails(monkeypatch):
    before = blas_threads()
    monkeypatch.setattr(_heads, "blas_threads", lambda: 2)

    def fail(part):
        raise RuntimeError(f"part {part} failed")

    with pytest.raises(RuntimeError, match="failed"):
        _heads.for_each_part(fail, (2, 2), head_bytes=8)
    assert blas_threads() == before


def test_a_failing_part_stops_the_others(monkeypatch):
    monkeypatch.setattr(_heads, "blas_threads", lambda: 2)
    started = []
    lock = threading.Lock()

    def fail_once_started(part):
        with lock:
            started.append(part)
            first = len(started) == 1
        if first:
            raise RuntimeError("the first part failed")
        time.sleep(0.01)  # a part takes a while, so the failure is seen between parts

    with pytest.raises(RuntimeError, match="first part failed"):
        _heads.for_each_part(fail_once_started, (50,), head_bytes=8)
    assert len(started) < 50  # the workers stopped taking parts


def test_one_blas_thread_means_no_pool(monkeypatch):
    class NoPool:
        def __init__(self, *args, **kwargs):
            raise AssertionError("a thread pool was started although the BLAS has one thread")

    monkeypatch.setattr(_heads, "ThreadPoolExecutor", NoPool)
    Q, K, V, grad_output = inputs((2, 3, 8, 4), (2, 3, 8, 4), 5)
    with threadpool_limits(1, user_api="blas"), split_everything(monkeypatch):
        output, *_ = forward_backward(Q, K, V, grad_output, None)
    assert np.isfinite(output).all()


def test_workers_follow_the_blas_thread_count():
    with threadpool_limits(1, user_api="blas"):
        assert _heads.blas_threads() == 1
    assert _heads.blas_threads() == max(blas_threads())
