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

from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.outcomes import FINISHED, HARNESS_ERROR, INFRA_FAILURE
from toolbench_adapter.protocol.evaluation import EMPTY_FINAL_ANSWER_REASON, NO_ANSWER_REASON

# reading a run folder's records (queries.jsonl, answer files) is the layout's job: runs/folder.py

# docs/runs.md says the same; `tba run --help` prints these lines
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
    "with an answer file": "test ids of the test set whose query has an answer file (what strict SoPR's n of N "
                           "counts; not \"answered\", which asks for a give_answer)",
    "by rule": "labels upstream's decision procedure gives without a judge call: an answer with no Finish, or an "
               "empty or given-up final answer, is Unsolved",
    "by the judge": "labels the judge was asked for: a verdict (Solved, Unsure, Unsolved) or none (JudgeError, "
                    "never scored)",
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


# the reasons judge.early_judgement writes on the labels it gives without a judge call (the label files keep them)
RULE_REASONS = frozenset({NO_ANSWER_REASON, EMPTY_FINAL_ANSWER_REASON})


@dataclass
class LabelCounts:
    """An evaluation's labels (one per query and repeat): given by upstream's rule without a judge call, or asked
    of the judge, and of those how many got no verdict. Every card and summary says them apart, so 18 labels all
    given by rule never read as 18 judge verdicts."""

    labels: int = 0
    by_rule: int = 0
    by_judge: int = 0  # judge calls made (cached ones included): verdicts and failures
    failed: int = 0  # of by_judge: no verdict (JudgeError)

    def add(self, label: object, reason: object) -> None:
        self.labels += 1
        if Label.parse(str(label)) is Label.ERROR:
            self.by_judge += 1
            self.failed += 1
        elif str(reason or "") in RULE_REASONS:
            self.by_rule += 1
        else:
            self.by_judge += 1

    def text(self) -> str:
        """e.g. "18 labels: 3 by rule (no Finish or no final answer), 15 by the judge, all gave a verdict"."""
        if not self.by_judge:
            verdicts = "no judge call"
        elif not self.failed:
            verdicts = "all gave a verdict"
        else:
            verdicts = f"{self.failed} without a verdict (JudgeError)"
        return (f"{self.labels} labels: {self.by_rule} by rule (no Finish or no final answer), "
                f"{self.by_judge} by the judge, {verdicts}")

    def as_dict(self) -> dict:
        return {"labels": self.labels, "by_rule": self.by_rule, "by_judge": self.by_judge, "failed": self.failed,
                "text": self.text()}


def count_labels(pairs: Iterable[tuple[object, object]]) -> LabelCounts:
    """(label, reason) pairs, one per query and repeat, as label files store them."""
    totals = LabelCounts()
    for label, reason in pairs:
        totals.add(label, reason)
    return totals
