"""Hand a finished checker report to the report sinks that are installed, if any.

A report sink is a callable ``sink(report, functions)`` registered by an installed
package under the entry-point group ``attention_lib.report_sinks``; ``report`` is the
:class:`~attention_lib.exercises.ExerciseReport` a checker returns, ``functions`` the
student's functions it ran. The library registers none and sends nothing anywhere: the
class hub's single-user environment installs the one that counts the class's mistakes
for the instructor (``hub/misconceptions/sink``, docs/teaching.md). A checker's verdict
never depends on a sink: one that cannot be loaded, or raises, is skipped. The group is
read once per process (a sink installed later counts from the next kernel on).
"""

from __future__ import annotations

import functools
from importlib.metadata import entry_points

GROUP = "attention_lib.report_sinks"

__all__ = ["GROUP", "deliver"]


def deliver(report, functions=()):
    """Hand ``report`` (and the student's ``functions``) to every installed sink.

    Never raises: a sink that cannot be loaded or fails is skipped, and the others still
    get the report.

    Parameters
    ----------
    report : ExerciseReport
        What a checker found, as it returns it.
    functions : iterable of callable, optional
        The student's functions that the checker ran (a sink skips the library's own).

    Returns
    -------
    int
        How many sinks took the report.

    Examples
    --------
    >>> from attention_lib.exercises import ExerciseReport
    >>> deliver(ExerciseReport("19.9", "an example", checked=("it runs",)))  # none installed
    0
    """
    delivered = 0
    for sink in _installed_sinks():
        try:
            sink(report, tuple(functions))
        except Exception:  # a sink's failure must never reach the student's verdict
            continue
        delivered += 1
    return delivered


@functools.cache
def _installed_sinks():
    """The sinks' callables, found once per process: looking the group up scans every
    installed package's metadata (about 10-25 ms here, a tenth of a checker run)."""
    sinks = []
    for entry_point in entry_points(group=GROUP):
        try:
            sinks.append(entry_point.load())
        except Exception:  # a broken sink package must not break the checkers
            continue
    return tuple(sinks)
