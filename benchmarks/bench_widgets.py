"""Cost of one control change in every explorer, against the naive way to redraw.

For each explorer that ``attention_lib.widgets.available_explorers()`` finds:

* ours: set a control as a user would (observers fire: ``update`` + in-place
  redraw of the reused Agg figure + PNG encoding), then read the PNG bytes
  that the browser receives;
* naive: the same ``update`` and ``draw`` into a NEW pyplot figure per change,
  ``savefig`` to PNG at matplotlib's default dpi, close the figure.

The two are interleaved change by change, so both see the same machine load
(these machines are shared and noisy). Prints the median milliseconds per
change and the ratio; the target is at most 0.4x naive.

Usage::

    PYTHONPATH=. python benchmarks/bench_widgets.py            # 40 changes each
    PYTHONPATH=. python benchmarks/bench_widgets.py --smoke    # a few, for CI
    PYTHONPATH=. python benchmarks/bench_widgets.py --only soft_lookup --repeats 100
"""

from __future__ import annotations

import argparse
import io
import platform
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from attention_lib import plots
from attention_lib.widgets import available_explorers, sqrt_dk, teach_walkthrough

TARGET = 0.4

#: Scripted control changes per explorer, stepped through in order (an explorer not
#: listed sweeps its main control, see default_changes). Benchmark data, so it lives
#: here and not in the library.
SCRIPTED_CHANGES = {
    "teach_walkthrough": (
        *({"step": step} for step in range(1, teach_walkthrough.N_STEPS + 1)),
        {"query_position": 1},
        {"query_position": 3},
        {"step": 1},
    ),
    "mask_order": tuple({"future_first": float(x)} for x in np.arange(-4.0, 6.5, 0.5)),
    "soft_lookup": tuple({"angle": float(a)} for a in range(-180, 180, 15)),
    "sqrt_dk": (
        *({"d_k": d} for d in sqrt_dk.D_K_CHOICES),
        {"scaled": True},
        *({"d_k": d} for d in reversed(sqrt_dk.D_K_CHOICES)),
        {"scaled": False},
    ),
    # A student's session, in order, ending where the explorer starts (so repeats are
    # alike): mostly clicks on cells (one cell more or less each time), causal on/off
    # and the real-token sliders, now and then a new T. 8 of the 26 redraw in full:
    # the four T changes, and four that empty a row or refill it (its row sum label
    # changes): blocking and freeing (0, 0) under the causal mask, and example 1
    # down to 1 real token while (1, 0) is blocked, then back to 3.
    "mask_editor": (
        {"blocked": ((4, 1),)},
        {"blocked": ((4, 1), (4, 2))},
        {"causal": False},
        {"blocked": ((2, 0), (4, 1), (4, 2))},
        {"lengths": (5, 2)},
        {"blocked": ((2, 0), (4, 2))},
        {"causal": True},
        {"lengths": (4, 2)},
        {"length": 6},
        {"blocked": ((2, 0), (4, 2), (5, 5))},
        {"lengths": (4, 5)},
        {"causal": False},
        {"blocked": ((4, 2), (5, 5))},
        {"lengths": (6, 5)},
        {"causal": True},
        {"blocked": ((0, 0), (4, 2), (5, 5))},
        {"blocked": ((4, 2), (5, 5))},
        {"length": 8},
        {"lengths": (8, 3)},
        {"blocked": ((4, 2), (5, 5), (7, 1))},
        {"length": 4},
        {"blocked": ((1, 0),)},
        {"lengths": (4, 1)},
        {"length": 5},
        {"lengths": (5, 3)},
        {"blocked": ()},
    ),
    # Steps of the h slider (a SelectionSlider of 1, 2, 5 per decade) and the input toggle.
    "backward_step": (
        {"h": 1e-1},
        {"h": 1e-4},
        {"h": 1e-8},
        {"h": 1e-12},
        {"array": "K"},
        {"array": "V"},
        {"array": "Q"},
    ),
}


def default_changes(explorer, count=12):
    """Distinct values for the main control when a spec lists no changes."""
    key, control = next(iter(explorer.controls.items()))
    if hasattr(control, "options") and control.options:
        options = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return [{key: v} for v in options]
    if isinstance(control.value, bool):
        return [{key: v} for v in (not control.value, control.value)]
    if hasattr(control, "base"):  # FloatLogSlider: min and max are exponents
        values = control.base ** np.linspace(control.min, control.max, count)
        return [{key: float(v)} for v in values]
    if hasattr(control, "min") and hasattr(control, "max"):
        values = np.linspace(control.min, control.max, count)
        if isinstance(control.value, (int, np.integer)):
            values = np.unique(np.round(values).astype(int))
        return [{key: type(control.value)(v)} for v in values]
    raise ValueError(f"cannot sweep control {key!r}; list changes in the ExplorerSpec.")


def naive_change(spec, values, style):
    """What an explorer without the shell does: a new figure per change, default dpi."""
    state = spec.update(**values)
    with plots.series_style(style):
        fig = plt.figure(figsize=spec.figsize)
        spec.draw(fig, state)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        plt.close(fig)
    return buffer.getvalue()


def bench(spec, repeats):
    explorer = spec.factory()
    changes = list(SCRIPTED_CHANGES.get(spec.name, ())) or default_changes(explorer)
    # Skip a change equal to the current values (it would not fire an observer).
    ours, naive, sizes = [], [], []
    naive_change(spec, explorer.values, explorer.style)  # warm caches (fonts) for both
    for i in range(repeats):
        change = changes[i % len(changes)]
        if all(explorer.values.get(k) == v for k, v in change.items()):
            change = changes[(i + 1) % len(changes)]
        start = time.perf_counter()
        explorer.set(**change)
        png = explorer.png
        ours.append(time.perf_counter() - start)
        sizes.append(len(png))

        start = time.perf_counter()
        naive_png = naive_change(spec, explorer.values, explorer.style)
        naive.append(time.perf_counter() - start)
        sizes.append(-len(naive_png))
    explorer.close()
    ours_ms = statistics.median(ours) * 1e3
    naive_ms = statistics.median(naive) * 1e3
    our_kb = statistics.median(s for s in sizes if s > 0) / 1024
    naive_kb = statistics.median(-s for s in sizes if s < 0) / 1024
    return ours_ms, naive_ms, our_kb, naive_kb


def blas_line():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl is pinned in requirements
        return "BLAS: unknown (threadpoolctl missing)"
    info = [
        f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, "
        f"{i.get('num_threads')} threads)"
        for i in threadpool_info()
    ]
    return "BLAS: " + ("; ".join(info) or "none reported")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few changes only (CI)")
    parser.add_argument("--repeats", type=int, default=40, help="changes per explorer")
    parser.add_argument("--only", action="append", help="explorer name (repeatable)")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"exit 1 if any explorer is slower than {TARGET}x naive",
    )
    args = parser.parse_args(argv)
    repeats = 3 if args.smoke else args.repeats

    specs = available_explorers()
    if args.only:
        unknown = set(args.only) - set(specs)
        if unknown:
            parser.error(f"unknown explorer(s) {sorted(unknown)}; known: {sorted(specs)}")
        specs = {name: specs[name] for name in args.only}
    print(
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"matplotlib {matplotlib.__version__}; {blas_line()}"
    )
    print(
        f"{repeats} changes per explorer, median per change "
        "(update + redraw + PNG bytes); naive = new pyplot figure + savefig at default dpi"
    )
    print(
        f"{'explorer':<16}{'ours ms':>9}{'naive ms':>10}{'ratio':>7}"
        f"{'ours kB':>9}{'naive kB':>10}  target <= {TARGET}x"
    )
    slow = []
    for name, spec in specs.items():
        ours_ms, naive_ms, our_kb, naive_kb = bench(spec, repeats)
        ratio = ours_ms / naive_ms
        verdict = "met" if ratio <= TARGET else "NOT met"
        if ratio > TARGET:
            slow.append(name)
        print(
            f"{name:<16}{ours_ms:>9.1f}{naive_ms:>10.1f}{ratio:>6.2f}x"
            f"{our_kb:>9.1f}{naive_kb:>10.1f}  {verdict}"
        )
    if not specs:
        print("no explorers found")
    if args.smoke:
        print("(smoke run: too few changes for the numbers to mean much)")
    return 1 if (args.check and slow) else 0


if __name__ == "__main__":
    sys.exit(main())
