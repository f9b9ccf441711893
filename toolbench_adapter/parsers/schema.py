"""Check parsed calls against the function list the model was given, with the ``jsonschema`` library.

A call is valid when its name is one of the listed functions (Finish included) and its arguments are a JSON
object that the function's parameters accept. Upstream's schemas are turned into valid JSON Schema first
(upstream_schema.py: ``""`` in ``required``, upstream type spellings, ``optional``). Each problem is a
``Violation`` with a kind (what the error taxonomy counts) and a readable message (what a re-ask shows the
model); ``validate_call`` / ``validate_turn`` keep the message-only interface.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from jsonschema import Draft7Validator

from .base import Call, ErrorKind, ParsedTurn
from .schema_patterns import BoundedValidator, SchemaUnchecked
from .upstream_schema import function_entries, to_json_schema

# violation kinds, in the order the taxonomy lists them
NO_CALL = "no_call"  # the turn holds no call at all
UNKNOWN_FUNCTION = "unknown_function"  # the name is not one of the query's functions
ARGUMENTS_NOT_OBJECT = "arguments_not_object"  # the arguments are not a JSON object
ARGUMENTS_REPAIRED = "arguments_repaired"  # the parser repaired the arguments; what the tool receives is not JSON
TRUNCATED = "truncated"  # the reply was cut before its JSON ended; the call holds what the parser repaired
MISSING_REQUIRED = "missing_required"
WRONG_TYPE = "wrong_type"
NOT_IN_ENUM = "not_in_enum"
UNKNOWN_PARAMETER = "unknown_parameter"  # only where a schema sets additionalProperties: false
OTHER_SCHEMA = "schema"  # any other JSON Schema keyword that failed
# the function's schema could not be checked (a pattern that does not compile or backtracks past the bound, a
# schema nested too deeply): a problem of the recorded schema, not of the call; counted apart (structured/rates.py)
SCHEMA_UNCHECKED = "schema_unchecked"
UNCHECKED_PREFIX = "schema not checkable: "
VIOLATION_KINDS = (NO_CALL, UNKNOWN_FUNCTION, ARGUMENTS_NOT_OBJECT, ARGUMENTS_REPAIRED, TRUNCATED, MISSING_REQUIRED,
                   WRONG_TYPE, NOT_IN_ENUM, UNKNOWN_PARAMETER, OTHER_SCHEMA, SCHEMA_UNCHECKED)
MODEL_KINDS = VIOLATION_KINDS[:-1]  # the kinds that say the model's call is wrong (a re-ask may fix them)
DEEP = "the schema is nested too deeply to check"
_KIND_OF_KEYWORD = {"required": MISSING_REQUIRED, "type": WRONG_TYPE, "enum": NOT_IN_ENUM, "const": NOT_IN_ENUM,
                    "additionalProperties": UNKNOWN_PARAMETER}


@dataclass(frozen=True)
class Violation:
    kind: str
    function: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        return f"{self.function}: {self.message}" if self.function else self.message


# Draft 7: the keywords function schemas use (type, properties, required, enum, items) mean the same as in later
# drafts, and its metaschema checks a schema ~5x faster than 2020-12's (83 vs 419 us per schema, measured on
# 628 STB schemas): a run checks every distinct schema it validates against once (the harness's hot path)
_METASCHEMA = Draft7Validator(Draft7Validator.META_SCHEMA)


@lru_cache(maxsize=4096)
def _validator(schema_json: str) -> Draft7Validator:
    schema = json.loads(schema_json)
    if not _METASCHEMA.is_valid(schema):  # a keyword with a value no validator reads (e.g. a string minimum)
        schema = {"type": "object"}  # then any object passes: the schema cannot say what is wrong
    return BoundedValidator(schema)  # Draft 7, its pattern searches bounded (schema_patterns.py)


_MAX_CONVERTED = 4096
# a function's ``parameters`` (as JSON text) -> its argument schema and that schema's validator: an upstream
# schema's conversion walks every enum value (some list thousands) and a new schema is checked against the
# metaschema, so each distinct function is converted once per process, not once per call
_CONVERTED: dict[str, tuple[dict, Draft7Validator]] = {}


def _converted(parameters: Any) -> tuple[dict, Draft7Validator]:
    """(to_json_schema(parameters), its validator), from the cache when the same parameters were seen before."""
    try:
        key = json.dumps(parameters)
    except (TypeError, ValueError):  # not JSON data (not from a tools file): convert it every time
        key = None
    found = _CONVERTED.get(key) if key is not None else None
    if found is None:
        schema = to_json_schema(parameters)
        found = (schema, _validator(json.dumps(schema, sort_keys=True)))
        if key is not None:
            if len(_CONVERTED) >= _MAX_CONVERTED:
                _CONVERTED.clear()
            _CONVERTED[key] = found
    return found


class LazySchemas:
    """``argument_schemas(functions)`` as a mapping that converts a function's schema when it is first looked up:
    a turn calls one or two of a query's functions, and converting all of them on every step was a visible share
    of the harness's CPU per query (benchmarks/profile_runner.py); a function seen before (Finish, a tool of an
    earlier query) is not converted again. The first entry of a repeated name wins, as in argument_schemas. The
    schemas it hands out are shared: read them, do not edit them."""

    def __init__(self, functions: list):
        self._entries: dict[str, dict] = {}
        for function in function_entries(functions):
            self._entries.setdefault(function["name"], function)
        self._looked_up: dict[str, tuple[dict, Draft7Validator]] = {}  # the cache key (JSON text) made once

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def _get(self, name: str) -> tuple[dict, Draft7Validator]:
        """SchemaUnchecked for a schema too deep to convert (remembered: it is not converted again)."""
        if name not in self._looked_up:
            try:
                self._looked_up[name] = _converted(self._entries[name].get("parameters"))
            except RecursionError:
                self._looked_up[name] = None
        if self._looked_up[name] is None:
            raise SchemaUnchecked(DEEP)
        return self._looked_up[name]

    def __getitem__(self, name: str) -> dict:
        return self._get(name)[0]

    def validator(self, name: str) -> Draft7Validator:
        """The compiled validator of ``self[name]``."""
        return self._get(name)[1]


def _json_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return type(value).__name__


def _where(base: str, path: list) -> tuple[str, str | None]:
    """(where, parameter): ``arguments`` / ``arguments.outer`` and the last property name on the path."""
    names = [str(p) if not isinstance(p, int) else f"[{p}]" for p in path]
    parameter = names[-1] if names else None
    where = base + "".join(f".{n}" if not n.startswith("[") else n for n in names[:-1])
    return where, parameter


def _message(error, base: str) -> tuple[str, str]:
    """(kind, message) for one jsonschema error, worded as the model and the user read it."""
    kind = _KIND_OF_KEYWORD.get(error.validator, OTHER_SCHEMA)
    path = list(error.absolute_path)
    if error.validator == "required":
        where = base + "".join(f".{p}" for p in path)
        missing = next((name for name in error.validator_value if name not in error.instance), "?")
        return kind, f"{where}: missing required parameter {missing!r}"
    if error.validator == "additionalProperties":
        where = base + "".join(f".{p}" for p in path)
        extra = sorted(set(error.instance) - set(error.schema.get("properties") or {}))
        return kind, f"{where}: unknown parameter {', '.join(map(repr, extra))}"
    where, parameter = _where(base, path)
    if parameter is None:
        return kind, f"{where}: {error.message}"
    if error.validator == "type":
        declared = error.validator_value
        shown = "/".join(declared) if isinstance(declared, list) else declared
        return kind, f"{where}: parameter {parameter!r} should be {shown}, got {_json_type_name(error.instance)}"
    if error.validator == "enum":
        return kind, f"{where}: parameter {parameter!r} = {error.instance!r} is not one of {error.validator_value}"
    return kind, f"{where}: parameter {parameter!r}: {error.message}"


def argument_violations(arguments: dict, schema: dict, where: str = "arguments", function: str | None = None,
                        *, validator: Draft7Validator | None = None) -> list[Violation]:
    """``validator``: the schema's compiled validator, when the caller has it (LazySchemas.validator)."""
    try:
        validator = validator if validator is not None else _validator(json.dumps(schema, sort_keys=True))
        errors = sorted(validator.iter_errors(arguments), key=lambda e: (list(e.absolute_path), e.validator))
    except SchemaUnchecked as problem:
        return [unchecked(function, str(problem))]
    except RecursionError:
        return [unchecked(function, DEEP)]
    violations = []
    for error in errors:
        kind, message = _message(error, where)
        violations.append(Violation(kind, function, message))
    return violations


def unchecked(function: str | None, reason: str) -> Violation:
    return Violation(SCHEMA_UNCHECKED, function, UNCHECKED_PREFIX + reason)


def validate_arguments(arguments: dict, schema: dict, where: str = "arguments") -> list[str]:
    """Messages for ``arguments`` against a JSON Schema (adapt upstream schemas with upstream_schema first)."""
    return [v.message for v in argument_violations(arguments, schema, where)]


def call_violations(call: Call, functions: list[dict], action_enum: list[str] | None = None, *,
                    schemas: dict[str, dict] | LazySchemas | None = None, check_sent: bool = False) -> list[Violation]:
    """Violations of one call. ``schemas``: argument_schemas(functions), when the caller has them already.
    ``check_sent``: also flag arguments that only a repair rung decoded (the tool receives the raw text)."""
    schemas = LazySchemas(functions) if schemas is None else schemas
    if action_enum is not None and call.name not in action_enum:
        return [Violation(UNKNOWN_FUNCTION, call.name, f"function {call.name!r} is not one of the allowed actions")]
    if call.name not in schemas:
        return [Violation(UNKNOWN_FUNCTION, call.name, f"no function named {call.name!r}")]
    if not isinstance(call.arguments, dict):
        return [Violation(ARGUMENTS_NOT_OBJECT, call.name, "arguments are not a JSON object")]
    try:
        validator = schemas.validator(call.name) if isinstance(schemas, LazySchemas) else None
        schema = schemas[call.name]
    except SchemaUnchecked as problem:
        return [unchecked(call.name, str(problem))]
    problems = argument_violations(call.arguments, schema, function=call.name, validator=validator)
    if check_sent and call.arguments_raw.strip() and _sent_value(call.arguments_raw) != call.arguments:
        problems.insert(0, Violation(ARGUMENTS_REPAIRED, call.name, "the arguments as written are not valid JSON "
                                     "(the parser repaired them; the tool receives the text as written)"))
    return problems


def _sent_value(raw: str) -> Any:
    try:
        return json.loads(raw, strict=False)
    except (ValueError, RecursionError):
        return None


def validate_call(call: Call, functions: list[dict], action_enum: list[str] | None = None) -> list[str]:
    """Violations of ``call`` against ``functions`` (and an optional enum of allowed action names), as messages."""
    return [v.message for v in call_violations(call, functions, action_enum)]


def validate_turn(turn: ParsedTurn, functions: list[dict], action_enum: list[str] | None = None) -> ParsedTurn:
    """Validate every call; on violations add them to details and, if the turn was clean, set SCHEMA_VIOLATION."""
    for call in turn.calls:
        problems = validate_call(call, functions, action_enum)
        turn.details.extend(f"{call.name}: {p}" for p in problems)
        if problems and turn.error is ErrorKind.NONE:
            turn.error = ErrorKind.SCHEMA_VIOLATION
    return turn


def turn_violations(turn: ParsedTurn, functions: list[dict],
                    schemas: dict[str, dict] | LazySchemas | None = None) -> list[list[Violation]]:
    """Per call of the turn, its violations (check_sent on); a turn with no call: one list holding NO_CALL. A
    reply cut short whose last call the parser completed (TRUNCATED_JSON) is a violation of that call."""
    if not turn.calls:
        return [[Violation(NO_CALL, None, "no function call found in the reply")]]
    schemas = LazySchemas(functions) if schemas is None else schemas
    found = [call_violations(call, functions, schemas=schemas, check_sent=True) for call in turn.calls]
    if turn.error is ErrorKind.TRUNCATED_JSON:
        found[-1].insert(0, Violation(TRUNCATED, turn.calls[-1].name, "the reply was cut before its JSON ended "
                                      "(the parser completed it)"))
    return found


def listed_names(functions: list[dict]) -> list[str]:
    return [f["name"] for f in function_entries(functions)]
