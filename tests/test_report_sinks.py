"""attention_lib.report_sinks: every checker run hands its report to the installed sinks, and
no sink can change, delay or break the verdict; the library itself opens no connection."""

from __future__ import annotations

import socket

import pytest

from attention_lib import pitfalls, report_sinks, softmax_backward
from attention_lib.exercises import check_exercise_19_3


class FakeEntryPoint:
    def __init__(self, loaded):
        self.loaded = loaded

    def load(self):
        if isinstance(self.loaded, Exception):
            raise self.loaded
        return self.loaded


@pytest.fixture
def installed(monkeypatch):
    """Install the given sinks for the duration of a test."""

    def install(*sinks):
        points = [FakeEntryPoint(sink) for sink in sinks]
        monkeypatch.setattr(
            report_sinks,
            "entry_points",
            lambda group: points if group == report_sinks.GROUP else [],
        )
        report_sinks._installed_sinks.cache_clear()

    yield install
    report_sinks._installed_sinks.cache_clear()


def test_each_checker_run_reaches_every_sink_even_past_a_broken_one(installed):
    got = []

    def failing(report, functions):
        raise RuntimeError("the service is down")

    installed(
        FakeEntryPoint,  # loads, but is not a sink: raises TypeError when called
        ImportError("a sink package half installed"),
        failing,
        lambda report, functions: got.append((report, functions)),
    )
    wrong = check_exercise_19_3(pitfalls.softmax_backward_sign_error)
    right = check_exercise_19_3(softmax_backward)
    assert [report for report, _ in got] == [wrong, right]
    assert wrong.diagnoses == ("row_term_sign",) and right.passed
    # with each report, the functions the checker called, where the harness records them
    assert all(function is pitfalls.softmax_backward_sign_error for function in got[0][1])


def test_without_sinks_a_report_goes_nowhere_and_opens_no_socket(installed, monkeypatch):
    installed()

    def no_network(*args, **kwargs):
        raise AssertionError("attention_lib opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    report = check_exercise_19_3(pitfalls.softmax_backward_sign_error)
    assert report_sinks.deliver(report) == 0
    assert report.diagnoses == ("row_term_sign",)
