"""The class hub's report sink: each checker run's verdict, counted for the instructor.

Installed only in the students' single-user environment (``make singleuser``), where it
registers :func:`send` under ``attention_lib.report_sinks``; attention_lib hands it every
finished report. What goes to the misconceptions service (hub/misconceptions/service.py):
the exercise and part, passed or not, the diagnosis **names** (never a finding's message,
which quotes the student's code), a report id and the kernel's clock. Nothing at all for an
untouched scaffold, a function of attention_lib itself (07 runs a checker on a library
pitfall as a demonstration), under nbgrader (``NBGRADER_EXECUTION``: validate and
autograde), or outside a hub (no ``ATTENTION_MISCONCEPTIONS_URL`` or
``JUPYTERHUB_API_TOKEN``, which the hub gives each student's server and so its kernels).

Never in the student's way: :func:`send` writes the report into an outbox folder in the
student's home and returns; a thread of the kernel's posts it, with a short timeout, and
the verdict prints the same, as fast, whatever the service does. The outbox survives a
killed kernel (the next kernel that reports sends what is left); it holds at most
:data:`OUTBOX_LIMIT` reports, the oldest dropped first and counted (the board shows the
count). Batches of up to :data:`BATCH` reports, oldest first; retried with a growing pause
on 429, 5xx, time-outs and a refused connection (the service restarting), dropped on any
other 4xx. The service counts a report id once, so a retry never counts twice.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import deque
from pathlib import Path

URL_VARIABLE = "ATTENTION_MISCONCEPTIONS_URL"
OUTBOX_LIMIT = 200
BATCH = 10  # the service takes at most 10 reports in 10 s from one student
TIMEOUT_S = 5.0
#: The longest pause between two tries: the board counts a report at most this long after
#: the service is back (a class of 30 retrying: three requests a second).
MAX_PAUSE_S = 10.0
_EXERCISE = re.compile(r"(?P<exercise>\d+\.\d+)(?: \((?P<part>[a-z])\))?")


def outbox() -> Path:
    return Path.home() / ".local" / "share" / "attention-misconceptions" / "outbox"


def exercise_and_part(report) -> tuple[str, str]:
    """The part of the exercise a report judges: its ``part`` where the report has one
    (``("19.4", "a")``), else read from its label (``"19.4 (c)"`` -> ``("19.4", "c")``,
    ``"19.3"`` -> ``("19.3", "")``)."""
    part = getattr(report, "part", "")
    if part:
        return report.exercise, part
    match = _EXERCISE.fullmatch(report.exercise)
    if match is None:
        raise ValueError(f"not an exercise label: {report.exercise!r}")
    return match["exercise"], match["part"] or ""


def from_library(function) -> bool:
    module = getattr(function, "__module__", None) or ""
    return module == "attention_lib" or module.startswith("attention_lib.")


def payload(report) -> dict:
    """What is sent of one report: names and facts, no message text."""
    exercise, part = exercise_and_part(report)
    return {
        "id": str(uuid.uuid4()),
        "exercise": exercise,
        "part": part,
        "passed": bool(report.passed),
        "diagnoses": list(dict.fromkeys(report.diagnoses)),
        "ran_at": time.time(),
    }


def send(report, functions=()) -> None:
    """The entry point: queue ``report`` for the service, or do nothing (module docstring)."""
    url, token = os.environ.get(URL_VARIABLE), os.environ.get("JUPYTERHUB_API_TOKEN")
    if not url or not token or os.environ.get("NBGRADER_EXECUTION"):
        return
    if not report.attempted or any(from_library(function) for function in functions):
        return
    Outbox(outbox()).put(payload(report))
    _sender(url, token).wake.set()


class Outbox:
    """One JSON file per report, named so that names sort oldest first; ``dropped`` counts
    the reports the limit threw away since the service last heard of it."""

    def __init__(self, folder: Path, limit: int = OUTBOX_LIMIT):
        self.folder, self.limit = folder, limit

    def put(self, item: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{item['id']}.json"
        partial = self.folder / f"{name}.partial"  # not *.json: no sender reads it half written
        partial.write_text(json.dumps(item))
        partial.replace(self.folder / name)  # whole or not at all, for a sender reading it
        extra = self.pending()[: -self.limit]
        for path in extra:
            path.unlink(missing_ok=True)
        if extra:
            self._set_dropped(self.dropped() + len(extra))

    def pending(self) -> list[Path]:
        try:
            return sorted(self.folder.glob("*.json"))
        except OSError:
            return []

    def dropped(self) -> int:
        try:
            return int((self.folder / "dropped").read_text())
        except (OSError, ValueError):
            return 0

    def _set_dropped(self, count: int) -> None:
        (self.folder / "dropped").write_text(str(max(count, 0)))

    def batch(self, size: int = BATCH) -> tuple[list[Path], list[dict]]:
        paths, items = [], []
        for path in self.pending()[:size]:
            try:
                items.append(json.loads(path.read_text()))
            except (OSError, ValueError):  # taken by another kernel, or damaged: not ours
                path.unlink(missing_ok=True)
                continue
            paths.append(path)
        return paths, items

    def done(self, paths: list[Path], dropped_reported: int = 0) -> None:
        for path in paths:
            path.unlink(missing_ok=True)
        if dropped_reported:
            self._set_dropped(self.dropped() - dropped_reported)


class Sender(threading.Thread):
    """Posts the outbox in the background; :attr:`round_trips` keeps the last acknowledged
    round trips in seconds (the class benchmark reads them)."""

    def __init__(self, url: str, token: str):
        super().__init__(name="attention-misconceptions-sink", daemon=True)
        self.url, self.token = url, token
        self.wake = threading.Event()
        self.round_trips = deque(maxlen=1000)

    def run(self) -> None:
        pause = None
        while True:
            self.wake.wait(timeout=pause)
            self.wake.clear()
            box = Outbox(outbox())
            paths, items = box.batch()
            if not items:
                pause = None
                continue
            dropped = box.dropped()
            verdict, retry_after = self.post({"reports": items, "dropped": dropped})
            if verdict == "retry":
                pause = min(MAX_PAUSE_S, max(retry_after, 2 * (pause or 0.5)))
                pause *= random.uniform(0.8, 1.2)  # a class retrying together spreads out
                continue
            box.done(paths, dropped if verdict == "stored" else 0)
            pause = 0 if len(box.pending()) else None

    def post(self, body: dict) -> tuple[str, float]:
        """("stored" | "rejected" | "retry", seconds the service asked to wait)."""
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"token {self.token}",
                "Content-Type": "application/json",
            },
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                answer = json.loads(response.read(65536) or b"null")
        except urllib.error.HTTPError as error:
            if error.code == 429 or error.code >= 500:
                return "retry", _seconds(error.headers.get("Retry-After"))
            return "rejected", 0.0
        except (OSError, ValueError):  # refused, timed out, reset; or not the service's JSON
            return "retry", 0.0
        if not isinstance(answer, dict) or "stored" not in answer:
            return "retry", 0.0  # a 200 from something that is not the service
        self.round_trips.append(time.monotonic() - started)
        return "stored", 0.0


def _seconds(value) -> float:
    try:
        return min(float(value), MAX_PAUSE_S)
    except (TypeError, ValueError):
        return 0.0


_lock = threading.Lock()
_running: dict[tuple[str, str], Sender] = {}


def _sender(url: str, token: str) -> Sender:
    """The kernel's one sender for this address and token, started on first use."""
    with _lock:
        sender = _running.get((url, token))
        if sender is None or not sender.is_alive():
            sender = _running[url, token] = Sender(url, token)
            sender.start()
        return sender
