"""Private Jupyter servers for the browser tests: JupyterLab, and Voila in
voila_server.py, both built on ``LocalJupyterServer`` here.

One server per test session: 127.0.0.1 on a free port, config / data /
settings / workspaces / runtime folders of its own inside a temporary
directory (so neither the user's Jupyter setup nor a previous run can change
what the browser sees), and a server root that holds *copies* of the
notebooks, so the browser can never modify the repository's stored notebooks.
JupyterLab is started as ``make lab`` starts it, with the series' settings
(``etc/jupyter``; the command line is read from ``make -n lab``), plus a port and
a generated token; a record of every host its process tries to reach is kept
(``server_audit/``). ``stop()`` terminates the whole process group (server and
kernels) and kills it if it does not go within a few seconds.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from .notebook_registry import REPO

# Imported by the JupyterLab server at start-up: it records what the server reaches.
SERVER_AUDIT = Path(__file__).resolve().parent / "server_audit"
FIGURE_TEXT = REPO / "tests" / "figure_text.py"
# An IPython start-up file of the servers' kernels: every PNG they make is noted with
# its smallest text (figure_text.note_png_text), so the page's scale of it gives the
# text as shown. It leaves no name behind in the notebook's namespace.
NOTE_PNG_TEXT = f"""
def _note_png_text():
    import importlib.util, os
    spec = importlib.util.spec_from_file_location("_figure_text", {str(FIGURE_TEXT)!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.note_png_text(os.environ["ATTENTION_FIGURE_TEXT_LOG"])
_note_png_text()
del _note_png_text
"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent():
    """On Linux, a preexec_fn that has the kernel send the server SIGTERM when
    the test process dies without teardown (SIGKILL, a crashed interpreter):
    no JupyterLab outlives its tests. Elsewhere, None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return preexec


class LocalJupyterServer:
    """A Jupyter server process on 127.0.0.1, started and stopped by the tests.

    Subclasses say what to run (``command``) and how to tell that it serves
    (``probe``); ``name`` names its log and its error messages.
    """

    name = "server"

    def __init__(self, workdir: Path, sources: dict[str, Path], pythonpath: Path | None = None):
        """
        workdir: an empty temporary directory this server may fill.
        sources: folder name inside the server root -> folder to copy there.
        pythonpath: prepended to PYTHONPATH for the server and its kernels
            (the checkout, so notebooks import this attention_lib).
        """
        self.workdir = Path(workdir)
        self.root = self.workdir / "root"
        self.log_path = self.workdir / f"{self.name.replace(' ', '-')}.log"
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen | None = None
        self._log = None
        self._prepare(sources, pythonpath)

    def _prepare(self, sources: dict[str, Path], pythonpath: Path | None) -> None:
        self.root.mkdir(parents=True)
        for name, src in sources.items():
            if Path(src).is_dir():
                shutil.copytree(
                    src,
                    self.root / name,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
                )
        dirs = {}
        for var, sub in [
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"),
            ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
            ("IPYTHONDIR", "ipython"),
            ("MPLCONFIGDIR", "matplotlib"),
        ]:
            path = self.workdir / sub
            path.mkdir()
            dirs[var] = str(path)
        startup = self.workdir / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True)
        (startup / "00-note-png-text.py").write_text(NOTE_PNG_TEXT, encoding="utf-8")
        self.figure_text_log = self.workdir / "figure-text.jsonl"
        dirs["ATTENTION_FIGURE_TEXT_LOG"] = str(self.figure_text_log)
        env = dict(os.environ, **dirs)
        # The inline backend is what students get; a test runner's MPLBACKEND=Agg
        # would make plt.show() draw nothing in the kernel.
        env.pop("MPLBACKEND", None)
        env.pop("JUPYTER_PATH", None)
        env.pop("JUPYTER_CONFIG_PATH", None)
        env.pop("JUPYTER_TOKEN", None)
        env["JUPYTER_PLATFORM_DIRS"] = "1"
        if pythonpath is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in [str(pythonpath), os.environ.get("PYTHONPATH", "")] if p
            )
        self.env = env

    def command(self) -> list[str]:
        """The server's command line."""
        raise NotImplementedError

    def probe(self) -> None:
        """Return when the server answers; raise OSError / URLError until then."""
        raise NotImplementedError

    def start(self, timeout: float = 60.0) -> None:
        self._log = open(self.log_path, "wb")  # closed in stop()
        self._proc = subprocess.Popen(
            self.command(),
            cwd=self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kernels go with it in stop()
            preexec_fn=_die_with_parent(),
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self._proc.returncode} before it served; "
                    f"log:\n{self.log_text()[-3000:]}"
                )
            try:
                self.probe()
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.25)
        raise RuntimeError(
            f"{self.name} did not answer on {self.base_url} within {timeout:.0f} s; "
            f"log:\n{self.log_text()[-3000:]}"
        )

    def figure_texts(self) -> dict[str, tuple[float, str]]:
        """SHA-256 of every PNG the kernels made -> (its smallest text in the PNG's
        pixels, that text)."""
        try:
            lines = self.figure_text_log.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return {}
        entries = (json.loads(line) for line in lines if line.strip())
        return {e["sha256"]: (e["px"], e["text"]) for e in entries}

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        try:
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait(timeout=10)
            elif proc is not None:
                proc.wait()
            if proc is not None:
                # Kernels that outlived the server are still in its process group.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None


def make_lab_command(root: Path) -> tuple[dict[str, str], list[str]]:
    """The environment assignments and the command line ``make lab`` runs to
    serve ``root`` with this interpreter's environment, from its dry run."""
    env = {
        k: v
        for k, v in os.environ.items()
        # A make above us (make test) would lend its jobserver; a config path of the
        # caller's would come before the series' one.
        if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "JUPYTER_CONFIG_PATH"}
    }
    command = ["make", "--no-print-directory", "-n", "-C", str(REPO), "lab"]
    command += [f"VENV={sys.prefix}", f"LAB_ROOT={root}"]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        raise RuntimeError(
            f"cannot read make lab's command ({shlex.join(command)}): {detail}"
        ) from exc
    dry_run = done.stdout
    for line in dry_run.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        assignments = []
        while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
            assignments.append(words.pop(0))
        if words[1:2] == ["lab"]:
            return dict(a.split("=", 1) for a in assignments), words
    raise RuntimeError(f"`make -n lab` printed no `jupyter lab` command:\n{dry_run}")


class JupyterLabServer(LocalJupyterServer):
    """``make lab``'s JupyterLab with a generated token, on a port of its own."""

    name = "jupyter lab"

    def __init__(self, workdir: Path, sources: dict[str, Path], pythonpath: Path | None = None):
        self.token = secrets.token_hex(24)
        super().__init__(workdir, sources, pythonpath)
        self.audit_log = self.workdir / "server-audit.log"
        self.env["ATTENTION_SERVER_AUDIT"] = str(self.audit_log)
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in [str(SERVER_AUDIT), self.env.get("PYTHONPATH", "")] if p
        )
        assignments, self._make_lab = make_lab_command(self.root)
        self.env.update(assignments)

    def command(self) -> list[str]:
        return [
            *self._make_lab,
            "--no-browser",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",  # fail rather than move to another port
            f"--IdentityProvider.token={self.token}",
        ]

    def hosts_reached(self) -> list[str]:
        """What the server or a kernel resolved or connected to off this machine so far."""
        try:
            return self.audit_log.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    def probe(self) -> None:
        self.api("GET", "/api/status", timeout=2)

    def api(self, method: str, path: str, timeout: float = 10):
        """Call the server's REST API with the token; returns parsed JSON or None."""
        req = urllib.request.Request(
            self.base_url + path,
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Stop every kernel (one notebook at a time keeps 2 cores free)."""
        try:
            for session in self.api("GET", "/api/sessions") or []:
                self.api("DELETE", f"/api/sessions/{session['id']}")
            for kernel in self.api("GET", "/api/kernels") or []:
                self.api("DELETE", f"/api/kernels/{kernel['id']}")
        except (OSError, urllib.error.URLError):
            pass
