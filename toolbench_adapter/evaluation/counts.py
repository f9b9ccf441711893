"""What a run's counts mean, defined once: every place that counts queries (the run summary and ``--json``,
the manifest totals, the error taxonomy, the report, the tables' footnotes) calls ``count`` with the same
words, so one word never names two numbers.

A *record* is one query's line as ``queries.jsonl`` holds it: ``group``, ``query_id``, ``outcome``
(finished | infra_failure | unknown), ``failure_kind``, and the flags ``valid_data``, ``answered``, ``win``
that ``answer_flags`` reads off the query's answer file.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..outcomes import FINISHED, HARNESS_ERROR, INFRA_FAILURE

# reading a run folder's records (queries.jsonl, answer files) is the layout's job: runfolder.py

# README "Runs" says the same; `tba run --help` prints these lines
DEFINITIONS = {
    "finished": "queries that ran to their end (the model's success or failure); an answer file is written",
    "valid": "finished queries whose answer file has valid_data (a final answer, or for DFSDT a give-up "
             "chosen as upstream does)",
    "answered": "valid queries whose final answer is a give_answer",
    "context length": "finished queries in which the model endpoint refused a request as longer than the model's "
                      "context (the chain ended there, as upstream's does)",
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
    context_length: int = 0  # DEFINITIONS["context length"]: the model's limit, an outcome of finished queries
    infra_failures_by_kind: Counter = field(default_factory=Counter)

    def add(self, record: Mapping) -> None:
        # a stats line written before outcomes were recorded is a finished query (infra failures came later)
        outcome = record.get("outcome") or FINISHED
        self.queries += 1
        if outcome == INFRA_FAILURE:
            self.infra_failures += 1
            self.infra_failures_by_kind[record.get("failure_kind") or HARNESS_ERROR] += 1
            return  # an infrastructure failure has no answer: it is neither valid nor answered nor a win
        self.finished += outcome == FINISHED
        self.outcome_unknown += outcome != FINISHED
        self.context_length += bool(record.get("context_length"))
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
