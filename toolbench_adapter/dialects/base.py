"""A dialect pairs prompt rendering with a default parser.

Conversation history is stored in one canonical shape whatever the dialect (the upstream "current"
answer-file messages): system, user, assistant {content, tool_calls}, tool {name, content, tool_call_id}.
A dialect renders that history into what its backend receives (a text prompt or chat messages) and
decides what an assistant turn stores as content (the raw generation, or the thought only).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from ..parsers.base import ParsedTurn
from ..registry import Registry
from ..toolset import Toolset


@dataclass
class Rendered:
    prompt: str | None = None  # completion-style backends
    messages: list[dict] | None = None  # chat-style backends
    tools: list[dict] | None = None  # native tools (openai-tools only)
    stop: list[str] = field(default_factory=list)
    prefill: str = ""  # text the backend appends to the prompt and returns in front of its output


@dataclass
class Dialect(ABC):
    name: str = "base"
    default_parser: str = "react-find"
    options: dict[str, Any] = field(default_factory=dict)

    @abstractmethod
    def render(self, messages: list[dict], toolset: Toolset) -> Rendered:
        """The history as the backend receives it."""

    def assistant_content(self, text: str | None, parsed: ParsedTurn) -> str | None:
        """What an assistant turn stores as content: the raw generation by default."""
        return text

    def sends(self) -> tuple[bool, bool]:
        """(chat messages?, native tools?): what render() hands the backend, so a run can refuse a backend
        that cannot take it before any query runs."""
        return True, False

    def describe(self) -> dict:
        return {"name": self.name, "default_parser": self.default_parser, **self.options}


def for_backend(messages: list[dict]) -> list[dict]:
    """Chat payload as upstream sends it: drop messages marked invalid, pop legacy function_call keys.
    Copies only: the stored history is never mutated."""
    out = []
    for message in messages:
        if message.get("valid") is False:
            continue
        clean = {k: v for k, v in message.items() if k not in ("valid", "function_call")}
        out.append(clean)
    return out


# name -> Dialect subclass or "module:attr"; entry point group toolbench_adapter.dialects
DIALECTS: Registry[type] = Registry("dialects")
