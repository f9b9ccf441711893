"""``openai-completions``: a prompt rendered on the client, sent to POST {base_url}/completions.

The defaults are the upstream ToolLLaMA vLLM settings (reference §3.4): temperature 0, max_tokens 1024,
stop "</s>", echo false, truncate_prompt_tokens 7168 as a body field. Because the prompt is rendered here,
results never depend on a server-side tool parser.
"""

from __future__ import annotations

import time

from toolbench_adapter.protocol.functions import FINISH_NAME
from toolbench_adapter.protocol.react import (
    CONTEXT_TOKENS,
    STOP,
    TOO_LONG_CONTENT,
    TOO_LONG_GIVE_UP_ARGUMENTS,
    TOO_LONG_TOOL_CALL_ID,
    VLLM_TRUNCATE_PROMPT_TOKENS,
)

from ..failures import CONTEXT_LENGTH, MODEL_ENDPOINT
from . import constrain
from .base import Completion, ModelRequest, backend_option, reject_unknown_options
from .openai_http import (
    DEFAULT_BASE_URL,
    ContextLengthExceeded,
    EndpointError,
    OpenAIEndpoint,
    first_choice,
    malformed,
    read_usage,
)


def merge_stops(defaults: list[str] | tuple[str, ...], extra: list[str]) -> list[str]:
    """Default stops first, then the request's, without duplicates."""
    return list(dict.fromkeys([*defaults, *extra]))


def forced_give_up(text: str) -> tuple[str, list[dict]]:
    """Upstream's answer to a response that filled the context: the text is kept behind a notice and
    one Finish give_up_and_restart call replaces whatever the model said."""
    call = {"id": TOO_LONG_TOOL_CALL_ID, "type": "function",
            "function": {"name": FINISH_NAME, "arguments": TOO_LONG_GIVE_UP_ARGUMENTS}}
    return TOO_LONG_CONTENT + text, [call]


class OpenAICompletionsBackend:
    takes_seed = True  # a trial's seed goes out as the request's "seed" (OpenAI, vLLM and SGLang read it)
    name = "openai-completions"
    accepts_messages = False
    supports_tools = False

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
        stop: list[str] | tuple[str, ...] = (STOP,),
        truncate_prompt_tokens: int | None = VLLM_TRUNCATE_PROMPT_TOKENS,
        force_give_up_when_too_long: bool = True,
        context_tokens: int = CONTEXT_TOKENS,
        structured: str = constrain.AUTO,
        **unknown,
    ):
        reject_unknown_options(type(self), unknown)
        self.endpoint = OpenAIEndpoint(base_url=base_url, model=model, api_key=api_key, timeout=timeout,
                                       retries=retries, backoff=backoff, backoff_max=backoff_max,
                                       rate_per_s=rate_per_s)
        self.stop = (stop,) if isinstance(stop, str) else tuple(stop)
        if isinstance(truncate_prompt_tokens, str) and truncate_prompt_tokens.lower() in ("none", ""):
            truncate_prompt_tokens = None  # from the CLI: truncate_prompt_tokens=none leaves the field out
        self.truncate_prompt_tokens = backend_option("truncate_prompt_tokens", truncate_prompt_tokens, int)
        self.force_give_up_when_too_long = force_give_up_when_too_long
        self.context_tokens = backend_option("context_tokens", context_tokens, int)
        # --constrain schema: which structured-output fields the endpoint takes (constrain.py; auto: from GET /models)
        self.structured = constrain.flavour_option(structured)

    @property
    def model(self) -> str | None:
        return self.endpoint.model

    def preflight(self) -> None:
        self.endpoint.preflight()

    def constraint_support(self, dialect: str) -> str | None:
        """None: --constrain schema works on this endpoint (after preflight: auto reads GET /models); else why not."""
        return constrain.endpoint_support(constrain.flavour_of(self.structured, self.endpoint), dialect, self.name,
                                          self.endpoint)

    def request_body(self, request: ModelRequest) -> dict:
        prefill = request.extra.get("prefill", "")
        body = {
            "model": self.endpoint.model,
            "prompt": request.prompt + prefill,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "stop": merge_stops(self.stop, request.stop),
            "echo": False,
        }
        if request.seed is not None:  # a trial's seed (tba run --trials); none otherwise, as upstream sends none
            body["seed"] = request.seed
        truncate = request.extra.get("truncate_prompt_tokens", self.truncate_prompt_tokens)
        if truncate is not None:
            body["truncate_prompt_tokens"] = truncate  # vLLM reads it from the body (upstream: extra_body)
        # --constrain schema: the endpoint's structured-output fields for this reply's grammar
        body.update(constrain.body_fields(request.extra.get("constraint"),
                                          constrain.flavour_of(self.structured, self.endpoint)))
        return body

    def complete(self, request: ModelRequest) -> Completion:
        start = time.perf_counter()
        if request.prompt is None:
            return Completion(error=f"{self.name} needs a text prompt (request.prompt); "
                                    "chat messages go to the openai-chat backend")
        try:
            data, url = self.endpoint.post_reply("completions", self.request_body(request))
            choice = first_choice(data, url)
            if not isinstance(choice.get("text"), str | None):
                raise malformed(url, "choices[0].text is not a string", data)
            prompt_tokens, completion_tokens, total = read_usage(data, url)
        except ContextLengthExceeded as exc:  # the model's limit: the chain ends here, the query finishes
            return Completion(error=f"{self.name}: the request is longer than the model's context: {exc}",
                              error_kind=CONTEXT_LENGTH, latency_s=time.perf_counter() - start)
        except EndpointError as exc:
            return Completion(error=f"{self.name}: {exc}", error_kind=MODEL_ENDPOINT,
                              latency_s=time.perf_counter() - start)
        text = request.extra.get("prefill", "") + (choice.get("text") or "")
        tool_calls = None
        if self.force_give_up_when_too_long and total >= self.context_tokens:
            text, tool_calls = forced_give_up(text)
        return Completion(
            text=text,
            tool_calls=tool_calls,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=time.perf_counter() - start,
            finish_reason=choice.get("finish_reason"),
            raw=data,
        )
