"""A scripted model: answers from a Python function (tests, benchmarks, dry runs of a set-up).

``ScriptedBackend(script)`` calls ``script(request) -> Completion | str`` for every request, after an
optional fixed delay (harness-overhead benchmarks). Without a script it plays a minimal agent with native
tool calls: call the first function with its example values, then Finish with an answer; its natural
dialect is then openai-tools. A script brings its own (``natural_dialect=...``, default: none declared).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from toolbench_adapter.errors import OptionError

from .base import Completion, ModelRequest, backend_option, reject_unknown_options


def scripted_call(tools: list[dict] | None, turn: int, final_answer: str = "scripted answer") -> dict:
    """The scripted agent's tool call at ``turn``: the first function with its required example values, then
    Finish with ``final_answer`` (id from the turn, so any process or endpoint answers a request the same)."""
    functions = [t["function"] for t in tools or []]
    if turn == 0 and functions and functions[0]["name"] != "Finish":
        first = functions[0]
        properties = first["parameters"].get("properties", {})
        arguments = {k: v.get("example_value", "") for k, v in properties.items()
                     if k in first["parameters"].get("required", [])}
        call = {"name": first["name"], "arguments": json.dumps(arguments)}
    else:
        call = {"name": "Finish", "arguments": json.dumps({"return_type": "give_answer", "final_answer": final_answer})}
    return {"id": f"call_{turn}", "type": "function", "function": call}


def default_script(request: ModelRequest) -> Completion:
    return Completion(text=None, tool_calls=[scripted_call(request.tools, len(request.key.get("path", [])))])


class ScriptedBackend:
    name = "scripted"
    natural_dialect: str | None = "openai-tools"  # the default script answers with native tool calls

    def __init__(self, script: Callable[[ModelRequest], Completion | str] | None = None, *, delay_s: float = 0.0,
                 model: str = "scripted", natural_dialect: str | None = None,
                 base_url: str | list[str] | None = None,  # accepted so every backend takes the same keywords; not used
                 api_key: str | None = None, **unknown: object):
        # its known options, as the other backends: --backend-option retries=lots is exit 2, not recorded and ignored
        reject_unknown_options(type(self), unknown)
        self.script = script or default_script
        if script is not None:
            self.natural_dialect = natural_dialect
        self.delay_s = backend_option("delay_s", delay_s)
        if self.delay_s < 0:
            raise OptionError(f"delay_s={self.delay_s} is negative", setting="backend_options", key="delay_s",
                              example=0.1)
        self.model_name = model
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()

    def preflight(self) -> None:
        return None

    def complete(self, request: ModelRequest) -> Completion:
        started = time.perf_counter()
        with self._lock:
            self.requests.append(request)
        if self.delay_s:
            time.sleep(self.delay_s)
        out = self.script(request)
        completion = Completion(text=out) if isinstance(out, str) else out
        completion.latency_s = time.perf_counter() - started
        completion.prompt_tokens = completion.prompt_tokens or len((request.prompt or json.dumps(request.messages)).split())
        completion.completion_tokens = completion.completion_tokens or len((completion.text or "").split()) + 1
        completion.finish_reason = completion.finish_reason or "stop"
        return completion
