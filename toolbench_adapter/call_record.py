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


class CallRecorder:
    """One query's recorder: ``sent(request, completion)`` after each model call, ``take()`` into the first
    step record of that call (later records of the same call get nothing)."""

    def __init__(self) -> None:
        self._pending: tuple[Any, Any] | None = None
        self._previous: dict[str, Any] = {"kind": None, "body": None, **{part: _UNSET for part in PARTS}}

    def sent(self, request: Any, completion: Any) -> None:
        self._pending = (request, completion)

    def take(self) -> dict:
        if self._pending is None:
            return {}
        request, completion = self._pending
        self._pending = None
        fields: dict[str, Any] = {SENT: self._encode(request), OUTPUT: completion.text}
        if completion.tool_calls:
            fields[OUTPUT_TOOL_CALLS] = _copy(completion.tool_calls)
        return fields

    def _encode(self, request: Any) -> dict:
        previous = self._previous
        kind, body = (TEXT, request.prompt) if request.prompt is not None else (MESSAGES, request.messages or [])
        shared = shared_prefix(body, previous["body"]) if kind == previous["kind"] else 0
        rest = body[shared:] if kind == TEXT else _copy(body[shared:])  # the history's dicts may change later
        if kind == MESSAGES:
            body = (previous["body"] or [])[:shared] + rest  # the copies, kept to compare the next request with
        sent: dict[str, Any] = {"kind": kind, "shared": shared, "rest": rest}
        parts = {"tools": request.tools, "stop": list(request.stop or []), "prefill": request.extra.get("prefill")}
        for part, value in parts.items():
            if previous[part] is _UNSET or value != previous[part]:
                sent[part] = _copy(value)
        self._previous = {"kind": kind, "body": body, **parts}
        return sent


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value)) if isinstance(value, (list, dict)) else value


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
