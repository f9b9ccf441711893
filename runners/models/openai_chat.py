"""``openai-chat``: chat messages (and native tools) sent to POST {base_url}/chat/completions.

As upstream (reference §4): messages marked ``"valid": False`` (DFS diversity prompts) are left out and
``function_call`` keys are dropped, from copies here (upstream mutates the stored history); the full tool
list goes out with no tool_choice, so parallel calls are allowed. Without tools it is plain chat, which
the text dialects use.
"""

from __future__ import annotations

import time

from .base import MODEL_ENDPOINT, Completion, ModelRequest, reject_unknown_options
from .openai_http import DEFAULT_BASE_URL, EndpointError, OpenAIEndpoint, first_choice, read_usage

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


class OpenAIChatBackend:
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
        **unknown,
    ):
        reject_unknown_options(type(self), unknown)
        self.endpoint = OpenAIEndpoint(base_url=base_url, model=model, api_key=api_key, timeout=timeout,
                                       retries=retries, backoff=backoff, backoff_max=backoff_max,
                                       rate_per_s=rate_per_s)
        # upstream sends no temperature (API default 1); send_temperature=False reproduces that
        self.send_temperature = send_temperature

    @property
    def model(self) -> str | None:
        return self.endpoint.model

    def preflight(self) -> None:
        self.endpoint.preflight()

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
        if request.stop:
            body["stop"] = list(request.stop)
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
            data = self.endpoint.post("chat/completions", self.request_body(request))
            choice = first_choice(data)
        except EndpointError as exc:
            return Completion(error=f"{self.name}: {exc}", error_kind=MODEL_ENDPOINT,
                              latency_s=time.perf_counter() - start)
        message = choice.get("message") or {}
        prompt_tokens, completion_tokens, _ = read_usage(data)
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
