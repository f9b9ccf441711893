"""The first two messages of every conversation, as upstream builds them (ReAct_prompts.py,
rapidapi_multithread.py), and the ToolLLaMA system-message rewrite (toolbench/utils.py)."""

from __future__ import annotations

from toolbench_adapter.queryset.toolset import Toolset

from .protocol import prompts as P


def system_message(toolset: Toolset) -> dict:
    # upstream substitutes with str.replace, so braces inside tool descriptions are safe
    content = P.SYSTEM_PROMPT.replace("{task_description}", toolset.task_description())
    return {"role": "system", "content": content}


def user_message(query_text: str) -> dict:
    return {"role": "user", "content": P.USER_PREFIX + query_text + P.USER_SUFFIX}


def initial_messages(toolset: Toolset) -> list[dict]:
    return [system_message(toolset), user_message(toolset.query.query)]


def process_system_message(content: str, functions: list[dict]) -> str:
    """ToolLLaMA's system text: the format hint after the anchor sentence, then the Python repr of the
    inner function dicts (single quotes, True/False), Finish included."""
    if P.PROCESS_SYSTEM_ANCHOR not in content:
        raise ValueError("system message lacks the ToolLLaMA anchor sentence; is it the upstream system prompt?")
    content = content.replace(P.PROCESS_SYSTEM_ANCHOR, P.PROCESS_SYSTEM_ANCHOR + P.PROCESS_SYSTEM_FORMAT_HINT)
    return content + P.PROCESS_SYSTEM_APIS_PREFIX + str(functions)


def diversity_message(candidates: list[dict], observation: str | None) -> dict:
    """DFSDT's user message listing earlier attempts at this state. The search marks it ``"valid": False``
    after the call it was made for, so OpenAI-style requests never see it again (ToolLLaMA prompts keep it)."""
    import json

    previous = json.dumps(candidates, indent=2) + "\n"
    if observation:
        previous += P.DIVERSITY_FORMER_OBSERVATION.format(observation=observation)
    content = P.DIVERSITY_PROMPT.replace("{previous_candidate}", previous)
    return {"role": "user", "content": content}
