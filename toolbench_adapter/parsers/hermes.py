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

from ..protocol.parsers import HERMES_CLOSE, HERMES_OPEN
from .base import ErrorKind, ParsedTurn, Rung
from .calls import call_from_object, worst
from .contract import BaseParser, decode_arguments, finish_answer

OPEN_TAG = HERMES_OPEN
CLOSE_TAG = HERMES_CLOSE
_DECODER = json.JSONDecoder()


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
        position = first
        while position >= 0:
            body_start = position + len(OPEN_TAG)
            obj, end, kind, rung = self._block(text, body_start)
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
            close, next_open = text.find(CLOSE_TAG, end), text.find(OPEN_TAG, end)
            closed = close >= 0 and (next_open < 0 or close < next_open)
            after = close + len(CLOSE_TAG) if closed else end
            position = text.find(OPEN_TAG, after)
            if position < 0 and text[after:].strip():
                kinds.append(ErrorKind.TRAILING_TEXT)
                turn.details.append(f"text after the last block: {text[after:].strip()[:80]!r}")
        turn.error = worst(kinds)
        return turn

    @staticmethod
    def _block(text: str, body_start: int) -> tuple[object, int, ErrorKind, Rung | None]:
        """(decoded value or None, index where the block's JSON ends, error kind, rung) for one block."""
        start = len(text) - len(text[body_start:].lstrip())
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            pass
        else:
            close = text.find(CLOSE_TAG, end)
            between = text[end:close if close >= 0 else len(text)]
            if between.strip() and OPEN_TAG not in between:
                return value, end, ErrorKind.TRAILING_TEXT, Rung.RAW_DECODE
            return value, end, ErrorKind.NONE, Rung.STRICT
        close = text.find(CLOSE_TAG, body_start)
        end = close if close >= 0 else len(text)
        value, rung, kind = decode_arguments(text[body_start:end])
        if close < 0:
            kind = ErrorKind.TRUNCATED_JSON  # an unclosed block whose JSON is incomplete: output cut short
        return value, end, kind, rung
