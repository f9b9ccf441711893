"""ToolLLaMA: the exact upstream text prompt (tool_llama_model.py / tool_llama_vllm_model.py).

``System: {process_system_message(...)}\nUser: \n{query}\nBegin!\n\nAssistant: {raw}\nFunction: {obs}\n...Assistant:\n``

Options (each recorded in the run manifest; the defaults are upstream's):
- history: "raw" (STB since 2024-09: the whole generation) or "thought" (ToolBench / legacy: thought only).
- template: "raw" (the text prompt as above, for /v1/completions) or "chat" (that same text sent as one user
  message through the model's chat template: for instruction-tuned models that were not trained on it).
- prefill: text placed after the generation prompt and returned in front of the output (e.g. "Thought: ").
- example: a worked example (a call on a made-up function, then Finish), placed right after the first user
  turn (small models copy it; later turns see the real history after it).
- stop_at_next_step: also stop at "\nThought:", "\nObservation:" and "\nFunction:" so a model that goes on
  writing the next step stops early (saves tokens; the parser sees one step).
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

DEFAULTS = {"history": "raw", "template": "raw", "prefill": "", "example": False, "stop_at_next_step": False}
NEXT_STEP_STOPS = ["\nThought:", "\nObservation:", "\nFunction:"]


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
        example_added = False
        for message in messages:  # "valid": False messages are kept, as upstream does for ToolLLaMA
            role = R.ROLE_MAP.get(message["role"])
            if role is None:
                continue
            content = message.get("content") or ""
            if role == R.ROLE_SYSTEM:
                content = process_system_message(content, functions)
            parts.append(R.TURN_TEMPLATE.format(role=role, content=content))
            if role == R.ROLE_USER and self.options["example"] and not example_added:
                parts.append(worked_example(toolset))
                example_added = True
        parts.append(R.GENERATION_PROMPT)
        return "".join(parts)

    def render(self, messages: list[dict], toolset: Toolset) -> Rendered:
        text = self.render_text(messages, toolset)
        prefill = self.options["prefill"]
        stop = [R.STOP] + (NEXT_STEP_STOPS if self.options["stop_at_next_step"] else [])
        if self.options["template"] == "chat":
            return Rendered(messages=[{"role": "user", "content": text}], stop=stop, prefill=prefill)
        return Rendered(prompt=text, stop=stop, prefill=prefill)

    def sends(self) -> tuple[bool, bool]:
        return self.options["template"] == "chat", False

    def assistant_content(self, text: str | None, parsed: ParsedTurn) -> str | None:
        if self.options["history"] == "thought":
            return parsed.thought
        return text


# The example's function is made up and never one of the query's: built on the query's own first function,
# small models called that function again and again and never finished (issue 17: SmolLM2-135M and a 0.5B
# model; SmolLM2-135M copies whatever function the example names). Nothing follows either Action Input JSON but the next step's "Thought:" (a stop string with
# stop_at_next_step): a connective line after the JSON was copied by models, and upstream's react-find
# slicing then read it as part of the arguments ("Tool input parse error").
EXAMPLE_FUNCTION = "lookup_word_for_example_dictionary"
EXAMPLE_ARGUMENTS = {"word": "harbour"}


def worked_example(toolset: Toolset) -> str:
    """One call step and the Finish step in the trained format, on a function that is not the query's."""
    taken = {function["name"] for function in toolset.inner_functions}
    name = EXAMPLE_FUNCTION
    while name in taken:
        name += "_demo"
    return (
        "Example of the format (one step per reply; the function and values are only an illustration, "
        "not one of your functions; the last step calls Finish once the results answer the question):\n"
        "Thought: I should look the word up.\n"
        f"Action: {name}\n"
        f"Action Input: {json.dumps(EXAMPLE_ARGUMENTS)}\n"
        "Thought: I have what the user asked for.\n"
        "Action: Finish\n"
        'Action Input: {"return_type": "give_answer", "final_answer": "<the answer>"}\n'
    )
