"""The misconceptions board in headless Chromium, on the real class hub.

The instructor logs in through the hub's form, follows the home page's link to the board
(the hub's OAuth); students run wrong answers in their own kernels; the bars appear with the
right counts and words, without a reload. A student's browser gets 403 on the board and on
the names; a report with a forged user name counts for the token's owner (the names window
says so); the board's pages request nothing off 127.0.0.1 and log no error; at 1920x1080 and
1280x720, light and dark, every part is on one screen with no text under 14 px
(screenshots in artifacts/browser/); axe-core finds no serious or critical violation.

Needs the hub's environments (make hub-setup) besides Chromium: skips without them unless
ATTENTION_REQUIRE_HUB=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading

import pytest

from attention_lib.exercises import DIAGNOSES

from .browser_harness import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    NetworkGuard,
    accessibility_violations,
    describe_violations,
    guarded,
    launch_chromium,
)
from .conftest import ARTIFACTS, require_browser
from .notebook_registry import REPO

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

SCREENS = [{"width": 1920, "height": 1080}, {"width": 1280, "height": 720}]
MIN_TEXT_PX = 14.0


sys.path.insert(0, str(REPO / "benchmarks"))
import bench_class as bench  # noqa: E402

board = bench.class_board

#: Every visible text on the page: the smallest font size, the texts under the limit, and
#: whether the page scrolls.
TEXT_JS = """(limit) => {
  const small = [];
  let smallest = Infinity;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const element = node.parentElement;
    if (!text || !element.getClientRects().length) continue;
    const size = parseFloat(getComputedStyle(element).fontSize);
    smallest = Math.min(smallest, size);
    if (size < limit) small.push(`${text.slice(0, 40)} (${size} px)`);
  }
  const root = document.documentElement;
  const scrolls = root.scrollHeight > innerHeight || root.scrollWidth > innerWidth;
  return {smallest, small, scrolls, height: root.scrollHeight};
}"""


class Students:
    """The simulated students (bench_class's protocol-level student), on a loop of their own
    beside Playwright's."""

    def __init__(self, hub, names):
        self.hub = hub
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        password = hub.env["ATTENTION_HUB_PASSWORD"]
        self.students = {name: bench.Student(hub, name, password) for name in names}
        self.kernels = {}
        for student in self.students.values():
            self.call(self._arrive(student))

    def call(self, coroutine, timeout=300):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def _arrive(self, student):
        await student.login()
        await student.start_server()
        made = await bench.fetch(
            "POST", f"{student.base}api/kernels", headers=student.auth, body={"name": "python3"}
        )
        kernel_id = json.loads(made.body)["id"]
        student.kernel = await bench.Kernel.connect(
            student.base, kernel_id, student.token, drops=[]
        )
        _, error = await student.kernel.execute(board.PRELUDE)
        assert error is None, error

    def run(self, name, call):
        outputs, error = self.call(self.students[name].kernel.execute(board.cell(call)))
        assert error is None, error
        return board.printed(outputs)

    def token(self, name):
        return self.students[name].token

    def close(self):
        async def close_pages():  # their WebSockets belong to this loop
            for student in self.students.values():
                student.close_page()

        self.call(close_pages())
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def class_hub(tmp_path_factory):
    require_browser()
    why = bench.missing_setup()
    if why:
        if os.environ.get("ATTENTION_REQUIRE_HUB") == "1":
            pytest.fail(f"the class hub is mandatory here: {why}")
        pytest.skip(f"the class hub is not set up: {why}")
    hub = bench.Hub(tmp_path_factory.mktemp("hub"), cull_timeout=3600, activity_interval=300)
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()


def log_in(page, hub, name, password):
    """The hub's login form, landing on the home page (not on a server being started)."""
    page.goto(f"{hub.url}/hub/login?next=%2Fhub%2Fhome")
    page.fill("#username_input", name)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_url("**/hub/**", wait_until="load")


def bar(page, part, diagnosis):
    return page.locator(f'.part[data-part="{part}"] .bar[data-diagnosis="{diagnosis}"]')


def wait_for_count(page, part, diagnosis, students, timeout=60_000):
    page.wait_for_function(
        """([part, name, n]) => {
            const bar = document.querySelector(
                `.part[data-part="${part}"] .bar[data-diagnosis="${name}"]`);
            return bar && bar.dataset.students === String(n);
        }""",
        arg=[part, diagnosis, students],
        timeout=timeout,
    )


def check_screens(page, theme):
    problems = []
    for size in SCREENS:
        page.set_viewport_size(size)
        page.wait_for_timeout(300)  # the page fits its type on resize
        measured = page.evaluate(TEXT_JS, MIN_TEXT_PX)
        screen = f"{size['width']}x{size['height']}"
        if measured["scrolls"]:
            problems.append(f"{theme} {screen}: the page scrolls ({measured['height']} px high)")
        problems += [
            f"{theme} {screen}: text under {MIN_TEXT_PX} px: {t}" for t in measured["small"]
        ]
        page.screenshot(path=str(ARTIFACTS / f"misconceptions-board-{theme}-{screen}.png"))
    return problems


def test_the_instructor_sees_the_class_mistakes_live(
    class_hub, tmp_path_factory, playwright_session
):
    hub, playwright = class_hub, playwright_session
    row, masked = board.key("check_exercise_19_3"), board.key("check_exercise_19_4")
    students = Students(hub, ["ann", "bob", "cai"])
    guard = NetworkGuard()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        instructor = launch_chromium(playwright, tmp_path_factory.mktemp("instructor"))
        guard.attach_context(instructor)
        with guarded(guard):
            page = instructor.new_page()
            guard.attach_page(page)
            log_in(page, hub, "instructor", hub.env["ATTENTION_HUB_ADMIN_PASSWORD"])
            page.click("#misconceptions-board")
            page.wait_for_selector(f'.part[data-part="{masked}"]')
            page.wait_for_selector('#board-status[data-state="live"]')
            page.evaluate("() => { window.loadedOnce = true; }")

            students.run("ann", "check_exercise_19_4(*pair(m.MaskAfterSoftmax))")
            students.run("bob", "check_exercise_19_4(*pair(m.MaskAfterSoftmax))")
            students.run("cai", "check_exercise_19_4(*pair(m.ScaledBySqrtDModel))")
            students.run("ann", "check_exercise_19_3(m.row_backward_in_place)")
            wait_for_count(page, masked, "mask_after_softmax", 2)
            wait_for_count(page, masked, "wrong_scale", 1)
            wait_for_count(page, row, "modified_input", 1)
            assert page.evaluate("() => window.loadedOnce === true"), "the page reloaded"
            mask = bar(page, masked, "mask_after_softmax")
            title = next(d.title for d in DIAGNOSES if d.name == "mask_after_softmax")
            assert mask.locator(".bar-title").inner_text() == title
            assert "mask_after_softmax" in mask.locator(".bar-meta").inner_text()
            numbers = page.locator(f'.part[data-part="{masked}"] .part-numbers').inner_text()
            assert numbers.split()[:5] == ["3", "tried", "0", "pass", "0"], numbers
            assert "ann" not in page.content() and "bob" not in page.content()

            # a student fixes the mistake: the bar follows, still without a reload
            students.run("bob", "check_exercise_19_4(m.loop_forward, m.loop_backward)")
            wait_for_count(page, masked, "mask_after_softmax", 1)

            # a forged user name counts for the token's owner
            students.call(board.post_forged(bench.fetch, hub, students.token("bob"), "ann"))
            wait_for_count(page, row, "row_term_sign", 1)
            names = instructor.new_page()
            guard.attach_page(names)
            names.goto(f"{hub.url}{board.SERVICE}names")
            names.wait_for_selector(f'section[data-part="{row}"] dd')
            listed = names.locator(f'section[data-part="{row}"]').inner_text()
            assert "row_term_sign (1)\nbob" in listed and "modified_input (1)\nann" in listed

            problems = check_screens(page, "light")
            page.click("#board-theme")
            assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
            problems += check_screens(page, "dark")
            assert not problems, "\n".join(problems)
        instructor.close()

        # axe-core goes into the page as a script of its own, which the board's
        # Content-Security-Policy refuses: this one context lets it in
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        checked = browser.new_context(bypass_csp=True, viewport=SCREENS[0]).new_page()
        log_in(checked, hub, "instructor", hub.env["ATTENTION_HUB_ADMIN_PASSWORD"])
        checked.goto(f"{hub.url}{board.SERVICE}")
        checked.wait_for_selector(".bar")
        for theme in ("light", "dark"):
            checked.evaluate(
                "(theme) => { document.documentElement.dataset.theme = theme; }", theme
            )
            violations = accessibility_violations(checked, "body")
            assert not violations, f"{theme}:\n{describe_violations(violations)}"
        browser.close()

        student = launch_chromium(playwright, tmp_path_factory.mktemp("student"))
        page = student.new_page()
        log_in(page, hub, "ann", hub.env["ATTENTION_HUB_PASSWORD"])
        assert page.locator("#misconceptions-board").count() == 0
        for path in ("", "names", "api/board", "export.csv"):
            response = page.goto(f"{hub.url}{board.SERVICE}{path}")
            assert response.status == 403, (path, response.status)
        student.close()
    finally:
        students.close()
