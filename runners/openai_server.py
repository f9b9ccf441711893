"""A small OpenAI-compatible HTTP server around any model backend (FastAPI + uvicorn, loopback by default).

POST /v1/completions, POST /v1/chat/completions and GET /v1/models, with usage and finish_reason, so the
local model can stand behind the openai-* backends in end-to-end tests and serve as a judge endpoint.
``LoopbackServer`` runs any ASGI app on a free 127.0.0.1 port in a thread and always stops it.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from runners.models.base import Completion, ModelRequest

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # the OpenAI API's own default for /v1/completions
CHAT_DEFAULT_MAX_TOKENS = 1024


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind, "code": status}})


def _stops(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(s) for s in value]


def _usage(completion: Completion) -> dict:
    return {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "total_tokens": completion.total_tokens}


def served_name_for(backend) -> str:
    """The id a backend is served under: its model label without the backend prefix (hf:NAME -> NAME)."""
    return str(getattr(backend, "model", None) or backend.name).split(":", 1)[-1]


def build_app(backend, served_name: str | None = None) -> FastAPI:
    served_name = served_name or served_name_for(backend)
    app = FastAPI(title=f"toolbench-adapter model server ({served_name})")
    created = int(time.time())

    async def read_body(request: Request) -> dict | JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object", "invalid_request_error")
        if body.get("model") not in (None, served_name):
            return _error(404, f"The model `{body.get('model')}` does not exist. Served: {served_name}",
                          "NotFoundError")
        return body

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": served_name, "object": "model", "created": created,
                                            "owned_by": "toolbench-adapter"}]}

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await read_body(request)
        if isinstance(body, JSONResponse):
            return body
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        if not isinstance(prompt, str):
            return _error(400, "prompt must be one string", "invalid_request_error")
        model_request = ModelRequest(
            prompt=prompt, stop=_stops(body.get("stop")),
            max_tokens=int(body.get("max_tokens") or COMPLETIONS_DEFAULT_MAX_TOKENS),
            temperature=float(body.get("temperature") or 0.0),
        )
        completion = await _run(backend, model_request)
        if completion.error:
            return _error(500, completion.error, "model_error")
        return {
            "id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion", "created": int(time.time()),
            "model": served_name,
            "choices": [{"index": 0, "text": completion.text or "", "logprobs": None,
                         "finish_reason": completion.finish_reason or "stop"}],
            "usage": _usage(completion),
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body = await read_body(request)
        if isinstance(body, JSONResponse):
            return body
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "messages must be a non-empty list", "invalid_request_error")
        extra = {"tool_choice": body["tool_choice"]} if body.get("tool_choice") is not None else {}
        prefill = ""
        if body.get("continue_final_message") and messages[-1].get("role") == "assistant":
            # vLLM's extension: continue the last assistant message instead of starting a new one
            prefill = messages[-1].get("content") or ""
            messages = messages[:-1]
            extra["prefill"] = prefill
        model_request = ModelRequest(
            messages=messages, tools=body.get("tools") or None, stop=_stops(body.get("stop")),
            max_tokens=int(body.get("max_tokens") or CHAT_DEFAULT_MAX_TOKENS),
            temperature=float(body.get("temperature") or 0.0), extra=extra,
        )
        completion = await _run(backend, model_request)
        if completion.error:
            return _error(500, completion.error, "model_error")
        finish = "tool_calls" if completion.tool_calls else (completion.finish_reason or "stop")
        message = completion.message()
        if prefill and (message.get("content") or "").startswith(prefill):
            message["content"] = message["content"][len(prefill):]  # like vLLM: only the continuation
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": served_name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(completion),
        }

    return app


async def _run(backend, request: ModelRequest) -> Completion:
    """The backend call in a worker thread, so a slow generation does not block other requests."""
    return await run_in_threadpool(backend.complete, request)


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening socket; port 0 picks a free one (read it back with getsockname). Listening at once
    means clients told the URL early are queued until uvicorn accepts, not refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


class LoopbackServer:
    """Run an ASGI app with uvicorn in a daemon thread: ``with LoopbackServer(app) as server: server.url``."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"):
        self.app = app
        self.host = host
        self.log_level = log_level
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.port = port  # the real one once started (port 0 picks a free one)

    @property
    def url(self) -> str:
        """The OpenAI API root, e.g. http://127.0.0.1:54321/v1."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> LoopbackServer:
        self._sock = bind_socket(self.host, self.port)
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level=self.log_level, lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the loopback server on {self.host}:{self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve_forever(backend, *, host: str = "127.0.0.1", port: int = 8000, served_name: str | None = None,
                  log_level: str = "warning") -> None:
    """Serve in the foreground until interrupted; prints the URL first (useful with port 0)."""
    served_name = served_name or served_name_for(backend)
    sock = bind_socket(host, port)
    print(f"serving {backend.name} model {served_name!r} at http://{host}:{sock.getsockname()[1]}/v1 "
          "(Ctrl-C stops)", flush=True)
    config = uvicorn.Config(build_app(backend, served_name), log_level=log_level, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
