"""A class on one server, simulated: students on the hub of ``hub/`` (``make hub``'s setup).

Each simulated student does what a student in a lecture does, over the same HTTP,
WebSocket and widget protocols a browser uses, through the hub's proxy:

1. logs in through the hub's login form (the class password) and asks the hub's API for
   a token (POST /hub/api/users/NAME/tokens, with the login cookie);
2. starts their server (POST /hub/api/users/NAME/server) and waits until the hub says it
   is ready;
3. pulls the series through the nbgitpuller link (its /git-pull/api stream, as the link's
   page does) from the students' copy (``hub/students_copy.py``), served by ``file://``;
4. opens ``02_why_sqrt_dk.ipynb`` (a session and a kernel), waits for the new kernel to
   answer (JupyterLab's "Idle"), keeping the kernel's WebSocket open as JupyterLab does
   (``RECONNECT_LIMIT``: every time it closes is reported), runs every code cell, and then
   moves the d_k explorer 20 times: a widget-protocol update of the slider, timed until the
   kernel has sent the new figure and is idle again (the explorer's round trip);
5. saves an edit (the run's outputs and a Markdown cell of their own) through the
   contents API, and, while their notebook stays open, answers the explorer's heartbeat
   as an open page does (a ping every 15 s).

A few students (``--browser``) do all of it in headless Chromium instead: the login form,
the link, JupyterLab's Run All, the slider moved with the keyboard (timed from the key
press to the new figure in the page) and an edit saved with Ctrl+S.

What is measured (reported, never pass/fail: these machines are shared): servers started,
the time to the first and to the last ready server, per student the resident and
proportional set size (/proc/PID/smaps_rollup) of their server and kernel after the
moves, the class's summed PSS, the time until each new kernel answered, the kernel
WebSockets that closed and whether they came back, the explorer round trips (median and
95th percentile per student and over the class), the load average through the run. What
passes or fails: every server starts, no cell fails, no edit is lost. Every run leaves the
hub's log (the hub, the proxy and every server) beside the JSON figures.

The misconceptions board's part (``class_board.py``, in the first run; ``--no-board`` leaves it
out): after the class, every protocol student runs the real exercise checkers on known right
and wrong answers in bursts, some fix their mistake, then the board's service is killed
mid-burst, the hub restarted and a kernel killed right after a run (not in ``--smoke``:
tests/test_misconceptions_hub.py checks it in ``make test``), with the instructor's board open
in Chromium throughout. What passes or fails: the counts equal the known answers, on the
service and on the page; reported: the report's round trip in the kernel, the time from a
report leaving its kernel to the count changing on the page, the service's memory, the
part's wall time.

``--faults`` adds, each with nothing lost: the hub restarted while students work (their
servers, open kernels and files carry on; explorer moves while it is down), an upstream
commit to the notebook the students edited, pulled again (their edits survive), a
student's kernel SIGKILLed as the kernel of a machine out of memory would be (in the
browser: the explorer says the kernel restarted; re-running brings it back), a student's
server SIGKILLed mid-session (the hub notices, the student starts it again, the saved
notebook is intact, the explorer says the kernel is gone until the cell runs again), and
the idle culler stopping the server of a student who closed their page (their saved work
survives; the others, whose pages are open, are not culled).

Usage (needs ``make hub-setup``)::

    python benchmarks/bench_class.py             # 30 students, one every 4 s, then all at once
    python benchmarks/bench_class.py --smoke     # 6 students with the faults (make test)
    python benchmarks/bench_class.py --students 10 --interval 2 --browser 1 --faults
    python benchmarks/bench_class.py --write docs/class-results.md

``--smoke`` without the hub's environments prints why and exits 0, unless
``ATTENTION_REQUIRE_HUB=1`` (``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
import urllib.parse
import uuid
from http.cookies import SimpleCookie
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "notebooks/02_why_sqrt_dk.ipynb"
HUB_PYTHON = ROOT / ".venv-hub" / "bin" / "python"
SINGLEUSER_VENV = ROOT / ".venv-singleuser"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serve = _load("hub_serve", ROOT / "hub" / "serve.py")
class_board = _load("class_board", ROOT / "benchmarks" / "class_board.py")
students_copy = _load("hub_students_copy", ROOT / "hub" / "students_copy.py")

#: Waits (seconds). The hub's own spawn timeouts are in hub/jupyterhub_config.py
#: (start_timeout 180 s, http_timeout 120 s); these bound the benchmark's side.
HTTP_TIMEOUT = 120.0  # one HTTP request through the proxy
SPAWN_WAIT = 240.0  # POST .../server until the hub reports it ready
PULL_TIMEOUT = 300.0  # the nbgitpuller stream
CELL_TIMEOUT = 600.0  # one code cell (30 kernels share 2 cores)
MOVE_TIMEOUT = 120.0  # one explorer move until the new figure and idle
#: A new kernel's first answer, and so its WebSocket's handshake (a browser sets no limit):
#: longer than a student's server waits for it (kernel_info_timeout, hub/jupyterhub_config.py).
KERNEL_WAIT = 600.0
#: What JupyterLab 4.6 does when a kernel's WebSocket closes (@jupyterlab/services, the
#: kernel connection in the students' JupyterLab): it asks the server for the kernel; one the
#: server reports dead or does not know (404) is over, a network error or a 503 asks again
#: 10-30 s later, and a clean close (1000, 1001) is final. Otherwise it opens a new socket
#: with the same session id, at most 7 times in a row, the n-th after a random 0 to 2**n - 1
#: s. On each connect it sends kernel_info first, and what was queued on its reply or 3 s on.
RECONNECT_LIMIT = 7
KERNEL_INFO_WAIT_S = 3.0
#: The culler's timeout in --smoke. An open page's activity reaches the hub within one
#: heartbeat and one activity report (15 + 10 s); the rest is slack for a loaded machine
#: (make test runs the smoke beside the browser tests: at 45 s, a load average of 33 from
#: other work too delayed an open page's record long enough to cull it). The closed page is
#: still culled within the limit run_faults sets, and the open ones still spared.
SMOKE_CULL_TIMEOUT = 120
HEARTBEAT_S = 15.0  # the explorer page's ping while the kernel's status is known
MOVES = 20
#: The d_k slider's stops are indices 0 ... 12 (1 ... 4096); it starts at 8 (256).
MOVE_INDICES = [9, 10, 11, 12, 11, 10, 9, 8, 7, 6, 5, 4, 5, 6, 7, 8, 9, 10, 11, 12]
EDIT_MARK = "Student note"


# --------------------------------------------------------------------------------------
# /proc: memory and load
# --------------------------------------------------------------------------------------


def memory_kib(pid: int) -> dict[str, int] | None:
    """Resident and proportional set size of a process (KiB), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    fields = dict(re.findall(r"^(Rss|Pss):\s+(\d+) kB", text, re.MULTILINE))
    return {"rss": int(fields["Rss"]), "pss": int(fields["Pss"])}


def children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(p) for p in found]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def kernel_pids(server_pid: int) -> list[int]:
    return [p for p in children(server_pid) if "ipykernel" in cmdline(p)]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class LoadSampler(threading.Thread):
    """/proc/loadavg every few seconds while the run lasts."""

    def __init__(self, every: float = 5.0):
        super().__init__(daemon=True)
        self.every, self.samples, self.done = every, [], threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
            self.done.wait(self.every)

    def stop(self) -> dict[str, float]:
        self.done.set()
        self.join()
        return {"mean_1min": statistics.fmean(self.samples), "max_1min": max(self.samples)}


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --------------------------------------------------------------------------------------
# HTTP and the kernel's WebSocket protocol (tornado, as the servers themselves use)
# --------------------------------------------------------------------------------------

from tornado import httpclient, websocket  # noqa: E402 - after the docstring's story

httpclient.AsyncHTTPClient.configure(None, max_clients=256)


class HTTPFailure(RuntimeError):
    pass


async def fetch(
    method, url, *, headers=None, body=None, timeout=HTTP_TIMEOUT, ok=(200, 201, 202, 204), **kw
):
    """One request; returns the response, raises HTTPFailure on a status outside ``ok``."""
    if isinstance(body, dict):
        body = json.dumps(body)
    request = httpclient.HTTPRequest(
        url,
        method=method,
        headers=headers or {},
        body=body,
        request_timeout=timeout,
        connect_timeout=timeout,
        follow_redirects=False,
        allow_nonstandard_methods=True,
        **kw,
    )
    response = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
    if response.code not in ok:
        text = (response.body or b"")[:300].decode(errors="replace")
        raise HTTPFailure(f"{method} {url}: {response.code} {response.reason} {text}")
    return response


def unpack_binary(data: bytes) -> dict:
    """A binary kernel message (jupyter_server's default protocol): offsets, JSON, buffers."""
    (count,) = struct.unpack("!I", data[:4])
    offsets = [*struct.unpack("!" + "I" * count, data[4 : 4 * (count + 1)]), len(data)]
    parts = [data[offsets[i] : offsets[i + 1]] for i in range(count)]
    msg = json.loads(parts[0])
    msg["buffers"] = parts[1:]
    return msg


class Kernel:
    """A kernel's channels over the server's WebSocket, kept open as JupyterLab keeps its own
    (``RECONNECT_LIMIT``), and the widget models it opened. Every time the socket closes is
    appended to ``drops`` (its close code and reason, and whether it came back)."""

    def __init__(self, base: str, kernel_id: str, token: str, drops: list[dict]):
        self.base, self.kernel_id, self.token, self.drops = base, kernel_id, token, drops
        # One session id for every socket: the server replays what it buffered while none was open.
        self.session = uuid.uuid4().hex
        self.ws: websocket.WebSocketClientConnection | None = None
        self.models: dict[str, dict] = {}  # comm id -> widget state (buffers as sha256)
        self.statuses: list[str] = []  # every kernel status message, in order
        self.info: asyncio.Future = asyncio.get_running_loop().create_future()  # kernel_info
        self._waiting: dict[str, asyncio.Queue] = {}
        self._queued: list[str] = []  # sent while no socket was open, or before it was greeted
        self._live = False  # greeted: what is sent goes out at once
        self._opened = asyncio.Event()
        self.runner = asyncio.ensure_future(self._run())

    @classmethod
    async def connect(cls, base: str, kernel_id: str, token: str, drops: list[dict]) -> Kernel:
        kernel = cls(base, kernel_id, token, drops)
        opened = asyncio.ensure_future(kernel._opened.wait())
        await asyncio.wait([opened, kernel.runner], return_when=asyncio.FIRST_COMPLETED)
        if not opened.done():
            opened.cancel()
            raise RuntimeError(f"the kernel's WebSocket did not open: {drops[-1:]}")
        return kernel

    async def _run(self) -> None:
        """Open the socket and read it; when it closes, do what JupyterLab does (above)."""
        url = (
            self.base.replace("http", "ws", 1)
            + f"api/kernels/{self.kernel_id}/channels?session_id={self.session}"
        )
        request = httpclient.HTTPRequest(url, headers=self._auth(), request_timeout=KERNEL_WAIT)
        attempt, drop, lost_at = 0, None, 0.0
        while True:
            t = time.monotonic()
            try:
                self.ws = await websocket.websocket_connect(request, max_message_size=256 * 2**20)
            except (OSError, httpclient.HTTPClientError, websocket.WebSocketError) as exc:
                closed = {"code": None, "reason": f"not opened: {type(exc).__name__} {exc}"[:160]}
            else:
                if drop is not None:
                    drop["reopened_after_s"] = round(time.monotonic() - lost_at, 1)
                attempt, drop = 0, None  # connected: JupyterLab counts its attempts afresh
                self._opened.set()
                greeting = asyncio.ensure_future(self._greet())
                await self._read()
                greeting.cancel()
                self._live = False
                closed = {"code": self.ws.close_code, "reason": self.ws.close_reason}
                self.ws.close()  # already closed by the other side: releases it
                closed["open_for_s"] = round(time.monotonic() - t, 1)
            if drop is None:
                drop, lost_at = closed, time.monotonic()
                self.drops.append(drop)
            else:
                drop["failed_attempts"] = attempt
            gone = await self._gone()
            if gone or closed["code"] in (1000, 1001) or attempt >= RECONNECT_LIMIT:
                drop["outcome"] = gone or f"given up after {attempt} attempts"
                for queue in self._waiting.values():
                    queue.put_nowait(None)
                if not self.info.done():
                    self.info.set_exception(RuntimeError(f"the kernel never answered: {drop}"))
                return
            await asyncio.sleep(random.randint(0, 1000 * (2**attempt - 1)) / 1000)
            attempt += 1

    async def _gone(self) -> str | None:
        """Why the kernel is over, or None if the server still runs it: JupyterLab's check
        before it reconnects (a network error or a 503 asks again 10-30 s later)."""
        while True:
            try:
                response = await fetch(
                    "GET", f"{self.base}api/kernels/{self.kernel_id}", headers=self._auth()
                )
            except HTTPFailure as exc:
                if " 503 " not in str(exc) and " 424 " not in str(exc):
                    return f"kernel unknown to the server: {str(exc)[:120]}"
            except OSError:
                pass
            else:
                state = json.loads(response.body).get("execution_state")
                return "the server reports the kernel dead" if state == "dead" else None
            await asyncio.sleep(random.randint(10, 30))

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    async def _greet(self) -> None:
        """JupyterLab on every connect: kernel_info first; what was queued goes out on its
        reply or after KERNEL_INFO_WAIT_S without one."""
        msg_id = self.send("shell", "kernel_info_request", {})
        reply = asyncio.ensure_future(self._kernel_info(msg_id))
        try:
            await asyncio.wait_for(asyncio.shield(reply), KERNEL_INFO_WAIT_S)
        except TimeoutError:
            pass
        self._live = True
        while self._queued and self._write(self._queued[0]):
            self._queued.pop(0)

    async def _kernel_info(self, msg_id: str) -> None:
        def done(msg):
            return msg["header"]["msg_type"] == "kernel_info_reply"

        with contextlib.suppress(TimeoutError):  # the next connection asks again
            async for msg in self.replies(msg_id, KERNEL_WAIT, done):
                if done(msg) and not self.info.done():
                    self.info.set_result(msg["content"])

    def _write(self, data: str) -> bool:
        """Send now; False if the socket has closed (the reader is about to see it)."""
        try:
            self.ws.write_message(data)
        except websocket.WebSocketClosedError:
            self._live = False
            return False
        return True

    def send(self, channel: str, msg_type: str, content: dict) -> str:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "session": self.session,
            "username": "student",
            "version": "5.3",
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        self._waiting[msg_id] = asyncio.Queue()
        data = json.dumps({**msg, "channel": channel})
        greeting = msg_type == "kernel_info_request" and self.ws is not None
        if not ((self._live or greeting) and self._write(data)):
            self._queued.append(data)
        return msg_id

    async def _read(self) -> None:
        """Route every message of the open socket, until it closes."""
        while True:
            raw = await self.ws.read_message()
            if raw is None:
                return
            msg = unpack_binary(raw) if isinstance(raw, bytes) else json.loads(raw)
            msg.setdefault("buffers", [])
            self._widgets(msg)
            kind = msg["header"]["msg_type"]
            if kind == "status":
                self.statuses.append(msg["content"]["execution_state"])
                if self.statuses[-1] == "restarting":
                    self.models.clear()  # they lived in the kernel that died
            queue = self._waiting.get(msg.get("parent_header", {}).get("msg_id"))
            if queue is not None:
                queue.put_nowait(msg)

    def _widgets(self, msg: dict) -> None:
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
            self.models[content["comm_id"]] = {}
        elif kind != "comm_msg" or content.get("comm_id") not in self.models:
            return
        data = content.get("data", {})
        state = dict(data.get("state", {}))
        for path, buffer in zip(data.get("buffer_paths", []), msg["buffers"], strict=False):
            state[path[0]] = "sha256:" + hashlib.sha256(buffer).hexdigest()
        self.models[content["comm_id"]].update(state)

    async def replies(self, msg_id: str, timeout: float, until):
        """Messages answering ``msg_id`` until ``until(msg)`` is true; None if the socket closed."""
        queue = self._waiting[msg_id]
        try:
            async with asyncio.timeout(timeout):
                while (msg := await queue.get()) is not None:
                    yield msg
                    if until(msg):
                        return
        finally:
            self._waiting.pop(msg_id, None)

    async def execute(self, code: str, timeout: float = CELL_TIMEOUT) -> tuple[list, dict | None]:
        """Run one cell: its outputs as nbformat dicts, and its error (or None)."""
        msg_id = self.send(
            "shell",
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        outputs, error, idle, replied = [], None, False, False

        def done(msg):
            nonlocal idle, replied
            kind = msg["header"]["msg_type"]
            idle |= kind == "status" and msg["content"]["execution_state"] == "idle"
            replied |= kind == "execute_reply"
            return idle and replied

        async for msg in self.replies(msg_id, timeout, done):
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "stream":
                outputs.append(
                    {"output_type": "stream", "name": content["name"], "text": content["text"]}
                )
            elif kind in ("display_data", "execute_result"):
                out = {
                    "output_type": kind,
                    "data": content["data"],
                    "metadata": content.get("metadata", {}),
                }
                if kind == "execute_result":
                    out["execution_count"] = content["execution_count"]
                outputs.append(out)
            elif kind == "error":
                error = content
                outputs.append(
                    {
                        "output_type": "error",
                        **{k: content[k] for k in ("ename", "evalue", "traceback")},
                    }
                )
            elif kind == "execute_reply" and content["status"] != "ok" and error is None:
                error = content
        if not (idle and replied):
            error = error or {"ename": "KernelGone", "evalue": "the connection closed mid-cell"}
        return outputs, error

    def explorer(self) -> dict[str, str]:
        """Comm ids of the first explorer's main slider, figure and page helper."""
        by_id = self.models

        def classes(cid):
            return by_id[cid].get("_dom_classes", [])

        def descendants(cid):
            for ref in by_id[cid].get("children", []):
                child = ref.removeprefix("IPY_MODEL_")
                if child in by_id:
                    yield child
                    yield from descendants(child)

        for root in by_id:
            if "attn-explorer" in classes(root):
                parts = {}
                for cid in descendants(root):
                    for name, css in (
                        ("slider", "attn-main-control"),
                        ("figure", "attn-figure"),
                        ("frontend", "attn-frontend"),
                        ("readout", "attn-readout"),
                    ):
                        if css in classes(cid):
                            parts.setdefault(name, cid)
                if {"slider", "figure", "frontend"} <= set(parts):
                    return parts
        raise RuntimeError(f"no explorer among {len(by_id)} widget models")

    async def move(self, parts: dict[str, str], index: int) -> float:
        """Set the main slider's index as the page does; seconds until the new figure arrived
        and the kernel was idle again."""
        before = self.models[parts["figure"]].get("value")
        start = time.perf_counter()
        msg_id = self.send(
            "shell",
            "comm_msg",
            {
                "comm_id": parts["slider"],
                "data": {"method": "update", "state": {"index": index}, "buffer_paths": []},
            },
        )
        arrived = None

        def done(msg):
            nonlocal arrived
            content = msg["content"]
            if (
                msg["header"]["msg_type"] == "comm_msg"
                and content.get("comm_id") == parts["figure"]
            ):
                arrived = time.perf_counter()
            return msg["header"]["msg_type"] == "status" and content["execution_state"] == "idle"

        async for _ in self.replies(msg_id, MOVE_TIMEOUT, done):
            pass
        if arrived is None or self.models[parts["figure"]].get("value") == before:
            raise RuntimeError(f"moving d_k to index {index} drew no new figure")
        return arrived - start

    async def ping(self, parts: dict[str, str], n: int, timeout: float = 30.0) -> bool:
        """The explorer page's heartbeat: a ping to its helper widget, answered by a pong."""
        msg_id = self.send(
            "shell",
            "comm_msg",
            {
                "comm_id": parts["frontend"],
                "data": {"method": "custom", "content": {"type": "ping", "n": n}},
            },
        )
        ponged = False

        def done(msg):
            nonlocal ponged
            data = msg["content"].get("data", {})
            ponged |= (
                data.get("method") == "custom" and data.get("content", {}).get("type") == "pong"
            )
            return (
                msg["header"]["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"
            )

        try:
            async for _ in self.replies(msg_id, timeout, done):
                pass
        except TimeoutError:
            return False
        return ponged

    def close(self) -> None:
        self.runner.cancel()
        if self.ws is not None:
            self.ws.close()


# --------------------------------------------------------------------------------------
# The hub, its proxy and the served series
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Hub:
    workdir: Path
    cull_timeout: int
    activity_interval: int

    def __post_init__(self):
        self.state = self.workdir / "state"
        self.env = serve.state_env(self.state, *(serve_free_port() for _ in range(3)))
        self.env.update(
            ATTENTION_SINGLEUSER_VENV=str(SINGLEUSER_VENV),
            ATTENTION_HUB_CULL_TIMEOUT=str(self.cull_timeout),
            ATTENTION_HUB_CULL_EVERY=str(cull_every(self.cull_timeout)),
            ATTENTION_HUB_ACTIVITY_INTERVAL=str(self.activity_interval),
            ATTENTION_HUB_SERVER_PORTS=str(free_port_block(200)),
            ATTENTION_MISCONCEPTIONS_PORT=str(serve_free_port()),
        )
        self.url = f"http://127.0.0.1:{self.env['ATTENTION_HUB_PORT']}"
        self.repo = self.workdir / "students.git"
        self.source = self.workdir / "series"
        self.log = open(self.workdir / "hub.log", "ab")
        self.proxy = self.hub = None

    def start(self) -> None:
        # The instructor's checkout: this one's HEAD, in a repository of its own.
        self.source.mkdir()
        self.git("init", "-q")
        self.git("fetch", "-q", "--no-tags", str(ROOT), "HEAD")
        self.git("checkout", "-q", "-b", "series", "FETCH_HEAD")
        students_copy.build(self.repo, self.source)
        self.proxy = serve.start_proxy(self.env, self.log)
        self.start_hub()

    def start_hub(self) -> None:
        self.hub = serve.start_hub(self.env, self.log, python=str(HUB_PYTHON))

    def stop_hub(self) -> float:
        """SIGTERM the hub as an upgrade or a crash-restart would; seconds it took."""
        start = time.monotonic()
        self.hub.send_signal(signal.SIGTERM)
        self.hub.wait(timeout=60)
        return time.monotonic() - start

    def stop(self) -> None:
        serve.stop_all(self.state)
        for proc in (self.hub, self.proxy):
            if proc is not None and proc.poll() is None:
                proc.kill()
            if proc is not None:
                proc.wait()
        self.log.close()

    def log_tail(self, chars: int = 4000) -> str:
        return (self.workdir / "hub.log").read_text(errors="replace")[-chars:]

    def home(self, name: str) -> Path:
        return self.state / "home" / name

    def saved(self, name: str) -> Path:
        """A student's copy of the notebook the class works on."""
        return self.home(name) / serve.TARGET / NOTEBOOK

    def lost_edits(self, name: str, marks: list[str]) -> list[str]:
        """The edits a student saved that their notebook no longer holds."""
        try:
            text = self.saved(name).read_text()
        except OSError:
            return list(marks)
        return [mark for mark in marks if mark not in text]

    def link_query(self) -> dict[str, str]:
        return {"repo": self.repo.as_uri(), "branch": "main", "targetpath": serve.TARGET}

    def upstream_commit(self) -> dict[str, str]:
        """The instructor edits 02 (its title cell) and 01 in their checkout, commits, and
        publishes the students' copy again (what ``make students`` does)."""
        changed = {}
        for rel in (NOTEBOOK, "notebooks/01_soft_lookup.ipynb"):
            path = self.source / rel
            nb = json.loads(path.read_text())
            line = f"*Updated by the instructor: {uuid.uuid4().hex[:8]}.*"
            nb["cells"][0]["source"] = "".join(nb["cells"][0]["source"]) + "\n\n" + line
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            changed[rel] = line
        self.git("commit", "-q", "-am", "Notes for the next lecture")
        students_copy.build(self.repo, self.source)
        return changed

    def git(self, *args: str) -> None:
        who = ["-c", "user.name=instructor", "-c", "user.email=instructor@localhost"]
        subprocess.run(["git", "-C", str(self.source), *who, *args], check=True)


def cull_every(timeout: int) -> int:
    """How often the culler looks: a sixth of its timeout (at least 5 s)."""
    return max(5, timeout // 6)


def serve_free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_port_block(size: int) -> int:
    """The first port of ``size`` free ports below the ephemeral range (for the servers),
    so that a hub started by ``make hub`` beside this one keeps its own. Blocks are tried in
    a random order: two benchmarks started together must not both take the first."""
    bases = list(range(20000, 32768 - size, size))
    random.shuffle(bases)
    for base in bases:
        try:
            for port in range(base + 1, base + size):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no {size} free ports between 20000 and 32767")


# --------------------------------------------------------------------------------------
# One student at the protocol level
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Student:
    hub: Hub
    name: str
    password: str
    result: dict = dataclasses.field(default_factory=dict)
    token: str = ""
    cookies: dict = dataclasses.field(default_factory=dict)
    kernel: Kernel | None = None
    parts: dict = dataclasses.field(default_factory=dict)
    marks: list = dataclasses.field(default_factory=list)  # every edit they saved
    heartbeat: asyncio.Task | None = None
    kernel_name: str = "python3"  # the kernelspec their notebook starts

    @property
    def base(self) -> str:
        return f"{self.hub.url}/user/{self.name}/"

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def _keep_cookies(self, response) -> None:
        for header in response.headers.get_list("Set-Cookie"):
            jar = SimpleCookie()
            jar.load(header)
            self.cookies.update({k: v.value for k, v in jar.items()})

    def _cookie_header(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}

    async def login(self) -> None:
        """The hub's login form, then a token from the hub's API with the login cookie."""
        page = await fetch("GET", f"{self.hub.url}/hub/login")
        self._keep_cookies(page)
        xsrf = self.cookies["_xsrf"]
        form = urllib.parse.urlencode(
            {"username": self.name, "password": self.password, "_xsrf": xsrf}
        )
        done = await fetch(
            "POST", f"{self.hub.url}/hub/login", body=form, headers=self._cookie_header(), ok=(302,)
        )
        self._keep_cookies(done)
        xsrf = self.cookies["_xsrf"]  # a new one, bound to the logged-in session
        made = await fetch(
            "POST",
            f"{self.hub.url}/hub/api/users/{self.name}/tokens",
            headers={
                **self._cookie_header(),
                "X-XSRFToken": xsrf,
                "Content-Type": "application/json",
            },
            body={"note": "class benchmark", "expires_in": 4 * 3600},
        )
        self.token = json.loads(made.body)["token"]

    async def hub_user(self) -> dict:
        return json.loads(
            (
                await fetch("GET", f"{self.hub.url}/hub/api/users/{self.name}", headers=self.auth)
            ).body
        )

    async def start_server(self, wait: float = SPAWN_WAIT) -> None:
        await fetch(
            "POST",
            f"{self.hub.url}/hub/api/users/{self.name}/server",
            headers=self.auth,
            ok=(201, 202, 400),
        )
        deadline = time.monotonic() + wait
        while not (await self.hub_user()).get("servers", {}).get("", {}).get("ready"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: server not ready within {wait:.0f} s")
            await asyncio.sleep(1.0)

    async def pull(self) -> None:
        """What the nbgitpuller link's page does: its event stream, to the end."""
        query = urllib.parse.urlencode(self.hub.link_query())
        events = []
        await fetch(
            "GET",
            f"{self.base}git-pull/api?{query}",
            headers=self.auth,
            timeout=PULL_TIMEOUT,
            streaming_callback=events.append,
        )
        text = b"".join(events).decode(errors="replace")
        phases = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        if not phases or phases[-1].get("phase") != "finished":
            raise RuntimeError(f"{self.name}: nbgitpuller did not finish: {text[-600:]}")

    def notebook_path(self) -> str:
        return f"{serve.TARGET}/{NOTEBOOK}"

    async def open_notebook(self) -> dict:
        path = self.notebook_path()
        session = json.loads(
            (
                await fetch(
                    "POST",
                    f"{self.base}api/sessions",
                    headers=self.auth,
                    body={
                        "path": path,
                        "name": Path(path).name,
                        "type": "notebook",
                        "kernel": {"name": self.kernel_name},
                    },
                )
            ).body
        )
        drops = self.result.setdefault("socket_drops", [])
        self.kernel = await Kernel.connect(self.base, session["kernel"]["id"], self.token, drops)
        # What a student waits for in JupyterLab before Run All: the kernel's first answer.
        await asyncio.wait_for(asyncio.shield(self.kernel.info), KERNEL_WAIT)
        return json.loads(
            (await fetch("GET", f"{self.base}api/contents/{path}", headers=self.auth)).body
        )["content"]

    async def run_all(self, nb: dict) -> list[str]:
        """Every code cell in order; returns the failures (cell index: error)."""
        failed = []
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["outputs"], error = await self.kernel.execute(source)
            if error and "raises-exception" not in cell.get("metadata", {}).get("tags", []):
                failed.append(f"cell {i}: {error.get('ename')}: {error.get('evalue', '')[:200]}")
        return failed

    async def save_edit(self, nb: dict, why: str) -> str:
        """Their own Markdown cell at the end, saved with the run's outputs; returns the mark."""
        mark = f"{EDIT_MARK} ({self.name}, {why}, {uuid.uuid4().hex[:8]})"
        nb["cells"].append(
            {"cell_type": "markdown", "metadata": {}, "source": mark, "id": uuid.uuid4().hex[:8]}
        )
        await fetch(
            "PUT",
            f"{self.base}api/contents/{self.notebook_path()}",
            headers=self.auth,
            body={"type": "notebook", "format": "json", "content": nb},
        )
        self.marks.append(mark)
        return mark

    def saved_text(self) -> str:
        return self.hub.saved(self.name).read_text()

    def lost_edits(self) -> list[str]:
        return self.hub.lost_edits(self.name, self.marks)

    async def beat(self) -> None:
        """What an open explorer page does: ping every 15 s, whatever happened to the last."""
        n = 0
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            n += 1
            try:
                self.result.setdefault("pongs", 0)
                self.result["pongs"] += await self.kernel.ping(self.parts, n)
            except (OSError, RuntimeError):
                pass  # a page whose kernel is gone keeps asking too

    async def session(self, moves: int) -> dict:
        """Steps 1-5 of the module docstring; the figures go to ``self.result``."""
        r = self.result
        t0 = time.monotonic()
        await self.login()
        r["login_s"] = time.monotonic() - t0
        await self.start_server()
        r["ready_at"] = time.monotonic()
        await self.pull()
        t1 = time.monotonic()
        nb = await self.open_notebook()
        r["kernel_answered_s"] = time.monotonic() - t1
        t1 = time.monotonic()
        r["cells_failed"] = await self.run_all(nb)
        r["run_all_s"] = time.monotonic() - t1
        self.parts = self.kernel.explorer()
        r["round_trips_s"] = [
            await self.kernel.move(self.parts, MOVE_INDICES[i % len(MOVE_INDICES)])
            for i in range(moves)
        ]
        self.nb = nb
        await self.save_edit(nb, "after the lecture's run")
        self.heartbeat = asyncio.ensure_future(self.beat())
        return r

    def close_page(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        if self.kernel is not None:
            self.kernel.close()


# --------------------------------------------------------------------------------------
# One student in headless Chromium (in a thread of its own: Playwright's sync API)
# --------------------------------------------------------------------------------------

KERNEL_STATE_JS = """() => {
  const root = document.querySelector('.jp-NotebookPanel .attn-explorer');
  if (!root) return null;
  return {kernel: root.dataset.attnKernel || 'live',
          message: (root.querySelector('.attn-kernel-message') || {}).textContent || ''};
}"""


class BrowserStudent:
    """A student in JupyterLab through the hub's proxy, in Chromium (tests/browser's harness)."""

    def __init__(self, hub: Hub, name: str, password: str, workdir: Path):
        self.hub, self.name, self.password, self.workdir = hub, name, password, workdir
        self.result: dict = {"browser": True}
        self.marks: list[str] = []
        self._thread_calls = None

    # The browser lives in one thread; the asyncio side sends it work and awaits the answer.
    def start_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        import queue

        self._thread_calls = queue.Queue()
        self._loop = loop
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        from playwright.sync_api import sync_playwright

        from tests.browser import browser_harness as harness

        self.harness = harness
        with sync_playwright() as pw:
            self.context = harness.launch_chromium(pw, self.workdir / f"chromium-{self.name}")
            self.guard = harness.NetworkGuard()
            self.guard.allowed_noise += [
                (
                    r"^failed \S+/hub/api/users/[^/]+/server/progress\S* net::ERR_ABORTED$",
                    "the spawn page's progress stream, closed as the page moves on to the server",
                ),
                (
                    r"^failed \S+/user/[^/]+/git-pull/api\S* net::ERR_ABORTED$",
                    "nbgitpuller's progress stream, closed as its page moves on to the notebook",
                ),
            ]
            self.guard.attach_context(self.context)
            # JupyterLab's own reconnects of the kernel's WebSocket, as its console says them.
            self.context.on(
                "console",
                lambda m: (
                    "Connection lost, reconnecting" in m.text
                    and self.result.setdefault("reconnects_logged", []).append(m.text)
                ),
            )
            try:
                while (job := self._thread_calls.get()) is not None:
                    fn, future = job
                    try:
                        value = fn()
                    except BaseException as exc:  # handed to the awaiting coroutine
                        self._loop.call_soon_threadsafe(_set_exception, future, exc)
                    else:
                        self._loop.call_soon_threadsafe(_set_result, future, value)
            finally:
                self.context.close()

    async def call(self, fn):
        future = self._loop.create_future()
        self._thread_calls.put((fn, future))
        return await future

    def stop_thread(self) -> None:
        if self._thread_calls is not None:
            self._thread_calls.put(None)
            self._thread.join(timeout=60)

    # -- in the browser thread ---------------------------------------------------------

    def _login_and_pull(self) -> None:
        """The login form, then the nbgitpuller link, which opens 02 in JupyterLab."""
        # The harness's JupyterLab front end, on the hub's server of this student: it needs
        # the home (to read the notebook's cells) and nothing else of a server.
        home = types.SimpleNamespace(root=self.hub.home(self.name), shutdown_kernels=lambda: None)
        self.lab = self.harness.JupyterLabFrontend(self.context, home, self.guard)
        self.lab.notebook = f"{serve.TARGET}/{NOTEBOOK}"
        page = self.page = self.lab.page
        page.goto(f"{self.hub.url}/hub/login")
        page.fill("input[name=username]", self.name)
        page.fill("input[name=password]", self.password)
        page.click("input[type=submit], button[type=submit]")
        page.wait_for_url(re.compile(r"/(user/|hub/spawn)"), timeout=SPAWN_WAIT * 1000)
        query = urllib.parse.urlencode(
            {**self.hub.link_query(), "urlpath": f"lab/tree/{self.lab.notebook}"}
        )
        page.goto(f"{self.hub.url}/hub/user-redirect/git-pull?{query}")
        self._wait_notebook()

    def _wait_notebook(self) -> None:
        self.page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(
            timeout=SPAWN_WAIT * 1000
        )
        self.lab._wait_idle(self.harness.PAGE_TIMEOUT, require_run=False)

    def _run_all(self) -> list[str]:
        self.lab.run_all()
        return self.lab.error_outputs() + [
            f"cell {i}: not run" for i in self.lab.unexecuted_cells()
        ]

    def _moves(self, count: int) -> list[float]:
        """Arrow keys on the d_k slider; seconds from each key press to the new figure."""
        explorer = self.lab.explorer()
        explorer.handle().focus()
        times = []
        for i in range(count):
            state = explorer.slider_state()
            up = (i // 4) % 2 == 0
            key = (
                "ArrowRight"
                if (up and state["now"] < state["max"]) or state["now"] <= state["min"]
                else "ArrowLeft"
            )
            before = explorer.figure_src()
            start = time.perf_counter()
            self.page.keyboard.press(key)
            while explorer.figure_src() == before:
                if time.perf_counter() - start > MOVE_TIMEOUT:
                    raise RuntimeError(
                        f"{self.name}: no new figure {MOVE_TIMEOUT:.0f} s after {key}"
                    )
                self.page.wait_for_timeout(20)
            times.append(time.perf_counter() - start)
        return times

    def _edit_and_save(self, why: str) -> str:
        """A Markdown cell of their own below the explorer's, typed and saved with Ctrl+S."""
        mark = f"{EDIT_MARK} ({self.name}, {why}, {uuid.uuid4().hex[:8]})"
        page = self.page
        page.keyboard.press("Escape")
        page.locator(".jp-NotebookPanel .jp-Cell").last.click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")
        page.keyboard.press("m")
        page.keyboard.press("Enter")
        page.keyboard.type(mark)
        page.keyboard.press("Shift+Enter")
        page.keyboard.press("Control+s")
        path = self.hub.saved(self.name)
        deadline = time.monotonic() + 60
        while mark not in path.read_text():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: Ctrl+S did not save the edit within 60 s")
            page.wait_for_timeout(200)
        self.marks.append(mark)
        return mark

    def _kernel_state(self, wanted: str, timeout: float = 60.0) -> dict:
        """Wait until the explorer's kernel state is ``wanted`` ('gone' or 'live')."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.page.evaluate(KERNEL_STATE_JS)
            if state and state["kernel"] == wanted:
                return state
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{self.name}: explorer state {state} after {timeout:.0f} s, wanted {wanted}"
                )
            self.page.wait_for_timeout(250)

    def _dismiss_dialog(self) -> None:
        """Press OK on JupyterLab's dialog, once it shows (the kernel died, restarting)."""
        accept = self.page.locator(".jp-Dialog .jp-mod-accept")
        accept.wait_for(timeout=30_000)
        accept.click()
        accept.wait_for(state="detached")

    def _reopen(self) -> None:
        self.page.goto(f"{self.hub.url}/user/{self.name}/lab/tree/{self.lab.notebook}")
        self._wait_notebook()

    def _still_logged_in(self) -> bool:
        page = self.context.new_page()
        try:
            page.goto(f"{self.hub.url}/hub/home")
            return (
                "/hub/login" not in page.url and page.locator("input[name=password]").count() == 0
            )
        finally:
            page.close()

    def lost_edits(self) -> list[str]:
        return self.hub.lost_edits(self.name, self.marks)

    async def session(self, moves: int) -> dict:
        r = self.result
        t0 = time.monotonic()
        await self.call(self._login_and_pull)
        r["login_to_notebook_s"] = time.monotonic() - t0
        t1 = time.monotonic()
        r["cells_failed"] = await self.call(self._run_all)
        r["run_all_s"] = time.monotonic() - t1
        r["round_trips_s"] = await self.call(lambda: self._moves(moves))
        await self.call(lambda: self._edit_and_save("after the lecture's run"))
        r["page_problems"] = (
            self.guard.problems()
        )  # reported: requests off 127.0.0.1, console errors
        return r


def _set_result(future, value):
    if not future.done():
        future.set_result(value)


def _set_exception(future, exc):
    if not future.done():
        future.set_exception(exc)


# --------------------------------------------------------------------------------------
# The class
# --------------------------------------------------------------------------------------


async def hub_server(admin_token: str, hub: Hub, name: str) -> dict | None:
    """The hub's record of a student's server (with its state: the pid), or None."""
    headers = {"Authorization": f"token {admin_token}"}
    user = json.loads((await fetch("GET", f"{hub.url}/hub/api/users/{name}", headers=headers)).body)
    return user.get("servers", {}).get("")


async def server_pid(admin_token: str, hub: Hub, name: str) -> int | None:
    server = await hub_server(admin_token, hub, name)
    return server.get("state", {}).get("pid") if server else None


async def server_ready(admin_token: str, hub: Hub, name: str) -> bool:
    server = await hub_server(admin_token, hub, name)
    return bool(server and server.get("ready"))


async def admin_login(hub: Hub) -> str:
    instructor = Student(hub, "instructor", hub.env["ATTENTION_HUB_ADMIN_PASSWORD"])
    await instructor.login()
    return instructor.token


async def measure_memory(admin: str, hub: Hub, names: list[str]) -> dict[str, dict]:
    found = {}
    for name in names:
        pid = await server_pid(admin, hub, name)
        server = memory_kib(pid) if pid else None
        kernels = [m for k in (kernel_pids(pid) if pid else []) if (m := memory_kib(k))]
        found[name] = {"server": server, "kernels": kernels}
    return found


async def arrive(student, delay: float, moves: int, t_start: float) -> None:
    await asyncio.sleep(delay)
    student.result["arrived_s"] = time.monotonic() - t_start
    try:
        await student.session(moves)
    except Exception as exc:  # reported per student; the class goes on
        student.result["error"] = f"{type(exc).__name__}: {exc}"


async def run_class(args, workdir: Path) -> dict:
    hub = Hub(workdir, cull_timeout=args.cull_timeout, activity_interval=args.activity_interval)
    report: dict = {
        "students": args.students,
        "browser_students": args.browser,
        "schedule": "all at once" if args.interval == 0 else f"one every {args.interval:g} s",
        "moves": args.moves,
    }
    load = LoadSampler()
    load.start()
    browsers: list[BrowserStudent] = []
    students: list[Student | BrowserStudent] = []
    try:
        hub.start()
        loop = asyncio.get_running_loop()
        password = hub.env["ATTENTION_HUB_PASSWORD"]
        names = [f"student{i + 1:02d}" for i in range(args.students)]
        for i, name in enumerate(names):
            if i < args.browser:
                student = BrowserStudent(hub, name, password, workdir)
                student.start_thread(loop)
                browsers.append(student)
            else:
                student = Student(hub, name, password)
            students.append(student)
        t_start = time.monotonic()
        await asyncio.gather(
            *(arrive(s, i * args.interval, args.moves, t_start) for i, s in enumerate(students))
        )
        report["class_s"] = time.monotonic() - t_start
        admin = await admin_login(hub)
        memory = await measure_memory(admin, hub, names)
        report["servers_ready"] = sum([await server_ready(admin, hub, name) for name in names])
        report["load_during_class"] = load.stop()
        report["per_student"] = {  # the sockets that closed so far (the faults close more)
            s.name: {
                **s.result,
                "memory_kib": memory[s.name],
                "socket_drops": list(s.result.get("socket_drops", [])),
            }
            for s in students
        }
        report["hub_and_proxy_kib"] = {
            "hub": memory_kib(hub.hub.pid),
            "proxy": memory_kib(hub.proxy.pid),
        }
        if args.board:
            live = [s for s in students if isinstance(s, Student) and s.kernel is not None]
            live = [s for s in live if "error" not in s.result]
            report["board"] = await class_board.run_board(
                hub, admin, live, workdir, sys.modules[__name__], kernel_kill=not args.smoke
            )
        if args.faults:
            load = LoadSampler()
            load.start()
            per = report["per_student"]
            report["faults"] = await run_faults(hub, admin, students, browsers, args)
            report["load_during_faults"] = load.stop()
            report["socket_drops_in_faults"] = {
                s.name: later
                for s in students
                if (later := s.result.get("socket_drops", [])[len(per[s.name]["socket_drops"]) :])
            }
        report["edits_lost"] = {s.name: lost for s in students if (lost := s.lost_edits())}
        return summarize(report, t_start)
    except BaseException:
        print(hub.log_tail(), file=sys.stderr)
        raise
    finally:
        if load.is_alive():
            load.stop()
        for s in students:
            if isinstance(s, Student):
                s.close_page()
        for b in browsers:
            b.stop_thread()
        hub.stop()


def summarize(report: dict, t_start: float) -> dict:
    per = report["per_student"]
    ready = sorted(
        r["ready_at"] - t_start for r in per.values() if "ready_at" in r and "browser" not in r
    )
    failures = {n: r["error"] for n, r in per.items() if "error" in r}
    cells = {n: r["cells_failed"] for n, r in per.items() if r.get("cells_failed")}
    trips = {n: r["round_trips_s"] for n, r in per.items() if r.get("round_trips_s")}
    pss = [
        m["server"]["pss"] + sum(k["pss"] for k in m["kernels"])
        for r in per.values()
        if (m := r["memory_kib"])["server"]
    ]
    report.update(
        socket_drops={n: r["socket_drops"] for n, r in per.items() if r.get("socket_drops")},
        reconnects_logged={
            n: r["reconnects_logged"] for n, r in per.items() if "reconnects_logged" in r
        },
        first_ready_s=ready[0] if ready else None,
        all_ready_s=ready[-1] if ready else None,
        failures=failures,
        cells_failed=cells,
        class_pss_mib=sum(pss) / 1024,
        round_trip_ms={
            "protocol": _trip_stats([t for n, t in trips.items() if "browser" not in per[n]]),
            "browser": _trip_stats([t for n, t in trips.items() if "browser" in per[n]]),
        },
    )
    report["passed"] = not (
        report["servers_ready"] < report["students"]
        or failures
        or cells
        or report["edits_lost"]
        or _fault_failures(report)
        or report.get("board", {}).get("problems")
    )
    return report


def _trip_stats(per_student: list[list[float]]) -> dict | None:
    if not per_student:
        return None
    flat = [t * 1000 for trips in per_student for t in trips]
    return {
        "median": statistics.median(flat),
        "p95": quantile(flat, 0.95),
        "student_medians": [statistics.median(t) * 1000 for t in per_student],
        "student_p95s": [quantile(t, 0.95) * 1000 for t in per_student],
    }


def _fault_failures(report: dict) -> list[str]:
    return [
        f"{name}: {fault['problem']}"
        for name, fault in report.get("faults", {}).items()
        if fault.get("problem")
    ]


# --------------------------------------------------------------------------------------
# The faults
# --------------------------------------------------------------------------------------


async def run_faults(hub: Hub, admin: str, students, browsers, args) -> dict:
    live = [
        s
        for s in students
        if isinstance(s, Student) and s.kernel is not None and "error" not in s.result
    ]
    if len(live) < 3:
        return {
            "setup": {
                "problem": f"too few students finished the class to run the faults ({len(live)})"
            }
        }
    idle, others = live[-1], live[:-1]
    faults: dict[str, dict] = {}
    faults["hub restarted while students work"] = await fault_hub_restart(
        hub, admin, live, browsers
    )
    # The idle student closes their page now and the culler's clock starts. (Not before
    # the restart: a restarted hub asks every server whether it is up, which counts as
    # activity, so it would restart the clock anyway.)
    idle.close_page()
    limit = args.cull_timeout + 2 * cull_every(args.cull_timeout) + 2 * args.activity_interval + 60
    culled = asyncio.ensure_future(culled_after(idle, time.monotonic(), limit))
    faults["upstream commit, pulled again"] = await fault_upstream(hub, others)
    faults["kernel SIGKILLed"] = await fault_kernel_kill(hub, admin, others[0], browsers)
    faults["server SIGKILLed mid-session"] = await fault_server_kill(
        hub, admin, others[1], browsers
    )
    faults["idle culler"] = await fault_culler(hub, admin, idle, others, culled)
    faults["idle culler"]["timeout_s"] = args.cull_timeout
    return faults


async def _guarded(fault: dict, coro) -> dict:
    try:
        await coro
    except Exception as exc:
        fault["problem"] = f"{type(exc).__name__}: {exc}"
    return fault


async def fault_upstream(hub: Hub, students) -> dict:
    fault: dict = {}

    async def go():
        changed = hub.upstream_commit()
        arrived_02 = 0
        for s in students:
            await s.pull()
            text = s.saved_text()
            nb = json.loads(text)  # still a notebook after the merge
            lost = s.lost_edits()
            if lost:
                raise RuntimeError(f"{s.name}: pulling again lost {lost}")
            other = (hub.home(s.name) / serve.TARGET / "notebooks/01_soft_lookup.ipynb").read_text()
            if changed["notebooks/01_soft_lookup.ipynb"] not in other:
                raise RuntimeError(f"{s.name}: the upstream change to 01 did not arrive")
            arrived_02 += changed[NOTEBOOK] in text
            _validate(nb)
        fault.update(
            students=len(students),
            upstream_change_to_edited_02_arrived=arrived_02,
            note="nbgitpuller commits the student's changes and merges upstream with -Xours",
        )

    return await _guarded(fault, go())


def _validate(nb: dict) -> None:
    import nbformat

    nbformat.validate(nbformat.from_dict(nb))


async def while_hub_is_down(fault: dict, students, browsers) -> None:
    """Every open notebook keeps working through the proxy; saving is reported (a server
    trusts a token it checked within five minutes)."""
    moved = 0
    for s in students:
        await s.kernel.move(s.parts, 8)
        await s.kernel.move(s.parts, 9)
        moved += 2
    for b in browsers:
        moved += len(await b.call(lambda b=b: b._moves(2)))
    saved = 0
    for s in students:
        try:
            await s.save_edit(s.nb, "while the hub was down")
            saved += 1
        except HTTPFailure as exc:
            fault.setdefault("saves_refused_while_down", []).append(str(exc)[:160])
    fault.update(moves_while_down=moved, saves_while_down=saved)


async def fault_hub_restart(hub: Hub, admin: str, students, browsers) -> dict:
    fault: dict = {}

    async def go():
        before = {s.name: await server_pid(admin, hub, s.name) for s in students}
        fault["hub_stop_s"] = hub.stop_hub()
        down = time.monotonic()
        try:
            await while_hub_is_down(fault, students, browsers)
        finally:  # whatever happened meanwhile, the hub comes back for the other faults
            t = time.monotonic()
            hub.start_hub()
            fault.update(hub_down_s=time.monotonic() - down, hub_start_s=time.monotonic() - t)
        after = {s.name: await server_pid(admin, hub, s.name) for s in students}
        if after != before:
            raise RuntimeError(f"servers changed across the restart: {before} -> {after}")
        for s in students:
            if not (await s.hub_user())["servers"][""]["ready"]:
                raise RuntimeError(f"{s.name}: the restarted hub does not see the server as ready")
            await s.kernel.move(s.parts, 10)
            await s.save_edit(s.nb, "after the hub restarted")
        for b in browsers:
            await b.call(lambda b=b: b._moves(1))
            await b.call(lambda b=b: b._edit_and_save("after the hub restarted"))
            if not await b.call(b._still_logged_in):
                raise RuntimeError(f"{b.name}: logged out by the hub restart (cookie secret?)")
        fault["servers_kept"] = len(after)

    return await _guarded(fault, go())


async def fault_kernel_kill(hub: Hub, admin: str, student: Student, browsers) -> dict:
    """SIGKILL a kernel, as the kernel OOM killer does: protocol and (if any) browser student."""
    fault: dict = {}

    async def go():
        for victim in [student, *browsers[:1]]:
            pid = await server_pid(admin, hub, victim.name)
            kernels = kernel_pids(pid)
            if len(kernels) != 1:
                raise RuntimeError(f"{victim.name}: expected one kernel, found {kernels}")
            saved = (hub.saved(victim.name)).read_bytes()
            os.kill(kernels[0], signal.SIGKILL)
            if isinstance(victim, Student):
                deadline = time.monotonic() + 60
                while "restarting" not in victim.kernel.statuses[-5:]:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{victim.name}: no 'restarting' status after the kill")
                    await asyncio.sleep(0.2)
                # The restarted kernel holds no explorer: the student runs the notebook again.
                nb = json.loads(victim.saved_text())
                failed = await victim.run_all(nb)
                if failed:
                    raise RuntimeError(f"{victim.name}: re-run after the kill failed: {failed}")
                victim.parts = victim.kernel.explorer()
                await victim.kernel.move(victim.parts, 11)
                fault["protocol"] = "status 'restarting' seen; notebook re-run, explorer moved"
            else:
                gone = await victim.call(lambda v=victim: v._kernel_state("gone"))
                await victim.call(victim._dismiss_dialog)  # "The kernel appears to have died"
                if "restarted" not in gone["message"]:
                    raise RuntimeError(f"{victim.name}: explorer says {gone['message']!r}")
                fault["browser_message"] = gone["message"]
                failed = await victim.call(victim._run_all)
                if failed:
                    raise RuntimeError(f"{victim.name}: Run All after the kill: {failed}")
                await victim.call(lambda v=victim: v._kernel_state("live"))
                await victim.call(lambda v=victim: v._moves(1))
            if (hub.saved(victim.name)).read_bytes() != saved:
                raise RuntimeError(
                    f"{victim.name}: the saved notebook changed when the kernel died"
                )

    return await _guarded(fault, go())


async def fault_server_kill(hub: Hub, admin: str, student: Student, browsers) -> dict:
    """SIGKILL a student's server mid-session; the hub notices, the student starts it again."""
    fault: dict = {}

    async def go():
        victims = [*browsers[:1], student]
        for victim in victims:
            path = hub.saved(victim.name)
            saved = path.read_bytes()
            pid = await server_pid(admin, hub, victim.name)
            kernels = kernel_pids(pid)
            os.kill(pid, signal.SIGKILL)
            t = time.monotonic()
            check = (
                victim
                if isinstance(victim, Student)
                else Student(hub, victim.name, victim.password)
            )
            if not check.token:
                await check.login()
            while (await check.hub_user()).get("servers", {}).get(""):
                if time.monotonic() - t > 120:
                    raise RuntimeError(
                        f"{victim.name}: the hub did not notice the dead server in 120 s"
                    )
                await asyncio.sleep(1)
            fault.setdefault("hub_noticed_s", []).append(round(time.monotonic() - t, 1))
            await asyncio.sleep(3)
            fault.setdefault("orphan_kernels", []).extend(k for k in kernels if alive(k))
            if isinstance(victim, BrowserStudent):
                gone = await victim.call(lambda v=victim: v._kernel_state("gone"))
                fault["browser_message_server_dead"] = gone["message"]
            await check.start_server()
            if path.read_bytes() != saved:
                raise RuntimeError(f"{victim.name}: the saved notebook changed")
            if isinstance(victim, BrowserStudent):
                await asyncio.sleep(5)  # the page reconnects to the new server
                still = await victim.call(lambda v=victim: v._kernel_state("gone"))
                fault["browser_message_server_back"] = still["message"]
                await victim.call(victim._reopen)
                failed = await victim.call(victim._run_all)
                if failed:
                    raise RuntimeError(f"{victim.name}: Run All after the restart: {failed}")
                await victim.call(lambda v=victim: v._moves(1))
            else:
                victim.close_page()
                nb = await victim.open_notebook()
                failed = await victim.run_all(nb)
                if failed:
                    raise RuntimeError(f"{victim.name}: re-run after the restart failed: {failed}")
                victim.parts = victim.kernel.explorer()
                await victim.kernel.move(victim.parts, 12)
                victim.nb = nb
                await victim.save_edit(nb, "after the server came back")
                victim.heartbeat = asyncio.ensure_future(victim.beat())
        if fault["orphan_kernels"]:
            fault["problem"] = f"kernels outlived their server: {fault['orphan_kernels']}"

    return await _guarded(fault, go())


async def culled_after(student: Student, since: float, limit: float) -> float:
    """Seconds from ``since`` until the hub no longer lists the student's server."""
    while (await student.hub_user()).get("servers", {}).get(""):
        if time.monotonic() - since > limit:
            raise RuntimeError(f"{student.name}: not culled {limit:.0f} s after closing the page")
        await asyncio.sleep(2)
    return time.monotonic() - since


async def fault_culler(hub: Hub, admin: str, idle: Student, others, culled) -> dict:
    """The culler stopped the closed page's server (``culled``, watched since the page
    closed), and no other; the student comes back to their saved work."""
    fault: dict = {}

    async def go():
        fault["culled_after_s"] = round(await culled, 1)
        for s in others:
            if not await server_pid(admin, hub, s.name):
                raise RuntimeError(f"{s.name} (page open) was culled too")
        await idle.start_server()
        if idle.lost_edits():
            raise RuntimeError(f"{idle.name}: lost {idle.lost_edits()}")
        path = idle.notebook_path()
        served = (await fetch("GET", f"{idle.base}api/contents/{path}", headers=idle.auth)).body
        if not all(m in served.decode() for m in idle.marks):
            raise RuntimeError(f"{idle.name}: the restarted server does not serve the saved edit")

    return await _guarded(fault, go())


# --------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------


def markdown(runs: list[dict], meta: dict) -> str:
    lines = [
        "# A simulated class on one server: latest figures",
        "",
        f"Generated by `python benchmarks/bench_class.py {meta['argv']}` on {meta['date']} "
        f"({meta['machine']}); load average before the run {', '.join(meta['load_before'])} "
        "(1, 5, 15 min; other work on the machine). The setup, "
        'the schedule and what is pass/fail: `docs/teaching.md`, "A class on one server".',
        "",
    ]
    for run in runs:
        title = f"{run['students']} students, {run['schedule']}"
        lines += [f"## {title} ({run['browser_students']} in Chromium)", ""]
        lines += [
            f"| {label} | {value} |" for label, value in [("figure", "value"), ("---", "---")]
        ]
        lines += [f"| {label} | {value} |" for label, value in table_rows(run)]
        lines.append("")
        per = run["per_student"]
        problems = {n: r["page_problems"] for n, r in per.items() if r.get("page_problems")}
        for heading, items in [
            ("Browser pages reported", problems),
            ("Errors", run["failures"]),
            ("Cells failed", run["cells_failed"]),
            ("Edits lost", run["edits_lost"]),
            ("Kernel WebSockets that closed (JupyterLab's reconnect)", run["socket_drops"]),
            ("Kernel WebSockets that closed in the faults", run.get("socket_drops_in_faults")),
            ("JupyterLab's reconnects in Chromium (its console)", run["reconnects_logged"]),
        ]:
            if items:
                lines += [f"{heading}:", "", *[f"- {n}: {e}" for n, e in items.items()], ""]
        if run.get("board"):
            lines += board_lines(run["board"])
        if run.get("faults"):
            lines += ["Faults:", ""]
            for name, fault in run["faults"].items():
                details = ", ".join(
                    f"{k.replace('_', ' ')} {v:.1f}"
                    if isinstance(v, float)
                    else f"{k.replace('_', ' ')} {v}"
                    for k, v in fault.items()
                    if k != "problem"
                )
                verdict = (
                    f"**failed**: {fault['problem']}" if "problem" in fault else "nothing lost"
                )
                lines.append(f"- {name}: {verdict}; {details}")
            lines.append("")
    return "\n".join(lines)


def board_lines(board: dict) -> list[str]:
    """The misconceptions board's figures (class_board.run_board)."""
    lines = [
        "The misconceptions board (every protocol student runs the real checkers on known right "
        "and wrong answers, in bursts; the instructor's page open in Chromium throughout):",
        "",
        "| figure | value |",
        "| --- | --- |",
    ]
    rows = [
        ("students; checker runs", f"{board['students']}; {board.get('reports', '-')}"),
        ("the board's part, start to end (its faults included)", f"{board['wall_s']:.0f} s"),
        ("report round trip in the kernel: median / p95", _ms(_as_ms(board.get("round_trip_s")))),
        (
            "report leaves the kernel to count on the open page: median / p95 (target 2 / 5 s)",
            _ms(_as_ms(board.get("latency_s"))),
        ),
        ("the service, RSS / PSS", f"{_mem(board.get('service_kib') or [])} MiB"),
        (
            "counts equal the known answers (service; page)",
            _yes(board, "counts_equal_known_answers") + "; " + _yes(board, "page_counts_equal"),
        ),
    ]
    lines += [f"| {label} | {value} |" for label, value in rows]
    lines.append("")
    for name, fault in board.get("faults", {}).items():
        lines.append(f"- {name}: nothing lost; counts right {fault['settled_s']:.1f} s later")
    lines += [f"- **problem**: {problem}" for problem in board["problems"]]
    return [*lines, ""]


def _as_ms(stats: dict | None) -> dict | None:
    return stats and {"median": stats["median"] * 1000, "p95": stats["p95"] * 1000}


def _yes(board: dict, key: str) -> str:
    return {True: "yes", False: "NO"}.get(board.get(key), "-")


def table_rows(run: dict) -> list[tuple[str, str]]:
    """The figures of one run, as (label, value) rows."""
    mem = [r["memory_kib"] for r in run["per_student"].values() if r["memory_kib"]["server"]]
    server = [m["server"] for m in mem]
    kernel = [k for m in mem for k in m["kernels"]]
    hub, load = run["hub_and_proxy_kib"], run["load_during_class"]
    run_all = [r["run_all_s"] for r in run["per_student"].values() if "run_all_s" in r]
    answered = [
        r["kernel_answered_s"] for r in run["per_student"].values() if "kernel_answered_s" in r
    ]
    drops = [d for ds in run["socket_drops"].values() for d in ds]
    reopened = sum("reopened_after_s" in d for d in drops)
    ready = f"{_s(run['first_ready_s'])} / {_s(run['all_ready_s'])}"
    return [
        ("servers ready", f"{run['servers_ready']} of {run['students']}"),
        ("first / last server ready (protocol students, from the first arrival)", ready),
        ("whole class done (last edit saved)", f"{run['class_s']:.0f} s"),
        ("opening 02 until its new kernel answers, per student: median / max", _seconds(answered)),
        ("running every cell of 02, per student: median / max", _seconds(run_all)),
        ("cells failed", sum(len(v) for v in run["cells_failed"].values())),
        ("edits lost", sum(len(v) for v in run["edits_lost"].values())),
        ("students who hit an error", len(run["failures"])),
        ("kernel WebSockets that closed: reopened / not", f"{reopened} / {len(drops) - reopened}"),
        (
            "JupyterLab's reconnect attempts in Chromium (its console)",
            sum(map(len, run["reconnects_logged"].values())),
        ),
        ("server per student, RSS / PSS (median)", f"{_mem(server, statistics.median)} MiB"),
        (
            f"kernel after 02 and {run['moves']} moves, RSS / PSS: median (max)",
            f"{_mem(kernel, statistics.median)} MiB ({_mem(kernel, max)})",
        ),
        ("whole class, summed PSS (servers + kernels)", f"{run['class_pss_mib']:.0f} MiB"),
        ("the hub; its proxy: RSS / PSS", f"{_mem([hub['hub']])}; {_mem([hub['proxy']])} MiB"),
        ("explorer round trip, protocol: median / p95", _ms(run["round_trip_ms"]["protocol"])),
        (
            "explorer key to new figure, Chromium: median / p95",
            _ms(run["round_trip_ms"]["browser"]),
        ),
        (
            "explorer round trip per protocol student: lowest-highest median; p95",
            _spread(run["round_trip_ms"]["protocol"]),
        ),
        (
            "load average (1 min) during the class: mean / max",
            f"{load['mean_1min']:.1f} / {load['max_1min']:.1f}",
        ),
        (
            "passed (every server up, no cell failed, no edit lost)",
            "yes" if run["passed"] else "NO",
        ),
    ]


def _mem(samples: list[dict | None], pick=statistics.median) -> str:
    """RSS / PSS in MiB of ``pick`` over the samples (KiB dicts from memory_kib)."""
    samples = [m for m in samples if m]
    if not samples:
        return "-"
    return " / ".join(f"{pick([m[k] for m in samples]) / 1024:.0f}" for k in ("rss", "pss"))


def _spread(stats: dict | None) -> str:
    if not stats:
        return "-"
    medians, p95s = stats["student_medians"], stats["student_p95s"]
    return f"{min(medians):.0f}-{max(medians):.0f} ms; {min(p95s):.0f}-{max(p95s):.0f} ms"


def _seconds(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} / {max(values):.0f} s" if values else "-"


def _s(x):
    return "-" if x is None else f"{x:.0f} s"


def _ms(stats):
    return "-" if not stats else f"{stats['median']:.0f} / {stats['p95']:.0f} ms"


def missing_setup() -> str | None:
    problems = [
        f"{p} is missing"
        for p in (HUB_PYTHON, SINGLEUSER_VENV / "bin" / "jupyterhub-singleuser", serve.PROXY)
        if not p.exists()
    ]
    return "; ".join(problems) + " (make hub-setup)" if problems else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--smoke", action="store_true", help="6 students, 1 in Chromium, with the faults (CI)"
    )
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--interval", type=float, default=4.0, help="seconds between arrivals")
    parser.add_argument(
        "--at-once", action="store_true", help="only the run where all arrive at once"
    )
    parser.add_argument("--browser", type=int, default=2, help="students in headless Chromium")
    parser.add_argument("--moves", type=int, default=MOVES)
    parser.add_argument("--faults", action="store_true")
    parser.add_argument(
        "--no-board",
        dest="board",
        action="store_false",
        help="leave out the misconceptions board's part (class_board.py)",
    )
    parser.add_argument("--cull-timeout", type=int, default=3600)
    parser.add_argument("--activity-interval", type=int, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the hub's folder and logs")
    parser.add_argument("--write", type=Path, help="write the figures as Markdown here")
    parser.add_argument("--json", type=Path, default=ROOT / "artifacts" / "class" / "results.json")
    args = parser.parse_args(argv)
    if args.smoke:
        args.students, args.interval, args.browser, args.faults = 6, 3.0, 1, True
        args.cull_timeout, args.activity_interval = SMOKE_CULL_TIMEOUT, 10
    why = missing_setup()
    if why:
        if args.smoke and os.environ.get("ATTENTION_REQUIRE_HUB") != "1":
            print(f"bench_class: skipped, {why}; ATTENTION_REQUIRE_HUB=1 makes this an error")
            return 0
        print(f"bench_class: {why}", file=sys.stderr)
        return 1
    if args.browser or args.board:  # the board's part opens the instructor's page in Chromium
        sys.path.insert(0, str(ROOT))
        from tests.browser.browser_harness import missing_browser_tools

        if (missing := missing_browser_tools()) is not None:
            print(f"bench_class: {missing}", file=sys.stderr)
            return 1
    schedules = (
        [0.0]
        if args.at_once
        else [args.interval]
        if (args.smoke or args.faults)
        else [args.interval, 0.0]
    )
    meta = {
        "argv": " ".join(sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "load_before": Path("/proc/loadavg").read_text().split()[:3],
    }
    runs = []
    args.json.parent.mkdir(parents=True, exist_ok=True)
    for index, interval in enumerate(schedules):
        args.interval = interval
        args.board = args.board and index == 0  # the board's part in the first run only
        scratch = Path(tempfile.mkdtemp(prefix="bench-class-"))
        t = time.monotonic()
        try:
            run = asyncio.run(run_class(args, scratch))
        finally:
            # The hub's, the proxy's and every server's log, beside the figures: the evidence
            # when a run fails.
            log = args.json.parent / f"hub-{'at-once' if interval == 0 else 'staggered'}.log"
            shutil.copy(scratch / "hub.log", log)
            if args.keep:
                print(f"bench_class: hub folder and logs kept in {scratch}")
            else:
                shutil.rmtree(scratch, ignore_errors=True)
        run["wall_s"] = time.monotonic() - t
        runs.append(run)
    text = markdown(runs, meta)
    print(text)
    args.json.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1, default=str))
    if args.write:
        args.write.write_text(text + "\n")
    failed = [r for r in runs if not r["passed"]]
    print(
        f"bench_class: {'FAILED' if failed else 'passed'} ({sum(r['wall_s'] for r in runs):.0f} s)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
