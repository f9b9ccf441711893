"""Error taxonomy of a run: environment status codes and parse error kinds per group, plus answer counts.

Reads the run folder's ``steps.jsonl`` (one JSON line per environment step: group, query_id, method, step,
parser, error, rung, call, status) and its answer files ``{group}/{qid}_{method}.json``.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..answers.read import iter_answer_files, load_answer
from ..errors import InputError
from ..protocol.env import STATUS_NAMES
from ..queries import GROUPS, is_group_name

STEPS_FILE = "steps.jsonl"
NO_CALL = "no call"


@dataclass
class GroupTaxonomy:
    status: Counter = field(default_factory=Counter)  # status code (int) or NO_CALL -> steps
    errors: Counter = field(default_factory=Counter)  # parse error kind -> steps
    queries: set = field(default_factory=set)
    answered: int = 0
    valid: int = 0

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
    with open(steps_path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                group = groups.setdefault(str(record["group"]), GroupTaxonomy())
                status = record.get("status")
                group.status[NO_CALL if status is None else int(status)] += 1
                group.errors[str(record.get("error") or "none")] += 1
                group.queries.add(str(record["query_id"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"malformed step record ({exc})", path=steps_path, field=f"line {number}") from None
    for group_dir in sorted(p for p in run_dir.iterdir() if p.is_dir() and is_group_name(p.name)):
        files = list(iter_answer_files(group_dir))
        if not files:
            continue
        group = groups.setdefault(group_dir.name, GroupTaxonomy())
        for path in files:
            answer = load_answer(path, group=group_dir.name)
            group.queries.add(answer.query_id)
            group.answered += 1
            group.valid += int(answer.valid)
    return Taxonomy(run_dir, groups)


def _status_label(key: int | str) -> str:
    return f"{key} {STATUS_NAMES.get(key, '?')}" if isinstance(key, int) else str(key)


def taxonomy_tables(tax: Taxonomy) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Three tables (header, rows): answers, status codes, parse error kinds; one column per group + total."""
    groups = tax.ordered_groups()
    header = ["", *groups, "total"]

    def row(name: str, values: list[int]) -> list[str]:
        return [name, *map(str, values), str(sum(values))]

    answers = [row("queries", [len(tax.groups[g].queries) for g in groups]),
               row("answered", [tax.groups[g].answered for g in groups]),
               row("valid", [tax.groups[g].valid for g in groups]),
               row("steps", [tax.groups[g].steps for g in groups])]
    codes = sorted({k for g in groups for k in tax.groups[g].status}, key=lambda k: (isinstance(k, str), k))
    status = [row(_status_label(k), [tax.groups[g].status.get(k, 0) for g in groups]) for k in codes]
    kinds = sorted({k for g in groups for k in tax.groups[g].errors}, key=lambda k: (k != "none", k))
    errors = [row(k, [tax.groups[g].errors.get(k, 0) for g in groups]) for k in kinds]
    return {"answers": (header, answers), "status codes": (header, status), "parse errors": (header, errors)}


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
