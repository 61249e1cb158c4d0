"""The gradebook as one CSV row per student and graded part, autograded and written apart.

nbgrader's own ``nbgrader export`` writes one row per student and assignment (the total
score). An instructor of the exercises also wants each part: which checker a student
passed, and which written answer still waits for a human. Run from the course directory::

    nbgrader export --exporter=parts_export.PartsCsvExport --to parts.csv

(the course's ``nbgrader_config.py`` puts this folder on ``sys.path``). Columns:

``student_id, assignment, notebook, part, kind, max_points, auto_score, manual_score,
score, needs_manual_grade``

``part`` is the cell's ``grade_id``; ``kind`` is ``autograded`` for a test cell (its
points come from running the checker) and ``written`` for an answer graded by hand
(``auto_score`` 0 when it was left untouched, empty while it waits for the grader).
Scores are empty where the gradebook has none.
"""

from __future__ import annotations

import csv

from nbgrader.plugins import ExportPlugin

COLUMNS = (
    "student_id",
    "assignment",
    "notebook",
    "part",
    "kind",
    "max_points",
    "auto_score",
    "manual_score",
    "score",
    "needs_manual_grade",
)


class PartsCsvExport(ExportPlugin):
    """Write every grade of every submission, one row per student and part."""

    def export(self, gradebook):
        dest = self.to or "parts.csv"
        self.log.info("Exporting the grades of every part to %s", dest)
        with open(dest, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for row in rows(gradebook, set(self.assignment), set(self.student)):
                writer.writerow(row)


def rows(gradebook, assignments=frozenset(), students=frozenset()):
    """The rows of :data:`COLUMNS`, in gradebook order (empty filters keep everything)."""
    for assignment in gradebook.assignments:
        if assignments and assignment.name not in assignments:
            continue
        for submission in assignment.submissions:
            if students and submission.student.id not in students:
                continue
            for notebook in submission.notebooks:
                written = {cell.name for cell in notebook.notebook.solution_cells}
                for grade in notebook.grades:
                    yield (
                        submission.student.id,
                        assignment.name,
                        notebook.name,
                        grade.name,
                        "written" if grade.name in written else "autograded",
                        grade.max_score,
                        _blank_if_none(grade.auto_score),
                        _blank_if_none(grade.manual_score),
                        grade.score,
                        grade.needs_manual_grade,
                    )


def _blank_if_none(value):
    return "" if value is None else value
