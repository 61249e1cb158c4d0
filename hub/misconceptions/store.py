"""The board's data: one SQLite file per course in the hub's state folder.

Sessions (one per lecture: the instructor starts a new one and the counts start from
zero; earlier ones are kept and can be viewed) and the reports received in each: who (the
token's owner), exercise, part, passed, the diagnosis names, the kernel's clock and the
service's. A report id is stored once, so a retried report counts once. Write-ahead log
with ``synchronous=FULL``: a report is acknowledged only after its transaction is on disk,
so killing the service or the hub loses nothing that was acknowledged.

Kept for :data:`RETENTION_DAYS` after a session's last report (``prune``, which the service
runs at start and daily); ``python hub/misconceptions/store.py wipe`` deletes a course's
data (``make misconceptions-wipe``).
"""

from __future__ import annotations

import argparse
import csv
import json
import sqlite3
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script (make misconceptions-wipe)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "misconceptions"

from .counts import Report

RETENTION_DAYS = 180  # two terms: a course can compare this term with the last
DEFAULT_COURSE = "attention-notebooks"

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL
);
CREATE TABLE IF NOT EXISTS reports (
    id TEXT PRIMARY KEY,
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    student TEXT NOT NULL,
    exercise TEXT NOT NULL,
    part TEXT NOT NULL,
    passed INTEGER NOT NULL,
    diagnoses TEXT NOT NULL,
    ran_at REAL NOT NULL,
    received REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS reports_by_session ON reports(session, received);
CREATE TABLE IF NOT EXISTS dropped (
    session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    student TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (session, student)
);
"""


def database(state: Path, course: str = DEFAULT_COURSE) -> Path:
    return Path(state) / "misconceptions" / f"{course}.sqlite"


class Store:
    def __init__(self, path: Path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def version(self) -> int:
        """Changes when another connection commits (``make misconceptions-wipe``)."""
        return self.db.execute("PRAGMA data_version").fetchone()[0]

    # -- sessions ----------------------------------------------------------------------

    def sessions(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT s.id, s.label, s.started, s.ended, COUNT(r.id), COUNT(DISTINCT r.student) "
            "FROM sessions s LEFT JOIN reports r ON r.session = s.id "
            "GROUP BY s.id ORDER BY s.id DESC"
        ).fetchall()
        keys = ("id", "label", "started", "ended", "reports", "students")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def session(self, session_id: int) -> dict | None:
        return next((s for s in self.sessions() if s["id"] == session_id), None)

    def current(self, now: float) -> int:
        """The open session, opened now if there is none."""
        row = self.db.execute(
            "SELECT id FROM sessions WHERE ended IS NULL ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return row[0] if row else self.start(now)

    def start(self, now: float, label: str = "") -> int:
        """Close the open session and open a new one (a new lecture)."""
        label = label.strip()[:80] or time.strftime("%a %d %b %Y, %H:%M", time.localtime(now))
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("UPDATE sessions SET ended = ? WHERE ended IS NULL", (now,))
            cursor = self.db.execute(
                "INSERT INTO sessions (label, started) VALUES (?, ?)", (label, now)
            )
        return cursor.lastrowid

    # -- reports -----------------------------------------------------------------------

    def add(self, student: str, reports: list[dict], dropped: int, now: float) -> tuple[int, int]:
        """Store checked reports in the open session, in one transaction: (stored, already
        stored). ``dropped``: reports the student's outbox had to throw away."""
        session = self.current(now)
        stored = 0
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            for report in reports:
                cursor = self.db.execute(
                    "INSERT OR IGNORE INTO reports VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        report["id"],
                        session,
                        student,
                        report["exercise"],
                        report["part"],
                        int(report["passed"]),
                        json.dumps(report["diagnoses"]),
                        report["ran_at"],
                        now,
                    ),
                )
                stored += cursor.rowcount
            if dropped:
                self.db.execute(
                    "INSERT INTO dropped VALUES (?, ?, ?) ON CONFLICT (session, student) "
                    "DO UPDATE SET count = count + excluded.count",
                    (session, student, dropped),
                )
        return stored, len(reports) - stored

    def reports(self, session_id: int) -> list[Report]:
        rows = self.db.execute(
            "SELECT student, exercise, part, passed, diagnoses, ran_at, received "
            "FROM reports WHERE session = ?",
            (session_id,),
        ).fetchall()
        return [
            Report(student, exercise, part, bool(passed), tuple(json.loads(names)), ran, got)
            for student, exercise, part, passed, names, ran, got in rows
        ]

    def dropped(self, session_id: int) -> int:
        row = self.db.execute(
            "SELECT COALESCE(SUM(count), 0) FROM dropped WHERE session = ?", (session_id,)
        ).fetchone()
        return row[0]

    # -- keeping and deleting ----------------------------------------------------------

    def prune(self, now: float, days: float = RETENTION_DAYS) -> int:
        """Delete the closed sessions whose last report (or start) is older than ``days``."""
        with self.db:
            cursor = self.db.execute(
                "DELETE FROM sessions WHERE ended IS NOT NULL AND COALESCE("
                "(SELECT MAX(received) FROM reports WHERE session = sessions.id), started) < ?",
                (now - days * 86400,),
            )
        return cursor.rowcount

    def wipe(self) -> None:
        with self.db:
            self.db.execute("DELETE FROM sessions")
        self.db.execute("VACUUM")


def write_csv(rows: list[dict], out) -> None:
    """The counts as CSV, one row per part and diagnosis (a part with none: one row)."""
    writer = csv.writer(out)
    writer.writerow(
        ("source", "exercise", "part", "title", "attempted", "passing", "stuck")
        + ("diagnosis", "diagnosis_title", "students")
    )
    for row in rows:
        head = [row["source"], row["exercise"], row["part"], row["title"]]
        head += [row["attempted"], row["passing"], row.get("stuck", "")]
        for bar in row["diagnoses"] or [None]:
            tail = [bar["name"], bar["title"], bar["students"]] if bar else ["", "", ""]
            writer.writerow(head + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The misconceptions board's data.")
    parser.add_argument("command", choices=["wipe"])
    parser.add_argument("--state", type=Path, required=True, help="the hub's state folder")
    parser.add_argument("--course", default=DEFAULT_COURSE)
    args = parser.parse_args(argv)
    path = database(args.state, args.course)
    if not path.exists():
        print(f"nothing to wipe: {path} does not exist")
        return 0
    store = Store(path)
    sessions = len(store.sessions())
    store.wipe()
    store.close()
    print(f"wiped {sessions} session(s) of course {args.course!r} from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
