"""Walk a converted answer the way upstream's ``get_steps`` does: tool steps and the final step text."""

from __future__ import annotations

from typing import Any

from ..protocol.evaluation import FINAL_STEP_PREFIX, FINISH_IN_FINAL_STEP, STEP_PREFIX


def get_steps(example: dict[str, Any]) -> tuple[str, str]:
    """``("Step 1: {…}\\nStep 2: {…}", "Final step: {…}")`` from ``answer.answer_details[0]`` along next[0].

    Each tool message is written with Python's repr of the dict, which is why the Finish test is a
    substring test on ``'name': 'Finish'``.
    """
    details = example["answer"]["answer_details"]
    node = details[0] if details else {}
    steps: list[str] = []
    final_step = ""
    while "next" in node:
        message = node.get("message")
        if message and node.get("role") == "tool":
            steps.append(STEP_PREFIX.format(n=len(steps) + 1) + str(message))
            final_step = FINAL_STEP_PREFIX + str(message)
        if not node["next"]:
            break
        node = node["next"][0]
    return "\n".join(steps), final_step


def ends_with_finish(final_step: str) -> bool:
    return FINISH_IN_FINAL_STEP in final_step


def tool_names(available_tools: list[dict]) -> list[str]:
    """Function names of the available tools, old (``name``) or new (``function.name``) format."""
    names = []
    for tool in available_tools:
        if "function" in tool and isinstance(tool["function"], dict):
            names.append(tool["function"].get("name"))
        else:
            names.append(tool.get("name"))
    return names
