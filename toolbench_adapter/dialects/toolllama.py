"""ToolLLaMA: the exact upstream text prompt (tool_llama_model.py / tool_llama_vllm_model.py).

``System: {process_system_message(...)}\nUser: \n{query}\nBegin!\n\nAssistant: {raw}\nFunction: {obs}\n...Assistant:\n``

Options (each recorded in the run manifest; the defaults are upstream's):
- history: "raw" (STB since 2024-09: the whole generation) or "thought" (ToolBench / legacy: thought only).
- template: "raw" (the text prompt as above, for /v1/completions) or "chat" (that same text sent as one user
  message through the model's chat template: for instruction-tuned models that were not trained on it).
- prefill: text placed after the generation prompt and returned in front of the output (e.g. "Thought: ").
- example: a worked example (a call on a made-up function, the function's result as the history writes it, then
  Finish with an answer taken from that result), placed right after the first user turn (small models copy it;
  later turns see the real history after it). The project's own text, not upstream's; off by default.
- stop_at_next_step: also stop at "\nThought:", "\nObservation:" and "\nFunction:" so a model that goes on
  writing the next step stops early (saves tokens; the parser sees one step).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from toolbench_adapter.queryset.toolset import Toolset

from ..messages import process_system_message
from ..parsers.base import ParsedTurn
from ..protocol import react as R
from .base import Dialect, DialectOption, Rendered

OPTIONS = {"history": DialectOption(str, "raw", ("raw", "thought")), "template": DialectOption(str, "raw", ("raw", "chat")),
           "prefill": DialectOption(str, ""), "example": DialectOption(bool, False),
           "stop_at_next_step": DialectOption(bool, False)}
DEFAULTS = {name: option.default for name, option in OPTIONS.items()}
NEXT_STEP_STOPS = ["\nThought:", "\nObservation:", "\nFunction:"]


@dataclass
class ToolLLaMADialect(Dialect):
    name: str = "toolllama"
    default_parser: str = "react-find"
    options: dict[str, Any] = field(default_factory=dict)
    OPTIONS: ClassVar[dict[str, DialectOption]] = OPTIONS  # checked by Dialect.__post_init__

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
        stop = self.stop_strings()
        if self.options["template"] == "chat":
            return Rendered(messages=[{"role": "user", "content": text}], stop=stop, prefill=prefill)
        return Rendered(prompt=text, stop=stop, prefill=prefill)

    def stop_strings(self) -> list[str]:
        return [R.STOP] + (NEXT_STEP_STOPS if self.options["stop_at_next_step"] else [])

    def sends(self) -> tuple[bool, bool]:
        return self.options["template"] == "chat", False

    def assistant_content(self, text: str | None, parsed: ParsedTurn) -> str | None:
        if self.options["history"] == "thought":
            return parsed.thought
        return text


# The example's function is made up and never one of the query's: built on the query's own first function,
# small models called that function again and again and never finished (issue 17: SmolLM2-135M and a 0.5B
# model; SmolLM2-135M copies whatever function the example names). Nothing follows either Action Input JSON but
# the next step: the call's result on a "Function:" line, as the real history shows it (a stop string with
# stop_at_next_step), or the Finish step's "Thought:". A connective line after the JSON was copied by models, and
# upstream's react-find slicing then read it as part of the arguments ("Tool input parse error").
# The final answer is built from the example's own result (issue 22): with a placeholder ("<the answer>") the
# constrained SmolLM2-135M ended 3 of the 6 sample queries by copying it and repeated one call until the step
# limit on the other 3; with this example it answers 5 of 6 (data/sample, --constrain schema), though 3 of those
# answers still copy the example's sentence: a 135M model copies whatever the example says.
EXAMPLE_FUNCTION = "lookup_word_for_example_dictionary"
EXAMPLE_ARGUMENTS = {"word": "harbour"}
EXAMPLE_OBSERVATION = {"error": "", "response": {"word": "harbour", "meaning": "a sheltered place where ships stay"}}
EXAMPLE_ANSWER = "Harbour means a sheltered place where ships stay."


def worked_example(toolset: Toolset) -> str:
    """One call step, its result and the Finish step in the trained format, on a function that is not the query's."""
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
        f"Function: {json.dumps(EXAMPLE_OBSERVATION)}\n"
        "Thought: The result gives the meaning, so I can answer.\n"
        "Action: Finish\n"
        f"Action Input: {json.dumps({'return_type': 'give_answer', 'final_answer': EXAMPLE_ANSWER})}\n"
    )
