"""What a run's counts mean, defined once: every place that counts queries (the run summary and ``--json``,
the manifest totals, the error taxonomy, the report, the tables' footnotes) calls ``count`` with the same
words, so one word never names two numbers.

A *record* is one query's line as ``queries.jsonl`` holds it: ``group``, ``query_id``, ``outcome``
(finished | infra_failure | unknown), ``failure_kind``, and the flags ``valid_data``, ``answered``, ``win``
that ``answer_flags`` reads off the query's answer file.
"""

from __future__ import annotations

import contextlib
import json
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..answers.read import iter_answer_files, load_answer, split_file_name
from ..queries import is_group_name

FINISHED, INFRA_FAILURE, UNKNOWN = "finished", "infra_failure", "unknown"
QUERY_LINES = "queries.jsonl"

# README "Runs" says the same; `tba run --help` prints these lines
DEFINITIONS = {
    "finished": "queries that ran to their end (the model's success or failure); an answer file is written",
    "valid": "finished queries whose answer file has valid_data (a final answer, or for DFSDT a give-up "
             "chosen as upstream does)",
    "answered": "valid queries whose final answer is a give_answer",
    "win": "finished queries whose search reached Finish with give_answer (upstream's \"win\" flag: not a "
           "judged pass; tba evaluate RUN judges them)",
    "judged": "the queries a pass rate divides by: upstream, every finished query's answer file (one "
              "without a final answer is Unsolved); strict, the whole test set",
}


def glossary(words: Iterable[str] = ("finished", "valid", "answered", "win"), width: int = 108) -> str:
    """The definitions as an indented list (``tba run --help``)."""
    lines = []
    for word in words:
        lines += textwrap.wrap(DEFINITIONS[word], width, initial_indent=f"  {word:<9} ", subsequent_indent=" " * 12)
    return "\n".join(lines)


def is_answered(valid: bool, final_answer: object) -> bool:
    """A valid answer whose final answer is a give_answer (upstream's runner prints these as successes)."""
    return bool(valid) and "give_answer" in str(final_answer or "")


def answer_flags(data: Mapping) -> dict:
    """``valid_data``, ``answered`` and ``win`` of an answer file's JSON (upstream raw format)."""
    generation = data.get("answer_generation") or {}
    valid = bool(generation.get("valid_data"))
    return {"valid_data": valid, "answered": is_answered(valid, generation.get("final_answer")),
            "win": bool(data.get("win"))}


@dataclass
class Counts:
    queries: int = 0
    finished: int = 0
    valid: int = 0
    answered: int = 0
    win: int = 0
    infra_failures: int = 0
    outcome_unknown: int = 0  # a run written before outcomes were recorded (the report reads it so)
    infra_failures_by_kind: Counter = field(default_factory=Counter)

    def add(self, record: Mapping) -> None:
        # a stats line written before outcomes were recorded is a finished query (infra failures came later)
        outcome = record.get("outcome") or FINISHED
        self.queries += 1
        if outcome == INFRA_FAILURE:
            self.infra_failures += 1
            self.infra_failures_by_kind[record.get("failure_kind") or "harness_error"] += 1
            return  # an infrastructure failure has no answer: it is neither valid nor answered nor a win
        self.finished += outcome == FINISHED
        self.outcome_unknown += outcome != FINISHED
        self.valid += bool(record.get("valid_data"))
        self.answered += bool(record.get("answered", record.get("valid_data")))  # older lines: valid
        self.win += bool(record.get("win"))

    def as_dict(self) -> dict:
        return {"queries": self.queries, "finished": self.finished, "infra_failures": self.infra_failures,
                "infra_failures_by_kind": dict(sorted(self.infra_failures_by_kind.items())),
                "valid": self.valid, "answered": self.answered, "win": self.win}


def count(records: Iterable[Mapping]) -> Counts:
    totals = Counts()
    for record in records:
        totals.add(record)
    return totals


def count_by_group(records: Iterable[Mapping]) -> dict[str, Counts]:
    groups: dict[str, Counts] = {}
    for record in records:
        groups.setdefault(str(record["group"]), Counts()).add(record)
    return groups


def read_query_lines(path: str | Path) -> list[dict]:
    """``queries.jsonl``: the latest line per query (a resumed run appends; a redone query counts once, as what
    it is now); a line cut by a kill is skipped (that query is re-run and logged again)."""
    latest: dict[tuple, dict] = {}
    path = Path(path)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record = json.loads(line)
                latest[(str(record["group"]), str(record["query_id"]))] = record
    return list(latest.values())


def run_records(run_dir: str | Path, answer_files: Iterable[tuple[str, str, Path]] = ()) -> list[dict]:
    """One record per query of a run folder: its ``queries.jsonl`` lines, plus a finished record for each
    answer file ``(group, query_id, path)`` without a line (a folder of answer files only, or a line lost)."""
    records = read_query_lines(Path(run_dir) / QUERY_LINES)
    known = {(str(r["group"]), str(r["query_id"])) for r in records}
    for group, query_id, path in answer_files:
        if (group, str(query_id)) not in known:
            data = load_answer(path, group=group).data  # a malformed file is named (InputError)
            records.append({"group": group, "query_id": query_id, "outcome": FINISHED, **answer_flags(data)})
    return records


def run_counts(run_dir: str | Path) -> dict[str, Counts]:
    """group -> Counts of a run folder: its queries.jsonl lines, and its answer files ``{group}/{qid}_*.json``
    that have none."""
    run_dir = Path(run_dir)
    answers = [(folder.name, split_file_name(path.name)[0], path)
               for folder in sorted(p for p in run_dir.iterdir() if p.is_dir() and is_group_name(p.name))
               for path in iter_answer_files(folder)]
    return count_by_group(run_records(run_dir, answers))
