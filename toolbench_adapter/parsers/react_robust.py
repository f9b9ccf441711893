"""react-robust: the ReAct format read the way the model meant it, every repair reported.

Steps:
1. CRLF / CR become LF; end-of-turn tokens left at the end (``<|im_end|>``, ``<|eot_id|>``, ``</s>``)
   are dropped (noted in details, not an error: a serving stack normally strips them). Labels are found at line starts with any spacing around the colon
   (``Action:get_x`` and ``Action : get_x`` both count); ``Thought:`` is optional.
2. The call is the first (Action, Action Input) pair: the first ``Action Input:`` that follows an
   ``Action:``, with the last ``Action:`` before it. Skipped Action / orphan Action Input labels are
   reported as MULTIPLE_ACTIONS; ``Observation:`` / ``Function:`` lines before the action as
   HALLUCINATED_OBSERVATION (they stay in the thought).
3. The Action Input is cut at the end of the first complete JSON object (``raw_decode``, else
   string-aware brace counting); an unclosed or non-object input stops at the next label line.
   Text after the cut is reported: HALLUCINATED_OBSERVATION (an Observation/Function line),
   MULTIPLE_ACTIONS (another Thought/Action block) or TRAILING_TEXT.
4. The input goes down the JSON ladder (strict, brace match, lenient, Python literal, json_repair,
   key-value); the rung is recorded.
5. Names are stripped; an empty name is no call (EMPTY_ACTION). A Finish call's final answer comes
   from ``parse_finish(..., "robust")``.

One error kind per turn, by severity: structural (empty output, no action, empty action, no input),
then arguments that could not be decoded, then truncation, then what was cut, then other repairs.
``details`` lists every problem noticed.
"""

from __future__ import annotations

import json
import re

from ..protocol.parsers import END_OF_TURN_TOKENS
from .base import Call, ErrorKind, ParsedTurn, Rung
from .contract import BaseParser, decode_arguments, finish_answer
from .ladder import find_json_object_end

_LABEL = re.compile(
    r"(?m)^[ \t]*(?P<label>Thought|Action[ \t]*Input|Action|Observation|Function)[ \t]*:[ \t]*"
)
_OBSERVATION_LINE = re.compile(r"(?m)^[ \t]*(?:Observation|Function)[ \t]*:")
_ACTION_LINE = re.compile(r"(?m)^[ \t]*(?:Thought|Action)[ \t]*(?:Input[ \t]*)?:")
_THOUGHT_LABEL = re.compile(r"^\s*Thought[ \t]*:[ \t]*")
_INLINE_INPUT = re.compile(r"[ \t]*Action[ \t]*Input[ \t]*:.*", re.DOTALL)

_DECODER = json.JSONDecoder()

_CUT_SEVERITY = (ErrorKind.HALLUCINATED_OBSERVATION, ErrorKind.MULTIPLE_ACTIONS, ErrorKind.TRAILING_TEXT)


def _kind_of_label(label: str) -> str:
    if label.startswith("Action") and label.endswith("Input"):
        return "input"
    return label.lower()  # thought, action, observation, function


def _classify_cut(rest: str) -> ErrorKind | None:
    if not rest.strip():
        return None
    if _OBSERVATION_LINE.search(rest):
        return ErrorKind.HALLUCINATED_OBSERVATION
    if _ACTION_LINE.search(rest):
        return ErrorKind.MULTIPLE_ACTIONS
    return ErrorKind.TRAILING_TEXT


def _strip_end_tokens(text: str, turn: ParsedTurn) -> str:
    stripped = text.rstrip()
    if not stripped.endswith(END_OF_TURN_TOKENS):
        return text
    while stripped.endswith(END_OF_TURN_TOKENS):
        token = next(t for t in END_OF_TURN_TOKENS if stripped.endswith(t))
        turn.details.append(f"end-of-turn token {token} dropped")
        stripped = stripped[:-len(token)].rstrip()
    return stripped


def split_action_input(region: str) -> tuple[str, str, dict | None]:
    """(raw arguments, text cut after them, decoded dict when raw_decode already did the work)."""
    start = len(region) - len(region.lstrip())
    if region.startswith("{", start):
        try:
            value, end = _DECODER.raw_decode(region, start)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter allows
            end = find_json_object_end(region, start)
            value = None
        if end is not None:
            return region[start:end], region[end:], value if isinstance(value, dict) else None
    label = _LABEL.search(region, start)
    stop = label.start() if label else len(region)
    return region[start:stop].rstrip(), region[stop:], None


class ReactRobustParser(BaseParser):
    name = "react-robust"

    def _parse(self, text: str) -> ParsedTurn:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        turn = ParsedTurn(parser=self.name)
        text = _strip_end_tokens(text, turn)
        if not text.strip():
            turn.error = ErrorKind.EMPTY_OUTPUT
            return turn
        labels = [(_kind_of_label(m.group("label")), m) for m in _LABEL.finditer(text)]
        actions = [m for kind, m in labels if kind == "action"]
        if not actions:
            turn.thought = self._thought(text) or None
            turn.error = ErrorKind.NO_ACTION
            if any(kind == "input" for kind, _ in labels):
                turn.details.append("Action Input without an Action label")
            return turn
        action, action_input = self._pair(labels, actions)

        cut_kinds: list[ErrorKind] = []
        head = text[:action.start()]
        turn.thought = self._thought(head) or None
        skipped = [m for kind, m in labels if kind in ("action", "input") and m.start() < action.start()]
        if skipped:
            cut_kinds.append(ErrorKind.MULTIPLE_ACTIONS)
            turn.details.append(f"{len(skipped)} Action/Action Input label(s) before the chosen action skipped")
        if _OBSERVATION_LINE.search(head):
            cut_kinds.append(ErrorKind.HALLUCINATED_OBSERVATION)
            turn.details.append("Observation/Function line before the action (kept in the thought)")

        name_end = action_input.start() if action_input else len(text)
        name_line = text[action.end():name_end].split("\n", 1)[0]
        name = _INLINE_INPUT.sub("", name_line).strip()
        if not name:
            turn.error = ErrorKind.EMPTY_ACTION
            return turn
        if action_input is None:
            turn.calls.append(Call(name=name, arguments_raw=""))
            turn.error = ErrorKind.NO_ACTION_INPUT
            rest = text[action.end() + len(name_line):]
            self._note_cut(turn, cut_kinds, rest)
            return turn

        raw, rest, pre_decoded = split_action_input(text[action_input.end():])
        self._note_cut(turn, cut_kinds, rest)
        if pre_decoded is not None:
            arguments, rung, arg_kind = pre_decoded, Rung.STRICT, ErrorKind.NONE
        elif not raw:
            arguments, rung, arg_kind = None, None, ErrorKind.NO_ACTION_INPUT
        else:
            arguments, rung, arg_kind = decode_arguments(raw)
        call = Call(name=name, arguments_raw=raw, arguments=arguments)
        turn.calls.append(call)
        turn.rung = rung
        turn.final_answer = finish_answer(call, "robust")
        if arg_kind is not ErrorKind.NONE:
            turn.details.append(f"arguments: {arg_kind.value}" + (f" (rung {rung.value})" if rung else ""))
        turn.error = self._severest(arguments, arg_kind, cut_kinds)
        return turn

    @staticmethod
    def _pair(labels: list, actions: list) -> tuple[re.Match, re.Match | None]:
        """The first Action Input preceded by an Action, with the last Action before it."""
        last_action = None
        for kind, match in labels:
            if kind == "action":
                last_action = match
            elif kind == "input" and last_action is not None:
                return last_action, match
        return actions[0], None

    @staticmethod
    def _thought(head: str) -> str:
        return _THOUGHT_LABEL.sub("", head, count=1).strip()

    @staticmethod
    def _note_cut(turn: ParsedTurn, cut_kinds: list[ErrorKind], rest: str) -> None:
        kind = _classify_cut(rest)
        if kind is not None:
            cut_kinds.append(kind)
            turn.details.append(f"cut after the arguments ({kind.value}): {rest.strip()[:80]!r}")

    @staticmethod
    def _severest(arguments: dict | None, arg_kind: ErrorKind, cut_kinds: list[ErrorKind]) -> ErrorKind:
        if arguments is None:
            return arg_kind if arg_kind is not ErrorKind.NONE else ErrorKind.INVALID_JSON
        if arg_kind is ErrorKind.TRUNCATED_JSON:
            return arg_kind
        for kind in _CUT_SEVERITY:
            if kind in cut_kinds:
                return kind
        return arg_kind
