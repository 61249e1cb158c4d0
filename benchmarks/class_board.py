"""The misconceptions board in a simulated class: answers whose diagnoses are known, checker
runs in the students' own kernels, the instructor's view of the counts, and the service's
process. Used by ``bench_class.py`` (the board's part of the class benchmark) and by
``tests/test_misconceptions_hub.py``.

The answers come from ``tests/exercise_mistakes.py``, which tests/test_exercises.py holds
to their diagnoses; a student's cell imports that file as a student's own code (its functions
are not attention_lib's, so the sink reports them) and runs the real checker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import os
import queue
import random
import signal
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
SERVICE = "/services/misconceptions/"

#: Per checker: its call on ``m`` (tests/exercise_mistakes.py) and the diagnosis it must
#: report (None: a right answer), the right answer first.
ANSWERS: dict[str, list[tuple[str, str | None]]] = {
    "check_exercise_19_3": [
        ("check_exercise_19_3(m.row_backward_einsum)", None),
        ("check_exercise_19_3(m.row_backward_missing_row_term)", "row_term_missing"),
        ("check_exercise_19_3(m.row_backward_in_place)", "modified_input"),
        ("check_exercise_19_3(m.row_backward_no_keepdims)", "missing_keepdims"),
        ("check_exercise_19_3(m.row_backward_sum_over_axis_0)", "row_term_wrong_axis"),
    ],
    "check_exercise_19_4": [
        ("check_exercise_19_4(m.loop_forward, m.loop_backward)", None),
        ("check_exercise_19_4(*pair(m.MaskAfterSoftmax))", "mask_after_softmax"),
        ("check_exercise_19_4(*pair(m.ScaledBySqrtDModel))", "wrong_scale"),
        ("check_exercise_19_4(*pair(m.LeaksIntoMaskedKeys))", "backward_ignores_mask"),
        ("check_exercise_19_4(*pair(m.NoScaling))", "no_scaling"),
        ("check_exercise_19_4(*pair(m.SignError))", "row_term_sign"),
    ],
    "check_exercise_19_4c": [
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


@functools.cache
def _parts() -> dict:
    sys.path.insert(0, str(ROOT / "hub"))
    from misconceptions.catalogue import checker_parts

    return {part.checker: part for part in checker_parts()}


def part_of(checker: str):
    """The part of the exercise ``checker`` judges (hub/misconceptions/catalogue.py's
    :class:`Part`): its ``key`` is how the board names it, ``"19.4 (c)"``."""
    return _parts()[checker]


def key(checker: str) -> str:
    return part_of(checker).key


def answer(checker: str, student: int, fixed: bool = False) -> tuple[str, str | None]:
    """Student number ``student``'s answer to ``checker``: the right one once ``fixed``,
    otherwise the answers in turn (so every diagnosis has its students)."""
    answers = ANSWERS[checker]
    return answers[0] if fixed else answers[student % len(answers)]


def cell(call: str) -> str:
    """A cell that runs the checker and prints its verdict, as the exercises notebook does."""
    return f"report = {call}\nprint(report)"


def expected(latest: dict[str, dict[str, str | None]]) -> dict[str, dict]:
    """The board's counts from each student's latest answer per checker:
    ``{part's key: {"attempted", "passing", "diagnoses": {name: students}}}``."""
    found: dict[str, dict] = {}
    for answers in latest.values():
        for checker, diagnosis in answers.items():
            entry = found.setdefault(
                key(checker), {"attempted": 0, "passing": 0, "diagnoses": Counter()}
            )
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


async def post_forged(fetch, hub, token: str, claimed: str) -> None:
    """A 19.3 report with ``row_term_sign``, sent with ``token``, whose body claims to be
    ``claimed``'s (the service must count it for the token's owner)."""
    part = part_of("check_exercise_19_3")
    forged = {
        "id": str(uuid.uuid4()),
        "exercise": part.exercise,
        "part": part.part,
        "passed": False,
        "diagnoses": ["row_term_sign"],
        "ran_at": time.time(),
        "user": claimed,
    }
    await fetch(
        "POST",
        f"{hub.url}{SERVICE}api/reports",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        body={"reports": [forged], "user": claimed},
    )


def printed(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


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


# --------------------------------------------------------------------------------------
# The board's part of the class benchmark (bench_class.py --board; in --smoke too)
# --------------------------------------------------------------------------------------

RAN_AT = "\nimport time as _time\nprint('ran_at', _time.time())"
#: Where the d_k explorer goes after a re-run: where bench_class's 20 moves leave it, away from
#: the 8 and 9 its hub-restart fault moves it to next.
MOVE_BACK = 12
WAIT_S = 180.0  # counts to settle after a fault (the hub polls its services every 30 s)


class InstructorPage:
    """The instructor's board in Chromium, open from the first report to the last (a thread
    of its own: Playwright's sync API), recording every drawing."""

    def __init__(self, hub, workdir: Path):
        self.hub, self.workdir = hub, workdir
        self.jobs: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        from playwright.sync_api import sync_playwright

        from tests.browser.browser_harness import launch_chromium

        with sync_playwright() as playwright:
            context = launch_chromium(playwright, self.workdir / "chromium-instructor")
            try:
                while (job := self.jobs.get()) is not None:
                    fn, future = job
                    try:
                        future.set_result(fn(context))
                    except BaseException as exc:
                        future.set_exception(exc)
            finally:
                context.close()

    async def call(self, fn):
        future: concurrent.futures.Future = concurrent.futures.Future()
        self.jobs.put((fn, future))
        return await asyncio.wrap_future(future)

    async def open(self) -> None:
        self.thread.start()

        def login_and_open(context):
            page = self.page = context.new_page()
            page.goto(f"{self.hub.url}/hub/login?next=%2Fhub%2Fhome")
            page.fill("#username_input", "instructor")
            page.fill("#password_input", self.hub.env["ATTENTION_HUB_ADMIN_PASSWORD"])
            page.click("#login_submit")
            page.click("#misconceptions-board")
            page.wait_for_selector('#board-status[data-state="live"]', timeout=60_000)
            page.evaluate(RECORD_DRAWS)
            page.evaluate("() => { window.loadedOnce = true; }")

        await self.call(login_and_open)

    async def draws(self) -> list[dict]:
        return await self.call(lambda context: self.page.evaluate("() => window.boardDraws"))

    async def still_the_same_page(self) -> bool:
        return await self.call(lambda context: self.page.evaluate("() => !!window.loadedOnce"))

    def close(self) -> None:
        if self.thread.is_alive():
            self.jobs.put(None)
            self.thread.join(timeout=60)


def spread(values: list[float]) -> dict | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(values), "median": statistics.median(values), "p95": p95}


class BoardClass:
    """The class's checker runs, with each student's latest answer per part kept."""

    def __init__(self, hub, admin: str, students, fetch):
        self.hub, self.admin, self.students, self.fetch = hub, admin, students, fetch
        self.index = {s.name: i for i, s in enumerate(students)}
        self.latest: dict[str, dict[str, str | None]] = {s.name: {} for s in students}
        self.runs = 0

    async def view(self) -> dict:
        response = await self.fetch(
            "GET",
            f"{self.hub.url}{SERVICE}api/board",
            headers={"Authorization": f"token {self.admin}"},
        )
        return json.loads(response.body)

    async def reports_stored(self) -> int:
        return (await self.view())["session"]["reports"]

    async def run(self, student, checker: str, fixed: bool = False, delay: float = 0.0) -> float:
        """One checker run in the student's kernel; the kernel's clock when it finished."""
        await asyncio.sleep(delay)
        call, diagnosis = answer(checker, self.index[student.name], fixed)
        outputs, error = await student.kernel.execute(cell(call) + RAN_AT)
        if error is not None:
            raise RuntimeError(
                f"{student.name}: {checker}: {error.get('ename')}: {error.get('evalue')}"
            )
        self.latest[student.name][checker] = diagnosis
        self.runs += 1
        return float(printed(outputs).rsplit("ran_at", 1)[1])

    async def burst(self, checker: str, who=None, fixed=(), during=None, timed=True) -> dict:
        """Everyone (or ``who``) runs ``checker`` within two seconds, as a class told
        "now run the checker" does; ``during`` is a fault started once the burst is under way.
        ``timed``: note the reports stored before (for the latencies; the hub must be up)."""
        who = self.students if who is None else who
        base = await self.reports_stored() if timed else None
        runs = [self.run(s, checker, s.name in fixed, random.uniform(0, 2)) for s in who]
        if during is not None:
            runs.append(during())
        ran = await asyncio.gather(*runs)
        return {
            "checker": checker,
            "base": base,
            "ran_at": [t for t in ran if isinstance(t, float)],
        }

    async def settled(self, timeout: float = WAIT_S) -> float:
        """Seconds until the board shows exactly the known answers; raises if it never does."""
        started, wanted = time.monotonic(), expected(self.latest)
        while True:
            try:
                seen = shown(await self.view())
            except Exception:  # the service or the hub is restarting
                seen = None
            if seen == wanted:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"the board shows {seen}, the known answers are {wanted}")
            await asyncio.sleep(0.5)


def drawn(draw: dict) -> dict[str, dict]:
    """A drawing of the page (RECORD_DRAWS) in the form of :func:`expected`."""
    return {
        p["key"]: {
            "attempted": p["attempted"],
            "passing": p["passing"],
            "diagnoses": dict(map(tuple, p["diagnoses"])),
        }
        for p in draw["parts"]
        if p["attempted"]
    }


async def page_caught_up(page: InstructorPage, wanted: dict, timeout: float = 30.0) -> str:
    """ "" when the open page comes to show ``wanted`` (it reconnected after every
    restart), else what it shows and its status line."""
    deadline = time.monotonic() + timeout
    while True:
        draws = await page.draws()
        if draws and drawn(draws[-1]) == wanted:
            return ""
        if time.monotonic() > deadline:
            status = await page.call(lambda context: page.page.inner_text("#board-status"))
            last = drawn(draws[-1]) if draws else None
            return f"the page shows {last} ({len(draws)} drawings, status {status!r})"
        await asyncio.sleep(0.5)


def burst_latencies(draws: list[dict], burst: dict) -> list[float]:
    """Seconds from each report of a burst leaving its kernel to the first drawing of the
    instructor's page that counts it (drawings carry the session's report count)."""
    latencies = []
    for k, ran_at in enumerate(sorted(burst["ran_at"]), start=1):
        shown_at = next((d["t"] / 1000 for d in draws if d["reports"] >= burst["base"] + k), None)
        if shown_at is not None:
            latencies.append(max(0.0, shown_at - ran_at))
    return latencies


async def kill_a_kernel_after_a_run(board, victim, admin, hub, bench, result) -> None:
    """A kernel killed right after a run: that report waits in the student's outbox and
    goes with the student's next run, in the kernel the server restarted."""
    await board.run(victim, "check_exercise_19_4")
    for pid in bench.kernel_pids(await bench.server_pid(admin, hub, victim.name)):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while "restarting" not in victim.kernel.statuses[-5:]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{victim.name}: the kernel did not restart")
        await asyncio.sleep(0.2)
    # the restarted kernel holds no explorer: the student runs 02 again, as after any kill
    await victim.run_all(json.loads(victim.saved_text()))
    victim.parts = victim.kernel.explorer()
    await victim.kernel.move(victim.parts, MOVE_BACK)  # where the class left the explorer
    await victim.kernel.execute(PRELUDE)
    await board.run(victim, "check_exercise_19_3")  # the next run sends both
    result["faults"]["kernel killed right after a run"] = {"settled_s": await board.settled()}


async def run_board(hub, admin: str, students, workdir: Path, bench, kernel_kill: bool = True):
    """The board's part of the class: bursts on every part, some students fixing their
    mistake, then the faults, with the instructor's page open throughout. ``bench`` is
    bench_class (its fetch, kernel_pids, server_pid, memory_kib). ``kernel_kill``: the
    fault that makes its student run 02 again (the smoke leaves it to
    tests/test_misconceptions_hub.py, which checks it without that). Returns the figures,
    the part's wall time and ``problems`` (empty when every count equalled the known
    answers)."""
    started = time.monotonic()
    result: dict = {"students": len(students), "problems": [], "faults": {}}
    page = InstructorPage(hub, workdir)
    board = BoardClass(hub, admin, students, bench.fetch)
    try:
        for student in students:
            _, error = await student.kernel.execute(PRELUDE)
            if error is not None:
                raise RuntimeError(f"{student.name}: {error.get('evalue')}")
        await page.open()
        measured = [await board.burst(checker) for checker in ANSWERS]
        await board.settled()
        wrong = [
            s.name for s in students if board.latest[s.name]["check_exercise_19_4"] is not None
        ]
        measured.append(
            await board.burst("check_exercise_19_4", fixed=set(wrong[::2]))
        )  # half fix it
        await board.settled()
        draws = await page.draws()
        result["latency_s"] = spread([t for b in measured for t in burst_latencies(draws, b)])

        # the service killed mid-burst: the hub restarts it, the kernels' outboxes retry
        async def kill_service():
            await asyncio.sleep(1.0)
            for pid in service_pids(hub.state):
                os.kill(pid, signal.SIGKILL)

        await board.burst(
            "check_exercise_19_3",
            fixed={s.name for s in students},
            during=kill_service,
            timed=False,
        )
        result["faults"]["service killed mid-burst"] = {"settled_s": await board.settled()}

        # the hub restarted (the service with it) while the class runs a checker
        hub.stop_hub()
        try:
            await board.burst(
                "check_exercise_19_4c", fixed={s.name for s in students[::2]}, timed=False
            )
        finally:
            hub.start_hub()
        result["faults"]["hub restarted"] = {"settled_s": await board.settled()}

        if kernel_kill:
            await kill_a_kernel_after_a_run(board, students[0], admin, hub, bench, result)
        result["reports"] = board.runs
        result["counts_equal_known_answers"] = shown(await board.view()) == expected(board.latest)
        behind = await page_caught_up(page, expected(board.latest))
        result["page_counts_equal"] = not behind
        if behind:
            result["problems"].append(behind)
        result["page_never_reloaded"] = await page.still_the_same_page()
        trips = []
        for student in students:
            outputs, _ = await student.kernel.execute(ROUND_TRIPS)
            trips += json.loads(printed(outputs).strip().splitlines()[-1])
        result["round_trip_s"] = spread(trips)
        result["service_kib"] = [bench.memory_kib(pid) for pid in service_pids(hub.state)]
    except Exception as exc:
        result["problems"].append(f"{type(exc).__name__}: {exc}")
    finally:
        page.close()
    result["wall_s"] = time.monotonic() - started
    for check in ("counts_equal_known_answers", "page_counts_equal", "page_never_reloaded"):
        if result.get(check) is False:
            result["problems"].append(f"{check.replace('_', ' ')}: no")
    return result
