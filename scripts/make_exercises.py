"""Generate the student notebook from the solutions master (``make exercises``).

Usage: ``python scripts/make_exercises.py [--check]``

The master is ``notebooks/solutions/07_exercises_solutions.ipynb``. Its
answers sit between nbgrader's delimiters, ``### BEGIN SOLUTION`` and
``### END SOLUTION`` (each alone on its line), in code cells and in Markdown
cells alike, and each such cell carries nbgrader's cell metadata
(``metadata.nbgrader``: code answers are autograded-answer cells, written
answers manually graded cells with points); each checker cell is a locked
autograder test cell with the points of its part. This script does what
nbgrader's ``generate_assignment`` does with them, without depending on nbgrader:

* in a code cell, each region becomes ``# YOUR CODE HERE`` and
  ``raise NotImplementedError()``, indented like the ``BEGIN`` line (so a region
  inside a function body leaves a function that raises when called);
* in a Markdown cell, each region becomes ``YOUR ANSWER HERE``;
* outputs and execution counts are cleared.

One more step is ours: relative links in Markdown are rewritten for the
student notebook's folder (``../../README.md`` in ``notebooks/solutions/``
becomes ``../README.md`` in ``notebooks/``), so both files link correctly.

Without ``--check`` the student notebook ``notebooks/07_exercises.ipynb`` is
written (``make exercises`` then executes it). With ``--check`` nothing is
written; the exit status is 1 when the stored student notebook's cells (type,
source, metadata) differ from a fresh generation, which is what the tests
check too. Outputs are not compared: they come from executing the notebook.
"""

from __future__ import annotations

import argparse
import copy
import posixpath
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
MASTER = ROOT / "notebooks" / "solutions" / "07_exercises_solutions.ipynb"
STUDENT = ROOT / "notebooks" / "07_exercises.ipynb"
# Folders of the two notebooks relative to the checkout, for rebasing relative links.
MASTER_DIR = MASTER.parent.relative_to(ROOT).as_posix()
STUDENT_DIR = STUDENT.parent.relative_to(ROOT).as_posix()

# nbgrader's delimiters: a line that is exactly one of these, once stripped.
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
TEXT_STUB = ("YOUR ANSWER HERE",)
# Cell metadata that execution writes (timings); never part of the comparison.
VOLATILE_METADATA = ("execution", "ExecuteTime")
MARKDOWN_LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
EXTERNAL = re.compile(r"^([a-z][a-z0-9+.-]*:|#|/)", re.IGNORECASE)


def clear_solutions(source: str, cell_type: str) -> str:
    """Replace each BEGIN/END SOLUTION region of one cell by the student stub.

    >>> print(clear_solutions("def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n"
    ...                       "    ### END SOLUTION", "code"))
    def f():
        # YOUR CODE HERE
        raise NotImplementedError()
    """
    stub = CODE_STUB if cell_type == "code" else TEXT_STUB
    lines, region_indent = [], None
    for number, line in enumerate(source.split("\n"), 1):
        if line.strip() == BEGIN:
            if region_indent is not None:
                raise ValueError(f"line {number}: {BEGIN} inside an open solution region")
            region_indent = line[: len(line) - len(line.lstrip())]
            lines += [region_indent + stub_line for stub_line in stub]
        elif line.strip() == END:
            if region_indent is None:
                raise ValueError(f"line {number}: {END} without a {BEGIN} before it")
            region_indent = None
        elif region_indent is None:
            lines.append(line)
    if region_indent is not None:
        raise ValueError(f"a {BEGIN} region is never closed by {END}")
    return "\n".join(lines)


def rebase_links(markdown: str, source_dir: str, target_dir: str) -> str:
    """Rewrite relative Markdown link targets written in ``source_dir`` for ``target_dir``.

    Both directories are POSIX paths relative to the same root.

    >>> rebase_links("[map](../../README.md), [x](#top)", "notebooks/solutions", "notebooks")
    '[map](../README.md), [x](#top)'
    """

    def rebase(match):
        target = match[2]
        if EXTERNAL.match(target):
            return match[0]
        path, _, anchor = target.partition("#")
        moved = posixpath.relpath(posixpath.normpath(posixpath.join(source_dir, path)), target_dir)
        return match[1] + moved + (f"#{anchor}" if anchor else "")

    return MARKDOWN_LINK.sub(rebase, markdown)


def student_notebook(master: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version of ``master``: solutions cleared, outputs cleared, links rebased."""
    student = copy.deepcopy(master)
    for number, cell in enumerate(student.cells, 1):
        try:
            cell.source = clear_solutions(cell.source, cell.cell_type)
        except ValueError as error:
            raise ValueError(f"{MASTER.name}, cell {number}: {error}") from None
        for key in VOLATILE_METADATA:
            cell.metadata.pop(key, None)
        if cell.cell_type == "markdown":
            cell.source = rebase_links(cell.source, MASTER_DIR, STUDENT_DIR)
        elif cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return student


def cell_contents(nb: nbformat.NotebookNode) -> list[tuple]:
    """What generation decides about each cell: type, source and metadata (not outputs)."""
    contents = []
    for cell in nb.cells:
        metadata = {k: v for k, v in cell.metadata.items() if k not in VOLATILE_METADATA}
        contents.append((cell.cell_type, cell.source, metadata))
    return contents


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail when the stored student notebook differs from a fresh one",
    )
    args = parser.parse_args(argv)
    fresh = student_notebook(nbformat.read(MASTER, as_version=4))
    if args.check:
        stored = nbformat.read(STUDENT, as_version=4)
        if cell_contents(stored) != cell_contents(fresh):
            print(f"{STUDENT} is out of date: run `make exercises`.")
            return 1
        print(f"{STUDENT} matches {MASTER}.")
        return 0
    nbformat.validate(fresh)
    nbformat.write(fresh, STUDENT)
    print(f"wrote {STUDENT} from {MASTER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
