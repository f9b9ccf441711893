"""The JSON ladder: decode the JSON a model meant, cheapest faithful rung first.

Rungs, in order (the first that yields a value wins and is reported):

1. strict        ``json.loads`` on the whole text (error NONE; any JSON value is accepted here)
2. raw_decode    the first complete value at the start, trailing text ignored (TRAILING_TEXT)
3. brace_match   the first balanced ``{...}`` found inside surrounding text (TRAILING_TEXT)
4. lenient       ``strict=False``: raw control characters such as newlines inside strings
                 (CONTROL_CHARACTERS, or TRAILING_TEXT when text also surrounds the object)
5. python_literal ``ast.literal_eval`` of a Python dict/list repr (PYTHON_LITERAL)
6. repair        ``json_repair`` (TRUNCATED_JSON when an object is left open, else INVALID_JSON)
7. key_value     last resort: ``"key": value`` pairs picked out by a regex (INVALID_JSON / TRUNCATED_JSON)

From rung 2 on only containers (a dict or a list) count as found: a bare number or word in prose is
not "the JSON the model meant". ``decode_json`` never raises.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from .base import ErrorKind, Rung
from .limits import KEY_MAX_CHARS, PYTHON_LITERAL_MAX_CHARS, REPAIR_MAX_CHARS

_STRICT = json.JSONDecoder()
_LENIENT = json.JSONDecoder(strict=False)

# "key": "string" | number | true | false | null  (the value types a flat argument dict uses). A key never
# opens at an escaped quote (the lookbehind) and is at most KEY_MAX_CHARS long: without both, a text of
# escaped quotes made the search start at every quote and scan to the end from each (quadratic: minutes
# at 256 KB). With them each character is scanned by at most one key attempt. Possessive (+) as below.
_KEY_VALUE = re.compile(
    rf'(?<!\\)"((?:[^"\\\n]|\\.){{1,{KEY_MAX_CHARS}}}+)"\s*:\s*("(?:[^"\\]|\\.)*+"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)'
)


# structural characters outside strings; strings are skipped whole with the patterns below
_STRUCTURAL = re.compile(r"""[{}"']""")
# possessive (*+): a string body never gives characters back (none of them could close it), and without
# backtracking points the regex engine keeps no per-character state (60 bytes a character before)
_STRING_BODY = {
    '"': re.compile(r'"(?:[^"\\]|\\.)*+"', re.DOTALL),
    "'": re.compile(r"'(?:[^'\\]|\\.)*+'", re.DOTALL),
}


def find_json_object_end(text: str, start: int) -> int | None:
    """Index just past the ``}`` closing the object opened at ``text[start] == "{"``; None if unclosed.

    Braces inside strings do not count; backslash escapes inside strings are honoured. Both quote
    characters open strings, so single-quoted Python reprs are matched too (JSON has no ``'``
    outside strings, so this never changes the answer for valid JSON). Jumps from one structural
    character to the next with a regex, so the cost is per brace/string, not per character.
    """
    if start < 0 or start >= len(text) or text[start] != "{":
        return None
    depth = 0
    position = start
    while True:
        match = _STRUCTURAL.search(text, position)
        if match is None:
            return None
        char = match.group()
        if char == "{":
            depth += 1
            position = match.end()
        elif char == "}":
            depth -= 1
            if depth == 0:
                return match.end()
            position = match.end()
        else:
            string = _STRING_BODY[char].match(text, match.start())
            if string is None:
                return None  # an unclosed string: the object is truncated
            position = string.end()


def first_object_span(text: str) -> tuple[int, int | None] | None:
    """(start, end) of the first ``{`` and its matching close (end None when unclosed); None without ``{``."""
    start = text.find("{")
    if start < 0:
        return None
    return start, find_json_object_end(text, start)


def _is_container(value: Any) -> bool:
    return isinstance(value, (dict, list))


def _first_non_space(text: str) -> int:
    return len(text) - len(text.lstrip())


def _try_raw_decode(decoder: json.JSONDecoder, text: str) -> tuple[Any, bool] | None:
    """(value, trailing_text_present) for the first value at the start of text, else None."""
    start = _first_non_space(text)
    try:
        value, end = decoder.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    if not _is_container(value):
        return None
    return value, bool(text[end:].strip())


def _jsonable(value: Any) -> Any:
    """Python literal -> JSON-shaped value (tuples become lists); raises TypeError on sets, bytes, ..."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"not JSON-shaped: {type(value).__name__}")


def _try_python_literal(candidate: str) -> Any | None:
    if len(candidate) > PYTHON_LITERAL_MAX_CHARS:  # the parse tree costs ~240 bytes per character
        return None
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" warnings are noise for model text
            warnings.simplefilter("ignore")
            value = ast.literal_eval(candidate.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not _is_container(value):
        return None
    try:
        return _jsonable(value)
    except (TypeError, RecursionError):
        return None


def _try_repair(text: str) -> Any | None:
    if len(text) > REPAIR_MAX_CHARS or ("{" not in text and "[" not in text):
        return None
    try:
        from json_repair import repair_json  # imported lazily: only the repair rung needs it

        value = repair_json(text, return_objects=True)
    except Exception:  # noqa: BLE001 - a third-party repairer may fail in any way; the ladder goes on
        return None
    if not _is_container(value) or not value:
        return None
    return value


def _try_key_value(text: str) -> dict | None:
    pairs = _KEY_VALUE.findall(text)
    if not pairs:
        return None
    result: dict[str, Any] = {}
    for key, raw_value in pairs:
        try:
            result[_LENIENT.decode(f'"{key}"')] = _LENIENT.decode(raw_value)  # one decoder, not one per pair
        except ValueError:
            continue
    return result or None


def _failure_kind(text: str) -> ErrorKind:
    if not text.strip():
        return ErrorKind.EMPTY_OUTPUT
    span = first_object_span(text)
    if span is not None and span[1] is None:
        return ErrorKind.TRUNCATED_JSON
    return ErrorKind.INVALID_JSON


def decode_json(text: str) -> tuple[Any | None, Rung | None, ErrorKind]:
    """Decode ``text`` down the ladder. Returns (value, rung, error kind); (None, None, kind) when nothing works."""
    try:
        return _decode(text)
    except Exception:  # noqa: BLE001 - contract boundary: the ladder never raises
        return None, None, ErrorKind.INVALID_JSON


def _decode(text: str) -> tuple[Any | None, Rung | None, ErrorKind]:
    if not isinstance(text, str):
        return None, None, ErrorKind.INVALID_JSON
    try:
        return json.loads(text), Rung.STRICT, ErrorKind.NONE
    except (ValueError, RecursionError):
        pass

    decoded = _try_raw_decode(_STRICT, text)
    if decoded is not None:
        return decoded[0], Rung.RAW_DECODE, ErrorKind.TRAILING_TEXT

    span = first_object_span(text)
    candidate = text[span[0]:span[1]] if span is not None and span[1] is not None else None
    if candidate is not None:
        try:
            return json.loads(candidate), Rung.BRACE_MATCH, ErrorKind.TRAILING_TEXT
        except (ValueError, RecursionError):
            pass

    lenient = _try_lenient(text, candidate)
    if lenient is not None:
        return lenient

    for source in (text, candidate):
        if source is not None:
            value = _try_python_literal(source)
            if value is not None:
                return value, Rung.PYTHON_LITERAL, ErrorKind.PYTHON_LITERAL

    value = _try_repair(text)
    if value is not None:
        return value, Rung.REPAIR, _failure_kind(text)

    kv = _try_key_value(text)
    if kv is not None:
        return kv, Rung.KEY_VALUE, _failure_kind(text)

    return None, None, _failure_kind(text)


def _try_lenient(text: str, candidate: str | None) -> tuple[Any, Rung, ErrorKind] | None:
    try:
        value = json.loads(text, strict=False)
    except (ValueError, RecursionError):
        value = None
    if _is_container(value):
        return value, Rung.LENIENT, ErrorKind.CONTROL_CHARACTERS
    decoded = _try_raw_decode(_LENIENT, text)
    if decoded is not None:
        kind = ErrorKind.TRAILING_TEXT if decoded[1] else ErrorKind.CONTROL_CHARACTERS
        return decoded[0], Rung.LENIENT, kind
    if candidate is not None:
        try:
            return json.loads(candidate, strict=False), Rung.LENIENT, ErrorKind.TRAILING_TEXT
        except (ValueError, RecursionError):
            return None
    return None
