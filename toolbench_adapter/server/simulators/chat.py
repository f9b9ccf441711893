"""Chat-completions calls to an OpenAI-compatible server (vLLM, OpenAI, ...) for the model-backed simulators,
through the one HTTP layer (toolbench_adapter/net/transport.py): transient faults (timeouts, resets, 5xx, 429 with
its Retry-After) are retried with backoff there; a fault that outlives the retries is final."""

from __future__ import annotations

import re
from typing import Any

from toolbench_adapter.evaluation.comparability import endpoint_host, maker_id
from toolbench_adapter.net.transport import FaultKind, HttpTransport, RetryPolicy

from .base import SimulatorOptions

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


class EndpointFailed(RuntimeError):
    """The model endpoint gave up after the transport's retries (or with a fault retrying cannot fix):
    asking again at once would fail the same way."""

    def __init__(self, message: str, fault: FaultKind | None):
        super().__init__(message)
        self.fault = fault


class BadReply(ValueError):
    """HTTP 200 with JSON, but not a chat completion: worth another sample."""


class SimulatorChat:
    """One simulator's endpoint: ``complete(messages, **params)`` -> the first choice's content.
    Thread-safe (the transport keeps a session per thread); ``options.attempts`` tries per call."""

    def __init__(self, options: SimulatorOptions):
        self.options = options
        headers = {"Authorization": f"Bearer {options.api_key}"} if options.api_key else {}
        url = options.base_url.rstrip("/") + "/chat/completions"
        self.transport = HttpTransport.to(url, policy=RetryPolicy(attempts=max(1, options.attempts)),
                                          timeout=options.timeout_s, headers=headers)

    def complete(self, messages: list[dict], **params: Any) -> str:
        """Raises EndpointFailed when the endpoint failed for good, BadReply for a reply of the wrong shape."""
        body = {"model": self.options.model, "messages": messages,
                **{k: v for k, v in params.items() if v is not None}}
        result = self.transport.post_json("", body)
        if not result.ok:
            raise EndpointFailed(result.describe(), result.fault)
        try:
            return result.data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise BadReply(f"not a chat completion: {str(result.data)[:200]}") from None


def maker_of(name: str, options: SimulatorOptions) -> str:
    """Who made this simulator's answers, as their marks and /stats say it: its name, the model id whole and the
    endpoint's host (provenance.py; the comparability rule judges each answer by it)."""
    return maker_id(name, options.model, endpoint_host(options.base_url))


def strip_fences(text: str) -> str:
    """```json ... ``` around an answer -> the answer."""
    return _FENCE.sub("", text.strip())
