"""The explorers' front end, Python side: heartbeat answers, one per explorer, files shipped.

What the page does with it (kernel-gone message, aria values, presenter keys)
is tested in a real browser: tests/browser/test_browser_frontend.py.
"""

import fnmatch
import tomllib
from pathlib import Path

import ipywidgets
import matplotlib.pyplot as plt
import pytest

from attention_lib import widgets
from attention_lib.widgets import (
    BACK_CLASS,
    NEXT_CLASS,
    ExplorerFrontend,
    ExplorerSpec,
    available_explorers,
    presenter_buttons,
)

REPO = Path(__file__).resolve().parents[1]
WIDGETS_DIR = Path(widgets.__file__).resolve().parent


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _sent(frontend):
    sent = []
    frontend.send = sent.append  # what would travel to the page
    return sent


def test_each_ping_gets_a_pong_with_its_number():
    frontend = ExplorerFrontend()
    sent = _sent(frontend)
    for n in (1, 2, 9):
        frontend._answer(frontend, {"type": "ping", "n": n}, [])
    assert sent == [{"type": "pong", "n": n} for n in (1, 2, 9)]


@pytest.mark.parametrize("content", [{"type": "pong", "n": 1}, {"n": 1}, "ping", None, []])
def test_anything_but_a_ping_is_ignored(content):
    frontend = ExplorerFrontend()
    sent = _sent(frontend)
    frontend._answer(frontend, content, [])
    assert sent == []


def test_the_widget_loads_the_module_and_styles_beside_it():
    frontend = ExplorerFrontend()
    module = (WIDGETS_DIR / "_frontend.js").read_text(encoding="utf-8")
    styles = (WIDGETS_DIR / "_frontend.css").read_text(encoding="utf-8")
    assert frontend._esm == module and "export default { render }" in module
    assert frontend._css == styles and ".attn-kernel-gone" in styles
    # Nothing to store: the front end's state is its code, never data of a notebook.
    assert "attn-frontend" in frontend._dom_classes and frontend.layout.margin == "0"


def test_package_data_ships_every_front_end_file():
    """A wheel and `pip install -e .` carry only the non-Python files pyproject names."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["attention_lib.widgets"]
    shipped = sorted(p.name for p in WIDGETS_DIR.iterdir() if p.suffix in {".js", ".css"})
    assert shipped == ["_frontend.css", "_frontend.js"]
    for name in shipped:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name


@pytest.mark.parametrize("name", sorted(available_explorers()))
def test_every_registered_explorer_holds_one_front_end_first(name):
    explorer = available_explorers()[name].factory()
    children = explorer.widget.children
    assert children[0] is explorer.frontend
    assert isinstance(explorer.frontend, ExplorerFrontend)
    assert sum(isinstance(child, ExplorerFrontend) for child in children) == 1
    explorer.close()


def test_closing_an_explorer_closes_its_front_end():
    spec = ExplorerSpec(
        "echo", "echo", None, lambda x: x, lambda fig, state: None, lambda scene, state: None,
        lambda state: "", lambda values, state: "", figsize=(1, 1),
    )  # fmt: skip
    explorer = spec.explorer({"x": ipywidgets.IntSlider(0, 0, 5, continuous_update=False)})
    assert explorer.frontend.comm is not None
    explorer.close()
    assert explorer.frontend.comm is None


def test_presenter_buttons_mark_next_and_back():
    next_button, back_button = ipywidgets.Button(description="Next"), ipywidgets.Button()
    presenter_buttons(next_button, back_button)
    assert NEXT_CLASS in next_button._dom_classes and BACK_CLASS in back_button._dom_classes
    only_next = ipywidgets.Button(description="Next")
    presenter_buttons(only_next)
    assert only_next._dom_classes == (NEXT_CLASS,)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((ipywidgets.IntSlider(),), "next_button must be an ipywidgets.Button; got IntSlider"),
        ((ipywidgets.Button(), "Back"), "back_button must be an ipywidgets.Button; got str"),
        ((None,), "next_button must be an ipywidgets.Button; got NoneType"),
    ],
)
def test_presenter_buttons_refuse_what_is_not_a_button(args, message):
    with pytest.raises(TypeError, match=message):
        presenter_buttons(*args)
