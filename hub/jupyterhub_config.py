"""JupyterHub for a class on one server: the configuration ``make hub`` runs.

Started by ``hub/serve.py`` (``make hub``), which starts the proxy first and sets the
variables read below; ``benchmarks/bench_class.py`` runs the same file with its own ports
and state. What this demo does, and what a real course changes (marked ``REAL COURSE``):

* Everything listens on 127.0.0.1. REAL COURSE: the proxy on a public address behind
  TLS (``c.JupyterHub.bind_url = "https://..."`` with ``ssl_key`` / ``ssl_cert``, or a
  reverse proxy in front).
* Students log in with any name and the class password, the instructor (admin user
  ``instructor``) with the admin password (``SharedPasswordAuthenticator``; serve.py
  makes both and prints them).
  REAL COURSE: the university's login, e.g. ``oauthenticator`` (GitHub, Google, a
  generic OAuth2/OIDC provider) or ``ltiauthenticator`` from the LMS, with
  ``allowed_users`` or a group instead of ``allow_all``.
* Each student's server is a plain process of the hub's own Unix user
  (``SimpleLocalProcessSpawner``: no system users, works as root in CI). Students are
  NOT isolated from each other here: each can read and write the others' homes and see
  their processes, and no memory or CPU limit applies. REAL COURSE: one Unix user each
  (``LocalProcessSpawner`` / ``SystemdSpawner``, the latter with memory and CPU limits),
  or a container each (``DockerSpawner``; Zero to JupyterHub's ``KubeSpawner``, see
  ``deploy/``).
* The proxy is its own process, started before the hub and not owned by it, the
  database and cookie secret persist in the state folder, and ``cleanup_servers`` is
  off: the hub can be restarted (upgrade, crash) while students work, and their servers,
  open notebooks and browser sessions carry on.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

ROOT = Path(__file__).resolve().parent.parent
STATE = Path(os.environ.get("ATTENTION_HUB_STATE", ROOT / "build" / "hub")).resolve()
SINGLEUSER_VENV = Path(os.environ.get("ATTENTION_SINGLEUSER_VENV", ROOT / ".venv-singleuser"))
PORT = int(os.environ.get("ATTENTION_HUB_PORT", "8000"))  # the proxy: what students open
HUB_API_PORT = int(os.environ.get("ATTENTION_HUB_API_PORT", "8081"))
PROXY_API_PORT = int(os.environ.get("ATTENTION_PROXY_API_PORT", "8001"))
# Student N's server listens on this + N (below the ephemeral ports: own_addresses says why).
SERVER_PORT_BASE = int(os.environ.get("ATTENTION_HUB_SERVER_PORTS", "20000"))
# An idle server is stopped after this many seconds (1 h: a lecture's pause survives it).
CULL_TIMEOUT = int(os.environ.get("ATTENTION_HUB_CULL_TIMEOUT", "3600"))
CULL_EVERY = int(os.environ.get("ATTENTION_HUB_CULL_EVERY", "300"))
# How often servers report activity to the hub (JupyterHub's default, 300 s, is coarser
# than a short test's culler timeout; the benchmark shortens both).
ACTIVITY_INTERVAL = int(os.environ.get("ATTENTION_HUB_ACTIVITY_INTERVAL", "300"))

# -- addresses and the proxy -------------------------------------------------------------
c.JupyterHub.bind_url = f"http://127.0.0.1:{PORT}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = HUB_API_PORT
c.ConfigurableHTTPProxy.should_start = False  # serve.py starts it; it outlives the hub
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PROXY_API_PORT}"
# The proxy's token comes from CONFIGPROXY_AUTH_TOKEN, which serve.py sets for both.

# -- state that survives a restart of the hub --------------------------------------------
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = False
c.JupyterHub.last_activity_interval = ACTIVITY_INTERVAL

# -- who may log in ----------------------------------------------------------------------
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ["ATTENTION_HUB_PASSWORD"]
c.SharedPasswordAuthenticator.admin_password = os.environ["ATTENTION_HUB_ADMIN_PASSWORD"]
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {"instructor"}

# -- each student's server ---------------------------------------------------------------
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
c.Spawner.cmd = [str(SINGLEUSER_VENV / "bin" / "jupyterhub-singleuser")]
# How long a student's server waits for a new kernel to answer: once before it accepts the
# notebook's WebSocket, once more after (jupyter_server 2.21's "nudge"). If the kernel has
# not answered by the end of the second wait, the server drops the socket (an uncaught
# TimeoutError, no close frame) and what the page sent meanwhile is lost. Thirty kernels
# starting at once on two cores answered within 10 s at a load of 42 (benchmark,
# 2026-12-03), well inside the default 60 s; the one that did not had never started (see
# own_addresses). 300 s: a kernel slowed by a busier class is waited for before the socket
# opens, not dropped after 120 s; the cost is that one that never answers is given up on
# later (after 300 s, then within 90 s: the server's ping timeout, as no pong is read
# during the second wait).
KERNEL_INFO_TIMEOUT = int(os.environ.get("ATTENTION_HUB_KERNEL_INFO_TIMEOUT", "300"))
# Never move to another port than the hub chose (the hub would wait for it, then give up).
c.Spawner.args = [
    "--ServerApp.port_retries=0",
    f"--MappingKernelManager.kernel_info_timeout={KERNEL_INFO_TIMEOUT}",
    "--KernelManager.transport=ipc",  # Unix sockets, not TCP ports: own_addresses says why
    *(["--allow-root"] if os.geteuid() == 0 else []),
]
c.Spawner.default_url = "/lab"
# A class arriving at once on two cores: a server may take a while to answer.
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 120
c.Spawner.poll_interval = 10  # notice a dead server within 10 s (a poll is one kill(pid, 0))


KERNEL_SOCKETS = Path(tempfile.gettempdir()) / (
    "attention-kernels-" + hashlib.sha256(str(STATE).encode()).hexdigest()[:8]
)


def own_addresses(spawner):
    """Each student's server on a port of its own, below the range kernels took theirs from,
    and its kernels' sockets in a folder of its own.

    JupyterHub's default, a random free port, comes from the ephemeral range (32768-60999 on
    Linux): with 30 students starting at once, a kernel took a server's port before the
    server had bound it (benchmark, 2026-12-01). A server picks its kernels' five TCP ports
    the same way (bind port 0, let go): two of 30 servers starting kernels at once were given
    the same one (2026-12-03, 127.0.0.1:33961), the second kernel could not bind it and hung
    (ipykernel 7.4 waits forever for its ZMQ context on the way out) instead of dying, so
    nothing restarted it; its server waited for it, then dropped the student's WebSocket.
    Unix sockets named after the kernel (``kernel-<id>-ipc-N``) in the server's runtime
    folder cannot collide; the folder is short because a socket's path may not exceed 107
    bytes (the usual one, under the student's home, can).
    """
    spawner.port = SERVER_PORT_BASE + spawner.user.id
    runtime = KERNEL_SOCKETS / str(spawner.user.id)
    spawner.environment = {**spawner.environment, "JUPYTER_RUNTIME_DIR": str(runtime)}


c.Spawner.pre_spawn_hook = own_addresses
# Not PYTHONPATH: a student's kernel imports the attention_lib of their environment.
c.Spawner.env_keep = ["PATH", "LANG", "LC_ALL"]
# The servers' environment, one entry per reason.
c.Spawner.environment = {
    # The series' Jupyter configuration, as `make lab` uses it (docs/teaching.md, "JupyterLab
    # starts quietly"): no news prompt, nothing fetched from another machine.
    "JUPYTER_CONFIG_PATH": str(ROOT / "etc" / "jupyter"),
    # Thirty kernels share two cores: one BLAS thread each, or idle OpenBLAS threads
    # spin against the other students' (FIELD-NOTES: they spin after every call).
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    # glibc keeps freed blocks of a size it has seen freed before (its mmap threshold rises
    # to 32 MiB); a fixed threshold hands every array of 256 KiB and more back when freed:
    # 06 and 08 end 13-20 MiB lower (docs/results/bench_kernel_memory.md).
    "MALLOC_MMAP_THRESHOLD_": "262144",
    "JUPYTERHUB_ACTIVITY_INTERVAL": str(ACTIVITY_INTERVAL),
}

# -- the idle culler ---------------------------------------------------------------------
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={CULL_TIMEOUT}",
            f"--cull-every={CULL_EVERY}",
        ],
        # Which hub it serves: a hub that was killed cannot stop it, serve.py --stop can.
        "environment": {"ATTENTION_HUB_STATE": str(STATE)},
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]

# -- the misconceptions board (docs/teaching.md, "Seeing the class's mistakes live") --------
# A service of the hub's (restarted by it if it dies), in the students' environment, whose
# attention_lib holds the catalogue of diagnoses. Each student's kernel reports each checker
# run to it with the server's token (the sink that `make singleuser` installs); the
# instructor's browser logs in to it through the hub and needs MISCONCEPTIONS_READ.
MISCONCEPTIONS_READ = "custom:misconceptions:read"
MISCONCEPTIONS_ACCESS = "access:services!service=misconceptions"
MISCONCEPTIONS_URL = (
    f"http://127.0.0.1:{int(os.environ.get('ATTENTION_MISCONCEPTIONS_PORT', HUB_API_PORT + 2))}"
)
c.JupyterHub.custom_scopes = {
    MISCONCEPTIONS_READ: {
        "description": "See the class's named mistakes live (the misconceptions board) and who "
        "shows which."
    }
}
c.JupyterHub.services.append(
    {
        "name": "misconceptions",
        "url": MISCONCEPTIONS_URL,
        "command": [
            str(SINGLEUSER_VENV / "bin" / "python"),
            str(ROOT / "hub" / "misconceptions" / "service.py"),
        ],
        "environment": {
            "ATTENTION_HUB_STATE": str(STATE),
            "ATTENTION_COURSE": os.environ.get("ATTENTION_COURSE", "attention-notebooks"),
        },
        "oauth_client_allowed_scopes": [MISCONCEPTIONS_READ],
        "oauth_no_confirm": True,  # part of the hub: no "authorize this service?" page
        "display": False,  # students may report to it: the home page links it for instructors
    }
)
c.JupyterHub.template_paths = [str(ROOT / "hub" / "templates")]
c.JupyterHub.load_roles += [
    # Every user may reach the service (their kernels report to it); `self` is the default.
    {"name": "user", "scopes": ["self", MISCONCEPTIONS_ACCESS]},
    {"name": "misconceptions-instructor", "scopes": [MISCONCEPTIONS_READ], "users": ["instructor"]},
]


def server_token_scopes(spawner):
    """The server token's default scopes (the `server` role) and the service's access: a
    token holds only the scopes its user holds, hence the `user` role above."""
    from jupyterhub import orm

    return [*orm.Role.find(spawner.db, "server").scopes, MISCONCEPTIONS_ACCESS]


c.Spawner.server_token_scopes = server_token_scopes
c.Spawner.environment["ATTENTION_MISCONCEPTIONS_URL"] = (
    f"{MISCONCEPTIONS_URL}/services/misconceptions/api/reports"
)
