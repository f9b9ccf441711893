"""openai-tools: a native chat message with ``tool_calls`` (or the legacy ``function_call``).

``parse_message(message)`` maps ``{"role": "assistant", "content": ..., "tool_calls": [{"id", "type",
"function": {"name", "arguments"}}]}`` to a ParsedTurn: content is the thought, every tool call a Call
(``id`` kept as call_id), argument strings decoded through the same JSON ladder as the text parsers
(an arguments value that already is an object is taken as is). ``parse(text)`` accepts the JSON text of
such a message, or of a chat completion (``choices[0].message``). Plain text is not this parser's
input: it answers NOT_APPLICABLE rather than failing, so comparisons can leave it out.
"""

from __future__ import annotations

import json
from typing import Any

from .base import ErrorKind, ParsedTurn
from .calls import arguments_call_with_rung, worst
from .contract import BaseParser, finish_answer

_MESSAGE_KEYS = ("tool_calls", "function_call", "role", "content")


def as_message(value: Any) -> dict | None:
    """The assistant message inside a decoded value (a message or a chat completion), else None."""
    if isinstance(value, dict) and isinstance(value.get("choices"), list) and value["choices"]:
        choice = value["choices"][0]
        value = choice.get("message") if isinstance(choice, dict) else None
    if isinstance(value, dict) and any(key in value for key in _MESSAGE_KEYS):
        return value
    return None


class OpenAIToolsParser(BaseParser):
    name = "openai-tools"

    def _parse(self, text: str) -> ParsedTurn:
        if not text.strip():
            return ParsedTurn(parser=self.name, error=ErrorKind.EMPTY_OUTPUT)
        try:
            message = as_message(json.loads(text))
        except (ValueError, RecursionError):
            message = None
        if message is None:
            return ParsedTurn(parser=self.name, error=ErrorKind.NOT_APPLICABLE,
                              details=["input is not a chat message with tool_calls / function_call"])
        return self.parse_message(message)

    def parse_message(self, message: dict) -> ParsedTurn:
        try:
            return self._parse_message(message)
        except Exception as exc:  # noqa: BLE001 - contract boundary: parsers never raise
            return ParsedTurn(parser=self.name, error=ErrorKind.PARSER_CRASH,
                              details=[f"parser crashed: {type(exc).__name__}: {exc}"])

    def _parse_message(self, message: dict) -> ParsedTurn:
        turn = ParsedTurn(parser=self.name)
        if not isinstance(message, dict):
            turn.error = ErrorKind.NOT_APPLICABLE
            return turn
        content = message.get("content")
        turn.thought = content if isinstance(content, str) and content else None
        raw_calls = message.get("tool_calls") or []
        if not raw_calls and isinstance(message.get("function_call"), dict):
            raw_calls = [{"function": message["function_call"]}]
        if not isinstance(raw_calls, list) or not raw_calls:
            turn.error = ErrorKind.NO_ACTION
            return turn
        kinds: list[ErrorKind] = []
        for entry in raw_calls:
            function = entry.get("function") if isinstance(entry, dict) else None
            if not isinstance(function, dict):
                kinds.append(ErrorKind.MISSING_FIELD)
                turn.details.append("tool call without a function object")
                continue
            name = function.get("name")
            if not isinstance(name, str):
                kinds.append(ErrorKind.EMPTY_ACTION)
                continue
            call_id = entry.get("id")
            raw = function.get("arguments")
            raw = "" if raw is None else raw
            # the name is kept byte for byte, as upstream calls it: "x\n" misses every function, and ""
            # (kept as a call, flagged empty_action) suffix-matches the first one in stb compat
            call, kind, detail, rung = arguments_call_with_rung(
                name, raw, str(call_id) if call_id is not None else None)
            turn.rung = turn.rung or rung
            if not name.strip():
                kind, detail = ErrorKind.EMPTY_ACTION, "empty function name"
            elif isinstance(raw, str) and not raw.strip():
                kind, detail = ErrorKind.NO_ACTION_INPUT, "empty arguments string (cut by max_tokens?)"
            kinds.append(kind)
            if detail:
                turn.details.append(detail)
            turn.calls.append(call)
            turn.final_answer = turn.final_answer or finish_answer(call, "robust")
        turn.error = worst(kinds)
        return turn
