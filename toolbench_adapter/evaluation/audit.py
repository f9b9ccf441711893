"""Judge audit: re-judge the answers that released label files hold, and measure agreement with their labels.

A released pass-rate label file keeps, per query, the answer's tool steps (``answer_steps``), its final step
and the published judge's labels. The answer is judged again with a judge of the user's choosing (the same
decision procedure and cache as ``tba judge``); each (query, repeat) pair of released and new label goes into
a confusion matrix over Solved / Unsolved / Unsure (and our JudgeError), with accuracy, Cohen's kappa and
the SoPR each side gives. This is how far a reproduction drifts because of the judge alone.

Answers: a converted answer file (``--converted``, ``{model}/{group}.json``) gives the exact answer; without
one the answer is rebuilt from the label file (a chain of its tool steps; the final answer = the arguments of
the Finish step). A rebuilt answer gives the judge the same final answer, but ``parse_answer_status`` (asked
on Unsure) sees the tool steps only, not the whole trajectory.
"""

from __future__ import annotations

import ast
import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fileio import read_json
from ..protocol.evaluation import FINAL_STEP_PREFIX, GIVE_UP_MARKER, STEP_PREFIX
from .cache import JudgementCache
from .judge import FunctionJudge
from .labels import Label
from .labelsets import PASS_RATE, FoundLabels
from .passrate import judge_converted
from .scores import Score, evaluate_times_of, sopr
from .steps import ends_with_finish, get_steps

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
    with open(found.path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
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
            data = read_json(path)
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

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa: (p_o - p_e) / (1 - p_e); None when chance agreement is 1 (one label on both sides)."""
        pairs = self.judged
        n = len(pairs)
        if n == 0:
            return None
        p_o = self.agree / n
        p_e = sum((sum(1 for r, _ in pairs if r is c) / n) * (sum(1 for _, o in pairs if o is c) / n)
                  for c in CATEGORIES)
        return None if p_e >= 1 else (p_o - p_e) / (1 - p_e)


# ---- the audit -------------------------------------------------------------------------------------------


@dataclass
class AuditedSet:
    model: str
    group: str
    source: Path
    released: dict[str, dict[int, Label]]
    ours: dict[str, dict[int, Label]]
    exact: int = 0  # answers from a converted file
    rebuilt: int = 0  # answers rebuilt from the label file
    unreadable: list[str] = field(default_factory=list)  # qids whose steps could not be rebuilt: not judged
    by_rule: int = 0  # answers labelled Unsolved without a request
    requests: int = 0
    cache_hits: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    @property
    def agreement(self) -> Agreement:
        return Agreement([(self.released[q][r], self.ours[q][r]) for q in self.ours
                          for r in sorted(self.ours[q]) if r in self.released.get(q, {})])

    def sopr(self) -> tuple[Score, Score]:
        """(released, ours) over the same queries, upstream denominator."""
        released = {q: self.released[q] for q in self.ours}
        return sopr(released), sopr(self.ours)


def pass_rate_sets(found: list[FoundLabels]) -> list[FoundLabels]:
    """The label files an audit can re-judge (they hold answers); none is bad input, found before any judging."""
    sets = [f for f in found if f.kind == PASS_RATE]
    if not sets:
        raise InputError("no pass-rate label files among the labels given (preference files hold no answers)",
                         path=", ".join(str(f.path) for f in found))
    return sets


def audit(found: list[FoundLabels], judge: FunctionJudge, *, evaluate_times: int | None = None,
          converted_dirs: list[str | Path] = (), cache_path: str | Path | None = None, concurrency: int = 4,
          limit: int | None = None, progress: bool = True) -> list[AuditedSet]:
    sets = pass_rate_sets(found)
    cache = JudgementCache(cache_path)
    converted_dirs = [Path(d) for d in converted_dirs]
    out = []
    for item in sets:
        labels = item.read()
        if not labels.labels:
            raise InputError("label file holds no labels", path=item.path)
        entries = _label_entries(item)
        exact_answers = _converted(converted_dirs, labels.model, labels.group)
        examples: dict[str, dict] = {}
        result = AuditedSet(labels.model, labels.group, item.path, labels.labels, {})
        for qid in list(labels.labels)[:limit]:
            entry = entries.get(qid, {})
            if qid in exact_answers and isinstance(exact_answers[qid], dict) and "answer" in exact_answers[qid]:
                examples[qid] = exact_answers[qid]
                result.exact += 1
                continue
            answer = rebuild_answer(entry.get("answer_steps") or "", entry.get("final_step") or "")
            if answer is None:
                result.unreadable.append(qid)
                continue
            tools = [{"name": name} for name in entry.get("tool_names") or []]
            examples[qid] = {"query": entry.get("query", ""), "available_tools": tools, "answer": answer}
            result.rebuilt += 1
        result.by_rule = sum(1 for example in examples.values() if decided_by_rule(example["answer"]))
        times = evaluate_times or evaluate_times_of(labels.labels) or 1
        run = judge_converted(examples, judge, evaluate_times=times, concurrency=concurrency, cache=cache,
                              progress=progress)
        result.ours = run.labels()
        result.requests, result.cache_hits, result.errors = run.requests, run.cache_hits, run.errors
        result.error_samples = run.error_samples
        out.append(result)
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _kappa(value: float | None) -> str:
    return "undefined (one label on both sides)" if value is None else f"{value:.3f}"


def matrix_text(agreement: Agreement) -> list[str]:
    names = [c.value for c in agreement.categories]
    width = max(len(n) for n in names) + 2
    counts = agreement.matrix()
    lines = ["released \\ ours".ljust(18) + "".join(n.rjust(width) for n in names)]
    for released in agreement.categories:
        lines.append(f"  {released.value:<16}" + "".join(str(counts[(released, ours)]).rjust(width)
                                                      for ours in agreement.categories))
    return lines


def audit_text(results: list[AuditedSet], judge_name: str) -> str:
    lines = [f"Judge audit: released labels (judge as released, not recorded in the label files) vs {judge_name}",
             "Pairs are (query, repeat): released repeat r against our repeat r.", ""]
    header = (f"  {'model':<24} {'group':<16} {'pairs':>5} {'accuracy':>9} {'kappa':>7}  "
              f"{'SoPR released':>14} {'SoPR ours':>10}  answers")
    lines.append(header)
    for result in results:
        agreement = result.agreement
        released, ours = result.sopr()
        kappa = "n/a" if agreement.kappa is None else f"{agreement.kappa:.3f}"
        answers = f"{result.exact} exact, {result.rebuilt} rebuilt from the label file, {result.by_rule} decided by rule"
        if result.unreadable:
            answers += f", {len(result.unreadable)} unreadable (not judged)"
        lines.append(f"  {result.model:<24} {result.group:<16} {len(agreement.pairs):>5} "
                     f"{_pct(agreement.accuracy):>9} {kappa:>7}  {released.text():>14} {ours.text():>10}  {answers}")
    total = Agreement([pair for result in results for pair in result.agreement.pairs])
    lines += ["", f"All groups: {len(total.pairs)} pairs over {sum(len(r.ours) for r in results)} queries"]
    lines += matrix_text(total)
    left_out = f"; {total.errors} pairs with a judge error left out" if total.errors else ""
    lines.append(f"Accuracy {_pct(total.accuracy)} ({total.agree} of {len(total.judged)}), "
                 f"Cohen's kappa {_kappa(total.kappa)}{left_out}")
    requests = sum(r.requests for r in results)
    hits = sum(r.cache_hits for r in results)
    errors = sum(r.errors for r in results)
    lines.append(f"Judge: {requests} requests, {hits} cached judgements, {errors} judge errors")
    return "\n".join(lines) + "\n"


def audit_record(results: list[AuditedSet], judge_name: str) -> dict:
    """The audit as JSON: per set the pairs' matrix, accuracy, kappa and both SoPRs."""
    sets = []
    for result in results:
        agreement = result.agreement
        released, ours = result.sopr()
        sets.append({"model": result.model, "group": result.group, "source": str(result.source),
                     "pairs": len(agreement.pairs), "accuracy": agreement.accuracy, "kappa": agreement.kappa,
                     "matrix": {f"{a.value}->{b.value}": n for (a, b), n in agreement.matrix().items()},
                     "sopr_released": released.as_dict(), "sopr_ours": ours.as_dict(),
                     "answers": {"exact": result.exact, "rebuilt": result.rebuilt, "by_rule": result.by_rule,
                                 "unreadable": result.unreadable},
                     "ours": {q: {str(r): label.value for r, label in reps.items()} for q, reps in result.ours.items()},
                     "requests": result.requests, "cache_hits": result.cache_hits, "errors": result.errors})
    total = Agreement([pair for result in results for pair in result.agreement.pairs])
    return {"judge": judge_name, "pairs": len(total.pairs), "accuracy": total.accuracy, "kappa": total.kappa,
            "sets": sets}
