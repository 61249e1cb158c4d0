"""The misconceptions board's numbers and its store (hub/misconceptions/counts.py, store.py).

Counts by distinct students whose latest run (by the kernel's clock) shows a diagnosis; stuck
after three failed runs a minute apart; what changed over the last minutes; sessions that
start from zero and keep the earlier ones; a report id stored once; nothing acknowledged is
lost when the process dies; retention and wipe.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hub"))

from misconceptions import counts  # noqa: E402
from misconceptions.counts import Report  # noqa: E402
from misconceptions.store import Store, database, write_csv  # noqa: E402

PARTS = [("19.3", "", "softmax row backward"), ("19.4", "c", "your own gradient check")]


def describe(exercise, part, name):
    return name.replace("_", " ").upper(), f"hint for {name}", name == "wrong_output"


def run(student, ran_at, *diagnoses, part=("19.3", ""), received=None):
    exercise, letter = part
    return Report(student, exercise, letter, not diagnoses, diagnoses, ran_at, received or ran_at)


def test_counts_follow_each_students_latest_run_by_the_kernels_clock():
    reports = [
        run("ann", 10, "row_term_sign"),
        run("ann", 20),  # fixed it: drops out of row_term_sign
        run("bob", 30, "row_term_sign", "modified_input"),
        run("cid", 40, "row_term_sign"),
        # delivered late by a retry, but ran before cid's latest run
        run("cid", 35, "missing_row_term", received=100),
        run("dan", 50, "missing_row_term", part=("19.4", "c")),
    ]
    parts = counts.board(reports, PARTS, describe, now=100, window=1000)
    row, gradient_check = parts
    assert (row["attempted"], row["passing"], row["stuck"]) == (3, 1, 0)
    assert [(d["name"], d["students"]) for d in row["diagnoses"]] == [
        ("row_term_sign", 2),
        ("modified_input", 1),
    ]
    assert row["diagnoses"][0]["title"] == "ROW TERM SIGN"
    assert row["diagnoses"][0]["hint"] == "hint for row_term_sign"
    assert gradient_check["key"] == "19.4 (c)"
    assert [(d["name"], d["students"]) for d in gradient_check["diagnoses"]] == [
        ("missing_row_term", 1)
    ]


def test_at_most_five_bars_and_the_rest_counted():
    reports = [run(f"s{i}", i, f"mistake_{i}") for i in range(7)]
    (part, _) = counts.board(reports, PARTS, describe, now=10)
    assert len(part["diagnoses"]) == counts.TOP and part["others"] == 2
    (every, _) = counts.board(reports, PARTS, describe, now=10, top=None)
    assert len(every["diagnoses"]) == 7 and every["others"] == 0


@pytest.mark.parametrize(
    ("times", "last_passes", "stuck"),
    [
        ([0, 60, 120], False, True),
        ([0, 30, 59, 100], False, False),  # four runs, but only 0 and 100 a minute apart
        ([0, 30, 60, 90, 120], False, True),  # 0, 60, 120
        ([0, 60, 120], True, False),  # passes now
        ([0, 60], False, False),
    ],
)
def test_stuck_means_three_failed_runs_a_minute_apart_and_not_passing(times, last_passes, stuck):
    runs = [run("ann", t, "row_term_sign") for t in times]
    if last_passes:
        runs.append(run("ann", times[-1] + 1))
    assert counts.is_stuck(runs) is stuck
    (part, _) = counts.board(runs, PARTS, describe, now=1000)
    assert part["stuck"] == int(stuck)


def test_what_changed_compares_with_the_reports_received_a_window_ago():
    reports = [
        run("ann", 0, "wrong_scale"),
        run("bob", 0, "wrong_scale"),
        run("ann", 250, received=250),  # fixed within the window
        run("cid", 260, "mask_after_softmax", received=260),  # spreading
        run("dan", 270, "mask_after_softmax", received=270),
    ]
    (part, _) = counts.board(reports, PARTS, describe, now=300, window=120)
    assert {c["name"]: c["change"] for c in part["changes"]} == {
        "mask_after_softmax": 2,
        "wrong_scale": -1,
    }
    assert part["passing_change"] == 1
    bars = {d["name"]: d["change"] for d in part["diagnoses"]}
    assert bars == {"mask_after_softmax": 2, "wrong_scale": -1}


def test_names_list_the_students_of_each_diagnosis_and_the_stuck():
    reports = [run("bob", t, "row_term_sign") for t in (0, 60, 120)]
    reports += [run("ann", 5, "row_term_sign"), run("eve", 5)]
    (part, other) = counts.names(reports, PARTS)
    assert part["diagnoses"] == [("row_term_sign", ["ann", "bob"])]
    assert part["stuck"] == ["bob"] and other["diagnoses"] == []


def report(*diagnoses, exercise="19.3", part="", ran_at=None, **extra):
    """A report as the sink sends it (a right answer without diagnoses)."""
    return {
        "id": str(uuid.uuid4()),
        "exercise": exercise,
        "part": part,
        "passed": not diagnoses,
        "diagnoses": list(diagnoses),
        "ran_at": time.time() if ran_at is None else ran_at,
        **extra,
    }


@pytest.fixture
def store(tmp_path):
    opened = Store(database(tmp_path, "course-a"))
    yield opened
    opened.close()


def test_a_report_id_is_stored_once(store):
    first = report("row_term_sign", ran_at=1.0)
    assert store.add("ann", [first], 0, now=2.0) == (1, 0)
    assert store.add("ann", [first, report(ran_at=3.0)], 0, now=4.0) == (1, 1)
    session = store.current(5.0)
    assert len(store.reports(session)) == 2


def test_a_new_session_starts_from_zero_and_keeps_the_earlier_one(store):
    store.add("ann", [report("row_term_sign", ran_at=1.0)], 3, now=2.0)
    first = store.current(2.0)
    second = store.start(10.0, "Lecture 2")
    assert second != first and store.current(11.0) == second
    assert store.reports(second) == [] and store.dropped(second) == 0
    assert len(store.reports(first)) == 1 and store.dropped(first) == 3
    sessions = {s["id"]: s for s in store.sessions()}
    assert sessions[first]["ended"] == 10.0 and sessions[second]["label"] == "Lecture 2"
    assert sessions[first]["students"] == 1


def test_retention_deletes_old_closed_sessions_only(store):
    store.add("ann", [report("row_term_sign", ran_at=1.0)], 0, now=1.0)
    old = store.current(1.0)
    store.start(2.0)
    day = 86400
    assert store.prune(now=1.0 + 179 * day) == 0
    assert store.prune(now=1.0 + 181 * day) == 1
    assert store.session(old) is None and len(store.sessions()) == 1


def test_acknowledged_reports_survive_a_killed_process(tmp_path):
    path = database(tmp_path, "course-a")
    script = f"""
import os, sys, uuid
sys.path.insert(0, {str(ROOT / "hub")!r})
from misconceptions.store import Store
store = Store({str(path)!r})
for i in range(20):
    store.add("ann", [{{"id": str(uuid.uuid4()), "exercise": "19.3", "part": "",
        "passed": False, "diagnoses": ["row_term_sign"], "ran_at": float(i)}}], 0, now=i + 1.0)
    print("ack", i, flush=True)
os.kill(os.getpid(), 9)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -9 and done.stdout.count("ack") == 20
    reopened = Store(path)
    assert len(reopened.reports(reopened.current(100.0))) == 20


def test_wipe_from_the_command_line_deletes_a_course_and_only_that_course(tmp_path):
    for course in ("course-a", "course-b"):
        opened = Store(database(tmp_path, course))
        opened.add("ann", [report("row_term_sign", ran_at=1.0)], 0, now=1.0)
        opened.close()
    script = ROOT / "hub" / "misconceptions" / "store.py"
    done = subprocess.run(
        [sys.executable, str(script), "wipe", "--state", str(tmp_path), "--course", "course-a"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wiped 1 session(s) of course 'course-a'" in done.stdout
    assert Store(database(tmp_path, "course-a")).sessions() == []
    assert len(Store(database(tmp_path, "course-b")).sessions()) == 1


def test_csv_has_one_row_per_part_and_diagnosis():
    reports = [run("ann", 1, "row_term_sign"), run("bob", 2, "row_term_sign", "wrong_output")]
    rows = counts.board(reports, PARTS, describe, now=10, top=None)
    out = io.StringIO()
    write_csv([{**row, "source": "session 1"} for row in rows], out)
    table = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [(r["part"], r["diagnosis"], r["students"]) for r in table] == [
        ("", "row_term_sign", "2"),
        ("", "wrong_output", "1"),
        ("c", "", ""),
    ]
    assert table[0]["attempted"] == "2" and table[0]["diagnosis_title"] == "ROW TERM SIGN"
