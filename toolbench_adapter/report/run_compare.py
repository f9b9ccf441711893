"""Per-query outcomes of two or more runs side by side (runs of different models, or parser variants over
the same queries), disagreements first.

A query's outcome in one run is (finished or infrastructure failure, win, valid, judge label); the label
counts only when every run judged the query (an unjudged run has no verdict to differ from). Its trace is the
sequence of calls made (name and raw arguments and status code, in tree order) plus the parse error kinds
met. Rank: 2 = the outcomes differ, 1 = same outcome but a different trace, 0 = the same, -1 = the query is
missing from a run (counted apart: two runs over different query sets do not "differ" on the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..outcomes import INFRA_FAILURE
from .run_data import QueryData, RunData

OUTCOME_DIFFERS, TRACE_DIFFERS, SAME, MISSING = 2, 1, 0, -1


@dataclass
class CompareRow:
    group: str
    query_id: str
    query: str
    cells: list[QueryData | None]  # one per run, None where the run lacks the query
    rank: int


def outcome(query: QueryData, with_label: bool = True) -> tuple:
    return (query.outcome == INFRA_FAILURE, query.win, query.valid) + ((query.label,) if with_label else ())


def trace(query: QueryData) -> tuple:
    calls = []
    for index, node in enumerate(query.nodes):
        if node["t"] == "A":
            follower = query.nodes[index + 1] if index + 1 < len(query.nodes) else {}
            given = follower if follower.get("t") == "I" else {}
            calls.append((node["d"], given.get("d"), given.get("c")))
    return tuple(calls), tuple(query.error_kinds)


def rank_of(cells: list[QueryData | None]) -> int:
    if any(cell is None for cell in cells):
        return MISSING
    judged = all(c.labels for c in cells)
    if len({outcome(c, with_label=judged) for c in cells}) > 1:
        return OUTCOME_DIFFERS
    if len({trace(c) for c in cells}) > 1:
        return TRACE_DIFFERS
    return SAME


def compare_runs(runs: list[RunData]) -> list[CompareRow]:
    indexes = [{q.key: q for q in run.queries} for run in runs]
    keys: list[tuple[str, str]] = []
    seen = set()
    for run in runs:
        for query in run.queries:
            if query.key not in seen:
                seen.add(query.key)
                keys.append(query.key)
    rows = []
    for key in keys:
        cells = [index.get(key) for index in indexes]
        text = next(c.query for c in cells if c is not None)
        rows.append(CompareRow(key[0], key[1], text, cells, rank_of(cells)))
    order = {key: position for position, key in enumerate(keys)}
    rows.sort(key=lambda row: (-row.rank, order[(row.group, row.query_id)]))
    return rows


def summary(rows: list[CompareRow]) -> dict[str, int]:
    return {"queries": len(rows), "outcome_differs": sum(r.rank == OUTCOME_DIFFERS for r in rows),
            "trace_differs": sum(r.rank == TRACE_DIFFERS for r in rows), "same": sum(r.rank == SAME for r in rows),
            "missing": sum(r.rank == MISSING for r in rows),
            "missing_per_run": [sum(r.cells[i] is None for r in rows) for i in range(len(rows[0].cells))]
            if rows else []}
