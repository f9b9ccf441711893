"""Bounded ``pattern`` checks for function schemas: a recorded schema may hold any regular expression.

jsonschema checks ``pattern`` with ``re.search``, which backtracks: ``^(a+)+$`` against 34 ``a`` and ``!`` held
the interpreter for minutes, Ctrl-C included (issue 35). Here the ``regex`` module (a dependency of transformers)
runs each search with a time bound and without the GIL (``concurrent``), so other queries go on and a signal is
handled as soon as the bound is reached. A pattern that does not compile, or whose search ran past the bound, is
a problem of the schema, not of the call: ``SchemaUnchecked`` (parsers/schema.py records it for that function).
A pattern that ran past the bound once is not searched again in this process (each costs at most one bound).
"""

from __future__ import annotations

from functools import lru_cache

import regex
from jsonschema import Draft7Validator, ValidationError, validators

PATTERN_TIMEOUT_S = 1.0  # per search; the regex module checks it while it backtracks
_SLOW: set[str] = set()  # patterns whose search ran past the bound once


class SchemaUnchecked(Exception):
    """The schema cannot be checked (the message says why); no verdict on the call."""


@lru_cache(maxsize=1024)
def _compiled(pattern: str):
    try:
        return regex.compile(pattern)
    except (regex.error, TypeError, ValueError, OverflowError, RecursionError) as error:
        raise SchemaUnchecked(f"pattern {pattern!r} does not compile ({error})") from None


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``; SchemaUnchecked when that cannot be said in time."""
    if pattern in _SLOW:
        raise SchemaUnchecked(f"pattern {pattern!r} ran past {PATTERN_TIMEOUT_S:g} s before (it backtracks)")
    compiled = _compiled(pattern)
    try:
        return compiled.search(text, timeout=PATTERN_TIMEOUT_S, concurrent=True) is not None
    except TimeoutError:
        _SLOW.add(pattern)
        raise SchemaUnchecked(f"pattern {pattern!r} ran past {PATTERN_TIMEOUT_S:g} s on a {len(text)}-character "
                              "argument (it backtracks)") from None


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


# Draft 7 with the two keywords that run a regular expression on the instance replaced
BoundedValidator = validators.extend(Draft7Validator, {"pattern": _pattern, "patternProperties": _pattern_properties})
