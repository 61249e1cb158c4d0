"""Start the class hub: its proxy first (a process of its own, which the hub does not
own), then JupyterHub with ``hub/jupyterhub_config.py`` (``make hub``; ``make hub-stop``).

The proxy and the students' servers outlive the hub: Ctrl-C (or a crash) stops the hub
alone, and the next start picks up the servers from the persisted database. The state
folder (default ``build/hub``, mode 0700) keeps the database, the cookie secret, the
proxy's token, the demo password and every student's home. Standard library only: the
class benchmark imports :func:`start_proxy`, :func:`start_hub` and :func:`stop_all` too.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONFIG = HERE / "jupyterhub_config.py"
PROXY = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
#: The folder nbgitpuller clones the series into, in each student's home.
TARGET = "attention-notebooks"


def secret(path: Path) -> str:
    """The secret stored at ``path``, made on first use (readable by its owner only)."""
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(32))
    return path.read_text().strip()


def state_env(state: Path, port: int, hub_api_port: int, proxy_api_port: int) -> dict[str, str]:
    """The environment the proxy and the hub share: addresses, state folder and secrets."""
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    return {
        "ATTENTION_HUB_STATE": str(state),
        "ATTENTION_HUB_PORT": str(port),
        "ATTENTION_HUB_API_PORT": str(hub_api_port),
        "ATTENTION_PROXY_API_PORT": str(proxy_api_port),
        "CONFIGPROXY_AUTH_TOKEN": secret(state / "proxy_token"),
        "ATTENTION_HUB_PASSWORD": secret(state / "password")[:16],
        "ATTENTION_HUB_ADMIN_PASSWORD": secret(state / "admin_password"),
    }


def answers(url: str, timeout: float = 2.0) -> bool:
    """Does a server answer at ``url``, with any status below 500? (The proxy answers
    503 for the hub until the hub listens.)"""
    try:
        urllib.request.urlopen(url, timeout=timeout).close()
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except OSError:
        return False
    return True


def wait_until_answers(url: str, proc: subprocess.Popen, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not answers(url):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it answered on {url}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer on {url} within {timeout:.0f} s")
        time.sleep(0.2)


def start_proxy(env: dict[str, str], log, timeout: float = 30.0) -> subprocess.Popen:
    """configurable-http-proxy on 127.0.0.1, routing to the hub until it adds routes."""
    if not os.access(PROXY, os.X_OK):
        raise RuntimeError(f"{PROXY} is missing: run `make proxy` (npm ci in hub/)")
    hub = f"http://127.0.0.1:{env['ATTENTION_HUB_API_PORT']}"
    proc = subprocess.Popen(
        [
            str(PROXY),
            "--ip=127.0.0.1",
            f"--port={env['ATTENTION_HUB_PORT']}",
            "--api-ip=127.0.0.1",
            f"--api-port={env['ATTENTION_PROXY_API_PORT']}",
            f"--default-target={hub}",
            f"--error-target={hub}/hub/error",
            "--log-level=warn",
        ],
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # not in the hub's process group: it outlives the hub
    )
    Path(env["ATTENTION_HUB_STATE"], "proxy.pid").write_text(str(proc.pid))
    wait_until_answers(
        f"http://127.0.0.1:{env['ATTENTION_PROXY_API_PORT']}/api/routes", proc, "proxy", timeout
    )
    return proc


def hub_command(state: Path, python: str = sys.executable) -> list[str]:
    return [
        python,
        "-m",
        "jupyterhub",
        "-f",
        str(CONFIG),
        f"--JupyterHub.pid_file={state / 'hub.pid'}",
    ]


def start_hub(env: dict[str, str], log, python: str = sys.executable, timeout: float = 90.0):
    """JupyterHub with the class configuration; returns when its API answers."""
    state = Path(env["ATTENTION_HUB_STATE"])
    proc = subprocess.Popen(
        hub_command(state, python),
        cwd=state,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the servers it spawns are in sessions of their own too
    )
    wait_until_answers(
        f"http://127.0.0.1:{env['ATTENTION_HUB_PORT']}/hub/api/", proc, "the hub", timeout
    )
    return proc


def server_pids(state: Path) -> list[int]:
    """Process ids of the students' servers, from the hub's database."""
    db = state / "jupyterhub.sqlite"
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute("SELECT state FROM spawners WHERE state IS NOT NULL").fetchall()
    return [json.loads(row[0])["pid"] for row in rows if json.loads(row[0] or "{}").get("pid")]


def terminate(pids: list[int], grace: float = 10.0) -> None:
    """SIGTERM these processes, then SIGKILL whatever is left after ``grace`` seconds."""
    alive = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            alive.append(pid)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in alive if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def labelled(state: Path) -> list[int]:
    """Processes started with this state folder in their environment: the hub, its proxy
    and its culler (which a hub that was killed, or took too long to stop, leaves behind);
    not the students' servers, which the hub starts with an environment of their own."""
    label = f"ATTENTION_HUB_STATE={state}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and label in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            pass  # gone, or not ours to read
    return found


def stop_all(state: Path) -> None:
    """Stop the hub, its culler, every student's server (their kernels follow) and the proxy."""
    # The hub stops its culler first: SIGINT, then SIGTERM 10 s later if it is ignored.
    terminate([int(p.read_text()) for p in (state / "hub.pid",) if p.exists()], grace=30)
    terminate([pid for pid in labelled(state) if pid != os.getpid()])
    terminate(server_pids(state))
    proxy = state / "proxy.pid"
    if proxy.exists():
        terminate([int(proxy.read_text())])
        proxy.unlink()


def pull_link(port: int, repo: str, notebook: str = "notebooks/01_soft_lookup.ipynb") -> str:
    """The nbgitpuller link students click: clone (first time) or merge (later), then open."""
    query = urllib.parse.urlencode(
        {
            "repo": repo,
            "branch": "main",
            "targetpath": TARGET,
            "urlpath": f"lab/tree/{TARGET}/{notebook}",
        }
    )
    return f"http://127.0.0.1:{port}/hub/user-redirect/git-pull?{query}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, default=ROOT / "build" / "hub")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--repo",
        default=str(ROOT / "build" / "students.git"),
        help="the students' copy (make students), as a path or URL",
    )
    parser.add_argument("--stop", action="store_true", help="stop hub, servers and proxy")
    args = parser.parse_args(argv)
    state = args.state.resolve()
    if args.stop:
        stop_all(state)
        print(f"stopped the hub, the students' servers and the proxy of {state}")
        return 0
    env = state_env(state, args.port, args.port + 81, args.port + 1)
    log = open(state / "proxy.log", "ab")
    if not answers(f"http://127.0.0.1:{args.port + 1}/api/routes"):
        start_proxy(env, log)
        print(f"proxy started on 127.0.0.1:{args.port} (log {state / 'proxy.log'})")
    else:
        print(f"proxy already running on 127.0.0.1:{args.port}: the hub picks up its routes")
    repo = args.repo if "://" in args.repo else Path(args.repo).resolve().as_uri()
    print(
        f"\nStudents open:\n  {pull_link(args.port, repo)}\n"
        f"Students log in with any name and the password {env['ATTENTION_HUB_PASSWORD']}; "
        f"the instructor as 'instructor' with the password in {state / 'admin_password'}.\n"
    )
    proc = subprocess.Popen(hub_command(state), cwd=state, env={**os.environ, **env})
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.wait()
        print(
            "\nThe hub stopped; the proxy and the students' servers are still running "
            "(run `make hub` again to pick them up, `make hub-stop` to stop them)."
        )
        return 0


if __name__ == "__main__":
    sys.exit(main())
