"""The violations of one parsed turn against the query's function list, as steps.jsonl records them."""

from __future__ import annotations

from toolbench_adapter.queryset.toolset import Toolset

from ..parsers.base import ParsedTurn
from ..parsers.schema import LazySchemas, Violation, turn_violations


def step_violations(parsed: ParsedTurn, toolset: Toolset, schemas: LazySchemas | None = None) -> list[list[dict]]:
    """Per call of the turn (in order) the list of its violations as dicts; one list for a turn with no call.
    ``schemas``: LazySchemas(toolset.functions) kept for the whole query (each schema converted once)."""
    per_call = turn_violations(parsed, toolset.functions, schemas)  # each called function's schema converted lazily
    return [[v.as_dict() for v in violations] for violations in per_call]


def flat(per_call: list[list[dict]]) -> list[dict]:
    return [v for violations in per_call for v in violations]


def as_violations(records: list[dict]) -> list[Violation]:
    return [Violation(r["kind"], r.get("function"), r["message"]) for r in records]
