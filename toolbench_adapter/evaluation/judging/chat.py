"""The judge's view of a chat model: ``ChatClient``, and an OpenAI-compatible client over requests.

Any object with ``name``, ``supports_tools`` and ``chat(...)`` returning an OpenAI assistant message dict
can judge. Factories are registered by name in ``CHAT_CLIENTS`` (entry point group
``toolbench_adapter.chat_clients``); each is called as ``factory(model=..., base_url=..., api_key=...)``.
"""

from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable

import requests

from toolbench_adapter.net.transport import (
    FaultKind,
    HttpTransport,
    RetryPolicy,
    classify_exception,
    classify_status,
    short,
    url_list,
)
from toolbench_adapter.parsers.limits import MAX_PARSE_CHARS
from toolbench_adapter.registry import Registry


@runtime_checkable
class ChatClient(Protocol):
    name: str  # shown in tables, e.g. "gpt-4o-mini @ http://host/v1"
    supports_tools: bool

    def chat(self, messages: list[dict], *, tools: list[dict] | None = None, tool_choice: dict | None = None,
             temperature: float | None = None, max_tokens: int | None = None) -> dict:
        """One assistant message: ``{"role": "assistant", "content": str | None, "tool_calls"?: [...]}``."""


class ChatError(RuntimeError):
    """The endpoint failed for good (after retries, or a fault that retrying cannot fix). ``fault`` is the
    transport FaultKind of the last attempt (None for a reply of the wrong shape)."""

    def __init__(self, message: str, *, fault: FaultKind | None = None, status: int | None = None):
        super().__init__(message)
        self.fault = fault
        self.status = status


class MalformedReply(ChatError):
    """The endpoint answered, but not with an assistant message a judge can read (``"message": null``, choices
    empty, content not text, odd tool calls, a reply past MAX_REPLY_CHARS): the judge asks again, as for a
    malformed verdict (judge.py), and counts it; never a TypeError."""


WAIT_MIN_S, WAIT_MAX_S = 1.0, 10.0  # the backoff between tries (--judge-option wait_min / wait_max)
# a verdict is a few hundred characters; the parsers read at most this much of any text (parsers/limits.py)
MAX_REPLY_CHARS = MAX_PARSE_CHARS


def assistant_message(data: Any, source: str) -> dict:
    """``choices[0].message`` of a chat completion, checked (check_message); MalformedReply otherwise."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        what = "no choices" if not isinstance(data, dict) or "choices" not in data else (
            "choices is empty" if choices == [] else f"choices is {_kind(choices)}, not a list")
        raise MalformedReply(f"{source} answered a malformed chat completion: {what} (body: {short(str(data))})")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        what = (f"choices[0] is {_kind(first)}" if not isinstance(first, dict) else
                f"choices[0].message is {_kind(message)}, not an object")
        raise MalformedReply(f"{source} answered a malformed chat completion: {what} (body: {short(str(data))})")
    return check_message(message, source)


def check_message(message: Any, source: str) -> dict:
    """An assistant message a judge can read: an object whose content is text or null and whose tool_calls,
    when present, are a list of objects each naming a function with text (or object) arguments, none past
    MAX_REPLY_CHARS. MalformedReply naming what is wrong otherwise (any ChatClient's reply passes here)."""
    def bad(what: str) -> MalformedReply:
        return MalformedReply(f"{source} answered a malformed assistant message: {what}")

    if not isinstance(message, dict):
        raise bad(f"the message is {_kind(message)}, not an object")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise bad(f"content is {_kind(content)}, not text")
    if content is not None and len(content) > MAX_REPLY_CHARS:
        raise bad(f"content is {len(content):,} characters, more than the {MAX_REPLY_CHARS:,} a verdict may take")
    calls = message.get("tool_calls")
    if calls is None:
        return message
    if not isinstance(calls, list):
        raise bad(f"tool_calls is {_kind(calls)}, not a list")
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise bad(f"tool_calls[{index}] has no function object")
        arguments = function.get("arguments")
        if not isinstance(function.get("name"), str) or not isinstance(arguments, (str, dict)):
            raise bad(f"tool_calls[{index}].function needs a name (text) and arguments (text or an object)")
        if isinstance(arguments, str) and len(arguments) > MAX_REPLY_CHARS:
            raise bad(f"tool_calls[{index}] arguments are {len(arguments):,} characters, more than the "
                      f"{MAX_REPLY_CHARS:,} a verdict may take")
    return message


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


class OpenAIChatClient:
    """``POST {base_url}/chat/completions`` through the one HTTP layer (toolbench_adapter/net/transport.py):
    the transient faults are retried with backoff; ``retries`` counts every attempt, the first included.
    ``base_url`` may list several endpoints serving the same judge: requests go to the least busy one."""

    def __init__(self, base_url: str | list[str], model: str, api_key: str | None = None, *, timeout: float = 60.0,
                 retries: int = 3, supports_tools: bool = True, wait_min: float = WAIT_MIN_S, wait_max: float = WAIT_MAX_S,
                 accepts_prefill: bool = False):
        self.base_urls = [url.rstrip("/") for url in url_list(base_url)]
        self.base_url = ", ".join(self.base_urls)  # one URL as before; several: a label
        # vLLM / SGLang continue a final assistant message (continue_final_message); OpenAI's API cannot
        self.accepts_prefill = accepts_prefill
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.supports_tools = supports_tools
        self.name = f"{model} @ {self.base_url}"
        policy = RetryPolicy(attempts=max(1, retries), backoff_s=wait_min, backoff_max_s=wait_max)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self.transport = HttpTransport.over(self.base_urls, policy=policy, timeout=timeout, headers=headers)

    def served_models(self, base_url: str) -> list[str] | None:
        """``GET {base_url}/models``: the ids served there, or None when the endpoint gives no readable list (some
        gateways serve no /models: then the preflight's test request decides). ChatError when it cannot be
        reached or refuses (401 / 403)."""
        url = f"{base_url}/models"
        try:
            response = self.transport.session().get(url, timeout=min(self.timeout, 10.0))
        except requests.RequestException as exc:
            raise ChatError(f"GET {url}: {exc}", fault=classify_exception(exc)) from None
        if response.status_code in (401, 403):
            raise ChatError(f"GET {url} answered HTTP {response.status_code}: {short(response.text)}",
                            fault=classify_status(response.status_code), status=response.status_code)
        if response.status_code != 200:
            return None
        try:
            return [str(entry["id"]) for entry in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            return None

    def model_entries(self, url: str) -> list[dict]:
        """GET {url}/models's entries (raises what requests and JSON decoding raise)."""
        response = self.transport.session().get(f"{url}/models", timeout=min(self.timeout, 10.0))
        return [entry for entry in response.json()["data"] if isinstance(entry, dict)]

    def constraint_support(self, kind: str) -> str | None:
        """None when every judge URL takes vLLM's structured_outputs: vLLM (GET /models owned_by "vllm"), or a
        server that lists ``structured_outputs`` beside the model (tba serve-model); else why not."""
        for url in self.base_urls:
            try:
                entries = self.model_entries(url)
                owners = {str(entry.get("owned_by")) for entry in entries}
            except (requests.RequestException, ValueError, KeyError, TypeError, AttributeError) as exc:
                return f"cannot read GET {url}/models to see whether it takes structured outputs ({exc})"
            if owners != {"vllm"} and not self.offers_structured_outputs(entries):
                return (f"the judge at {url} is not vLLM (GET /models owned_by: {', '.join(sorted(owners))}) and "
                        "lists no structured_outputs: its structured outputs cannot be asked for")
        return None

    def offers_structured_outputs(self, entries: list[dict] | None = None) -> bool:
        """The judge model's GET /models entry lists ``structured_outputs`` (tba serve-model over a model it can
        constrain), at every URL (``entries``: those of one URL already read)."""
        try:
            listed = [entries] if entries is not None else [self.model_entries(url) for url in self.base_urls]
        except (requests.RequestException, ValueError, KeyError, TypeError, AttributeError):
            return False
        return all(any(e.get("id") == self.model and e.get("structured_outputs") for e in each) for each in listed)

    def weights(self) -> str | None:
        """The weights the judge model runs, as its server lists them (GET /models "root": vLLM, tba
        serve-model), or None."""
        try:
            entries = self.model_entries(self.base_urls[0])
        except (requests.RequestException, ValueError, KeyError, TypeError, AttributeError):
            return None
        root = next((e.get("root") for e in entries if e.get("id") == self.model), None)
        return str(root) if root else None

    def chat(self, messages: list[dict], *, tools: list[dict] | None = None, tool_choice: dict | None = None,
             temperature: float | None = None, max_tokens: int | None = None, prefill: str | None = None,
             stop: list[str] | None = None, constraint: Any = None) -> dict:
        payload: dict[str, Any] = {"model": self.model, "messages": messages}
        if constraint is not None:  # --judge-constrain on vLLM: its structured outputs hold the verdict's schema
            payload["structured_outputs"] = {"json": constraint.json_schema}
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
        result = self.transport.post_json("chat/completions", payload)
        if not result.ok:
            unreachable = result.fault in (FaultKind.CONNECTION_ERROR, FaultKind.TIMEOUT)
            prefix = f"cannot reach {self.base_url}: " if unreachable else ""
            raise ChatError(prefix + result.describe(), fault=result.fault, status=result.status)
        message = assistant_message(result.data, self.base_url)
        reply = {"role": "assistant", **message}
        if prefill:  # the content continues the prefill: hand back the whole reply
            reply["content"] = prefill + (reply.get("content") or "")
        return reply


def _openai_factory(*, model: str, base_url: str | None = None, api_key: str | None = None,
                    **options: Any) -> OpenAIChatClient:
    if not base_url:
        from toolbench_adapter.errors import InputError

        raise InputError("the openai judge backend needs a base URL", fix="pass --judge-url http://host:port/v1")
    return OpenAIChatClient(base_url, model, api_key, **options)


CHAT_CLIENTS: Registry = Registry("chat_clients")
CHAT_CLIENTS.register("openai", _openai_factory)


def build_chat_client(backend: str, *, model: str, base_url: str | None = None, api_key: str | None = None,
                      **options: Any) -> ChatClient:
    """A ChatClient from a registered factory name (``openai`` or one added by another module)."""
    factory = CHAT_CLIENTS.get(backend)
    return factory(model=model, base_url=base_url, api_key=api_key, **options)
