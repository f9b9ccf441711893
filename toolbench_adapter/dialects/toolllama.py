"""ToolLLaMA: the exact upstream text prompt (tool_llama_model.py / tool_llama_vllm_model.py).

``System: {process_system_message(...)}\nUser: \n{query}\nBegin!\n\nAssistant: {raw}\nFunction: {obs}\n...Assistant:\n``

Options (each recorded in the run manifest; the defaults are upstream's):
- history: "raw" (STB since 2024-09: the whole generation) or "thought" (ToolBench / legacy: thought only).
- template: "raw" (the text prompt as above, for /v1/completions) or "chat" (that same text sent as one user
  message through the model's chat template: for instruction-tuned models that were not trained on it).
- prefill: text placed after the generation prompt and returned in front of the output (e.g. "Thought: ").
- example: append one worked step built from the query's own first function (for small models).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..messages import process_system_message
from ..parsers.base import ParsedTurn
from ..protocol import react as R
from ..toolset import Toolset
from .base import Dialect, Rendered

DEFAULTS = {"history": "raw", "template": "raw", "prefill": "", "example": False}


@dataclass
class ToolLLaMADialect(Dialect):
    name: str = "toolllama"
    default_parser: str = "react-find"
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.options) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown toolllama option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
        self.options = {**DEFAULTS, **self.options}
        if self.options["history"] not in ("raw", "thought"):
            raise ValueError("toolllama history must be 'raw' or 'thought'")
        if self.options["template"] not in ("raw", "chat"):
            raise ValueError("toolllama template must be 'raw' or 'chat'")

    def render_text(self, messages: list[dict], toolset: Toolset) -> str:
        functions = toolset.inner_functions
        parts = []
        for message in messages:  # "valid": False messages are kept, as upstream does for ToolLLaMA
            role = R.ROLE_MAP.get(message["role"])
            if role is None:
                continue
            content = message.get("content") or ""
            if role == R.ROLE_SYSTEM:
                content = process_system_message(content, functions)
                if self.options["example"]:
                    content += worked_example(toolset)
            parts.append(R.TURN_TEMPLATE.format(role=role, content=content))
        parts.append(R.GENERATION_PROMPT)
        return "".join(parts)

    def render(self, messages: list[dict], toolset: Toolset) -> Rendered:
        text = self.render_text(messages, toolset)
        prefill = self.options["prefill"]
        if self.options["template"] == "chat":
            return Rendered(messages=[{"role": "user", "content": text}], stop=[R.STOP], prefill=prefill)
        return Rendered(prompt=text, stop=[R.STOP], prefill=prefill)

    def assistant_content(self, text: str | None, parsed: ParsedTurn) -> str | None:
        if self.options["history"] == "thought":
            return parsed.thought
        return text


def worked_example(toolset: Toolset) -> str:
    """One step in the trained format, built from the query's first function and its example values."""
    first = toolset.inner_functions[0]
    properties = first["parameters"].get("properties", {})
    required = [name for name in first["parameters"].get("required", []) if name]
    arguments = {name: properties[name].get("example_value", "") for name in required if name in properties}
    return (
        "\nExample of one step:\n"
        f"Thought: I should call {first['name']} first.\n"
        f"Action: {first['name']}\n"
        f"Action Input: {json.dumps(arguments)}\n"
        "Example of the last step:\n"
        "Thought: I have what the user asked for.\n"
        "Action: Finish\n"
        'Action Input: {"return_type": "give_answer", "final_answer": "<the answer>"}\n'
    )
