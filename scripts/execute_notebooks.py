"""Re-execute notebooks in place, the same way every time (``make execute``).

Usage: ``python scripts/execute_notebooks.py [NOTEBOOK ...]``; without arguments
every ``notebooks/**/*.ipynb`` (checkpoints excluded) is executed, in name order.

Each notebook runs top to bottom in a fresh ``python3`` kernel of the interpreter
running this script, with its own folder as working directory (as nbval does, so
relative paths behave the same under ``make test``). Timing metadata is not
recorded and widget state and views are dropped, so re-running a seeded notebook gives
a byte-identical file. A notebook is written only when every cell succeeded
(cells tagged ``raises-exception`` may raise).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Prefer this venv's kernelspec over one a user registered in ~/.local/share/jupyter.
os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
TIMEOUT_SECONDS = 600  # per cell
TIMING_KEYS = ("execution", "ExecuteTime")  # nbclient/JupyterLab, jupyter_contrib_nbextensions
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def find_notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def strip_volatile(nb: nbformat.NotebookNode) -> None:
    """Drop widget state, widget views and timing metadata, which change on every run.

    A widget view only points at a random model id in the (dropped) widget state,
    so it cannot render from the file; its text/plain fallback stays.
    """
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for key in TIMING_KEYS:
            cell.metadata.pop(key, None)
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
        if "outputs" in cell:
            cell.outputs = coalesce_streams(cell.outputs)


def coalesce_streams(outputs):
    """Merge consecutive stream outputs of the same stream into one.

    How printed text is split into messages depends on timing, so the same
    prints can be stored as one output or several; merged, the file is the
    same on every run (nbval merges streams itself before comparing).
    """
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def check_kernelspec() -> None:
    """Make sure kernel "python3" runs this interpreter (the venv's), or stop."""
    spec = KernelSpecManager().get_kernel_spec("python3")
    argv0 = spec.argv[0]
    # jupyter_client substitutes sys.executable for a bare "python"/"python3".
    bare = {"python", "python3", f"python3.{sys.version_info[1]}"}
    if argv0 not in bare and Path(argv0).resolve() != Path(sys.executable).resolve():
        sys.exit(
            f"kernelspec python3 ({spec.resource_dir}) runs {argv0}, not this venv's "
            f"{sys.executable}; remove that kernelspec or run with this venv's python."
        )


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=TIMEOUT_SECONDS,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    strip_volatile(nb)
    # JupyterLab rewrites a kernelspec that differs from the installed one, which marks
    # a notebook modified the moment it opens.
    spec = KernelSpecManager().get_kernel_spec("python3")
    nb.metadata.kernelspec = {
        "display_name": spec.display_name,
        "language": spec.language,
        "name": "python3",
    }
    nbformat.write(nb, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: all of notebooks/")
    args = parser.parse_args(argv)
    paths = args.notebooks or find_notebooks()
    check_kernelspec()
    if not paths:
        print("No notebooks to execute.")
    for path in paths:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"{path} is not a notebook file")
        print(f"executing {path}", flush=True)
        execute(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
