"""Type and range checks of run settings, from a YAML file or from flags, with messages that say the fix.

The types and ranges are RunConfig's own annotations (``Annotated[int, Field(ge=1)]``, ``Literal[...]``),
checked by pydantic in strict mode: YAML's ``"4"`` is a string, not a number, and ``true`` is not 1. Each
problem names the setting, what it holds and a corrected example in the form the user wrote it in: a
config-file line (``concurrency: 4``) or a flag (``--concurrency 4``).
"""

from __future__ import annotations

import difflib
import json
import shlex
import types
import typing
from dataclasses import MISSING, Field, fields
from functools import cache
from typing import Any, Literal, Union

import yaml
from pydantic import ConfigDict, TypeAdapter, ValidationError

_STRICT = ConfigDict(strict=True)
_RANGE_ERRORS = ("greater_than_equal", "greater_than", "less_than_equal", "less_than", "finite_number",
                 "string_too_short")
# flags whose spelling is not --{name with dashes}, and settings that have no flag
_FLAG_NAMES = {"backend_options": "--backend-option", "dialect_options": "--dialect-option"}
NO_FLAG = {"compat_flags", "trial", "max_observation_length"}  # max_observation_length: a --config file's (1024 is
# upstream's: comparability); trial: set by a set of trials on its trial folders, not by a user


class Problem(typing.NamedTuple):
    field: str
    problem: str
    fix: str | None


def type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


@cache
def _adapter(hint: Any) -> TypeAdapter:
    return TypeAdapter(hint, config=_STRICT)


def shown(value: Any) -> str:
    """A value as the user wrote it (JSON spelling: strings quoted, so "4" and 4 differ on screen)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", tuple: "a list", dict: "a mapping"}.get(type(value),
                                                                                  type(value).__name__)


def describe(hint: Any) -> str:
    """What a type annotation accepts, in words: ``a whole number of at least 1``, ``text or null``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        words = describe(args[0])
        for meta in getattr(args[1], "metadata", []):
            for attribute, phrase in (("ge", "of at least"), ("gt", "above"), ("le", "and at most"), ("lt", "below"),
                                      ("min_length", "of length at least")):
                if getattr(meta, attribute, None) is not None:
                    words += f" {phrase} {getattr(meta, attribute)}"
        return words
    if origin in (Union, types.UnionType):
        parts = [describe(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" or null (not set)" if type(None) in args else "")
    if origin is Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin is list:
        return f"a list (each item {describe(args[0])})"
    if origin is dict:
        return "a mapping of names to " + ("values" if args[1] is Any else describe(args[1]))
    return {int: "a whole number", float: "a number", str: "text", bool: "true or false", Any: "any value"}.get(
        hint, getattr(hint, "__name__", str(hint)))


def flag_for(name: str) -> str:
    return _FLAG_NAMES.get(name, "--" + name.replace("_", "-"))


def example_text(name: str, value: Any, in_file: bool) -> str:
    """``concurrency: 4`` (a config file) or ``--concurrency 4`` (flags)."""
    if in_file:
        text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=1000)
        return f"{name}: " + text.removesuffix("\n").removesuffix("\n...").strip()
    if name in NO_FLAG:
        return example_text(name, value, in_file=True) + " (in a --config file)"
    if isinstance(value, dict):
        return " ".join(f"{flag_for(name)} " + shlex.quote(f"{key}={item}") for key, item in value.items())
    if isinstance(value, list):
        return f"{flag_for(name)} " + " ".join(shlex.quote(str(item)) for item in value)
    return f"{flag_for(name)} {shlex.quote(str(value))}"


def _accepts(hint: Any, value: Any) -> bool:
    try:
        _adapter(hint).validate_python(value)
    except ValidationError:
        return False
    return True


def _example(name: str, hint: Any, value: Any, default: Any, examples: dict[str, Any]) -> Any:
    """A corrected value: the user's string read as YAML when that fits ("4" -> 4), else the field's example
    or default."""
    if isinstance(value, str):
        try:
            read = yaml.safe_load(value)
        except yaml.YAMLError:
            read = None
        if read is not None and _accepts(hint, read):
            return read
    return examples.get(name, default)


def top_reason(hint: Any) -> str | None:
    """Why a range stops where it does: the description of the ``Field`` in ``hint`` (runners/config/limits.py)."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Annotated:
        return next((m.description for m in args[1:] if getattr(m, "description", None)), None)
    return next((why for why in map(top_reason, args) if why), None)


def _range_problem(name: str, value: Any, error: dict, why: str | None = None) -> str:
    ctx = error.get("ctx") or {}
    if error["type"] in ("less_than_equal", "less_than") and why:
        top = ctx.get("le", ctx.get("lt"))
        top = int(top) if isinstance(top, float) and top.is_integer() else top  # 86400, not 86400.0
        word = "at most" if error["type"] == "less_than_equal" else "below"
        return f"{name} must be {word} {top} (got {shown(value)}): {why}"
    if error["type"] == "greater_than_equal":
        return f"{name} must be at least {ctx['ge']} (got {shown(value)})"
    if error["type"] == "greater_than":
        return f"{name} must be above {ctx['gt']} (got {shown(value)})"
    if error["type"] == "less_than_equal":
        return f"{name} must be at most {ctx['le']} (got {shown(value)})"
    if error["type"] == "less_than":
        return f"{name} must be below {ctx['lt']} (got {shown(value)})"
    if error["type"] == "finite_number":
        return f"{name} must be a finite number (got {shown(value)})"
    if error["type"] == "string_too_short":
        return f"{name} must not be empty"
    return f"{name}: {shown(value)}: {error['msg']}"


def check_value(name: str, hint: Any, value: Any, *, default: Any, examples: dict[str, Any],
                expected: dict[str, str], in_file: bool) -> Problem | None:
    """The problem with one setting's value, or None when its type and range are right."""
    try:
        _adapter(hint).validate_python(value)
        return None
    except ValidationError as exc:
        errors = exc.errors()
    fix = f"write {expected.get(name) or describe(hint)}, e.g. " + example_text(
        name, _example(name, hint, value, default, examples), in_file)
    ranged = next((e for e in errors if e["type"] in _RANGE_ERRORS), None)
    if ranged is not None:
        return Problem(name, _range_problem(name, value, ranged, top_reason(hint)), fix)
    if any(e["type"] == "literal_error" for e in errors):
        return Problem(name, f"{shown(value)} is not one of the choices", fix)
    # a wrong item inside a list or mapping: name that item
    inner = next((e for e in errors if e["input"] is not value), None)
    if inner is not None:
        what = " (a key)" if "[key]" in inner["loc"] else ""
        return Problem(name, f"{shown(value)}: {shown(inner['input'])}{what} is {kind_of(inner['input'])}", fix)
    return Problem(name, f"{shown(value)} is {kind_of(value)}", fix)


def unknown_key_problem(key: str, known: list[str]) -> Problem:
    close = [key.replace("-", "_")] if key.replace("-", "_") in known else difflib.get_close_matches(key, known, n=2)
    hint = f"did you mean {' or '.join(close)}?" if close else f"known settings: {', '.join(sorted(known))}"
    return Problem(key, f"unknown setting(s) {key}", hint)


def field_defaults(cls: type) -> dict[str, Any]:
    def default(f: Field) -> Any:
        if f.default is not MISSING:
            return f.default
        return f.default_factory() if f.default_factory is not MISSING else None

    return {f.name: default(f) for f in fields(cls)}
