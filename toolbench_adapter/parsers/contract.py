"""What every built-in parser shares: the never-raise boundary and the call/Finish helpers."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from ..protocol.functions import FINISH_NAME, GIVE_ANSWER
from .base import Call, ErrorKind, ParsedTurn, Rung
from .finish import parse_finish
from .ladder import decode_json
from .limits import MAX_PARSE_CHARS


class BaseParser(ABC):
    """Subclasses implement ``_parse(text)``; ``parse`` guarantees the no-exception contract.

    The catch-all below is the contract boundary, not the normal path: a turn that reaches it is
    reported as PARSER_CRASH with the exception in ``details`` so the bug is visible in reports.
    """

    name = "base"

    def parse(self, text: str) -> ParsedTurn:
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        if len(text) > MAX_PARSE_CHARS:  # a bounded cost for any input, whatever the variant does inside
            return ParsedTurn(parser=self.name, error=ErrorKind.INPUT_TOO_LARGE,
                              details=[f"{len(text)} characters: more than the {MAX_PARSE_CHARS} a parser reads"])
        try:
            return self._parse(text)
        except Exception as exc:  # noqa: BLE001 - contract boundary: parsers never raise
            return ParsedTurn(parser=self.name, error=ErrorKind.PARSER_CRASH,
                              details=[f"parser crashed: {type(exc).__name__}: {exc}"])

    @abstractmethod
    def _parse(self, text: str) -> ParsedTurn:
        """The variant's own parsing; may raise (the contract above turns that into PARSER_CRASH)."""


def decode_arguments(raw: str) -> tuple[dict | None, Rung | None, ErrorKind]:
    """Arguments through the JSON ladder: (dict or None, rung, kind). A non-object value is NOT_AN_OBJECT."""
    value, rung, kind = decode_json(raw)
    if isinstance(value, str) and value.lstrip().startswith("{"):
        # double-encoded arguments ("{\"city\": ...}" as a JSON string): decode once more
        inner, _inner_rung, inner_kind = decode_json(value)
        if isinstance(inner, dict):
            return inner, rung, kind if kind is not ErrorKind.NONE else inner_kind
    if value is None:
        return None, None, kind
    if not isinstance(value, dict):
        return None, rung, ErrorKind.NOT_AN_OBJECT
    return value, rung, kind


def dumps_arguments(arguments: Any) -> str:
    """The arguments string a structured format implies (the object re-serialised, unicode kept)."""
    return json.dumps(arguments, ensure_ascii=False)


def finish_answer(call: Call, variant: str) -> str | None:
    """The final answer a Finish call gives (give_answer with an answer), else None."""
    if call.name != FINISH_NAME:
        return None
    args = parse_finish(call.arguments_raw, variant)
    if args.return_type == GIVE_ANSWER and args.final_answer is not None:
        return args.final_answer
    return None


def answer_call(answer: str) -> Call:
    """A structured format's plain answer, as the Finish call a runner understands."""
    arguments = {"return_type": GIVE_ANSWER, "final_answer": answer}
    return Call(name=FINISH_NAME, arguments_raw=dumps_arguments(arguments), arguments=arguments)
