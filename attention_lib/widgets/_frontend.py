"""The explorers' small browser-side piece: what Python cannot see from the kernel.

Every :class:`~attention_lib.widgets.Explorer` holds one :class:`ExplorerFrontend`
in its ``VBox``; a hand-built explorer (a ``VBox`` with class ``attn-explorer``)
can hold one too. Its ES module (``_frontend.js``, plain JavaScript loaded by
``anywidget``: no build step, no npm) does three things in the page, each for
a reason the kernel cannot handle itself:

* **Kernel gone.** A restarted, stopped or unreachable kernel runs no Python,
  so only the page can notice and say so. The page pings over this widget's
  comm every few seconds and :meth:`ExplorerFrontend._answer` replies; a
  restarted kernel has never heard of the comm and stays silent. Where the
  widget manager exposes its kernel (JupyterLab, Voila) its status
  ("restarting", "dead") is used as well, which is faster. When the kernel is
  gone the explorer shows a plain message, dims the stale figure and switches
  its controls off; if the same kernel answers again (a lost connection
  restored) they come back on.
* **Accessible controls.** Slider handles announce the value the readout shows
  (``aria-valuetext="d_k = 256"`` rather than the position ``8``), toggle
  buttons carry ``aria-pressed`` and the selected one is clearly marked
  (``_frontend.css``), and a symbol-only button (the mask editor's ``✕``) takes
  its tooltip as its accessible name; every slider handle and unlabelled
  field is named, and the readout is a polite live region, announced when it
  changes.
* **Figure text.** The figure is a PNG the page cannot read, so the kernel
  writes what it shows now in words and numbers (:attr:`description`) and the
  page sets it as the image's ``alt``.
* **Presenter keys.** PageDown / PageUp (what a presenter's clicker sends) and
  ArrowRight / ArrowLeft press the explorer's Next / Back buttons, marked with
  :func:`presenter_buttons`, when focus is in that explorer or (a board page)
  nowhere in particular.

The widget stores only the figure's text and draws nothing while the kernel
answers; the files it loads ship as package data (``pyproject.toml``).
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import ipywidgets
import traitlets

__all__ = ["BACK_CLASS", "NEXT_CLASS", "ExplorerFrontend", "presenter_buttons"]

_HERE = Path(__file__).resolve().parent

#: CSS class of the button that PageDown / ArrowRight press.
NEXT_CLASS = "attn-next"
#: CSS class of the button that PageUp / ArrowLeft press.
BACK_CLASS = "attn-back"


class ExplorerFrontend(anywidget.AnyWidget):
    """The page-side helper of an explorer: kernel-gone message, aria, figure text, presenter keys.

    Put one inside the explorer's ``VBox`` (class ``attn-explorer``); the
    :class:`~attention_lib.widgets.Explorer` shell does this for every explorer.
    In Python it only answers the page's heartbeat.

    Examples
    --------
    >>> frontend = ExplorerFrontend()
    >>> "attn-frontend" in frontend._dom_classes
    True
    >>> sent = []
    >>> frontend.send = sent.append  # what would go to the page
    >>> frontend._answer(frontend, {"type": "ping", "n": 7}, [])
    >>> sent
    [{'type': 'pong', 'n': 7}]
    """

    _esm = _HERE / "_frontend.js"
    _css = _HERE / "_frontend.css"
    #: What the explorer's figure shows now, in words: the image's ``alt``.
    description = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_class("attn-frontend")
        self.layout.margin = "0"  # takes no room while there is nothing to say
        self.on_msg(self._answer)

    def _answer(self, _widget, content, _buffers):
        """Reply to the page's heartbeat; ignore anything else (a page never sends it)."""
        if isinstance(content, dict) and content.get("type") == "ping":
            self.send({"type": "pong", "n": content.get("n")})


def presenter_buttons(next_button, back_button=None):
    """Let a presenter's clicker press these buttons (PageDown / PageUp, or the arrows).

    Marks the buttons with :data:`NEXT_CLASS` and :data:`BACK_CLASS`. They
    must be inside an explorer ``VBox`` (class ``attn-explorer``) that holds
    an :class:`ExplorerFrontend`. The keys are taken when focus is inside that
    explorer (after the presenter clicked one of its buttons, say) or on
    nothing in particular (a Voila board page); elsewhere in JupyterLab they
    keep their usual meaning, so PageDown still scrolls a notebook.

    Parameters
    ----------
    next_button : ipywidgets.Button
    back_button : ipywidgets.Button, optional

    Returns
    -------
    None

    Examples
    --------
    >>> import ipywidgets
    >>> next_button, back_button = ipywidgets.Button(description="Next"), ipywidgets.Button()
    >>> presenter_buttons(next_button, back_button)
    >>> next_button._dom_classes, back_button._dom_classes
    (('attn-next',), ('attn-back',))
    """
    for name, button, css in (
        ("next_button", next_button, NEXT_CLASS),
        ("back_button", back_button, BACK_CLASS),
    ):
        if button is None and name == "back_button":
            continue
        if not isinstance(button, ipywidgets.Button):
            raise TypeError(f"{name} must be an ipywidgets.Button; got {type(button).__name__}.")
        button.add_class(css)
