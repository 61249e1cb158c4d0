"""What a browser-test JupyterLab server and its kernels try to reach
(lab_server.py puts this folder first on the server's PYTHONPATH, so every
Python process of it imports this file at start-up: the ``jupyter`` launcher,
the server it becomes, the kernels it starts).

Every host name such a process resolves and every address it connects to,
other than this machine's loopback, is appended to the file named by
ATTENTION_SERVER_AUDIT. Python's audit events see each socket whatever library
opens it (tornado's HTTP client, which fetches JupyterLab's news feed and update
check, httpx for PyPI, urllib), and see an attempt that fails as well as one
that works. ZeroMQ's sockets between server and kernels are not Python's and
stay on 127.0.0.1. The hook costs nothing measurable (a figure redraw took the
same 48-55 ms with and without it).

Outside such a server (pytest imports this file when it collects doctests)
the variable is not set and nothing happens.
"""

import os
import sys

LOOPBACK_NAMES = {"localhost", "::1", ""}


def _target(event: str, args: tuple) -> tuple[str, object] | None:
    """(host, port) an audited socket event is about; None for other events
    and for Unix sockets."""
    if event == "socket.connect":
        address = args[1]
        return (str(address[0]), address[1]) if isinstance(address, tuple) else None
    if event in ("socket.getaddrinfo", "socket.gethostbyname"):
        host = args[0]
        return (
            host.decode() if isinstance(host, bytes) else str(host or ""),
            args[1] if len(args) > 1 else None,
        )
    return None


def _is_loopback(host: str) -> bool:
    return host in LOOPBACK_NAMES or host.startswith("127.")


def _watch(log_path: str) -> None:
    def hook(event: str, args: tuple) -> None:
        target = _target(event, args)
        if target is None or _is_loopback(target[0]):
            return
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"{event} {target[0]} port {target[1]}\n")

    sys.addaudithook(hook)


if os.environ.get("ATTENTION_SERVER_AUDIT"):
    _watch(os.environ["ATTENTION_SERVER_AUDIT"])
