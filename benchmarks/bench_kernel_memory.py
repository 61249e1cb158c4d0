"""Memory per kernel: what each notebook's kernel holds after its last cell.

Usage::

    python benchmarks/bench_kernel_memory.py [NOTEBOOK ...] [--explain] [--check]
        [--threads N] [--json FILE] [--smoke]
    python benchmarks/record.py bench_kernel_memory.py --explain   # docs/results/

Each notebook (default: every ``notebooks/0*.ipynb``) runs top to bottom in a fresh
``python3`` kernel, as ``make execute`` and nbval run it (its own folder as working
directory, the BLAS threads the kernel gets by default, or ``--threads N`` as the class hub
sets ``OPENBLAS_NUM_THREADS=1`` for its students' servers). Once the
last cell is done, the kernel's resident set (RSS), proportional set (PSS, its share of
pages it shares with other processes; what a class of kernels adds up to) and peak
resident set are read from ``/proc/PID/smaps_rollup`` and ``/proc/PID/status``. The
baseline is an empty kernel started in the same run, which has run nothing.

``--explain`` then asks each kernel, after the measurement, what it keeps alive: the
modules it imported beyond the empty kernel's (torch and scipy by name), the figures pyplot
still holds, the NumPy arrays the garbage collector can reach and the largest of them by
name where a global holds one, and what its resident set falls to once those figures are
closed and the garbage collected, and again once freed memory is returned to the system
(``malloc_trim``).

The table marks a kernel above 150 MiB resident (issue 23's target); ``--check`` makes the
run exit 1 then. The kernels inherit this process's environment: run it with the settings a
class's servers give their kernels (``OPENBLAS_NUM_THREADS``, ``MALLOC_MMAP_THRESHOLD_``) to
measure those; the report names them.

``--smoke`` (``make test``) measures the baseline and notebook 07 only, with ``--explain``,
and checks that the figures are read at all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")  # this venv's kernel, as make execute

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
SMOKE_NOTEBOOKS = [ROOT / "notebooks" / "07_exercises.ipynb"]  # the quickest to run
CELL_TIMEOUT = 600
SETTLE_S = 1.0  # let the kernel finish sending the last outputs before reading /proc
TARGET_MIB = 150  # issue 23: every kernel at most this resident after its last cell
HEAVY_MODULES = ("torch", "scipy", "pandas", "sympy", "numba")

#: Run in the kernel after the measurement (--explain); prints one line of JSON.
EXPLAIN = r"""
def _memory_explain():
    import sys

    modules = sorted(sys.modules)  # before this cell imports anything
    import ctypes, gc, json
    import numpy as np

    def rss_kib():
        text = open("/proc/self/status").read()
        return int(text.split("VmRSS:")[1].split()[0])

    def owner(a):
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a

    names = {}
    for name, value in list(globals().items()):
        if isinstance(value, np.ndarray) and not name.startswith("_"):
            names.setdefault(id(owner(value)), name)
    # arrays are not tracked by the garbage collector: find them as what tracked objects hold
    owners = {}
    for holder in gc.get_objects():
        for obj in gc.get_referents(holder):
            if isinstance(obj, np.ndarray):
                base = owner(obj)
                if isinstance(base, np.ndarray):
                    owners[id(base)] = base
    largest = sorted(owners.values(), key=lambda a: a.nbytes, reverse=True)[:5]
    pyplot = sys.modules.get("matplotlib.pyplot")
    found = {
        "modules": modules,
        "figures": len(pyplot.get_fignums()) if pyplot else 0,
        "array_mib": sum(a.nbytes for a in owners.values()) / 2**20,
        "largest": [
            [names.get(id(a), "?"), list(a.shape), str(a.dtype), a.nbytes / 2**20]
            for a in largest
        ],
        "rss_before_kib": rss_kib(),
    }
    if pyplot:
        pyplot.close("all")
    gc.collect()
    found["rss_collected_kib"] = rss_kib()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    found["rss_trimmed_kib"] = rss_kib()
    print(json.dumps(found))


_memory_explain()
del _memory_explain
"""


def memory_kib(pid: int) -> dict[str, int]:
    """RSS and PSS (smaps_rollup) and peak RSS (status) of a process, in KiB."""
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    fields = {k.lower(): int(v) for k, v in re.findall(r"^(Rss|Pss):\s+(\d+) kB", rollup, re.M)}
    status = Path(f"/proc/{pid}/status").read_text()
    fields["peak"] = int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1))
    return fields


BLAS_THREADS = (  # NumPy loads the BLAS (in the empty kernel too, after its measurement)
    "import numpy\n"
    "from threadpoolctl import threadpool_info as _tpi\n"
    "print(max([i['num_threads'] for i in _tpi() if i['user_api'] == 'blas'] or [1]))\n"
    "del _tpi"
)


def run_probe(client: NotebookClient, source: str) -> str:
    """Run one more cell in the client's kernel; what it printed."""
    probe = nbformat.v4.new_code_cell(source)
    client.nb.cells.append(probe)
    client.execute_cell(probe, len(client.nb.cells) - 1)
    return "".join(out.get("text", "") for out in probe.outputs if out.output_type == "stream")


def run_in_kernel(path: Path | None, explain: bool) -> dict:
    """Run a notebook (None: nothing) in a fresh kernel; its memory after the last cell."""
    nb = nbformat.read(path, as_version=4) if path else nbformat.v4.new_notebook()
    folder = path.parent if path else ROOT / "notebooks"
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT,
        record_timing=False,
        resources={"metadata": {"path": str(folder)}},
    )
    started = time.monotonic()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        after_cells = []
        for index, cell in enumerate(list(nb.cells)):
            client.execute_cell(cell, index)
            if cell.cell_type == "code":
                after_cells.append([index, memory_kib(pid)["rss"]])
        seconds = time.monotonic() - started
        time.sleep(SETTLE_S)
        result = {
            "notebook": path.name if path else "(empty kernel)",
            "code_cells": sum(cell.cell_type == "code" for cell in nb.cells),
            "seconds": round(seconds, 1),
            **memory_kib(pid),
            "rss_after_cell": after_cells,
        }
        # after the measurement: these cells are not free (they import NumPy, threadpoolctl)
        if explain:
            result["explain"] = json.loads(run_probe(client, EXPLAIN))
        result["blas_threads"] = int(run_probe(client, BLAS_THREADS))
    return result


def mib(kib: float) -> str:
    return f"{kib / 1024:.0f}"


def growth(run: dict, baseline: dict, least_kib: int = 3 * 1024) -> list[tuple[int, int]]:
    """The cells (notebook index) after which the resident set grew by least_kib or more."""
    before, grown = baseline["rss"], []
    for index, rss in run["rss_after_cell"]:
        if rss - before >= least_kib:
            grown.append((index, rss - before))
        before = rss
    return grown


def explain_text(run: dict, baseline: dict) -> str:
    found = run["explain"]
    new_modules = set(found["modules"]) - set(baseline["explain"]["modules"])
    packages = {module.split(".")[0] for module in new_modules}
    heavy = [m for m in HEAVY_MODULES if m in packages]
    largest = ", ".join(
        f"{name} {'x'.join(map(str, shape)) or 'scalar'} {dtype} {size:.1f} MiB"
        for name, shape, dtype, size in found["largest"][:3]
        if size >= 0.5
    )
    cells = ", ".join(f"cell {index} +{mib(kib)}" for index, kib in growth(run, baseline))
    return (
        f"grew after {cells or 'no cell by 3 MiB or more'} (MiB, cells numbered from 0)"
        + f"; {len(packages)} packages imported beyond the empty kernel's"
        + (f" (among them {', '.join(heavy)})" if heavy else " (no torch, no scipy)")
        + f"; {found['figures']} figures held by pyplot"
        + f"; NumPy arrays reachable {found['array_mib']:.1f} MiB"
        + (f" (largest: {largest})" if largest else "")
        + f"; RSS after closing figures and a full gc {mib(found['rss_collected_kib'])} MiB, "
        + f"then malloc_trim {mib(found['rss_trimmed_kib'])} MiB"
    )


def table(runs: list[dict], baseline: dict) -> str:
    lines = [
        "| kernel | code cells | RSS | PSS | peak RSS | RSS over the empty kernel | "
        "BLAS threads | run time |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in [baseline, *runs]:
        over = "" if run is baseline else f"+{mib(run['rss'] - baseline['rss'])}"
        flag = " ✗" if run["rss"] / 1024 > TARGET_MIB else ""
        lines.append(
            f"| {run['notebook']} | {run['code_cells']} | {mib(run['rss'])}{flag} | "
            f"{mib(run['pss'])} | {mib(run['peak'])} | {over} | {run['blas_threads']} | "
            f"{run['seconds']} s |"
        )
    return "\n".join(lines) + (
        f"\n\nMiB (2^20 bytes), read from /proc after the last cell; ✗: above {TARGET_MIB} MiB."
    )


def kernel_environment() -> str:
    """The variables the kernels inherit that change their threads or their allocator."""
    names = sorted(
        name
        for name in os.environ
        if name.startswith("MALLOC_") or name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    )
    settings = ", ".join(f"`{name}={os.environ[name]}`" for name in names)
    return settings or "no BLAS thread or glibc malloc settings (the defaults)"


def report(runs: list[dict], baseline: dict) -> str:
    text = [f"The kernels' environment: {kernel_environment()}.\n", table(runs, baseline)]
    if "explain" in baseline:
        text.append("\nWhat each kernel keeps alive:\n")
        text += [f"- {run['notebook']}: {explain_text(run, baseline)}." for run in runs]
    return "\n".join(text) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/0*.ipynb")
    parser.add_argument("--explain", action="store_true", help="ask each kernel what it holds")
    parser.add_argument("--check", action="store_true", help=f"exit 1 above {TARGET_MIB} MiB")
    parser.add_argument("--json", type=Path, help="write the figures as JSON here")
    parser.add_argument("--smoke", action="store_true", help="the empty kernel and 07 only")
    parser.add_argument(
        "--threads", type=int, help="BLAS threads per kernel (default: as many as it takes)"
    )
    args = parser.parse_args(argv)
    if args.threads:  # the kernels inherit this process's environment
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.threads)
    paths = SMOKE_NOTEBOOKS if args.smoke else [p.resolve() for p in args.notebooks] or NOTEBOOKS
    explain = args.explain or args.smoke
    baseline = run_in_kernel(None, explain)
    runs = []
    for path in paths:
        print(f"running {path.name}", file=sys.stderr, flush=True)
        runs.append(run_in_kernel(path, explain))
    print(report(runs, baseline))
    if args.json:
        args.json.write_text(json.dumps({"baseline": baseline, "runs": runs}, indent=1) + "\n")
    if args.smoke:
        # the empty kernel has not imported NumPy: a notebook that does holds more
        (run,) = runs
        figures = {key: (baseline[key], run[key]) for key in ("rss", "pss", "peak")}
        assert 20 * 1024 < baseline["rss"] < run["rss"] <= run["peak"], figures
        assert 0 < run["pss"] <= run["rss"], figures
        assert "numpy" in set(run["explain"]["modules"]) - set(baseline["explain"]["modules"])
        found = run["explain"]
        assert found["rss_trimmed_kib"] <= found["rss_before_kib"], found["rss_before_kib"]
    over = [run["notebook"] for run in runs if run["rss"] / 1024 > TARGET_MIB]
    if args.check and over:
        print(f"above {TARGET_MIB} MiB resident: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
