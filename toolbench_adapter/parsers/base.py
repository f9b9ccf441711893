"""The parser contract: raw model output in, ParsedTurn out, never an exception."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from ..registry import Registry


class ErrorKind(StrEnum):
    """Why a turn did not yield a clean call. One kind per turn: the first problem met."""

    NONE = "none"
    EMPTY_OUTPUT = "empty_output"
    NO_ACTION = "no_action"
    NO_ACTION_INPUT = "no_action_input"
    EMPTY_ACTION = "empty_action"
    INVALID_JSON = "invalid_json"
    TRUNCATED_JSON = "truncated_json"
    NOT_AN_OBJECT = "not_an_object"
    MULTIPLE_ACTIONS = "multiple_actions"
    TRAILING_TEXT = "trailing_text"
    HALLUCINATED_OBSERVATION = "hallucinated_observation"
    PYTHON_LITERAL = "python_literal"
    MISSING_FIELD = "missing_field"
    BAD_LINE = "bad_line"
    ERROR_FIELD = "error_field"
    SCHEMA_VIOLATION = "schema_violation"
    NAME_WHITESPACE = "name_whitespace"  # the action name carries spaces or a \r: upstream matching misses it
    CONTROL_CHARACTERS = "control_characters"  # raw newlines/tabs inside JSON strings (decoded leniently)
    NOT_APPLICABLE = "not_applicable"  # the input is not of the kind this parser reads (openai-tools on text)
    PARSER_CRASH = "parser_crash"  # the catch-all at the contract boundary fired: a parser bug, never normal
    INPUT_TOO_LARGE = "input_too_large"  # longer than limits.MAX_PARSE_CHARS: not parsed (bounded cost)


class Rung(StrEnum):
    """The rung of the JSON ladder that produced the arguments (first that worked)."""

    STRICT = "strict"
    RAW_DECODE = "raw_decode"
    BRACE_MATCH = "brace_match"
    LENIENT = "lenient"
    PYTHON_LITERAL = "python_literal"
    REPAIR = "repair"
    KEY_VALUE = "key_value"


@dataclass
class Call:
    name: str
    arguments_raw: str
    arguments: dict | None = None  # set when arguments_raw decodes to a JSON object
    call_id: str | None = None


@dataclass
class ParsedTurn:
    parser: str
    thought: str | None = None
    calls: list[Call] = field(default_factory=list)
    final_answer: str | None = None
    error: ErrorKind = ErrorKind.NONE
    rung: Rung | None = None
    details: list[str] = field(default_factory=list)  # human-readable notes, e.g. per bad JSONL line

    def to_json(self) -> dict[str, Any]:
        """The ``tba parse`` line shape."""
        return {
            "parser": self.parser,
            "thought": self.thought,
            "calls": [{"name": c.name, "arguments_raw": c.arguments_raw, "arguments": c.arguments,
                       **({"call_id": c.call_id} if c.call_id is not None else {})} for c in self.calls],
            "final_answer": self.final_answer,
            "error": self.error.value,
            "rung": self.rung.value if self.rung else None,
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Parser(Protocol):
    name: str

    def parse(self, text: str) -> ParsedTurn: ...


# name -> Parser class or "module:attr"; third parties use the entry point group toolbench_adapter.parsers
PARSERS: Registry[type] = Registry("parsers")
