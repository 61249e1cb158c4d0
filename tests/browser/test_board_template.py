"""The board template and `make board`, checked without a browser (fast suite).

The browser tests (test_browser_board.py) prove the page; these keep the files
honest where a browser run would not say why: a template that names a CDN, a
template copied from another Voila than the pinned one, and a `make board`
that drifted from what the browser tests start.
"""

from __future__ import annotations

import re

from .notebook_registry import REPO
from .voila_server import BOARD_OPTIONS

TEMPLATE = REPO / "share" / "jupyter" / "voila" / "templates" / "board"

# A resource the browser fetches by itself (not a link a reader may follow):
# src/href of link, script, img, iframe and source tags; CSS url(); JS import().
FETCHED_URL = re.compile(
    r"""(?:<(?:link|script|img|iframe|source)\b[^>]*\b(?:src|href)\s*=\s*["']?"""
    r"""|\burl\(\s*["']?|\bimport\(\s*["'])(?:https?:)?//""",
    re.IGNORECASE,
)


def test_board_template_fetches_nothing_from_another_host():
    files = sorted(p for p in TEMPLATE.rglob("*") if p.is_file())
    assert {p.name for p in files} >= {"conf.json", "index.html.j2", "page.html", "tree.html"}
    offenders = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in files
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if FETCHED_URL.search(line)
    ]
    assert not offenders, "the board template links resources off this machine:\n" + "\n".join(
        offenders
    )


def test_the_check_would_catch_voilas_own_lab_template_links():
    # The two lines of Voila's lab template that the board template drops.
    cdn = '<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/@fortawesome/x.css" />'
    assert FETCHED_URL.search(cdn)
    assert FETCHED_URL.search('const m = (await import("https://cdnjs.example/m.mjs"))')
    assert not FETCHED_URL.search('<a href="https://arxiv.org/abs/1706.03762">')


def test_template_copies_come_from_the_pinned_voila():
    """index.html.j2 and page.html are copies of Voila's own files: a new Voila
    pin means diffing them against the new version's lab templates."""
    pins = (REPO / "requirements.txt").read_text(encoding="utf-8")
    version = re.search(r"^voila==(\S+)$", pins, re.MULTILINE).group(1)
    for name in ("index.html.j2", "page.html"):
        header = (TEMPLATE / name).read_text(encoding="utf-8")[:600]
        assert f"Voila {version}'s" in header, (
            f"{name} says it copies another Voila than the pinned {version}: re-diff it"
        )


def test_make_board_runs_what_the_browser_tests_start():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^board:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    for option in BOARD_OPTIONS:
        if option.startswith("--theme="):
            assert "--theme=$(THEME)" in recipe
        else:
            assert option in recipe, f"make board lacks {option} (tests/browser/voila_server.py)"
    for needed in ("ATTENTION_STYLE=board", "JUPYTER_PATH=$(CURDIR)/share/jupyter", "127.0.0.1"):
        assert needed in recipe
