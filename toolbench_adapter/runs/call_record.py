"""What a run keeps of each model call in its step records (steps.jsonl): the request sent and the raw reply.

The first step record of each model call (``turn``) carries

- ``sent``: the request as a change from the query's previous recorded request, so a query's prompts, which
  share most of their text, are stored about once: ``{"kind": "text" | "messages", "shared": n, "rest": ...}``
  (the prompt is the previous one's first ``n`` characters, or messages, followed by ``rest``), plus ``tools``,
  ``stop`` and ``prefill`` whenever they differ from the previous request (all three on the query's first);
- ``output``: the raw text the model returned (None when it answered with native tool calls only), and
  ``output_tool_calls`` when it returned native tool calls.

``decode_requests`` turns a query's records back into every request exactly as it was sent; the report shows
them and ``tba compare-parsers --input RUN`` re-reads the outputs.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

SENT, OUTPUT, OUTPUT_TOOL_CALLS = "sent", "output", "output_tool_calls"
TEXT, MESSAGES = "text", "messages"
PARTS = ("tools", "stop", "prefill")  # sent with the prompt; recorded when they change
_UNSET = object()


def shared_prefix(items, previous) -> int:
    """The length of the prefix ``items`` shares with ``previous`` (strings: binary search on C-speed
    startswith; lists: element by element)."""
    if isinstance(items, str):
        low, high = 0, min(len(items), len(previous))
        while low < high:
            middle = (low + high + 1) // 2
            if items.startswith(previous[:middle]):
                low = middle
            else:
                high = middle - 1
        return low
    shared = 0
    while shared < min(len(items), len(previous)) and items[shared] == previous[shared]:
        shared += 1
    return shared


class RawJSON:
    """JSON text encoded once, as ``json.dumps`` wrote it, standing for a value in a step record until
    ``encode_record`` writes the record. Not a str: ``json.dumps`` refuses it (TypeError) rather than quoting it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def value(self) -> Any:
        return json.loads(self.text)


_MARK = f"\x00tba-raw-json-{uuid.uuid4().hex}-"  # a string no record holds: where each RawJSON's text goes


def encode_record(record: dict) -> str:
    """``json.dumps(record)`` with each RawJSON value's text in its place: the same bytes as encoding the value
    itself, without a second pass over the request (the largest part of a step record)."""
    raw = {key: value for key, value in record.items() if type(value) is RawJSON}
    if not raw:
        return json.dumps(record)
    marks = {key: f"{_MARK}{key}" for key in raw}
    text = json.dumps({**record, **marks})
    for key, value in raw.items():
        quoted = json.dumps(marks[key])
        if text.count(quoted) != 1:  # cannot happen (a fresh random mark): encode as json.dumps would
            return json.dumps({k: v.value() if type(v) is RawJSON else v for k, v in record.items()})
        text = text.replace(quoted, value.text, 1)
    return text


class CallRecorder:
    """One query's recorder: ``sent(request, completion)`` after each model call, ``take()`` into the first
    step record of that call (later records of the same call get nothing). The request is encoded once, when
    taken: the record holds its JSON text (RawJSON), written by ``encode_record``."""

    def __init__(self) -> None:
        self._pending: tuple[Any, Any] | None = None
        # the previous request, to store the next one as a change from it: its kind, its body and parts (frozen:
        # the history's dicts may change later)
        self._previous: dict[str, Any] = {"kind": None, "body": None, **{part: _UNSET for part in PARTS}}

    def sent(self, request: Any, completion: Any) -> None:
        self._pending = (request, completion)

    def take(self) -> dict:
        if self._pending is None:
            return {}
        request, completion = self._pending
        self._pending = None
        fields: dict[str, Any] = {SENT: RawJSON(self._encode(request)), OUTPUT: completion.text}
        if completion.tool_calls:
            fields[OUTPUT_TOOL_CALLS] = RawJSON(json.dumps(completion.tool_calls))
        # --constrain: functions whose arguments the grammar left free, and why (structured/grammar.py)
        unconstrained = getattr((request.extra or {}).get("constraint"), "unconstrained", None)
        if unconstrained:
            fields["unconstrained"] = dict(unconstrained)
        return fields

    def _encode(self, request: Any) -> str:
        """``json.dumps`` of {"kind", "shared", "rest", and each part that changed}, in that key order."""
        previous = self._previous
        kind, body = (TEXT, request.prompt) if request.prompt is not None else (MESSAGES, request.messages or [])
        shared = shared_prefix(body, previous["body"]) if kind == previous["kind"] else 0
        rest = body[shared:]
        encoded = json.dumps(rest)
        text = f'{{"kind": {json.dumps(kind)}, "shared": {shared}, "rest": {encoded}'
        if kind == MESSAGES:  # kept to compare the next request with
            body = (previous["body"] or [])[:shared] + _frozen(rest, encoded)
        parts = {"tools": request.tools, "stop": list(request.stop or []), "prefill": request.extra.get("prefill")}
        for part, value in parts.items():
            if previous[part] is _UNSET or value != previous[part]:  # encoded only when it changed
                encoded = json.dumps(value)
                text += f", {json.dumps(part)}: {encoded}"
                parts[part] = _frozen(value, encoded)
            else:
                parts[part] = previous[part]
        self._previous = {"kind": kind, "body": body, **parts}
        return text + "}"


def _frozen(value: Any, encoded: str) -> Any:
    """A copy of JSON data that later edits of ``value`` cannot reach: containers copied, their (immutable)
    strings and numbers shared, so a long prompt is not copied character by character. Data nested deeper than
    that walk recurses (a recorded schema ~300 levels deep) is decoded from ``encoded``, its JSON text."""
    try:
        return _copied(value)
    except RecursionError:
        return json.loads(encoded)


def _copied(value: Any) -> Any:
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list or type(value) is tuple:
        return [_copied(item) for item in value]
    return value


def decode_requests(records: list[dict]) -> list[dict]:
    """Every recorded request of one query, in order: {"turn", "kind", "prompt" (text or messages), "tools",
    "stop", "prefill", "output", "output_tool_calls"}. Records without ``sent`` (later steps of a call, or a
    run written before requests were recorded) are skipped."""
    out: list[dict] = []
    body: Any = None
    kind = None
    parts: dict[str, Any] = {"tools": None, "stop": [], "prefill": None}
    for record in records:
        sent = record.get(SENT)
        if not isinstance(sent, dict):
            continue
        if sent.get("kind") != kind:
            body = "" if sent.get("kind") == TEXT else []
            kind = sent.get("kind")
        body = body[: int(sent.get("shared") or 0)] + sent.get("rest", "" if kind == TEXT else [])
        parts = {part: sent[part] if part in sent else parts[part] for part in PARTS}
        out.append({"turn": record.get("turn"), "kind": kind, "prompt": body, **parts,
                    OUTPUT: record.get(OUTPUT), OUTPUT_TOOL_CALLS: record.get(OUTPUT_TOOL_CALLS)})
    return out
