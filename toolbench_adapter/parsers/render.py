"""Render (thought, calls, final answer) into each text format the parsers read.

Used for assistant history and few-shot examples by the prompt dialects, and by the round-trip tests:
a call rendered in a format parses back to the same call with that format's parser.

- react (ToolLLaMA training target): ``Thought: ...\\nAction: ...\\nAction Input: ...``. The training
  data starts with a newline (``\\nThought: ``); it is left out here (pass ``leading_newline=True`` to
  keep it). One call per turn. Arguments: the call's ``arguments_raw`` when set (history must be the
  model's exact text), else ``json.dumps(arguments, indent=2)``.
- json-object: ``{"think", "action", "arguments"}`` or ``{"think", "answer"}``.
- jsonl: one ``{"name", "parameters", "call_id"?}`` line per call (the format has no thought).
- hermes: the thought, then one ``<tool_call>\\n{"name", "arguments"}\\n</tool_call>`` block per call.

A final answer with no calls is rendered as the Finish give_answer call (json-object: the ``answer``
field), so every format carries it the way its parser reads it back.
"""

from __future__ import annotations

import json

from ..protocol.functions import FINISH_NAME, GIVE_ANSWER
from ..protocol.react import ACTION_INPUT_MARKER, ACTION_MARKER, THOUGHT_MARKER
from .base import Call

FORMATS = ("react", "json-object", "jsonl", "hermes")


def _calls_with_answer(calls: list[Call], final_answer: str | None) -> list[Call]:
    if calls or final_answer is None:
        return list(calls)
    arguments = {"return_type": GIVE_ANSWER, "final_answer": final_answer}
    return [Call(name=FINISH_NAME, arguments_raw=json.dumps(arguments, ensure_ascii=False), arguments=arguments)]


def _arguments(call: Call, indent: int | None = None) -> dict:
    if call.arguments is not None:
        return call.arguments
    try:
        value = json.loads(call.arguments_raw, strict=False)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {}


def render_react(thought: str | None, calls: list[Call], final_answer: str | None = None,
                 leading_newline: bool = False) -> str:
    calls = _calls_with_answer(calls, final_answer)
    if len(calls) > 1:
        raise ValueError("the ReAct format carries one call per turn")
    text = f"{THOUGHT_MARKER}{thought or ''}"
    if calls:
        call = calls[0]
        raw = call.arguments_raw or json.dumps(_arguments(call), indent=2, ensure_ascii=False)
        text += f"\n{ACTION_MARKER}{call.name}\n{ACTION_INPUT_MARKER}{raw}"
    return ("\n" if leading_newline else "") + text


def render_json_object(thought: str | None, calls: list[Call], final_answer: str | None = None) -> str:
    if len(calls) > 1:
        raise ValueError("the json-object format carries one call per turn")
    obj: dict = {"think": thought or ""}
    if calls:
        obj["action"] = calls[0].name
        obj["arguments"] = _arguments(calls[0])
    elif final_answer is not None:
        obj["answer"] = final_answer
    return json.dumps(obj, ensure_ascii=False)


def render_jsonl(thought: str | None, calls: list[Call], final_answer: str | None = None) -> str:
    lines = []
    for call in _calls_with_answer(calls, final_answer):
        obj = {"name": call.name, "parameters": _arguments(call)}
        if call.call_id is not None:
            obj["call_id"] = call.call_id
        lines.append(json.dumps(obj, ensure_ascii=False))
    return "\n".join(lines)


def render_hermes(thought: str | None, calls: list[Call], final_answer: str | None = None) -> str:
    blocks = [
        "<tool_call>\n" + json.dumps({"name": c.name, "arguments": _arguments(c)}, ensure_ascii=False) + "\n</tool_call>"
        for c in _calls_with_answer(calls, final_answer)
    ]
    return "\n".join(([thought] if thought else []) + blocks)


RENDERERS = {
    "react": render_react,
    "json-object": render_json_object,
    "jsonl": render_jsonl,
    "hermes": render_hermes,
}
# the parser that reads each rendered format back
PARSER_FOR_FORMAT = {"react": "react-robust", "json-object": "json-object", "jsonl": "jsonl", "hermes": "hermes"}


def render(format_name: str, thought: str | None, calls: list[Call], final_answer: str | None = None) -> str:
    try:
        renderer = RENDERERS[format_name]
    except KeyError:
        raise ValueError(f"unknown format {format_name!r}; choose one of {', '.join(FORMATS)}") from None
    return renderer(thought, calls, final_answer)
