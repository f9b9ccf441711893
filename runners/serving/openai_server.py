"""A small OpenAI-compatible HTTP server around any model backend (FastAPI + uvicorn, loopback by default).

POST /v1/completions, POST /v1/chat/completions and GET /v1/models, with usage and finish_reason, so the
local model can stand behind the openai-* backends in end-to-end tests and serve as a judge endpoint.
GET /v1/models says, beside each id, what a client may need to know (none of it in OpenAI's own list): the
weights served (``root``, as vLLM names it: a run and its judge behind two served names are one model), the
generation limits of the model's config (``generation``: a run that sets none uses them) and, for a backend
that can constrain, ``structured_outputs``: a request's vLLM-style ``structured_outputs`` (``json`` schema or
``grammar``) or OpenAI-style ``response_format`` (``json_schema``) is then decoded under that constraint.
A body that is not what the API takes (not JSON, a field of the wrong type) is a 400 naming the field; one
larger than ``max_body_bytes`` a 413, refused while reading. ``LoopbackServer`` runs any ASGI app on a free
127.0.0.1 port in a thread and always stops it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from toolbench_adapter.files.input_files import PARSER_DEPTH
from toolbench_adapter.server.limits import read_body_capped
from toolbench_adapter.structured.grammar import Constraint

from ..failures import CONTEXT_LENGTH
from ..models.base import Completion, ModelRequest, weights_of

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # the OpenAI API's own default for /v1/completions
CHAT_DEFAULT_MAX_TOKENS = 1024
DEFAULT_MAX_BODY_BYTES = 8 << 20  # 8 MiB: a long chat with its tools is a few hundred KiB


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind, "code": status}})


def _model_error(completion: Completion) -> JSONResponse:
    """A backend's failure as the serving engines answer it: a prompt longer than the model's context is the
    client's 400 with OpenAI's code ``context_length_exceeded`` (what the openai backends read as the model's limit,
    ending the chain as upstream does); anything else is the server's 500."""
    if completion.error_kind == CONTEXT_LENGTH:
        return JSONResponse(status_code=400, content={"error": {
            "message": completion.error, "type": "invalid_request_error", "param": "messages",
            "code": "context_length_exceeded"}})
    return _error(500, completion.error, "model_error")


def _stops(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(s) for s in value]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# field -> (accepted, what the message says): each optional (None or absent passes)
_FIELD_CHECKS = {
    "max_tokens": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0, "a positive integer"),
    "temperature": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
    "stop": (lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(s, str) for s in v)),
             "a string or a list of strings"),
    "tools": (lambda v: isinstance(v, list) and all(isinstance(t, dict) for t in v), "a list of objects"),
    "continue_final_message": (lambda v: isinstance(v, bool), "true or false"),
}


def body_problem(body: dict, route: str) -> str | None:
    """What makes a request body unusable for ``route`` ("completions" or "chat"), or None. Checked before
    any conversion, so a wrong type is a 400 naming the field, never a 500."""
    for name, (accepted, what) in _FIELD_CHECKS.items():
        if body.get(name) is not None and not accepted(body[name]):
            return f"{name} must be {what} (got {json.dumps(body[name])[:80]})"
    if route == "completions":
        prompt = body.get("prompt")
        if not (isinstance(prompt, str) or (isinstance(prompt, list) and len(prompt) == 1
                                            and isinstance(prompt[0], str))):
            return "prompt must be one string"
        return None
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f"messages[{index}] must be an object with a string role"
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            return f"messages[{index}].content must be a string, a list of parts or null"
    for index, tool in enumerate(body.get("tools") or []):  # what the dialects read of a tool: its function
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return f"tools[{index}].function must be an object with a string name (got {json.dumps(function)[:80]})"
        if function.get("parameters") is not None and not isinstance(function["parameters"], dict):
            return f"tools[{index}].function.parameters must be an object"
    if body.get("continue_final_message") and not isinstance(messages[-1].get("content") or "", str):
        return "continue_final_message needs the last message's content as a string"
    return None


STRUCTURED_KINDS = ("json", "grammar")  # vLLM's structured_outputs fields this server decodes


def requested_constraint(body: dict) -> Constraint | str | None:
    """The constraint a body asks for (vLLM's ``structured_outputs`` or OpenAI's ``response_format`` with a
    JSON schema), None when it asks for none, or a string saying what is wrong with the field."""
    structured = body.get("structured_outputs")
    if structured is not None:
        if not isinstance(structured, dict) or not any(structured.get(kind) is not None for kind in STRUCTURED_KINDS):
            return "structured_outputs must be an object with a json schema or a grammar"
        if isinstance(structured.get("grammar"), str):
            return Constraint("request", ebnf=structured["grammar"])
        schema = structured.get("json")
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except ValueError:
                return "structured_outputs.json must be a JSON schema"
            except RecursionError:
                return f"structured_outputs.json nests deeper than this server reads (about {PARSER_DEPTH} levels)"
        if not isinstance(schema, dict):
            return "structured_outputs.json must be a JSON schema (an object) and grammar a string"
        return Constraint("request", json_schema=schema)
    response_format = body.get("response_format")
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        return 'response_format must be {"type": "json_schema", "json_schema": {"schema": ...}}, json_object or text'
    if kind == "text":
        return None
    if kind == "json_object":
        return Constraint("request", json_schema={"type": "object"})
    holder = response_format.get("json_schema")
    schema = holder.get("schema") if isinstance(holder, dict) else None
    if not isinstance(schema, dict):
        return "response_format.json_schema.schema must be a JSON schema (an object)"
    return Constraint("request", json_schema=schema)


def can_constrain(backend) -> bool:
    support = getattr(backend, "constraint_support", None)
    return support is not None and support("json-object") is None


def _usage(completion: Completion) -> dict:
    return {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "total_tokens": completion.total_tokens}


def served_name_for(backend) -> str:
    """The id a backend is served under: its model label without the backend prefix (hf:NAME -> NAME)."""
    return str(getattr(backend, "model", None) or backend.name).split(":", 1)[-1]


def build_app(backend, served_name: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
              generation: dict | None = None) -> FastAPI:
    """``generation``: the model config's limits (``max_tokens``, and ``config``: where they come from), listed
    in GET /v1/models and used for a request that gives no max_tokens."""
    served_name = served_name or served_name_for(backend)
    app = FastAPI(title=f"toolbench-adapter model server ({served_name})")
    created = int(time.time())
    entry: dict[str, Any] = {"id": served_name, "object": "model", "created": created,
                             "owned_by": "toolbench-adapter"}
    if weights_of(backend):
        entry["root"] = weights_of(backend)
    if generation:
        entry["generation"] = dict(generation)
    constrains = can_constrain(backend)
    if constrains:
        entry["structured_outputs"] = list(STRUCTURED_KINDS)
    default_max = (generation or {}).get("max_tokens")

    def constraint_extra(body: dict) -> dict | JSONResponse:
        constraint = requested_constraint(body)
        if constraint is None:
            return {}
        if isinstance(constraint, str):
            return _error(400, constraint, "invalid_request_error")
        if not constrains:
            return _error(400, f"the {backend.name} backend served here cannot constrain its output "
                          "(structured_outputs / response_format)", "invalid_request_error")
        return {"constraint": constraint}

    async def read_body(request: Request, route: str) -> dict | JSONResponse:
        try:
            raw = await read_body_capped(request, max_body_bytes)
        except ClientDisconnect:
            return _error(400, "the client went away before sending the whole body", "invalid_request_error")
        if raw is None:
            return _error(413, f"the body is larger than {max_body_bytes} bytes (tba serve-model --max-body-bytes)",
                          "invalid_request_error")
        try:
            body = json.loads(raw)
        except ValueError:  # UnicodeDecodeError is a ValueError
            return _error(400, "the body is not JSON", "invalid_request_error")
        except RecursionError:  # valid or not, JSON deeper than the parser follows: say so, not "not JSON"
            return _error(400, "the body's JSON nests deeper than this server reads (more than about "
                          f"{PARSER_DEPTH} levels; a chat request nests a few dozen)", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object", "invalid_request_error")
        if body.get("model") not in (None, served_name):
            return _error(404, f"The model `{body.get('model')}` does not exist. Served: {served_name}",
                          "NotFoundError")
        problem = body_problem(body, route)
        if problem:
            return _error(400, problem, "invalid_request_error")
        return body

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [entry]}

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await read_body(request, "completions")
        if isinstance(body, JSONResponse):
            return body
        prompt = body["prompt"]
        if isinstance(prompt, list):
            prompt = prompt[0]
        extra = constraint_extra(body)
        if isinstance(extra, JSONResponse):
            return extra
        model_request = ModelRequest(
            prompt=prompt, stop=_stops(body.get("stop")),
            max_tokens=int(body.get("max_tokens") or default_max or COMPLETIONS_DEFAULT_MAX_TOKENS),
            temperature=float(body.get("temperature") or 0.0), extra=extra,
        )
        completion = await _run(backend, model_request)
        if completion.error:
            return _model_error(completion)
        return {
            "id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion", "created": int(time.time()),
            "model": served_name,
            "choices": [{"index": 0, "text": completion.text or "", "logprobs": None,
                         "finish_reason": completion.finish_reason or "stop"}],
            "usage": _usage(completion),
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body = await read_body(request, "chat")
        if isinstance(body, JSONResponse):
            return body
        messages = body["messages"]
        extra = constraint_extra(body)
        if isinstance(extra, JSONResponse):
            return extra
        if body.get("tool_choice") is not None:
            extra["tool_choice"] = body["tool_choice"]
        prefill = ""
        if body.get("continue_final_message") and messages[-1].get("role") == "assistant":
            # vLLM's extension: continue the last assistant message instead of starting a new one
            prefill = messages[-1].get("content") or ""
            messages = messages[:-1]
            extra["prefill"] = prefill
        model_request = ModelRequest(
            messages=messages, tools=body.get("tools") or None, stop=_stops(body.get("stop")),
            max_tokens=int(body.get("max_tokens") or default_max or CHAT_DEFAULT_MAX_TOKENS),
            temperature=float(body.get("temperature") or 0.0), extra=extra,
        )
        completion = await _run(backend, model_request)
        if completion.error:
            return _model_error(completion)
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
                  log_level: str = "warning", max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                  generation: dict | None = None) -> None:
    """Serve in the foreground until interrupted; prints the URL first (useful with port 0)."""
    served_name = served_name or served_name_for(backend)
    sock = bind_socket(host, port)
    print(f"serving {backend.name} model {served_name!r} at http://{host}:{sock.getsockname()[1]}/v1 "
          "(Ctrl-C stops)", flush=True)
    if generation:
        print(f"generation limits: max_tokens {generation['max_tokens']} (from {generation['config']}), the "
              "default of a request that gives none and listed in GET /v1/models for runs", flush=True)
    app = build_app(backend, served_name, max_body_bytes, generation=generation)
    config = uvicorn.Config(app, log_level=log_level, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
