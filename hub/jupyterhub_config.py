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

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

ROOT = Path(__file__).resolve().parent.parent
STATE = Path(os.environ.get("ATTENTION_HUB_STATE", ROOT / "build" / "hub")).resolve()
SINGLEUSER_VENV = Path(os.environ.get("ATTENTION_SINGLEUSER_VENV", ROOT / ".venv-singleuser"))
PORT = int(os.environ.get("ATTENTION_HUB_PORT", "8000"))  # the proxy: what students open
HUB_API_PORT = int(os.environ.get("ATTENTION_HUB_API_PORT", "8081"))
PROXY_API_PORT = int(os.environ.get("ATTENTION_PROXY_API_PORT", "8001"))
# Student N's server listens on this + N (below the kernels' ports: own_port says why).
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
# Never move to another port than the hub chose (the hub would wait for it, then give up).
c.Spawner.args = ["--ServerApp.port_retries=0", *(["--allow-root"] if os.geteuid() == 0 else [])]
c.Spawner.default_url = "/lab"
# A class arriving at once on two cores: a server may take a while to answer.
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 120
c.Spawner.poll_interval = 10  # notice a dead server within 10 s (a poll is one kill(pid, 0))


def own_port(spawner):
    """Each student's server on a port of its own, below the range kernels take theirs from.

    JupyterHub's default, a random free port, comes from the same ephemeral range
    (32768-60999 on Linux) as every kernel's ZMQ ports: with 30 students starting at once,
    a kernel took a server's port before the server had bound it (benchmark, 2026-12-01).
    """
    spawner.port = SERVER_PORT_BASE + spawner.user.id


c.Spawner.pre_spawn_hook = own_port
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
