"""The judge's view of a chat model: ``ChatClient``, and an OpenAI-compatible client over requests.

Any object with ``name``, ``supports_tools`` and ``chat(...)`` returning an OpenAI assistant message dict
can judge. Factories are registered by name in ``CHAT_CLIENTS`` (entry point group
``toolbench_adapter.chat_clients``); each is called as ``factory(model=..., base_url=..., api_key=...)``.
"""

from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable

import requests
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from ..registry import Registry


@runtime_checkable
class ChatClient(Protocol):
    name: str  # shown in tables, e.g. "gpt-4o-mini @ http://host/v1"
    supports_tools: bool

    def chat(self, messages: list[dict], *, tools: list[dict] | None = None, tool_choice: dict | None = None,
             temperature: float | None = None, max_tokens: int | None = None) -> dict:
        """One assistant message: ``{"role": "assistant", "content": str | None, "tool_calls"?: [...]}``."""


class ChatError(RuntimeError):
    """The endpoint failed for good (after retries, or a 4xx that retrying cannot fix)."""


class RetryableHTTPError(ChatError):
    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body[:200]}")
        self.status = status


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, (RetryableHTTPError, requests.ConnectionError, requests.Timeout))


class OpenAIChatClient:
    """``POST {base_url}/chat/completions``; retries 429, 5xx and connection errors with backoff."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, timeout: float = 60.0,
                 retries: int = 3, supports_tools: bool = True, wait_min: float = 1.0, wait_max: float = 10.0,
                 accepts_prefill: bool = False):
        self.base_url = base_url.rstrip("/")
        # vLLM / SGLang continue a final assistant message (continue_final_message); OpenAI's API cannot
        self.accepts_prefill = accepts_prefill
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.supports_tools = supports_tools
        self.name = f"{model} @ {self.base_url}"
        self._session = requests.Session()
        self._post = retry(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(max(1, retries)),
            wait=wait_exponential(multiplier=wait_min, min=wait_min, max=wait_max),
            reraise=True,
        )(self._post_once)

    def chat(self, messages: list[dict], *, tools: list[dict] | None = None, tool_choice: dict | None = None,
             temperature: float | None = None, max_tokens: int | None = None, prefill: str | None = None,
             stop: list[str] | None = None) -> dict:
        payload: dict[str, Any] = {"model": self.model, "messages": messages}
        if stop:
            payload["stop"] = stop
        prefill = prefill if self.accepts_prefill else None
        if prefill:
            payload.update(messages=messages + [{"role": "assistant", "content": prefill}],
                           continue_final_message=True, add_generation_prompt=False)
        if tools:
            payload["tools"] = tools
            if tool_choice is not None:
                payload["tool_choice"] = tool_choice
        if temperature is not None:
            payload["temperature"] = temperature
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        try:
            data = self._post(payload)
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise ChatError(f"cannot reach {self.base_url}: {exc}") from exc
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise ChatError(f"unexpected response shape from {self.base_url}: {str(data)[:200]}") from None
        reply = {"role": "assistant", **message}
        if prefill:  # the content continues the prefill: hand back the whole reply
            reply["content"] = prefill + (reply.get("content") or "")
        return reply

    def _post_once(self, payload: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        response = self._session.post(f"{self.base_url}/chat/completions", json=payload, headers=headers,
                                      timeout=self.timeout)
        if response.status_code == 429 or response.status_code >= 500:
            raise RetryableHTTPError(response.status_code, response.text)
        if response.status_code >= 400:
            raise ChatError(f"HTTP {response.status_code} from {self.base_url}: {response.text[:300]}")
        try:
            return response.json()
        except ValueError:
            raise ChatError(f"non-JSON response from {self.base_url}: {response.text[:200]}") from None


def _openai_factory(*, model: str, base_url: str | None = None, api_key: str | None = None,
                    **options: Any) -> OpenAIChatClient:
    if not base_url:
        from ..errors import InputError

        raise InputError("the openai judge backend needs a base URL", fix="pass --judge-url http://host:port/v1")
    return OpenAIChatClient(base_url, model, api_key, **options)


CHAT_CLIENTS: Registry = Registry("chat_clients")
CHAT_CLIENTS.register("openai", _openai_factory)


def build_chat_client(backend: str, *, model: str, base_url: str | None = None, api_key: str | None = None,
                      **options: Any) -> ChatClient:
    """A ChatClient from a registered factory name (``openai`` or one added by another module)."""
    factory = CHAT_CLIENTS.get(backend)
    return factory(model=model, base_url=base_url, api_key=api_key, **options)
