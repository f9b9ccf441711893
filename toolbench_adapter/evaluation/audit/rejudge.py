"""Judge audit: re-judge the answers that released label files hold, and measure agreement with their labels.

A released pass-rate label file keeps, per query, the answer's tool steps (``answer_steps``), its final step
and the published judge's labels. The answer is judged again with a judge of the user's choosing (the same
decision procedure and cache as ``tba judge``); each (query, repeat) pair of released and new label goes into
a confusion matrix over Solved / Unsolved / Unsure (and our JudgeError). Answers decided by rule (no Finish, or
an empty / give-up final answer: Unsolved without a request) are kept apart from the pairs the judge decided;
agreement.py measures those, report.py prints them. This module plans the answers (``plan_audit``: before
any request; ``audit_cost``: what it will ask) and judges them (``audit``).

Answers: a converted answer file (``--converted``, ``{model}/{group}.json``) gives the exact answer; without
one the answer is rebuilt from the label file (a chain of its tool steps; the final answer = the arguments of
the Finish step). A rebuilt answer gives the judge the same final answer, but ``parse_answer_status`` (asked
on Unsure) sees the tool steps only, not the whole trajectory.
"""

from __future__ import annotations

import ast
import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.audit.agreement import Kappa, Unit, kappa_of
from toolbench_adapter.evaluation.audit.sample import stratified_sample
from toolbench_adapter.evaluation.cache import JudgementCache, cache_key
from toolbench_adapter.evaluation.judging.judge import FunctionJudge
from toolbench_adapter.evaluation.judging.passrate import judge_converted
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.labelsets import PASS_RATE, FoundLabels
from toolbench_adapter.evaluation.scoring.scores import Score, evaluate_times_of, sopr
from toolbench_adapter.evaluation.steps import ends_with_finish, get_steps
from toolbench_adapter.files.fileio import read_json
from toolbench_adapter.files.input_files import read_text
from toolbench_adapter.protocol.evaluation import FINAL_STEP_PREFIX, GIVE_UP_MARKER, STEP_PREFIX

CATEGORIES = [Label.SOLVED, Label.UNSOLVED, Label.UNSURE]


# ---- the answers --------------------------------------------------------------------------------------


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def rebuild_answer(answer_steps: str, final_step: str) -> dict | None:
    """A converted answer whose ``get_steps`` gives back exactly these texts; None when they do not parse."""
    messages = []
    for number, line in enumerate(answer_steps.split("\n") if answer_steps else [], start=1):
        prefix = STEP_PREFIX.format(n=number)
        message = _literal(line[len(prefix):]) if line.startswith(prefix) else None
        if not isinstance(message, dict):
            return None
        messages.append(message)
    final = _literal(final_step[len(FINAL_STEP_PREFIX):]) if final_step.startswith(FINAL_STEP_PREFIX) else None
    finish = isinstance(final, dict) and final.get("name") == "Finish"
    node: dict = {"role": "tool", "message": messages[-1], "next": []} if messages else {}
    for message in reversed(messages[:-1]):
        node = {"role": "tool", "message": message, "next": [node]}
    root = {"role": "system", "message": "", "next": [node] if node else []}
    answer = {"method": None, "total_steps": len(messages),
              "final_answer": str(final.get("arguments") or "") if finish else "", "answer_details": [root]}
    if get_steps({"answer": answer}) != (answer_steps, final_step):
        return None  # not the shape upstream writes: do not judge something else than was labelled
    return answer


def decided_by_rule(answer: dict) -> bool:
    """Upstream labels these Unsolved without asking the judge (no Finish, or an empty / give-up answer)."""
    _steps, final_step = get_steps({"answer": answer})
    final_answer = answer.get("final_answer") or ""
    return not ends_with_finish(final_step) or final_answer == "" or GIVE_UP_MARKER in final_answer


def _label_entries(found: FoundLabels) -> dict[str, dict]:
    """``{qid: {query, tool_names, answer_steps, final_step}}`` from a JSON or CSV label file."""
    if found.path.suffix != ".csv":
        return found.read().entries
    csv.field_size_limit(1 << 30)
    text = read_text(found.path, "label file")
    rows = list(csv.DictReader(io.StringIO(text, newline=""), delimiter="\t"))
    entries = {}
    for row in rows:
        if "model_final_step" not in row:
            raise InputError("pass-rate CSV needs the model_intermediate_steps and model_final_step columns",
                             path=found.path)
        tools = _literal(row.get("available_tools") or "[]")
        entries[row["query_id"]] = {"query": row["query"], "tool_names": tools if isinstance(tools, list) else [],
                                    "answer_steps": row["model_intermediate_steps"],
                                    "final_step": row["model_final_step"]}
    return entries


def _converted(dirs: list[Path], model: str, group: str) -> dict[str, dict]:
    for folder in dirs:
        path = folder / model / f"{group}.json"
        if path.is_file():
            data = read_json(path, "converted answer file", kind="converted answer file")
            if isinstance(data, dict):
                return {str(k): v for k, v in data.items()}
    return {}


# ---- agreement -------------------------------------------------------------------------------------------


@dataclass
class Agreement:
    pairs: list[tuple[Label, Label]]  # (released, ours)

    @property
    def categories(self) -> list[Label]:
        extra = [Label.ERROR] if any(Label.ERROR in pair for pair in self.pairs) else []
        return CATEGORIES + extra

    def matrix(self) -> dict[tuple[Label, Label], int]:
        counts = {(a, b): 0 for a in self.categories for b in self.categories}
        for pair in self.pairs:
            counts[pair] += 1
        return counts

    @property
    def judged(self) -> list[tuple[Label, Label]]:
        """Pairs with a verdict on both sides: a judge error is no verdict, so it is left out of the rates."""
        return [pair for pair in self.pairs if Label.ERROR not in pair]

    @property
    def errors(self) -> int:
        return len(self.pairs) - len(self.judged)

    @property
    def agree(self) -> int:
        return sum(1 for released, ours in self.judged if released is ours)

    @property
    def accuracy(self) -> float | None:
        return self.agree / len(self.judged) if self.judged else None

    def kappa_of(self) -> Kappa:
        return kappa_of(Unit(dict(enumerate(r for r, _ in self.pairs)), dict(enumerate(o for _, o in self.pairs)))
                        .counts())

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa: (p_o - p_e) / (1 - p_e); None when the released side holds one label only."""
        return self.kappa_of().value


# ---- the audit -------------------------------------------------------------------------------------------


@dataclass
class AuditedSet:
    """One label file: its answers (``examples``, planned before any request) and, once judged, our labels."""

    model: str
    group: str
    source: Path
    released: dict[str, dict[int, Label]]
    ours: dict[str, dict[int, Label]]
    examples: dict[str, dict] = field(default_factory=dict, repr=False)
    evaluate_times: int = 1
    exact: int = 0  # answers from a converted file
    rebuilt: int = 0  # answers rebuilt from the label file
    unreadable: list[str] = field(default_factory=list)  # qids whose steps could not be rebuilt: not judged
    rule_qids: set[str] = field(default_factory=set)  # answers labelled Unsolved without a request
    requests: int = 0
    cache_hits: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    @property
    def by_rule(self) -> int:
        return len(self.rule_qids)

    def units(self) -> list[Unit]:
        return [Unit(self.released.get(q, {}), self.ours[q], q in self.rule_qids) for q in self.ours]

    def _pairs(self, by_rule: bool) -> list[tuple[Label, Label]]:
        return [pair for unit in self.units() if unit.by_rule is by_rule for pair in unit.pairs()]

    @property
    def agreement(self) -> Agreement:
        """The pairs the judge decided: the only ones accuracy and kappa count."""
        return Agreement(self._pairs(False))

    @property
    def rule_agreement(self) -> Agreement:
        """The pairs decided by rule on our side (no request): shown apart."""
        return Agreement(self._pairs(True))

    def sopr(self) -> tuple[Score, Score]:
        """(released, ours) over the same answers, every answer (rule-decided ones too), upstream denominator."""
        released = {q: self.released[q] for q in self.ours}
        return sopr(released), sopr(self.ours)


def pass_rate_sets(found: list[FoundLabels]) -> list[FoundLabels]:
    """The label files an audit can re-judge (they hold answers); none is bad input, found before any judging."""
    sets = [f for f in found if f.kind == PASS_RATE]
    if not sets:
        raise InputError("no pass-rate label files among the labels given (preference files hold no answers)",
                         path=", ".join(str(f.path) for f in found))
    return sets


def plan_audit(found: list[FoundLabels], *, evaluate_times: int | None = None,
               converted_dirs: list[str | Path] = (), limit: int | None = None, sample: int | None = None,
               seed: int = 0) -> list[AuditedSet]:
    """The answers to judge, per label file, before the judge is asked anything (bad input is exit 2 here).
    ``sample``: that many answers drawn from the judgeable ones, stratified by group and released label."""
    converted_dirs = [Path(d) for d in converted_dirs]
    out = []
    for item in pass_rate_sets(found):
        labels = item.read()
        if not labels.labels:
            raise InputError("label file holds no labels", path=item.path)
        entries = _label_entries(item)
        exact_answers = _converted(converted_dirs, labels.model, labels.group)
        result = AuditedSet(labels.model, labels.group, item.path, labels.labels, {},
                            evaluate_times=evaluate_times or evaluate_times_of(labels.labels) or 1)
        for qid in list(labels.labels)[:limit]:
            entry = entries.get(qid, {})
            if qid in exact_answers and isinstance(exact_answers[qid], dict) and "answer" in exact_answers[qid]:
                result.examples[qid] = exact_answers[qid]
                continue
            answer = rebuild_answer(entry.get("answer_steps") or "", entry.get("final_step") or "")
            if answer is None:
                result.unreadable.append(qid)
                continue
            tools = [{"name": name} for name in entry.get("tool_names") or []]
            result.examples[qid] = {"query": entry.get("query", ""), "available_tools": tools, "answer": answer,
                                    "rebuilt": True}
        out.append(result)
    if sample is not None:
        chosen = stratified_sample([r.group for r in out],
                                   [{q: r.released[q] for q in r.examples} for r in out], sample, seed)
        for index, result in enumerate(out):
            result.examples = {q: e for q, e in result.examples.items() if (index, q) in chosen}
            result.unreadable = []  # the sample draws from the answers that can be judged
        out = [result for result in out if result.examples]  # a file no answer was drawn from is no row
    for result in out:
        result.rebuilt = sum(1 for example in result.examples.values() if example.get("rebuilt"))
        result.exact = len(result.examples) - result.rebuilt
        result.rule_qids = {q for q, example in result.examples.items() if decided_by_rule(example["answer"])}
    return out


@dataclass(frozen=True)
class Cost:
    """What an audit will ask, counted before the first request."""

    answers: int
    judgements: int
    by_rule: int  # judgements decided by rule: no request
    cached: int
    to_ask: int  # judgements the judge is asked (each is one request, two when its verdict is Unsure)


def audit_cost(sets: list[AuditedSet], judge: FunctionJudge, cache: JudgementCache) -> Cost:
    answers = judgements = by_rule = cached = 0
    for result in sets:
        for qid, example in result.examples.items():
            answers += 1
            for repeat in range(result.evaluate_times):
                judgements += 1
                if qid in result.rule_qids:
                    by_rule += 1
                elif cache.get(cache_key(judge.name, judge.spec.fingerprint, example["query"], example["answer"],
                                         repeat)) is not None:
                    cached += 1
    return Cost(answers, judgements, by_rule, cached, judgements - by_rule - cached)


def audit(sets: list[AuditedSet], judge: FunctionJudge, cache: JudgementCache, *, concurrency: int = 4,
          progress: bool = True, first: Callable[[float, int], None] | None = None) -> list[AuditedSet]:
    """Judge the planned answers (cached verdicts reused) and keep our labels beside the released ones.
    ``first(seconds, requests)``: told what the audit's first uncached judgement took, made alone before the
    others (passrate.judge_converted)."""
    told = []

    def once(seconds: float, requests: int) -> None:
        told.append(seconds)
        if first is not None:
            first(seconds, requests)

    for result in sets:
        examples = {q: {k: v for k, v in e.items() if k != "rebuilt"} for q, e in result.examples.items()}
        run = judge_converted(examples, judge, evaluate_times=result.evaluate_times, concurrency=concurrency,
                              cache=cache, progress=progress, first=None if told or first is None else once)
        result.ours = run.labels()
        result.requests, result.cache_hits, result.errors = run.requests, run.cache_hits, run.errors
        result.error_samples = run.error_samples
    return sets
