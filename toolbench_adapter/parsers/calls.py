"""Turning a decoded call object ({"name"/"action", "arguments"/"parameters"}) into a Call."""

from __future__ import annotations

from typing import Any

from .base import Call, ErrorKind, Rung
from .contract import decode_arguments, dumps_arguments

NAME_KEYS = ("name", "action")
ARGUMENT_KEYS = ("arguments", "parameters")


def call_from_object(obj: Any, name_keys=NAME_KEYS, argument_keys=ARGUMENT_KEYS) -> tuple[Call | None, ErrorKind, str]:
    """(call or None, error kind, detail). Arguments given as a JSON string are decoded through the ladder."""
    if not isinstance(obj, dict):
        return None, ErrorKind.NOT_AN_OBJECT, f"a call must be a JSON object, got {type(obj).__name__}"
    name_key = next((k for k in name_keys if k in obj), None)
    if name_key is None:
        return None, ErrorKind.MISSING_FIELD, f"no {' / '.join(name_keys)} field"
    name = obj[name_key]
    if not isinstance(name, str) or not name.strip():
        return None, ErrorKind.EMPTY_ACTION, f"empty or non-string {name_key!r}"
    name = name.strip()
    call_id = obj.get("call_id", obj.get("id"))
    call_id = str(call_id) if call_id is not None else None
    args_key = next((k for k in argument_keys if k in obj), None)
    if args_key is None:
        return Call(name=name, arguments_raw="", call_id=call_id), ErrorKind.MISSING_FIELD, f"no {' / '.join(argument_keys)} field"
    return arguments_call(name, obj[args_key], call_id)


def arguments_call(name: str, value: Any, call_id: str | None = None) -> tuple[Call, ErrorKind, str]:
    """A call from an arguments value that is either an object already or a JSON string of one."""
    call, kind, detail, _rung = arguments_call_with_rung(name, value, call_id)
    return call, kind, detail


def arguments_call_with_rung(name: str, value: Any, call_id: str | None = None) -> tuple[Call, ErrorKind, str, Rung | None]:
    if isinstance(value, dict):
        call = Call(name=name, arguments_raw=dumps_arguments(value), arguments=value, call_id=call_id)
        return call, ErrorKind.NONE, "", None
    if isinstance(value, str):
        arguments, rung, kind = decode_arguments(value)
        detail = "" if kind is ErrorKind.NONE else f"arguments string: {kind.value}" + (f" (rung {rung.value})" if rung else "")
        return Call(name=name, arguments_raw=value, arguments=arguments, call_id=call_id), kind, detail, rung
    return (Call(name=name, arguments_raw=dumps_arguments(value), call_id=call_id), ErrorKind.NOT_AN_OBJECT,
            f"arguments are a {type(value).__name__}, not an object", None)


def worst(kinds: list[ErrorKind]) -> ErrorKind:
    """The first non-NONE kind (kinds are listed in the order they were met)."""
    return next((k for k in kinds if k is not ErrorKind.NONE), ErrorKind.NONE)

