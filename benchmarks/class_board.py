"""The misconceptions board in a simulated class: answers whose diagnoses are known, checker
runs in the students' own kernels, the instructor's view of the counts, and the service's
process. Used by ``bench_class.py`` (the board's part of the class benchmark) and by
``tests/test_misconceptions_hub.py``.

The answers come from ``tests/exercise_mistakes.py``, which tests/test_exercises.py holds
to their diagnoses; a student's cell imports that file as a student's own code (its functions
are not attention_lib's, so the sink reports them) and runs the real checker.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
SERVICE = "/services/misconceptions/"

#: Per exercise part: the checker's call on ``m`` (tests/exercise_mistakes.py) and the
#: diagnosis it must report (None: a right answer). The board's key of the part first.
ANSWERS: dict[str, list[tuple[str, str | None]]] = {
    "19.3": [
        ("check_exercise_19_3(m.row_backward_einsum)", None),
        ("check_exercise_19_3(m.row_backward_missing_row_term)", "row_term_missing"),
        ("check_exercise_19_3(m.row_backward_in_place)", "modified_input"),
        ("check_exercise_19_3(m.row_backward_no_keepdims)", "missing_keepdims"),
        ("check_exercise_19_3(m.row_backward_sum_over_axis_0)", "row_term_wrong_axis"),
    ],
    "19.4": [
        ("check_exercise_19_4(m.loop_forward, m.loop_backward)", None),
        ("check_exercise_19_4(*pair(m.MaskAfterSoftmax))", "mask_after_softmax"),
        ("check_exercise_19_4(*pair(m.ScaledBySqrtDModel))", "wrong_scale"),
        ("check_exercise_19_4(*pair(m.LeaksIntoMaskedKeys))", "backward_ignores_mask"),
        ("check_exercise_19_4(*pair(m.NoScaling))", "no_scaling"),
        ("check_exercise_19_4(*pair(m.SignError))", "row_term_sign"),
    ],
    "19.4 (c)": [
        ("check_exercise_19_4c(m.central_right)", None),
        ("check_exercise_19_4c(m.central_one_sided)", "one_sided"),
        ("check_exercise_19_4c(m.central_not_restored)", "not_restored"),
    ],
}

PRELUDE = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import exercise_mistakes as m
from attention_lib.exercises import check_exercise_19_3, check_exercise_19_4, check_exercise_19_4c

def pair(attention):
    attention = attention()
    return attention.forward, attention.backward
"""


def answer(part: str, student: int, fixed: bool = False) -> tuple[str, str | None]:
    """Student number ``student``'s answer to ``part``: the right one once ``fixed``,
    otherwise the answers in turn (so every diagnosis has its students)."""
    answers = ANSWERS[part]
    return answers[0] if fixed else answers[student % len(answers)]


def cell(call: str) -> str:
    """A cell that runs the checker and prints its verdict, as the exercises notebook does."""
    return f"report = {call}\nprint(report)"


def expected(latest: dict[str, dict[str, str | None]]) -> dict[str, dict]:
    """The board's counts from each student's latest answer per part:
    ``{part: {"attempted", "passing", "diagnoses": {name: students}}}``."""
    found: dict[str, dict] = {}
    for answers in latest.values():
        for part, diagnosis in answers.items():
            entry = found.setdefault(part, {"attempted": 0, "passing": 0, "diagnoses": Counter()})
            entry["attempted"] += 1
            if diagnosis is None:
                entry["passing"] += 1
            else:
                entry["diagnoses"][diagnosis] += 1
    return {part: {**e, "diagnoses": dict(e["diagnoses"])} for part, e in found.items()}


def shown(view: dict) -> dict[str, dict]:
    """The same figures as the board's JSON view shows them (parts with runs only)."""
    return {
        part["key"]: {
            "attempted": part["attempted"],
            "passing": part["passing"],
            "diagnoses": {d["name"]: d["students"] for d in part["diagnoses"]},
        }
        for part in view["parts"]
        if part["attempted"]
    }


def service_pids(state: Path) -> list[int]:
    """The misconceptions service's process (the hub starts it; there is one, or none while
    the hub restarts it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit():
                continue
            command = (proc / "cmdline").read_bytes().split(b"\0")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"misconceptions/service.py") for part in command) and (
            f"ATTENTION_HUB_STATE={state}".encode() in environ
        ):
            found.append(int(proc.name))
    return found


ROUND_TRIPS = """
import json, attention_misconceptions_sink as sink
print(json.dumps([t for s in sink._running.values() for t in s.round_trips]))
"""

KERNEL_ENVIRONMENT = """
import os, json
print(json.dumps({k: bool(os.environ.get(k)) for k in
                  ("ATTENTION_MISCONCEPTIONS_URL", "JUPYTERHUB_API_TOKEN")}))
"""


def printed(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


def report_latencies(draws: list[dict], sent: list[float]) -> list[float]:
    """Seconds from each report's run in its kernel (``sent``, wall clock) to the first
    drawing of the instructor's page that counts it: the k-th report by time is counted once a
    drawing shows k reports in the session (drawings carry the session's report count)."""
    latencies = []
    for k, ran_at in enumerate(sorted(sent), start=1):
        shown_at = next((d["t"] / 1000 for d in draws if d["reports"] >= k), None)
        if shown_at is not None:
            latencies.append(max(0.0, shown_at - ran_at))
    return latencies


#: Kept by the instructor's page in the browser: one entry per drawing (time, reports).
RECORD_DRAWS = """() => {
  window.boardDraws = [];
  document.addEventListener('board-drawn', (event) => window.boardDraws.push({
    t: Date.now(), reports: event.detail.session.reports,
    parts: event.detail.parts.map((p) => ({key: p.key, attempted: p.attempted,
      passing: p.passing, diagnoses: p.diagnoses.map((d) => [d.name, d.students])})),
  }));
}"""


def as_json(text: str):
    return json.loads(text.strip().splitlines()[-1])
