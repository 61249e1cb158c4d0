"""The exercises graded with nbgrader: a course directory, and the whole loop for a known class.

Run with the instructor's environment (``make instructor``, nbgrader 0.9.6)::

    python hub/nbgrader/course.py setup [--course build/course] [--exchange build/exchange]
    python hub/nbgrader/course.py demo [--dir build/grading-demo] [--json FILE]

``setup`` makes or refreshes the course directory of a real class: its ``nbgrader_config.py``
(which loads this folder's and names the course's folders) and
``source/07_exercises/07_exercises.ipynb``, a copy of the exercises master. The commands in
docs/teaching.md ("Grading the exercises") then run from the course directory.

``demo`` (``make grading-demo``) runs nbgrader's whole loop in a fresh folder for
:data:`CLASS`, simulated students whose answers are known: ``generate_assignment`` from the
master, ``release_assignment``; each student fetches it (or takes the student notebook the
hub's link hands out), fills it in with right answers and with wrong ones from
``tests/exercise_mistakes.py`` and submits; then ``collect``, ``autograde`` (in the series'
kernel), ``generate_feedback``, ``release_feedback``, each student's ``fetch_feedback``, and
the gradebook exported as CSV, per student (nbgrader's own export) and per part
(``parts_export.py``). Then it checks what nbgrader did against the known answers:

* each autograded part scores its full points for a right answer and 0 for a wrong one or the
  untouched scaffold, in the per-part CSV; nbgrader's totals agree;
* a written answer waits for the grader when it was written, and is "no response" (0) when
  it was left untouched;
* each student's feedback, as the student fetched it, names the diagnosis of every wrong part
  (``[name]``, or "not attempted yet");
* nbgrader's release of the master is ``scripts/make_exercises.py``'s student notebook, up to
  what that script's docstring says differs, and the stored student notebook is that.

It prints a table, writes the details as JSON (tests/test_grading.py reads them, and checks
the feedback's words against the checkers run on the same answers), and exits 1 when anything
disagrees. The nbgrader commands run in this process, with the arguments they take on the
command line, through nbgrader's own application class (as nbgrader's tests run them): a
separate ``nbgrader`` process spends about 3 s of CPU on its imports alone.

The simulated students all run as this process's user and say who they are with
``--student``, as the hub's students all run as the hub's user; ``ExchangeCollect.check_owner``
is off for that reason (nbgrader_config.py).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import html
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import sys
import time
import warnings
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MISTAKES = ROOT / "tests" / "exercise_mistakes.py"
ASSIGNMENT = "07_exercises"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
DEMO_MARK = ".grading-demo"  # a folder `demo` may wipe holds this file


def _load_make_exercises():
    spec = importlib.util.spec_from_file_location(
        "make_exercises", ROOT / "scripts/make_exercises.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_exercises = _load_make_exercises()


def settings():
    """The repository's course settings (``nbgrader_config.py`` next to this file)."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()


# --------------------------------------------------------------------------------------
# The course directory
# --------------------------------------------------------------------------------------


def setup(course: Path, exchange: Path) -> Path:
    """Make or refresh a course directory; return the path of its source notebook."""
    course, exchange = course.resolve(), exchange.resolve()
    source = course / "source" / ASSIGNMENT / NOTEBOOK
    source.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(make_exercises.MASTER, source)
    (course / "nbgrader_config.py").write_text(
        "# Written by hub/nbgrader/course.py (`make course`): the settings are the repository's,\n"
        "# and these are this course's folders. Run nbgrader from this folder.\n"
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(HERE / 'nbgrader_config.py')!r})  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
    )
    exchange.mkdir(parents=True, exist_ok=True)
    return source


def student_config(home: Path, exchange: Path) -> None:
    """A simulated student's home with the nbgrader settings a student needs: the course and
    the exchange (on a real hub, one file for every student, such as
    /etc/jupyter/nbgrader_config.py), and a cache of their own (nbgrader's default is in
    $HOME, which the simulated students share)."""
    home.mkdir(parents=True)
    (home / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {settings().CourseDirectory.course_id!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        f"c.Exchange.cache = {str(home / '.nbgrader-cache')!r}\n"
    )


def nbgrader(*argv: str, cwd: Path) -> str:
    """Run ``nbgrader *argv`` from the folder ``cwd`` in this process; return its log, raise
    if it fails."""
    from jupyter_core.application import NoStart
    from nbgrader.apps import NbGraderApp

    # nbgrader starts `alembic` by name to check the gradebook's schema.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ["PATH"]
    log = io.StringIO()
    app = NbGraderApp.instance()
    code, before = 0, os.getcwd()
    try:
        os.chdir(cwd)
        with warnings.catch_warnings():
            # nbgrader 0.9.6's gradebook warns of its own autoflush on every autograde.
            warnings.filterwarnings("ignore", message=".* not in session", module="nbgrader")
            app.initialize(list(argv))
            # the log goes to `log` only: shown when the command fails
            for handler in {h for a in (app, app.subapp) if a for h in a.log.handlers}:
                handler.setLevel(logging.CRITICAL + 1)
            app.init_logging(logging.StreamHandler, [log], color=False, subapps=True)
            app.start()
    except NoStart:  # what a subcommand that finished raises
        pass
    except SystemExit as stop:
        code = stop.code
    finally:
        app.reset()
        os.chdir(before)
    if code:
        raise RuntimeError(f"nbgrader {' '.join(argv)} failed ({code}):\n{log.getvalue()}")
    return log.getvalue()


def require_grading_kernel() -> str:
    """The kernel autograde runs, or a clear error naming the make target that adds it."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    name = settings().Execute.kernel_name
    try:
        KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise RuntimeError(
            f"no Jupyter kernel {name!r} in the instructor's environment: run `make "
            "grading-kernel` (autograde runs the students' notebooks with the series' Python)"
        ) from None
    return name


# --------------------------------------------------------------------------------------
# The known class
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Answer:
    """A student's answer to one autograded part, and what its checker must say of it.

    ``kind`` is ``"solution"`` (the master's own answer), ``"scaffold"`` (the cell left as
    handed out) or ``"code"`` (``code`` replaces the answer cell). ``diagnosis`` is None
    for a right answer (full points) and otherwise the diagnosis the report must name.
    """

    kind: str
    code: str = ""
    diagnosis: str | None = None


SOLUTION = Answer("solution")
SCAFFOLD = Answer("scaffold", diagnosis="not_attempted")


def from_mistakes(diagnosis: str | None = None, **names: str) -> Answer:
    """An answer cell that binds each name to an expression over ``tests/exercise_mistakes.py``
    (imported as ``m``): ``from_mistakes("modified_input", f="m.row_backward_in_place")``."""
    lines = [
        "# Taken from the test suite's student answers (tests/exercise_mistakes.py).",
        "import sys",
        f"sys.path.insert(0, {str(MISTAKES.parent)!r})",
        "import exercise_mistakes as m",
        "",
        *(f"{name} = {expression}" for name, expression in names.items()),
    ]
    return Answer("code", "\n".join(lines), diagnosis)


def letters(diagnosis: str | None = None, **choices: str) -> Answer:
    """Exercise 19.1 (b)'s answer cell returning ``choices``."""
    return Answer("code", f"def soft_lookup_answers():\n    return {choices!r}", diagnosis)


RIGHT_LETTERS = {"query": "b", "key": "c", "value": "a", "values_doubled": "a", "equal_scores": "c"}

# A student who replaces the checkers: one in the locked import cell (autograde puts the
# master's cell back), one in an answer cell (the test cell's hidden part finds it).
FAKE_19_1 = (
    "\n\ndef check_exercise_19_1(answers):  # mine: it always passes\n"
    "    from attention_lib.exercises import ExerciseReport\n"
    '    return ExerciseReport("19.1", "soft lookup", checked=("all right",))'
)
FAKE_19_3 = Answer(
    "code",
    "from attention_lib import pitfalls\n"
    "from attention_lib.exercises import ExerciseReport\n\n"
    "softmax_row_backward = pitfalls.softmax_backward_sign_error\n\n\n"
    "def check_exercise_19_3(function):  # mine: it always passes\n"
    '    return ExerciseReport("19.3", "softmax row backward", checked=("all right",))',
    "checker_replaced",
)


@dataclasses.dataclass(frozen=True)
class Student:
    """One simulated student: answers by part label (a part left out keeps its scaffold),
    the written answers they write, the notebook they start from (nbgrader's ``release``
    or the ``hub copy`` that the hub's link puts in their home), extra lines appended to
    the import cell, and whether they first hand in the untouched notebook."""

    answers: dict[str, Answer]
    written: tuple[str, ...] = ()
    notebook: str = "release"
    import_cell_extra: str = ""
    early_submission: bool = False

    def answer(self, part: str) -> Answer:
        return self.answers.get(part, SCAFFOLD)


AUTOGRADED = ("19.1 (b)", "19.2 (b)", "19.3 (b)", "19.4 (a)", "19.4 (c)")
WRITTEN = ("19.1 (a)", "19.2 (a)", "19.3 (a)", "19.4 (b)")

CLASS = {
    # everything right, written answers too; an early hand-in of the scaffold comes first
    "ada": Student(dict.fromkeys(AUTOGRADED, SOLUTION), written=WRITTEN, early_submission=True),
    # hands in the notebook from the hub's link untouched
    "ben": Student({}, notebook="hub copy"),
    "cai": Student(
        {
            "19.1 (b)": letters("value_choice", **{**RIGHT_LETTERS, "value": "c"}),
            "19.2 (b)": from_mistakes(estimate_score_variance="m.variance_mean_of_squares"),
            "19.3 (b)": from_mistakes(
                "modified_input", softmax_row_backward="m.row_backward_in_place"
            ),
            "19.4 (a)": from_mistakes(forward="m.loop_forward", backward="m.loop_backward"),
            "19.4 (c)": from_mistakes(
                "one_sided",
                central_difference="m.central_one_sided",
                gradient_errors="m.gradient_errors_with(m.central_right, m.max_relative_error)",
            ),
        },
        written=("19.1 (a)", "19.3 (a)"),
    ),
    "dee": Student(
        {
            "19.1 (b)": SOLUTION,
            "19.2 (b)": from_mistakes(
                "seed_unused", estimate_score_variance="m.variance_fixed_seed"
            ),
            "19.3 (b)": from_mistakes(softmax_row_backward="m.row_backward_einsum"),
            "19.4 (a)": from_mistakes(
                "mask_ignored",
                forward="m.MaskIgnored().forward",
                backward="m.MaskIgnored().backward",
            ),
            "19.4 (c)": from_mistakes(
                central_difference="m.central_on_copies",
                gradient_errors="m.gradient_errors_with(m.central_on_copies, m.max_relative_error)",
            ),
        },
        notebook="hub copy",
    ),
    "eve": Student(
        {
            "19.1 (b)": letters("key_choice", **{**RIGHT_LETTERS, "key": "b"}),
            "19.2 (b)": SOLUTION,
            "19.3 (b)": FAKE_19_3,
            "19.4 (c)": SOLUTION,
        },
        written=("19.2 (a)",),
        import_cell_extra=FAKE_19_1,
    ),
}


def part_label(grade_id: str) -> str:
    """``exercise-19-4-c-check`` -> ``19.4 (c)``."""
    chapter, exercise, part = re.fullmatch(
        r"exercise-(\d+)-(\d+)-([a-z])(?:-check)?", grade_id
    ).groups()
    return f"{chapter}.{exercise} ({part})"


def graded_cells(nb) -> dict[str, tuple[int, int | None]]:
    """Each graded part's label -> (index of its graded cell, index of the answer cell it
    tests: the solution code cell before a test cell; None for a written answer)."""
    found, answer = {}, None
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            answer = index
        if meta.get("grade"):
            written = bool(meta.get("solution"))
            found[part_label(meta["grade_id"])] = (index, None if written else answer)
    return found


def import_cell(nb):
    """The first code cell: the one that imports the checkers."""
    return next(cell for cell in nb.cells if cell.cell_type == "code")


def filled(nb, student: Student, master) -> dict[str, str]:
    """Fill ``nb`` (a student notebook) in place with ``student``'s answers; return each
    autograded part's answer cell source as handed in."""
    cells, master_cells = graded_cells(nb), graded_cells(master)
    sources = {}
    for part in AUTOGRADED:
        answer_index = cells[part][1]
        answer = student.answer(part)
        if answer.kind == "solution":
            solved = master.cells[master_cells[part][1]].source.split("\n")
            delimiters = (make_exercises.BEGIN, make_exercises.END)
            nb.cells[answer_index].source = "\n".join(
                line for line in solved if line.strip() not in delimiters
            )
        elif answer.kind == "code":
            nb.cells[answer_index].source = answer.code
        sources[part] = nb.cells[answer_index].source
    for part in student.written:
        cell = nb.cells[cells[part][0]]
        stub = make_exercises.TEXT_STUB[0]
        cell.source = cell.source.replace(stub, f"A simulated student's answer to {part}.")
    import_cell(nb).source += student.import_cell_extra
    return sources


def expected(student: Student, part: str, max_points: float) -> dict:
    """What the gradebook must say of one part."""
    if part in AUTOGRADED:
        answer = student.answer(part)
        return {"score": max_points if answer.diagnosis is None else 0.0}
    if part in student.written:
        return {"auto_score": None, "needs_manual_grade": True}
    return {"auto_score": 0.0, "needs_manual_grade": False}  # nbgrader: "No response."


# --------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------


def feedback_text(page: str) -> str:
    """An HTML page's text: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def read_parts(path: Path) -> dict[tuple[str, str], dict]:
    """parts_export.py's CSV as {(student, part label): row}, scores as floats or None."""
    found = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            for key in ("max_points", "auto_score", "manual_score", "score"):
                row[key] = float(row[key]) if row[key] else None
            row["needs_manual_grade"] = row["needs_manual_grade"] == "True"
            found[row["student_id"], part_label(row["part"])] = row
    return found


def demo(folder: Path, students: dict[str, Student] = CLASS) -> dict:
    """Run the whole loop for ``students`` in ``folder`` (made afresh); return the results."""
    started = time.monotonic()
    folder = folder.resolve()
    if folder.exists():
        if not (folder / DEMO_MARK).exists():
            raise RuntimeError(f"{folder} exists and was not made by a grading demo: not wiping it")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / DEMO_MARK).write_text("made by hub/nbgrader/course.py demo\n")
    course, exchange, homes = folder / "course", folder / "exchange", folder / "homes"
    require_grading_kernel()
    setup(course, exchange)
    steps = []

    def run(*argv, who="instructor"):
        t = time.monotonic()
        nbgrader(*argv, cwd=course if who == "instructor" else homes / who)
        seconds = round(time.monotonic() - t, 2)
        steps.append({"who": who, "command": "nbgrader " + " ".join(argv), "seconds": seconds})

    run("generate_assignment", ASSIGNMENT)
    run("release_assignment", ASSIGNMENT)
    master = nbformat.read(make_exercises.MASTER, as_version=4)
    generated = make_exercises.student_notebook(master)
    release = nbformat.read(course / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)
    stored = nbformat.read(make_exercises.STUDENT, as_version=4)
    generator = {
        "release": make_exercises.cell_differences(
            generated, make_exercises.release_as_generated(release)
        ),
        "stored": make_exercises.cell_differences(generated, stored),
    }

    handed_in = {}
    for name, student in students.items():
        home = homes / name
        student_config(home, exchange)
        run("fetch_assignment", ASSIGNMENT, who=name)
        work = home / ASSIGNMENT / NOTEBOOK
        if student.notebook == "hub copy":
            # the hub's link put the series in ~/attention-notebooks: they work in that
            # notebook, and copy it into the assignment's folder to hand it in
            copy = home / "attention-notebooks" / make_exercises.STUDENT.relative_to(ROOT)
            copy.parent.mkdir(parents=True)
            shutil.copyfile(make_exercises.STUDENT, copy)
            nb = nbformat.read(copy, as_version=4)
        else:
            nb = nbformat.read(work, as_version=4)
        if student.early_submission:
            run("submit", ASSIGNMENT, f"--student={name}", who=name)
            time.sleep(0.01)  # a later timestamp for the final hand-in
        handed_in[name] = filled(nb, student, master)
        nbformat.write(nb, work)
        run("submit", ASSIGNMENT, f"--student={name}", who=name)

    run("collect", ASSIGNMENT)
    run("autograde", ASSIGNMENT)
    run("generate_feedback", ASSIGNMENT)
    run("release_feedback", ASSIGNMENT)
    for name in students:
        run("fetch_feedback", ASSIGNMENT, f"--student={name}", who=name)
    grades_csv, parts_csv = course / "grades.csv", course / "parts.csv"
    run("export", f"--to={grades_csv.name}")
    run("export", "--exporter=parts_export.PartsCsvExport", f"--to={parts_csv.name}")

    results = check(students, course, homes, handed_in, grades_csv, parts_csv)
    results["generator"] = generator
    results["problems"] += [
        f"nbgrader's release against make_exercises.py: {d}" for d in generator["release"]
    ]
    results["problems"] += [f"stored student notebook: {d}" for d in generator["stored"]]
    results.update(steps=steps, seconds=round(time.monotonic() - started, 1), folder=str(folder))
    return results


def output_text(cell) -> str:
    """What a code cell printed, and the error it raised (``Name: message``)."""
    texts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            texts.append(output.text)
        elif output.output_type == "error":
            texts.append(f"{output.ename}: {output.evalue}\n")
        elif "text/plain" in output.get("data", {}):
            texts.append(output.data["text/plain"] + "\n")
    return "".join(texts)


def check(students, course, homes, handed_in, grades_csv, parts_csv) -> dict:
    """Compare the exported gradebook, the autograded notebooks and the feedback each student
    fetched with the known answers; return the details and the problems found."""
    parts = read_parts(parts_csv)
    problems, report = [], {}
    with open(grades_csv, newline="") as handle:
        totals = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    for name, student in students.items():
        graded = nbformat.read(course / "autograded" / name / ASSIGNMENT / NOTEBOOK, as_version=4)
        cells = graded_cells(graded)
        pages = sorted((homes / name / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
        text = feedback_text(pages[-1].read_text()) if pages else ""
        if not pages:
            problems.append(f"{name}: no feedback fetched")
        rows = {part: row for (who, part), row in parts.items() if who == name}
        entry = {"feedback": str(pages[-1]) if pages else None, "parts": {}}
        for part in (*AUTOGRADED, *WRITTEN):
            row = rows.get(part)
            if row is None:
                problems.append(f"{name}, {part}: not in {parts_csv.name}")
                continue
            want = expected(student, part, row["max_points"])
            got = {key: row[key] for key in want}
            if got != want:
                problems.append(f"{name}, {part}: the gradebook says {got}, the answers say {want}")
            entry["parts"][part] = {**row, "expected": want}
            if part not in AUTOGRADED:
                continue
            answer = student.answer(part)
            shown = output_text(graded.cells[cells[part][0]])
            named = _named(answer.diagnosis)
            if named not in shown:
                problems.append(f"{name}, {part}: its test cell does not say {named!r}")
            unshown = [line for line in shown.splitlines() if line.strip() not in text]
            if unshown:
                problems.append(f"{name}, {part}: the feedback lacks {unshown[0].strip()!r}")
            entry["parts"][part].update(
                answer_kind=answer.kind,
                diagnosis=answer.diagnosis,
                source=handed_in[name][part],
                output=shown,
            )
        total = sum(row["score"] for row in rows.values())
        if totals.get(name) != total:
            problems.append(
                f"{name}: nbgrader's total {totals.get(name)} is not the parts' {total}"
            )
        report[name] = entry
    return {
        "students": report,
        "problems": problems,
        "grades_csv": str(grades_csv),
        "parts_csv": str(parts_csv),
    }


def _named(diagnosis: str | None) -> str:
    """How a report names a diagnosis: ``[name]``; the scaffold's report says "not attempted
    yet", and a right answer's says "passed"."""
    if diagnosis is None:
        return ": passed\n"
    return "not attempted yet" if diagnosis == "not_attempted" else f"[{diagnosis}]"


def table(results: dict) -> str:
    """The results as the make target prints them."""
    lines = [f"{'student':8} " + " ".join(f"{part:>9}" for part in (*AUTOGRADED, *WRITTEN))]
    for name, entry in results["students"].items():
        cells = []
        for part in (*AUTOGRADED, *WRITTEN):
            row = entry["parts"].get(part)
            if row is None:
                cells.append("?")
            elif row["kind"] == "autograded":
                cells.append(f"{row['score']:g}/{row['max_points']:g}")
            else:
                cells.append("to grade" if row["needs_manual_grade"] else "none")
        lines.append(f"{name:8} " + " ".join(f"{cell:>9}" for cell in cells))
    lines.append("autograded: score/points; written: 'to grade' by hand, 'none' = no response (0)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("setup", help="make or refresh a course directory")
    make.add_argument("--course", type=Path, default=ROOT / "build" / "course")
    make.add_argument("--exchange", type=Path, default=ROOT / "build" / "exchange")
    run = commands.add_parser("demo", help="the whole loop for the known class")
    run.add_argument("--dir", type=Path, default=ROOT / "build" / "grading-demo")
    run.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    if args.command == "setup":
        source = setup(args.course, args.exchange)
        print(f"course directory {args.course}: {source.name} is a copy of the master")
        return 0
    try:
        results = demo(args.dir)
    except RuntimeError as error:
        print(f"grading demo: {error}", file=sys.stderr)
        return 1
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))
    for step in results["steps"]:
        if step["who"] == "instructor":
            print(f"  (course) $ {step['command']:66} {step['seconds']:5.1f} s")
    print(
        f"grading demo: {len(results['students'])} students in {results['seconds']} s; "
        f"gradebook {results['parts_csv']}, feedback in {args.dir}/homes/*/{ASSIGNMENT}/feedback/"
    )
    for problem in results["problems"]:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
