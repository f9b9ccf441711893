"""hermes: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks, several per turn.

The text before the first block is the thought. Each block's JSON is decoded by object boundary first
(``raw_decode`` right after the tag, so a literal ``</tool_call>`` inside an argument string does not
cut it, vllm #45167), else the block text up to ``</tool_call>`` goes down the JSON ladder.
``"parameters"`` is accepted for ``"arguments"``; arguments given as a JSON string are decoded.

An unclosed last block whose JSON is cut is repaired when the ladder can (TRUNCATED_JSON either way).
A complete object without ``</tool_call>`` is accepted silently: servers often eat the closing tag
as a stop string. Non-space text after the last block is reported as TRAILING_TEXT. A turn without
any block is NO_ACTION with the text as the thought (no final answer is inferred from prose).
"""

from __future__ import annotations

import json
import re

from ..protocol.parsers import HERMES_CLOSE, HERMES_OPEN
from .base import ErrorKind, ParsedTurn, Rung
from .calls import call_from_object, worst
from .contract import BaseParser, decode_arguments, finish_answer

OPEN_TAG = HERMES_OPEN
CLOSE_TAG = HERMES_CLOSE
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")  # \s is str.isspace: the same characters lstrip() drops


class _NextTag:
    """``text.find(tag, position)`` with a memo of the last answer, for positions that mostly grow."""

    def __init__(self, text: str, tag: str):
        self.text, self.tag = text, tag
        self.asked, self.found = -1, -1  # the last position asked and its answer

    def find(self, position: int) -> int:
        if self.asked >= 0 and self.asked <= position and (self.found < 0 or self.found >= position):
            return self.found  # nothing between the last question and its answer, so the answer stands
        self.asked, self.found = position, self.text.find(self.tag, position)
        return self.found


class HermesParser(BaseParser):
    name = "hermes"

    def _parse(self, text: str) -> ParsedTurn:
        turn = ParsedTurn(parser=self.name)
        if not text.strip():
            turn.error = ErrorKind.EMPTY_OUTPUT
            return turn
        first = text.find(OPEN_TAG)
        if first < 0:
            turn.thought = text.strip()
            turn.error = ErrorKind.NO_ACTION
            return turn
        turn.thought = text[:first].strip() or None
        kinds: list[ErrorKind] = []
        # memoised tag searches: each block asks for the next close / open tag, and without a memo a text of
        # many blocks and no close tag rescanned the rest of the text per block (quadratic)
        closes, opens = _NextTag(text, CLOSE_TAG), _NextTag(text, OPEN_TAG)
        position = first
        while position >= 0:
            body_start = position + len(OPEN_TAG)
            obj, end, kind, rung = self._block(text, body_start, closes, opens)
            turn.rung = turn.rung or rung
            kinds.append(kind)
            if obj is not None:
                call, call_kind, detail = call_from_object(obj)
                kinds.append(call_kind)
                if detail:
                    turn.details.append(detail)
                if call is not None:
                    turn.calls.append(call)
                    turn.final_answer = turn.final_answer or finish_answer(call, "robust")
            close, next_open = closes.find(end), opens.find(end)
            closed = close >= 0 and (next_open < 0 or close < next_open)
            after = close + len(CLOSE_TAG) if closed else end
            position = opens.find(after)
            if position < 0 and text[after:].strip():
                kinds.append(ErrorKind.TRAILING_TEXT)
                turn.details.append(f"text after the last block: {text[after:].strip()[:80]!r}")
        turn.error = worst(kinds)
        return turn

    @staticmethod
    def _block(text: str, body_start: int, closes: _NextTag, opens: _NextTag) -> tuple[object, int, ErrorKind, Rung | None]:
        """(decoded value or None, index where the block's JSON ends, error kind, rung) for one block."""
        start = _SPACE.match(text, body_start).end()
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            pass
        else:
            close = closes.find(end)
            stop = close if close >= 0 else len(text)
            next_open = opens.find(end)
            if 0 <= next_open <= stop - len(OPEN_TAG):  # another block starts before this one closes
                return value, end, ErrorKind.NONE, Rung.STRICT
            if text[end:stop].strip():  # no open tag inside, so these slices never overlap: linear in all
                return value, end, ErrorKind.TRAILING_TEXT, Rung.RAW_DECODE
            return value, end, ErrorKind.NONE, Rung.STRICT
        close = closes.find(body_start)
        end = close if close >= 0 else len(text)
        value, rung, kind = decode_arguments(text[body_start:end])
        if close < 0:
            kind = ErrorKind.TRUNCATED_JSON  # an unclosed block whose JSON is incomplete: output cut short
        return value, end, kind, rung
