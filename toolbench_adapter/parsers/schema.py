"""Check a parsed call against the function schemas the model was given.

A small validator for the subset of JSON schema that tool functions use: the function name (in the
list, or in an ``enum`` of action names), required parameters present, ``enum`` values, and basic types
(string, integer, number, boolean, array, object, null), plus ``additionalProperties: false``. Upstream
schemas may list ``""`` in ``required`` (STB quirk, reference §14 item 5): such entries are ignored.
Violations come back as readable strings; ``validate_turn`` marks the turn SCHEMA_VIOLATION so a runner
can retry or fall back.
"""

from __future__ import annotations

from typing import Any

from .base import Call, ErrorKind, ParsedTurn

_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _function_dicts(functions: list[dict]) -> list[dict]:
    """Accept both plain function dicts and OpenAI tools ({"type": "function", "function": {...}})."""
    result = []
    for entry in functions:
        if isinstance(entry, dict) and isinstance(entry.get("function"), dict):
            entry = entry["function"]
        if isinstance(entry, dict):
            result.append(entry)
    return result


def _type_ok(value: Any, declared: Any) -> bool:
    types = declared if isinstance(declared, list) else [declared]
    known = [t for t in types if t in _TYPE_CHECKS]
    return not known or any(_TYPE_CHECKS[t](value) for t in known)


def validate_arguments(arguments: dict, schema: dict, where: str = "arguments") -> list[str]:
    problems: list[str] = []
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name and name not in arguments:
            problems.append(f"{where}: missing required parameter {name!r}")
    for name, value in arguments.items():
        spec = properties.get(name)
        if not isinstance(spec, dict):
            if schema.get("additionalProperties") is False:
                problems.append(f"{where}: unknown parameter {name!r}")
            continue
        if "type" in spec and not _type_ok(value, spec["type"]):
            problems.append(f"{where}: parameter {name!r} should be {spec['type']}, got {type(value).__name__}")
        if isinstance(spec.get("enum"), list) and value not in spec["enum"]:
            problems.append(f"{where}: parameter {name!r} = {value!r} is not one of {spec['enum']}")
        if spec.get("type") == "object" and isinstance(value, dict) and "properties" in spec:
            problems.extend(validate_arguments(value, spec, f"{where}.{name}"))
    return problems


def validate_call(call: Call, functions: list[dict], action_enum: list[str] | None = None) -> list[str]:
    """Violations of ``call`` against ``functions`` (and an optional enum of allowed action names)."""
    by_name = {f.get("name"): f for f in _function_dicts(functions)}
    if action_enum is not None and call.name not in action_enum:
        return [f"function {call.name!r} is not one of the allowed actions"]
    function = by_name.get(call.name)
    if function is None:
        return [f"no function named {call.name!r}"]
    if call.arguments is None:
        return ["arguments are not a JSON object"]
    schema = function.get("parameters") or {}
    return validate_arguments(call.arguments, schema) if isinstance(schema, dict) else []


def validate_turn(turn: ParsedTurn, functions: list[dict], action_enum: list[str] | None = None) -> ParsedTurn:
    """Validate every call; on violations add them to details and, if the turn was clean, set SCHEMA_VIOLATION."""
    for call in turn.calls:
        problems = validate_call(call, functions, action_enum)
        turn.details.extend(f"{call.name}: {p}" for p in problems)
        if problems and turn.error is ErrorKind.NONE:
            turn.error = ErrorKind.SCHEMA_VIOLATION
    return turn
