"""A loopback HTTP server written on raw sockets, so it can misbehave the way real servers and networks do:
cut a body short, reset the connection, hang, answer 5xx/429/4xx or a body that is not JSON.

Each request takes the next fault from the script (the last one repeats). Every connection is closed
after one reply, so a client's retry always opens a new one.

    with FaultyServer(["cut", "ok"]) as server:
        requests.post(server.url + "/v1/chat/completions", json={})  # first try cut short, second fine
"""

from __future__ import annotations

import abc
import json
import socket
import struct
import threading

from toolbench_adapter.server.client import PREFLIGHT_TOOL_INPUT

# one body every client under test accepts: the tool server's answer and an OpenAI chat completion
OK_BODY = {"error": "", "response": "fine",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}]}


def _reply(status: int, body: bytes, content_type: str = "application/json", length: int | None = None,
           headers: dict[str, str] | None = None) -> bytes:
    reason = {200: "OK", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
              503: "Service Unavailable"}.get(status, "Status")
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n{extra}"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def _read_request(conn: socket.socket) -> bytes:
    """The whole request (headers and Content-Length body), so a fault never lands mid-upload."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class LoopbackServer(abc.ABC):
    """A listening socket on 127.0.0.1 and its accept loop: each connection goes to ``_handle(conn)`` in a thread
    of its own; ``with`` starts the loop and stops it. A subclass says how a connection is answered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.05)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    @abc.abstractmethod
    def _handle(self, conn: socket.socket) -> None:
        """Read the request from ``conn`` and answer it (the subclass's behaviour: faults, counts, ...)."""

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()


class TricklingServer(LoopbackServer):
    """Answers every request (any method, any path) with a 200 whose body comes one byte every ``interval_s``
    seconds: each read gets a byte well within any timeout, so only a limit on the whole request ends it.
    ``head=True``: the status line and headers trickle too. ``prompt``: paths (their ends, e.g. "/models")
    answered at once with their own body, so a preflight passes and the request after it trickles."""

    def __init__(self, body: dict | None = None, interval_s: float = 0.5, head: bool = False,
                 prompt: dict[str, dict] | None = None):
        super().__init__()
        self.body = json.dumps(body or OK_BODY).encode()
        self.interval_s, self.head = interval_s, head
        self.prompt = {path: json.dumps(answer).encode() for path, answer in (prompt or {}).items()}
        self.requests: list[bytes] = []
        self.gave_up = 0  # replies the client stopped reading before their end

    def _handle(self, conn: socket.socket) -> None:
        try:
            request = _read_request(conn)
            if not request:
                return
            with self._lock:
                self.requests.append(request)
            path = request.split(b" ", 2)[1].decode(errors="replace") if request.count(b" ") >= 2 else ""
            at_once = next((body for end, body in self.prompt.items() if path.endswith(end)), None)
            if at_once is not None:
                conn.sendall(_reply(200, at_once))
                return
            reply = _reply(200, self.body)
            head, _, body = reply.partition(b"\r\n\r\n")
            if not self.head:
                conn.sendall(head + b"\r\n\r\n")
            for byte in (reply if self.head else body):
                if self._stop.wait(self.interval_s):
                    return
                conn.sendall(bytes([byte]))
        except OSError:
            with self._lock:
                self.gave_up += 1  # the client hung up mid-trickle: what a whole-request timeout does
        finally:
            conn.close()


class FaultyServer(LoopbackServer):
    """Faults: "ok", "cut" (Content-Length larger than the body, then close), "reset" (RST, no reply),
    "hang" (no reply until the server stops), "html" (200, not JSON), an HTTP status as an int, or a
    (status, headers) pair, e.g. ``(429, {"Retry-After": "2"})``."""

    def __init__(self, script: list[str | int | tuple[int, dict]], ok_body: dict | None = None,
                 answers_preflight: bool = False):
        super().__init__()
        self.script = list(script)
        # a tool server that dies mid-run: the run's preflight (server/client.py) answered, outside the script
        self.answers_preflight = answers_preflight
        self.ok_body = json.dumps(ok_body or OK_BODY).encode()
        self.requests: list[bytes] = []

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _next_fault(self, request: bytes) -> str | int | tuple[int, dict]:
        if self.answers_preflight and PREFLIGHT_TOOL_INPUT.encode() in request:
            return "ok"
        with self._lock:
            self.requests.append(request)
            return self.script[min(len(self.requests), len(self.script)) - 1]

    def _handle(self, conn: socket.socket) -> None:
        try:
            request = _read_request(conn)
            if not request:
                return
            fault = self._next_fault(request)
            if fault == "ok":
                conn.sendall(_reply(200, self.ok_body))
            elif fault == "cut":
                conn.sendall(_reply(200, self.ok_body[:10], length=len(self.ok_body)))
            elif fault == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif fault == "hang":
                self._stop.wait(30)
            elif fault == "html":
                conn.sendall(_reply(200, b"<html>not json</html>", "text/html"))
            else:
                status, headers = fault if isinstance(fault, tuple) else (int(fault), None)
                conn.sendall(_reply(status, json.dumps({"detail": f"status {status}"}).encode(), headers=headers))
        except OSError:
            pass  # the client gave up first (a timeout test)
        finally:
            conn.close()
