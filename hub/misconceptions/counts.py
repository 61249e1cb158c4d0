"""The board's numbers from a session's reports: pure computation, no I/O.

Per exercise part: the students who attempted it, who pass now and who are stuck; each
diagnosis counted by the distinct students whose **latest** run of that part shows it
(latest by the kernel's clock when the checker ran, so a report delivered late by a retry
still takes its place; a student who fixes the mistake drops out of its count); and what
changed over the last few minutes, against the same counts from the reports the service
had received by then.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

#: Stuck: at least this many failed runs, each at least STUCK_GAP_S after the last counted
#: one, and the latest run not passing (three tries a minute apart: not a typo, a wall).
STUCK_RUNS = 3
STUCK_GAP_S = 60.0
#: How many diagnoses each part shows as bars, and how far back "what changed" looks.
TOP = 5
CHANGE_WINDOW_S = 300.0
CHANGES_SHOWN = 3


@dataclasses.dataclass(frozen=True)
class Report:
    """One stored report, as the counts need it."""

    student: str
    exercise: str
    part: str
    passed: bool
    diagnoses: tuple[str, ...]
    ran_at: float  # the kernel's clock
    received: float  # the service's clock


def latest_runs(reports) -> dict[tuple[str, str], dict[str, Report]]:
    """{(exercise, part): {student: their latest report of that part}}."""
    latest: dict[tuple[str, str], dict[str, Report]] = defaultdict(dict)
    for report in sorted(reports, key=lambda r: (r.ran_at, r.received)):
        latest[report.exercise, report.part][report.student] = report
    return latest


def is_stuck(runs: list[Report]) -> bool:
    """``runs``: one student's reports of one part."""
    runs = sorted(runs, key=lambda r: r.ran_at)
    if not runs or runs[-1].passed:
        return False
    counted, last = 0, None
    for run in runs:
        if not run.passed and (last is None or run.ran_at - last >= STUCK_GAP_S):
            counted, last = counted + 1, run.ran_at
    return counted >= STUCK_RUNS


def diagnosis_counts(latest: dict[str, Report]) -> dict[str, int]:
    """Distinct students per diagnosis among the latest runs of one part."""
    counts: dict[str, int] = defaultdict(int)
    for report in latest.values():
        if not report.passed:
            for name in set(report.diagnoses):
                counts[name] += 1
    return dict(counts)


def part_numbers(reports, exercise: str, part: str) -> dict:
    """Attempted, passing, stuck and the diagnosis counts of one part (all students)."""
    mine = [r for r in reports if (r.exercise, r.part) == (exercise, part)]
    latest = latest_runs(mine).get((exercise, part), {})
    runs: dict[str, list[Report]] = defaultdict(list)
    for report in mine:
        runs[report.student].append(report)
    return {
        "attempted": len(latest),
        "passing": sum(report.passed for report in latest.values()),
        "stuck": sum(is_stuck(student_runs) for student_runs in runs.values()),
        "diagnoses": diagnosis_counts(latest),
    }


def board(
    reports, parts, describe, now: float, window: float = CHANGE_WINDOW_S, top: int | None = TOP
) -> list[dict]:
    """What the board shows, part by part, in the order of ``parts``.

    ``parts``: (exercise, part, title) triples; ``describe(exercise, part, name)`` gives a
    diagnosis's (title, hint, generic). The ``top`` diagnoses (all, for None) by students,
    then name; ``others`` counts the diagnoses left out.
    """
    reports = list(reports)
    earlier = [r for r in reports if r.received <= now - window]
    shown = []
    for exercise, part, title in parts:
        current = part_numbers(reports, exercise, part)
        before = part_numbers(earlier, exercise, part)
        ranked = sorted(current["diagnoses"].items(), key=lambda item: (-item[1], item[0]))
        bars = []
        for name, students in ranked[:top]:
            name_title, hint, generic = describe(exercise, part, name)
            bars.append(
                {
                    "name": name,
                    "title": name_title,
                    "hint": hint,
                    "generic": generic,
                    "students": students,
                    "change": students - before["diagnoses"].get(name, 0),
                }
            )
        changes = []
        for name in set(current["diagnoses"]) | set(before["diagnoses"]):
            delta = current["diagnoses"].get(name, 0) - before["diagnoses"].get(name, 0)
            if delta:
                changes.append(
                    {"name": name, "title": describe(exercise, part, name)[0], "change": delta}
                )
        changes.sort(key=lambda c: (-abs(c["change"]), c["name"]))
        shown.append(
            {
                "key": f"{exercise} ({part})" if part else exercise,
                "exercise": exercise,
                "part": part,
                "title": title,
                "attempted": current["attempted"],
                "passing": current["passing"],
                "passing_change": current["passing"] - before["passing"],
                "stuck": current["stuck"],
                "others": len(ranked) - len(bars),
                "diagnoses": bars,
                "changes": changes[:CHANGES_SHOWN],
            }
        )
    return shown


def names(reports, parts) -> list[dict]:
    """Who shows each diagnosis now, and who is stuck, part by part (the instructor's own
    screen only: never the projected board)."""
    reports = list(reports)
    latest = latest_runs(reports)
    runs: dict[tuple[str, str, str], list[Report]] = defaultdict(list)
    for report in reports:
        runs[report.exercise, report.part, report.student].append(report)
    listed = []
    for exercise, part, title in parts:
        by_name: dict[str, list[str]] = defaultdict(list)
        for student, report in sorted(latest.get((exercise, part), {}).items()):
            if not report.passed:
                for name in dict.fromkeys(report.diagnoses):
                    by_name[name].append(student)
        stuck = sorted(
            student
            for (e, p, student), student_runs in runs.items()
            if (e, p) == (exercise, part) and is_stuck(student_runs)
        )
        listed.append(
            {
                "key": f"{exercise} ({part})" if part else exercise,
                "title": title,
                "diagnoses": sorted(by_name.items(), key=lambda item: (-len(item[1]), item[0])),
                "stuck": stuck,
            }
        )
    return listed
