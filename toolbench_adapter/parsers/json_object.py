"""json-object: one JSON object per turn with ``think`` / ``action`` / ``arguments`` / ``answer``.

Shapes: ``{"think": "...", "action": "name", "arguments": {...}}`` for a call and
``{"think": "...", "answer": "..."}`` for the final answer (a Finish give_answer call, so runners treat it
like Finish). The object is found inside surrounding text through the JSON ladder (strict, first
balanced object, lenient, Python literal, repair); ``arguments`` given as a JSON string are decoded too.
Required fields: ``action`` with ``arguments``, or ``answer`` (MISSING_FIELD otherwise).

When the JSON fails, the legacy XML tags are read instead: ``<think>…</think>`` (thought),
``<tools_call>{"name"/"action", "arguments"/"parameters"}</tools_call>`` (a call),
``<search>query</search>`` (a call to ``search`` with ``{"query": …}``) and ``<answer>…</answer>``.
"""

from __future__ import annotations

import re

from ..protocol.functions import FINISH_NAME
from .base import ErrorKind, ParsedTurn
from .calls import arguments_call, call_from_object
from .contract import BaseParser, answer_call, decode_arguments, finish_answer

_TAG = {tag: re.compile(rf"<{tag}>(.*?)(?:</{tag}>|$)", re.DOTALL) for tag in ("think", "tools_call", "search", "answer")}
SEARCH_CALL_NAME = "search"


class JsonObjectParser(BaseParser):
    name = "json-object"

    def _parse(self, text: str) -> ParsedTurn:
        turn = ParsedTurn(parser=self.name)
        if not text.strip():
            turn.error = ErrorKind.EMPTY_OUTPUT
            return turn
        obj, rung, kind = decode_arguments(text)
        if obj is not None and any(k in obj for k in ("action", "answer", "think")):
            turn.rung = rung
            self._from_object(turn, obj, kind)
            return turn
        if self._from_tags(turn, text):
            return turn
        turn.rung = rung
        if obj is not None:
            turn.error = ErrorKind.MISSING_FIELD
            turn.details.append("object has none of think / action / answer")
        else:
            turn.error = kind if kind is not ErrorKind.NONE else ErrorKind.NO_ACTION
            turn.thought = text.strip()
        return turn

    def _from_object(self, turn: ParsedTurn, obj: dict, ladder_kind: ErrorKind) -> None:
        think = obj.get("think")
        turn.thought = think if isinstance(think, str) else None
        if obj.get("answer") is not None:
            answer = obj["answer"] if isinstance(obj["answer"], str) else str(obj["answer"])
            turn.calls.append(answer_call(answer))
            turn.final_answer = answer
            turn.error = ladder_kind
            return
        call, kind, detail = call_from_object(obj, name_keys=("action",), argument_keys=("arguments",))
        if detail:
            turn.details.append(detail)
        if call is not None:
            turn.calls.append(call)
            turn.final_answer = finish_answer(call, "robust")
        turn.error = kind if kind is not ErrorKind.NONE else ladder_kind

    def _from_tags(self, turn: ParsedTurn, text: str) -> bool:
        found = {tag: pattern.search(text) for tag, pattern in _TAG.items()}
        if not any(found[t] for t in ("tools_call", "search", "answer")):
            return False
        turn.details.append("legacy XML tags")
        if found["think"]:
            turn.thought = found["think"].group(1).strip()
        if found["tools_call"]:
            obj, rung, kind = decode_arguments(found["tools_call"].group(1))
            turn.rung = rung
            if obj is None:
                turn.error = kind
                return True
            call, call_kind, detail = call_from_object(obj)
            if detail:
                turn.details.append(detail)
            if call is not None:
                turn.calls.append(call)
                turn.final_answer = finish_answer(call, "robust") if call.name == FINISH_NAME else None
            turn.error = call_kind if call_kind is not ErrorKind.NONE else kind
        elif found["search"]:
            call, kind, _ = arguments_call(SEARCH_CALL_NAME, {"query": found["search"].group(1).strip()})
            turn.calls.append(call)
            turn.error = kind
        else:
            answer = found["answer"].group(1).strip()
            turn.calls.append(answer_call(answer))
            turn.final_answer = answer
        return True
