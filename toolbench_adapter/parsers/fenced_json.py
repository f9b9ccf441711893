"""fenced-json: a call as a JSON object, bare or in a Markdown fence.

Where the JSON is looked for, in order: the whole text as JSON; else the first ```` ```json ```` (or
plain ```` ``` ````) fenced block; else the span from the first ``{`` to the last ``}``. The candidate
goes down the JSON ladder. Object shape: ``{"name" | "action": ..., "arguments" | "parameters": {...}}``;
a JSON list of such objects gives several calls. Text outside a fence is the thought. The span
fallback reports TRAILING_TEXT (prose around unfenced JSON); no JSON at all is NO_ACTION.
"""

from __future__ import annotations

import json
import re

from .base import ErrorKind, ParsedTurn, Rung
from .calls import call_from_object, worst
from .contract import BaseParser, finish_answer
from .ladder import decode_json

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)


def locate_json(text: str) -> tuple[str | None, str, ErrorKind]:
    """(candidate JSON text, the text outside it, kind for the location)."""
    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        return text, "", ErrorKind.NONE
    fence = _FENCE.search(text)
    if fence:
        return fence.group(1), (text[:fence.start()] + text[fence.end():]).strip(), ErrorKind.NONE
    first, last = text.find("{"), text.rfind("}")
    if first >= 0:
        end = last + 1 if last > first else len(text)  # no closing brace: let the ladder repair the tail
        outside = (text[:first] + text[end:]).strip()
        return text[first:end], outside, ErrorKind.TRAILING_TEXT if outside else ErrorKind.NONE
    return None, text.strip(), ErrorKind.NO_ACTION


class FencedJsonParser(BaseParser):
    name = "fenced-json"

    def _parse(self, text: str) -> ParsedTurn:
        turn = ParsedTurn(parser=self.name)
        if not text.strip():
            turn.error = ErrorKind.EMPTY_OUTPUT
            return turn
        candidate, outside, location_kind = locate_json(text)
        turn.thought = outside or None
        if candidate is None:
            turn.error = location_kind
            return turn
        value, rung, kind = decode_json(candidate)
        turn.rung = rung
        if value is None:
            turn.error = kind
            return turn
        objects = value if isinstance(value, list) else [value]
        kinds = [kind if kind is not ErrorKind.TRAILING_TEXT else ErrorKind.NONE]
        for obj in objects:
            call, call_kind, detail = call_from_object(obj)
            kinds.append(call_kind)
            if detail:
                turn.details.append(detail)
            if call is not None:
                turn.calls.append(call)
                turn.final_answer = turn.final_answer or finish_answer(call, "robust")
        if rung is Rung.RAW_DECODE or rung is Rung.BRACE_MATCH or kind is ErrorKind.TRAILING_TEXT:
            kinds.append(ErrorKind.TRAILING_TEXT)
        kinds.append(location_kind)
        turn.error = worst(kinds)
        return turn
