"""The loopback HTTP pieces the runner and sweep benchmarks' fake endpoints share: a JSON request handler, a
threaded server on a free port, and the scripted agent's answer over the OpenAI chat API."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runners.models.scripted import scripted_call  # noqa: E402


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1 with ``_send(payload)`` for a JSON reply; no access log."""

    protocol_version = "HTTP/1.1"
    # the headers and the body go out in two writes: with Nagle's algorithm on, the body can wait for the
    # client's delayed ACK of the headers (~40 ms on Linux: a plain requests.Session waited 64 ms for 20)
    disable_nagle_algorithm = True

    def _send(self, payload: dict | bytes) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json_body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")

    def log_message(self, *args):
        pass


def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.ThreadingHTTPServer:
    """``handler`` on a free 127.0.0.1 port, served from a daemon thread."""

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256  # the default backlog of 5 drops connections at concurrency 32

    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def agent_message(body: dict, tool_turns: int = 1) -> dict:
    """The scripted agent's chat answer: call the first function ``tool_turns`` times, then Finish."""
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    call = scripted_call(body.get("tools"), 0 if turn < tool_turns else turn, final_answer="done")
    call["id"] = f"call_{turn}"
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def chat_completion(model: str, message: dict) -> dict:
    return {"id": "x", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
