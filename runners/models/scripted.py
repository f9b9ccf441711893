"""A scripted model: answers from a Python function (tests, benchmarks, dry runs of a set-up).

``ScriptedBackend(script)`` calls ``script(request) -> Completion | str`` for every request, after an
optional fixed delay (harness-overhead benchmarks). Without a script it plays a minimal agent: call the first
function with its example values, then Finish with an answer, as native tool calls when the request carries
native tools (its natural dialect, openai-tools) and as ToolLLaMA text (Thought / Action / Action Input) when it
carries a text prompt: its ``text_dialect`` is toolllama, so a run that names a text parser (react-find, ...) and
no dialect gets toolllama (preflight.fit_dialect). A script brings its own (``natural_dialect=...``, default: none declared).

``answer_rate=p`` (``--backend-option answer_rate=0.5``) makes it an agent of known skill, for trials and their
statistics (issue 42): each (query, seed) it answers (Finish give_answer) with probability p and gives up otherwise
(Finish give_up_and_restart, which a judge never finds Solved), the draw a hash of the request's seed and the query,
so a rerun draws the same and trial i (seed + i) draws anew. Without it the agent answers every query, every time.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable

from toolbench_adapter.errors import OptionError
from toolbench_adapter.protocol.prompts import PROCESS_SYSTEM_APIS_PREFIX

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
    turn = len(request.key.get("path", []))
    if request.tools is None:  # a text dialect: the same agent written as ToolLLaMA text
        return Completion(text=react_text(scripted_call(functions_in_prompt(request), turn)))
    return Completion(text=None, tool_calls=[scripted_call(request.tools, turn)])


GIVE_UP = json.dumps({"return_type": "give_up_and_restart"})


def draw(request: ModelRequest) -> float:
    """A uniform number in [0, 1) from the request's seed and query: the same for every turn of one trial."""
    key = f"{request.seed}:{request.key.get('group')}:{request.key.get('query_id')}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def rated_script(answer_rate: float) -> Callable[[ModelRequest], Completion]:
    """The default agent, but its Finish gives up unless this (query, seed)'s draw is below ``answer_rate``."""
    def script(request: ModelRequest) -> Completion:
        completion = default_script(request)
        if draw(request) < answer_rate:
            return completion
        calls = [scripted_call(request.tools if request.tools is not None else functions_in_prompt(request),
                               len(request.key.get("path", [])))]
        if calls[0]["function"]["name"] == "Finish":
            calls[0]["function"]["arguments"] = GIVE_UP
        if request.tools is None:
            return Completion(text=react_text(calls[0]))
        return Completion(text=None, tool_calls=calls)

    return script



def functions_in_prompt(request: ModelRequest) -> list[dict]:
    """The functions a text prompt lists (toolllama: a Python literal after upstream's marker), as native tools;
    [] when none can be read (the agent then calls Finish at once)."""
    import ast

    text = request.prompt if request.prompt is not None else "\n".join(
        str(m.get("content") or "") for m in request.messages or [])
    marker = PROCESS_SYSTEM_APIS_PREFIX.strip("\n")  # where the toolllama system message lists them
    start = text.find(marker)
    if start < 0:
        return []
    listing = text[start + len(marker):]
    end = listing.find("]\n")
    try:
        functions = ast.literal_eval(listing[: end + 1] if end >= 0 else listing.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return [{"type": "function", "function": f} for f in functions if isinstance(f, dict) and "parameters" in f]


def react_text(call: dict) -> str:
    function = call["function"]
    return (f"Thought: I will call {function['name']}.\nAction: {function['name']}\n"
            f"Action Input: {function['arguments']}")


class ScriptedBackend:
    name = "scripted"
    natural_dialect: str | None = "openai-tools"  # the default script answers with native tool calls
    text_dialect: str | None = "toolllama"  # ... and with ToolLLaMA text to a text prompt (a script: none)

    def __init__(self, script: Callable[[ModelRequest], Completion | str] | None = None, *, delay_s: float = 0.0,
                 model: str = "scripted", natural_dialect: str | None = None,
                 base_url: str | list[str] | None = None,  # accepted so every backend takes the same keywords; not used
                 api_key: str | None = None, answer_rate: float | str | None = None, **unknown: object):
        # its known options, as the other backends: --backend-option retries=lots is exit 2, not recorded and ignored
        reject_unknown_options(type(self), unknown)
        self.answer_rate = backend_option("answer_rate", answer_rate)
        if self.answer_rate is not None and not 0 <= self.answer_rate <= 1:
            raise OptionError(f"answer_rate={self.answer_rate} is not a probability", setting="backend_options",
                              key="answer_rate", example=0.5)
        if self.answer_rate is not None and script is not None:
            raise OptionError("answer_rate is the default agent's: a script decides its own answers",
                              setting="backend_options", key="answer_rate", example=0.5)
        self.script = script or (rated_script(self.answer_rate) if self.answer_rate is not None else default_script)
        if script is not None:
            self.natural_dialect = natural_dialect
            self.text_dialect = None
        self.delay_s = backend_option("delay_s", delay_s)  # its range: base.OPTION_RANGES
        self.model_name = model
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()

    @property
    def takes_seed(self) -> bool:
        """With an answer rate its answers are draws from the request's seed: trials differ."""
        return self.answer_rate is not None

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
