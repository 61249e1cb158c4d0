"""The report sink the students' environment installs (hub/misconceptions/sink): what it
sends and when it stays silent, that it never holds up the verdict whatever the service
does, retries, drops, its outbox's limit, and a killed kernel's report delivered later.

The service is a small stand-in on 127.0.0.1 that can be up, down, silent, answer junk,
or refuse with a status; the real service is in tests/test_misconceptions_service.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from attention_lib import pitfalls, softmax_backward
from attention_lib.exercises import check_exercise_19_3

ROOT = Path(__file__).resolve().parent.parent
SINK_FILE = ROOT / "hub" / "misconceptions" / "sink" / "attention_misconceptions_sink.py"
spec = importlib.util.spec_from_file_location("attention_misconceptions_sink", SINK_FILE)
sink = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sink)

WRONG = check_exercise_19_3(pitfalls.softmax_backward_sign_error)
RIGHT = check_exercise_19_3(softmax_backward)


class Stand:
    """A stand-in service: ``mode`` is "up", "silent", "junk" or an HTTP status to answer
    (a list of them: one per request, the last one repeated)."""

    def __init__(self, mode="up"):
        self.modes = mode if isinstance(mode, list) else [mode]
        self.bodies, self.headers, self.times = [], [], []
        self.release = threading.Event()
        stand = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                mode = stand.modes.pop(0) if len(stand.modes) > 1 else stand.modes[0]
                stand.times.append(time.monotonic())
                if mode == "silent":
                    stand.release.wait(30)
                    return
                if mode == "up":
                    stand.bodies.append(json.loads(body))
                    stand.headers.append(dict(self.headers))
                    answer, status = json.dumps({"stored": 1}).encode(), 200
                elif mode == "junk":
                    answer, status = b"<html>a login page</html>", 200
                else:
                    answer, status = b'{"error": "no"}', mode
                self.send_response(status)
                if status == 429:
                    self.send_header("Retry-After", "1")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/services/misconceptions/api/reports"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reports(self):
        return [report for body in self.bodies for report in body["reports"]]

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def closed_port_url():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/services/misconceptions/api/reports"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", f"token-{uuid.uuid4()}")  # a sender per test
    return tmp_path


@pytest.fixture
def stand(request, home, monkeypatch):
    running = Stand(getattr(request, "param", "up"))
    monkeypatch.setenv(sink.URL_VARIABLE, running.url)
    yield running
    running.stop()


def wait_until(condition, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def outbox():
    return sink.Outbox(sink.outbox())


def test_a_report_goes_as_names_and_facts_with_the_kernels_token(stand):
    def students_own(weights, grad_weights):  # defined in a notebook cell, not the library
        return pitfalls.softmax_backward_sign_error(weights, grad_weights)

    before = time.time()
    sink.send(WRONG, (students_own,))
    sink.send(RIGHT)
    wait_until(lambda: len(stand.reports()) == 2)
    wrong, right = stand.reports()
    assert set(wrong) == {"id", "exercise", "part", "passed", "diagnoses", "ran_at"}
    assert (wrong["exercise"], wrong["passed"]) == ("19.3", False)
    assert wrong["part"] == getattr(WRONG, "part", "")  # 19.3 (b) where reports have parts
    assert wrong["diagnoses"] == ["row_term_sign"] and right["diagnoses"] == []
    assert right["passed"] and str(uuid.UUID(wrong["id"])) == wrong["id"]
    assert before <= wrong["ran_at"] <= time.time()
    assert "rowsum" not in json.dumps(stand.bodies)  # the finding's message quotes code
    assert stand.headers[0]["Authorization"] == f"token {os.environ['JUPYTERHUB_API_TOKEN']}"
    wait_until(lambda: outbox().pending() == [])


def test_the_part_is_the_reports_own_or_read_from_its_label():
    class Report:
        def __init__(self, exercise, part=None):
            self.exercise = exercise
            if part is not None:
                self.part = part

    assert sink.exercise_and_part(Report("19.4", "a")) == ("19.4", "a")
    assert sink.exercise_and_part(Report("19.4 (c)")) == ("19.4", "c")
    assert sink.exercise_and_part(Report("19.3", "")) == ("19.3", "")
    with pytest.raises(ValueError, match="not an exercise label"):
        sink.exercise_and_part(Report("19.4 (c"))


def test_nothing_is_sent_outside_a_hub_under_nbgrader_for_a_scaffold_or_a_library_function(
    stand, monkeypatch
):
    scaffold = check_exercise_19_3(lambda weights, grad: (_ for _ in ()).throw(NotImplementedError))
    assert not scaffold.attempted
    sink.send(scaffold)
    sink.send(WRONG, (pitfalls.softmax_backward_sign_error,))  # 07's demonstration
    sink.send(RIGHT, (softmax_backward,))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    sink.send(WRONG)
    monkeypatch.delenv("NBGRADER_EXECUTION")
    monkeypatch.delenv(sink.URL_VARIABLE)
    sink.send(WRONG)
    monkeypatch.setenv(sink.URL_VARIABLE, stand.url)
    monkeypatch.delenv("JUPYTERHUB_API_TOKEN")
    sink.send(WRONG)
    time.sleep(0.5)
    assert stand.bodies == [] and outbox().pending() == []
    assert not sink.outbox().exists()


@pytest.mark.parametrize("mode", ["up", "down", "silent", "junk", 503])
def test_the_verdict_is_never_held_up_whatever_the_service_does(home, monkeypatch, mode):
    stand = None if mode == "down" else Stand(mode)
    monkeypatch.setenv(sink.URL_VARIABLE, closed_port_url() if stand is None else stand.url)
    try:
        started = time.perf_counter()
        for _ in range(5):
            sink.send(WRONG)
        elapsed = time.perf_counter() - started
        # a silent service holds a request for 30 s and the sink's timeout is 5 s: the five
        # calls return at once all the same
        assert elapsed < 0.5, f"{mode}: five send() calls took {elapsed:.2f} s"
        if mode == "up":
            wait_until(lambda: outbox().pending() == [])
        else:
            time.sleep(0.3)
            assert len(outbox().pending()) == 5  # kept for the next attempt
    finally:
        if stand is not None:
            stand.stop()


@pytest.mark.parametrize("stand", [[503, "up"], [429, "up"], ["junk", "up"]], indirect=True)
def test_a_refusal_worth_retrying_is_retried_and_counted_once(stand):
    sink.send(WRONG)
    wait_until(lambda: len(stand.bodies) == 1)
    wait_until(lambda: outbox().pending() == [])
    assert len(stand.times) == 2 and stand.times[1] - stand.times[0] >= 0.4  # after a pause
    assert len(stand.reports()) == 1


@pytest.mark.parametrize("stand", [400], indirect=True)
def test_a_report_the_service_rejects_is_dropped(stand):
    sink.send(WRONG)
    wait_until(lambda: outbox().pending() == [])
    time.sleep(1.5)
    assert len(stand.times) == 1  # never sent again


def test_the_outbox_keeps_the_newest_200_and_counts_the_rest(home, monkeypatch):
    monkeypatch.setenv(sink.URL_VARIABLE, closed_port_url())
    for _ in range(sink.OUTBOX_LIMIT + 5):
        sink.Outbox(sink.outbox()).put(sink.payload(WRONG))
    box = outbox()
    assert len(box.pending()) == sink.OUTBOX_LIMIT and box.dropped() == 5
    stand = Stand("up")
    try:
        monkeypatch.setenv(sink.URL_VARIABLE, stand.url)
        sink.send(RIGHT)  # the 201st: one more of the oldest goes
        wait_until(lambda: box.pending() == [], timeout=60)
        assert max(len(body["reports"]) for body in stand.bodies) == sink.BATCH
        assert stand.bodies[0]["dropped"] == 6 and box.dropped() == 0
        assert sum(body["dropped"] for body in stand.bodies) == 6
        assert len(stand.reports()) == sink.OUTBOX_LIMIT
        assert stand.reports()[-1]["passed"]  # oldest first: the newest goes last
    finally:
        stand.stop()


def test_a_kernel_killed_right_after_a_run_loses_nothing(stand, home):
    """The killed kernel's report waits in the student's outbox; the next kernel sends it."""
    script = f"""
import importlib.util, os, signal
spec = importlib.util.spec_from_file_location("sink", {str(SINK_FILE)!r})
sink = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sink)
from attention_lib import pitfalls
from attention_lib.exercises import check_exercise_19_3
sink.send(check_exercise_19_3(pitfalls.softmax_backward_sign_error))
os.kill(os.getpid(), signal.SIGKILL)  # before the sender's thread gets a turn
"""
    stand.modes = ["silent"]  # the service is slow to answer, too
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert len(outbox().pending()) == 1
    stand.modes = ["up"]
    sink.send(RIGHT)  # the student's next run, in a new kernel
    wait_until(lambda: len(stand.reports()) == 2)
    assert [r["passed"] for r in stand.reports()] == [False, True]
