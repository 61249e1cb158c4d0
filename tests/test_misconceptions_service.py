"""The misconceptions service's HTTP API (hub/misconceptions/service.py), on a real socket.

JupyterHub itself stands aside here: ``FakeHub`` answers for the hub as ``HubAccess`` does
(a token in the Authorization header identifies its owner with the token's scopes; a login
cookie does the same for a browser, whose requests other than page views must carry the
XSRF token). The real hub's OAuth, scopes and XSRF are exercised by the hub-marked and
browser tests. Here: who may do what, bad input answered with a clear 4xx and nothing
stored, the rate limit, one count per report id, sessions, the event stream, the headers.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest
from tornado import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hub"))

from misconceptions import service  # noqa: E402
from misconceptions.catalogue import Catalogue, Diagnosis, Part  # noqa: E402
from misconceptions.store import Store, database  # noqa: E402
from test_misconceptions_store import report  # noqa: E402

PREFIX = "/services/misconceptions/"
ACCESS = "access:services!service=misconceptions"
USERS = {
    "token-ann": {"name": "ann", "scopes": [ACCESS]},
    "token-bob": {"name": "bob", "scopes": [ACCESS]},
    "token-nobody": {"name": "nobody", "scopes": ["read:users:name!user=nobody"]},
    "token-teacher": {"name": "teacher", "scopes": [ACCESS, service.READ_SCOPE]},
}
CATALOGUE = Catalogue(
    parts=(Part("19.3", "", "softmax row backward"), Part("19.4", "c", "own gradient check")),
    diagnoses={
        ("19.3", ""): {
            "row_term_sign": Diagnosis("row_term_sign", "row term added", "chapter 19.3"),
            "modified_input": Diagnosis("modified_input", "input changed in place", "19.3"),
        },
        ("19.4", "c"): {"one_sided": Diagnosis("one_sided", "one-sided difference", "19.4")},
    },
)


class FakeHub:
    """The hub's side of HubAccess: tokens and login cookies to user models."""

    access_scopes = frozenset({ACCESS})

    class callback_handler(web.RequestHandler):
        def get(self):
            self.finish("oauth callback")

    def get_token(self, handler, in_cookie=True):
        match = re.fullmatch(r"token (\S+)", handler.request.headers.get("Authorization", ""))
        if match:
            return match[1]
        return handler.get_cookie("login") if in_cookie else None

    async def get_user(self, handler, sync=False):
        header = self.get_token(handler, in_cookie=False)
        if header:
            handler._token_authenticated = True
            return USERS.get(header)
        cookie = handler.get_cookie("login")
        if cookie is None:
            return None
        navigation = handler.request.method == "GET" and (
            handler.request.headers.get("Sec-Fetch-Mode", "navigate") == "navigate"
        )
        sent = handler.request.headers.get("X-XSRFToken") or handler.get_argument("_xsrf", "")
        if not navigation and sent != f"xsrf-{cookie}":
            return None  # as HubOAuth: no cookie login without the XSRF token
        return USERS.get(cookie)

    def check_scopes(self, required, model):
        return bool(set(required) & set(model["scopes"]))

    def check_xsrf_cookie(self, handler):
        pass

    def xsrf_token(self, handler):
        return f"xsrf-{handler.get_cookie('login')}".encode()

    def login_redirect(self, handler):
        return "/hub/api/oauth2/authorize?fake=1"


class Service:
    """The service in a thread of its own, on a free port of 127.0.0.1."""

    def __init__(self, state: Path, clock=time.time):
        self.state, self.clock = state, clock
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10), "the service did not start"

    def _run(self):
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self._start())
        self.loop.run_forever()

    async def _start(self):
        self.board = service.Board(Store(database(self.state, "test")), CATALOGUE, self.clock)
        app = service.application(self.board, FakeHub(), PREFIX, b"0" * 32)
        self.server = app.listen(0, "127.0.0.1")
        self.port = next(iter(self.server._sockets.values())).getsockname()[1]
        self.pusher = asyncio.ensure_future(self.board.push())
        self.ready.set()

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def request(self, method, path, body=None, token=None, login=None, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        sent = dict(headers or {})
        if token:
            sent["Authorization"] = f"token {token}"
        if login:
            sent["Cookie"] = f"login={login}"
        if isinstance(body, dict | list):
            body = json.dumps(body)
        connection.request(method, PREFIX + path, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response, data

    def post(self, token, *reports, dropped=0, **extra):
        body = {"reports": list(reports), "dropped": dropped, **extra}
        response, data = self.request("POST", "api/reports", body, token=token)
        return response.status, json.loads(data)

    def view(self, kind="board", session="current"):
        response, data = self.request(
            "GET",
            f"api/{kind}?session={session}",
            login="token-teacher",
            headers={"Sec-Fetch-Mode": "cors", "X-XSRFToken": "xsrf-token-teacher"},
        )
        assert response.status == 200, data
        return json.loads(data)


@pytest.fixture
def svc(tmp_path):
    running = Service(tmp_path)
    yield running
    running.stop()


def counted(svc, part="19.3"):
    parts = {p["key"]: p for p in svc.view()["parts"]}
    return {d["name"]: d["students"] for d in parts[part]["diagnoses"]}


def test_a_report_counts_for_the_tokens_owner_whatever_the_body_says(svc):
    forged = report("row_term_sign", user="bob", student="bob")
    status, answer = svc.post("token-ann", forged, user="bob", student="bob")
    assert (status, answer) == (200, {"stored": 1, "duplicates": 0, "stale": 0})
    assert counted(svc) == {"row_term_sign": 1}
    names = svc.view("names")["parts"][0]
    assert names["diagnoses"] == [["row_term_sign", ["ann"]]]


def test_a_retried_report_counts_once(svc):
    first = report("row_term_sign")
    assert svc.post("token-ann", first)[1]["stored"] == 1
    assert svc.post("token-ann", first, report())[1] == {"stored": 1, "duplicates": 1, "stale": 0}
    board = svc.view()["parts"][0]
    assert (board["attempted"], board["passing"]) == (1, 1)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),  # no token
        ({"Cookie": "login=token-ann"}, 401),  # a browser's cookie is not the kernel's token
        ({"Authorization": "token token-nobody"}, 403),  # no access to the service
        ({"Authorization": "token unknown"}, 403),
    ],
)
def test_reports_need_a_token_with_access_to_the_service(svc, headers, status):
    body = json.dumps({"reports": [report("row_term_sign")]})
    response, data = svc.request("POST", "api/reports", body, headers=headers)
    assert response.status == status, data
    assert json.loads(data)["status"] == status
    assert counted(svc) == {}


BAD_BODIES = {
    "not JSON": (b"{reports: oops", 400, "not JSON"),
    "not an object": ([1, 2], 400, "expected a JSON object"),
    "no reports": ({"reports": []}, 400, "expected 1 to 10 reports"),
    "eleven reports": ({"reports": [report() for _ in range(11)]}, 400, "1 to 10"),
    "unknown exercise": ({"reports": [report(exercise="19.9")]}, 400, "no exercise part"),
    "unknown part": ({"reports": [report(part="z")]}, 400, "no exercise part"),
    "unknown diagnosis": ({"reports": [report("mask_after_coffee")]}, 400, "no diagnosis"),
    "diagnosis of another part": ({"reports": [report("one_sided")]}, 400, "no diagnosis"),
    "passed with a diagnosis": (
        {"reports": [{**report("row_term_sign"), "passed": True}]},
        400,
        "a passing run has no diagnoses",
    ),
    "id not a UUID": ({"reports": [{**report(), "id": "1; DROP TABLE"}]}, 400, "UUID"),
    "ran_at a string": ({"reports": [{**report(), "ran_at": "now"}]}, 400, "ran_at"),
    "ran_at in the future": ({"reports": [report(ran_at=time.time() + 3600)]}, 400, "future"),
    "dropped negative": ({"reports": [report()], "dropped": -1}, 400, "dropped"),
    "oversize": (
        {"reports": [report()], "padding": "x" * service.MAX_BODY},
        413,
        "at most 65536 bytes",
    ),
}


@pytest.mark.parametrize("case", list(BAD_BODIES))
def test_bad_input_is_answered_in_words_and_nothing_of_it_is_stored(svc, case):
    body, status, words = BAD_BODIES[case]
    good = report("row_term_sign")
    if isinstance(body, dict) and body["reports"]:  # a good report riding along is not stored
        body = {**body, "reports": [good, *body["reports"]]}
    response, data = svc.request(
        "POST", "api/reports", body if isinstance(body, bytes) else json.dumps(body), "token-ann"
    )
    assert response.status == status, data
    assert words in json.loads(data)["error"]
    assert counted(svc) == {}
    # everyone else keeps being served
    assert svc.post("token-bob", report("modified_input"))[0] == 200
    assert counted(svc) == {"modified_input": 1}


def test_more_than_ten_reports_in_ten_seconds_are_refused_whole(svc):
    assert svc.post("token-ann", *[report("row_term_sign") for _ in range(8)])[0] == 200
    response, data = svc.request(
        "POST",
        "api/reports",
        json.dumps({"reports": [report("modified_input") for _ in range(3)]}),
        token="token-ann",
    )
    assert response.status == 429 and 1 <= int(response.getheader("Retry-After")) <= 10
    assert "more than 10 reports in 10 s from ann" in json.loads(data)["error"]
    assert counted(svc) == {"row_term_sign": 1}
    assert svc.post("token-bob", report("modified_input"))[0] == 200


def test_a_report_from_before_the_session_is_acknowledged_but_not_counted(svc):
    svc.view()  # opens the session now
    old = report("row_term_sign", ran_at=time.time() - 2 * service.STALE_S)
    assert svc.post("token-ann", old, report())[1] == {"stored": 1, "duplicates": 0, "stale": 1}
    assert counted(svc) == {}


PAGES = ["", "names", "api/board", "api/names", "api/sessions", "export.csv"]


@pytest.mark.parametrize("path", PAGES)
def test_only_the_instructors_scope_opens_the_board_and_the_names(svc, path):
    cors = {"Sec-Fetch-Mode": "cors", "X-XSRFToken": "xsrf-token-{}"}
    for login, status in (("token-ann", 403), ("token-teacher", 200)):
        headers = {**cors, "X-XSRFToken": f"xsrf-{login}"} if path.startswith("api") else {}
        response, data = svc.request("GET", path, login=login, headers=headers)
        assert response.status == status, (login, path, data)
    # a token of a student, in the header, is no better
    response, _ = svc.request("GET", path, token="token-ann")
    assert response.status == 403


def test_a_page_without_login_sends_the_browser_to_the_hub(svc):
    response, _ = svc.request("GET", "")
    assert response.status == 302
    assert response.getheader("Location").startswith("/hub/api/oauth2/authorize")
    response, _ = svc.request("GET", "api/board")
    assert response.status == 403


def test_cookie_requests_other_than_page_views_need_the_xsrf_token(svc):
    for path, method in (("api/board", "GET"), ("api/sessions", "POST")):
        response, _ = svc.request(
            method, path, body="{}", login="token-teacher", headers={"Sec-Fetch-Mode": "cors"}
        )
        assert response.status == 403, path
    response, _ = svc.request(
        "POST",
        "api/sessions",
        body=json.dumps({"label": "Lecture 2"}),
        login="token-teacher",
        headers={"Sec-Fetch-Mode": "cors", "X-XSRFToken": "xsrf-token-teacher"},
    )
    assert response.status == 200


def test_every_answer_forbids_framing_and_inline_script(svc):
    for path, login in (("", "token-teacher"), ("api/board", None), ("static/board.js", None)):
        response, _ = svc.request("GET", path, login=login)
        policy = response.getheader("Content-Security-Policy")
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, path
        assert "unsafe-inline" not in policy and response.getheader("X-Content-Type-Options")
    response, page = svc.request("GET", "", login="token-teacher")
    page = page.decode()
    assert re.findall(r"<script(?![^>]*\bsrc=)", page) == []  # no inline script
    assert " style=" not in page and "http" not in page.replace("http-equiv", "")
    assert 'data-xsrf="xsrf-token-teacher"' in page


def test_a_new_session_starts_from_zero_and_the_last_one_stays_viewable(svc):
    svc.post("token-ann", report("row_term_sign"))
    first = svc.view()["session"]["id"]
    response, data = svc.request(
        "POST",
        "api/sessions",
        json.dumps({"label": "Lecture 2"}),
        login="token-teacher",
        headers={"Sec-Fetch-Mode": "cors", "X-XSRFToken": "xsrf-token-teacher"},
    )
    second = json.loads(data)["session"]
    assert second["label"] == "Lecture 2" and second["id"] != first
    assert counted(svc) == {}
    earlier = svc.view(session=first)
    assert earlier["session"]["ended"] is not None
    assert earlier["parts"][0]["diagnoses"][0]["students"] == 1
    response, _ = svc.request("GET", "api/board?session=999", login="token-teacher")
    assert response.status == 404


def test_the_csv_export_has_every_diagnosis(svc):
    svc.post("token-ann", report("row_term_sign", "modified_input"))
    response, data = svc.request("GET", "export.csv", login="token-teacher")
    assert response.getheader("Content-Type").startswith("text/csv")
    lines = data.decode().splitlines()
    assert lines[0].startswith("source,exercise,part,title,attempted")
    assert sum(",19.3,," in line for line in lines) == 2


def read_event(stream) -> tuple[str, dict]:
    event, data = None, None
    while True:
        line = stream.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
        elif line == "" and event == "heartbeat":
            event = None  # every 5 s, between the views
        elif line == "" and event:
            return event, data


def test_the_event_stream_sends_the_board_and_each_change(svc):
    connection = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=10)
    query = urllib.parse.urlencode({"view": "board", "_xsrf": "xsrf-token-teacher"})
    connection.request(
        "GET",
        f"{PREFIX}api/events?{query}",
        headers={"Cookie": "login=token-teacher", "Sec-Fetch-Mode": "cors"},
    )
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    event, first = read_event(response)
    assert event == "board" and first["parts"][0]["attempted"] == 0
    sent = time.monotonic()
    svc.post("token-ann", report("row_term_sign"))
    event, second = read_event(response)
    assert time.monotonic() - sent < 5
    assert second["parts"][0]["diagnoses"][0]["name"] == "row_term_sign"
    connection.close()


def test_the_event_stream_needs_the_xsrf_token_with_a_cookie(svc):
    response, _ = svc.request(
        "GET",
        "api/events?view=board",
        login="token-teacher",
        headers={"Sec-Fetch-Mode": "cors"},
    )
    assert response.status == 403
