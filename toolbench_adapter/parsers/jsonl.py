"""jsonl: one call per line, ``{"name": ..., "parameters": {...}, "call_id": ...}`` (call_id optional).

``"arguments"`` is accepted as an alias of ``"parameters"``. Lines are split on ``\\n`` only (a ``\\r``
before it is stripped); blank lines are ignored. A line that is not a JSON object with a non-empty
name and object parameters is skipped and reported in ``details`` with its line number (error
BAD_LINE); the good lines still give their calls. A line carrying an ``"error"`` field is the model
reporting an error: no call, reported as ERROR_FIELD. The turn's error is the first problem met.

``JsonlStreamParser`` reads the same text in arbitrary chunks and hands back each call as soon as its
line is complete; ``close()`` gives the ParsedTurn, identical to the batch parser's for any chunking.
"""

from __future__ import annotations

import json

from .base import Call, ErrorKind, ParsedTurn, Rung
from .calls import call_from_object
from .contract import BaseParser, finish_answer


class JsonlStreamParser:
    name = "jsonl"

    def __init__(self) -> None:
        self._buffer = ""
        self._line_number = 0
        self._turn = ParsedTurn(parser=self.name)
        self._saw_content = False
        self._closed = False

    def feed(self, chunk: str) -> list[Call]:
        """Add text; return the calls whose lines this chunk completed."""
        if self._closed:
            raise RuntimeError("feed() after close()")
        self._buffer += chunk
        if "\n" not in chunk:
            return []
        *complete, self._buffer = self._buffer.split("\n")
        calls: list[Call] = []
        for line in complete:
            call = self._line(line)
            if call is not None:
                calls.append(call)
        return calls

    def close(self) -> ParsedTurn:
        """Finish the last (unterminated) line and return the turn."""
        if not self._closed:
            self._closed = True
            self._line(self._buffer)
            self._buffer = ""
            if self._turn.error is ErrorKind.NONE and not self._turn.calls:
                self._turn.error = ErrorKind.NO_ACTION if self._saw_content else ErrorKind.EMPTY_OUTPUT
        return self._turn

    def _line(self, line: str) -> Call | None:
        self._line_number += 1
        text = line.strip()
        if not text:
            return None
        self._saw_content = True
        value, rung = _load(text)
        if isinstance(value, dict) and "error" in value and value["error"]:
            self._problem(ErrorKind.ERROR_FIELD, f"line {self._line_number}: error field: {str(value['error'])[:80]!r}")
            return None
        call, kind, detail = call_from_object(value, name_keys=("name",), argument_keys=("parameters", "arguments"))
        if value is None:
            detail = "not JSON"
        if call is None or kind is not ErrorKind.NONE:
            self._problem(ErrorKind.BAD_LINE, f"line {self._line_number}: {detail or kind.value}: {text[:80]!r}")
            return None
        self._turn.calls.append(call)
        if self._turn.rung is None or rung is Rung.LENIENT:
            self._turn.rung = rung
        if self._turn.final_answer is None:
            self._turn.final_answer = finish_answer(call, "robust")
        return call

    def _problem(self, kind: ErrorKind, detail: str) -> None:
        self._turn.details.append(detail)
        if self._turn.error is ErrorKind.NONE:
            self._turn.error = kind


def _load(text: str) -> tuple[object, Rung | None]:
    for rung, strict in ((Rung.STRICT, True), (Rung.LENIENT, False)):
        try:
            return json.loads(text, strict=strict), rung
        except (ValueError, RecursionError):
            continue
    return None, None


class JsonlParser(BaseParser):
    name = "jsonl"

    def _parse(self, text: str) -> ParsedTurn:
        stream = JsonlStreamParser()
        stream.feed(text)
        return stream.close()
