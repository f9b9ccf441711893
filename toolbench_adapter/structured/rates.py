"""Figures of a run's step records about structured output: valid model turns, violations by kind, re-asks.

A model turn is one model call (``turn`` in a step record), re-asked ones included (their record has
``kind: "reask"``). It is valid when it made at least one call and every call named a listed function with
arguments its schema accepts: no step of that turn records a violation. Records without ``violations``
(model errors, runs written before validation) count toward no turn. A turn whose only problem is a schema that
could not be checked (``schema_unchecked``: a problem of the recorded schema, not of the model) is neither valid
nor invalid: it counts in ``unchecked_turns``, apart from ``turns``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

REASK = "reask"  # the ``kind`` of a step record that stands for a discarded, re-asked reply
UNCHECKED = "schema_unchecked"  # parsers/schema.py: SCHEMA_UNCHECKED


def is_reask(record: dict) -> bool:
    return record.get("kind") == REASK


@dataclass
class TurnFigures:
    turns: int = 0
    valid_turns: int = 0
    reasks: int = 0
    unchecked_turns: int = 0  # turns whose schema could not be checked (and nothing else was wrong)
    violations: Counter = field(default_factory=Counter)  # violation kind -> occurrences

    @property
    def valid_share(self) -> float | None:
        return self.valid_turns / self.turns if self.turns else None


def turn_figures(records: Iterable[dict]) -> TurnFigures:
    """The figures over any step records (one query's, a group's or a run's)."""
    figures = TurnFigures()
    valid: dict[tuple, bool] = {}
    unchecked: set[tuple] = set()
    for record in records:
        figures.reasks += is_reask(record)
        found = record.get("violations")
        if found is None:
            continue
        key = (record.get("group"), record.get("query_id"), record.get("turn"), is_reask(record))
        kinds = [v.get("kind", "?") if isinstance(v, dict) else "?" for v in found]
        if UNCHECKED in kinds:
            unchecked.add(key)
        valid[key] = valid.get(key, True) and all(kind == UNCHECKED for kind in kinds)
        figures.violations.update(kinds)
    apart = {key for key in unchecked if valid[key]}  # no verdict: the schema alone was the problem
    figures.turns = len(valid) - len(apart)
    figures.valid_turns = sum(valid.values()) - len(apart)
    figures.unchecked_turns = len(apart)
    return figures


def query_stats(records: Iterable[dict]) -> dict:
    """The fields a query's queries.jsonl line carries (the manifest totals sum them)."""
    figures = turn_figures(records)
    stats = {"model_turns": figures.turns, "valid_turns": figures.valid_turns, "reasks": figures.reasks}
    if figures.unchecked_turns:
        stats["unchecked_turns"] = figures.unchecked_turns
    return stats


def total_stats(lines: Iterable[dict]) -> dict:
    """The manifest totals of those fields over queries.jsonl lines (lines written before them count 0)."""
    lines = list(lines)
    turns = sum(line.get("model_turns", 0) for line in lines)
    valid = sum(line.get("valid_turns", 0) for line in lines)
    totals = {"model_turns": turns, "valid_turns": valid, "reasks": sum(line.get("reasks", 0) for line in lines),
              "valid_turn_share": round(valid / turns, 4) if turns else None}
    unchecked = sum(line.get("unchecked_turns", 0) for line in lines)
    if unchecked:
        totals["unchecked_turns"] = unchecked
    return totals
