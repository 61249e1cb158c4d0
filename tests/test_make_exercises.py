"""The student exercises notebook is generated from the solutions master, and stays so.

The stored ``notebooks/07_exercises.ipynb`` is compared with a fresh generation
cell by cell (type, source, metadata). Outputs are left out on purpose: they
come from executing the notebook (``make exercises``), and nbval checks them.
In a copy handed out without ``notebooks/solutions/`` there is no master, and
the comparison is skipped.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from attention_lib import exercises

ROOT = Path(__file__).resolve().parent.parent
SPEC = importlib.util.spec_from_file_location("make_exercises", ROOT / "scripts/make_exercises.py")
make_exercises = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(make_exercises)

HAS_MASTER = make_exercises.MASTER.is_file()
needs_master = pytest.mark.skipif(
    not HAS_MASTER, reason="notebooks/solutions/ was left out of this copy (a student handout)"
)
ANCHORS = [f"exercise-19-{n}" for n in range(1, 5)]
# Every checker cell, in order, and the exercise label its report starts with.
CHECKERS = (
    ("check_exercise_19_1(", "19.1 (b)"),
    ("check_exercise_19_2(", "19.2 (b)"),
    ("check_exercise_19_3(", "19.3 (b)"),
    ("check_exercise_19_4(", "19.4 (a)"),
    ("check_exercise_19_4c(", "19.4 (c)"),
)


def read(path):
    return nbformat.read(path, as_version=4)


@needs_master
def test_stored_student_notebook_is_a_fresh_generation_of_the_master():
    fresh = make_exercises.student_notebook(read(make_exercises.MASTER))
    stored = read(make_exercises.STUDENT)
    assert make_exercises.cell_contents(stored) == make_exercises.cell_contents(fresh), (
        "notebooks/07_exercises.ipynb is out of date: run `make exercises`"
    )
    assert make_exercises.main(["--check"]) == 0


@needs_master
def test_check_mode_fails_on_a_hand_edit(tmp_path, monkeypatch, capsys):
    edited = read(make_exercises.STUDENT)
    edited.cells[0].source += "\nA line added by hand."
    nbformat.write(edited, tmp_path / "07_exercises.ipynb")
    monkeypatch.setattr(make_exercises, "STUDENT", tmp_path / "07_exercises.ipynb")
    assert make_exercises.main(["--check"]) == 1
    assert "run `make exercises`" in capsys.readouterr().out


@needs_master
def test_no_solution_reaches_the_student_notebook():
    master, student = read(make_exercises.MASTER), read(make_exercises.STUDENT)
    region = re.compile(r"BEGIN SOLUTION\n(.*?)\n[^\n]*END SOLUTION", re.DOTALL)
    student_text = "\n".join(cell.source for cell in student.cells)
    solutions = [body for cell in master.cells for body in region.findall(cell.source)]
    assert len(solutions) >= 9  # 19.1-19.4: code answers and written answers
    assert "SOLUTION" not in student_text
    for body in solutions:
        for line in body.splitlines():
            if len(line.strip()) > 20:  # stub-sized lines such as "return out" may recur
                assert line.strip() not in student_text, line


@needs_master
def test_each_exercise_has_an_anchored_heading_a_scaffold_and_a_checker():
    for path in (make_exercises.MASTER, make_exercises.STUDENT):
        nb = read(path)
        headings = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
        for number, anchor in enumerate(ANCHORS, 1):
            heading = [text for text in headings if f'<a id="{anchor}"></a>' in text]
            assert len(heading) == 1, (path.name, anchor)
            assert f"## Exercise 19.{number}" in heading[0]
        code = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")
        for call, _ in CHECKERS:
            assert call in code
    student_code = [cell.source for cell in read(make_exercises.STUDENT).cells]
    # five answer cells, and the opening's instructions that name the line
    assert sum("raise NotImplementedError()" in source for source in student_code) == 6


@needs_master
def test_every_solution_cell_carries_nbgrader_metadata_with_its_own_grade_id():
    """nbgrader refuses a region outside a solution cell, and a written answer without points.

    Code answers are autograded answer cells (solution, not graded themselves: the checker
    cells test them); written answers are manually graded cells with points.
    """
    grade_ids = []
    for cell in read(make_exercises.MASTER).cells:
        if make_exercises.BEGIN in cell.source:
            nbgrader = cell.metadata.get("nbgrader", {})
            assert nbgrader.get("solution") is True and nbgrader.get("schema_version") == 3
            if cell.cell_type == "markdown":
                assert nbgrader.get("grade") is True and nbgrader.get("points", 0) > 0
            else:
                assert nbgrader.get("grade") is False
            grade_ids.append(nbgrader["grade_id"])
    assert len(grade_ids) == len(set(grade_ids)) == 9


def checker_call(cell):
    """A checker cell's call on one line: ``check_exercise_19_4c(central_difference, ...)``."""
    call = cell.source.split("\nprint(report)")[0].removeprefix("report = ")
    return " ".join(call.split()).replace("( ", "(").replace(" )", ")")


def checker_cells(nb):
    """nbgrader's autograder test cells: graded code cells that are not answers."""
    return [
        cell
        for cell in nb.cells
        if cell.cell_type == "code"
        and cell.metadata.get("nbgrader", {}).get("grade")
        and not cell.metadata["nbgrader"].get("solution")
    ]


@needs_master
def test_every_part_carries_points_on_its_checker_or_its_written_answer():
    """Checker cells are nbgrader's locked test cells with the points of their part."""
    cells = read(make_exercises.MASTER).cells
    checkers = checker_cells(read(make_exercises.MASTER))
    calls = [checker_call(cell) for cell in checkers]
    assert [call.split(")")[0] for call in calls] == [
        call + rest
        for (call, _), rest in zip(
            CHECKERS,
            ["soft_lookup_answers", "estimate_score_variance", "softmax_row_backward"]
            + [
                "forward, backward",
                "central_difference, gradient_errors, forward=forward, backward=backward",
            ],
            strict=True,
        )
    ]
    points = {}
    for cell in cells:
        nbgrader = cell.metadata.get("nbgrader", {})
        if nbgrader.get("grade"):
            assert nbgrader["points"] > 0 and nbgrader["schema_version"] == 3
            points[nbgrader["grade_id"]] = nbgrader["points"]
            if cell in checkers:
                assert nbgrader["locked"] and not nbgrader["solution"]
    assert all(cell.metadata["nbgrader"]["grade"] for cell in checkers)
    parts = [
        "19-1-a",
        "19-1-b",
        "19-2-a",
        "19-2-b",
        "19-3-a",
        "19-3-b",
        "19-4-a",
        "19-4-b",
        "19-4-c",
    ]
    assert (
        sorted(grade_id.removesuffix("-check")[len("exercise-") :] for grade_id in points) == parts
    )


@needs_master
def test_each_checker_cell_shows_its_report_and_fails_in_grading_only():
    """The report is printed (a test cell's result must not be a value: nbgrader would read
    it as partial credit), and the hidden tests, which only autograde runs, fail the cell
    unless the series' checker passed; students never see them, so their cell never fails."""
    master, student = read(make_exercises.MASTER), read(make_exercises.STUDENT)
    for graded, handed_out in zip(checker_cells(master), checker_cells(student), strict=True):
        call = checker_call(graded).split("(")[0]
        visible, hidden = graded.source.split(f"\n{make_exercises.BEGIN_HIDDEN}\n")
        assert handed_out.source == visible and visible.startswith(f"report = {call}(")
        assert visible.endswith("\nprint(report)")
        assert hidden.endswith(make_exercises.END_HIDDEN)
        assert f"assert {call} is attention_lib.exercises.{call}" in hidden
        assert "assert report.passed" in hidden
        assert handed_out.metadata["editable"] is handed_out.metadata["deletable"] is False
    assert "HIDDEN TESTS" not in "\n".join(cell.source for cell in student.cells)


def run_cells(sources: list[str]) -> list[str]:
    """Run code cells in one namespace as a kernel would; each cell's error message, or ""."""
    namespace, errors = {}, []
    with np.printoptions():  # the import cell sets NumPy's print options
        for source in sources:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(source, namespace)
                errors.append("")
            except AssertionError as error:
                errors.append(str(error) or "AssertionError")
    return errors


@needs_master
def test_the_hidden_tests_fail_an_unanswered_or_faked_part_and_pass_a_right_one():
    """What autograde runs, in-process: the master's test cells after the students' answer
    cells (nbgrader restores locked cells from the master; answers are the student's)."""
    master, student = read(make_exercises.MASTER), read(make_exercises.STUDENT)
    checkers = {id(cell) for cell in checker_cells(master)}
    code = [cell for cell in master.cells if cell.cell_type == "code"]
    graded = [i for i, cell in enumerate(code) if id(cell) in checkers]
    handed_out = [cell for cell in student.cells if cell.cell_type == "code"]
    assert [cell.metadata.get("nbgrader") for cell in handed_out] == [
        cell.metadata.get("nbgrader") for cell in code
    ]

    def autograde(answers):
        errors = run_cells(
            [
                code[i].source if i in graded or i == 0 else answers[i].source
                for i in range(len(code))
            ]
        )
        return [errors[i] for i in graded]

    assert autograde(code) == [""] * len(graded)  # the master's own answers
    unanswered = autograde(handed_out)
    labels = ["19.1 (b)", "19.2 (b)", "19.3 (b)", "19.4 (a)", "19.4 (c)"]
    assert unanswered == [f"{label} scores 0: not_attempted (the report above)" for label in labels]
    faked = copy.deepcopy(code)
    faked[graded[2] - 1].source += (
        "\n\ndef check_exercise_19_3(function):\n"
        "    from attention_lib.exercises import ExerciseReport\n"
        '    return ExerciseReport("19.3", "faked", checked=("all right",))'
    )
    assert (
        autograde(faked)[2]
        == "check_exercise_19_3 here is not the series' checker [checker_replaced]"
    )
    # the import cell is locked too: autograde puts the master's back in place of an edit
    assert code[0].metadata["nbgrader"]["locked"] and "check_exercise_19_1" in code[0].source


@needs_master
def test_the_19_1_choices_in_the_notebook_are_the_checkers():
    markdown = "\n".join(
        cell.source for cell in read(make_exercises.MASTER).cells if cell.cell_type == "markdown"
    )
    rows = dict(re.findall(r"^\| ([a-d]) \| (.+?) \|$", markdown, re.MULTILINE))
    tables = (
        exercises.ROLE_CHOICES,
        exercises.VALUES_DOUBLED_CHOICES,
        exercises.EQUAL_SCORES_CHOICES,
    )
    for table in tables:
        for letter, text in table.items():
            assert f"| {letter} | {text} |" in markdown, text
    assert rows  # the tables were found at all


def test_code_regions_become_the_nbgrader_stub_at_their_indentation():
    source = (
        'def f(x):\n    "Doc."\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n'
        "    ### END SOLUTION\n\n\ndef g():\n  ### BEGIN SOLUTION\n  return 2\n  ### END SOLUTION"
    )
    assert make_exercises.clear_solutions(source, "code") == (
        'def f(x):\n    "Doc."\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\n\n'
        "def g():\n  # YOUR CODE HERE\n  raise NotImplementedError()"
    )
    # nbgrader reads any line that contains a delimiter's words as a delimiter: refused here
    with pytest.raises(ValueError, match="nbgrader reads every line that contains it"):
        make_exercises.clear_solutions("x = 1  # see ### BEGIN SOLUTION below", "code")


def test_markdown_regions_become_the_answer_prompt():
    source = "**Your answer.**\n\n### BEGIN SOLUTION\nBecause $a=b$.\n### END SOLUTION\nAfter."
    assert make_exercises.clear_solutions(source, "markdown") == (
        "**Your answer.**\n\nYOUR ANSWER HERE\nAfter."
    )
    assert make_exercises.clear_solutions("no region", "markdown") == "no region"


@pytest.mark.parametrize(
    "source",
    [
        "### BEGIN SOLUTION\nx = 1",
        "x = 1\n### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
    ],
)
def test_unbalanced_delimiters_are_refused(source):
    with pytest.raises(ValueError, match="SOLUTION"):
        make_exercises.clear_solutions(source, "code")


def test_links_are_rebased_for_the_student_folder():
    text = (
        "[readme](../../README.md) [self](07_exercises_solutions.ipynb) "
        "[two](../02_why_sqrt_dk.ipynb#exercise) [here](#top) [web](https://arxiv.org/abs/1)"
    )
    assert make_exercises.rebase_links(text, "notebooks/solutions", "notebooks") == (
        "[readme](../README.md) [self](solutions/07_exercises_solutions.ipynb) "
        "[two](02_why_sqrt_dk.ipynb#exercise) [here](#top) [web](https://arxiv.org/abs/1)"
    )


def checker_reports(path):
    """The text each checker cell printed, in order."""
    return [
        "".join(output.get("text", "") for output in cell.outputs)
        for cell in checker_cells(read(path))
    ]


@needs_master
def test_stored_solutions_pass_every_checker_and_the_scaffolds_are_not_attempted():
    solved = checker_reports(make_exercises.MASTER)
    scaffold = checker_reports(make_exercises.STUDENT)
    assert len(solved) == len(scaffold) == len(CHECKERS)
    for (_, label), done, todo in zip(CHECKERS, solved, scaffold, strict=True):
        assert done.startswith(f"Exercise {label} · ") and ": passed\n" in done
        assert todo.startswith(f"Exercise {label} · ") and ": not attempted yet\n" in todo
        notes = re.findall(r"Note: .*?\[(\w+)\]", done, re.DOTALL)
        assert "✗" not in done and set(notes) <= {"own_pair_judged"}  # no float32 note etc.


def grading_cell(source, cell_type="code", **nbgrader):
    """A cell with nbgrader metadata (schema 3, a grade_id) and the given flags."""
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    flags = {"grade": False, "solution": False, "locked": False, **nbgrader}
    return make(source, metadata={"nbgrader": {"grade_id": "x", "schema_version": 3, **flags}})


def test_each_cell_becomes_what_nbgraders_generate_assignment_makes_of_it():
    test_cell = grading_cell(
        "r = check(f)\nprint(r)\n### BEGIN HIDDEN TESTS\nassert r.passed\n### END HIDDEN TESTS",
        grade=True,
        locked=True,
        points=2,
    )
    answer = grading_cell(
        "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", solution=True
    )
    whole = grading_cell("Because.", "markdown", solution=True, grade=True, points=1)
    read_only = grading_cell("import numpy as np", locked=True)
    plain = nbformat.v4.new_code_cell("x = 1", metadata={"scrolled": True})
    for cell in (test_cell, answer, whole, read_only, plain):
        make_exercises.student_cell(cell)
    assert test_cell.source == "r = check(f)\nprint(r)"  # hidden tests removed
    assert answer.source == "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert whole.source == "YOUR ANSWER HERE"  # a solution cell without a region: all of it
    # LockCells: answers cannot be deleted; test cells and read-only cells not edited either
    assert [cell.metadata.get("deletable") for cell in (test_cell, answer, whole, read_only)] == [
        False
    ] * 4
    assert [cell.metadata.get("editable") for cell in (test_cell, answer, whole, read_only)] == [
        False,
        None,
        None,
        False,
    ]
    assert plain.metadata == {} and plain.source == "x = 1"  # ClearOutput drops "scrolled"


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (grading_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION"), "not an nbgrader solution"),
        (
            grading_cell("x\n### BEGIN HIDDEN TESTS\nassert x\n### END HIDDEN TESTS", locked=True),
            "not an nbgrader grade cell",
        ),
        (nbformat.v4.new_markdown_cell("See END SOLUTION below."), "mentions 'END SOLUTION'"),
        (nbformat.v4.new_code_cell("### AUTOTEST f(1)"), "does not carry out"),
        (nbformat.v4.new_markdown_cell("=== BEGIN MARK SCHEME ==="), "does not carry out"),
    ],
)
def test_what_nbgrader_would_read_otherwise_is_refused(cell, message):
    with pytest.raises(ValueError, match=message):
        make_exercises.student_cell(cell)


def test_nbgraders_release_compares_with_ours_up_to_its_bookkeeping_and_our_links():
    master = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("[readme](../../README.md)"),
            grading_cell("x = 1\n### BEGIN SOLUTION\ny = 2\n### END SOLUTION", solution=True),
        ]
    )
    ours = make_exercises.student_notebook(master)
    release = copy.deepcopy(master)  # what generate_assignment writes, links as in the master
    release.cells[1].source = "x = 1\n# YOUR CODE HERE\nraise NotImplementedError()"
    release.cells[1].metadata["deletable"] = False
    release.cells[1].metadata["nbgrader"].update(checksum="0123abcd", cell_type="code")
    assert make_exercises.cell_differences(ours, release) != []
    assert make_exercises.cell_differences(ours, make_exercises.release_as_generated(release)) == []
    release.cells[1].metadata["editable"] = False  # a difference that is not bookkeeping
    (difference,) = make_exercises.cell_differences(
        ours, make_exercises.release_as_generated(release)
    )
    assert difference.startswith("cell 2, metadata: ") and "'editable': False" in difference
