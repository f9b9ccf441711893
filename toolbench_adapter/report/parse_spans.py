"""Where a parse went wrong inside the raw model output: character spans for the HTML report.

Parsers return a ParsedTurn, not positions, so the spans are found again here from what the turn says:
the call name and its raw arguments are looked up in the text, then the error kind decides what to mark.
Span kinds: ``name`` (the call name), ``args`` (arguments that decoded), ``bad`` (where JSON decoding
failed, or the whole arguments when the position is unknown), ``cut`` (text the parser dropped or that
should not be there: trailing text, a hallucinated observation, a second action) and ``miss`` (no call
was found at all). Spans never overlap and are sorted.
"""

from __future__ import annotations

import json
import re

from ..parsers import ErrorKind, ParsedTurn, find_json_object_end

Span = tuple[int, int, str]

JSON_KINDS = {ErrorKind.INVALID_JSON, ErrorKind.TRUNCATED_JSON, ErrorKind.NOT_AN_OBJECT,
              ErrorKind.PYTHON_LITERAL, ErrorKind.CONTROL_CHARACTERS, ErrorKind.SCHEMA_VIOLATION}
CUT_KINDS = {ErrorKind.TRAILING_TEXT, ErrorKind.HALLUCINATED_OBSERVATION, ErrorKind.MULTIPLE_ACTIONS}
NO_CALL_KINDS = {ErrorKind.EMPTY_OUTPUT, ErrorKind.NO_ACTION, ErrorKind.NO_ACTION_INPUT, ErrorKind.EMPTY_ACTION,
                 ErrorKind.MISSING_FIELD, ErrorKind.BAD_LINE, ErrorKind.ERROR_FIELD, ErrorKind.INPUT_TOO_LARGE}

# label lines as the robust ReAct reader sees them (any spacing around the colon, at a line start)
_OBSERVATION_LINE = re.compile(r"(?m)^[ \t]*(?:Observation|Function)[ \t]*:")
_ACTION_LINE = re.compile(r"(?m)^[ \t]*Action[ \t]*:")


def parse_spans(text: str, turn: ParsedTurn) -> list[Span]:
    if turn.error in NO_CALL_KINDS:
        # no usable call (a find-based parser may still return slices of the text): the whole text missed
        return [(0, len(text), "miss")] if text.strip() else []
    spans: list[Span] = []
    cursor = 0
    calls_end = None
    for call in turn.calls:
        name_at = text.find(call.name, cursor) if call.name else -1
        if name_at >= 0:
            spans.append((name_at, name_at + len(call.name), "name"))
            cursor = name_at + len(call.name)
        raw = call.arguments_raw or ""
        args_at = text.find(raw, cursor) if raw.strip() else -1
        if args_at < 0:
            continue
        spans.extend(_argument_spans(raw, args_at, call.arguments is not None, turn.error))
        cursor = calls_end = args_at + len(raw)
    if turn.error in CUT_KINDS:
        spans.extend(_cut_spans(text, spans, calls_end))
    return _clean(spans, len(text))


def _argument_spans(raw: str, start: int, decoded: bool, error: ErrorKind) -> list[Span]:
    end = start + len(raw)
    if error in CUT_KINDS:
        # a find-based parser keeps the trailing text inside the arguments: split it off at the object's end
        first = raw.find("{")
        closes = find_json_object_end(raw, first) if first >= 0 else None
        if closes is not None and raw[closes:].strip():
            lead = len(raw[closes:]) - len(raw[closes:].lstrip())
            return [(start, start + closes, "args"), (start + closes + lead, end, "cut")]
    if error not in JSON_KINDS:
        return [(start, end, "args" if decoded else "bad")]
    failed_at = _json_failure(raw)
    if failed_at is None or failed_at >= len(raw.rstrip()):
        return [(start, end, "bad")]  # truncated (fails at the end) or no position: mark all of it
    return [(start, start + failed_at, "args"), (start + failed_at, end, "bad")]


def _json_failure(raw: str) -> int | None:
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        return exc.pos
    except (TypeError, ValueError):
        return None
    return None


def _cut_spans(text: str, spans: list[Span], calls_end: int | None) -> list[Span]:
    if any(kind == "cut" for _, _, kind in spans):
        return []
    if calls_end is not None and text[calls_end:].strip():
        lead = len(text[calls_end:]) - len(text[calls_end:].lstrip())
        return [(calls_end + lead, len(text), "cut")]
    # the offending part sits before the call (an observation written ahead of the action)
    found = [(m.start(), _line_end(text, m.start()), "cut") for m in _OBSERVATION_LINE.finditer(text)]
    if not found:
        actions = list(_ACTION_LINE.finditer(text))
        found = [(m.start(), _line_end(text, m.start()), "cut") for m in actions[1:]]
    return found


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _clean(spans: list[Span], length: int) -> list[Span]:
    """Sorted, clipped to the text and without overlaps (an earlier span wins)."""
    out: list[Span] = []
    last_end = 0
    for start, end, kind in sorted(spans):
        start, end = max(start, last_end), min(end, length)
        if start < end:
            out.append((start, end, kind))
            last_end = end
    return out
