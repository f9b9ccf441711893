"""react-find: StableToolBench's find-based ReAct extraction, bug for bug (reference §3.5).

The three slices are exactly upstream's ``inf/utils.py: react_parser``::

    thought      = s[s.find("Thought: ") + 9 : s.find("\\nAction: ")]
    action       = s[s.find("Action: ") + 8 : s.find("\\nAction Input: ")]
    action_input = s[s.find("Action Input: ") + 14 :]

``str.find`` returns -1 for a missing marker, so a missing start marker shifts the slice to 8/7/13 and a
missing end marker drops the last character: garbage, never an exception. Nothing is stripped, and
the Action Input runs to the end of the text. The published leaderboard numbers were produced with it.

The one call is always emitted (upstream always steps the environment). ``arguments`` is the dict when
``json.loads(action_input, strict=False)`` gives one (what the upstream Finish handling accepts), else
None. The error kind classifies what went wrong without touching the slices.
"""

from __future__ import annotations

import json
import re

from ..protocol.react import ACTION_END, ACTION_INPUT_END, ACTION_INPUT_MARKER, ACTION_MARKER, THOUGHT_MARKER
from .base import Call, ErrorKind, ParsedTurn, Rung
from .contract import BaseParser, finish_answer
from .ladder import decode_json

_OBSERVATION_LINE = re.compile(r"(?m)^[ \t]*(?:Observation|Function)[ \t]*:")
_ACTION_LINE = re.compile(r"(?m)^[ \t]*(?:Thought|Action)[ \t]*(?:Input[ \t]*)?:")


def react_find_slices(text: str) -> tuple[str, str, str]:
    """Upstream's three slices, verbatim."""
    thought = text[text.find(THOUGHT_MARKER) + len(THOUGHT_MARKER):text.find(ACTION_END)]
    action = text[text.find(ACTION_MARKER) + len(ACTION_MARKER):text.find(ACTION_INPUT_END)]
    action_input = text[text.find(ACTION_INPUT_MARKER) + len(ACTION_INPUT_MARKER):]
    return thought, action, action_input


def _load_upstream(action_input: str) -> tuple[dict | None, Rung | None, object]:
    """(dict or None, rung, decoded value): json.loads strict first, then strict=False as upstream Finish does."""
    for rung, strict in ((Rung.STRICT, True), (Rung.LENIENT, False)):
        try:
            value = json.loads(action_input, strict=strict)
        except (ValueError, RecursionError):
            continue
        return (value if isinstance(value, dict) else None), rung, value
    return None, None, None


def classify_arguments_failure(action_input: str) -> ErrorKind:
    """Why an Action Input is not a JSON object, in the words of the ladder (slices untouched)."""
    value, _rung, kind = decode_json(action_input)
    if kind is ErrorKind.TRAILING_TEXT or (value is not None and kind is ErrorKind.NONE):
        span_end = _first_value_end(action_input)
        rest = action_input[span_end:] if span_end is not None else action_input
        if _OBSERVATION_LINE.search(rest):
            return ErrorKind.HALLUCINATED_OBSERVATION
        if _ACTION_LINE.search(rest):
            return ErrorKind.MULTIPLE_ACTIONS
        if value is not None and not isinstance(value, dict):
            return ErrorKind.NOT_AN_OBJECT
        return ErrorKind.TRAILING_TEXT
    if value is not None and not isinstance(value, (dict, str)):
        return ErrorKind.NOT_AN_OBJECT
    return kind


def _first_value_end(text: str) -> int | None:
    start = len(text) - len(text.lstrip())
    for decoder in (json.JSONDecoder(), json.JSONDecoder(strict=False)):
        try:
            return decoder.raw_decode(text, start)[1]
        except (ValueError, RecursionError):
            continue
    return None


class ReactFindParser(BaseParser):
    name = "react-find"

    def _parse(self, text: str) -> ParsedTurn:
        thought, action, action_input = react_find_slices(text)
        arguments, rung, _value = _load_upstream(action_input)
        call = Call(name=action, arguments_raw=action_input, arguments=arguments)
        turn = ParsedTurn(parser=self.name, thought=thought, calls=[call], rung=rung,
                          final_answer=finish_answer(call, "upstream"))
        turn.error = self._classify(text, action, action_input, arguments, rung)
        return turn

    @staticmethod
    def _classify(text: str, action: str, action_input: str, arguments: dict | None, rung: Rung | None) -> ErrorKind:
        if not text.strip():
            return ErrorKind.EMPTY_OUTPUT
        if text.find(ACTION_MARKER) < 0:
            return ErrorKind.NO_ACTION
        if text.find(ACTION_INPUT_MARKER) < 0:
            return ErrorKind.NO_ACTION_INPUT
        if not action.strip():
            return ErrorKind.EMPTY_ACTION
        if action != action.strip():
            return ErrorKind.NAME_WHITESPACE
        if arguments is None:
            if not action_input.strip():
                return ErrorKind.NO_ACTION_INPUT
            return classify_arguments_failure(action_input)
        if action_input.count(ACTION_END) or text.count(ACTION_MARKER) > 1:
            return ErrorKind.MULTIPLE_ACTIONS  # a second block before the Action Input, or swallowed in it
        if rung is Rung.LENIENT:
            return ErrorKind.CONTROL_CHARACTERS
        return ErrorKind.NONE
