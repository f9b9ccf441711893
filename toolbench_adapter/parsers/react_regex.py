"""react-regex: the older regex extraction, kept to measure what it costs.

Action Input is ``re.search(LEGACY_ACTION_INPUT_REGEX, text)`` = ``Action Input:\\s*(\\{.*?\\})`` without
DOTALL: ``.`` stops at a newline and ``.*?`` at the first ``}``, so multi-line JSON (what ToolLLaMA
writes) never matches and nested objects are cut after their first inner ``}``.

Choices for the other two fields (the legacy code only fixed the input regex):
- action: the first ``Action:`` that is not ``Action Input:``, rest of its line (``Action:[ \\t]*(.*)``),
  trailing whitespace stripped; a text without it yields no call (NO_ACTION).
- thought: the rest of the first ``Thought:`` line; None without it.
Arguments are ``json.loads(match, strict=False)`` like react-find; the error kind comes from the ladder's
view of the matched text (a cut-short nested object reads as TRUNCATED_JSON).
"""

from __future__ import annotations

import json
import re

from ..protocol.react import LEGACY_ACTION_INPUT_REGEX
from .base import Call, ErrorKind, ParsedTurn, Rung
from .contract import BaseParser, finish_answer
from .ladder import decode_json

_ACTION_INPUT = re.compile(LEGACY_ACTION_INPUT_REGEX)
_ACTION = re.compile(r"Action:[ \t]*(.*)")
_THOUGHT = re.compile(r"Thought:[ \t]*(.*)")
_ACTION_INPUT_LABEL = "Action Input:"


class ReactRegexParser(BaseParser):
    name = "react-regex"

    def _parse(self, text: str) -> ParsedTurn:
        thought_match = _THOUGHT.search(text)
        turn = ParsedTurn(parser=self.name, thought=thought_match.group(1).rstrip() if thought_match else None)
        if not text.strip():
            turn.error = ErrorKind.EMPTY_OUTPUT
            return turn
        action_match = _ACTION.search(text)
        if action_match is None:
            turn.error = ErrorKind.NO_ACTION
            return turn
        name = action_match.group(1).rstrip()
        input_match = _ACTION_INPUT.search(text)
        raw = input_match.group(1) if input_match else ""
        arguments, rung = None, None
        if input_match:
            for candidate_rung, strict in ((Rung.STRICT, True), (Rung.LENIENT, False)):
                try:
                    value = json.loads(raw, strict=strict)
                except ValueError:
                    continue
                arguments, rung = (value if isinstance(value, dict) else None), candidate_rung
                break
        call = Call(name=name, arguments_raw=raw, arguments=arguments)
        turn.calls.append(call)
        turn.rung = rung
        turn.final_answer = finish_answer(call, "upstream")
        turn.error = self._classify(text, name, input_match, raw, arguments)
        if input_match is None and turn.error is ErrorKind.INVALID_JSON:
            turn.details.append("no one-line {...} after 'Action Input:' (the legacy regex has no DOTALL)")
        return turn

    @staticmethod
    def _classify(text: str, name: str, input_match: re.Match | None, raw: str, arguments: dict | None) -> ErrorKind:
        if not name:
            return ErrorKind.EMPTY_ACTION
        if input_match is None:
            if _ACTION_INPUT_LABEL not in text:
                return ErrorKind.NO_ACTION_INPUT
            # the label is there but no one-line {...} follows it: multi-line or non-object input
            return ErrorKind.INVALID_JSON
        if arguments is None:
            kind = decode_json(raw)[2]
            return kind if kind is not ErrorKind.NONE else ErrorKind.NOT_AN_OBJECT
        return ErrorKind.NONE
