# The course's nbgrader settings (nbgrader 0.9.6, hub/requirements-instructor.txt).
#
# A course directory made by `make course` (hub/nbgrader/course.py) has a short
# nbgrader_config.py of its own that loads this file and then names the course's folders
# (CourseDirectory.root, Exchange.root); nbgrader reads that one when it is run from the
# course directory, as its documentation does it. Everything that is the same for every
# course run of the series is here. docs/teaching.md ("Grading the exercises") gives the
# commands.
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (nbgrader's config loader provides it)

c.CourseDirectory.course_id = "attention-notebooks"

# Autograde runs each submission with the series' own environment, not the instructor's:
# `make grading-kernel` registers this kernel (the Python of `make setup`'s .venv) in the
# instructor's environment. Without the name nbgrader would start the kernel the notebook
# names, "python3", which is the instructor environment's Python (no NumPy, no series).
c.Execute.kernel_name = "attention-series"
# A cell that runs longer is stopped and scores 0. The slowest right answer the checkers
# know (19.2 with one dot product per Python loop step) takes about 3 s here; two minutes
# leave room for a slower right answer on a loaded machine and still stop a student's
# endless loop before it holds up the class's grading for long.
c.Execute.timeout = 120

# collect compares a submission's owner with the student it claims to be. Under this hub
# every student's server is a process of the hub's own user (SimpleLocalProcessSpawner,
# docs/teaching.md), so every submission has that owner and the check would warn for
# every student. A course with one Unix user per student should switch it back on.
c.ExchangeCollect.check_owner = False

# `nbgrader export --exporter=parts_export.PartsCsvExport`: every part's score, autograded
# and written answers apart (hub/nbgrader/parts_export.py).
sys.path.insert(0, str(Path(__file__).resolve().parent))
