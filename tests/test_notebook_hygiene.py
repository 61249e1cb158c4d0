"""Hygiene of the stored notebooks: what nbval cannot see for itself.

Every ``notebooks/**/*.ipynb`` (``.ipynb_checkpoints`` skipped) must:

- be a valid nbformat 4 notebook no larger than ``SIZE_CAP``;
- have every code cell executed, numbered 1..n in order with no gaps
  (nbval never compares a cell whose ``execution_count`` is null; empty code
  cells are never executed, so delete them);
- store no error output, unless the cell is tagged ``raises-exception`` (and a
  cell with that tag must store the error it expects);
- give a reason beside every nbval marker. Markers are the cell tags
  ``nbval-ignore-output``, ``nbval-skip``, ``raises-exception``,
  ``nbval-raises-exception``, ``nbval-check-output`` and any ``# NBVAL_*``
  comment. Convention: the cell's FIRST LINE is a comment ``# nbval: <reason>``,
  for example ``# nbval: the slider figure leaks into this cell under nbval``.
  It sits in the cell, visible to students and reviewers, unlike metadata.
  A tag and the same comment marker together are refused (nbval warns, and
  warnings are errors);
- carry no ``metadata.widgets`` (stored widget state; ``make execute`` strips it).

The series itself is the top-level ``notebooks/*.ipynb`` in name order: the
README's "Notebook map" table lists exactly these, in this order, and each
one's last markdown cell links to the next notebook file
(``[next](02_....ipynb)``); the last one links back to ``../README.md`` or says
it is the end of the series. While the numbering has a gap (05 present, 06 still
being written, 07 present), the notebook before the gap may instead link back to
the README; once the gap closes the strict rule applies again.

``notebooks/solutions/`` (the exercises' worked solutions, the master from which
``make exercises`` generates ``07_exercises.ipynb``) is not part of the series:
not in the map, not in the chain, but held to every hygiene rule above.

Every relative link in any notebook's markdown, in the README, CONTRIBUTING.md and
``docs/**/*.md`` must reach an existing file, and a link to ``other.ipynb#anchor``
(or ``#anchor``) must find ``id="anchor"`` or a heading with that anchor there
(the exercises put ``<a id="exercise-19-2"></a>`` in their headings for links
from notebooks 02 and 04).

With no notebooks yet, the README map must be empty, and the checks are still
exercised on small synthetic notebooks below.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"

# Outputs hold base64 PNGs; a dozen board-sized figures stay well below 1.5 MB. A
# bigger file is nearly always an accidental huge figure or a printed array, and
# it makes clones, reviews and nbval comparisons slow for every student.
SIZE_CAP = 1_500_000  # bytes

MARKER_TAGS = {
    "nbval-ignore-output",
    "nbval-skip",
    "raises-exception",
    "nbval-raises-exception",
    "nbval-check-output",
}
COMMENT_MARKER = re.compile(r"^\s*#\s*(NBVAL_[A-Z_]+)", re.MULTILINE)
TAG_OF_COMMENT = {
    "NBVAL_IGNORE_OUTPUT": "nbval-ignore-output",
    "NBVAL_SKIP": "nbval-skip",
    "NBVAL_RAISES_EXCEPTION": "raises-exception",
    "NBVAL_CHECK_OUTPUT": "nbval-check-output",
}
REASON = re.compile(r"#\s*nbval:\s*(\S.*)")
MAP_HEADER = ["notebook", "chapter section", "live widget"]
LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]+)")
END_OF_SERIES = re.compile(r"end of the series", re.IGNORECASE)
SOLUTIONS = NOTEBOOKS / "solutions"


def all_notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def series() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def number_of(name: str) -> int:
    return int(name.split("_", 1)[0])


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def tags(cell) -> set[str]:
    return set(cell.metadata.get("tags", []))


# Each check returns a list of problems in words; empty means clean.


def execution_problems(nb) -> list[str]:
    problems = [
        f"code cell {i} is empty: delete it (it is never executed)"
        for i, cell in enumerate(code_cells(nb), 1)
        if not cell.source.strip()
    ]
    counts = [cell.execution_count for cell in code_cells(nb)]
    if counts != list(range(1, len(counts) + 1)):
        problems.append(
            f"execution counts are {counts}, expected 1..{len(counts)} in order: "
            "re-execute with `make execute`"
        )
    return problems


def error_problems(nb) -> list[str]:
    problems = []
    for i, cell in enumerate(code_cells(nb), 1):
        has_error = any(out.output_type == "error" for out in cell.get("outputs", []))
        tagged = "raises-exception" in tags(cell)
        if has_error and not tagged:
            problems.append(f"code cell {i} stores an error but is not tagged raises-exception")
        if tagged and not has_error:
            problems.append(f"code cell {i} is tagged raises-exception but stores no error")
    return problems


def marker_problems(nb) -> list[str]:
    problems = []
    for i, cell in enumerate(code_cells(nb), 1):
        comments = set(COMMENT_MARKER.findall(cell.source))
        markers = (tags(cell) & MARKER_TAGS) | comments
        if not markers:
            continue
        first_line = cell.source.split("\n", 1)[0]
        reason = REASON.fullmatch(first_line.strip())
        if reason is None or len(reason[1].split()) < 2:
            problems.append(
                f"code cell {i} has nbval marker(s) {sorted(markers)} but its first line is "
                f"not a reason comment '# nbval: <why>' (got {first_line!r})"
            )
        for comment in comments:
            if TAG_OF_COMMENT.get(comment) in tags(cell):
                problems.append(
                    f"code cell {i} has both the tag {TAG_OF_COMMENT[comment]} and "
                    f"# {comment}: keep the tag only"
                )
    return problems


def widget_problems(nb) -> list[str]:
    if "widgets" in nb.metadata:
        return ["metadata.widgets (stored widget state) is present: run `make execute`"]
    return []


def link_targets(markdown: str) -> list[str]:
    return [target.removeprefix("./") for target in LINK_TARGET.findall(markdown)]


def next_link_problems(nb, next_name: str | None) -> list[str]:
    """The last markdown cell links to ``next_name`` (or, for the last, to the README)."""
    markdown = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    if not markdown:
        return ["there is no markdown cell to carry the link to the next notebook"]
    last = markdown[-1]
    if next_name is not None:
        if next_name not in link_targets(last):
            return [f"the last markdown cell does not link to the next notebook {next_name}"]
    elif "../README.md" not in link_targets(last) and not END_OF_SERIES.search(last):
        return [
            "the last notebook's last markdown cell neither links to ../README.md nor "
            "says it is the end of the series"
        ]
    return []


def chain_problems(nb, name: str, next_name: str | None) -> list[str]:
    """next_link_problems, except that before a gap in the numbering the README will do."""
    problems = next_link_problems(nb, next_name)
    if problems and next_name and number_of(next_name) > number_of(name) + 1:
        return next_link_problems(nb, None)
    return problems


def readme_map(text: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the table under the README's '## Notebook map' heading."""
    section = re.search(r"^## Notebook map\s*$(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert section, "README.md has no '## Notebook map' section"
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section[1].splitlines()
        if line.strip().startswith("|")
    ]
    assert len(rows) >= 2, "the Notebook map has no table header"
    header, separator, body = rows[0], rows[1], rows[2:]
    assert all(set(cell) <= set(":- ") for cell in separator), "the map table lacks |---| line"
    return [cell.lower() for cell in header], body


def map_problems(text: str, present: list[str]) -> list[str]:
    header, rows = readme_map(text)
    problems = []
    if header != MAP_HEADER:
        problems.append(f"Notebook map columns are {header}, expected {MAP_HEADER}")
    listed = []
    for row in rows:
        names = {Path(name).name for name in re.findall(r"[\w./-]+\.ipynb", row[0])}
        if len(names) != 1:
            problems.append(f"map row {row} should name exactly one notebook in its first column")
            continue
        listed.append(names.pop())
        for target in link_targets(row[0]):
            if not (README.parent / target).is_file():
                problems.append(f"map row links to {target}, which does not exist")
    if listed != present:
        problems.append(f"the README map lists {listed}, notebooks/ holds {present} (in order)")
    return problems


def installed_kernelspec() -> dict:
    """The kernelspec metadata JupyterLab writes for this venv's kernel "python3"."""
    spec = KernelSpecManager().get_kernel_spec("python3")
    return {"display_name": spec.display_name, "language": spec.language, "name": "python3"}


def kernelspec_problems(nb) -> list[str]:
    """A kernelspec other than the installed one: JupyterLab opens the notebook modified."""
    expected = installed_kernelspec()
    found = dict(nb.metadata.get("kernelspec", {}))
    return [] if found == expected else [f"kernelspec {found}, expected {expected}"]


def problems_of(path: Path) -> list[str]:
    problems = []
    if path.stat().st_size > SIZE_CAP:
        problems.append(f"{path.stat().st_size} bytes, above the {SIZE_CAP} byte cap")
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for check in (
        execution_problems,
        error_problems,
        marker_problems,
        widget_problems,
        kernelspec_problems,
    ):
        problems += check(nb)
    return problems


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda p: str(p.relative_to(NOTEBOOKS)))
def test_notebook_is_clean(path):
    assert problems_of(path) == []


@pytest.mark.parametrize("index", range(len(series())), ids=lambda i: series()[i].name)
def test_last_markdown_cell_links_to_next_notebook(index):
    paths = series()
    next_name = paths[index + 1].name if index + 1 < len(paths) else None
    nb = nbformat.read(paths[index], as_version=4)
    assert chain_problems(nb, paths[index].name, next_name) == []


def test_solutions_are_checked_for_hygiene_but_are_not_in_the_series():
    solutions = sorted(SOLUTIONS.glob("*.ipynb"))
    assert set(solutions) <= set(all_notebooks())
    assert not set(solutions) & set(series())


def test_readme_map_lists_exactly_the_notebooks():
    """With no notebooks yet, this asserts that the map is an empty table."""
    present = [path.name for path in series()]
    assert map_problems(README.read_text(encoding="utf-8"), present) == []


def lab_start_page(dry_run: str) -> str | None:
    """The page `make lab` opens, from its dry run: ``--LabApp.default_url=/lab/tree/PAGE``."""
    found = re.search(r"--LabApp\.default_url=/lab/tree/(\S+)", dry_run)
    return found[1] if found else None


def test_make_lab_opens_the_first_notebook_of_the_map():
    """A student who types `make lab` lands where the series starts, not on the launcher."""
    dry_run = subprocess.run(
        ["make", "--no-print-directory", "-n", "-C", str(ROOT), "lab", f"VENV={sys.prefix}"],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}},
    ).stdout
    first = [path.name for path in series()][:1]
    assert [lab_start_page(dry_run)] == first, dry_run
    assert lab_start_page("jupyter lab --ServerApp.ip=127.0.0.1") is None


# The checks themselves, on synthetic notebooks: they run even while notebooks/ is empty.


def make_notebook(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nb.metadata.kernelspec = installed_kernelspec()
    return nb


def code(source, count, tags=(), outputs=()):
    cell = nbformat.v4.new_code_cell(source, execution_count=count, outputs=list(outputs))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


ERROR = nbformat.v4.new_output("error", ename="ValueError", evalue="no", traceback=[])
REASONED = "# nbval: float16 is refused on purpose\nf(x)"


def test_a_clean_synthetic_notebook_passes():
    nb = make_notebook(
        nbformat.v4.new_markdown_cell("# Title"),
        code("x = 1", 1),
        code(REASONED, 2, tags=["raises-exception"], outputs=[ERROR]),
        nbformat.v4.new_markdown_cell("Next: [masks](03_masks.ipynb)"),
    )
    for check in (
        execution_problems,
        error_problems,
        marker_problems,
        widget_problems,
        kernelspec_problems,
    ):
        assert check(nb) == []
    assert next_link_problems(nb, "03_masks.ipynb") == []


@pytest.mark.parametrize(
    ("cells", "check"),
    [
        ([code("x = 1", None)], execution_problems),
        ([code("x = 1", 2), code("y = 2", 1)], execution_problems),
        ([code("x = 1", 1), code("y = 2", 3)], execution_problems),
        ([code("x = 1", 1), code("", None)], execution_problems),
        ([code("f(x)", 1, outputs=[ERROR])], error_problems),
        ([code(REASONED, 1, tags=["raises-exception"])], error_problems),
        ([code("x", 1, tags=["nbval-ignore-output"])], marker_problems),
        ([code("# NBVAL_SKIP\nx", 1)], marker_problems),
        ([code("# nbval:\nx", 1, tags=["nbval-skip"])], marker_problems),
        ([code("x\n# nbval: random seed differs\n", 1, tags=["nbval-skip"])], marker_problems),
        (
            [code(REASONED + "\n# NBVAL_RAISES_EXCEPTION", 1, tags=["raises-exception"])],
            marker_problems,
        ),
    ],
)
def test_each_check_catches_its_problem(cells, check):
    assert check(make_notebook(*cells)) != []


def test_a_kernelspec_other_than_the_installed_one_is_caught():
    nb = make_notebook(code("x = 1", 1))
    nb.metadata.kernelspec["display_name"] = "Python 3"
    assert kernelspec_problems(nb) != []


def test_widget_state_and_missing_next_link_are_caught():
    nb = make_notebook(nbformat.v4.new_markdown_cell("The end of this notebook."))
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    assert widget_problems(nb) != []
    assert next_link_problems(nb, "02_why_sqrt_dk.ipynb") != []
    assert next_link_problems(nb, None) != []
    nb.cells[0].source = "That is the end of the series."
    assert next_link_problems(nb, None) == []


def test_a_gap_in_the_numbering_lets_the_notebook_before_it_link_to_the_readme():
    to_readme = make_notebook(nbformat.v4.new_markdown_cell("Back to the [map](../README.md)."))
    assert chain_problems(to_readme, "05_self_and_cross.ipynb", "07_exercises.ipynb") == []
    assert chain_problems(to_readme, "05_self_and_cross.ipynb", "06_teach_it.ipynb") != []
    to_07 = make_notebook(nbformat.v4.new_markdown_cell("Next: [07](07_exercises.ipynb)."))
    assert chain_problems(to_07, "05_self_and_cross.ipynb", "07_exercises.ipynb") == []


def test_readme_map_check_compares_names_and_order():
    table = (
        "## Notebook map\n\n"
        "| notebook | chapter section | live widget |\n| --- | --- | --- |\n"
        "| `01_soft_lookup.ipynb` | 19.1 | turn a query |\n"
        "| `02_why_sqrt_dk.ipynb` | 19.2 | d_k slider |\n"
        "\n## Next section\n"
    )
    both = ["01_soft_lookup.ipynb", "02_why_sqrt_dk.ipynb"]
    assert map_problems(table, both) == []
    assert map_problems(table, both[::-1]) != []
    assert map_problems(table, both[:1]) != []
    assert map_problems(table.replace("live widget", "widget"), both) != []


# Relative links: every link in every notebook's markdown and in the docs must reach a
# file, and the anchor after '#', where given, must exist in that file. Nothing is skipped
# silently: a link either has a web scheme (http, https, mailto: left to the reader) or is
# resolved here; any other scheme is reported.

WEB_SCHEMES = ("http://", "https://", "mailto:")
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_HREF = re.compile(r"<a\s[^>]*?href\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
HTML_ID = re.compile(r"<a\s[^>]*?(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
HEADING_LINE = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
FENCED_CODE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
HAS_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def without_code(markdown: str) -> str:
    """Markdown with fenced and inline code removed: code is not a link."""
    return INLINE_CODE.sub("", FENCED_CODE.sub("", markdown))


def links_in(markdown: str) -> list[str]:
    text = without_code(markdown)
    return MARKDOWN_LINK.findall(text) + HTML_HREF.findall(text)


def heading_anchors(heading: str) -> set[str]:
    """The ids a heading gets: GitHub's slug and JupyterLab's (spaces to '-', case kept)."""
    text = re.sub(r"<[^>]+>", "", heading)  # inline HTML such as <a id=...></a>
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link shows its text
    text = text.replace("*", "").replace("`", "").strip()
    github = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
    jupyterlab = text.replace(" ", "-")
    return {github, jupyterlab}


def anchors_in(markdown: str) -> set[str]:
    text = without_code(markdown)
    anchors = set(HTML_ID.findall(text))
    for heading in HEADING_LINE.findall(text):
        anchors |= heading_anchors(heading)
    return anchors


def markdown_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        return "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    return path.read_text(encoding="utf-8")


def link_problems(source: Path, markdown: str) -> list[str]:
    """Every relative link of ``markdown`` (written in ``source``) resolves, anchor included."""
    problems = []
    for link in links_in(markdown):
        if link.startswith(WEB_SCHEMES):
            continue
        if HAS_SCHEME.match(link):
            problems.append(f"{link}: a scheme the checker cannot resolve; use a relative path")
            continue
        target, _, anchor = link.partition("#")
        path = (source.parent / target).resolve() if target else source
        if path.is_relative_to(SOLUTIONS) and not SOLUTIONS.exists():
            continue  # a student handout made without the solutions (see the README)
        if target and not path.is_file():
            problems.append(f"{link}: no file {path}")
            continue
        text = markdown_of(path) if target else markdown  # '#anchor' alone: this file
        if anchor and anchor not in anchors_in(text):
            problems.append(f"{link}: {path.name} has no anchor or heading '{anchor}'")
    return problems


DOCS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_docs_are_there():
    """The link check below reads these; a missing one would simply not be checked."""
    names = {str(path.relative_to(ROOT)) for path in DOCS if path.is_file()}
    expected = {"README.md", "CONTRIBUTING.md"} | {
        f"docs/{name}.md" for name in ("architecture", "class-results", "performance", "teaching")
    }
    assert expected <= names


@pytest.mark.parametrize(
    "path",
    [*DOCS, *all_notebooks()],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_relative_link_resolves(path):
    assert link_problems(path, markdown_of(path)) == []


def test_link_check_catches_missing_files_and_anchors(tmp_path):
    target = tmp_path / "target.md"
    target.write_text('# Two words\n\n<a id="exercise-19-2"></a>\n', encoding="utf-8")
    source = tmp_path / "source.md"
    good = (
        "[a](target.md) [b](target.md#exercise-19-2) [c](target.md#two-words) "
        "[d](target.md#Two-words) [e](https://example.org/x) [f](#own) <a id='own'></a> "
        "`[in code](missing.md)`"
    )
    assert link_problems(source, good) == []
    for bad in (
        "[a](missing.md)",
        "[b](target.md#exercise-19-3)",
        '<a href="target.md#nowhere">x</a>',
        "[c](#nowhere)",
        "[d](file:///etc/passwd)",
    ):
        assert link_problems(source, bad) != [], bad


# Predictions and answers (cell tags from the team conventions): an answer waits for the
# student in JupyterLab, on GitHub and on the board page.

PREDICTION = re.compile(r"\*\*Predict\b")
# The exercises notebook is the series' check for understanding and has no explorer:
# the closing-check and explorer rules below are for the teaching notebooks.
EXERCISES = {"07_exercises.ipynb"}
CLOSING_CHECK = re.compile(r"^#{2,3}\s+Check for understanding", re.MULTILINE)


def answer_problems(nb) -> list[str]:
    """Answer cells are closed; every prediction is followed at once by an answer cell."""
    problems = []
    for i, cell in enumerate(nb.cells):
        cell_tags = tags(cell)
        hidden = cell.metadata.get("jupyter", {})
        if "answer" in cell_tags:
            if cell.cell_type == "markdown" and not (
                "<details>" in cell.source and "<summary>" in cell.source
            ):
                problems.append(f"cell {i} is an answer but not wrapped in <details><summary>")
            if cell.cell_type == "code" and hidden.get("outputs_hidden") is not True:
                problems.append(f"code cell {i} is an answer but its outputs are not hidden")
        if "instructor-note" in cell_tags and hidden.get("source_hidden") is not True:
            problems.append(f"cell {i} is an instructor note but its source is not hidden")
        if cell.cell_type == "markdown" and PREDICTION.search(cell.source):
            following = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
            if following is None or "answer" not in tags(following):
                problems.append(f"cell {i} asks for a prediction; the next cell is not an answer")
    return problems


def closing_check_problems(nb) -> list[str]:
    """The notebook ends with a check for understanding: a heading and two or more answers."""
    starts = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and CLOSING_CHECK.search(c.source)
    ]
    if not starts:
        return ["no '## Check for understanding' section"]
    answers = [c for c in nb.cells[starts[-1] :] if "answer" in tags(c)]
    if len(answers) < 2:
        return [
            f"the check for understanding has {len(answers)} answer cell(s), expected 2 or more"
        ]
    return []


@pytest.mark.parametrize("path", series(), ids=lambda p: p.name)
def test_answers_wait_and_each_notebook_ends_with_a_check(path):
    nb = nbformat.read(path, as_version=4)
    closing = [] if path.name in EXERCISES else closing_check_problems(nb)
    assert answer_problems(nb) + closing == []


def test_answer_checks_catch_open_answers():
    question = nbformat.v4.new_markdown_cell("**Predict before you run the next cell.** How big?")
    open_code = code("print(1)", 1, tags=["answer"])
    assert answer_problems(make_notebook(question, open_code)) != []
    open_code.metadata["jupyter"] = {"outputs_hidden": True}
    assert answer_problems(make_notebook(question, open_code)) == []
    assert answer_problems(make_notebook(question, code("print(1)", 1))) != []
    bare = nbformat.v4.new_markdown_cell("The answer is 3.")
    bare.metadata["tags"] = ["answer"]
    assert answer_problems(make_notebook(bare)) != []
    bare.source = "<details><summary>Show the answer</summary>\n\n3\n</details>"
    assert answer_problems(make_notebook(bare)) == []
    assert closing_check_problems(make_notebook(question)) != []
    heading = nbformat.v4.new_markdown_cell("## Check for understanding\n\n1. Why?")
    assert closing_check_problems(make_notebook(heading, bare)) != []
    assert closing_check_problems(make_notebook(heading, bare, bare)) == []


# Explorer cells stand on their own: run before the cells above (a restarted kernel, a
# student jumping to the widget), they build the explorer instead of raising NameError.

EXPLORER_CALL = re.compile(r"\b\w+_explorer\(")


def explorer_cells(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code" and EXPLORER_CALL.search(c.source)]


def standalone_problems(sources: list[str]) -> list[str]:
    """Run each source in a fresh namespace; report the names it needed from earlier cells."""
    problems = []
    for source in sources:
        try:
            exec(compile(source, "<explorer cell>", "exec"), {})  # our own notebooks
        except NameError as error:
            problems.append(
                f"explorer cell {source.splitlines()[0]!r} needs an earlier cell: {error}"
            )
    return problems


@pytest.mark.parametrize("path", series(), ids=lambda p: p.name)
def test_explorer_cells_run_before_the_cells_above(path):
    sources = explorer_cells(nbformat.read(path, as_version=4))
    assert sources or path.name in EXERCISES, "every teaching notebook has an explorer"
    assert standalone_problems(sources) == []


def test_standalone_check_catches_a_missing_import():
    assert standalone_problems(["explorer = soft_lookup_explorer()"]) != []
    assert standalone_problems(["from math import sqrt\nroot = sqrt(4)"]) == []
