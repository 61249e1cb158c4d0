"""A private Voila server with the board template, as ``make board`` starts it.

Same isolation as the JupyterLab server (lab_server.py): 127.0.0.1 on a free
port, Jupyter folders of its own, a copy of the notebooks, stopped with its
kernels whatever happens. What differs is what ``make board`` adds: the
repository's ``share/jupyter`` on JUPYTER_PATH (where the board template
lives), ``ATTENTION_STYLE=board`` for the explorers, and the same Voila
options. Any page can be asked for in the dark theme with ``?theme=dark``.
"""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

from .lab_server import LocalJupyterServer

# The options of `make board` (Makefile) that matter to what the browser sees.
BOARD_OPTIONS = [
    "--template=board",
    "--theme=light",
    "--classic_tree=True",
    "--show_tracebacks=True",
    "--VoilaConfiguration.allow_theme_override=YES",
    "--MappingKernelManager.cull_idle_timeout=600",
    "--MappingKernelManager.cull_interval=60",
]


class VoilaServer(LocalJupyterServer):
    """``voila <root>`` with the board template, on 127.0.0.1."""

    name = "voila"

    def __init__(
        self,
        workdir: Path,
        sources: dict[str, Path],
        share: Path,
        pythonpath: Path | None = None,
    ):
        """share: the repository's share/jupyter folder (holds voila/templates/board)."""
        super().__init__(workdir, sources, pythonpath)
        # Only the repository's templates and the venv's own share/jupyter are
        # seen: no user or system template can stand in for the board one.
        self.env["JUPYTER_PATH"] = str(share)
        self.env["ATTENTION_STYLE"] = "board"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "voila",
            str(self.root),
            "--no-browser",
            "--Voila.ip=127.0.0.1",
            f"--port={self.port}",
            "--Voila.port_retries=0",  # fail rather than move to another port
            *BOARD_OPTIONS,
        ]

    def probe(self) -> None:
        with urllib.request.urlopen(self.base_url + "/", timeout=2) as resp:
            resp.read()

    def render_url(self, notebook: str, theme: str = "light") -> str:
        """The board page of a notebook (path relative to the server root)."""
        return f"{self.base_url}/voila/render/{notebook}?theme={theme}"
