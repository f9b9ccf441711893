"""``openai-chat``: chat messages (and native tools) sent to POST {base_url}/chat/completions.

As upstream (reference §4): messages marked ``"valid": False`` (DFS diversity prompts) are left out and
``function_call`` keys are dropped, from copies here (upstream mutates the stored history); the full tool
list goes out with no tool_choice, so parallel calls are allowed. Without tools it is plain chat, which
the text dialects use.
"""

from __future__ import annotations

import time

from toolbench_adapter.errors import OptionError

from ..failures import CONTEXT_LENGTH, MODEL_ENDPOINT
from . import constrain
from .base import Completion, ModelRequest, reject_unknown_options
from .openai_http import (
    DEFAULT_BASE_URL,
    ContextLengthExceeded,
    EndpointError,
    OpenAIEndpoint,
    first_choice,
    malformed,
    read_usage,
)

# keys of our stored messages that an OpenAI server must not see
_LOCAL_KEYS = ("function_call", "valid")


def outgoing_messages(messages: list[dict]) -> list[dict]:
    """The messages as sent: invalid ones dropped, local keys removed, the caller's dicts untouched."""
    return [{k: v for k, v in m.items() if k not in _LOCAL_KEYS} for m in messages if m.get("valid", True) is not False]


def normalise_tool_calls(calls: list | None) -> list[dict] | None:
    """Keep only the fields the rest of the pipeline reads; arguments always as a string."""
    if not calls:
        return None
    out = []
    for call in calls:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        out.append({
            "id": call.get("id"),
            "type": call.get("type") or "function",
            "function": {"name": function.get("name") or "", "arguments": "" if arguments is None else str(arguments)},
        })
    return out


def response_format_option(value: str | dict | None) -> dict | None:
    """--backend-option response_format=json_object (or text), or a response_format object from a config file."""
    if value is None or value in ("text", "none", ""):
        return None
    if isinstance(value, dict):
        return value
    if value == "json_object":
        return {"type": "json_object"}
    raise OptionError(f"backend option response_format={value!r} is not json_object or text (or a response_format "
                      "object, in a --config file)", setting="backend_options", key="response_format",
                      example="json_object")


def read_message(data: dict, url: str) -> dict:
    """choices[0].message of a chat reply, checked for the shape the pipeline reads (a malformed one is named)."""
    message = first_choice(data, url).get("message")
    if message is None:  # no reply to read: the endpoint's fault, not a model that chose to say nothing
        raise malformed(url, "choices[0].message is missing or null", data)
    if not isinstance(message, dict):
        raise malformed(url, "choices[0].message is not an object", data)
    if not isinstance(message.get("content"), str | None):
        raise malformed(url, "choices[0].message.content is not a string", data)
    calls = message.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(
            isinstance(c, dict) and isinstance(c.get("function") or {}, dict) for c in calls)):
        raise malformed(url, "choices[0].message.tool_calls is not a list of calls with a function object", data)
    return message


class OpenAIChatBackend:
    takes_seed = True  # a trial's seed goes out as the request's "seed" (OpenAI, vLLM and SGLang read it)
    name = "openai-chat"
    accepts_messages = True
    accepts_prompt = False  # a text prompt goes to openai-completions (toolllama over chat: template=chat)
    supports_tools = True

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 600.0,
        retries: int = 3,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
        rate_per_s: float | None = None,
        send_temperature: bool = True,
        structured: str = constrain.AUTO,
        response_format: str | dict | None = None,
        **unknown,
    ):
        reject_unknown_options(type(self), unknown)
        self.endpoint = OpenAIEndpoint(base_url=base_url, model=model, api_key=api_key, timeout=timeout,
                                       retries=retries, backoff=backoff, backoff_max=backoff_max,
                                       rate_per_s=rate_per_s)
        # upstream sends no temperature (API default 1); send_temperature=False reproduces that
        self.send_temperature = send_temperature
        # --constrain schema: which structured-output fields the endpoint takes (constrain.py; auto: from GET /models)
        self.structured = constrain.flavour_option(structured)
        # a JSON response mode for every request (json_object, or a response_format object); never with native
        # tools (runners/search/structured.py refuses that pair before any query runs)
        self.response_format = response_format_option(response_format)

    @property
    def model(self) -> str | None:
        return self.endpoint.model

    def preflight(self) -> None:
        self.endpoint.preflight()

    @property
    def json_response_mode(self) -> str | None:
        """The JSON response mode every request asks for (json_object, json_schema), or None."""
        kind = (self.response_format or {}).get("type")
        return kind if kind in ("json_object", "json_schema") else None

    def constraint_support(self, dialect: str) -> str | None:
        """None: --constrain schema works on this endpoint (after preflight: auto reads GET /models); else why not."""
        return constrain.endpoint_support(constrain.flavour_of(self.structured, self.endpoint), dialect, self.name,
                                          self.endpoint)

    def request_body(self, request: ModelRequest) -> dict:
        body: dict = {
            "model": self.endpoint.model,
            "messages": outgoing_messages(request.messages or []),
            "max_tokens": request.max_tokens,
            "frequency_penalty": 0,
            "presence_penalty": 0,
        }
        if self.send_temperature:
            body["temperature"] = request.temperature
        if request.seed is not None:  # a trial's seed (tba run --trials); none otherwise, as upstream sends none
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        if self.response_format is not None:
            body["response_format"] = self.response_format
        # --constrain schema: the endpoint's structured-output fields for this reply's grammar
        body.update(constrain.body_fields(request.extra.get("constraint"),
                                          constrain.flavour_of(self.structured, self.endpoint)))
        if request.tools:
            body["tools"] = request.tools
            # inference never forces a tool; a judge may (forced verdict call)
            if request.extra.get("tool_choice") is not None:
                body["tool_choice"] = request.extra["tool_choice"]
        prefill = request.extra.get("prefill", "")
        if prefill:
            # start the reply for the model: vLLM's and SGLang's chat API continue a final assistant message
            # (OpenAI's own API has no such fields, so they are sent only when a prefill is asked for)
            body["messages"] = body["messages"] + [{"role": "assistant", "content": prefill}]
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return body

    def complete(self, request: ModelRequest) -> Completion:
        start = time.perf_counter()
        if not request.messages:
            return Completion(error=f"{self.name} needs chat messages (request.messages); "
                                    "text prompts go to the openai-completions backend")
        try:
            data, url = self.endpoint.post_reply("chat/completions", self.request_body(request))
            message = read_message(data, url)
            prompt_tokens, completion_tokens, _ = read_usage(data, url)
        except ContextLengthExceeded as exc:  # the model's limit: the chain ends here, the query finishes
            return Completion(error=f"{self.name}: the request is longer than the model's context: {exc}",
                              error_kind=CONTEXT_LENGTH, latency_s=time.perf_counter() - start)
        except EndpointError as exc:
            return Completion(error=f"{self.name}: {exc}", error_kind=MODEL_ENDPOINT,
                              latency_s=time.perf_counter() - start)
        choice = data["choices"][0]
        text = message.get("content")
        prefill = request.extra.get("prefill", "")
        if prefill:  # the reply continues the prefill: the parser sees both, as with the other backends
            text = prefill + (text or "")
        return Completion(
            text=text,
            tool_calls=normalise_tool_calls(message.get("tool_calls")),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=time.perf_counter() - start,
            finish_reason=choice.get("finish_reason"),
            raw=data,
        )
