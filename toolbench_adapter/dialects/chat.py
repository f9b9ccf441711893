"""Chat dialects: native OpenAI tools, and three text formats sent through a chat template.

openai-tools sends the functions as native tools (upstream's chatgpt_function_model.py behaviour).
The text dialects (json-object, jsonl, hermes) put the function list and a format instruction, written by
this project, into the system message; the model answers in text that the paired parser reads.
Tool results always go back as the pure JSON observation, never padded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolbench_adapter.queryset.toolset import Toolset

from .base import Dialect, Rendered, for_backend

FUNCTIONS_INTRO = "\nYou can call these functions (JSON schema):\n"

JSON_OBJECT_FORMAT = """
Answer every turn with exactly one JSON object and nothing else:
{"think": "<your reasoning>", "action": "<function name>", "arguments": {<arguments>}}
When you are done, call the function Finish, or give the final answer directly:
{"think": "<your reasoning>", "answer": "<the final answer for the user>"}
The result of each call comes back in the next message as JSON."""

JSONL_FORMAT = """
Answer with one line per function call, each line one JSON object:
{"name": "<function name>", "parameters": {<arguments>}, "call_id": "<any id>"}
You may put several lines in one turn to make several calls. Call Finish to end the task:
{"name": "Finish", "parameters": {"return_type": "give_answer", "final_answer": "<answer>"}}
The results come back in the next messages as JSON, one per call, in order."""

HERMES_FORMAT = """
Think first, then call functions by writing, for each call:
<tool_call>
{"name": "<function name>", "arguments": {<arguments>}}
</tool_call>
Call Finish with {"return_type": "give_answer", "final_answer": "..."} to end the task.
Each result comes back as a tool message holding JSON."""


@dataclass
class OpenAIToolsDialect(Dialect):
    name: str = "openai-tools"
    default_parser: str = "openai-tools"
    options: dict[str, Any] = field(default_factory=dict)

    def render(self, messages: list[dict], toolset: Toolset) -> Rendered:
        return Rendered(messages=for_backend(messages), tools=toolset.openai_tools)

    def sends(self) -> tuple[bool, bool]:
        return True, True


@dataclass
class TextChatDialect(Dialect):
    """A text format over chat: the format text follows the function list in the system message."""

    format_text: str = ""
    observation_role: str = "user"  # how tool results are shown to a model without native tools

    def render(self, messages: list[dict], toolset: Toolset) -> Rendered:
        functions = json.dumps(toolset.inner_functions, ensure_ascii=False)
        rendered: list[dict] = []
        for message in for_backend(messages):
            role = message["role"]
            if role == "system":
                rendered.append({"role": "system",
                                 "content": message["content"] + FUNCTIONS_INTRO + functions + self.format_text})
            elif role == "assistant":
                rendered.append({"role": "assistant", "content": message.get("content") or ""})
            elif role in ("tool", "function"):
                rendered.append({"role": self.observation_role, "content": message.get("content") or ""})
            else:
                rendered.append({"role": role, "content": message.get("content") or ""})
        return Rendered(messages=_merge_consecutive(rendered))


def _merge_consecutive(messages: list[dict]) -> list[dict]:
    """Several results of one turn shown as user messages are joined (chat templates want alternation)."""
    merged: list[dict] = []
    for message in messages:
        if merged and message["role"] == "user" and merged[-1]["role"] == "user":
            merged[-1] = {"role": "user", "content": merged[-1]["content"] + "\n" + message["content"]}
        else:
            merged.append(dict(message))
    return merged


@dataclass
class JsonObjectDialect(TextChatDialect):
    name: str = "json-object"
    default_parser: str = "json-object"
    format_text: str = JSON_OBJECT_FORMAT


@dataclass
class JsonlDialect(TextChatDialect):
    name: str = "jsonl"
    default_parser: str = "jsonl"
    format_text: str = JSONL_FORMAT


@dataclass
class HermesDialect(TextChatDialect):
    name: str = "hermes"
    default_parser: str = "hermes"
    format_text: str = HERMES_FORMAT
    observation_role: str = "tool"
