"""Speed of attention_lib's forward and backward pass, as ratios to baselines.

"ours" is the public ``attention_forward`` and ``attention_backward`` as they
choose their path: the fast path (``attention_lib._fast``) for inputs with 4 MB
of weights or more, which is every row of the table but T = 128, where ours and
the chapter run the same code. Baselines are measured in the same run, on the
same inputs and thread count:

* "chapter": the library's readable path, the chapter's listings 19.1 and 19.4
  as the bodies of ``attention_forward`` and ``attention_backward`` write them,
  kept at every size by ``attention_path("readable")``;
* "torch": ``torch.nn.functional.scaled_dot_product_attention`` on the CPU,
  under ``no_grad`` for the forward and through autograd for forward+backward,
  when PyTorch is installed (it is not a dependency of attention_lib).

Before timing, every implementation's output and gradients are checked against
ours. Printed: medians in milliseconds, ours/chapter and ours/torch ratios,
peak extra memory of forward+backward (tracemalloc, ours/chapter), and what
the input checks (finiteness included) cost as a share of forward+backward.
Beside each torch target, the middle half of the per-round ratios shows how
far the verdict could move from run to run on this machine.

Usage::

    python benchmarks/bench_attention.py            # the full table (a few minutes)
    python benchmarks/bench_attention.py --smoke    # tiny sizes, seconds (CI)

Targets (float32, T >= 256): forward+backward <= 0.8x chapter at T >= 1024 and
<= 1.0x torch. float64 and T = 128 are reported, not targeted.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from attention_lib import attention_backward, attention_forward, attention_path
from attention_lib._validation import as_float_array

SHAPES = [(1, 1, 128, 64), (4, 8, 256, 64), (2, 8, 1024, 64), (1, 4, 4096, 64)]
SMOKE_SHAPES = [(1, 2, 16, 8)]
# Long enough for OpenBLAS's and OpenMP's spinning threads to go to sleep.
IDLE_S = 0.3


# ---------------------------------------------------------------- implementations


def ours_forward(Q, K, V, grad_output):
    return attention_forward(Q, K, V)


def ours_forward_backward(Q, K, V, grad_output):
    output, cache = attention_forward(Q, K, V, return_cache=True)
    return (output, *attention_backward(grad_output, cache))


def chapter_forward_only(Q, K, V, grad_output):
    with attention_path("readable"):
        return ours_forward(Q, K, V, grad_output)


def chapter_forward_backward(Q, K, V, grad_output):
    with attention_path("readable"):
        return ours_forward_backward(Q, K, V, grad_output)


def six_products(matmul, transpose):
    """The six matrix products of forward+backward, and nothing else.

    Timed with NumPy's BLAS and with torch's, they show how much of the gap to
    torch is the BLAS library itself rather than our code.
    """

    def products(Q, K, V, grad_output):
        weights = matmul(Q, transpose(K))
        matmul(weights, V)
        matmul(transpose(weights), grad_output)
        grad_weights = matmul(grad_output, transpose(V))
        matmul(grad_weights, K)
        matmul(transpose(grad_weights), Q)

    return products


numpy_products = six_products(np.matmul, lambda a: np.swapaxes(a, -1, -2))


def input_checks(Q, K, V, grad_output):
    for name, array in (("Q", Q), ("K", K), ("V", V), ("grad_output", grad_output)):
        as_float_array(array, name)


def torch_pair():
    """SDPA forward / forward+backward as functions of NumPy arrays, or None."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    # Same thread count as NumPy's BLAS (torch's own OpenMP pool shows up in
    # threadpool_info too, so look at the BLAS entries only).
    blas_threads = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    torch.set_num_threads(max(blas_threads, default=1))

    def forward(Q, K, V, grad_output):
        with torch.no_grad():
            q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
            return F.scaled_dot_product_attention(q, k, v).numpy()

    def forward_backward(Q, K, V, grad_output):
        q, k, v = (torch.from_numpy(a).requires_grad_() for a in (Q, K, V))
        output = F.scaled_dot_product_attention(q, k, v)
        output.backward(torch.from_numpy(grad_output))
        return (output.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy())

    def products(Q, K, V, grad_output):
        arrays = (torch.from_numpy(a) for a in (Q, K, V, grad_output))
        six_products(torch.matmul, lambda a: a.transpose(-1, -2))(*arrays)

    return forward, forward_backward, products, torch.__version__


# ---------------------------------------------------------------- measuring


def round_ms(functions, args, repeats, budget_s, idle_s=IDLE_S):
    """Milliseconds of each function in every round, the contenders timed in turn.

    Interleaving matters on a shared machine: a burst of load from elsewhere
    slows every contender of that round alike instead of one of them, so the
    ratios stay meaningful even when the absolute times drift, and the ratio
    within one round pairs two calls made under the same conditions. But thread
    pools keep spinning after their last call (OpenBLAS's pthreads for about
    0.1 s, torch's OpenMP too) and would slow whichever library runs next. So
    each turn first idles until the other library's pools sleep, then makes
    one untimed call to wake its own, as a loop calling it repeatedly would.
    """
    times = {name: [] for name in functions}
    start = time.perf_counter()
    rounds = 0
    while rounds < repeats or (time.perf_counter() - start < budget_s and rounds < 50):
        for name, function in functions.items():
            time.sleep(idle_s)
            function(*args)  # untimed: wakes this library's own thread pools
            tic = time.perf_counter()
            function(*args)
            times[name].append(1e3 * (time.perf_counter() - tic))
        rounds += 1
    return times


def medians(rounds):
    """Median milliseconds of each function in a :func:`round_ms` result."""
    return {name: statistics.median(values) for name, values in rounds.items()}


def median_ms(functions, args, repeats, budget_s, idle_s=IDLE_S):
    return medians(round_ms(functions, args, repeats, budget_s, idle_s))


def paired_spread(numerator, denominator):
    """Lower and upper quartile of the per-round ratios ``numerator / denominator``."""
    ratios = [a / b for a, b in zip(numerator, denominator, strict=True)]
    lower, _, upper = statistics.quantiles(ratios, n=4, method="inclusive")
    return lower, upper


def peak_bytes(function, args):
    tracemalloc.start()
    function(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def assert_same(ours, theirs, dtype, what):
    tolerance = 2e-3 if dtype == np.float32 else 1e-9
    for a, b in zip(_as_tuple(ours), _as_tuple(theirs), strict=True):
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance, err_msg=what)


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def run(shapes, dtypes, repeats, budget_s, idle_s=IDLE_S):
    torch_functions = torch_pair()
    print_header(torch_functions[3] if torch_functions else None)
    rows = []
    for dtype in dtypes:
        for shape in shapes:
            rng = np.random.default_rng(0)
            Q, K, V, grad_output = (rng.standard_normal(shape).astype(dtype) for _ in range(4))
            args = (Q, K, V, grad_output)
            pairs = {
                "forward": (ours_forward, chapter_forward_only),
                "fwd+bwd": (ours_forward_backward, chapter_forward_backward),
            }
            for kind, (ours, chapter) in pairs.items():
                reference = ours(*args)
                assert_same(reference, chapter(*args), dtype, f"chapter {kind} {shape}")
                contenders = {"ours": ours, "chapter": chapter}
                if torch_functions is not None:
                    theirs = torch_functions[0 if kind == "forward" else 1]
                    assert_same(reference, theirs(*args), dtype, f"torch {kind} {shape}")
                    contenders["torch"] = theirs
                row = {"dtype": np.dtype(dtype).name, "shape": shape, "kind": kind, "torch": None}
                rounds = round_ms(contenders, args, repeats, budget_s, idle_s)
                row.update(medians(rounds))
                if "torch" in rounds:
                    row["torch_spread"] = paired_spread(rounds["ours"], rounds["torch"])
                if kind == "fwd+bwd":
                    row["memory"] = peak_bytes(ours, args) / peak_bytes(chapter, args)
                    if torch_functions is not None:
                        contenders = {"numpy": numpy_products, "torch": torch_functions[2]}
                        row["products"] = median_ms(contenders, args, repeats, budget_s, idle_s)
                    checks = median_ms({"checks": input_checks}, args, repeats, budget_s, idle_s)
                    row["checks"] = checks["checks"] / row["ours"]
                print_row(row)
                rows.append(row)
    return rows


def print_header(torch_version):
    blas = ", ".join(
        f"{i['internal_api']} {i.get('version')} ({i.get('architecture')}, "
        f"{i['num_threads']} threads)"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    )
    torch_text = (
        f"{torch_version} ({torch_threads()} threads)" if torch_version else "not installed"
    )
    print(f"numpy {np.__version__}; BLAS: {blas}; torch: {torch_text}")
    print()
    print(
        "| dtype | (B, H, T, d) | pass | ours ms | chapter ms | torch ms | ours/chapter "
        "| ours/torch | memory ours/chapter | input checks |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|", flush=True)


def torch_threads():
    import torch

    return torch.get_num_threads()


def print_row(r):
    torch_ms = f"{r['torch']:.2f}" if r["torch"] is not None else "-"
    vs_torch = f"{r['ours'] / r['torch']:.2f}x" if r["torch"] is not None else "-"
    memory = f"{r['memory']:.2f}x" if "memory" in r else ""
    checks = f"{100 * r['checks']:.1f}%" if "checks" in r else ""
    cells = [
        r["dtype"],
        str(r["shape"]),
        r["kind"],
        f"{r['ours']:.2f}",
        f"{r['chapter']:.2f}",
        torch_ms,
        f"{r['ours'] / r['chapter']:.2f}x",
        vs_torch,
        memory,
        checks,
    ]
    print("| " + " | ".join(cells) + " |", flush=True)


def report_targets(rows):
    """Print each targeted ratio with its verdict (a report, never an assertion)."""
    print()
    for r in rows:
        if r["dtype"] != "float32" or r["kind"] != "fwd+bwd" or r["shape"][2] < 256:
            continue
        verdicts = []
        if r["shape"][2] >= 1024:
            ratio = r["ours"] / r["chapter"]
            verdict = "met" if ratio <= 0.8 else "MISSED"
            verdicts.append(f"ours/chapter {ratio:.2f}x (target <= 0.80x: {verdict})")
        if r["torch"] is not None:
            ratio = r["ours"] / r["torch"]
            verdict = "met" if ratio <= 1.0 else "MISSED"
            lower, upper = r["torch_spread"]
            verdicts.append(
                f"ours/torch {ratio:.2f}x (target <= 1.00x: {verdict}; "
                f"middle half of the rounds {lower:.2f}-{upper:.2f}x)"
            )
        print(f"float32 {r['shape']} fwd+bwd: " + "; ".join(verdicts))
        if "products" in r:
            numpy_ms, torch_ms = r["products"]["numpy"], r["products"]["torch"]
            print(
                f"    the six matrix products alone: NumPy's BLAS {numpy_ms:.1f} ms, "
                f"torch's {torch_ms:.1f} ms ({numpy_ms / torch_ms:.2f}x)"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds (CI)")
    parser.add_argument(
        "--threads", type=int, default=None, help="BLAS (and torch) threads; default: all"
    )
    args = parser.parse_args()
    if args.threads is not None:
        # Fewer threads than cores keeps a shared, busy machine from oversubscribing.
        threadpool_limits(args.threads)
    if args.smoke:
        rows = run(SMOKE_SHAPES, [np.float32, np.float64], repeats=2, budget_s=0.0, idle_s=0.0)
    else:
        rows = run(SHAPES, [np.float32, np.float64], repeats=9, budget_s=1.0)
    report_targets(rows)


if __name__ == "__main__":
    main()
