"""The exercises graded with nbgrader, the whole loop, for a class whose answers are known.

``hub/nbgrader/course.py demo`` (``make grading-demo``) runs nbgrader 0.9.6 from the
instructor's environment on the exercises master: generate_assignment, release, five
simulated students who fetch (or take the hub's copy), fill in right answers and wrong ones
from ``tests/exercise_mistakes.py`` and submit, collect, autograde in the series' kernel,
generate_feedback, release_feedback and fetch_feedback, the gradebook exported as CSV. Here:

* each part's score in the exported gradebook is what its known answer earns: full points
  for a right answer, 0 for a wrong one, the scaffold, or a replaced checker; written answers
  wait for the grader (or are "no response", 0) and are reported apart;
* each student's feedback, as they fetched it, holds the checker's report in its words: the
  report this test gets by running the same cells in-process;
* nbgrader's release of the master is ``scripts/make_exercises.py``'s student notebook up to
  the differences that script states, and the stored student notebook is that;
* the demo's own comparison fails on a planted wrong expectation or a damaged feedback page.

Needs ``make hub-setup`` (the instructor's environment and the grading kernel); skips
without it unless ``ATTENTION_REQUIRE_HUB=1`` (``.ci/run``), which makes that a failure.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

# In make test-browser, not make test-fast: .ci/run builds the hub's environments meanwhile,
# and under pytest-xdist each worker would run the loop again.
pytestmark = pytest.mark.hub

ROOT = Path(__file__).resolve().parent.parent
HUB_PYTHON = ROOT / ".venv-hub" / "bin" / "python"
SPEC = importlib.util.spec_from_file_location("grading_course", ROOT / "hub/nbgrader/course.py")
course = sys.modules[SPEC.name] = importlib.util.module_from_spec(SPEC)  # dataclasses need it
SPEC.loader.exec_module(course)
make_exercises = course.make_exercises
KERNEL = course.settings().Execute.kernel_name
GRADING_KERNEL = ROOT / ".venv-hub" / "share" / "jupyter" / "kernels" / KERNEL / "kernel.json"


def missing_setup() -> str | None:
    if not (ROOT / ".venv-hub" / ".attention-installed").exists():
        return "the instructor's environment is missing (make hub-setup)"
    if not GRADING_KERNEL.exists():
        return f"the grading kernel {KERNEL!r} is missing (make grading-kernel)"
    if not make_exercises.MASTER.exists():
        return "notebooks/solutions/ was left out of this copy"
    return None


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """The demo's results (course.py's JSON), run once for this module (about a minute)."""
    why = missing_setup()
    if why:
        if os.environ.get("ATTENTION_REQUIRE_HUB") == "1":
            pytest.fail(f"{why}; ATTENTION_REQUIRE_HUB=1 requires the grading loop to run")
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("grading") / "demo"
    results = folder.parent / "results.json"
    done = subprocess.run(
        [str(HUB_PYTHON), "hub/nbgrader/course.py", "demo", f"--dir={folder}", f"--json={results}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-8000:]
    return json.loads(results.read_text())


def feedback(results: dict, name: str) -> str:
    return course.feedback_text(Path(results["students"][name]["feedback"]).read_text())


def handed_in(results: dict) -> dict[str, dict[str, str]]:
    """Each student's answer cells as handed in, by autograded part."""
    return {
        name: {part: entry["parts"][part]["source"] for part in course.AUTOGRADED}
        for name, entry in results["students"].items()
    }


def test_each_part_scores_what_its_known_answer_earns(graded):
    with open(graded["parts_csv"], newline="") as handle:
        rows = {
            (row["student_id"], course.part_label(row["part"])): row
            for row in csv.DictReader(handle)
        }
    assert {name for name, _ in rows} == set(course.CLASS)
    for name, student in course.CLASS.items():
        for part in course.AUTOGRADED:
            row = rows[name, part]
            right = student.answer(part).diagnosis is None
            assert row["kind"] == "autograded"
            assert float(row["score"]) == (float(row["max_points"]) if right else 0.0), (name, part)
            assert row["needs_manual_grade"] == "False"
        for part in course.WRITTEN:
            row = rows[name, part]
            assert row["kind"] == "written" and row["manual_score"] == ""
            if part in student.written:  # waits for the grader
                assert (row["auto_score"], row["needs_manual_grade"]) == ("", "True"), (name, part)
            else:  # left as handed out: nbgrader's "No response."
                assert (row["auto_score"], row["needs_manual_grade"]) == ("0.0", "False")
    # the points of the master's test cells, and the class has both outcomes of every part
    points = {part: float(rows["ada", part]["max_points"]) for part in course.AUTOGRADED}
    assert points == {"19.1 (b)": 1, "19.2 (b)": 2, "19.3 (b)": 2, "19.4 (a)": 3, "19.4 (c)": 2}
    for part in course.AUTOGRADED:
        assert {float(rows[name, part]["score"]) for name in course.CLASS} == {0.0, points[part]}


def test_nbgraders_totals_are_the_parts(graded):
    with open(graded["grades_csv"], newline="") as handle:
        totals = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    assert totals == {"ada": 10, "ben": 0, "cai": 5, "dee": 5, "eve": 4}


def reports_run_in_process(student: course.Student, sources: dict[str, str]) -> dict:
    """Each autograded part's report, from the cells autograde runs: the master's import cell
    (autograde restores it), the student's answer cells and the test cells' visible lines."""
    master = nbformat.read(make_exercises.MASTER, as_version=4)
    handed_out = make_exercises.student_notebook(master)
    cells = course.graded_cells(handed_out)
    namespace, reports = {}, {}
    with np.printoptions():  # the import cell sets NumPy's print options
        exec(course.import_cell(master).source, namespace)
        for part in course.AUTOGRADED:
            exec(sources[part], namespace)
            exec(handed_out.cells[cells[part][0]].source, namespace)
            reports[part] = namespace["report"]
    return reports


@pytest.mark.parametrize("name", sorted(course.CLASS))
def test_the_feedback_names_each_mistake_in_the_checkers_words(graded, name):
    student, parts = course.CLASS[name], graded["students"][name]["parts"]
    text = feedback(graded, name)
    reports = reports_run_in_process(student, handed_in(graded)[name])
    for part, report in reports.items():
        diagnosis = student.answer(part).diagnosis
        if diagnosis == "checker_replaced":  # the hidden test's own message
            assert "is not the series' checker [checker_replaced]" in parts[part]["output"]
            assert "is not the series' checker [checker_replaced]" in text
            continue
        if diagnosis is None:
            assert report.passed, (name, part, str(report))
        elif diagnosis == "not_attempted":
            assert not report.attempted, (name, part, str(report))
        else:
            assert report.diagnoses == (diagnosis,), (name, part, str(report))
        for line in str(report).splitlines():
            assert line.strip() in text, (name, part, line)


def test_the_locked_import_cell_is_put_back(graded):
    """eve replaced check_exercise_19_1 in the import cell she handed in; autograde ran the
    master's import cell (locked, so restored from the gradebook), hence the series' checker."""
    course_dir = Path(graded["folder"]) / "course"
    notebooks = [
        nbformat.read(course_dir / stage / "eve" / course.ASSIGNMENT / course.NOTEBOOK, 4)
        for stage in ("submitted", "autograded")
    ]
    submitted, autograded = (course.import_cell(nb).source for nb in notebooks)
    master = course.import_cell(nbformat.read(make_exercises.MASTER, 4)).source
    assert submitted == master + course.FAKE_19_1 and autograded == master
    output = graded["students"]["eve"]["parts"]["19.1 (b)"]["output"]
    assert "[key_choice]" in output and "all right" not in output


def test_nbgraders_release_is_the_stored_student_notebook(graded):
    assert graded["generator"] == {"release": [], "stored": []}


def test_the_demos_comparison_can_fail(graded, tmp_path):
    """Planted: a wrong answer said to be right, another diagnosis, a damaged feedback page."""
    folder = Path(graded["folder"])

    def problems(students, homes=folder / "homes"):
        return course.check(
            students,
            folder / "course",
            homes,
            handed_in(graded),
            Path(graded["grades_csv"]),
            Path(graded["parts_csv"]),
        )["problems"]

    assert problems(course.CLASS) == []
    cai = course.CLASS["cai"]
    said_right = dataclasses.replace(cai, answers={**cai.answers, "19.3 (b)": course.SOLUTION})
    assert problems({"cai": said_right}) == [
        "cai, 19.3 (b): the gradebook says {'score': 0.0}, the answers say {'score': 2.0}",
        "cai, 19.3 (b): its test cell does not say ': passed\\n'",
    ]
    renamed = dataclasses.replace(
        cai, answers={**cai.answers, "19.3 (b)": course.from_mistakes("row_term_sign")}
    )
    assert problems({"cai": renamed}) == [
        "cai, 19.3 (b): its test cell does not say '[row_term_sign]'"
    ]
    homes = tmp_path / "homes"
    shutil.copytree(folder / "homes" / "cai", homes / "cai")
    (page,) = (homes / "cai" / course.ASSIGNMENT / "feedback").glob(f"*/{course.ASSIGNMENT}.html")
    page.write_text(re.sub(r"\[modified_input\]", "", page.read_text()))
    found = problems({"cai": cai}, homes)
    assert len(found) == 1 and found[0].startswith("cai, 19.3 (b): the feedback lacks"), found


def test_the_known_class_answers_every_graded_part_of_the_master():
    master = nbformat.read(make_exercises.MASTER, as_version=4)
    parts = course.graded_cells(master)
    assert {part for part, (_, answer) in parts.items() if answer is not None} == set(
        course.AUTOGRADED
    )
    assert {part for part, (_, answer) in parts.items() if answer is None} == set(course.WRITTEN)


def test_make_registers_the_kernel_the_course_config_names():
    makefile = (ROOT / "Makefile").read_text()
    rule = makefile[makefile.index("$(GRADING_KERNEL):") :].split("\n\n")[0]
    assert f"--name {KERNEL} " in rule
    assert f"GRADING_KERNEL := $(HUB_VENV)/share/jupyter/kernels/{KERNEL}/kernel.json" in makefile
    assert re.search(r"^hub-setup: .*\bgrading-kernel\b", makefile, re.MULTILINE)
