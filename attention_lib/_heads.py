"""How the attention passes are scheduled: whole heads on every core, rows in tiles.

Every (batch, head) pair is an independent attention problem. The fast path
(:mod:`attention_lib._fast`) runs its forward and backward passes part by part
on a small thread pool (a part is a group of small heads or one large head),
with NumPy's BLAS held to one thread inside each part: two cores then work on
two parts at once, where a multithreaded BLAS would split every matrix product
between them and leave the element-wise softmax passes, which NumPy runs on one
core, to one of them.
PyTorch's fused CPU kernel shares its work out the same way.

Within a part, the rows are processed in tiles of about ``TILE_BYTES`` of
weights, so that a tile is still in cache when the softmax passes over it.

Nothing here changes the mathematics: each part runs the same products and
passes as the whole batch would, so results agree to rounding with the
readable path (tests/test_scheduling.py and tests/test_paths.py check it,
gradients included).
"""

from __future__ import annotations

import functools
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import ThreadpoolController

# Below about 4 MiB of work, splitting (and a thread pool) costs more than it saves:
# callers run such inputs in one call instead (the dense path's readable code, the
# streaming module's single pass).
MIN_SPLIT_BYTES = 1 << 22
# About 4 MiB of weights per row tile: large enough for efficient matrix
# products, small enough to stay in this machine's L2/L3 caches between passes.
TILE_BYTES = 1 << 22

# threadpoolctl's limit is process-wide: two callers changing and restoring it
# at the same time could leave the BLAS on one thread, so they take turns.
_BLAS_LIMIT_LOCK = threading.Lock()


@functools.cache
def _blas_controller():
    # Made on first use: scanning the loaded libraries takes about a millisecond,
    # paid once, and only by inputs large enough to be split.
    return ThreadpoolController()


def blas_threads():
    """How many threads NumPy's BLAS may use now (respects threadpool_limits and env vars)."""
    counts = [lib.num_threads for lib in _blas_controller().select(user_api="blas").lib_controllers]
    return max(counts, default=1)


def row_tiles(part_shape, itemsize):
    """Slices of query rows that cut weights of ``part_shape`` (..., T_q, T_k) into tiles.

    Each tile holds about ``TILE_BYTES`` (at least one row).
    """
    n_queries = part_shape[-2]
    bytes_per_row = math.prod(part_shape[:-2]) * part_shape[-1] * itemsize
    rows = max(1, TILE_BYTES // max(bytes_per_row, 1))
    return [slice(start, min(start + rows, n_queries)) for start in range(0, n_queries, rows)]


def for_each_part(task, batch_shape, head_bytes):
    """Call ``task(part)`` on parts of the batch that together cover it, on every core.

    A part is an index into the leading batch axes. Heads stay together while
    a part's weights fit in one tile and are split apart otherwise (then
    ``row_tiles`` cuts a head's rows); there are at least as many parts as
    workers. Inputs without batch axes get one call, ``task(Ellipsis)``. Callers
    keep inputs below ``MIN_SPLIT_BYTES`` away from here.
    """
    if not batch_shape:
        task(Ellipsis)
        return
    n_heads = math.prod(batch_shape)
    workers = min(blas_threads(), n_heads)
    depth = next(
        d
        for d in range(len(batch_shape) + 1)
        if d == len(batch_shape)
        or (
            math.prod(batch_shape[:d]) >= workers
            and math.prod(batch_shape[d:]) * head_bytes <= TILE_BYTES
        )
    )
    parts = np.ndindex(batch_shape[:depth])
    if workers < 2:
        for part in parts:
            task(part)
        return
    with _BLAS_LIMIT_LOCK, _blas_controller().limit(limits=1, user_api="blas"):
        _run_on_threads(task, parts, workers)


def _run_on_threads(task, parts, workers):
    """``task(part)`` for every part, on ``workers`` threads that take parts in turn."""
    # Every worker is started before any of them computes: a thread started
    # while another runs Python code can wait a whole GIL switch interval (5 ms).
    start = threading.Event()
    # Set when a part fails or the caller is interrupted (Ctrl-C in a notebook):
    # the other workers then finish their current part and take no new one.
    stop = threading.Event()
    parts_lock = threading.Lock()

    def work():
        start.wait()
        try:
            while not stop.is_set():
                with parts_lock:
                    part = next(parts, None)
                if part is None:
                    return
                task(part)
        except BaseException:
            stop.set()
            raise

    # A new pool per call, not one kept for the life of the process: Linux
    # tends to wake a sleeping thread on its waker's core, so both kept workers
    # often shared one core for the whole pass (median 20-25 ms against 15 ms
    # at (4, 8, 256, 64) on 2 cores), while new threads go to idle cores.
    with ThreadPoolExecutor(workers, thread_name_prefix="attention") as pool:
        futures = [pool.submit(work) for _ in range(workers)]
        start.set()
        try:
            for future in futures:
                future.result()  # re-raises what a task raised
        except BaseException:
            stop.set()
            raise
