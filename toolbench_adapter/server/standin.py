"""A tiny real HTTP server on loopback whose answers a test or benchmark scripts: an upstream stand-in
(timeouts, 500s, non-JSON bodies) or a fake OpenAI-compatible model endpoint."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Exchange:
    path: str
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict | list = b""
    content_type: str = "application/json"
    delay_s: float = 0.0


@dataclass
class StandInServer:
    """``with StandInServer(lambda exchange: Reply(...)) as server: server.url``; records every request."""

    respond: Callable[[Exchange], Reply]
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length") or 0)
                exchange = Exchange(self.path, dict(self.headers), self.rfile.read(length))
                owner.exchanges.append(exchange)
                reply = owner.respond(exchange)
                if reply.delay_s:
                    threading.Event().wait(reply.delay_s)
                body = reply.body
                if isinstance(body, dict | list):
                    body = json.dumps(body)
                if isinstance(body, str):
                    body = body.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    def __enter__(self) -> StandInServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
