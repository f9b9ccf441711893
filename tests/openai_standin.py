"""A stand-in for an OpenAI-compatible server, for tests: a real HTTP server on a free 127.0.0.1 port.

It answers /v1/completions and /v1/chat/completions from a script (replies given in order, the last one
repeated) or a function, serves /v1/models, records every request body, and can be told to fail the next
N requests with a status (429, 500, ...), to fail the requests ``fail_when`` picks by content, or to hang.
A judge preflight's test request (toolbench_adapter/evaluation/judging/preflight.py) is answered apart, in
``probes``. The context manager always stops the server.

    with OpenAIStandin(completions=["Thought: x"]) as standin:
        backend = OpenAICompletionsBackend(base_url=standin.url, model=standin.model)
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from runners.serving.openai_server import LoopbackServer
from toolbench_adapter.evaluation.judging.preflight import PREFLIGHT_MARKER

DEFAULT_MODEL = "standin-model"


@dataclass
class Reply:
    text: str | None = None
    tool_calls: list[dict] | None = None
    finish_reason: str = "stop"
    usage: dict | None = None  # default: whitespace-split word counts of the input and the text
    raw: object = None  # when set, the whole JSON body answered as is (a malformed reply's shape)


Responder = Callable[[str, dict], "Reply | str"]


def _as_reply(value: Reply | str) -> Reply:
    return value if isinstance(value, Reply) else Reply(text=value)


def _word_count(value) -> int:
    return len(str(value).split()) if value else 0


class OpenAIStandin:
    def __init__(self, *, models: tuple[str, ...] = (DEFAULT_MODEL,), completions: list | None = None,
                 chat: list | None = None, respond: Responder | None = None,
                 fail_when: Callable[[str, dict], int | None] | None = None, owned_by: str = "standin",
                 text_only: bool = False):
        self.models = list(models)
        self.owned_by = owned_by  # GET /v1/models says who serves them ("vllm": structured outputs are taken)
        self.text_only = text_only  # the judge preflight's forced tool call is answered with text (no tool calling)
        # (endpoint, body) -> an HTTP status to answer instead, or None: fails chosen requests by their content
        self.fail_when = fail_when
        self._scripts = {"completions": list(completions or ["ok"]), "chat/completions": list(chat or ["ok"])}
        self._respond = respond
        self._lock = threading.Lock()
        self._failures: list[int] = []  # statuses for the next requests, in order
        self._hangs = 0
        self._hang_seconds = 0.0
        self.requests: list[tuple[str, dict]] = []  # (endpoint, body) of every POST, failed ones included
        self.probes: list[tuple[str, dict]] = []  # judge preflight test requests (evaluation/judging/preflight.py)
        self.model_lists = 0  # GET /v1/models requests answered
        self._server = LoopbackServer(self._app())

    @property
    def model(self) -> str:
        return self.models[0]

    @property
    def url(self) -> str:
        return self._server.url

    def fail_next(self, count: int, status: int = 500) -> None:
        with self._lock:
            self._failures.extend([status] * count)

    def hang_next(self, count: int, seconds: float = 30.0) -> None:
        """The next ``count`` requests wait ``seconds`` (or until the server stops) before answering."""
        with self._lock:
            self._hangs += count
            self._hang_seconds = seconds

    def count(self, endpoint: str | None = None) -> int:
        with self._lock:
            return sum(1 for name, _ in self.requests if endpoint is None or name == endpoint)

    def bodies(self, endpoint: str) -> list[dict]:
        with self._lock:
            return [body for name, body in self.requests if name == endpoint]

    def _next_reply(self, endpoint: str, body: dict) -> Reply:
        if self._respond is not None:
            return _as_reply(self._respond(endpoint, body))
        script = self._scripts[endpoint]
        return _as_reply(script.pop(0) if len(script) > 1 else script[0])

    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        def models():
            with self._lock:
                self.model_lists += 1
            return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": self.owned_by} for m in self.models]}

        async def handle(endpoint: str, request: Request):
            body = await request.json()
            if PREFLIGHT_MARKER in json.dumps(body.get("messages")):  # a judge preflight's test request: answered
                with self._lock:  # apart, so scripts and counts see the judge's real requests only
                    self.probes.append((endpoint, body))
                return self._payload(endpoint, body, self._probe_reply(body))
            with self._lock:
                self.requests.append((endpoint, body))
                failure = self.fail_when(endpoint, body) if self.fail_when is not None else None
                failure = failure or (self._failures.pop(0) if self._failures else None)
                hang = self._hangs > 0
                self._hangs -= 1 if hang else 0
            if failure is not None:
                return JSONResponse(status_code=failure, content={"error": {"message": f"stand-in failure {failure}"}})
            if hang:  # stopping the server cancels the wait (uvicorn's graceful-shutdown timeout)
                await asyncio.sleep(self._hang_seconds)
            with self._lock:
                reply = self._next_reply(endpoint, body)
            return self._payload(endpoint, body, reply)

        @app.post("/v1/completions")
        async def completions(request: Request):
            return await handle("completions", request)

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            return await handle("chat/completions", request)

        return app

    def _probe_reply(self, body: dict) -> Reply:
        """A tool-calling endpoint's answer to the preflight's test request: a forced tool call comes back as a
        call of that function (``--judge-mode auto`` then judges with tools); any other request gets text.
        ``text_only=True`` answers like a server without tool calling (``tba serve-model``): text always."""
        choice = body.get("tool_choice")
        if self.text_only or not isinstance(choice, dict):
            return Reply(text="ok")
        name = (choice.get("function") or {}).get("name")
        return Reply(tool_calls=[{"id": "probe", "type": "function", "function": {
            "name": name, "arguments": json.dumps({"reason": "preflight", "answer_status": "Solved"})}}])

    def _payload(self, endpoint: str, body: dict, reply: Reply) -> object:
        if reply.raw is not None:
            return JSONResponse(content=reply.raw)
        prompt_words = _word_count(body.get("prompt")) + sum(_word_count(m.get("content")) for m in body.get("messages", []))
        usage = reply.usage or {"prompt_tokens": prompt_words, "completion_tokens": _word_count(reply.text),
                                "total_tokens": prompt_words + _word_count(reply.text)}
        if endpoint == "completions":
            choice = {"index": 0, "text": reply.text or "", "logprobs": None, "finish_reason": reply.finish_reason}
            kind = "text_completion"
        else:
            message = {"role": "assistant", "content": reply.text}
            if reply.tool_calls:
                message["tool_calls"] = reply.tool_calls
            choice = {"index": 0, "message": message, "finish_reason": reply.finish_reason}
            kind = "chat.completion"
        return {"id": f"standin-{uuid.uuid4().hex[:12]}", "object": kind, "created": int(time.time()),
                "model": body.get("model"), "choices": [choice], "usage": usage}

    def __enter__(self) -> OpenAIStandin:
        self._server.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.stop()
