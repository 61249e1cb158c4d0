"""Memory and speed of streaming attention, as ratios to baselines measured in the same run.

Contenders, forward+backward in float32 on the same inputs and thread count:

* "streaming": ``streaming_attention_forward`` / ``streaming_attention_backward``;
* "dense": ``attention_forward(..., return_cache=True)`` / ``attention_backward``,
  which keep the T x T weights for the chapter's cache;
* "torch": ``torch.nn.functional.scaled_dot_product_attention`` on the CPU through
  autograd, when PyTorch is installed (it is not a dependency of attention_lib).

Memory: the peak that tracemalloc sees during forward+backward, started after the
inputs exist, so it counts the output, the cache and the gradients. Speed: the
contenders are interleaved round by round as in ``bench_attention.py`` (idle,
one untimed call, then the timed one); printed are the medians, the ratios and
the middle half of the per-round ratios.

Usage::

    python benchmarks/bench_streaming.py            # the full tables (several minutes)
    python benchmarks/bench_streaming.py --smoke    # tiny sizes, no torch, seconds (CI)

Targets: forward+backward peak at most 16 MiB at T = 8192, d = 64, one head
(the hard target); median time at most 1.25x torch's at (1, 4, 4096, 64) without
a mask and causal, and at (1, 1, 8192, 64).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import sys

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from attention_lib import (
    attention_backward,
    attention_forward,
    causal_mask,
    streaming_attention_backward,
    streaming_attention_forward,
)

# The interleaved timing and its spreads are shared with the dense benchmark.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_attention import IDLE_S, medians, paired_spread, peak_bytes, round_ms

MIB = 2**20
MEMORY_LENGTHS = [1024, 2048, 4096, 8192, 16384]
MEMORY_TARGET = (8192, 16 * MIB)  # at T = 8192, d = 64, one head: at most 16 MiB
SPEED_CASES = [((1, 4, 4096, 64), False), ((1, 4, 4096, 64), True), ((1, 1, 8192, 64), False)]
TORCH_TARGET = 1.25
SMOKE_LENGTHS = [64, 128]
SMOKE_CASES = [((1, 2, 64, 16), False), ((1, 2, 64, 16), True)]


# ---------------------------------------------------------------- contenders


def streaming_pass(causal, block_size=None):
    keywords = {"causal": causal}
    if block_size is not None:
        keywords["block_size"] = block_size

    def run(Q, K, V, grad_output):
        output, cache = streaming_attention_forward(Q, K, V, return_cache=True, **keywords)
        return (output, *streaming_attention_backward(grad_output, cache))

    return run


def dense_pass(causal):
    def run(Q, K, V, grad_output):
        mask = causal_mask(Q.shape[-2], K.shape[-2]) if causal else None
        output, cache = attention_forward(Q, K, V, mask, return_cache=True)
        return (output, *attention_backward(grad_output, cache))

    return run


def torch_pass(causal):
    """SDPA forward+backward as a function of NumPy arrays, or None without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    torch.set_num_threads(blas_threads())  # the same thread count as NumPy's BLAS

    def run(Q, K, V, grad_output):
        q, k, v = (torch.from_numpy(a).requires_grad_() for a in (Q, K, V))
        output = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        output.backward(torch.from_numpy(grad_output))
        return (output.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy())

    return run


def blas_threads():
    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1)


def random_inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(np.float32) for _ in range(4))


def assert_same(ours, theirs, what):
    """float32 agreement, relative to the largest entry of each array."""
    for a, b in zip(ours, theirs, strict=True):
        error = np.abs(a - b).max() / max(np.abs(b).max(), np.finfo(np.float32).tiny)
        if error > 1e-4:
            raise AssertionError(f"{what}: error {error:.1e} relative to the largest entry")


# ---------------------------------------------------------------- memory


def memory_table(lengths, d=64):
    """Peak MiB of forward+backward for one head of each length, both paths."""
    rows = []
    for length in lengths:
        args = random_inputs((1, 1, length, d))
        streaming_mib = peak_bytes(streaming_pass(False), args) / MIB
        dense_mib = peak_bytes(dense_pass(False), args) / MIB
        rows.append((length, streaming_mib, dense_mib))
        ratio = streaming_mib / dense_mib
        print(f"| {length} | {streaming_mib:.1f} | {dense_mib:.1f} | {ratio:.3f}x |", flush=True)
    return rows


# ---------------------------------------------------------------- speed


def speed_row(shape, causal, repeats, budget_s, idle_s, with_torch):
    args = random_inputs(shape)
    contenders = {"streaming": streaming_pass(causal), "dense": dense_pass(causal)}
    reference = contenders["streaming"](*args)
    assert_same(reference, contenders["dense"](*args), f"dense {shape}")
    if with_torch and (theirs := torch_pass(causal)) is not None:
        assert_same(reference, theirs(*args), f"torch {shape}")
        contenders["torch"] = theirs
    rounds = round_ms(contenders, args, repeats, budget_s, idle_s)
    row = {"shape": shape, "causal": causal, "rounds": rounds, **medians(rounds)}
    print_speed_row(row)
    return row


def print_speed_row(row):
    mask = "causal" if row["causal"] else "none"
    torch_ms = f"{row['torch']:.1f}" if "torch" in row else "-"
    versus_torch = "-"
    if "torch" in row:
        lower, upper = paired_spread(row["rounds"]["streaming"], row["rounds"]["torch"])
        versus_torch = f"{row['streaming'] / row['torch']:.2f}x ({lower:.2f}-{upper:.2f})"
    lower, upper = paired_spread(row["rounds"]["streaming"], row["rounds"]["dense"])
    versus_dense = f"{row['streaming'] / row['dense']:.2f}x ({lower:.2f}-{upper:.2f})"
    cells = [
        str(row["shape"]),
        mask,
        f"{row['streaming']:.1f}",
        f"{row['dense']:.1f}",
        torch_ms,
        versus_torch,
        versus_dense,
    ]
    print("| " + " | ".join(cells) + " |", flush=True)


# ---------------------------------------------------------------- where the time goes


def block_products(block_size):
    """The seven block products of streaming forward+backward (no mask), and nothing else."""

    def products(Q, K, V, grad_output):
        blocks = [slice(start, start + block_size) for start in range(0, Q.shape[-2], block_size)]
        K_t = np.ascontiguousarray(np.swapaxes(K, -1, -2))
        for rows in blocks:  # forward: scores, then weights times values
            for cols in blocks:
                (Q[..., rows, :] @ K_t[..., cols]) @ V[..., cols, :]
        for cols in blocks:  # backward: scores again, then the four gradient products
            key_t = np.ascontiguousarray(np.swapaxes(K[..., cols, :], -1, -2))
            value_t = np.ascontiguousarray(np.swapaxes(V[..., cols, :], -1, -2))
            for rows in blocks:
                weights = Q[..., rows, :] @ key_t
                np.swapaxes(weights, -1, -2) @ grad_output[..., rows, :]
                grad_scores = grad_output[..., rows, :] @ value_t
                np.swapaxes(grad_scores, -1, -2) @ Q[..., rows, :]
                grad_scores @ K[..., cols, :]

    return products


def exp_passes(block_size, length):
    """The two exp passes per block of forward+backward (one in each pass)."""
    block = np.random.default_rng(0).standard_normal((block_size, block_size)).astype(np.float32)
    out = np.empty_like(block)
    n_blocks = (length // block_size) ** 2

    def exps(Q, K, V, grad_output):
        for _ in range(2 * n_blocks):
            np.exp(block, out=out)

    return exps


def time_breakdown(length, block_size, repeats, idle_s, with_torch):
    """Streaming forward+backward of one head on one thread, split into its parts."""
    # (1, 1, T, d) as in the speed table: torch took 1.7x longer on a 2-D (T, d) input.
    args = random_inputs((1, 1, length, 64))
    parts = {
        "streaming forward+backward": streaming_pass(False, block_size),
        "the seven block products": block_products(block_size),
        "the two exp passes": exp_passes(block_size, length),
    }
    with threadpool_limits(1):
        # made under the limit, so torch gets one thread too
        if with_torch and (theirs := torch_pass(False)) is not None:
            parts["torch forward+backward"] = theirs
        times = medians(round_ms(parts, args, repeats, 0.0, idle_s))
    total = times["streaming forward+backward"]
    print()
    print(
        f"Where the time goes: one head, T = {length}, d = 64, float32, one thread, blocks of "
        f"{block_size} (medians):"
    )
    print()
    for name, ms in times.items():
        print(f"- {name}: {ms:.1f} ms ({ms / total:.2f} of streaming)")
    rest = total - times["the seven block products"] - times["the two exp passes"]
    print(
        f"- the rest (other element-wise passes, Python per block): {rest:.1f} ms "
        f"({rest / total:.2f})"
    )
    return times


# ---------------------------------------------------------------- report


def machine():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line)
    except (OSError, StopIteration):
        pass
    blas = ", ".join(
        f"{i['internal_api']} {i.get('version')} ({i.get('architecture')} kernel, "
        f"{i['num_threads']} threads)"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    )
    return f"{model}, {os.cpu_count()} cores; numpy {np.__version__}; BLAS: {blas}"


def torch_version():
    try:
        import torch
    except ImportError:
        return "not installed"
    return f"{torch.__version__} ({blas_threads()} threads: set to the BLAS's count when timed)"


def memory_verdict(rows):
    length, limit = MEMORY_TARGET
    for row_length, streaming_mib, dense_mib in rows:
        if row_length == length:
            verdict = "met" if streaming_mib * MIB <= limit else "MISSED"
            return (
                f"memory at T = {length}: streaming {streaming_mib:.1f} MiB (target <= "
                f"{limit // MIB} MiB: {verdict}), dense {dense_mib:.0f} MiB"
            )
    return f"memory: T = {length} not measured in this run, no verdict"


def speed_verdicts(rows):
    lines = []
    for row in rows:
        if "torch" not in row:
            continue
        ratio = row["streaming"] / row["torch"]
        lower, upper = paired_spread(row["rounds"]["streaming"], row["rounds"]["torch"])
        verdict = "met" if ratio <= TORCH_TARGET else "MISSED"
        mask = ", causal" if row["causal"] else ""
        lines.append(
            f"speed {row['shape']}{mask}: streaming/torch {ratio:.2f}x (target <= "
            f"{TORCH_TARGET:.2f}x: {verdict}; middle half of the rounds {lower:.2f}-{upper:.2f}x)"
        )
    return lines


def run(lengths, cases, repeats, budget_s, idle_s, with_torch):
    print(f"machine: {machine()}")
    print(f"torch: {torch_version() if with_torch else 'not used (--smoke)'}")
    memory_rows, speed_rows = [], []
    if lengths:
        memory_rows = run_memory(lengths)
    if cases:
        speed_rows = run_speed(cases, repeats, budget_s, idle_s, with_torch)
    print()
    for line in [memory_verdict(memory_rows), *speed_verdicts(speed_rows)]:
        print(line)
    return memory_rows, speed_rows


def run_memory(lengths):
    print()
    print("Peak memory of forward+backward, one head, d = 64, float32 (tracemalloc, MiB):")
    print()
    print("| T | streaming MiB | dense MiB | streaming/dense |")
    print("|---:|---:|---:|---:|", flush=True)
    return memory_table(lengths)


def run_speed(cases, repeats, budget_s, idle_s, with_torch):
    print()
    print("Forward+backward, float32, medians in ms (middle half of the per-round ratios):")
    print()
    print(
        "| (B, H, T, d) | mask | streaming ms | dense ms | torch ms | streaming/torch "
        "| streaming/dense |"
    )
    print("|---|---|---:|---:|---:|---:|---:|", flush=True)
    return [
        speed_row(shape, causal, repeats, budget_s, idle_s, with_torch) for shape, causal in cases
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, no torch, seconds (CI)")
    parser.add_argument(
        "--threads", type=int, default=None, help="BLAS (and torch) threads; default: all"
    )
    parser.add_argument(
        "--only",
        choices=["memory", "speed", "breakdown"],
        default=None,
        help="only the memory table, the speed table, or where the time goes",
    )
    args = parser.parse_args()
    if args.threads is not None:
        threadpool_limits(args.threads)
    lengths, cases = (SMOKE_LENGTHS, SMOKE_CASES) if args.smoke else (MEMORY_LENGTHS, SPEED_CASES)
    if args.only == "breakdown":
        if args.smoke:
            time_breakdown(128, 32, repeats=2, idle_s=0.0, with_torch=False)
        else:
            time_breakdown(4096, 256, repeats=7, idle_s=IDLE_S, with_torch=True)
        return
    lengths = [] if args.only == "speed" else lengths
    cases = [] if args.only == "memory" else cases
    if args.smoke:
        run(lengths, cases, repeats=2, budget_s=0.0, idle_s=0.0, with_torch=False)
        time_breakdown(128, 32, repeats=2, idle_s=0.0, with_torch=False)
    else:
        run(lengths, cases, repeats=9, budget_s=1.0, idle_s=IDLE_S, with_torch=True)
        time_breakdown(4096, 256, repeats=7, idle_s=IDLE_S, with_torch=True)


if __name__ == "__main__":
    main()
