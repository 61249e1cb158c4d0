"""The misconceptions board: a JupyterHub service that counts the class's named mistakes live.

Started and restarted by the hub (hub/jupyterhub_config.py), at ``/services/misconceptions/``:

* ``api/reports`` (POST): the students' kernels report each checker run here (the report
  sink, hub/misconceptions/sink). Authenticated by the kernel's server token alone, which
  must hold ``access:services!service=misconceptions``; the student is that token's owner,
  whatever the body says. A body that is not the expected JSON, names an unknown exercise,
  part or diagnosis, is larger than :data:`MAX_BODY` or brings a student past
  :data:`RATE_LIMIT` reports in :data:`RATE_WINDOW_S` seconds gets a clear 4xx, and nothing
  of it is stored.
* the board (``./``), the names window (``names``), the counts as JSON (``api/board``,
  ``api/names``), their live stream (``api/events``, server-sent events), the sessions
  (``api/sessions``) and the CSV export (``export.csv``): for a browser logged in through
  the hub (``HubOAuth``) whose token holds :data:`READ_SCOPE`; the instructor's role grants
  it, a student's does not. Cookie-authenticated requests other than page views need the
  XSRF token (the page sends it, in the event stream's URL too).

Every response forbids framing and inline script (``Content-Security-Policy``); the page
loads only this service's own files. Standard library, tornado and jupyterhub: it runs in
the students' environment (make singleuser), whose attention_lib provides the catalogue.
"""

from __future__ import annotations

import asyncio
import collections
import io
import json
import math
import os
import secrets
import sys
import time
import uuid
from pathlib import Path

from tornado import web
from tornado.httpserver import HTTPServer
from tornado.iostream import StreamClosedError

if __package__ in (None, ""):  # started by the hub as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "misconceptions"

from . import catalogue as catalogue_module
from . import counts
from .store import DEFAULT_COURSE, Store, database, write_csv

HERE = Path(__file__).resolve().parent
READ_SCOPE = "custom:misconceptions:read"
MAX_BODY = 64 * 1024
MAX_BATCH = 10
MAX_DIAGNOSES = 32
RATE_LIMIT = 10
RATE_WINDOW_S = 10.0
#: A report whose kernel ran it this long before the open session started belongs to an
#: earlier lecture (an outbox that waited over a weekend): acknowledged, not counted.
STALE_S = 300.0
#: The kernel's clock may run this far ahead of the service's.
FUTURE_S = 300.0
PUSH_EVERY_S = 0.25  # coalesce a burst's reports into one update per open page
SLIDE_EVERY_S = 30.0  # "what changed in the last minutes" moves on even without reports
#: An open page hears from the service at least this often; after three silences it reconnects
#: (a proxy can keep a page's stream open after the service behind it died).
HEARTBEAT_S = 5.0
PRUNE_EVERY_S = 86400.0

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class BadReport(ValueError):
    """What is wrong with a body of reports, in words for the 400 answer."""


def validate(body: bytes, catalogue, now: float) -> tuple[list[dict], int]:
    """The checked reports of a request body and its ``dropped`` count, or BadReport."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadReport(f"the body is not JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("reports"), list):
        raise BadReport('expected a JSON object {"reports": [...], "dropped": n}')
    items, dropped = data["reports"], data.get("dropped", 0)
    if not 1 <= len(items) <= MAX_BATCH:
        raise BadReport(f"expected 1 to {MAX_BATCH} reports, got {len(items)}")
    if not _whole(dropped) or not 0 <= dropped <= 10**6:
        raise BadReport(f"dropped must be a whole number from 0, got {dropped!r}")
    return [_report(item, i, catalogue, now) for i, item in enumerate(items)], dropped


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _report(item, index: int, catalogue, now: float) -> dict:
    where = f"report {index}"
    if not isinstance(item, dict):
        raise BadReport(f"{where} is not an object")
    try:
        report_id = str(uuid.UUID(str(item.get("id"))))
    except ValueError:
        raise BadReport(f"{where}: id must be a UUID, got {item.get('id')!r}") from None
    exercise, part = item.get("exercise"), item.get("part", "")
    if not isinstance(exercise, str) or not isinstance(part, str):
        raise BadReport(f"{where}: exercise and part must be strings")
    if catalogue.part(exercise, part) is None:
        known = ", ".join(p.key for p in catalogue.parts)
        raise BadReport(f"{where}: no exercise part {exercise!r} {part!r}; known: {known}")
    passed, names = item.get("passed"), item.get("diagnoses")
    if not isinstance(passed, bool):
        raise BadReport(f"{where}: passed must be true or false, got {passed!r}")
    if not isinstance(names, list) or len(names) > MAX_DIAGNOSES:
        raise BadReport(f"{where}: diagnoses must be a list of at most {MAX_DIAGNOSES} names")
    if passed and names:
        raise BadReport(f"{where}: a passing run has no diagnoses, got {names!r}")
    for name in names:
        if catalogue.diagnosis(exercise, part, name) is None:
            raise BadReport(f"{where}: {exercise} {part} has no diagnosis {name!r}")
    ran_at = item.get("ran_at")
    if isinstance(ran_at, bool) or not isinstance(ran_at, int | float) or not math.isfinite(ran_at):
        raise BadReport(f"{where}: ran_at must be a time in seconds, got {ran_at!r}")
    if ran_at > now + FUTURE_S:
        raise BadReport(f"{where}: ran_at lies {ran_at - now:.0f} s in the future")
    return {
        "id": report_id,
        "exercise": exercise,
        "part": part,
        "passed": passed,
        "diagnoses": list(dict.fromkeys(names)),
        "ran_at": float(ran_at),
    }


class Board:
    """The store, the catalogue, the students' recent report times and the open pages."""

    def __init__(self, store: Store, catalogue, clock=time.time):
        self.store, self.catalogue, self.clock = store, catalogue, clock
        self.recent: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.streams: set[EventsHandler] = set()
        self.dirty = asyncio.Event()
        self.version = store.version()

    def parts(self):
        return [(p.exercise, p.part, p.title) for p in self.catalogue.parts]

    def describe(self, exercise: str, part: str, name: str):
        found = self.catalogue.diagnosis(exercise, part, name)
        if found is None:  # stored under an earlier catalogue
            return name.replace("_", " "), "", False
        return found.title, found.hint, found.generic

    def session_id(self, requested) -> int:
        if requested in (None, "", "current"):
            return self.store.current(self.clock())
        try:
            session = self.store.session(int(requested))
        except ValueError:
            session = None
        if session is None:
            raise web.HTTPError(404, f"no session {requested!r}")
        return session["id"]

    def view(self, kind: str, session_id: int, top=counts.TOP) -> dict:
        session = self.store.session(session_id)
        reports = self.store.reports(session_id)
        if kind == "names":
            body = {"parts": counts.names(reports, self.parts())}
        else:
            now = self.clock()
            body = {
                "parts": counts.board(reports, self.parts(), self.describe, now, top=top),
                "dropped": self.store.dropped(session_id),
                "change_window_s": counts.CHANGE_WINDOW_S,
            }
        sessions = self.store.sessions()
        return {
            "session": session,
            "current": sessions[0]["id"] if sessions else None,
            "sessions": [{k: s[k] for k in ("id", "label", "started", "ended")} for s in sessions],
            "catalogue_complete": self.catalogue.strict,
            **body,
        }

    def admit(self, student: str, count: int) -> float:
        """0 when ``student`` may send ``count`` more reports now, else seconds to wait."""
        now = time.monotonic()
        times = self.recent[student]
        while times and times[0] <= now - RATE_WINDOW_S:
            times.popleft()
        if len(times) + count > RATE_LIMIT:
            return max(1.0, times[0] + RATE_WINDOW_S - now) if times else RATE_WINDOW_S
        times.extend([now] * count)
        return 0.0

    async def push(self) -> None:
        """Send each open page its view whenever something changed (or time moved the
        change window), at most every PUSH_EVERY_S seconds."""
        last_slide = time.monotonic()
        while True:
            try:
                await asyncio.wait_for(self.dirty.wait(), timeout=SLIDE_EVERY_S)
            except TimeoutError:
                pass
            if time.monotonic() - last_slide >= SLIDE_EVERY_S:
                last_slide = time.monotonic()
                self.dirty.set()
            if self.dirty.is_set():
                self.dirty.clear()
                await self.broadcast()
            await asyncio.sleep(PUSH_EVERY_S)

    async def broadcast(self) -> None:
        views: dict[tuple[str, int], str] = {}
        for stream in list(self.streams):
            session = self.store.current(self.clock()) if stream.follow else stream.session
            key = (stream.kind, session)
            if key not in views:
                views[key] = json.dumps(self.view(stream.kind, session))
            await stream.send(stream.kind, views[key])

    async def watch_store(self) -> None:
        """Another process changed the data (make misconceptions-wipe): show it."""
        while True:
            await asyncio.sleep(2.0)
            version = self.store.version()
            if version != self.version:
                self.version = version
                self.dirty.set()

    async def prune(self) -> None:
        while True:
            if self.store.prune(self.clock()):
                self.dirty.set()
            await asyncio.sleep(PRUNE_EVERY_S)


def secure(handler: web.RequestHandler) -> None:
    handler.set_header("Content-Security-Policy", CSP)
    handler.set_header("X-Content-Type-Options", "nosniff")
    handler.set_header("Referrer-Policy", "no-referrer")


class StaticHandler(web.StaticFileHandler):
    def set_default_headers(self) -> None:
        secure(self)


class Handler(web.RequestHandler):
    """Common headers, and the hub user, who must hold one of the ``required`` scopes."""

    required = frozenset({READ_SCOPE})
    page = False  # a page view: redirect to the hub's login instead of 403

    @property
    def board(self) -> Board:
        return self.settings["board"]

    @property
    def hub_auth(self):
        return self.settings["hub_auth"]

    def set_default_headers(self) -> None:
        secure(self)
        self.set_header("Cache-Control", "no-store")

    def check_xsrf_cookie(self) -> None:
        self.hub_auth.check_xsrf_cookie(self)

    @property
    def xsrf_token(self):
        return self.hub_auth.xsrf_token(self)

    async def prepare(self) -> None:
        model = await self.hub_auth.get_user(self, sync=False)
        if model is None:
            if self.page and self.request.method == "GET":
                self.redirect(self.hub_auth.login_redirect(self))
                return
            raise web.HTTPError(403, "log in through the hub first")
        if not self.hub_auth.check_scopes(self.required, model):
            held = " or ".join(sorted(self.required))
            raise web.HTTPError(403, f"{model.get('name')} does not hold {held}")
        self.current_user = model

    def write_error(self, status_code: int, **kwargs) -> None:
        reason = self._reason
        error = kwargs.get("exc_info", (None, None))[1]
        if isinstance(error, web.HTTPError) and error.log_message:
            reason = error.log_message % error.args if error.args else error.log_message
        if getattr(self, "retry_after", None):
            self.set_header("Retry-After", str(self.retry_after))
        self.set_header("Content-Type", "application/json")
        self.finish({"error": reason, "status": status_code})


class ReportsHandler(Handler):
    """POST api/reports: a student's kernel hands over up to MAX_BATCH reports."""

    @property
    def required(self):
        return self.hub_auth.access_scopes  # access:services!service=misconceptions

    async def prepare(self) -> None:
        if self.hub_auth.get_token(self, in_cookie=False) is None:
            raise web.HTTPError(401, "reports come with the kernel's token (Authorization header)")
        await super().prepare()

    async def post(self) -> None:
        if len(self.request.body) > MAX_BODY:
            raise web.HTTPError(413, f"a body of reports is at most {MAX_BODY} bytes")
        board, student = self.board, self.current_user["name"]
        try:
            reports, dropped = validate(self.request.body, board.catalogue, board.clock())
        except BadReport as error:
            raise web.HTTPError(400, str(error)) from None
        wait = board.admit(student, len(reports))
        if wait:
            self.retry_after = math.ceil(wait)  # write_error sends it: send_error clears headers
            raise web.HTTPError(
                429, f"more than {RATE_LIMIT} reports in {RATE_WINDOW_S:.0f} s from {student}"
            )
        now = board.clock()
        session = board.store.session(board.store.current(now))
        fresh = [r for r in reports if r["ran_at"] >= session["started"] - STALE_S]
        stored, duplicates = board.store.add(student, fresh, dropped, now)
        if stored or dropped:
            board.dirty.set()
        self.finish(
            {"stored": stored, "duplicates": duplicates, "stale": len(reports) - len(fresh)}
        )


class PageHandler(Handler):
    """The board (board.html) or the names window (names.html): the page's script fills it."""

    page = True

    def initialize(self, template: str) -> None:
        self.template = template

    def get(self) -> None:
        session = self.get_argument("session", "current")
        self.board.session_id(session)  # 404 for an unknown one
        token = self.xsrf_token
        self.render(
            self.template,
            session=session,
            xsrf=token.decode() if isinstance(token, bytes) else token,
            theme=self.get_argument("theme", ""),
        )


class ViewHandler(Handler):
    """GET api/board or api/names: the same JSON the event stream sends (the poll fallback)."""

    def get(self, kind: str) -> None:
        session = self.board.session_id(self.get_argument("session", "current"))
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(self.board.view(kind, session)))


class SessionsHandler(Handler):
    def get(self) -> None:
        self.finish({"sessions": self.board.store.sessions()})

    def post(self) -> None:
        try:
            label = json.loads(self.request.body or b"{}").get("label", "")
        except (ValueError, AttributeError):
            raise web.HTTPError(400, 'expected {"label": "..."}') from None
        if not isinstance(label, str):
            raise web.HTTPError(400, "the label must be a string")
        session = self.board.store.start(self.board.clock(), label)
        self.board.dirty.set()
        self.finish({"session": self.board.store.session(session)})


class ExportHandler(Handler):
    def get(self) -> None:
        board = self.board
        session_id = board.session_id(self.get_argument("session", "current"))
        view = board.view("board", session_id, top=None)
        out = io.StringIO()
        source = f"session {session_id}: {view['session']['label']}"
        write_csv([{**part, "source": source} for part in view["parts"]], out)
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        name = f"misconceptions-session-{session_id}.csv"
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        self.finish(out.getvalue())


class EventsHandler(Handler):
    """GET api/events?view=board|names&session=...: server-sent events, one full view each
    time it changes (a page that reconnects is whole again at once)."""

    async def get(self) -> None:
        kind = self.get_argument("view", "board")
        if kind not in ("board", "names"):
            raise web.HTTPError(400, "view is board or names")
        requested = self.get_argument("session", "current")
        self.kind, self.follow = kind, requested in ("", "current")
        self.session = self.board.session_id(requested)
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("X-Accel-Buffering", "no")
        self.closed = asyncio.Event()
        await self.send("retry", None)
        await self.send(kind, json.dumps(self.board.view(kind, self.session)))
        self.board.streams.add(self)
        try:
            while not self.closed.is_set():
                try:
                    await asyncio.wait_for(self.closed.wait(), timeout=HEARTBEAT_S)
                except TimeoutError:
                    await self.send("heartbeat", "{}")
        finally:
            self.board.streams.discard(self)

    async def send(self, event: str, data: str | None) -> None:
        if event == "retry":
            self.write("retry: 2000\n\n")  # reconnect after 2 s
        else:
            self.write(f"event: {event}\ndata: {data}\n\n")
        try:
            await self.flush()
        except StreamClosedError:
            self.closed.set()

    def on_connection_close(self) -> None:
        self.closed.set()


def application(board: Board, hub_auth, prefix: str, cookie_secret: bytes) -> web.Application:
    return web.Application(
        [
            (prefix, PageHandler, {"template": "board.html"}),
            (prefix + "names", PageHandler, {"template": "names.html"}),
            (prefix + "oauth_callback", hub_auth.callback_handler),
            (prefix + "api/reports", ReportsHandler),
            (prefix + r"api/(board|names)", ViewHandler),
            (prefix + "api/sessions", SessionsHandler),
            (prefix + "api/events", EventsHandler),
            (prefix + "export.csv", ExportHandler),
        ],
        board=board,
        hub_auth=hub_auth,
        cookie_secret=cookie_secret,
        template_path=str(HERE / "templates"),
        static_path=str(HERE / "static"),
        static_url_prefix=prefix + "static/",
        static_handler_class=StaticHandler,
        xsrf_cookies=False,  # HubOAuth checks XSRF for cookie-authenticated requests
    )


class HubAccess:
    """JupyterHub's ``HubOAuth`` as the handlers use it; tests put a stand-in here."""

    def __init__(self):
        from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler

        # the one instance: the OAuth callback handler keeps its login states there
        self.auth = HubOAuth.instance(cache_max_age=60)
        self.access_scopes = self.auth.access_scopes
        self.callback_handler = HubOAuthCallbackHandler

    def get_token(self, handler, in_cookie=True):
        return self.auth.get_token(handler, in_cookie=in_cookie) or None

    async def get_user(self, handler, sync=False):
        return await self.auth.get_user(handler, sync=False)

    def check_scopes(self, required, model) -> bool:
        return bool(self.auth.check_scopes(required, model))

    def check_xsrf_cookie(self, handler) -> None:
        self.auth.check_xsrf_cookie(handler)

    def xsrf_token(self, handler):
        from jupyterhub._xsrf_utils import get_xsrf_token

        return get_xsrf_token(handler, cookie_path=self.auth.base_url)

    def login_redirect(self, handler) -> str:
        return _login_url(self.auth, handler)


def _login_url(auth, handler) -> str:
    """The hub's OAuth authorize URL with a fresh state (and PKCE), as HubOAuthenticated
    builds it."""
    from tornado.httputil import url_concat

    verifier, challenge, method = auth.generate_pkce_code_challenge()
    state = auth.set_state_cookie(handler, next_url=handler.request.uri, code_verifier=verifier)
    return url_concat(
        auth.login_url,
        {"state": state, "code_challenge": challenge, "code_challenge_method": method},
    )


def cookie_secret(path: Path) -> bytes:
    """The secret that signs the board's login cookie, kept across restarts (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


async def serve(state: Path, course: str, url: str, prefix: str) -> None:
    store = Store(database(state, course))
    board = Board(store, catalogue_module.load())
    secret_file = state / "misconceptions" / "cookie_secret"
    hub_auth = HubAccess()
    app = application(board, hub_auth, prefix, cookie_secret(secret_file))
    address = url.split("://", 1)[1].split("/", 1)[0]
    host, port = address.rsplit(":", 1)
    HTTPServer(app, max_body_size=1024 * 1024, xheaders=True).listen(int(port), host)
    await asyncio.gather(board.push(), board.watch_store(), board.prune())


def main() -> None:
    state = Path(os.environ["ATTENTION_HUB_STATE"])
    course = os.environ.get("ATTENTION_COURSE", DEFAULT_COURSE)
    url = os.environ["JUPYTERHUB_SERVICE_URL"]
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/misconceptions/")
    asyncio.run(serve(state, course, url, prefix))


if __name__ == "__main__":
    main()
