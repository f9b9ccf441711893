"""Run the app with uvicorn on a loopback socket: in the foreground (tba serve) or in a thread (tests,
benchmarks), on a given port or a free one (port 0). Either way behind the connection limits of limits.py
(a read timeout for heads and bodies, a connection cap below the open-file limit), shown in /health. Several apps
can share one such server, each under a path of its own (EmbeddedHost: a sweep's cells)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Iterator

import uvicorn

from .limits import KEEP_ALIVE_S, ConnectionLimits, fit_to_open_files, guarded_protocol, open_files_limit


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the socket says TCP;
    # without it, Nagle + delayed ACK add ~40 ms to every response (headers and body go out separately)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _uvicorn(app, log_level: str = "warning", limits: ConnectionLimits | None = None,
             raise_open_files: bool = False, lifespan: str = "off") -> uvicorn.Server:
    limits, note = fit_to_open_files(limits or ConnectionLimits(), open_files_limit(raise_open_files))
    if note and raise_open_files:  # tba serve says so; a server inside another command keeps quiet
        print(f"note: {note}", file=sys.stderr, flush=True)
    protocol, stats = guarded_protocol(limits)
    if hasattr(app, "state"):
        app.state.connections = stats  # /health shows them
    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan=lifespan,
                            timeout_keep_alive=KEEP_ALIVE_S, http=protocol, backlog=limits.backlog)
    return uvicorn.Server(config)


def serve_forever(app, sock: socket.socket, log_level: str = "warning", limits: ConnectionLimits | None = None) -> None:
    """tba serve: the process's own server, so its open-file limit is raised to the hard limit first."""
    _uvicorn(app, log_level, limits, raise_open_files=True).run(sockets=[sock])


class EmbeddedServer:
    """``with EmbeddedServer(app) as server: requests.post(server.url + "/virtual", ...)``; always stops."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning",
                 limits: ConnectionLimits | None = None, lifespan: str = "off"):
        """``lifespan="on"``: the app's lifespan runs (an MCP app starts its session manager there)."""
        self.app = app
        self.sock = bind(host, port)
        self.url = url_of(self.sock)
        self._server = _uvicorn(app, log_level, limits, lifespan=lifespan)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self, timeout_s: float = 10.0) -> EmbeddedServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the embedded server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class MountedApps:
    """One ASGI app in front of several: ``/m/<key>/PATH`` goes to the app mounted under ``key`` as ``/PATH``
    (anything else: 404). Lets several runs in one process share one listener while each keeps an app of its own."""

    PREFIX = "/m/"

    def __init__(self) -> None:
        self.apps: dict[str, object] = {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.PREFIX):
            key, _, rest = scope["path"][len(self.PREFIX):].partition("/")
            app = self.apps.get(key)
            if app is not None:
                inner = dict(scope, path="/" + rest, raw_path=("/" + rest).encode())
                await app(inner, receive, send)
                return
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"text/plain"), (b"content-length", b"9")]})
            await send({"type": "http.response.body", "body": b"not found"})


class EmbeddedHost:
    """One embedded server (a uvicorn thread on a loopback port) for several apps: ``with host.mounted(app) as url``
    serves ``app`` under its own path prefix (``url`` is that prefix) until the block ends. A sweep's cells share
    one so that each cell's start-up and end do not start and stop a server of its own (about 0.15 s to stop one:
    uvicorn looks for its exit every 0.1 s); each cell still has its own app and VirtualServer (its cache, its
    simulator, its counts)."""

    def __init__(self, limits: ConnectionLimits | None = None):
        self.router = MountedApps()
        self.server = EmbeddedServer(self.router, limits=limits)
        self._lock = threading.Lock()
        self._next = 0

    def start(self) -> EmbeddedHost:
        self.server.start()
        return self

    @contextlib.contextmanager
    def mounted(self, app) -> Iterator[str]:
        with self._lock:
            key = str(self._next)
            self._next += 1
            self.router.apps[key] = app
        try:
            yield f"{self.server.url}{MountedApps.PREFIX}{key}"
        finally:
            with self._lock:
                self.router.apps.pop(key, None)

    def stop(self, wait: bool = True) -> None:
        """Stop serving; ``wait=False``: in the background (nothing is mounted any more: nobody waits for it)."""
        if wait:
            self.server.stop()
        else:
            threading.Thread(target=self.server.stop, name="embedded-host-stop", daemon=True).start()
