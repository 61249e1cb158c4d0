"""The misconceptions board on the real class hub (hub/jupyterhub_config.py), end to end.

The hub starts the service; two students log in, start their servers and run checkers in
their own kernels (the sink of the students' environment reports); the instructor's token
reads the counts. Checked: what a kernel gets from the hub to report (the service's address
and a server token that holds access to the service); counts by the token's owner, equal to
the known answers; a student gets 403 on the board and the names; a forged user name counts
for the token's owner; a kernel killed right after a run loses nothing. (The service killed
and restarted by the hub, and the hub restarted, are faults of the class benchmark's smoke,
bench_class.py --smoke, which make test runs too.)

Needs ``make hub-setup`` (skips without it unless ``ATTENTION_REQUIRE_HUB=1``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.hub, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent


sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_class as bench  # noqa: E402

board = bench.class_board
SINK = bench.SINGLEUSER_VENV / "lib"


def missing() -> str | None:
    why = bench.missing_setup()
    if why is None and not list(
        SINK.glob("python3*/site-packages/attention_misconceptions_sink.py")
    ):
        why = f"the report sink is not installed in {bench.SINGLEUSER_VENV} (make singleuser)"
    return why


@pytest.fixture
def hub(tmp_path):
    why = missing()
    if why:
        if os.environ.get("ATTENTION_REQUIRE_HUB") == "1":
            pytest.fail(f"the hub tests are mandatory here: {why}")
        pytest.skip(why)
    running = bench.Hub(tmp_path, cull_timeout=3600, activity_interval=300)
    running.start()
    try:
        yield running
    except BaseException:
        print(running.log_tail(8000), file=sys.stderr)
        raise
    finally:
        running.stop()


async def view(hub, token: str, kind: str = "board", ok=(200,)):
    response = await bench.fetch(
        "GET",
        f"{hub.url}{board.SERVICE}api/{kind}",
        headers={"Authorization": f"token {token}"},
        ok=ok,
    )
    return response.code, json.loads(response.body)


async def until_shown(hub, token: str, wanted: dict, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, data = await view(hub, token)
            if board.shown(data) == wanted:
                return data
        except bench.HTTPFailure:
            data = None  # the service is restarting
        if time.monotonic() > deadline:
            raise AssertionError(f"the board shows {data and board.shown(data)}, not {wanted}")
        await asyncio.sleep(0.5)


async def open_kernel(student) -> None:
    made = await bench.fetch(
        "POST", f"{student.base}api/kernels", headers=student.auth, body={"name": "python3"}
    )
    student.kernel = await bench.Kernel.connect(
        student.base, json.loads(made.body)["id"], student.token, drops=[]
    )
    _, error = await student.kernel.execute(board.PRELUDE)
    assert error is None, error


async def check(student, call: str) -> str:
    outputs, error = await student.kernel.execute(board.cell(call))
    assert error is None, error
    return board.printed(outputs)


async def scenario(hub) -> None:
    row, masked, own = (
        board.key(checker)
        for checker in ("check_exercise_19_3", "check_exercise_19_4", "check_exercise_19_4c")
    )
    password = hub.env["ATTENTION_HUB_PASSWORD"]
    instructor = await bench.admin_login(hub)
    ann, bob = (bench.Student(hub, name, password) for name in ("ann", "bob"))
    for student in (ann, bob):
        await student.login()
        await student.start_server()
        await open_kernel(student)

    # what a kernel gets from the hub: the address, and a token that reaches the service
    outputs, _ = await ann.kernel.execute(board.KERNEL_ENVIRONMENT)
    assert board.as_json(board.printed(outputs)) == {
        "ATTENTION_MISCONCEPTIONS_URL": True,
        "JUPYTERHUB_API_TOKEN": True,
    }

    assert "not yet" in await check(ann, "check_exercise_19_3(m.row_backward_in_place)")
    assert "passed" in await check(bob, "check_exercise_19_3(m.row_backward_einsum)")
    counts = {row: {"attempted": 2, "passing": 1, "diagnoses": {"modified_input": 1}}}
    await until_shown(hub, instructor, counts)
    _, names = await view(hub, instructor, "names")
    assert names["parts"][2]["diagnoses"] == [["modified_input", ["ann"]]]

    # a student's token opens neither the board nor the names
    for kind in ("board", "names"):
        code, _ = await view(hub, ann.token, kind, ok=(403,))
        assert code == 403

    # a forged user name counts for the token's owner (bob, from his own API token)
    await board.post_forged(bench.fetch, hub, bob.token, "ann")
    counts[row] = {
        "attempted": 2,
        "passing": 0,
        "diagnoses": {"modified_input": 1, "row_term_sign": 1},
    }
    await until_shown(hub, instructor, counts)
    _, names = await view(hub, instructor, "names")
    assert ["row_term_sign", ["bob"]] in names["parts"][2]["diagnoses"]

    await check(ann, "check_exercise_19_4(*pair(m.MaskAfterSoftmax))")
    counts[masked] = {"attempted": 1, "passing": 0, "diagnoses": {"mask_after_softmax": 1}}
    await until_shown(hub, instructor, counts)

    # a kernel killed right after a run: its report waits in ann's outbox for her next one
    await check(ann, "check_exercise_19_4c(m.central_one_sided)")
    server = await bench.server_pid(instructor, hub, "ann")
    for kernel in bench.kernel_pids(server):
        os.kill(kernel, signal.SIGKILL)
    ann.kernel.close()
    await open_kernel(ann)
    await check(ann, "check_exercise_19_4(m.loop_forward, m.loop_backward)")
    counts[masked] = {"attempted": 1, "passing": 1, "diagnoses": {}}
    counts[own] = {"attempted": 1, "passing": 0, "diagnoses": {"one_sided": 1}}
    await until_shown(hub, instructor, counts)
    for student in (ann, bob):
        student.close_page()


def test_the_class_hub_counts_its_students_checker_runs_for_the_instructor(hub):
    asyncio.run(scenario(hub))
