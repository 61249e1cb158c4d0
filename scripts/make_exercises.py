"""Generate the student notebook from the solutions master (``make exercises``).

Usage: ``python scripts/make_exercises.py [--check]``

The master is ``notebooks/solutions/07_exercises_solutions.ipynb``, written for
nbgrader: its answers sit between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
(each alone on its line) in solution cells (``metadata.nbgrader``: code answers
autograded-answer cells, written answers manually graded cells with points), and
each checker cell is a locked autograder test cell with the points of its part,
whose ``### BEGIN HIDDEN TESTS`` region fails the cell when the checker does not
pass. This script makes the student version the way nbgrader's
``generate_assignment`` does with its default settings, without depending on
nbgrader (the series' environment does not have it):

* in a code cell, each solution region becomes ``# YOUR CODE HERE`` and
  ``raise NotImplementedError()``, indented like the ``BEGIN`` line (so a region
  inside a function body leaves a function that raises when called); in a
  Markdown cell, ``YOUR ANSWER HERE``; a solution cell without a region becomes
  the stub as a whole;
* each hidden-test region is removed;
* solution cells cannot be deleted, test cells and other locked cells can be
  neither deleted nor edited (JupyterLab's ``deletable`` and ``editable``);
* outputs and execution counts are cleared.

nbgrader reads every line that *contains* ``BEGIN SOLUTION``, ``END SOLUTION``,
``BEGIN HIDDEN TESTS`` or ``END HIDDEN TESTS`` as a delimiter, and this script
refuses a master where such a line is not the delimiter alone, or where a region
sits in a cell of the wrong kind, as nbgrader would: the two cannot read one
master differently. It also refuses nbgrader directives it does not carry out
(mark schemes, ``### AUTOTEST``).

**One generator.** This script writes ``notebooks/07_exercises.ipynb``, the
notebook every student gets (with the series, or through the hub's nbgitpuller
link). A class graded with nbgrader runs ``generate_assignment`` on the same
master (hub/nbgrader/course.py copies it into the course), and its release
differs from this script's output in three ways only, none of which changes a
grade (tests/test_grading.py runs nbgrader and checks exactly this, with
:func:`release_as_generated`):

* relative links: this script rewrites them for the student notebook's folder
  (``../../README.md`` in ``notebooks/solutions/`` becomes ``../README.md`` in
  ``notebooks/``); nbgrader leaves them as the master has them;
* nbgrader's bookkeeping in ``metadata.nbgrader``: ``checksum`` and
  ``cell_type``, which autograde takes from its gradebook anyway (a submitted
  notebook's own are overwritten), and which only ``nbgrader validate`` reads;
* outputs: the stored student notebook keeps those of running it (the checkers
  saying "not attempted yet", compared by nbval), nbgrader's release has none.

So a student may submit either: the grading loop grades both the same.

Without ``--check`` the student notebook is written (``make exercises`` then
executes it). With ``--check`` nothing is written; the exit status is 1 when the
stored student notebook's cells (type, source, metadata) differ from a fresh
generation, which is what the tests check too. Outputs are not compared: they
come from executing the notebook.
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

# nbgrader's delimiters, written alone on their line; nbgrader's defaults for the stubs.
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
TEXT_STUB = ("YOUR ANSWER HERE",)
# What nbgrader matches anywhere in a line (its delimiters without the comment marks),
# and directives of nbgrader's that this script does not carry out.
DELIMITER_WORDS = tuple(d.removeprefix("### ") for d in (BEGIN, END, BEGIN_HIDDEN, END_HIDDEN))
UNSUPPORTED = ("BEGIN MARK SCHEME", "END MARK SCHEME", "### AUTOTEST", "### HASHED AUTOTEST")
# Cell metadata that execution or the editor writes (timings, scrolling); generation drops
# it, as nbgrader's ClearOutput drops "collapsed" and "scrolled", and comparisons ignore it.
VOLATILE_METADATA = ("execution", "ExecuteTime", "collapsed", "scrolled")
# What nbgrader keeps in metadata.nbgrader for itself (see the module docstring).
NBGRADER_BOOKKEEPING = ("checksum", "cell_type")
MARKDOWN_LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
EXTERNAL = re.compile(r"^([a-z][a-z0-9+.-]*:|#|/)", re.IGNORECASE)


def replace_regions(source: str, begin: str, end: str, stub=()) -> tuple[str, bool]:
    """Replace each ``begin``..``end`` region of ``source`` by ``stub``; say if there was one.

    The stub's lines are indented like the ``begin`` line. A line that mentions any of
    nbgrader's delimiters without being one alone, or a directive this script does not
    carry out, is refused: nbgrader would read it as a delimiter.

    >>> replace_regions("x = 1\\n### BEGIN HIDDEN TESTS\\nassert x\\n### END HIDDEN TESTS",
    ...                 BEGIN_HIDDEN, END_HIDDEN)
    ('x = 1', True)
    """
    lines, region_indent, found = [], None, False
    for number, line in enumerate(source.split("\n"), 1):
        _refuse_ambiguous(line, number)
        if line.strip() == begin:
            if region_indent is not None:
                raise ValueError(f"line {number}: {begin} inside an open region")
            region_indent = line[: len(line) - len(line.lstrip())]
            lines += [region_indent + stub_line for stub_line in stub]
            found = True
        elif line.strip() == end:
            if region_indent is None:
                raise ValueError(f"line {number}: {end} without a {begin} before it")
            region_indent = None
        elif region_indent is None:
            lines.append(line)
    if region_indent is not None:
        raise ValueError(f"a {begin} region is never closed by {end}")
    return "\n".join(lines), found


def _refuse_ambiguous(line: str, number: int) -> None:
    stripped = line.strip()
    for word in DELIMITER_WORDS:
        if word in line and stripped != f"### {word}":
            raise ValueError(
                f"line {number}: {stripped!r} mentions {word!r}; nbgrader reads every line "
                f"that contains it as a delimiter: write `### {word}` alone on its line, "
                "or reword the line"
            )
    for directive in UNSUPPORTED:
        if directive in line:
            raise ValueError(
                f"line {number}: {directive!r} is an nbgrader directive that "
                "scripts/make_exercises.py does not carry out"
            )


def clear_solutions(source: str, cell_type: str) -> str:
    """Replace each BEGIN/END SOLUTION region of one cell by the student stub.

    >>> print(clear_solutions("def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n"
    ...                       "    ### END SOLUTION", "code"))
    def f():
        # YOUR CODE HERE
        raise NotImplementedError()
    """
    stub = CODE_STUB if cell_type == "code" else TEXT_STUB
    return replace_regions(source, BEGIN, END, stub)[0]


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


def student_cell(cell: nbformat.NotebookNode) -> None:
    """Turn one master cell into its student version, in place (see the module docstring)."""
    nbgrader = cell.metadata.get("nbgrader", {})
    stub = CODE_STUB if cell.cell_type == "code" else TEXT_STUB
    cell.source, solved = replace_regions(cell.source, BEGIN, END, stub)
    if solved and not nbgrader.get("solution"):
        raise ValueError("a solution region in a cell that is not an nbgrader solution cell")
    if nbgrader.get("solution") and not solved:
        cell.source = "\n".join(stub)  # nbgrader clears a solution cell without a region whole
    cell.source, hidden = replace_regions(cell.source, BEGIN_HIDDEN, END_HIDDEN)
    if hidden and not nbgrader.get("grade"):
        raise ValueError("hidden tests in a cell that is not an nbgrader grade cell")
    # nbgrader's LockCells, default settings
    if nbgrader.get("solution"):
        cell.metadata["deletable"] = False
    elif nbgrader.get("grade") or nbgrader.get("locked"):
        cell.metadata["deletable"] = cell.metadata["editable"] = False
    for key in VOLATILE_METADATA:
        cell.metadata.pop(key, None)
    if cell.cell_type == "code":
        cell.outputs = []
        cell.execution_count = None


def student_notebook(master: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version of ``master``: as nbgrader makes it, plus its links rebased."""
    student = copy.deepcopy(master)
    for number, cell in enumerate(student.cells, 1):
        try:
            student_cell(cell)
        except ValueError as error:
            raise ValueError(f"{MASTER.name}, cell {number}: {error}") from None
        if cell.cell_type == "markdown":
            cell.source = rebase_links(cell.source, MASTER_DIR, STUDENT_DIR)
    return student


def release_as_generated(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """nbgrader's release of the master, with this script's one extra step (the links) done
    and nbgrader's bookkeeping (:data:`NBGRADER_BOOKKEEPING`) left out: when nbgrader and
    this script agree, its :func:`cell_contents` are those of :func:`student_notebook`."""
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        for key in NBGRADER_BOOKKEEPING:
            cell.metadata.get("nbgrader", {}).pop(key, None)
        if cell.cell_type == "markdown":
            cell.source = rebase_links(cell.source, MASTER_DIR, STUDENT_DIR)
    return nb


def cell_contents(nb: nbformat.NotebookNode) -> list[tuple]:
    """What generation decides about each cell: type, source and metadata (not outputs)."""
    contents = []
    for cell in nb.cells:
        metadata = {k: v for k, v in cell.metadata.items() if k not in VOLATILE_METADATA}
        contents.append((cell.cell_type, cell.source, metadata))
    return contents


def cell_differences(ours: nbformat.NotebookNode, theirs: nbformat.NotebookNode) -> list[str]:
    """Where two notebooks' :func:`cell_contents` differ, one line each (empty: nowhere)."""
    a, b = cell_contents(ours), cell_contents(theirs)
    found = [f"{len(a)} cells against {len(b)}"] if len(a) != len(b) else []
    for number, (mine, other) in enumerate(zip(a, b, strict=False), 1):  # lengths: above
        for name, x, y in zip(("type", "source", "metadata"), mine, other, strict=True):
            if x != y:
                found.append(f"cell {number}, {name}: {x!r} against {y!r}")
    return found


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
