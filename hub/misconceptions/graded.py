"""The board's counts for a graded assignment, after the fact, from nbgrader's autograde.

``make misconceptions-graded COURSE=... ASSIGNMENT=...`` reads every autograded notebook of
the assignment (``COURSE/autograded/STUDENT/ASSIGNMENT/*.ipynb``: autograde ran each
checker once, in the series' kernel, and kept what it printed) and counts, per exercise part,
the students who attempted it, who passed, and each diagnosis by the students whose run
shows it, as the live board does (no "stuck" here: one run each). It writes
``COURSE/misconceptions/ASSIGNMENT.csv`` (the same columns as the board's export) and
``ASSIGNMENT.html`` (a page to open or print), and prints the counts.

A checker's report is read from its printed text (``ExerciseReport.__str__``): the heading
``Exercise 19.4 (c) · title: passed | not yet (N problems) | not attempted yet`` and, for each
problem (``✗``), the diagnosis name in brackets at its end. Notes do not count, nor does a
cell whose hidden test found the checker replaced by the student's own (the gradebook scores
it 0).
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script (make misconceptions-graded)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "misconceptions"

import nbformat

from . import catalogue as catalogue_module
from . import counts
from .store import write_csv

HEADING = re.compile(
    r"^Exercise (?P<exercise>\d+\.\d+)(?: \((?P<part>[a-z])\))? · .*: "
    r"(?P<verdict>passed|not yet \(\d+ problems?\)|not attempted yet)$"
)
TAG = re.compile(r"\[([a-z][a-z0-9_]*)\]")
REPLACED = "[checker_replaced]"  # what the assignment's hidden test says of a fake checker


def reports_in(text: str) -> list[tuple[str, str, bool, tuple[str, ...]]]:
    """(exercise, part, passed, diagnoses) of every attempted report printed in ``text``."""
    found, current, finding = [], None, None

    def close_finding():
        nonlocal finding
        if current is not None and finding is not None:
            tags = TAG.findall(finding)
            if tags:
                current[3].append(tags[-1])
        finding = None

    for line in text.splitlines():
        heading = HEADING.match(line)
        if heading:
            close_finding()
            verdict = heading["verdict"]
            current = None
            if verdict != "not attempted yet":
                current = [heading["exercise"], heading["part"] or "", verdict == "passed", []]
                found.append(current)
        elif current is not None and line.startswith("  ✗ "):
            close_finding()
            finding = line
        elif current is not None and finding is not None:
            if line.startswith("    Read: ") or not line.startswith("    "):
                close_finding()
            else:
                finding += " " + line.strip()
    close_finding()
    return [(e, p, passed, tuple(names)) for e, p, passed, names in found]


def printed(cell) -> str:
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append(output.get("text", ""))
        elif "text/plain" in output.get("data", {}):
            texts.append(output["data"]["text/plain"])
    return "\n".join(texts)


def graded_reports(course: Path, assignment: str) -> list[counts.Report]:
    """Each student's checker runs in their autograded notebooks of ``assignment``."""
    reports = []
    for notebook in sorted((course / "autograded").glob(f"*/{assignment}/*.ipynb")):
        student = notebook.parent.parent.name
        nb = nbformat.read(notebook, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code" or REPLACED in str(cell.get("outputs", "")):
                continue  # a checker the student replaced prints whatever it likes
            for exercise, part, passed, names in reports_in(printed(cell)):
                reports.append(counts.Report(student, exercise, part, passed, names, 0.0, 0.0))
    return reports


def board_rows(reports, catalogue) -> list[dict]:
    def describe(exercise, part, name):
        found = catalogue.diagnosis(exercise, part, name)
        return (found.title, found.hint, found.generic) if found else (name, "", False)

    parts = [(p.exercise, p.part, p.title) for p in catalogue.parts]
    return counts.board(reports, parts, describe, now=0.0, window=0.0, top=None)


def page(assignment: str, rows: list[dict], students: int) -> str:
    """A static page of the counts, one table per part."""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Mistakes in {html.escape(assignment)}</title>",
        "<style>body{font-family:sans-serif;font-size:18px;max-width:60em;margin:2em auto}"
        "td,th{padding:.2em .6em;text-align:left}td.n{text-align:right}</style>",
        "</head><body>",
        f"<h1>Mistakes in {html.escape(assignment)}, as autograded</h1>",
        f"<p>{students} students' autograded notebooks. Each diagnosis is counted by the "
        "students whose run shows it.</p>",
    ]
    for row in rows:
        out.append(
            f"<h2>Exercise {html.escape(row['key'])} · {html.escape(row['title'])}</h2>"
            f"<p>{row['attempted']} attempted, {row['passing']} passed</p>"
        )
        if row["diagnoses"]:
            out.append(
                "<table><tr><th>students</th><th>mistake</th><th>name</th><th>read</th></tr>"
            )
            for bar in row["diagnoses"]:
                cells = (bar["title"], bar["name"], bar["hint"])
                out.append(
                    f'<tr><td class="n">{bar["students"]}</td>'
                    + "".join(f"<td>{html.escape(text)}</td>" for text in cells)
                    + "</tr>"
                )
            out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, required=True, help="nbgrader's course folder")
    parser.add_argument("--assignment", default="07_exercises")
    args = parser.parse_args(argv)
    reports = graded_reports(args.course, args.assignment)
    if not reports:
        print(f"no autograded runs of {args.assignment} in {args.course / 'autograded'}")
        return 1
    rows = board_rows(reports, catalogue_module.load())
    folder = args.course / "misconceptions"
    folder.mkdir(exist_ok=True)
    students = len({r.student for r in reports})
    with open(folder / f"{args.assignment}.csv", "w", newline="") as handle:
        write_csv([{**row, "source": f"graded {args.assignment}"} for row in rows], handle)
    (folder / f"{args.assignment}.html").write_text(page(args.assignment, rows, students))
    for row in rows:
        bars = ", ".join(f"{bar['name']} {bar['students']}" for bar in row["diagnoses"])
        print(f"{row['key']:>9}: {row['attempted']} attempted, {row['passing']} passed; {bars}")
    print(f"written: {folder / args.assignment}.csv and .html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
