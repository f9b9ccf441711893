"""Error taxonomy of a run: environment status codes and parse error kinds per group, plus the query counts.

Reads the run folder's ``steps.jsonl`` (one JSON line per environment step: group, query_id, method, step,
parser, error, rung, call, status), its ``queries.jsonl`` and its answer files ``{group}/{qid}_{method}.json``.
The counts (queries, finished, infrastructure failures, valid, answered, win) are evaluation/scoring/counts.py's, the
same words and numbers as the run summary, the manifest and the report. Steps that record ``violations`` add a
fourth table: model turns, valid ones, re-asks and call violations by kind (toolbench_adapter/structured/).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.evaluation.scoring.counts import Counts
from toolbench_adapter.queryset.queries import GROUPS
from toolbench_adapter.runs.folder import STEPS as STEPS_FILE
from toolbench_adapter.runs.folder import run_counts

from ..errors import InputError
from ..parsers.schema import VIOLATION_KINDS
from ..protocol.env import STATUS_NAMES
from ..structured.rates import TurnFigures, is_reask, turn_figures

NO_CALL = "no call"


@dataclass
class GroupTaxonomy:
    status: Counter = field(default_factory=Counter)  # status code (int) or NO_CALL -> steps
    errors: Counter = field(default_factory=Counter)  # parse error kind -> steps
    counts: Counts = field(default_factory=Counts)  # evaluation/scoring/counts.py: queries, finished, valid, answered, win
    # structured/rates.py: model turns, valid ones, re-asks, call violations by kind (re-asks are not steps)
    calls: TurnFigures = field(default_factory=TurnFigures)

    @property
    def steps(self) -> int:
        return sum(self.status.values())


@dataclass
class Taxonomy:
    run: Path
    groups: dict[str, GroupTaxonomy]

    def ordered_groups(self) -> list[str]:
        known = [g for g in GROUPS if g in self.groups]
        return known + sorted(set(self.groups) - set(known))


def read_taxonomy(run_dir: str | Path) -> Taxonomy:
    run_dir = Path(run_dir)
    steps_path = run_dir / STEPS_FILE
    if not steps_path.exists():
        raise InputError(f"no {STEPS_FILE} in the run folder", path=run_dir,
                         fix="pass a folder written by `tba run` (it holds steps.jsonl)")
    groups: dict[str, GroupTaxonomy] = {}
    records_of: dict[str, list[dict]] = {}
    with open(steps_path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                group = groups.setdefault(str(record["group"]), GroupTaxonomy())
                records_of.setdefault(str(record["group"]), []).append(record)
                if is_reask(record):  # a discarded reply, asked again: a model call, not an environment step
                    continue
                status = record.get("status")
                group.status[NO_CALL if status is None else int(status)] += 1
                group.errors[str(record.get("error") or "none")] += 1
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"malformed step record ({exc})", path=steps_path, field=f"line {number}") from None
    for name, records in records_of.items():
        groups[name].calls = turn_figures(records)
    for name, counts in run_counts(run_dir).items():
        groups.setdefault(name, GroupTaxonomy()).counts = counts
    return Taxonomy(run_dir, groups)


# the query counts, named as in the run summary (counts.DEFINITIONS)
COUNT_ROWS = (("queries", "queries"), ("finished", "finished"), ("infra failures", "infra_failures"),
              ("context length", "context_length"),  # finished at the model's context limit (manifest totals)
              ("valid", "valid"), ("answered", "answered"), ("win", "win"))


def _status_label(key: int | str) -> str:
    return f"{key} {STATUS_NAMES.get(key, '?')}" if isinstance(key, int) else str(key)


def taxonomy_tables(tax: Taxonomy) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Three tables (header, rows): query counts, status codes, parse error kinds; one column per group + total."""
    groups = tax.ordered_groups()
    header = ["", *groups, "total"]

    def row(name: str, values: list[int]) -> list[str]:
        return [name, *map(str, values), str(sum(values))]

    counts = [tax.groups[g].counts for g in groups]
    answers = [row(name, [getattr(c, attr) for c in counts]) for name, attr in COUNT_ROWS]
    answers.append(row("steps", [tax.groups[g].steps for g in groups]))
    codes = sorted({k for g in groups for k in tax.groups[g].status}, key=lambda k: (isinstance(k, str), k))
    status = [row(_status_label(k), [tax.groups[g].status.get(k, 0) for g in groups]) for k in codes]
    kinds = sorted({k for g in groups for k in tax.groups[g].errors}, key=lambda k: (k != "none", k))
    errors = [row(k, [tax.groups[g].errors.get(k, 0) for g in groups]) for k in kinds]
    tables = {"queries": (header, answers), "status codes": (header, status), "parse errors": (header, errors)}
    figures = [tax.groups[g].calls for g in groups]
    if any(f.turns or f.reasks for f in figures):  # runs written before calls were validated have none
        found = sorted({k for f in figures for k in f.violations}, key=_violation_order)
        tables["call violations"] = (header, [
            row("model turns", [f.turns for f in figures]), row("valid turns", [f.valid_turns for f in figures]),
            row("re-asks", [f.reasks for f in figures]),
            *(row(k, [f.violations.get(k, 0) for f in figures]) for k in found)])
    return tables


def _violation_order(kind: str) -> tuple[int, str]:
    return (VIOLATION_KINDS.index(kind) if kind in VIOLATION_KINDS else len(VIOLATION_KINDS), kind)


def to_markdown(tax: Taxonomy) -> str:
    parts = [f"**Error taxonomy of {tax.run}**"]
    for title, (header, rows) in taxonomy_tables(tax).items():
        parts += ["", f"_{title}_", "", "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        parts += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(parts) + "\n"


def to_csv(tax: Taxonomy) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for title, (header, rows) in taxonomy_tables(tax).items():
        for cells in [header, *rows]:
            writer.writerow([title, *cells])
    return buffer.getvalue()
