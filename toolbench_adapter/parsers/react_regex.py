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

_ACTION_INPUT = re.compile(LEGACY_ACTION_INPUT_REGEX)  # the reference; legacy_action_input() is what runs
_INPUT_START = re.compile(r"Action Input:\s*\{")
_INPUT_STOP = re.compile(r"[\n}]")
_ACTION = re.compile(r"Action:[ \t]*(.*)")
_THOUGHT = re.compile(r"Thought:[ \t]*(.*)")
_ACTION_INPUT_LABEL = "Action Input:"


def legacy_action_input(text: str) -> str | None:
    """``re.search(LEGACY_ACTION_INPUT_REGEX, text).group(1)`` (None without a match), in linear time.

    ``\\{.*?\\}`` without DOTALL is the ``{`` and everything up to the first ``}``, failing at a newline.
    re.search retries at every ``Action Input:``, so a line of many ``Action Input: {`` without ``}``
    rescanned the rest of the line from each (quadratic). Here the first ``}``/newline after a brace is
    found once and reused by the braces before it, since none of them can stop earlier.
    """
    stop = -1
    for start in _INPUT_START.finditer(text):
        brace = start.end() - 1
        if stop <= brace:
            found = _INPUT_STOP.search(text, brace + 1)
            if found is None:
                return None
            stop = found.start()
        if text[stop] == "}":
            return text[brace:stop + 1]
    return None


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
        legacy_input = legacy_action_input(text)
        input_match = legacy_input is not None
        raw = legacy_input or ""
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
        if not input_match and turn.error is ErrorKind.INVALID_JSON:
            turn.details.append("no one-line {...} after 'Action Input:' (the legacy regex has no DOTALL)")
        return turn

    @staticmethod
    def _classify(text: str, name: str, input_match: bool, raw: str, arguments: dict | None) -> ErrorKind:
        if not name:
            return ErrorKind.EMPTY_ACTION
        if not input_match:
            if _ACTION_INPUT_LABEL not in text:
                return ErrorKind.NO_ACTION_INPUT
            # the label is there but no one-line {...} follows it: multi-line or non-object input
            return ErrorKind.INVALID_JSON
        if arguments is None:
            kind = decode_json(raw)[2]
            return kind if kind is not ErrorKind.NONE else ErrorKind.NOT_AN_OBJECT
        return ErrorKind.NONE
