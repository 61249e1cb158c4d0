"""The board's counts for a graded assignment (hub/misconceptions/graded.py), read from
autograded notebooks whose test cells hold what real checker runs printed on known answers."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hub"))
sys.path.insert(0, str(ROOT / "tests"))

import exercise_mistakes as m  # noqa: E402
from misconceptions import graded  # noqa: E402
from misconceptions.catalogue import checker_parts  # noqa: E402

from attention_lib.exercises import (  # noqa: E402
    check_exercise_19_3,
    check_exercise_19_4,
    check_exercise_19_4c,
)

#: Each checker's part as the board and the CSV name it.
PARTS = {part.checker: part for part in checker_parts()}
ROW, MASKED, OWN, LOOKUP = (
    PARTS[f"check_exercise_{name}"] for name in ("19_3", "19_4", "19_4c", "19_1")
)


def not_written(*args):
    raise NotImplementedError()


def pair(attention):
    attention = attention()
    return attention.forward, attention.backward


#: Each student's runs, as autograde ran them, with what the board must count.
CLASS = {
    "ada": [
        check_exercise_19_3(m.row_backward_einsum),
        check_exercise_19_4(*pair(m.MaskAfterSoftmax)),
        check_exercise_19_4c(m.central_right),
    ],
    "ben": [
        check_exercise_19_3(m.row_backward_in_place),
        check_exercise_19_4(*pair(m.MaskAfterSoftmax)),
        check_exercise_19_4c(not_written),  # left as handed out: not attempted
    ],
    "cai": [
        check_exercise_19_3(m.row_backward_no_keepdims),
        check_exercise_19_4(*pair(m.ScaledBySqrtDModel)),
        check_exercise_19_4c(m.central_one_sided),
    ],
}


def autograded(course: Path) -> None:
    for student, reports in CLASS.items():
        nb = nbformat.v4.new_notebook()
        for report in reports:
            code = nbformat.v4.new_code_cell("report = check(...)\nprint(report)")
            code.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"{report}\n")]
            nb.cells.append(code)
        fake = nbformat.v4.new_code_cell("print(report)")
        fake.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text="Exercise 19.3 · x: passed\n"),
            nbformat.v4.new_output(
                "error",
                ename="AssertionError",
                evalue="check_exercise_19_3 here is not the series' checker [checker_replaced]",
                traceback=[],
            ),
        ]
        nb.cells.append(fake)
        folder = course / "autograded" / student / "07_exercises"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "07_exercises.ipynb")


def test_the_graded_counts_are_the_known_answers(tmp_path, capsys):
    autograded(tmp_path)
    assert graded.main(["--course", str(tmp_path)]) == 0
    with open(tmp_path / "misconceptions" / "07_exercises.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    by_part = {}
    for row in rows:
        key = (row["exercise"], row["part"])
        by_part.setdefault(key, {"attempted": row["attempted"], "passing": row["passing"]})
        if row["diagnosis"]:
            by_part[key][row["diagnosis"]] = row["students"]
    assert by_part[ROW.exercise, ROW.part] == {
        "attempted": "3",
        "passing": "1",
        "modified_input": "1",
        "missing_keepdims": "1",
    }
    assert by_part[MASKED.exercise, MASKED.part] == {
        "attempted": "3",
        "passing": "0",
        "mask_after_softmax": "2",
        "wrong_scale": "1",
    }
    assert by_part[OWN.exercise, OWN.part] == {"attempted": "2", "passing": "1", "one_sided": "1"}
    assert by_part[LOOKUP.exercise, LOOKUP.part] == {"attempted": "0", "passing": "0"}
    page = (tmp_path / "misconceptions" / "07_exercises.html").read_text()
    assert (
        f"Exercise {MASKED.key} · masked attention" in page
        and "<td>mask_after_softmax</td>" in page
    )
    assert f"{MASKED.key}: 3 attempted, 0 passed; mask_after_softmax 2, wrong_scale 1" in (
        capsys.readouterr().out
    )


def test_a_finding_wrapped_over_lines_is_read_right():
    report = check_exercise_19_4(*pair(m.SignError))
    text = f"some output first\n{report}\nand after"
    assert graded.reports_in(text) == [(MASKED.exercise, MASKED.part, False, ("row_term_sign",))]
    assert graded.reports_in("Exercise 19.3 · softmax row backward: not attempted yet") == []
