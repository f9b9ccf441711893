"""One chat-completions call to an OpenAI-compatible server (vLLM, OpenAI, ...), via requests."""

from __future__ import annotations

import re
from typing import Any

import requests

from .base import SimulatorOptions

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def chat_completion(options: SimulatorOptions, messages: list[dict], **params: Any) -> str:
    """The first choice's content; raises requests.RequestException / ValueError / KeyError on failure."""
    body = {"model": options.model, "messages": messages, **{k: v for k, v in params.items() if v is not None}}
    headers = {"Authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    url = options.base_url.rstrip("/") + "/chat/completions"
    response = requests.post(url, json=body, headers=headers, timeout=options.timeout_s)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"] or ""


def strip_fences(text: str) -> str:
    """```json ... ``` around an answer -> the answer."""
    return _FENCE.sub("", text.strip())
